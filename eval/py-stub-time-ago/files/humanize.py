"""Human-readable times for the activity feed."""
from datetime import datetime, timedelta


def plural(n, word):
    """'1 file', '2 files'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def time_ago(seconds):
    """How long ago something happened, in words. The rules are in RULES.md."""
    # TODO: implement
    return ""


def since(then, now=None):
    """time_ago for a datetime."""
    now = now or datetime.now()
    return time_ago(int((now - then).total_seconds()))
