use roman::{chapter_label, to_roman};

#[test]
fn writes_numerals() {
    assert_eq!(to_roman(4).as_deref(), Some("IV"));
    assert_eq!(to_roman(1994).as_deref(), Some("MCMXCIV"));
    assert_eq!(to_roman(3999).as_deref(), Some("MMMCMXCIX"));
    assert_eq!(to_roman(0), None);
}

#[test]
fn labels() {
    assert_eq!(chapter_label(12), "Chapter XII");
    assert_eq!(chapter_label(4000), "Chapter 4000");
}
