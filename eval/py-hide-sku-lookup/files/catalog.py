"""The product catalog of the hardware store."""

PRODUCTS = {
    "AB-100": {"name": "Desk lamp", "price": 24.90},
    "AB-200": {"name": "LED bulb", "price": 3.50},
    "CD-310": {"name": "Extension cord", "price": 12.00},
    "EF-042": {"name": "Cable ties (50)", "price": 4.25},
    "GH-007": {"name": "Wall plug set", "price": 6.80},
}


def find_product(sku):
    """Return the product with this SKU, or None if there is none."""
    return PRODUCTS.get(sku)
