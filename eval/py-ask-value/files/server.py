from settings import PORT, TIMEOUT_SECONDS


def describe():
    return f"listening on {PORT}, timeout {TIMEOUT_SECONDS}s"
