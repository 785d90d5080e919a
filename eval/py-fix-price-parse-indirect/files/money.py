"""Money helpers. Amounts are kept as integers in cents."""


def parse_price(text):
    """Parse a price as typed at the till into cents.

    '12.50' -> 1250, '12.5' -> 1250, '12' -> 1200, '€3.07' -> 307, ' 0.99 ' -> 99
    """
    text = text.strip().lstrip("€")
    if "." in text:
        euros, cents = text.split(".")
        return int(euros or "0") * 100 + int(cents)
    return int(text) * 100


def format_cents(cents):
    """1250 -> '€12.50'"""
    return f"€{cents // 100}.{cents % 100:02d}"
