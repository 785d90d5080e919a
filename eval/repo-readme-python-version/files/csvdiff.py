#!/usr/bin/env python3
"""Compare two CSV exports by a key column.

Compatible with Python 3.6+ (uses only the csv and argparse modules).
"""
import argparse
import csv
import sys

from rows import describe


def load(path, key):
    with open(path, newline="") as f:
        return {row[key]: row for row in csv.DictReader(f)}


def main(argv=None):
    p = argparse.ArgumentParser(prog="csvdiff")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--key", default="id")
    p.add_argument("--ignore", action="append", default=[])
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)

    old, new = load(args.old, args.key), load(args.new, args.key)
    counts = {"+": 0, "-": 0, "~": 0}
    for k in sorted(old.keys() | new.keys()):
        line = describe(k, old.get(k), new.get(k), set(args.ignore))
        if line:
            counts[line[0]] += 1
            if not args.quiet:
                print(line)
    if args.quiet:
        print(" ".join(f"{sign}{n}" for sign, n in counts.items()))
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
