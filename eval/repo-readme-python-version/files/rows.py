def describe(key, old: dict | None, new: dict | None, ignore: set) -> str | None:
    """One output line for a key, or None when the row is unchanged."""
    match (old, new):
        case (None, None):
            return None
        case (None, row):
            return f"+ {key:<3} {row}"
        case (row, None):
            return f"- {key:<3} {row}"
        case _:
            changes = [
                f"{col}: {old[col]} -> {new.get(col)}"
                for col in old
                if col not in ignore and old[col] != new.get(col)
            ]
            if not changes:
                return None
            return f"~ {key:<3} " + ", ".join(changes)
