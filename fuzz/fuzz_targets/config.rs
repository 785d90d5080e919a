//! The agent-file loader and durations on any text: an error with a place,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = mm::config::AgentFile::parse(std::path::Path::new("fuzz.yaml"), text);
    let _ = mm::config::duration::parse(text);
});
