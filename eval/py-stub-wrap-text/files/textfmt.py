"""Plain-text formatting for the terminal report."""


def indent(lines, prefix="    "):
    """Each line with `prefix` in front."""
    return [prefix + line for line in lines]


def wrap(text, width):
    """Lines of at most `width` characters; the rules are in docs/wrap.md."""
    pass  # TODO


def boxed(text, width):
    """`text` wrapped to `width` and framed in a box of + - | characters."""
    lines = wrap(text, width - 4)
    top = "+" + "-" * (width - 2) + "+"
    return [top] + ["| " + line.ljust(width - 4) + " |" for line in lines] + [top]
