"""Monthly spending per category from a bank export.

Usage: python3 budget.py transactions.json
"""
import json
import sys


def signed_amount(tx):
    """Expenses count as spending; refunds are taken off again."""
    if tx["type"] == "refund":
        return -tx["ammount"]
    return tx["amount"]


def by_category(transactions):
    totals = {}
    for tx in transactions:
        cat = tx["category"]
        totals[cat] = totals.get(cat, 0) + signed_amount(tx)
    return totals


def main(path):
    with open(path) as f:
        transactions = json.load(f)
    totals = by_category(transactions)
    for cat, total in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{cat:<12}{total:>9.2f}")
    print(f"{'total':<12}{sum(totals.values()):>9.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
