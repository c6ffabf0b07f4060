"""Checks pages.py."""

import sys

from pages import page, page_count

items = list(range(10))
cases = [
    (page(items, 1, 3), [0, 1, 2]),
    (page(items, 2, 3), [3, 4, 5]),
    (page(items, 4, 3), [9]),
    (page(items, 5, 3), []),
    (page_count(items, 3), 4),
]
wrong = [(found, expected) for found, expected in cases if found != expected]
if wrong:
    sys.exit(f"wrong results (found, expected): {wrong}")
print("pages.py is right")
