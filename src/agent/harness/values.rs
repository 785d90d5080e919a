//! Questions about values: the call a question asks about, its literal
//! arguments, and whether an answer states a number or the value.

use super::*;

pub fn asked_call(prompt: &str) -> Option<AskedCall> {
    static CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?:^|[^\w.])([A-Za-z_][A-Za-z0-9_]*)\(([^()]*(?:\([^()]*\)[^()]*)*)\)").ok()
    });
    static ASKS: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)(return|returns|give|gives|output|outputs|print|prints|evaluate|evaluates|result|value)(?-u:\b)").ok()
    });
    if !ASKS.as_ref()?.is_match(prompt) {
        return None;
    }
    let c = CALL.as_ref()?.captures(prompt)?;
    let (name, args) = (c.get(1)?.as_str(), c.get(2)?.as_str().trim());
    let values = Literals::new(args).all()?;
    Some(AskedCall {
        name: name.to_string(),
        shown: args.to_string(),
        json: serde_json::Value::Array(values).to_string(),
    })
}

/// A strict reader of literal arguments: anything it does not know
/// (a name, an operator, a string prefix, a backslash, triple quotes)
/// fails the whole read.
pub(super) struct Literals<'a> {
    pub(super) s: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Literals<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Literals {
            s: s.as_bytes(),
            at: 0,
        }
    }

    pub(super) fn all(mut self) -> Option<Vec<serde_json::Value>> {
        let v = self.items(None)?;
        self.ws();
        (self.at == self.s.len()).then_some(v)
    }

    pub(super) fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Comma-separated values up to `close` (or the end).
    pub(super) fn items(&mut self, close: Option<u8>) -> Option<Vec<serde_json::Value>> {
        let mut out = Vec::new();
        loop {
            self.ws();
            match (self.s.get(self.at), close) {
                (None, None) => return Some(out),
                (Some(c), Some(cl)) if *c == cl => {
                    self.at += 1;
                    return Some(out);
                }
                (None, Some(_)) => return None,
                _ => {}
            }
            out.push(self.value()?);
            self.ws();
            match self.s.get(self.at) {
                Some(b',') => self.at += 1,
                Some(c) if Some(*c) == close => {}
                None if close.is_none() => {}
                _ => return None,
            }
        }
    }

    pub(super) fn value(&mut self) -> Option<serde_json::Value> {
        use serde_json::Value;
        self.ws();
        let c = *self.s.get(self.at)?;
        match c {
            b'[' | b'(' => {
                self.at += 1;
                let close = if c == b'[' { b']' } else { b')' };
                Some(Value::Array(self.items(Some(close))?))
            }
            b'{' => {
                self.at += 1;
                let mut map = serde_json::Map::new();
                loop {
                    self.ws();
                    if self.s.get(self.at) == Some(&b'}') {
                        self.at += 1;
                        return Some(Value::Object(map));
                    }
                    let key = match self.value()? {
                        Value::String(k) => k,
                        Value::Number(n) => n.to_string(),
                        _ => return None,
                    };
                    self.ws();
                    (self.s.get(self.at) == Some(&b':')).then_some(())?;
                    self.at += 1;
                    let v = self.value()?;
                    map.insert(key, v);
                    self.ws();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {}
                        _ => return None,
                    }
                }
            }
            b'\'' | b'"' => {
                let start = self.at + 1;
                let len = self.s[start..].iter().position(|&b| b == c)?;
                let body = &self.s[start..start + len];
                // No escapes, no line breaks, no triple quotes.
                if body.iter().any(|&b| b == b'\\' || b == b'\n' || b == b'\r')
                    || (len == 0 && self.s.get(start + 1) == Some(&c))
                {
                    return None;
                }
                self.at = start + len + 1;
                Some(Value::String(std::str::from_utf8(body).ok()?.to_string()))
            }
            b'-' | b'+' | b'0'..=b'9' | b'.' => {
                let start = self.at;
                self.at += 1;
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_digit() || *b == b'.' || *b == b'_')
                {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.at])
                    .ok()?
                    .replace('_', "");
                if let Ok(i) = text.parse::<i64>() {
                    Some(Value::from(i))
                } else {
                    let f: f64 = text.parse().ok()?;
                    serde_json::Number::from_f64(f).map(Value::Number)
                }
            }
            _ => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
                    self.at += 1;
                }
                match &self.s[start..self.at] {
                    b"True" | b"true" => Some(Value::Bool(true)),
                    b"False" | b"false" => Some(Value::Bool(false)),
                    b"None" | b"null" => Some(Value::Null),
                    _ => None,
                }
            }
        }
    }
}

/// The request asks for a number: "how many", "what port", "answer with
/// the number".
pub fn wants_number(prompt: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)(how many|how much|how long|what port|which port|the number|a number|what number|count of)(?-u:\b)").ok()
    });
    RE.as_ref().is_some_and(|r| r.is_match(prompt))
}

/// The request wants a bare number back: "answer with the number only",
/// "just the number", "only the count".
pub fn asks_number_only(prompt: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)((the|a) (number|count) only|(number|count) only|only (the|a) (number|count)|just (the|a) (number|count)|nothing but (the|a) (number|count))(?-u:\b)").ok()
    });
    RE.as_ref().is_some_and(|r| r.is_match(prompt))
}

/// The answer is one number, give or take punctuation, markup and a unit
/// word ("5", "**5**", "5 functions.").
pub fn is_bare_number(answer: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r#"^[\s`*_"']*-?\d+(?:[.,]\d+)?[\s`*_"']*(?:[A-Za-z]+)?[\s.!`*_]*$"#).ok()
    });
    RE.as_ref().is_some_and(|r| r.is_match(answer.trim()))
}

/// The answer states `value` (what mm saw a call return): the same
/// number, or the same text without its quotes.
pub fn states_value(answer: &str, value: &str) -> bool {
    if let Ok(v) = value.parse::<f64>() {
        static NUM: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"-?\d+(?:\.\d+)?").ok());
        return NUM.as_ref().is_some_and(|r| {
            r.find_iter(answer)
                .filter_map(|m| m.as_str().parse::<f64>().ok())
                .any(|n| (n - v).abs() <= 1e-9 * v.abs().max(1.0))
        });
    }
    let bare = value.trim_matches(['\'', '"']);
    answer.contains(bare)
}
