"""Counting words."""


def word_count(text):
    """How many words `text` has; words are separated by any whitespace."""
    return len(text.split(" "))
