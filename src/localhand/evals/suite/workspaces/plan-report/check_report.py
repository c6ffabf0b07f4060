"""Checks report.txt."""

import sys

try:
    with open("report.txt", encoding="utf-8") as handle:
        text = handle.read().strip()
except OSError as exc:
    sys.exit(f"report.txt: {exc}")
if text != "3 students, mean 81.0":
    sys.exit(f"report.txt says {text!r}")
print("the report is right")
