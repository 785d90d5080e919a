"""Helpers for people's names in the member list."""


def full_name(first, last):
    """'ada', 'lovelace' -> 'Ada Lovelace'."""
    return f"{first.strip().capitalize()} {last.strip().capitalize()}"


def initials(name):
    """The initials of a name; see SPEC.md."""
    raise NotImplementedError
