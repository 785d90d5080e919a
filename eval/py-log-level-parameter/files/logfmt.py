def make_log_line(message):
    return f"[INFO] {message}"


def indent(lines, width=2):
    pad = " " * width
    return [pad + line for line in lines]
