//! Where a failure points: the functions it calls or names as a frame, with
//! what they call in the same file and the constants they use; the place a
//! compiler names; the function one call down.

use super::*;

/// Names a failure calls (`is_leap(2000)`) or names as a frame (`in mean`).
pub(crate) static CALLED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [r"\b([A-Za-z_]\w*)\s*\(", r", in ([A-Za-z_]\w*)\b"]
        .iter()
        .filter_map(|p| harness::regex(p).ok())
        .collect()
});

/// Functions shown at most, and their lines at most.
pub(crate) const MAX_NAMES: usize = 4;
pub(crate) const MAX_LINES: usize = 80;

/// What a focused request shows: one file's functions that the failure
/// points at, with the comments above them.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub file: String,
    pub names: Vec<String>,
    pub code: String,
    /// The file's one-line top-level constants the functions use, shown
    /// above them in `code`: a reply may change them too (the bug can be
    /// `DATE_FORMAT`, not the function that uses it).
    pub consts: Vec<String>,
}

/// The one-line top-level assignments of `text` whose names `code` uses
/// (`DATE_FORMAT = "%Y-%d-%m"`), as (name, line), at most five.
pub(crate) fn constants_used(text: &str, code: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| guard::leading(l) == 0 && !guard::is_import(l))
        .filter_map(|l| {
            let (target, value) = l.split_once(" = ")?;
            let name = target
                .trim()
                .trim_start_matches("const ")
                .trim_start_matches("let ")
                .trim_start_matches("var ");
            let ident = !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !value.trim().is_empty()
                && !value.trim_end().ends_with(['(', '[', '{']);
            (ident && !name.starts_with("__") && calls_word(code, name))
                .then(|| (name.to_string(), l.to_string()))
        })
        .take(5)
        .collect()
}

fn calls_word(code: &str, name: &str) -> bool {
    harness::regex(&format!(r"\b{}\b", regex::escape(name))).is_ok_and(|re| re.is_match(code))
}

/// `code` with the constants it uses from `text` above it.
pub(crate) fn with_constants(text: &str, code: String) -> (String, Vec<String>) {
    let consts = constants_used(text, &code);
    if consts.is_empty() {
        return (code, Vec::new());
    }
    let head: Vec<&str> = consts.iter().map(|(_, l)| l.as_str()).collect();
    (
        format!("{}\n\n{code}", head.join("\n")),
        consts.into_iter().map(|(n, _)| n).collect(),
    )
}

/// The file and functions a failure points at: the first name it calls
/// that exactly one non-test file defines, the other names it calls from
/// that file, and the file's functions those call. When the failure names
/// none, a non-test file the request names, if it is short.
pub fn target(failure: &str, prompt: &str, sources: &[(String, String)]) -> Option<Target> {
    let code: Vec<&(String, String)> = sources
        .iter()
        .filter(|(p, _)| !harness::is_test_file(p) && has_definitions(p))
        .collect();
    let mut called: Vec<String> = Vec::new();
    for line in failure.lines() {
        let mut hits: Vec<(usize, String)> = CALLED
            .iter()
            .flat_map(|re| re.captures_iter(line))
            .filter_map(|c| c.get(1).map(|m| (m.start(), m.as_str().to_string())))
            .collect();
        hits.sort();
        for (_, name) in hits {
            if !called.contains(&name) {
                called.push(name);
            }
        }
    }
    let defines = |text: &str, name: &str| guard::definitions(text).iter().any(|d| d == name);
    let found = called.iter().find_map(|name| {
        let holders: Vec<_> = code.iter().filter(|(_, t)| defines(t, name)).collect();
        match holders.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    });
    let (file, text, names) = match found {
        Some((file, text)) => {
            let names: Vec<String> = called
                .iter()
                .filter(|n| defines(text, n))
                .cloned()
                .collect();
            (file, text, names)
        }
        None => return by_place(failure, &code).or_else(|| by_request(prompt, &code)),
    };
    build(file, text, names)
}

/// Places a failure points at: `--> src/lib.rs:41:33`, `File "a.py",
/// line 5`, `a.go:12:3:`, `(src/a.ts:7:8)`.
static PLACE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    harness::regex(r#"(?:^|[\s(">])(?:\./)?([A-Za-z0-9_][\w./-]*\.[A-Za-z]+)(?::|", line )(\d+)"#)
        .ok()
});

/// The definition of `text` whose block holds `line` (1-based), the
/// innermost when they nest (a method in its class).
fn definition_at(text: &str, line: usize) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for name in guard::definitions(text) {
        let Some(block) = guard::block_of(text, &name) else {
            continue;
        };
        let Some(at) = text.find(&block) else {
            continue;
        };
        let first = text[..at].matches('\n').count() + 1;
        let last = first + block.trim_end_matches('\n').matches('\n').count();
        let len = last - first;
        if (first..=last).contains(&line) && best.as_ref().is_none_or(|(l, _)| len < *l) {
            best = Some((len, name));
        }
    }
    best.map(|(_, n)| n)
}

/// The functions around the places the failure points at, in the first
/// source file it names (a compile error names a line, not a call).
fn by_place(failure: &str, code: &[&(String, String)]) -> Option<Target> {
    let re = PLACE.as_ref()?;
    let mut file: Option<&(String, String)> = None;
    let mut names: Vec<String> = Vec::new();
    for c in failure.lines().filter_map(|l| re.captures(l)) {
        let (Some(p), Some(n)) = (c.get(1), c.get(2).and_then(|n| n.as_str().parse().ok())) else {
            continue;
        };
        let Some(holder) = code.iter().find(|(f, _)| f == p.as_str()) else {
            continue;
        };
        if file.is_some_and(|(f, _)| f != &holder.0) {
            continue;
        }
        file = Some(holder);
        if let Some(name) = definition_at(&holder.1, n)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    let (file, text) = file?;
    if names.is_empty() {
        return None;
    }
    build(file, text, names)
}

/// When the failure points nowhere: the functions the request names in
/// a source file it names, or the whole file when it is short.
fn by_request(prompt: &str, code: &[&(String, String)]) -> Option<Target> {
    let named = harness::named_files(prompt);
    let words: Vec<&str> = prompt
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for (file, text) in code.iter().filter(|(p, _)| named.contains(p)) {
        let defs = guard::definitions(text);
        let asked: Vec<String> = defs
            .iter()
            .filter(|d| words.contains(&d.as_str()))
            .cloned()
            .collect();
        if !asked.is_empty() {
            return build(file, text, asked);
        }
        if text.lines().count() <= MAX_LINES {
            return build(file, text, defs);
        }
    }
    None
}

/// A target in `file` (whose text is `text`) for `names`, with the
/// file's functions those call, in file order, as many as fit.
fn build(file: &str, text: &str, mut names: Vec<String>) -> Option<Target> {
    // The functions those call in the same file: the bug may be one
    // step down (`days_in` is wrong because `is_leap` is).
    let defs = guard::definitions(text);
    let shown: Vec<String> = names
        .iter()
        .filter_map(|n| guard::block_of(text, n))
        .collect();
    for d in &defs {
        if !names.contains(d) && shown.iter().any(|b| calls(b, d)) {
            names.push(d.clone());
        }
    }
    // In file order, as many as fit.
    let mut ordered: Vec<String> = defs.into_iter().filter(|d| names.contains(d)).collect();
    ordered.truncate(MAX_NAMES);
    let mut blocks = Vec::new();
    let mut lines = 0;
    let mut kept = Vec::new();
    for name in ordered {
        let Some(block) = with_comments(text, &name) else {
            continue;
        };
        // A class holds the methods shown with it: not twice.
        if blocks.iter().any(|b: &String| b.contains(&block)) {
            kept.push(name);
            continue;
        }
        let n = block.lines().count();
        if lines + n > MAX_LINES {
            continue;
        }
        lines += n;
        blocks.push(block);
        kept.push(name);
    }
    if blocks.is_empty() {
        return None;
    }
    let (code, consts) = with_constants(text, blocks.join("\n"));
    Some(Target {
        file: file.to_string(),
        names: kept,
        code,
        consts,
    })
}

static CALLED_DOWN: LazyLock<Option<Regex>> =
    LazyLock::new(|| harness::regex(r"^\s*it called (\w+)\(.*\) in (\S+), which ").ok());

/// The function in another file that the failing call used, from a value
/// trace's "it called NAME(…) in FILE, which returned …" lines: the bug
/// may be one step down in a file the failure never names (a total wrong
/// because the price parser it sums is). The first such function that
/// one non-test file other than `main` defines.
pub fn down_target(trace: &str, main: &str, sources: &[(String, String)]) -> Option<Target> {
    let re = CALLED_DOWN.as_ref()?;
    trace.lines().find_map(|l| {
        let c = re.captures(l)?;
        let (name, file) = (c.get(1)?.as_str(), c.get(2)?.as_str());
        if file == main || harness::is_test_file(file) {
            return None;
        }
        let (_, text) = sources.iter().find(|(p, _)| p == file)?;
        if !guard::definitions(text).iter().any(|d| d == name) {
            return None;
        }
        build(file, text, vec![name.to_string()])
    })
}
