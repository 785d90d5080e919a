#!/bin/sh
# Test runner used locally and in CI. See README.md.
set -e
cd "$(dirname "$0")/.."
export TZ=Europe/Amsterdam
export TIDYTIME_NOW=2024-01-15T10:00
if [ "$1" = "--all" ]; then
    exec python3 -m unittest discover -s tests -t . -v
fi
exec python3 -m unittest tests.test_parse
