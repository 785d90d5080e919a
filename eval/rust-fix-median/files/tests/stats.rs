use readings::{mean, median, outliers, spread};

#[test]
fn mean_of_readings() {
    assert_eq!(mean(&[18.0, 20.0, 22.0]), Some(20.0));
    assert_eq!(mean(&[]), None);
}

#[test]
fn median_odd_count() {
    assert_eq!(median(&[21.0, 19.0, 25.0]), Some(21.0));
}

#[test]
fn median_even_count() {
    assert_eq!(median(&[20.0, 24.0, 18.0, 22.0]), Some(21.0));
    assert_eq!(median(&[10.0, 11.0]), Some(10.5));
}

#[test]
fn spread_and_outliers() {
    assert_eq!(spread(&[19.5, 23.0, 18.0]), Some(5.0));
    assert_eq!(spread(&[]), None);
    assert_eq!(outliers(&[20.0, 21.0, 35.0, 19.0], 5.0), vec![35.0]);
}
