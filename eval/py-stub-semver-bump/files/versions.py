"""Version strings for the release script."""

import re

_VERSION = re.compile(r"^(v?)(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.]+))?$")


def parse(version):
    """Split "v1.2.3-rc.1" into ("v", 1, 2, 3, "rc.1"); ValueError if it is not a version."""
    m = _VERSION.match(version.strip())
    if not m:
        raise ValueError(f"not a version: {version!r}")
    prefix, major, minor, patch, pre = m.groups()
    return prefix, int(major), int(minor), int(patch), pre


def bump(version, part):
    # TODO: implement according to SPEC.md
    raise NotImplementedError


def tag_name(version):
    """The git tag for a version: always with a leading "v"."""
    prefix, major, minor, patch, pre = parse(version)
    tag = f"v{major}.{minor}.{patch}"
    return f"{tag}-{pre}" if pre else tag
