import re

WORDS = {"noon": (12, 0), "midnight": (0, 0)}


def parse(text):
    t = text.strip().lower().rstrip("ish")
    if t in WORDS:
        return WORDS[t]
    m = re.fullmatch(r"(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm)?", t)
    if not m:
        raise ValueError(f"cannot parse {text!r}")
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "pm" and hour < 12:
        hour += 12
    if m.group(3) == "am" and hour == 12:
        hour = 0
    return hour, minute
