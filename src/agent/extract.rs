//! Mechanical work done by tools: a hard-coded literal made a constant.
//! Asked to put `NAME = 72` in a new module and use it instead of the
//! literal across files, a small model rewrites whole files, drops code,
//! or forgets the import. mm does it itself before the model's first look
//! (Python): the constant written to the module the request names, every
//! code occurrence of the literal in the other files it names (not in
//! strings or comments, not in tests) made `NAME`, and the import added;
//! each a write of mm's own; then the checks run and the model hears
//! what changed.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;

/// `NAME = 72`, `NAME = 0.5`, `NAME = "utf-8"` in the request.
static CONSTANT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    harness::regex(r#"\b([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+(?:\.\d+)?|"[^"\n]*"|'[^'\n]*')"#).ok()
});

/// Words that say the literal is to be replaced, not only added.
const REPLACING: &[&str] = &[
    "instead of",
    "hard-coded",
    "hardcoded",
    "hard coded",
    "replace",
    "literal",
    "magic number",
];

/// What a request asks to extract: the constant's name, its literal as
/// written, and the module it goes in.
#[derive(Debug, PartialEq)]
pub struct Extract {
    pub name: String,
    pub literal: String,
    pub home: String,
}

/// The extraction a request asks for, given which of the files it names
/// exist: a constant `NAME = literal`, words that say the literal is to
/// be replaced, and one named Python file that does not exist yet (the
/// module to add) or already defines nothing of that name.
pub fn asked_extract(prompt: &str, exists: &dyn Fn(&str) -> bool) -> Option<Extract> {
    let lower = prompt.to_lowercase();
    if !REPLACING.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let c = CONSTANT.as_ref()?.captures(prompt)?;
    let (name, literal) = (c.get(1)?.as_str(), c.get(2)?.as_str());
    let named: Vec<String> = harness::named_files(prompt)
        .into_iter()
        .filter(|f| f.ends_with(".py") && !harness::is_test_file(f))
        .collect();
    let new: Vec<&String> = named.iter().filter(|f| !exists(f)).collect();
    let [home] = new.as_slice() else {
        return None;
    };
    Some(Extract {
        name: name.to_string(),
        literal: literal.to_string(),
        home: (*home).clone(),
    })
}

/// The byte ranges of Python code in `text` that are a `literal` token
/// (a number not part of a longer one or of a name; a plain string whose
/// quoted text is the literal's), outside comments and other strings.
pub fn literal_spans(text: &str, literal: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let want_string = literal.starts_with(['"', '\'']);
    let inner = if want_string {
        &literal[1..literal.len().saturating_sub(1).max(1)]
    } else {
        ""
    };
    let mut out = Vec::new();
    let mut i = 0;
    let name_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b == b'"' || b == b'\'' {
            // A prefix (r, b, f, u…) right before makes it no plain string.
            let prefixed = i > 0 && name_char(bytes[i - 1]);
            let triple = bytes.get(i..i + 3) == Some(&[b, b, b][..]);
            let q = if triple { 3 } else { 1 };
            let start = i;
            let mut j = i + q;
            let mut closed = None;
            while j < bytes.len() {
                if bytes[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if !triple && bytes[j] == b'\n' {
                    break;
                }
                if bytes[j] == b && (!triple || bytes.get(j..j + 3) == Some(&[b, b, b][..])) {
                    closed = Some(j + q);
                    break;
                }
                j += 1;
            }
            let end = closed.unwrap_or(j);
            if want_string
                && !prefixed
                && !triple
                && closed.is_some()
                && text.get(start + 1..end - 1) == Some(inner)
            {
                out.push((start, end));
            }
            i = end.max(i + 1);
            continue;
        }
        if !want_string
            && text[i..].starts_with(literal)
            && (i == 0 || !(name_char(bytes[i - 1]) || bytes[i - 1] == b'.'))
        {
            let end = i + literal.len();
            let after = bytes.get(end).copied();
            let longer = after.is_some_and(|a| {
                name_char(a) || (a == b'.' && bytes.get(end + 1).is_some_and(u8::is_ascii_digit))
            });
            if !longer {
                out.push((i, end));
                i = end;
                continue;
            }
        }
        if name_char(b) {
            // A whole name or number: no match starts inside it.
            while i < bytes.len() && (name_char(bytes[i]) || bytes[i] == b'.') {
                i += 1;
            }
            continue;
        }
        i += text[i..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// `text` with an `import_line` after its leading docstring, comments and
/// imports (or at the top).
pub fn with_import(text: &str, import_line: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut at = 0;
    let mut in_doc: Option<&str> = None;
    for (k, l) in lines.iter().enumerate() {
        let t = l.trim();
        if let Some(q) = in_doc {
            if t.contains(q) {
                in_doc = None;
                at = k + 1;
            }
            continue;
        }
        if (k == 0 || at == k)
            && let Some(q) = ["\"\"\"", "'''"].into_iter().find(|q| t.starts_with(q))
        {
            if t.len() >= 6 && t[3..].contains(q) {
                at = k + 1;
            } else {
                in_doc = Some(q);
            }
            continue;
        }
        if t.starts_with('#') && at == k {
            at = k + 1;
            continue;
        }
        if guard::is_import(l) {
            at = k + 1;
            continue;
        }
        if t.is_empty() {
            continue;
        }
        break;
    }
    let mut out: String = lines[..at].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(import_line);
    out.push('\n');
    let rest = lines[at..].concat();
    if at == 0
        || !rest.trim_start().is_empty() && !rest.starts_with('\n') && !guard::is_import(&rest)
    {
        out.push('\n');
    }
    out.push_str(&rest);
    out
}

/// The files to write for an extraction: the module with the constant,
/// and each other named, existing, non-test Python file whose code holds
/// the literal, with it replaced and the import added. None when no
/// other file holds it or the name is already in use there.
pub fn extract_plan(
    x: &Extract,
    named: &[(String, String)],
    home_now: Option<&str>,
) -> Option<Vec<(String, String)>> {
    let module = x.home.trim_end_matches(".py").replace('/', ".");
    let mut out = Vec::new();
    for (path, text) in named {
        if *path == x.home || harness::is_test_file(path) || !path.ends_with(".py") {
            continue;
        }
        let spans = literal_spans(text, &x.literal);
        if spans.is_empty() {
            continue;
        }
        if super::rename::defines(text, &x.name) || text.contains(&format!("import {}", x.name)) {
            return None;
        }
        let mut after = String::with_capacity(text.len());
        let mut last = 0;
        for (a, b) in spans {
            after.push_str(&text[last..a]);
            after.push_str(&x.name);
            last = b;
        }
        after.push_str(&text[last..]);
        out.push((
            path.clone(),
            with_import(&after, &format!("from {module} import {}", x.name)),
        ));
    }
    if out.is_empty() {
        return None;
    }
    let line = format!("{} = {}\n", x.name, x.literal);
    let home = match home_now {
        None => line,
        Some(t) if super::rename::defines(t, &x.name) => return None,
        Some(t) if t.is_empty() || t.ends_with('\n') => format!("{t}\n{line}"),
        Some(t) => format!("{t}\n\n{line}"),
    };
    out.insert(0, (x.home.clone(), home));
    Some(out)
}

impl Agent {
    /// A request to make a hard-coded literal a constant in a new module:
    /// done here before the model's first look. Returns what to tell the
    /// model, or None when nothing was changed.
    pub(super) async fn mechanical_extract(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.on(Behaviour::Extract) || st.question || st.mutations > 0 {
            return None;
        }
        let x = asked_extract(&st.prompt, &|f| self.content_now(f).is_some())?;
        let named: Vec<(String, String)> = harness::named_files(&st.prompt)
            .into_iter()
            .filter_map(|f| Some((f.clone(), self.content_now(&f)?)))
            .collect();
        let plan = extract_plan(&x, &named, self.content_now(&x.home).as_deref())?;
        let mut changed: Vec<String> = Vec::new();
        for (path, after) in &plan {
            let label = if *path == x.home {
                format!("add {} = {} to {path}", x.name, x.literal)
            } else {
                format!("use {} instead of {} in {path}", x.name, x.literal)
            };
            if self
                .own_write_with(st, path, after.clone(), &label, true, cancel)
                .await
            {
                changed.push(path.clone());
            } else if *path == x.home {
                // The module first: without it, no file may import it.
                return None;
            }
        }
        if changed.is_empty() {
            return None;
        }
        let users: Vec<&str> = changed
            .iter()
            .filter(|p| **p != x.home)
            .map(String::as_str)
            .collect();
        self.notice(
            Level::Info,
            format!(
                "added {} = {} to {} and used it instead of {} in {}",
                x.name,
                x.literal,
                x.home,
                x.literal,
                users.join(", ")
            ),
        );
        let checks = self
            .check_own_writes(st, changed.len() == plan.len(), cancel)
            .await;
        let end = if st.settled {
            "No tool call is needed: check the changed files and say in a few sentences what changed."
        } else {
            "Finish the request with tool calls."
        };
        Some(format!(
            "\n\n[mm added `{} = {}` to {} and, in {}, replaced every {} in the code (not in strings or comments) with {}, imported from it.{checks}]\n{end}",
            x.name,
            x.literal,
            x.home,
            users.join(", "),
            x.literal,
            x.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extraction_a_request_asks_for() {
        let exists = |f: &str| f != "config.py" && f != "limits.py";
        let x = asked_extract(
            "The width 72 is hard-coded in wrap.py and banner.py. Add a config.py with a constant LINE_WIDTH = 72 and use it instead of the literal.",
            &exists,
        )
        .unwrap();
        assert_eq!(
            x,
            Extract {
                name: "LINE_WIDTH".into(),
                literal: "72".into(),
                home: "config.py".into()
            }
        );
        let s = asked_extract(
            "Replace the repeated 'utf-8' in io.py with ENCODING = 'utf-8' from a new limits.py",
            &exists,
        )
        .unwrap();
        assert_eq!(
            (s.literal.as_str(), s.home.as_str()),
            ("'utf-8'", "limits.py")
        );
        // Adding a constant without replacing anything is the model's.
        assert!(
            asked_extract("Add MAX = 5 to config.py and use it in retry.py", &exists).is_none()
        );
        // No new module named: nothing to do mechanically.
        assert!(
            asked_extract("Use WIDTH = 72 instead of the literal in wrap.py", &exists).is_none()
        );
    }

    #[test]
    fn only_code_occurrences_of_the_literal_are_found() {
        let text = "x = 72  # 72 columns\ny = '72' + \"a 72\"\nz = 172 + 72.5 + 0x72 + v72 + 72\nw = (72-4, f'{72}')\n";
        let spans: Vec<&str> = literal_spans(text, "72")
            .iter()
            .map(|(a, b)| &text[*a..*b])
            .collect();
        assert_eq!(spans.len(), 3, "{spans:?}");
        let fixed = {
            let mut t = text.to_string();
            for (a, b) in literal_spans(text, "72").into_iter().rev() {
                t.replace_range(a..b, "W");
            }
            t
        };
        assert_eq!(
            fixed,
            "x = W  # 72 columns\ny = '72' + \"a 72\"\nz = 172 + 72.5 + 0x72 + v72 + W\nw = (W-4, f'{72}')\n"
        );
        let s = "a = 'utf-8'\nb = \"utf-8\"\nc = b'utf-8'\nd = 'utf-8 x'\n";
        assert_eq!(literal_spans(s, "'utf-8'").len(), 2);
    }

    #[test]
    fn the_plan_writes_the_module_and_imports_it_where_the_literal_was() {
        let x = Extract {
            name: "LINE_WIDTH".into(),
            literal: "72".into(),
            home: "config.py".into(),
        };
        let named = vec![
            (
                "wrap.py".to_string(),
                "\"\"\"Wrapping.\"\"\"\nimport textwrap\n\n\ndef fill(t):\n    return textwrap.fill(t, 72)\n".to_string(),
            ),
            ("banner.py".to_string(), "def rule(c='='):\n    return c * 72\n".to_string()),
            ("test_wrap.py".to_string(), "assert len(x) == 72\n".to_string()),
        ];
        let plan = extract_plan(&x, &named, None).unwrap();
        let files: Vec<&str> = plan.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(files, ["config.py", "wrap.py", "banner.py"]);
        assert_eq!(plan[0].1, "LINE_WIDTH = 72\n");
        assert_eq!(
            plan[1].1,
            "\"\"\"Wrapping.\"\"\"\nimport textwrap\nfrom config import LINE_WIDTH\n\n\ndef fill(t):\n    return textwrap.fill(t, LINE_WIDTH)\n"
        );
        assert_eq!(
            plan[2].1,
            "from config import LINE_WIDTH\n\ndef rule(c='='):\n    return c * LINE_WIDTH\n"
        );
        // The name already in use in a file: not done mechanically.
        let taken = vec![(
            "wrap.py".to_string(),
            "LINE_WIDTH = 80\nx = 72\n".to_string(),
        )];
        assert!(extract_plan(&x, &taken, None).is_none());
    }
}
