"""Reading and writing the backup tool's settings file (backup.ini)."""


class ConfigError(ValueError):
    """Malformed settings text. `lineno` is the 1-based line number."""

    def __init__(self, lineno, message):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


def parse_ini(text):
    """Parse INI text into {section: {key: value}} (see SPEC.md)."""
    pass


def get_bool(config, section, key, default=False):
    """Read a yes/no setting; a missing key gives `default`."""
    value = config.get(section, {}).get(key)
    if value is None:
        return default
    word = value.lower()
    if word in ("1", "yes", "true", "on"):
        return True
    if word in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"[{section}] {key}: not a yes/no value: {value!r}")


def get_int(config, section, key, default=0):
    value = config.get(section, {}).get(key)
    return default if value is None else int(value)


def dump_ini(config):
    """The inverse of parse_ini (values with outer spaces are quoted)."""
    lines = []
    for section, values in config.items():
        if section:
            lines.append(f"[{section}]")
        for key, value in values.items():
            if value != value.strip():
                value = f'"{value}"'
            lines.append(f"{key} = {value}")
        lines.append("")
    return "\n".join(lines)


def load(path):
    with open(path, encoding="utf-8") as f:
        return parse_ini(f.read())
