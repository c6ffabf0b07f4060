"""Number helpers."""


def gcd(a, b):
    """The greatest common divisor of a and b."""
    while b:
        a, b = b, a % b
    return abs(a)
