"""Checks settings.py: TIMEOUT_SECONDS 60, the others unchanged."""

import sys

import settings

found = (settings.TIMEOUT_SECONDS, settings.RETRIES, settings.BASE_URL)
expected = (60, 3, "http://localhost:8000")
if found != expected:
    sys.exit(f"settings are {found!r}; expected {expected!r}")
print("settings.py is right")
