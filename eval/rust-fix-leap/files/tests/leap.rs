use leap::{days_in, is_leap};

#[test]
fn ordinary_years() {
    assert!(!is_leap(2023));
    assert!(is_leap(2024));
}

#[test]
fn centuries() {
    assert!(!is_leap(1900));
    assert!(is_leap(2000));
}

#[test]
fn days() {
    assert_eq!(days_in(2000), 366);
}
