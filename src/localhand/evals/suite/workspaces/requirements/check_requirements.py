"""Checks requirements.txt: requests added, in alphabetical order, nothing lost."""

import sys

with open("requirements.txt", encoding="utf-8") as handle:
    lines = [line.strip() for line in handle if line.strip()]
expected = ["click>=8.1", "numpy>=1.26", "pyyaml>=6.0", "requests>=2.31", "rich>=13"]
if lines != expected:
    sys.exit(f"requirements.txt has {lines!r}; expected {expected!r}")
print("requirements.txt is right")
