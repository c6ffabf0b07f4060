"""Checks answer.txt: the number of lines of data/names.txt."""

import sys

try:
    with open("answer.txt", encoding="utf-8") as handle:
        answer = handle.read().strip()
except OSError as exc:
    sys.exit(f"answer.txt: {exc}")
if answer != "7":
    sys.exit(f"answer.txt says {answer!r}; the file has 7 lines")
print("the answer is right")
