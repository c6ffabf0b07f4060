"""Days between two dates given as text."""

from datetime import date


def parse_date(text):
    """A date from "YYYY-MM-DD"."""
    year, month, day = (int(part) for part in text.strip().split("-"))
    return date(year, month, day)


def days_between(start, end):
    """Days from start to end, both "YYYY-MM-DD"."""
    return (parse_date(end) - parse_date(start)).days
