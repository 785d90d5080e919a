"""A tiny to-do list kept in tasks.json.

  python3 todo.py list          open tasks
  python3 todo.py list --all    all tasks, done ones marked [x]
  python3 todo.py add TITLE [--due YYYY-MM-DD]

Tasks are listed soonest due date first; tasks without a due date come
last, in the order they were added.
"""
import argparse
import json

FILE = "tasks.json"


def load():
    with open(FILE) as f:
        return json.load(f)


def save(tasks):
    with open(FILE, "w") as f:
        json.dump(tasks, f, indent=2)


def show(tasks, show_all=False):
    tasks = sorted(tasks, key=lambda t: t["due"])
    for t in tasks:
        if t["done"] and not show_all:
            continue
        mark = "[x] " if t["done"] else ""
        print(f"{t['due'] or '-':<10}  {mark}{t['title']}")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("--all", action="store_true")
    add = sub.add_parser("add")
    add.add_argument("title")
    add.add_argument("--due")
    args = parser.parse_args()
    if args.cmd == "list":
        show(load(), args.all)
    else:
        tasks = load()
        tasks.append({"title": args.title, "due": args.due, "done": False})
        save(tasks)


if __name__ == "__main__":
    main()
