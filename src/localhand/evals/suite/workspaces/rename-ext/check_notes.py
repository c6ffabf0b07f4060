"""Checks notes/: the .txt files renamed to .md, contents kept."""

import os
import sys

NOTES = {
    "monday": "Standup at 9.\n",
    "tuesday": "Review the release notes.\n",
    "wednesday": "Ship 1.3.\n",
}
found = sorted(os.listdir("notes"))
expected = sorted([f"{day}.md" for day in NOTES] + ["keep.csv"])
if found != expected:
    sys.exit(f"notes/ holds {found}; expected {expected}")
for day, text in NOTES.items():
    with open(f"notes/{day}.md", encoding="utf-8") as handle:
        if handle.read() != text:
            sys.exit(f"notes/{day}.md lost its contents")
print("notes/ is right")
