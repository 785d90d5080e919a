"""Checkout for the café till."""
from money import format_cents, parse_price


def subtotal(prices):
    """Sum of the typed prices, in cents."""
    return sum(parse_price(p) for p in prices)


def apply_discount(cents, percent):
    """Take percent% off, rounding the discount down to whole cents."""
    return cents - cents * percent // 100


def receipt(prices, discount=0):
    """One-line receipt, e.g. '3 items, total €7.40'."""
    total = apply_discount(subtotal(prices), discount)
    line = f"{len(prices)} items, total {format_cents(total)}"
    if discount:
        line += f" ({discount}% off)"
    return line
