"""Checks counter.py."""

import sys

from counter import word_count

cases = {"one  two\nthree": 3, "": 0, "one": 1, "  padded  ": 1, "a\tb c": 3}
wrong = {text: word_count(text) for text, n in cases.items() if word_count(text) != n}
if wrong:
    sys.exit(f"wrong counts: {wrong} (expected {cases})")
print("counter.py is right")
