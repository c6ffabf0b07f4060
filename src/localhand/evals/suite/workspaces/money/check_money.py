"""Checks money.py."""

import sys

from money import format_price

cases = {1234.5: "$1,234.50", 3: "$3.00", 0.5: "$0.50", 1000000: "$1,000,000.00"}
wrong = {
    amount: format_price(amount) for amount, text in cases.items() if format_price(amount) != text
}
if wrong:
    sys.exit(f"wrong: {wrong} (expected {cases})")
print("money.py is right")
