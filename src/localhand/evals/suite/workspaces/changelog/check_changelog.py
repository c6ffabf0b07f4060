"""Checks CHANGELOG.md: the new entry under Unreleased, 1.2.0 unchanged."""

import sys

with open("CHANGELOG.md", encoding="utf-8") as handle:
    lines = [line.rstrip() for line in handle]
try:
    unreleased, released = lines.index("## Unreleased"), lines.index("## 1.2.0")
except ValueError as exc:
    sys.exit(f"a heading is missing: {exc}")
if "- Fixed the login timeout" not in lines[unreleased:released]:
    sys.exit("the entry is not under '## Unreleased'")
if [line for line in lines[released + 1 :] if line] != [
    "- Added CSV export",
    "- Fixed the date picker on Safari",
]:
    sys.exit("the 1.2.0 section has changed")
print("CHANGELOG.md is right")
