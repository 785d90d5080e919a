"""The account ledger: amounts in order of booking."""


def balance(amounts):
    return sum(a for a in amounts if a is not None)


def running_total(amounts):
    """The balance after each booking. See SPEC.md."""
    raise NotImplementedError
