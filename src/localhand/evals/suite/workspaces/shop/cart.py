"""Cart totals."""


def total_with_tax(prices):
    """The total of prices plus tax, rounded to cents."""
    return round(sum(prices) * (1 + 0.2), 2)
