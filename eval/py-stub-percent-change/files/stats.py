"""Figures for the monthly sales summary."""


def mean(values):
    return sum(values) / len(values)


def percent_change(old, new):
    """How much `new` differs from `old`, in percent. See SPEC.md."""
    raise NotImplementedError("percent_change")
