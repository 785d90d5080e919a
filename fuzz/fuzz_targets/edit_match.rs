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
        assert!(splice.start <= splice.end && splice.end <= content.len());
        assert!(content.is_char_boundary(splice.start) && content.is_char_boundary(splice.end));
        let out = apply(content, &splice);
        // What lies before and after the match is kept byte for byte, and
        // the match itself becomes the replacement.
        let tail = content.len() - splice.end;
        assert_eq!(&out[..splice.start], &content[..splice.start]);
        assert_eq!(&out[out.len() - tail..], &content[splice.end..]);
        assert_eq!(&out[splice.start..out.len() - tail], splice.replacement);
        // An exact match (no normalisation named) covers the old text.
        if splice.how.is_none() && !old.is_empty() {
            assert!(content[splice.start..splice.end].contains(old));
        }
    }
});
