from .parse import parse

__all__ = ["normalise"]


def normalise(text):
    hour, minute = parse(text)
    return f"{hour:02d}:{minute:02d}"
