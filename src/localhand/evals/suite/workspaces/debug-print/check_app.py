"""Checks app.py: total() prints nothing and returns the sum."""

import contextlib
import io
import sys

import app

printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    value = app.total([1.5, 2.25, 0.1])
if printed.getvalue():
    sys.exit(f"total() still prints {printed.getvalue()!r}")
if value != 3.85:
    sys.exit(f"total([1.5, 2.25, 0.1]) is {value!r}, not 3.85")
print("app.py is right")
