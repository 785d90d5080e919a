"""Summary numbers for the latency report."""


def mean(values):
    """The arithmetic mean of the values."""
    return sum(values) / len(values)


def median(values):
    """The middle value of the sorted values (the mean of the two middle ones for an even count)."""
    n = len(values)
    mid = n // 2
    if n % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2


def spread(values):
    """The largest value minus the smallest."""
    return min(values) - max(values)


def clip(value, low, high):
    """The value limited to the range low..high."""
    return max(low, min(value, high))
