//! Roman numerals for chapter and clock-face labels.

const TABLE: [(u32, &str); 13] = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
];

/// `n` as a Roman numeral, e.g. 1994 -> "MCMXCIV". `None` outside 1..=3999.
pub fn to_roman(mut n: u32) -> Option<String> {
    if n == 0 || n > 3999 {
        return None;
    }
    let mut out = String::new();
    for &(value, symbol) in TABLE.iter() {
        while n >= value {
            out.push_str(symbol);
            n -= value;
        }
    }
    Some(out)
}

/// Parse a Roman numeral; the accepted forms are described in SPEC.md.
pub fn from_roman(s: &str) -> Option<u32> {
    todo!()
}

/// Label for chapter `n`: "Chapter IV".
pub fn chapter_label(n: u32) -> String {
    match to_roman(n) {
        Some(r) => format!("Chapter {}", r),
        None => format!("Chapter {}", n),
    }
}
