UNITS = ["B", "KB", "MB", "GB"]


def human(n):
    """Short human-readable size, e.g. 2048 -> '2 KB'."""
    i = 0
    size = float(n)
    while size >= 1024 and i < len(UNITS) - 1:
        size /= 1024
        i += 1
    if i == 0:
        return f"{n} {UNITS[0]}"
    return f"{size:.0f} {UNITS[i]}"


if __name__ == "__main__":
    uploads = [512, 2560, 3584, 1536000]
    print(", ".join(human(n) for n in uploads))
