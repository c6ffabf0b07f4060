"""Checks answer.txt: the function that raises PermissionError."""

import sys

try:
    with open("answer.txt", encoding="utf-8") as handle:
        answer = handle.read().strip().strip("`").removesuffix("()")
except OSError as exc:
    sys.exit(f"answer.txt: {exc}")
if answer != "delete_user":
    sys.exit(f"answer.txt says {answer!r}")
print("the answer is right")
