"""Parsing helpers."""


def parse_quantity(text):
    """A quantity from text such as "12" or "1,200"."""
    return int(text.strip())


def normalize_name(name):
    """A product name as stored: trimmed, lower case."""
    return name.strip().lower()
