import logfmt


def check_ping(host, ms):
    return logfmt.make_log_line(message=f"ping {host} {ms} ms")


def check_hosts(results):
    return [check_ping(host, ms) for host, ms in sorted(results.items())]
