"""Checks TODO.md: only "write the report" is done."""

import sys

with open("TODO.md", encoding="utf-8") as handle:
    items = [line.strip() for line in handle if line.strip().startswith("- [")]
expected = ["- [ ] book the room", "- [x] write the report", "- [ ] send the invoice"]
if items != expected:
    sys.exit(f"the items are {items!r}; expected {expected!r}")
print("TODO.md is right")
