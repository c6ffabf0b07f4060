"""Greetings."""


def greet(name):
    """A greeting for name: greet("Ada") == "Hello, Ada!"."""
    return "Hello " + name
