"""How many days are left until a date.

Usage: python3 countdown.py DATE [--from DATE] [--weeks]
Dates are written YYYY-MM-DD. Without --from it counts from today.
"""
import argparse
from datetime import date, datetime

DATE_FORMAT = "%Y-%d-%m"


def parse(text):
    return datetime.strptime(text, DATE_FORMAT).date()


def describe(days, target, weeks=False):
    when = target.isoformat()
    if days < 0:
        return f"{when} was {-days} days ago"
    if weeks:
        return f"{days // 7} weeks and {days % 7} days until {when}"
    return f"{days} days until {when}"


def main():
    parser = argparse.ArgumentParser(description="Count the days until a date.")
    parser.add_argument("target", help="the date to count down to")
    parser.add_argument("--from", dest="start", help="count from this date instead of today")
    parser.add_argument("--weeks", action="store_true", help="show weeks and days")
    args = parser.parse_args()
    target = parse(args.target)
    start = parse(args.start) if args.start else date.today()
    print(describe((target - start).days, target, args.weeks))


if __name__ == "__main__":
    main()
