"""Helpers for the human-friendly durations used in scheduler.toml."""

UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def format_duration(seconds):
    """Format a number of seconds compactly, e.g. 5400 -> '1h30m', 0 -> '0s'."""
    if seconds < 0:
        raise ValueError("negative duration")
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def parse_duration(text):
    """Parse a duration string such as '1h30m' into whole seconds (see SPEC.md)."""
    raise NotImplementedError


def total_seconds(items):
    """Sum a list of duration strings, in seconds."""
    return sum(parse_duration(item) for item in items)


def describe(text):
    """Normalise a duration string: describe(' 90m ') -> '1h30m'."""
    return format_duration(parse_duration(text))
