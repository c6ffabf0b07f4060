"""Order totals."""


def total(prices):
    """The sum of the prices, rounded to cents."""
    result = round(sum(prices), 2)
    print("DEBUG total:", result)
    return result
