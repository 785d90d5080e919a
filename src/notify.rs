//! Telling a user who looked away that mm is done or waits for an answer:
//! the bell, and a desktop notification by OSC 9 (iTerm2, WezTerm, kitty,
//! Ghostty, Windows Terminal) or OSC 777 (foot, urxvt, VTE terminals),
//! wrapped for tmux and screen as the clipboard's OSC 52 is.

use crate::clipboard::{Env, Mux};

/// Which notification sequence the terminal takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Osc {
    Nine,
    SevenSevenSeven,
}

impl Osc {
    pub fn detect() -> Osc {
        let term = std::env::var("TERM").unwrap_or_default();
        let vte = std::env::var_os("VTE_VERSION").is_some_and(|v| !v.is_empty());
        if vte || term.starts_with("foot") || term.contains("rxvt") {
            Osc::SevenSevenSeven
        } else {
            Osc::Nine
        }
    }
}

/// The bytes that ring the bell and show `text` as a notification. Only
/// printable characters of `text` are sent (no sequence can be closed
/// early or smuggled in).
pub fn sequence(text: &str, osc: Osc, env: &Env) -> Vec<u8> {
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .take(200)
        .collect();
    let seq = match osc {
        Osc::Nine => format!("\x1b]9;{clean}\x07"),
        Osc::SevenSevenSeven => format!("\x1b]777;notify;mm;{clean}\x1b\\"),
    };
    let wrapped = match env.mux() {
        Mux::Tmux => format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b")),
        Mux::Screen => format!("\x1bP{seq}\x1b\\"),
        Mux::None => seq,
    };
    let mut out = b"\x07".to_vec();
    out.extend_from_slice(wrapped.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_cannot_end_the_sequence_and_tmux_gets_it_wrapped() {
        let plain = Env::default();
        assert_eq!(
            sequence("done\x07\x1b]52;c;x", Osc::Nine, &plain),
            b"\x07\x1b]9;done]52cx\x07".to_vec()
        );
        assert_eq!(
            sequence("waiting", Osc::SevenSevenSeven, &plain),
            b"\x07\x1b]777;notify;mm;waiting\x1b\\".to_vec()
        );
        let tmux = Env {
            tmux: true,
            ..Env::default()
        };
        assert_eq!(
            sequence("done", Osc::Nine, &tmux),
            b"\x07\x1bPtmux;\x1b\x1b]9;done\x07\x1b\\".to_vec()
        );
    }
}
