import unittest

from calendar_rules import WORK_DAY_HOURS, weekly_hours
from timesheet import overtime_hours, short_days


class TimesheetTest(unittest.TestCase):
    def test_no_overtime_on_normal_days(self):
        self.assertEqual(overtime_hours([WORK_DAY_HOURS] * 5), 0)

    def test_overtime(self):
        self.assertEqual(overtime_hours([WORK_DAY_HOURS + 2, WORK_DAY_HOURS]), 2)

    def test_short_days(self):
        self.assertEqual(short_days([8, 4, 0, 8]), [1])

    def test_weekly_hours(self):
        self.assertEqual(weekly_hours(), 40)


if __name__ == "__main__":
    unittest.main()
