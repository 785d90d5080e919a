//! The partial-JSON reader the TUI uses on tool arguments as they stream:
//! any prefix of any text, no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = mm::tui::partial_json::strings(text);
});
