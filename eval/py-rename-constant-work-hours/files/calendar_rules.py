WORK_DAY_HOURS = 8
WORK_DAYS_PER_WEEK = 5
OVERTIME_RATE = 1.5


def weekly_hours():
    return WORK_DAY_HOURS * WORK_DAYS_PER_WEEK


def is_full_day(hours):
    return hours >= WORK_DAY_HOURS
