from calendar_rules import WORK_DAY_HOURS, is_full_day


def overtime_hours(days):
    """Hours worked beyond a normal day, summed over the given days."""
    return sum(max(0, h - WORK_DAY_HOURS) for h in days)


def short_days(days):
    return [i for i, h in enumerate(days) if h > 0 and not is_full_day(h)]
