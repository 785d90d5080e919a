from net.headers import parse_header


def read_headers(lines):
    return dict(parse_header(l) for l in lines if l.strip())
