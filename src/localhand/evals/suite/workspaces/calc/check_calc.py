"""Checks calc.py."""

import sys

from calc import add, mul, sub

cases = [(add(2, 3), 5), (add(-1, 1), 0), (sub(5, 3), 2), (mul(3, 4), 12)]
wrong = [(found, expected) for found, expected in cases if found != expected]
if wrong:
    sys.exit(f"wrong results (found, expected): {wrong}")
print("calc.py is right")
