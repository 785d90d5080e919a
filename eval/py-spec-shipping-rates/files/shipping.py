"""Helpers for the shop's shipping page."""

ZONES = ("domestic", "europe", "world")


def grams_to_kg(grams):
    """Convert a weight in grams to kilograms."""
    return grams / 1000


def format_eur(amount):
    """Format an amount as a euro price, e.g. 4.5 -> '€4.50'."""
    return f"€{amount:.2f}"


def parcel_count(weight_kg, max_per_parcel=30):
    """Number of parcels needed when one parcel holds at most max_per_parcel kg."""
    if weight_kg <= 0:
        return 0
    full, rest = divmod(weight_kg, max_per_parcel)
    return int(full) + (1 if rest else 0)
