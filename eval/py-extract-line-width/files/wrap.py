import textwrap


def wrap_paragraphs(text):
    paras = [p.strip() for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(textwrap.fill(" ".join(p.split()), 72) for p in paras)


def too_long(lines):
    return [i + 1 for i, line in enumerate(lines) if len(line) > 72]
