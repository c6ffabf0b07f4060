"""A one-line report of an invoice."""

from billing import calc_total


def render(customer, lines):
    """customer: total, e.g. "ACME: 3.25"."""
    return f"{customer}: {calc_total(lines):.2f}"
