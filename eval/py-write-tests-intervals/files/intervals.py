"""Helpers for booking slots, given as (start, end) pairs in minutes."""


def merge(slots):
    """Merge overlapping or touching slots; returns a new sorted list.

    merge([(60, 90), (0, 30), (30, 45)]) -> [(0, 45), (60, 90)]
    """
    result = []
    for start, end in sorted(slots):
        if result and start <= result[-1][1]:
            last_start, last_end = result[-1]
            result[-1] = (last_start, max(last_end, end))
        else:
            result.append((start, end))
    return result


def total_minutes(slots):
    return sum(end - start for start, end in merge(slots))
