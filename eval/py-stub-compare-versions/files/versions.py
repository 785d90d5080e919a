"""Version helpers for the release scripts."""
import functools
import re

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


def parse(version):
    """Split 'MAJOR.MINOR.PATCH[-PRE]' (optional leading 'v') into a tuple.

    parse('v1.4.0-rc.1') -> (1, 4, 0, 'rc.1'); the last item is None without a pre-release.
    """
    text = version.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    m = _VERSION.match(text)
    if not m:
        raise ValueError(f"bad version: {version!r}")
    major, minor, patch, pre = m.groups()
    return int(major), int(minor), int(patch), pre


def bump(version, part):
    """Next version: bump('1.4.2', 'minor') -> '1.5.0'. Drops any pre-release."""
    major, minor, patch, pre = parse(version)
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch + 1}" if pre is None else f"{major}.{minor}.{patch}"
    raise ValueError(f"unknown part: {part!r}")


def compare(a, b):
    """Compare two version strings: -1 if a < b, 0 if equal, 1 if a > b."""
    # TODO: implement (rules in docs/spec.md)
    raise NotImplementedError


def latest(versions):
    """The highest version in a list of version strings."""
    return max(versions, key=functools.cmp_to_key(compare))


def sort_versions(versions):
    """Versions sorted from lowest to highest."""
    return sorted(versions, key=functools.cmp_to_key(compare))
