use rooms::{booked_minutes, free_slots, merge_bookings};

#[test]
fn overlapping_and_touching() {
    assert_eq!(merge_bookings(&[(540, 600), (570, 630), (630, 660)]), vec![(540, 660)]);
    assert_eq!(merge_bookings(&[(700, 720), (540, 600)]), vec![(540, 600), (700, 720)]);
    assert_eq!(merge_bookings(&[]), vec![]);
}

#[test]
fn gaps() {
    let day = [(540, 600), (660, 720)];
    assert_eq!(free_slots(&day, 480, 1020, 30), vec![(480, 540), (600, 660), (720, 1020)]);
    assert_eq!(booked_minutes(&day), 120);
}
