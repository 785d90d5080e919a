from logfmt import make_log_line

LOW_GB = 10


def check_disk(free_gb):
    if free_gb < LOW_GB:
        return make_log_line(f"disk low, only {free_gb} GB free")
    return make_log_line(f"disk ok, {free_gb} GB free")
