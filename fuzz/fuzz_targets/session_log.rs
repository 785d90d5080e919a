//! The session-log reader on any bytes (a crash can leave anything at the
//! end of a log): records or a clear error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(records) = mm::session::parse_log(data) {
        let _ = mm::session::messages(&records);
        let _ = mm::session::turn_starts(&records);
        let _ = mm::session::made(&records);
    }
});
