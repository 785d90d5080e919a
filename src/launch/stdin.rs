//! Text piped to mm on stdin: context for the prompt, or the prompt itself
//! (`-p -`).

use super::*;

/// Stdin is a pipe or a file (not a terminal, not /dev/null or a socket).
pub(super) fn stdin_is_piped() -> bool {
    use nix::sys::stat::SFlag;
    let Ok(st) = nix::sys::stat::fstat(std::io::stdin()) else {
        return false;
    };
    let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    kind == SFlag::S_IFIFO || kind == SFlag::S_IFREG
}

/// The most piped context read; the agent cuts it to fit the window.
pub(super) const PIPED_MAX: u64 = 8 * 1024 * 1024;

/// What is piped to `mm -p PROMPT`, to its end (None when empty). A pipe
/// that stays open and silent is said after a few seconds, not waited on
/// in silence.
pub(super) fn read_piped() -> Result<Option<String>, String> {
    use std::io::Read;
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        if !flag.load(Ordering::Relaxed) {
            eprintln!(
                "mm: waiting for stdin to end (what is piped goes with the prompt; </dev/null sends none)"
            );
        }
    });
    let mut bytes = Vec::new();
    let read = std::io::stdin().take(PIPED_MAX + 1).read_to_end(&mut bytes);
    done.store(true, Ordering::Relaxed);
    read.map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > PIPED_MAX {
        return Err(format!(
            "over {} MiB piped; send less (tail -c 1M FILE | mm -p …)",
            PIPED_MAX / (1024 * 1024)
        ));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok((!text.trim().is_empty()).then_some(text))
}

/// `-p -`: the prompt is all of stdin (at most 1 MiB of UTF-8, not empty).
pub(super) fn read_stdin_prompt() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(1024 * 1024 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if bytes.len() > 1024 * 1024 {
        return Err("the prompt on stdin is over 1 MiB".into());
    }
    let text = String::from_utf8(bytes).map_err(|_| "stdin is not UTF-8 text".to_string())?;
    if text.trim().is_empty() {
        return Err("stdin held no prompt".into());
    }
    Ok(text.trim_end().to_string())
}
