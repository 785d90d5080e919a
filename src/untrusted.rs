//! Text that came from a model, a tool or a file is never written to the
//! terminal as it is: an escape sequence in it could clear the screen,
//! retitle the window, move the cursor over an approval question and
//! print a fake one (prompt spoofing), or push input. Control characters
//! (C0 but newline and tab, DEL, C1, ESC sequences) are shown in caret
//! or `<U+…>` notation instead, and so are the bidi controls that reorder
//! what is shown (Trojan Source).

use std::borrow::Cow;

fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `text` made safe to print: every control character visible.
pub fn displayable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            // A Windows line end moves nothing anywhere.
            continue;
        }
        if !hidden(c) {
            out.push(c);
        } else if (c as u32) < 0x20 {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        } else if c == '\u{7f}' {
            out.push_str("^?");
        } else {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        }
    }
    Cow::Owned(out)
}

/// `value` as one line of JSON that is safe on a terminal too: besides
/// the C0 controls JSON escapes anyway, DEL, the C1 controls (U+009B is a
/// CSI to some terminals) and the bidi controls are written as `\uXXXX`.
/// A JSON reader gets the same text back.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> String {
    struct Safe;
    impl serde_json::ser::Formatter for Safe {
        fn write_string_fragment<W: std::io::Write + ?Sized>(
            &mut self,
            writer: &mut W,
            fragment: &str,
        ) -> std::io::Result<()> {
            let mut rest = fragment;
            while let Some((at, c)) = rest.char_indices().find(|&(_, c)| hidden(c)) {
                writer.write_all(&rest.as_bytes()[..at])?;
                write!(writer, "\\u{:04x}", c as u32)?;
                rest = &rest[at + c.len_utf8()..];
            }
            writer.write_all(rest.as_bytes())
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Safe);
    if value.serialize(&mut ser).is_err() {
        return "null".into();
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_left_alone() {
        assert!(matches!(
            displayable("fn main() {\n\tok\n}"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn escapes_and_controls_become_visible() {
        assert_eq!(displayable("\x1b[2Jclear"), "^[[2Jclear");
        assert_eq!(displayable("a\rb"), "a^Mb");
        assert_eq!(displayable("a\r\nb"), "a\nb");
        assert_eq!(displayable("\x07\x7f"), "^G^?");
        assert_eq!(displayable("\u{9b}31m"), "<U+009B>31m");
        assert_eq!(displayable("x\u{202E}y"), "x<U+202E>y");
        assert!(!displayable("\x1b]52;c;AAAA\x07").contains('\x1b'));
    }

    #[test]
    fn json_lines_escape_what_a_terminal_would_obey() {
        let v = serde_json::json!({"a": "x\u{9b}2J\u{202e}y\u{7f}\u{1b}[0m é"});
        let line = json_line(&v);
        assert!(line.is_ascii() || !line.chars().any(hidden), "{line:?}");
        assert!(line.contains("\\u009b") && line.contains("\\u202e") && line.contains("\\u007f"));
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, v);
        assert!(line.contains('é'));
    }
}
