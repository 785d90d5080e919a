import calendar_rules
from timesheet import overtime_hours, short_days

WEEK = [8, 9.5, 7, 10, 8]


def gross_pay(days, hourly):
    extra = overtime_hours(days)
    regular = sum(days) - extra
    return regular * hourly + extra * hourly * calendar_rules.OVERTIME_RATE


def main():
    print(f"Standard work day: {calendar_rules.WORK_DAY_HOURS} hours")
    print(f"Overtime this week: {overtime_hours(WEEK)} hours")
    print(f"Short days: {short_days(WEEK)}")
    print(f"Gross pay at 20/h: {gross_pay(WEEK, 20):.2f}")


if __name__ == "__main__":
    main()
