//! The exec gate's lexer and judge on any command line: no panic, and the
//! judgement is stable (the same line, the same answer).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm::sandbox::{always, policy, shell};

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = std::str::from_utf8(data) else {
        return;
    };
    let _ = shell::parse(cmd);
    let v = policy::judge(cmd);
    assert_eq!(v, policy::judge(cmd));
    let key = always::key(cmd);
    assert!(always::matches(cmd, &key));
    let _ = always::describe(&key);
    let shown = mm::untrusted::displayable(cmd);
    assert!(!shown.contains('\x1b'));
});
