"""A small calculator."""


def add(a, b):
    """a plus b."""
    return a - b


def sub(a, b):
    """a minus b."""
    return a - b


def mul(a, b):
    """a times b."""
    return a * b
