//! Keys as the keymap names them (`ctrl-c`, `shift-tab`, `f12`): parsed
//! from a keymap file, translated from the terminal's key events, and
//! written back for hints and the help.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key with its modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeKey,
    pub ctrl: bool,
    pub alt: bool,
    pub shift: bool,
}

/// The key codes bindings use (a subset of crossterm's, orderable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeKey {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Tab,
    Backspace,
    Delete,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
}

impl Key {
    pub fn parse(spec: &str) -> Result<Key, String> {
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let lower = spec.trim().to_ascii_lowercase();
        let mut rest = lower.as_str();
        loop {
            if rest.len() > 1 {
                if let Some(r) = rest.strip_prefix("ctrl-") {
                    ctrl = true;
                    rest = r;
                    continue;
                }
                if let Some(r) = rest.strip_prefix("alt-") {
                    alt = true;
                    rest = r;
                    continue;
                }
                if let Some(r) = rest.strip_prefix("shift-") {
                    shift = true;
                    rest = r;
                    continue;
                }
            }
            break;
        }
        let original_rest = &spec.trim()[spec.trim().len() - rest.len()..];
        let code = match rest {
            "enter" | "return" => KeyCodeKey::Enter,
            "esc" | "escape" => KeyCodeKey::Esc,
            "tab" => KeyCodeKey::Tab,
            "backspace" => KeyCodeKey::Backspace,
            "delete" | "del" => KeyCodeKey::Delete,
            "up" => KeyCodeKey::Up,
            "down" => KeyCodeKey::Down,
            "left" => KeyCodeKey::Left,
            "right" => KeyCodeKey::Right,
            "home" => KeyCodeKey::Home,
            "end" => KeyCodeKey::End,
            "pageup" => KeyCodeKey::PageUp,
            "pagedown" => KeyCodeKey::PageDown,
            "space" => KeyCodeKey::Char(' '),
            f if f.starts_with('f')
                && f.len() > 1
                && f[1..].chars().all(|c| c.is_ascii_digit()) =>
            {
                let n: u8 = f[1..]
                    .parse()
                    .map_err(|_| format!("bad function key {spec:?}"))?;
                if !(1..=12).contains(&n) {
                    return Err(format!("bad function key {spec:?}"));
                }
                KeyCodeKey::F(n)
            }
            _ => {
                let mut chars = original_rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => {
                        // "G" means shift-g; store letters lower-case with shift.
                        if c.is_ascii_uppercase() {
                            shift = true;
                        }
                        KeyCodeKey::Char(c.to_ascii_lowercase())
                    }
                    _ => return Err(format!("unknown key {spec:?}")),
                }
            }
        };
        Ok(Key {
            code,
            ctrl,
            alt,
            shift,
        })
    }

    /// The binding key of a terminal key event.
    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        let m = ev.modifiers;
        let mut shift = m.contains(KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Char(c) => {
                if c.is_ascii_uppercase() {
                    shift = true;
                }
                // Shifted punctuation arrives as its own character.
                if !c.is_ascii_alphabetic() && c != ' ' {
                    shift = false;
                }
                KeyCodeKey::Char(c.to_ascii_lowercase())
            }
            KeyCode::F(n) => KeyCodeKey::F(n),
            KeyCode::Enter => KeyCodeKey::Enter,
            KeyCode::Esc => KeyCodeKey::Esc,
            KeyCode::Tab => KeyCodeKey::Tab,
            KeyCode::BackTab => {
                shift = true;
                KeyCodeKey::Tab
            }
            KeyCode::Backspace => KeyCodeKey::Backspace,
            KeyCode::Delete => KeyCodeKey::Delete,
            KeyCode::Up => KeyCodeKey::Up,
            KeyCode::Down => KeyCodeKey::Down,
            KeyCode::Left => KeyCodeKey::Left,
            KeyCode::Right => KeyCodeKey::Right,
            KeyCode::Home => KeyCodeKey::Home,
            KeyCode::End => KeyCodeKey::End,
            KeyCode::PageUp => KeyCodeKey::PageUp,
            KeyCode::PageDown => KeyCodeKey::PageDown,
            _ => return None,
        };
        Some(Key {
            code,
            ctrl: m.contains(KeyModifiers::CONTROL),
            alt: m.contains(KeyModifiers::ALT),
            shift,
        })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            write!(f, "ctrl-")?;
        }
        if self.alt {
            write!(f, "alt-")?;
        }
        if self.shift {
            write!(f, "shift-")?;
        }
        match self.code {
            KeyCodeKey::Char(' ') => write!(f, "space"),
            KeyCodeKey::Char(c) => write!(f, "{c}"),
            KeyCodeKey::F(n) => write!(f, "f{n}"),
            KeyCodeKey::Enter => write!(f, "enter"),
            KeyCodeKey::Esc => write!(f, "esc"),
            KeyCodeKey::Tab => write!(f, "tab"),
            KeyCodeKey::Backspace => write!(f, "backspace"),
            KeyCodeKey::Delete => write!(f, "delete"),
            KeyCodeKey::Up => write!(f, "up"),
            KeyCodeKey::Down => write!(f, "down"),
            KeyCodeKey::Left => write!(f, "left"),
            KeyCodeKey::Right => write!(f, "right"),
            KeyCodeKey::Home => write!(f, "home"),
            KeyCodeKey::End => write!(f, "end"),
            KeyCodeKey::PageUp => write!(f, "pageup"),
            KeyCodeKey::PageDown => write!(f, "pagedown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_events_map_to_bindings() {
        let ev = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(Key::from_event(&ev), Some(Key::parse("ctrl-c").unwrap()));
        let ev = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(Key::from_event(&ev), Some(Key::parse("shift-tab").unwrap()));
        let ev = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
        assert_eq!(Key::from_event(&ev), Some(Key::parse("?").unwrap()));
        let ev = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(Key::from_event(&ev), Some(Key::parse("shift-g").unwrap()));
    }
}
