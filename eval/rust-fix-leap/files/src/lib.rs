/// Whether `year` is a leap year in the Gregorian calendar.
pub fn is_leap(year: u32) -> bool {
    year % 4 == 0 && year % 100 != 0
}

/// Days in `year`.
pub fn days_in(year: u32) -> u32 {
    if is_leap(year) {
        366
    } else {
        365
    }
}
