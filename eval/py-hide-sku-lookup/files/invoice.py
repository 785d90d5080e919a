"""Print an invoice for an order file.

Each line of the order file is: SKU QUANTITY  (lines starting with # are comments)
Usage: python3 invoice.py order.txt
"""
import sys

from catalog import find_product


def read_order(path):
    lines = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            sku, qty = line.split()
            lines.append((sku, int(qty)))
    return lines


def main(path):
    total = 0.0
    for sku, qty in read_order(path):
        product = find_product(sku)
        cost = product["price"] * qty
        total += cost
        print(f"{qty:>3} x {product['name']:<16} {cost:8.2f}")
    print(f"{'TOTAL':>22} {total:8.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
