"""Print total sales per region from the shop's CSV export.

Usage: python3 totals.py sales.csv
"""
import csv
import sys


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def totals_by_region(rows):
    totals = {}
    for row in rows:
        amount = float(row["amount"])
        totals[row["region"]] = totals.get(row["region"], 0.0) + amount
    return totals


def main(path):
    totals = totals_by_region(load(path))
    for region in sorted(totals):
        print(f"{region}: {totals[region]:.2f}")
    print(f"TOTAL: {sum(totals.values()):.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
