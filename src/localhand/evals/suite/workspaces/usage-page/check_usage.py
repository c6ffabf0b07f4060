"""Checks docs/usage.md: the heading "# Usage" first, and how to run the project."""

import sys

try:
    with open("docs/usage.md", encoding="utf-8") as handle:
        text = handle.read()
except OSError as exc:
    sys.exit(f"docs/usage.md: {exc}")
lines = text.strip().splitlines()
if not lines or lines[0].strip() != "# Usage":
    sys.exit(f"the first line of docs/usage.md is {lines[:1]!r}, not '# Usage'")
if "python3 main.py" not in text:
    sys.exit("docs/usage.md does not say to run `python3 main.py`")
print("docs/usage.md is right")
