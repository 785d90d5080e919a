"""Order totals for the web shop. All amounts are handled in cents."""

VAT_PERCENT = {"EU": 21, "UK": 20, "US": 0}
FREE_SHIPPING_FROM = 5000
SHIPPING = {"EU": 495, "UK": 650, "US": 899}


def line_total(qty, unit_cents):
    total = qty * unit_cents
    if qty >= 10:
        # bulk lines get 10% off, rounded down to the cent
        total = total * 9 // 10
    return total


def total_price(items, region):
    """items: list of (sku, qty, unit_cents). Returns the total in euros/pounds/dollars."""
    if region not in VAT_PERCENT:
        raise ValueError(f"unknown region {region!r}")
    subtotal = sum(line_total(qty, unit) for _sku, qty, unit in items)
    vat = subtotal * VAT_PERCENT[region] // 100
    shipping = 0 if subtotal >= FREE_SHIPPING_FROM else SHIPPING[region]
    return (subtotal + vat + shipping) / 100
