"""Checks todo_count.txt: the lines with TODO under src/."""

import sys

try:
    with open("todo_count.txt", encoding="utf-8") as handle:
        answer = handle.read().strip()
except OSError as exc:
    sys.exit(f"todo_count.txt: {exc}")
if answer != "5":
    sys.exit(f"todo_count.txt says {answer!r}; src/ has 5 lines with TODO")
print("the count is right")
