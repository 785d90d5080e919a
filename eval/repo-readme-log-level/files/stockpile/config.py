import logging
import os

ENV_PREFIX = "STOCKPILE_"


def setting(name, default):
    return os.environ.get(ENV_PREFIX + name, default)


def db_path():
    return os.path.expanduser(setting("DB", "~/.stockpile.json"))


def reorder_at():
    return int(setting("REORDER_AT", "10"))


def setup_logging():
    level = setting("VERBOSITY", "warning").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING),
                        format="%(levelname)s %(name)s: %(message)s")
