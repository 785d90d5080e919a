//! Meeting-room bookings. Times are minutes after midnight; a booking
//! (start, end) covers start <= t < end.

/// Merge overlapping or touching bookings into sorted, disjoint blocks.
pub fn merge_bookings(bookings: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut sorted = bookings.to_vec();
    sorted.sort();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (start, end) in sorted {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Free gaps between `open` and `close` that are at least `min_len` minutes.
pub fn free_slots(bookings: &[(u32, u32)], open: u32, close: u32, min_len: u32) -> Vec<(u32, u32)> {
    let mut free = Vec::new();
    let mut t = open;
    for (start, end) in merge_bookings(bookings) {
        if start > t && start - t >= min_len {
            free.push((t, start.min(close)));
        }
        t = t.max(end);
    }
    if close > t && close - t >= min_len {
        free.push((t, close));
    }
    free
}

/// Total booked minutes (overlaps counted once).
pub fn booked_minutes(bookings: &[(u32, u32)]) -> u32 {
    merge_bookings(bookings).iter().map(|(s, e)| e - s).sum()
}
