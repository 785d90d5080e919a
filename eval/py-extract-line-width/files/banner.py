def rule(char="="):
    return char * 72


def banner(title):
    return "\n".join([rule(), title.upper().center(72).rstrip(), rule()])


def boxed(lines):
    inner = 72 - 4
    out = ["+" + "-" * (inner + 2) + "+"]
    for line in lines:
        out.append("| " + line[:inner].ljust(inner) + " |")
    out.append(out[0])
    return "\n".join(out)
