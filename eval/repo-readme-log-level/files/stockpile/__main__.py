"""stockpile command line.

Tip: export LOG_LEVEL=debug to see every read and write of the data file.
"""
import argparse
import json
import logging
import os

from .config import db_path, reorder_at, setup_logging

log = logging.getLogger("stockpile")


def load():
    path = db_path()
    log.debug("reading %s", path)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def save(items):
    path = db_path()
    log.debug("writing %s", path)
    with open(path, "w") as f:
        json.dump(items, f, indent=2)


def main(argv=None):
    setup_logging()
    p = argparse.ArgumentParser(prog="stockpile")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("name")
    a.add_argument("--shelf", required=True)
    a.add_argument("--qty", type=int, required=True)
    t = sub.add_parser("take")
    t.add_argument("name")
    t.add_argument("n", type=int)
    sub.add_parser("low")
    w = sub.add_parser("where")
    w.add_argument("name")
    args = p.parse_args(argv)

    items = load()
    if args.cmd == "add":
        item = items.setdefault(args.name, {"shelf": args.shelf, "qty": 0,
                                            "reorder_at": reorder_at()})
        item["qty"] += args.qty
        save(items)
    elif args.cmd == "take":
        item = items[args.name]
        if item["qty"] < args.n:
            raise SystemExit(f"only {item['qty']} left")
        item["qty"] -= args.n
        save(items)
    elif args.cmd == "low":
        for name, item in sorted(items.items()):
            if item["qty"] <= item["reorder_at"]:
                print(f"{name}: {item['qty']} (shelf {item['shelf']})")
    elif args.cmd == "where":
        print(items[args.name]["shelf"])


if __name__ == "__main__":
    main()
