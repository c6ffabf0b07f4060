"""Billing: totals of invoice lines."""


def calc_total(lines):
    """The total of (quantity, unit price) lines, rounded to cents."""
    return round(sum(quantity * price for quantity, price in lines), 2)
