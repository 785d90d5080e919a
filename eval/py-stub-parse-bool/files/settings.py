"""Reading values from the settings file, which holds text only."""


def parse_int(text):
    return int(text.strip())


def parse_bool(text):
    """Turn a setting's text into True or False (SPEC.md)."""
    pass
