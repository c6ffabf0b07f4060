"""Small text helpers."""


def shout(text):
    """text in capitals, with an exclamation mark."""
    return text.upper() + "!"
