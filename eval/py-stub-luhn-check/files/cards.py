"""Payment card helpers for the checkout form."""


def normalize(number):
    """The number without spaces or dashes: '4539 1488-0343 6467' -> '4539148803436467'."""
    return number.replace(" ", "").replace("-", "")


def mask(number):
    """All but the last four digits hidden: '4539148803436467' -> '************6467'."""
    digits = normalize(number)
    return "*" * (len(digits) - 4) + digits[-4:]


def is_valid(number):
    """Whether `number` is a plausible card number (see SPEC.md)."""
    # TODO
    raise NotImplementedError


def brand(number):
    """'visa', 'mastercard', 'amex' or 'other', from the leading digits."""
    digits = normalize(number)
    if digits.startswith("4"):
        return "visa"
    if digits[:2] in {"51", "52", "53", "54", "55"}:
        return "mastercard"
    if digits[:2] in {"34", "37"}:
        return "amex"
    return "other"
