"""Checks that parse_date moved from app.py to dates.py."""

import re
import sys
from datetime import date

with open("app.py", encoding="utf-8") as handle:
    source = handle.read()
if "def parse_date" in source:
    sys.exit("app.py still defines parse_date")
if not re.search(r"^\s*(from dates import|import dates\b)", source, re.M):
    sys.exit("app.py does not import from dates")
try:
    import app
    import dates
except ImportError as exc:
    sys.exit(f"cannot import: {exc}")
if dates.parse_date("2024-02-29") != date(2024, 2, 29):
    sys.exit("dates.parse_date('2024-02-29') is wrong")
if app.days_between("2024-01-01", "2024-03-01") != 60:
    sys.exit("app.days_between('2024-01-01', '2024-03-01') is not 60")
print("parse_date lives in dates.py")
