"""Money as text."""


def format_price(amount):
    """amount in dollars, e.g. "$1,234.50"."""
    return "$" + str(amount)
