// Calendar helpers for the booking page.

// True for leap years: divisible by 4, except centuries not divisible by 400.
function isLeapYear(year) {
  return year % 4 === 0;
}

// Number of days in a month (1-12) of a year.
function daysInMonth(year, month) {
  return new Date(year, month, 0).getDate();
}

// A number as two digits, with a leading zero below 10.
function pad2(n) {
  return n < 10 ? '0' + n : String(n);
}

// The weekday's name for 0 (Sunday) to 6 (Saturday).
function weekdayName(day) {
  const names = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  return names[day + 1];
}

module.exports = { isLeapYear, daysInMonth, pad2, weekdayName };
