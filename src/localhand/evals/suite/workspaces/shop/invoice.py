"""Invoice lines."""


def tax_line(net):
    """The tax line of an invoice for a net amount."""
    return f"tax: {net * 0.2:.2f}"
