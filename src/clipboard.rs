//! Copying text where the user can paste it: the system clipboard when a
//! display is there, else OSC 52 through the terminal (always over SSH),
//! wrapped for tmux and screen. Nothing here blocks on a missing clipboard:
//! the caller is told where the text went.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine;

/// Base64 bytes an OSC 52 sequence carries at most: what xterm, kitty,
/// iTerm2, WezTerm and tmux accept (some terminals take less).
pub const OSC52_MAX: usize = 100_000;

/// The multiplexer the terminal sequence must pass through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mux {
    None,
    Tmux,
    Screen,
}

/// What the environment says, read once so the choice can be tested.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub display: bool,
    pub ssh: bool,
    pub tmux: bool,
    pub screen: bool,
    /// A terminal to write the sequence to.
    pub terminal: bool,
}

impl Env {
    pub fn detect(terminal: bool) -> Env {
        let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
        let term = std::env::var("TERM").unwrap_or_default();
        Env {
            display: set("DISPLAY") || set("WAYLAND_DISPLAY"),
            ssh: set("SSH_CONNECTION") || set("SSH_TTY") || set("SSH_CLIENT"),
            tmux: set("TMUX"),
            screen: set("STY") || (term.starts_with("screen") && !set("TMUX")),
            terminal,
        }
    }

    pub fn mux(&self) -> Mux {
        if self.tmux {
            Mux::Tmux
        } else if self.screen {
            Mux::Screen
        } else {
            Mux::None
        }
    }
}

/// The ways to copy, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    System,
    Osc52(Mux),
    File,
}

/// Over SSH the system clipboard is the remote machine's, not the user's:
/// the terminal is the only way to theirs.
pub fn plan(env: &Env) -> Vec<Way> {
    let mut ways = Vec::new();
    if env.display && !env.ssh {
        ways.push(Way::System);
    }
    if env.terminal {
        ways.push(Way::Osc52(env.mux()));
    }
    ways.push(Way::File);
    ways
}

/// The OSC 52 sequence that sets the clipboard to `text`, wrapped for the
/// multiplexer; `true` when the text was cut to fit.
pub fn osc52(text: &str, mux: Mux) -> (Vec<u8>, bool) {
    let max_raw = OSC52_MAX / 4 * 3;
    let (text, cut) = if text.len() > max_raw {
        let mut end = max_raw;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], true)
    } else {
        (text, false)
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    let seq = format!("\x1b]52;c;{b64}\x07");
    let bytes = match mux {
        Mux::None => seq.into_bytes(),
        // tmux takes the plain sequence itself with `set-clipboard on`
        // (its buffer, and the outer terminal's clipboard when it can), and
        // passes a DCS-wrapped one (ESCs doubled) to the outer terminal
        // with `allow-passthrough on`. Both are sent: either setting works.
        Mux::Tmux => {
            format!("{seq}\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b")).into_bytes()
        }
        // screen cuts a DCS string at 768 bytes: one DCS per chunk.
        Mux::Screen => {
            let mut out = String::new();
            let chars: Vec<char> = seq.chars().collect();
            for chunk in chars.chunks(76) {
                out.push_str("\x1bP");
                out.extend(chunk);
                out.push_str("\x1b\\");
            }
            out.into_bytes()
        }
    };
    (bytes, cut)
}

/// Where the text went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Copied {
    System,
    /// Sent to the terminal; it may or may not allow clipboard writes.
    Terminal {
        mux: Mux,
        cut: bool,
    },
    File(PathBuf),
}

impl Copied {
    /// For a status line, short enough for one: "copied 12 lines (1.2 KB)
    /// of the answer". Through the terminal it is "sent": whether the
    /// terminal (or tmux) puts it on a clipboard, mm cannot see.
    pub fn describe(&self, what: &str, lines: usize, bytes: usize) -> String {
        let size = if bytes >= 1024 {
            format!("{:.1} KB", bytes as f64 / 1024.0)
        } else {
            format!("{bytes} bytes")
        };
        let amount = format!(
            "{lines} line{} ({size}) of {what}",
            if lines == 1 { "" } else { "s" }
        );
        match self {
            Copied::System => format!("copied {amount}"),
            // Short: it shares the status bar (the long form was cut at
            // the edge of a 120-column one).
            Copied::Terminal { mux, cut } => format!(
                "OSC 52: sent {}{}{}",
                amount,
                match mux {
                    Mux::None => "",
                    Mux::Tmux => ", via tmux",
                    Mux::Screen => ", via screen",
                },
                if *cut {
                    format!("; cut to the first {} KB", OSC52_MAX / 4 * 3 / 1024)
                } else {
                    String::new()
                }
            ),
            Copied::File(p) => format!("no clipboard here: {amount} written to {}", p.display()),
        }
    }
}

/// The system clipboard, kept open: on X11 the text lives as long as the
/// process that owns the selection holds it.
static SYSTEM: Mutex<Option<arboard::Clipboard>> = Mutex::new(None);

fn system_copy(text: &str) -> Result<(), String> {
    let mut guard = SYSTEM
        .lock()
        .map_err(|_| "clipboard lock poisoned".to_string())?;
    if guard.is_none() {
        *guard = Some(arboard::Clipboard::new().map_err(|e| e.to_string())?);
    }
    match guard.as_mut() {
        Some(c) => c.set_text(text.to_string()).map_err(|e| e.to_string()),
        None => Err("no clipboard".into()),
    }
}

/// Copies `text`: tries each way of `plan(env)`; the terminal sequence is
/// written to `term`; the last resort is a file in `fallback_dir`.
pub fn copy(text: &str, env: &Env, term: &mut dyn Write, fallback_dir: &Path) -> Copied {
    for way in plan(env) {
        match way {
            Way::System => {
                if system_copy(text).is_ok() {
                    return Copied::System;
                }
            }
            Way::Osc52(mux) => {
                let (seq, cut) = osc52(text, mux);
                if term.write_all(&seq).and_then(|_| term.flush()).is_ok() {
                    return Copied::Terminal { mux, cut };
                }
            }
            Way::File => {}
        }
    }
    let path = fallback_dir.join("copied.md");
    // Never through a link planted at .mm or .mm/copied.md.
    let written =
        crate::mmdir::MmDir::open(fallback_dir).and_then(|d| d.write("copied.md", text.as_bytes()));
    match written {
        Ok(()) => Copied::File(path),
        Err(_) => {
            // A fresh file of our own, not a name someone could have
            // planted a link at.
            let kept = tempfile::Builder::new()
                .prefix("mm-copied-")
                .suffix(".md")
                .tempfile()
                .and_then(|mut f| {
                    f.write_all(text.as_bytes())?;
                    f.keep().map_err(|e| e.error)
                });
            match kept {
                Ok((_, p)) => Copied::File(p),
                Err(_) => Copied::File(path),
            }
        }
    }
}

/// The fenced code blocks of a markdown text, their content only: a
/// block closes at a fence of the same character at least as long, or at
/// the end of the text.
pub fn code_blocks(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    // The fence character, its length, and the block so far.
    let mut current: Option<(char, usize, String)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let run = |c: char| trimmed.chars().take_while(|x| *x == c).count();
        match &mut current {
            None => {
                for c in ['`', '~'] {
                    if run(c) >= 3 {
                        current = Some((c, run(c), String::new()));
                        break;
                    }
                }
            }
            Some((c, n, body)) => {
                let closes = run(*c) >= *n && trimmed.trim_end().chars().all(|x| x == *c);
                if closes {
                    out.push(std::mem::take(body));
                    current = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    if let Some((_, _, body)) = current
        && !body.is_empty()
    {
        out.push(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_sequences_plain_tmux_and_screen() {
        let (plain, cut) = osc52("hi", Mux::None);
        assert_eq!(plain, b"\x1b]52;c;aGk=\x07");
        assert!(!cut);
        let (tmux, _) = osc52("hi", Mux::Tmux);
        assert_eq!(
            tmux,
            b"\x1b]52;c;aGk=\x07\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
        );
        let (screen, _) = osc52("hi", Mux::Screen);
        assert_eq!(screen, b"\x1bP\x1b]52;c;aGk=\x07\x1b\\");
        // Long text: screen gets one DCS per 76 characters.
        let long = "x".repeat(300);
        let (screen, _) = osc52(&long, Mux::Screen);
        let seq = String::from_utf8(screen).unwrap();
        let parts: Vec<&str> = seq.split("\x1b\\").filter(|p| !p.is_empty()).collect();
        assert!(
            parts
                .iter()
                .all(|p| p.starts_with("\x1bP") && p.len() <= 78)
        );
        let joined: String = parts.iter().map(|p| &p[2..]).collect();
        let (plain, _) = osc52(&long, Mux::None);
        assert_eq!(joined.as_bytes(), plain.as_slice());
    }

    #[test]
    fn a_huge_text_is_cut_to_what_terminals_take() {
        let big = "é".repeat(OSC52_MAX);
        let (seq, cut) = osc52(&big, Mux::None);
        assert!(cut);
        assert!(seq.len() <= OSC52_MAX + 10, "{}", seq.len());
        let b64 = &seq[7..seq.len() - 1];
        let text = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert!(
            String::from_utf8(text).is_ok(),
            "cut on a character boundary"
        );
    }

    #[test]
    fn the_order_follows_the_display_ssh_and_terminal() {
        let env = |display, ssh, terminal, tmux| Env {
            display,
            ssh,
            tmux,
            screen: false,
            terminal,
        };
        assert_eq!(
            plan(&env(true, false, true, false)),
            vec![Way::System, Way::Osc52(Mux::None), Way::File]
        );
        // Over SSH the remote display is not the user's clipboard.
        assert_eq!(
            plan(&env(true, true, true, true)),
            vec![Way::Osc52(Mux::Tmux), Way::File]
        );
        assert_eq!(
            plan(&env(false, false, true, false)),
            vec![Way::Osc52(Mux::None), Way::File]
        );
        assert_eq!(plan(&env(false, false, false, false)), vec![Way::File]);
    }

    #[test]
    fn without_display_or_terminal_the_text_goes_to_a_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = Vec::new();
        let got = copy("the answer", &Env::default(), &mut sink, dir.path());
        assert_eq!(got, Copied::File(dir.path().join("copied.md")));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("copied.md")).unwrap(),
            "the answer"
        );
        assert!(sink.is_empty());
        assert!(got.describe("the last answer", 1, 10).contains("copied.md"));
    }

    #[test]
    fn with_a_terminal_and_no_display_osc52_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = Vec::new();
        let env = Env {
            terminal: true,
            tmux: true,
            ..Env::default()
        };
        let got = copy("hi", &env, &mut sink, dir.path());
        assert_eq!(
            got,
            Copied::Terminal {
                mux: Mux::Tmux,
                cut: false
            }
        );
        assert_eq!(
            sink,
            b"\x1b]52;c;aGk=\x07\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
        );
        assert_eq!(
            got.describe("the last answer", 1, 2),
            "OSC 52: sent 1 line (2 bytes) of the last answer, via tmux"
        );
    }

    #[test]
    fn code_blocks_are_found_with_their_content_only() {
        let md = "Here:\n\n```python\ndef f():\n    return 1\n```\n\nand\n\n~~~\nls -l\n~~~\n";
        assert_eq!(
            code_blocks(md),
            vec![
                "def f():\n    return 1\n".to_string(),
                "ls -l\n".to_string()
            ]
        );
        assert!(code_blocks("no code").is_empty());
        // A longer closing fence closes; an unclosed last block counts.
        assert_eq!(
            code_blocks("````\na\n`````\n```\nb\n"),
            vec!["a\n".to_string(), "b\n".to_string()]
        );
    }
}
