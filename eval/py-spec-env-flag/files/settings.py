"""Read the app's settings from environment variables."""
import os


def env_str(name, default=""):
    """The variable's value without surrounding whitespace, or default if unset."""
    value = os.environ.get(name)
    return default if value is None else value.strip()


def env_int(name, default=0):
    """The variable as an int, or default if it is unset or empty."""
    value = env_str(name)
    return int(value) if value else default


def env_list(name, sep=","):
    """Separated values as a list, with empty items dropped."""
    return [item.strip() for item in env_str(name).split(sep) if item.strip()]
