//! Reading the string arguments of a tool call while it is still being
//! streamed: the JSON may stop anywhere (inside a key, a value, an escape).
//! The diff pane uses it to show a write or an edit as the model writes it.

use std::collections::BTreeMap;

/// A top-level string value and whether its closing quote has arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    pub value: String,
    pub complete: bool,
}

struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\n' | b'\r' | b'\t') {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A string after its opening quote: (text so far, closed?).
    fn string(&mut self) -> (String, bool) {
        let mut out: Vec<u8> = Vec::new();
        while self.i < self.s.len() {
            let c = self.s[self.i];
            match c {
                b'"' => {
                    self.i += 1;
                    return (String::from_utf8_lossy(&out).into_owned(), true);
                }
                b'\\' => {
                    let Some(&e) = self.s.get(self.i + 1) else {
                        break;
                    };
                    let simple = match e {
                        b'n' => Some(b'\n'),
                        b't' => Some(b'\t'),
                        b'r' => Some(b'\r'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'"' | b'\\' | b'/' => Some(e),
                        _ => None,
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        self.i += 2;
                        continue;
                    }
                    if e == b'u' {
                        let Some(hex) = self.s.get(self.i + 2..self.i + 6) else {
                            break;
                        };
                        let code = std::str::from_utf8(hex)
                            .ok()
                            .and_then(|h| u32::from_str_radix(h, 16).ok());
                        self.i += 6;
                        let ch = match code {
                            Some(hi @ 0xD800..=0xDBFF) => {
                                // A surrogate pair needs its second half.
                                let lo = self
                                    .s
                                    .get(self.i..self.i + 6)
                                    .filter(|t| t.starts_with(b"\\u"))
                                    .and_then(|t| std::str::from_utf8(&t[2..]).ok())
                                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                                match lo {
                                    Some(lo @ 0xDC00..=0xDFFF) => {
                                        self.i += 6;
                                        char::from_u32(
                                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00),
                                        )
                                    }
                                    // Not a low half: the high one stands
                                    // alone (shown as U+FFFD).
                                    Some(_) => None,
                                    None => break,
                                }
                            }
                            Some(c) => char::from_u32(c),
                            None => None,
                        };
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(
                            ch.unwrap_or('\u{fffd}').encode_utf8(&mut buf).as_bytes(),
                        );
                        continue;
                    }
                    out.push(e);
                    self.i += 2;
                }
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        self.i = self.s.len();
        // A cut inside a multi-byte character leaves a partial sequence.
        let text = match std::str::from_utf8(&out) {
            Ok(t) => t.to_string(),
            Err(e) => String::from_utf8_lossy(&out[..e.valid_up_to()]).into_owned(),
        };
        (text, false)
    }

    /// Skips a non-string value (number, literal, object, array).
    fn skip_value(&mut self) {
        let mut depth = 0i32;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'"' => {
                    self.i += 1;
                    self.string();
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                b',' if depth == 0 => return,
                _ => {}
            }
            self.i += 1;
        }
    }
}

/// The top-level string values of a possibly unfinished JSON object.
pub fn strings(text: &str) -> BTreeMap<String, Partial> {
    let mut out = BTreeMap::new();
    let mut sc = Scanner {
        s: text.as_bytes(),
        i: 0,
    };
    // Some servers double-encode: a JSON string that holds the object.
    if !sc.eat(b'{') {
        return out;
    }
    loop {
        while sc.eat(b',') {}
        if !sc.eat(b'"') {
            return out;
        }
        let (key, closed) = sc.string();
        if !closed || !sc.eat(b':') {
            return out;
        }
        sc.ws();
        if sc.eat(b'"') {
            let (value, complete) = sc.string();
            out.insert(key, Partial { value, complete });
            if !complete {
                return out;
            }
        } else {
            sc.skip_value();
        }
        if sc.i >= sc.s.len() || sc.eat(b'}') {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(text: &str, key: &str) -> Option<(String, bool)> {
        strings(text)
            .get(key)
            .map(|p| (p.value.clone(), p.complete))
    }

    #[test]
    fn values_are_read_as_they_grow() {
        let full = r#"{"path": "src/a.rs", "content": "fn main() {\n    println!(\"hi\");\n}\n"}"#;
        for cut in 0..full.len() {
            // Never panics, whatever the cut.
            let _ = strings(&full[..cut]);
        }
        assert_eq!(get(&full[..20], "path"), Some(("src/a.rs".into(), true)));
        let partial = &full[..50];
        let (content, done) = get(partial, "content").unwrap();
        assert!(!done);
        assert!(content.starts_with("fn main() {\n"), "{content:?}");
        assert_eq!(
            get(full, "content").unwrap().0,
            "fn main() {\n    println!(\"hi\");\n}\n"
        );
    }

    #[test]
    fn cut_escapes_and_unicode_are_safe() {
        assert_eq!(get(r#"{"a": "x\"#, "a"), Some(("x".into(), false)));
        assert_eq!(get(r#"{"a": "x\u00"#, "a"), Some(("x".into(), false)));
        assert_eq!(
            get(r#"{"a": "\u00e9t\u00e9"}"#, "a"),
            Some(("été".into(), true))
        );
        assert_eq!(
            get(r#"{"a": "\ud83d\ude00"}"#, "a"),
            Some(("😀".into(), true))
        );
        // A high half followed by an escape that is no low half (found by
        // the fuzzer: it overflowed).
        assert_eq!(
            get(r#"{"a": "\uda23\u0041"}"#, "a"),
            Some(("\u{fffd}A".into(), true))
        );
    }

    #[test]
    fn other_values_are_skipped() {
        let t = r#"{"n": 12, "o": {"x": "y"}, "l": [1, "two"], "s": "ok"}"#;
        let m = strings(t);
        assert_eq!(m.len(), 1);
        assert_eq!(m["s"].value, "ok");
    }
}
