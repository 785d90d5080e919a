import re


def slugify(title):
    """Lower-case words joined by dashes: "Hello, World" -> "hello-world"."""
    words = re.findall(r"[A-Za-z0-9]+", title)
    return "-".join(w.lower() for w in words)
