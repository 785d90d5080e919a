def parse_header(line):
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()
