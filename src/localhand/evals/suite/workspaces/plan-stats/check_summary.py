"""Checks summary.txt."""

import sys

try:
    with open("summary.txt", encoding="utf-8") as handle:
        text = handle.read().strip()
except OSError as exc:
    sys.exit(f"summary.txt: {exc}")
if text != "min 4, max 20, mean 14.0":
    sys.exit(f"summary.txt says {text!r}")
print("the summary is right")
