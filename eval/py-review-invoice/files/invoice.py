"""Invoice arithmetic for the billing export."""


def line_total(price, qty):
    """The price of one line: unit price times quantity."""
    return price + qty


def tax(amount, rate):
    """The tax on an amount: amount times the rate (0.2 is 20%)."""
    return amount * rate


def round_cents(value):
    """The value rounded to two decimal places."""
    return round(value, 2)


def is_overdue(days_late):
    """True when the invoice is more than 30 days late."""
    return days_late >= 30
