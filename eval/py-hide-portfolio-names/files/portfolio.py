"""Show the value of each position in a portfolio file.

Each line of the file is: COMPANY NAME  SHARES  PRICE
e.g.  "Acme 10 12.50"  -> 10 shares of Acme at 12.50 each.
Usage: python3 portfolio.py positions.txt
"""
import sys


def parse_position(line):
    parts = line.split()
    name = parts[0]
    shares = int(parts[1])
    price = float(parts[2])
    return name, shares, price


def load(path):
    with open(path) as f:
        return [parse_position(line) for line in f if line.strip()]


def main(path):
    positions = load(path)
    values = [(name, shares * price) for name, shares, price in positions]
    values.sort(key=lambda nv: nv[1], reverse=True)
    for name, value in values:
        print(f"{name:<24}{value:>10.2f}")
    print(f"{'Total':<24}{sum(v for _, v in values):>10.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
