def format_list(items):
    return ", ".join(str(i) for i in items)


def format_title(s):
    return s.strip().title()
