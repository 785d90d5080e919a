"""Date helpers for the support team's SLA tracker."""
from datetime import date, timedelta


def is_weekend(day):
    """True on Saturday and Sunday."""
    return day.weekday() >= 5


def parse_day(text):
    """Parse 'YYYY-MM-DD' into a date."""
    return date.fromisoformat(text.strip())


def days_between(start, end):
    """Calendar days from start to end (negative if end is earlier)."""
    return (end - start).days


def week_start(day):
    """The Monday of the week that day falls in."""
    return day - timedelta(days=day.weekday())
