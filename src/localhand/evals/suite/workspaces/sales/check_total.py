"""Checks total.txt: the sum of sales.csv's amounts."""

import sys

try:
    with open("total.txt", encoding="utf-8") as handle:
        answer = handle.read().strip()
except OSError as exc:
    sys.exit(f"total.txt: {exc}")
if answer != "1238.00":
    sys.exit(f"total.txt says {answer!r}; the amounts add up to 1238.00")
print("the total is right")
