"""Checks answer.txt: the top-level functions of lib/geometry.py."""

import sys

try:
    with open("answer.txt", encoding="utf-8") as handle:
        answer = handle.read().strip()
except OSError as exc:
    sys.exit(f"answer.txt: {exc}")
if answer != "4":
    sys.exit(f"answer.txt says {answer!r}; lib/geometry.py defines 4 top-level functions")
print("the answer is right")
