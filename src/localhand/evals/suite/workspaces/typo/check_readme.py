"""Checks README.md: "receive" spelt right, and the rest unchanged."""

import sys

EXPECTED = """# Mailer

Mailer lets you receive messages from many inboxes in one place.

## Setup

Set MAILER_INBOXES, then run `python3 mailer.py`. You will receive a summary every morning.
"""

with open("README.md", encoding="utf-8") as handle:
    text = handle.read()
if "recieve" in text:
    sys.exit("README.md still says 'recieve'")
if [line.rstrip() for line in text.strip().splitlines()] != EXPECTED.strip().splitlines():
    sys.exit("README.md has changed beyond the spelling")
print("README.md is right")
