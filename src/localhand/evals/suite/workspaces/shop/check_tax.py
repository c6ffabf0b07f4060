"""Checks that the tax rate is one constant in config.py, used by cart.py and invoice.py."""

import sys

for name in ("cart.py", "invoice.py"):
    with open(name, encoding="utf-8") as handle:
        source = handle.read()
    if "0.2" in source:
        sys.exit(f"{name} still writes 0.2 out")
    if "TAX_RATE" not in source:
        sys.exit(f"{name} does not use TAX_RATE")
try:
    import cart
    import invoice

    import config
except ImportError as exc:
    sys.exit(f"cannot import: {exc}")
if getattr(config, "TAX_RATE", None) != 0.2:
    sys.exit("config.TAX_RATE is not 0.2")
if cart.total_with_tax([10, 5]) != 18.0:
    sys.exit(f"cart.total_with_tax([10, 5]) is {cart.total_with_tax([10, 5])!r}, not 18.0")
if invoice.tax_line(50) != "tax: 10.00":
    sys.exit(f"invoice.tax_line(50) is {invoice.tax_line(50)!r}")
print("TAX_RATE is in one place")
