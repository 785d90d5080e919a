//! A focused request: when a check fails and its failure names functions
//! of the workspace's own code, mm asks the model, in a request of its
//! own with no tools and nothing else in it, for the function with the
//! bug corrected. A small model that is lost in a long conversation with
//! tools writes a correct function when it is shown only that function
//! and the failure. mm puts the function it gets in place of its
//! namesake, runs the checks, and keeps the change only when they pass.
//!
//! A change the request asks for across two or three short files is
//! asked for the same way, one file at a time: each file as it is, the
//! request, and "write this file with its part of the request done".
//! What comes back is kept when it loses no definition, renames nothing
//! the request did not ask to rename, and holds the code the request
//! spells out for that file.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness, recover};
use crate::llm::{self, ChatRequest, Message};
use crate::protocol::Level;
use crate::tools::guard;

/// Names a failure calls (`is_leap(2000)`) or names as a frame (`in mean`).
static CALLED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [r"\b([A-Za-z_]\w*)\s*\(", r", in ([A-Za-z_]\w*)\b"]
        .iter()
        .filter_map(|p| harness::regex(p).ok())
        .collect()
});

/// Functions shown at most, and their lines at most.
const MAX_NAMES: usize = 4;
const MAX_LINES: usize = 80;

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
fn constants_used(text: &str, code: &str) -> Vec<(String, String)> {
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
fn with_constants(text: &str, code: String) -> (String, Vec<String>) {
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

/// The request for a function one step down: the failure, what the
/// failing call got from the functions it uses, and the function.
pub fn down_request(
    prompt: &str,
    command: &str,
    failure: &str,
    trace: &str,
    t: &Target,
    docs: &[(String, String)],
    own: &str,
) -> String {
    let mut text = request_head(prompt, docs);
    let own = if own.trim().is_empty() {
        String::new()
    } else {
        format!(
            "\nThe examples in its own documentation, run on it now, fail:\n```\n{}\n```",
            own.trim_end()
        )
    };
    text.push_str(&format!(
        "\n`{command}` fails:\n```\n{}\n```\nWhat the failing call got from the functions it uses:\n```\n{}\n```\nA function it uses, from {}:\n```{}\n{}```{own}\nThe bug may be here. Write this function, corrected, in full.",
        failure.trim_end(),
        trace.trim(),
        t.file,
        fence_language(&t.file),
        t.code,
    ));
    text
}

/// The one function of a target that the others call and that the
/// failure calls itself: its wrong value explains theirs, and a small
/// model shown all of them hands them back unchanged (`page_count` wrong
/// made `paginate` and `page_label` fail too). None when no single one
/// is.
pub fn narrow(t: &Target, text: &str, failure: &str) -> Option<Target> {
    if t.names.len() < 2 {
        return None;
    }
    let blocks: Vec<(&String, String)> = t
        .names
        .iter()
        .filter_map(|n| Some((n, guard::block_of(text, n)?)))
        .collect();
    let roots: Vec<&String> = t
        .names
        .iter()
        .filter(|n| blocks.iter().any(|(m, b)| m != n && calls(b, n)) && calls_in(failure, n))
        .collect();
    let [one] = roots.as_slice() else {
        return None;
    };
    let (code, consts) = with_constants(text, with_comments(text, one)?);
    Some(Target {
        file: t.file.clone(),
        names: vec![(*one).clone()],
        code,
        consts,
    })
}

/// The wrong values a test failure shows, as "CALL gives GOT; the test
/// expects WANT", for the calls of `name`: unittest's `assertEqual(CALL,
/// WANT)` with its `AssertionError: GOT != WANT`, pytest's `assert CALL
/// == WANT` with its `assert GOT == WANT`.
pub fn wrong_values(failure: &str, name: &str) -> Vec<String> {
    let lines: Vec<&str> = failure.lines().map(str::trim).collect();
    let mut out: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let (call, want) = if let Some(args) = line
            .strip_prefix("self.assertEqual(")
            .and_then(|a| a.strip_suffix(')'))
        {
            match split_top_comma(args) {
                Some((c, w)) => (c, w),
                None => continue,
            }
        } else if let Some(rest) = line.strip_prefix("assert ") {
            match rest.split_once(" == ") {
                Some((c, w)) => (c.trim(), w.trim()),
                None => continue,
            }
        } else {
            continue;
        };
        if !calls_in(call, name) || !call.trim_start().starts_with(name) {
            continue;
        }
        let got = lines[i + 1..].iter().take(6).find_map(|l| {
            l.strip_prefix("AssertionError: ")
                .and_then(|r| r.split_once(" != "))
                .or_else(|| {
                    l.strip_prefix("E")
                        .map(str::trim)
                        .and_then(|r| r.strip_prefix("assert "))
                        .and_then(|r| r.split_once(" == "))
                })
                .map(|(g, _)| g.trim())
        });
        let Some(got) = got else {
            continue;
        };
        let said = format!(
            "{} gives {got}; the test expects {}",
            call.trim(),
            want.trim()
        );
        if !out.contains(&said) {
            out.push(said);
        }
    }
    out
}

/// `a, b` split at its one comma outside brackets and quotes.
fn split_top_comma(args: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut at = None;
    for (i, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                if at.is_some() {
                    return None;
                }
                at = Some(i);
            }
            _ => {}
        }
    }
    let i = at?;
    Some((args[..i].trim(), args[i + 1..].trim()))
}

/// A request for one function alone, with the wrong values the tests
/// got from it: a small model that echoes three functions shown with a
/// traceback writes the fix of one shown with its values.
pub fn values_request(prompt: &str, command: &str, t: &Target, values: &[String]) -> String {
    let name = t.names.first().map(String::as_str).unwrap_or_default();
    format!(
        "The request: {}\n\n{name} in {}:\n```{}\n{}```\n`{command}` calls it and gets wrong values:\n```\n{}\n```\nWrite {name} corrected, in full.",
        prompt.trim(),
        t.file,
        fence_language(&t.file),
        t.code,
        values.join("\n")
    )
}

pub(super) fn has_definitions(path: &str) -> bool {
    [".py", ".rs", ".js", ".cjs", ".mjs", ".ts", ".go"]
        .iter()
        .any(|e| path.ends_with(e))
}

/// `name` called in `block` (other than on its own definition line).
fn calls(block: &str, name: &str) -> bool {
    let pattern = format!(r"\b{}\s*\(", regex::escape(name));
    harness::regex(&pattern).is_ok_and(|re| block.lines().skip(1).any(|l| re.is_match(l)))
}

/// The definition of `name` with the comment lines right above it.
fn with_comments(text: &str, name: &str) -> Option<String> {
    let block = guard::block_of(text, name)?;
    let at = text.find(&block)?;
    let mut head: Vec<&str> = Vec::new();
    for line in text[..at].lines().rev() {
        let t = line.trim_start();
        if t.starts_with("//") || t.starts_with('#') {
            head.push(line);
        } else {
            break;
        }
    }
    head.reverse();
    let mut out = String::new();
    for l in head {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&block);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

pub fn fence_language(file: &str) -> &'static str {
    match file.rsplit('.').next().unwrap_or("") {
        "py" => "python",
        "rs" => "rust",
        "js" | "cjs" | "mjs" => "javascript",
        "ts" => "typescript",
        "go" => "go",
        _ => "",
    }
}

pub const SYSTEM: &str = "You fix bugs. Reply with only the corrected code: the function that has the bug, in full, in one fenced code block.";

/// The start of a focused request: the user's request and the documents
/// it names, each in a fenced block.
fn request_head(prompt: &str, docs: &[(String, String)]) -> String {
    let mut text = format!("The request: {}\n", prompt.trim());
    for (name, body) in docs {
        text.push_str(&format!("\n{name}:\n```\n{}\n```\n", body.trim_end()));
    }
    text
}

/// The focused request's user message; `docs` are the documents the
/// request names (a specification the code is to follow).
pub fn request(
    prompt: &str,
    command: &str,
    failure: &str,
    t: &Target,
    docs: &[(String, String)],
) -> String {
    let mut text = request_head(prompt, docs);
    text.push_str(&format!(
        "\n`{command}` fails:\n```\n{}\n```\nThe code it runs, from {}:\n```{}\n{}```\n{}",
        failure.trim_end(),
        t.file,
        fence_language(&t.file),
        t.code,
        if t.consts.is_empty() {
            "Write the function that has the bug, corrected, in full."
        } else {
            "Write what has the bug, corrected, in full: the function, or the constant line above the functions."
        }
    ));
    text
}

/// The system prompt of a function asked for new, from its placeholder.
pub const IMPLEMENT_SYSTEM: &str =
    "You write code. Reply with only the function asked for, in full, in one fenced code block.";

/// A fresh implementation of placeholder functions: the request, the
/// documents it names, the file as it was with the placeholders (other
/// code the function may use is in it), and what an earlier attempt
/// gave (`failure`), without that attempt's code, which a small model
/// would copy.
pub fn implement_request(
    prompt: &str,
    docs: &[(String, String)],
    file: &str,
    original: &str,
    names: &[String],
    failure: &str,
) -> String {
    let mut text = request_head(prompt, docs);
    text.push_str(&format!(
        "\n{file} before the change:\n```{}\n{}\n```\nAn earlier attempt failed these checks:\n```\n{}\n```\nWrite {} in full, doing everything the request says. Reply with only {} in one fenced code block.",
        fence_language(file),
        original.trim_end(),
        failure.trim_end(),
        names.join(", "),
        if names.len() == 1 { "that function" } else { "those functions" },
    ));
    text
}

/// One failing check fixed by a small edit: the request, the documents
/// beside it, the functions as they are now, one check they fail, and a
/// search/replace block asked for. Shown its whole function and asked
/// for it back, a small model returns it unchanged; asked for the lines
/// to change, it changes some.
pub fn edit_request(
    prompt: &str,
    docs: &[(String, String)],
    file: &str,
    current: &str,
    names: &[String],
    failing: &str,
) -> String {
    let mut text = request_head(prompt, docs);
    text.push_str(&format!(
        "
{} in {file} is now:
```{}
{}
```
This check from the request fails with it:
```
{}
```
Change the line or lines that make it fail, and nothing else. Reply with one search/replace block:
```
<<<<<<< SEARCH
(the lines as they are now, copied exactly)
=======
(the lines to put in their place)
>>>>>>> REPLACE
```",
        names.join(", "),
        fence_language(file),
        current.trim_end(),
        failing.trim(),
    ));
    text
}

/// New functions for a file, asked for alone: the request, the documents
/// beside it, the file as it is, and the names to write.
pub fn new_functions_request(
    prompt: &str,
    context: &[(String, String)],
    file: &str,
    before: &str,
    names: &[String],
) -> String {
    let mut text = request_head(prompt, context);
    text.push_str(&format!(
        "\n{file} is now:\n```{}\n{}\n```\nIt does not have {} yet. Write {} in full, doing everything the request says. Reply with only the new code in one fenced code block.",
        fence_language(file),
        before.trim_end(),
        names.join(", "),
        names.join(", "),
    ));
    text
}

/// `before` with the reply's version of the functions shown put in place
/// of theirs, and what changed; None when the reply has no code block,
/// changes none of them, or would add or change anything else (an
/// import the new code needs may come with it).
pub fn apply(before: &str, reply: &str, names: &[String]) -> Option<(String, Vec<String>)> {
    let block = recover::fenced_blocks(reply).first().map(|(_, _, b)| *b)?;
    let (merged, applied) = guard::merge_write(before, block)?;
    // "changed `DATE_FORMAT = …`" names the constant.
    let changed: Vec<String> = applied
        .iter()
        .filter_map(|a| a.strip_prefix("changed "))
        .map(|c| {
            c.strip_prefix('`')
                .and_then(|c| c.strip_suffix(" = …`"))
                .map(|c| {
                    c.trim_start_matches("const ")
                        .trim_start_matches("let ")
                        .trim_start_matches("var ")
                })
                .unwrap_or(c)
                .to_string()
        })
        .collect();
    let imports = applied
        .iter()
        .filter(|a| a.strip_prefix("added `").is_some_and(guard::is_import))
        .count();
    let only_shown =
        changed.len() + imports == applied.len() && changed.iter().all(|c| names.contains(c));
    let merged = keep_visibility(before, merged, &changed);
    (only_shown && !changed.is_empty() && merged != before).then_some((merged, changed))
}

/// A Rust function a reply rewrote keeps the `pub` it had: a small model
/// drops it, the crate's own tests still pass, and every caller outside
/// the module (the request's checks, the user's code) loses it.
fn keep_visibility(before: &str, mut merged: String, changed: &[String]) -> String {
    let def_line = |text: &str, name: &str| -> Option<String> {
        text.lines()
            .find(|l| guard::definitions(l).first().map(String::as_str) == Some(name))
            .map(str::to_string)
    };
    for name in changed {
        let (Some(old), Some(new)) = (def_line(before, name), def_line(&merged, name)) else {
            continue;
        };
        let vis = |l: &str| l.trim_start().starts_with("pub");
        let rust_fn = |l: &str| {
            let t = l.trim_start();
            t.starts_with("fn ") || t.starts_with("async fn ") || t.starts_with("const fn ")
        };
        if vis(&old) && !vis(&new) && rust_fn(&new) {
            let head: String = old.split_whitespace().next().unwrap_or("pub").to_string();
            let indent = &new[..new.len() - new.trim_start().len()];
            let fixed = format!("{indent}{head} {}", new.trim_start());
            merged = merged.replacen(&new, &fixed, 1);
        }
    }
    merged
}

/// Lines a file may have to be asked for whole.
pub const MAX_FILE_LINES: usize = 120;

/// The files of a change the request asks for across two or three
/// existing, short source files (path and content, in the request's
/// order); empty when the request is not that.
pub fn change_files(prompt: &str, sources: &[(String, String)]) -> Vec<(String, String)> {
    let named: Vec<String> = harness::named_files(prompt)
        .into_iter()
        .filter(|f| has_definitions(f))
        .collect();
    // Code that moves between files needs both in view at once.
    let lower = prompt.to_lowercase();
    let moves = ["move ", "extract", "split ", "merge ", "copy "]
        .iter()
        .any(|w| lower.contains(w));
    if moves || !(2..=3).contains(&named.len()) || named.iter().any(|f| harness::is_test_file(f)) {
        return Vec::new();
    }
    let found: Vec<(String, String)> = named
        .iter()
        .filter_map(|f| sources.iter().find(|(p, _)| p == f).cloned())
        .filter(|(_, t)| t.lines().count() <= MAX_FILE_LINES)
        .collect();
    if found.len() == named.len() {
        found
    } else {
        Vec::new()
    }
}

/// Files that call a changed definition, asked for after it, at most.
pub(super) const MAX_CALLERS: usize = 3;

/// The request for one file, whole: the request, the context files, the
/// file as it is (or that it is new), and what to write.
pub fn whole_request(
    prompt: &str,
    file: &str,
    before: Option<&str>,
    context: &[(String, String)],
) -> String {
    let mut text = format!("The request: {}\n", prompt.trim());
    for (name, body) in context {
        text.push_str(&format!(
            "\n{name}:\n```{}\n{}\n```\n",
            fence_language(name),
            body.trim_end()
        ));
    }
    match before {
        Some(b) => text.push_str(&format!(
            "\n{file} is now:\n```{}\n{}\n```\nWrite {file} in full, with the part of the request that is in {file} done. Keep everything else in it as it is.",
            fence_language(file),
            b.trim_end()
        )),
        None => text.push_str(&format!(
            "\n{file} does not exist yet. Write {file} in full, as the request asks."
        )),
    }
    text
}

/// `name` called on any line of `text`: the name followed by `(`.
pub(super) fn calls_in(text: &str, name: &str) -> bool {
    harness::regex(&format!(r"\b{}\s*\(", regex::escape(name)))
        .is_ok_and(|re| text.lines().any(|l| re.is_match(l)))
}

/// A file of a focused change: one the request names, or one that calls
/// what changed in one it names (`caller`), with the changed files it is
/// to see beside it.
struct Part {
    file: String,
    before: String,
    context: Vec<(String, String)>,
    /// For a caller: the definitions that changed, the only calls its
    /// change may touch.
    caller: Option<Vec<String>>,
}

/// `after` with only the changes that touch a call of one of `names`:
/// a caller asked to follow a new signature that also rewrote other
/// lines (a small model wraps a neighbouring value in the call too) gets
/// those lines back as they were.
pub fn only_the_calls(before: &str, after: &str, names: &[String]) -> String {
    use similar::{DiffOp, TextDiff};
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let calls = |lines: &[&str]| lines.iter().any(|l| names.iter().any(|n| calls_in(l, n)));
    let diff = TextDiff::configure().diff_slices(&old, &new);
    let mut out = String::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                out.extend(old[old_index..old_index + len].iter().copied());
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                let lines = &old[old_index..old_index + old_len];
                if !calls(lines) {
                    out.extend(lines.iter().copied());
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                let lines = &new[new_index..new_index + new_len];
                if calls(lines) {
                    out.extend(lines.iter().copied());
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let was = &old[old_index..old_index + old_len];
                let now = &new[new_index..new_index + new_len];
                if old_len == new_len {
                    // Line for line: each keeps its change only if it
                    // was a call.
                    for (w, n) in was.iter().zip(now) {
                        out.push_str(if calls(&[w]) { n } else { w });
                    }
                } else {
                    out.extend((if calls(was) { now } else { was }).iter().copied());
                }
            }
        }
    }
    out
}

pub const CHANGE_SYSTEM: &str = "You change code as asked. Reply with only the changed code, in full, in one fenced code block.";
/// The system prompt of a change asked for as search/replace blocks.
pub const BLOCKS_SYSTEM: &str = "You change code as asked. Reply with only search/replace blocks.";

/// The focused request for one file of a change.
pub fn change_request(prompt: &str, file: &str, content: &str) -> String {
    format!(
        "The request: {}\n\n{file} is now:\n```{}\n{}```\nWrite {file} in full, with the part of the request that is in {file} done. Change nothing else.",
        prompt.trim(),
        fence_language(file),
        content
    )
}

/// The new content of `file` from a focused reply, or why it is not kept.
pub fn change_of(
    prompt: &str,
    file: &str,
    before: &str,
    reply: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    let block = recover::fenced_blocks(reply)
        .first()
        .map(|(_, _, b)| *b)
        .ok_or("no code block")?;
    // Whole when it keeps most of the file's lines: a fragment of a
    // short file with no definitions is not the file.
    let kept_lines = before
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| block.lines().any(|b| b.trim() == l.trim()))
        .count();
    let old_lines = before.lines().filter(|l| !l.trim().is_empty()).count();
    let whole = guard::destructive(file, before, block).is_none() && kept_lines * 2 >= old_lines;
    let mut after = if whole {
        block.to_string()
    } else {
        let (merged, _) = guard::merge_write(before, block).ok_or("parts of the file lost")?;
        if guard::destructive(file, before, &merged).is_some() {
            return Err("parts of the file lost");
        }
        merged
    };
    if before.ends_with('\n') && !after.ends_with('\n') {
        after.push('\n');
    }
    vet(prompt, file, before, after, block, spelled)
}

/// The file after the search/replace blocks of `reply` (Aider's format:
/// `<<<<<<< SEARCH`, the lines as they are, `=======`, the lines to put
/// in their place, `>>>>>>> REPLACE`) are applied to `before` in order,
/// each found as `edit_file` finds its `old_string` (exactly, then
/// ignoring indentation and spacing); an empty SEARCH appends. Held to
/// the same checks as a whole file.
pub fn blocks_change(
    prompt: &str,
    file: &str,
    before: &str,
    reply: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    let blocks = search_replace_blocks(reply);
    if blocks.is_empty() {
        return Err("no search/replace block");
    }
    let mut after = before.to_string();
    for (search, replace) in &blocks {
        if search.trim().is_empty() {
            if !after.ends_with('\n') && !after.is_empty() {
                after.push('\n');
            }
            after.push_str(replace);
            after.push('\n');
            continue;
        }
        // A small model copies the template's "(the lines as they are)"
        // parentheses around its lines: tried without them too.
        let splice = crate::tools::edit_match::find(&after, search, replace)
            .or_else(|e| {
                let (s, r) = (unwrap_parens(search), unwrap_parens(replace));
                if s == search.as_str() {
                    return Err(e);
                }
                crate::tools::edit_match::find(&after, s, r)
            })
            .map_err(|_| "a SEARCH part not found once in the file")?;
        after = crate::tools::edit_match::apply(&after, &splice);
    }
    if guard::destructive(file, before, &after).is_some() {
        return Err("parts of the file lost");
    }
    let brought = after.clone();
    vet(prompt, file, before, after, &brought, spelled)
}

/// `text` without the "(" it starts with and the ")" it ends with, when
/// it has them (either alone: the model's copy of a template line).
fn unwrap_parens(text: &str) -> &str {
    let t = text.trim();
    let t = t.strip_prefix('(').unwrap_or(t);
    t.strip_suffix(')')
        .filter(|inner| inner.matches('(').count() < inner.matches(')').count() + 1)
        .unwrap_or(t)
}

/// The (search, replace) pairs of the search/replace blocks in `reply`.
pub fn search_replace_blocks(reply: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = reply.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("<<<<<<<") {
            continue;
        }
        let mut search = Vec::new();
        let mut replace = Vec::new();
        let mut in_replace = false;
        let mut closed = false;
        for l in lines.by_ref() {
            let t = l.trim();
            if !in_replace && t.starts_with("=======") && t.trim_matches('=').is_empty() {
                in_replace = true;
            } else if in_replace && t.starts_with(">>>>>>>") {
                closed = true;
                break;
            } else if in_replace {
                replace.push(l);
            } else {
                search.push(l);
            }
        }
        if closed {
            out.push((search.join("\n"), replace.join("\n")));
        }
    }
    out
}

/// What every change asked of the model as text must pass: a change, no
/// unasked rename among the definitions it brings (`brought`: the text
/// that came back), and the code the request spells out for the file.
fn vet(
    prompt: &str,
    file: &str,
    before: &str,
    after: String,
    brought: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    // The request copied into the file (a comment `# The request: …`
    // after it) is not a change: those lines go.
    let asked = prompt.trim();
    let after = if asked.len() >= 30 && after.contains(asked) && !before.contains(asked) {
        after
            .split_inclusive('\n')
            .filter(|l| !l.contains(asked))
            .collect::<String>()
    } else {
        after
    };
    if after.trim_end() == before.trim_end() {
        return Err("no change");
    }
    if guard::mm_words(&after).is_some_and(|w| !before.contains(w)) {
        return Err("mm's own words copied in");
    }
    // Judged on what came back: a merge keeps the old name beside the
    // new one.
    let old = guard::definitions(before);
    let new = guard::definitions(brought);
    let gone: Vec<&String> = old.iter().filter(|d| !new.contains(d)).collect();
    let added: Vec<&String> = new.iter().filter(|d| !old.contains(d)).collect();
    if gone.iter().any(|g| {
        added
            .iter()
            .any(|a| harness::unasked_rename(prompt, g, a).is_some())
    }) {
        return Err("a rename the request does not ask for");
    }
    let missing = spelled
        .iter()
        .filter(|(f, _)| f.as_deref() == Some(file))
        .any(|(_, code)| !harness::has_code(&after, code));
    if missing {
        return Err("the code the request spells out is not in it");
    }
    Ok(after)
}

impl Agent {
    /// A request of mm's own, apart from the conversation and with no
    /// tools: its reply's text. Counted in the turn's usage.
    pub(super) async fn side_request(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.side_request_capped(system, user, temperature, 1024, cancel)
            .await
    }

    /// `side_request` for one try of several: Some(None) when the reply
    /// was cut at its cap (a small model that rambles on; the next try
    /// may not), None when no reply came (an error, a cancel).
    pub(super) async fn side_try(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cancel: &CancellationToken,
    ) -> Option<Option<String>> {
        let (content, truncated) = self
            .side_reply(system, user, temperature, 1024, cancel)
            .await?;
        Some((!truncated).then_some(content))
    }

    /// `side_request` with a reply of up to `cap` tokens (a whole file).
    pub(super) async fn side_request_capped(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.side_request_cut(system, user, temperature, cap, false, cancel)
            .await
    }

    /// `side_request_capped`; `partial`: a reply cut at `cap` is still
    /// returned (a list of lines whose complete ones are usable).
    pub(super) async fn side_request_cut(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        partial: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let (content, truncated) = self
            .side_reply(system, user, temperature, cap, cancel)
            .await?;
        (partial || !truncated).then_some(content)
    }

    /// A side request's reply and whether it was cut at `cap`.
    async fn side_reply(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        cancel: &CancellationToken,
    ) -> Option<(String, bool)> {
        let messages = [Message::system(system), Message::user(user)];
        let mut sampling = self.settings.sampling.clone();
        sampling.insert("temperature".into(), serde_json::json!(temperature));
        let body = llm::build_body(&ChatRequest {
            model: &self.model,
            messages: &messages,
            tools: &[],
            sampling: &sampling,
            max_tokens: Some(self.settings.max_tokens.unwrap_or(cap).min(cap)),
            replay_reasoning: false,
            response_format: None,
        });
        let started = std::time::Instant::now();
        let result = self.stream_watched(&body, cancel).await;
        self.trace(&body, &result, started.elapsed().as_millis() as u64);
        let streamed = result.ok()?;
        self.log_side_request(&streamed, started);
        self.record_usage(&streamed, None);
        let truncated = streamed.reply.truncated();
        Some((streamed.reply.content, truncated))
    }

    /// A change across two or three short files (see `change_files`):
    /// each file asked for alone, kept as the module doc says, and made
    /// as mm's own write. Returns what to tell the model, or None when
    /// nothing was changed.
    pub(super) async fn focused_change(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if st.question || st.settled || harness::asks_for_tests(&st.prompt) || st.mutations > 0 {
            return None;
        }
        let files = change_files(&st.prompt, &self.sources_now());
        if files.is_empty() {
            return None;
        }
        let mut diffs = Vec::new();
        let mut all = true;
        let mut written: Vec<String> = Vec::new();
        let mut callers_added = 0;
        // Each named file, then the files that call a definition whose
        // parameters changed, each with the changed file beside it.
        let mut queue: std::collections::VecDeque<Part> = (files.into_iter())
            .map(|(file, before)| Part {
                file,
                before,
                context: Vec::new(),
                caller: None,
            })
            .collect();
        while let Some(Part {
            file,
            before,
            context,
            caller,
        }) = queue.pop_front()
        {
            let ask = if context.is_empty() {
                change_request(&st.prompt, &file, &before)
            } else {
                whole_request(&st.prompt, &file, Some(&before), &context)
            };
            let mut made = None;
            for temperature in [0.2, 0.7] {
                let Some(reply) = self
                    .side_request(CHANGE_SYSTEM, &ask, temperature, cancel)
                    .await
                else {
                    break;
                };
                let kept =
                    change_of(&st.prompt, &file, &before, &reply, &st.spelled).map(|after| {
                        match &caller {
                            Some(names) => only_the_calls(&before, &after, names),
                            None => after,
                        }
                    });
                match kept {
                    Ok(after) if after == before => break,
                    Ok(after) => {
                        made = Some(after);
                        break;
                    }
                    Err("no change") => break,
                    Err(_) => {}
                }
            }
            let Some(after) = made else {
                // A caller left as it was is not a failed part of the
                // request: the checks say whether it still works.
                all &= caller.is_some();
                continue;
            };
            let label = format!("change {file} (asked alone)");
            if !self
                .own_write(st, &file, after.clone(), &label, cancel)
                .await
            {
                all = false;
                continue;
            }
            diffs.push(crate::diff::unified(&file, &before, &after, 1, 40));
            written.push(file.clone());
            if !self.on(crate::config::Behaviour::Callers) {
                continue;
            }
            // A named file still to come that calls what changed sees it.
            let changed = guard::signature_changes(&before, &after);
            for part in &mut queue {
                if changed.iter().any(|n| calls_in(&part.before, n)) {
                    part.context.push((file.clone(), after.clone()));
                }
            }
            let pending: Vec<String> = queue.iter().map(|p| p.file.clone()).collect();
            for (caller, text) in self.callers_of(&before, &after, &file, &written, &pending) {
                if callers_added == MAX_CALLERS {
                    break;
                }
                callers_added += 1;
                self.notice(
                    Level::Info,
                    format!("{caller} calls what changed in {file}: asking for it too"),
                );
                queue.push_back(Part {
                    file: caller,
                    before: text,
                    context: vec![(file.clone(), after.clone())],
                    caller: Some(changed.clone()),
                });
            }
        }
        if diffs.is_empty() {
            return None;
        }
        self.notice(
            Level::Info,
            format!(
                "asked for each file's part of the request alone; changed {} of them",
                diffs.len()
            ),
        );
        let checks = match self.run_checks(st, cancel).await {
            None => st
                .tests
                .as_ref()
                .map(|t| format!(" `{}` passes ({}).", t.command, t.summary))
                .unwrap_or_default(),
            Some((command, out)) => {
                all = false;
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!(" `{command}` fails now:\n{lines}\n")
            }
        };
        let spelled_in = |code: &str| {
            self.sources_now()
                .iter()
                .any(|(_, t)| harness::has_code(t, code))
        };
        if all && st.spelled.iter().all(|(_, c)| spelled_in(c)) {
            st.settled = true;
        }
        let end = if st.settled {
            "No tool call is needed: check the change against the request and say in a few sentences what changed."
        } else {
            "Check the change against the request and finish what it does not do yet."
        };
        Some(format!(
            "\n\n[mm asked for each file's part of the request alone and made these changes:]\n```diff\n{}```\n{checks}{end}",
            diffs.concat()
        ))
    }

    /// The checks fail and the failure points at the workspace's own
    /// functions: ask for the function corrected (see the module doc), up
    /// to twice, and keep a change only when every check passes with it.
    /// Returns what to tell the model, or None when nothing was kept.
    pub(super) async fn focused_fix(
        &mut self,
        st: &mut TurnState,
        command: &str,
        failure: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.harness_on() || st.question {
            return None;
        }
        let sources = self.sources_now();
        let t = target(failure, &st.prompt, &sources)?;
        let docs = self.named_doc_texts(&st.prompt);
        let ask = request(&st.prompt, command, failure, &t, &docs);
        let mut tried: Vec<String> = Vec::new();
        for temperature in [0.2, 0.7] {
            let before = sources.iter().find(|(p, _)| *p == t.file)?.1.clone();
            let reply = self.side_request(SYSTEM, &ask, temperature, cancel).await?;
            let Some((after, changed)) = apply(&before, &reply, &t.names) else {
                continue;
            };
            if tried.contains(&after) {
                continue;
            }
            tried.push(after.clone());
            let label = format!("fix {} in {} (asked alone)", changed.join(", "), t.file);
            // What the turn was before this try, for when it is put back.
            let saved = (
                st.tests.clone(),
                st.last_failure.clone(),
                st.mutations,
                st.written.clone(),
                st.checked_at,
            );
            if !self.own_write(st, &t.file, after, &label, cancel).await {
                return None;
            }
            match self.run_checks(st, cancel).await {
                None => {
                    self.notice(
                        Level::Info,
                        format!(
                            "asked for {} alone with the failure; the change it gave makes the checks pass",
                            changed.join(", ")
                        ),
                    );
                    let summary = st
                        .tests
                        .as_ref()
                        .map(|r| format!(" ({})", r.summary))
                        .unwrap_or_default();
                    let file = self
                        .tools
                        .sandbox
                        .check_read(&t.file)
                        .ok()
                        .and_then(|r| crate::paths::read_checked(&r.abs, 1024 * 1024).ok());
                    let body = String::from_utf8_lossy(file.as_deref().unwrap_or_default());
                    let now: Vec<String> = changed
                        .iter()
                        .filter_map(|n| guard::block_of(&body, n))
                        .collect();
                    return Some(format!(
                        "\n[mm asked for {} alone, with this failure, and changed {} to what came back; `{command}` passes now{summary}. It is now:]\n```\n{}```\nDo not change it again: check the change and answer.",
                        changed.join(", "),
                        t.file,
                        now.join("\n")
                    ));
                }
                // A person approved it: it stays, and the model hears
                // what still fails.
                Some((c, _)) if st.approved.contains(&t.file) => {
                    self.notice(
                        Level::Warning,
                        format!(
                            "`{c}` still fails with the change to {}; it stays as you approved it",
                            t.file
                        ),
                    );
                    return None;
                }
                Some(_) => {
                    let label = format!("undo the change to {} (the checks still fail)", t.file);
                    if !self.own_write(st, &t.file, before, &label, cancel).await {
                        self.notice(
                            Level::Warning,
                            format!(
                                "could not put {} back after a change with which the checks still fail; /rewind undoes it",
                                t.file
                            ),
                        );
                        return None;
                    }
                    // Nothing of this try is left: the turn has not
                    // changed the file.
                    (
                        st.tests,
                        st.last_failure,
                        st.mutations,
                        st.written,
                        st.checked_at,
                    ) = saved;
                }
            }
        }
        None
    }
}

impl Agent {
    /// The short source files, other than `file`, not written this turn
    /// nor about to be, that call a definition whose parameters changed
    /// from `before` to `after` (test files are left as they are).
    pub(super) fn callers_of(
        &self,
        before: &str,
        after: &str,
        file: &str,
        written: &[String],
        pending: &[String],
    ) -> Vec<(String, String)> {
        let changed = crate::tools::guard::signature_changes(before, after);
        if changed.is_empty() {
            return Vec::new();
        }
        self.sources_now()
            .into_iter()
            .filter(|(p, t)| {
                p != file
                    && !written.contains(p)
                    && !pending.contains(p)
                    && !harness::is_test_file(p)
                    && t.lines().count() <= MAX_FILE_LINES * 2
                    && changed.iter().any(|n| calls_in(t, n))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_function_one_call_down_is_the_first_another_file_defines() {
        let sources = vec![
            ("till.py".to_string(), "def total(p):\n    return sum(cents(x) for x in p)\n\n\ndef fee():\n    return 1\n".to_string()),
            ("money.py".to_string(), "def cents(t):\n    return int(t)\n".to_string()),
            ("test_money.py".to_string(), "def helper(t):\n    return t\n".to_string()),
        ];
        let trace = "total(p=['1']) in till.py returned 1\n  it called fee() in till.py, which returned 1\n  it called helper(t='1') in test_money.py, which returned '1'\n  it called gone(t='1') in money.py, which returned 1\n  it called cents(t='1') in money.py, which returned 1\n";
        let d = down_target(trace, "till.py", &sources).unwrap();
        assert_eq!(d.file, "money.py");
        assert_eq!(d.names, ["cents"]);
        assert!(d.code.contains("def cents(t):"), "{}", d.code);
        assert!(
            down_target(
                "it called fee() in till.py, which returned 1",
                "till.py",
                &sources
            )
            .is_none()
        );
    }

    #[test]
    fn the_function_the_others_call_is_narrowed_to_with_its_wrong_values() {
        let text = "def count(total, per):\n    return max(1, total // per)\n\n\ndef pages(items, per):\n    return count(len(items), per)\n\n\ndef label(p, total):\n    return f'{p} of {count(total, 10)}'\n";
        let failure = "FAIL: test_last (t.T.test_last)\nTraceback (most recent call last):\n  File \"./t.py\", line 9, in test_last\n    self.assertEqual(count(31, 10), 4)\nAssertionError: 3 != 4\nFAIL: test_label\n    self.assertEqual(label(3, 25), \"3 of 3\")\nAssertionError: '3 of 2' != '3 of 3'\n";
        let t = super::Target {
            file: "pager.py".into(),
            names: vec!["count".into(), "pages".into(), "label".into()],
            code: text.into(),
            consts: Vec::new(),
        };
        let n = narrow(&t, text, failure).unwrap();
        assert_eq!(n.names, ["count"]);
        assert!(n.code.starts_with("def count"), "{}", n.code);
        assert_eq!(
            wrong_values(failure, "count"),
            ["count(31, 10) gives 3; the test expects 4"]
        );
        assert_eq!(
            wrong_values(
                "    assert count(31, 10) == 4\nE       assert 3 == 4\n",
                "count"
            ),
            ["count(31, 10) gives 3; the test expects 4"]
        );
        // A failure that calls none of the called ones, or a set with no
        // single callee: nothing to narrow to.
        assert!(narrow(&t, text, "AssertionError: pages").is_none());
        let apart = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
        let t2 = super::Target {
            file: "x.py".into(),
            names: vec!["a".into(), "b".into()],
            code: apart.into(),
            consts: Vec::new(),
        };
        assert!(narrow(&t2, apart, "a() b()").is_none());
    }

    #[test]
    fn constants_the_functions_use_are_shown_and_may_change() {
        let text = "from datetime import datetime\n\nDATE_FORMAT = \"%Y-%d-%m\"\nUNUSED = 3\n\n\ndef parse(text):\n    return datetime.strptime(text, DATE_FORMAT).date()\n\n\ndef main():\n    print(parse('2024-12-25'))\n";
        let failure = "Traceback (most recent call last):\n  File \"./c.py\", line 12, in main\n    print(parse('2024-12-25'))\n  File \"./c.py\", line 8, in parse\n    return datetime.strptime(text, DATE_FORMAT).date()\nValueError: unconverted data remains: 5\n";
        let sources = vec![("c.py".to_string(), text.to_string())];
        let t = target(failure, "fix c.py", &sources).unwrap();
        assert_eq!(t.consts, ["DATE_FORMAT"]);
        assert!(
            t.code.starts_with("DATE_FORMAT = \"%Y-%d-%m\"\n\n"),
            "{}",
            t.code
        );
        assert!(!t.code.contains("UNUSED"), "{}", t.code);
        let allowed: Vec<String> = t.names.iter().chain(&t.consts).cloned().collect();
        let reply = "```python\nDATE_FORMAT = \"%Y-%m-%d\"\n```";
        let (after, changed) = apply(text, reply, &allowed).unwrap();
        assert!(after.contains("DATE_FORMAT = \"%Y-%m-%d\"\n"), "{after}");
        assert_eq!(changed, ["DATE_FORMAT"]);
        // Without the constant allowed, the same reply is not applied.
        assert!(apply(text, reply, &t.names).is_none());
    }

    #[test]
    fn the_request_copied_into_a_file_is_no_change() {
        let prompt = "test_checkout.py has failures: some receipts come out wrong.";
        let before = "def f():\n    return 1\n";
        let after = format!("{before}\n# The request: {prompt}\n");
        assert_eq!(
            vet(prompt, "c.py", before, after, "", &[]),
            Err("no change")
        );
        let after = format!("def f():\n    return 2\n# The request: {prompt}\n");
        assert_eq!(
            vet(prompt, "c.py", before, after, "", &[]).as_deref(),
            Ok("def f():\n    return 2\n")
        );
    }

    #[test]
    fn a_corrected_function_may_bring_the_import_it_needs() {
        let before = "\"\"\"Blog.\"\"\"\nfrom datetime import date\n\n\ndef slug(t):\n    raise NotImplementedError\n\n\ndef other():\n    return 1\n";
        let reply = "```python\nimport re\n\ndef slug(t):\n    return re.sub(r'[^a-z0-9]+', '-', t.lower()).strip('-')\n```";
        let (after, changed) = apply(before, reply, &["slug".to_string()]).unwrap();
        assert_eq!(changed, vec!["slug"]);
        assert!(
            after.contains("from datetime import date\nimport re\n"),
            "{after}"
        );
        assert!(after.contains("def other():"), "{after}");
        // Anything else than an import still makes the reply unusable.
        let extra = "```python\nLIMIT = 3\n\ndef slug(t):\n    return t\n\ndef helper():\n    return 2\n```";
        assert_eq!(apply(before, extra, &["slug".to_string()]), None);
    }

    use super::*;

    #[test]
    fn a_caller_keeps_only_the_changes_to_its_calls() {
        let names = vec!["make_line".to_string()];
        let before = "def run():\n    out = [make_line('start')]\n    out.append(check(x) + ' (/)')\n    out.append(make_line('done'))\n    return out\n";
        let after = "def run():\n    out = [make_line('INFO', 'start')]\n    out.append(make_line('INFO', check(x) + ' (/)'))\n    out.append(make_line('INFO', 'done'))\n    return out\n";
        assert_eq!(
            only_the_calls(before, after, &names),
            "def run():\n    out = [make_line('INFO', 'start')]\n    out.append(check(x) + ' (/)')\n    out.append(make_line('INFO', 'done'))\n    return out\n"
        );
        // A call laid over two lines is taken; a line with no call that
        // was dropped comes back.
        let before = "x = make_line('a')\ny = 2\nz = 3\n";
        let after = "x = make_line(\n    'INFO', 'a')\ny = 2\n";
        assert_eq!(
            only_the_calls(before, after, &names),
            "x = make_line(\n    'INFO', 'a')\ny = 2\nz = 3\n"
        );
    }

    #[test]
    fn search_replace_blocks_are_applied_in_order_and_held_to_the_checks() {
        let before =
            "def area(w, h):\n    raise NotImplementedError\n\n\ndef unit():\n    return 'm'\n";
        let reply = "Here:\n```python\n<<<<<<< SEARCH\ndef area(w, h):\n    raise NotImplementedError\n=======\ndef area(w, h):\n    return w * h\n>>>>>>> REPLACE\n```\n<<<<<<< SEARCH\n=======\ndef perimeter(w, h):\n    return 2 * (w + h)\n>>>>>>> REPLACE\n";
        assert_eq!(search_replace_blocks(reply).len(), 2);
        let after =
            blocks_change("Implement area in geo.py", "geo.py", before, reply, &[]).unwrap();
        assert_eq!(
            after,
            "def area(w, h):\n    return w * h\n\n\ndef unit():\n    return 'm'\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
        );
        // Indentation copied wrong still finds its place, as edit_file does.
        let loose = "<<<<<<< SEARCH\n  raise NotImplementedError\n=======\n    return w * h\n>>>>>>> REPLACE\n";
        let after = blocks_change("Implement area", "geo.py", before, loose, &[]).unwrap();
        assert!(after.contains("    return w * h\n"), "{after}");
        // A SEARCH that is not in the file, no block, or no change: nothing.
        let missing =
            "<<<<<<< SEARCH\ndef volume():\n=======\ndef volume(): pass\n>>>>>>> REPLACE\n";
        assert!(blocks_change("x", "geo.py", before, missing, &[]).is_err());
        assert!(blocks_change("x", "geo.py", before, "```python\nx = 1\n```", &[]).is_err());
        let same = "<<<<<<< SEARCH\n    return 'm'\n=======\n    return 'm'\n>>>>>>> REPLACE\n";
        assert_eq!(
            blocks_change("x", "geo.py", before, same, &[]),
            Err("no change")
        );
        // An unclosed block is not a block.
        assert!(search_replace_blocks("<<<<<<< SEARCH\na\n=======\nb\n").is_empty());
        // The template's parentheses copied around the lines (a dev trace:
        // `(masked_local_part = "*")`).
        let wrapped =
            "<<<<<<< SEARCH\n(    return 'm')\n=======\n(    return 'cm')\n>>>>>>> REPLACE\n";
        let after = blocks_change("x", "geo.py", before, wrapped, &[]).unwrap();
        assert!(after.contains("    return 'cm'\n"), "{after}");
        assert_eq!(unwrap_parens("print(x)"), "print(x)");
        assert_eq!(unwrap_parens("(f(x))"), "f(x)");
        assert_eq!(unwrap_parens("(y = 1"), "y = 1");
    }

    const LIB: &str = "/// Whether `year` is a leap year.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && year % 100 != 0\n}\n\n/// Days in `year`.\npub fn days_in(year: u32) -> u32 {\n    if is_leap(year) {\n        366\n    } else {\n        365\n    }\n}\n\npub fn unrelated() -> u32 {\n    1\n}\n";
    const TEST: &str =
        "use leap::*;\n#[test]\nfn days() {\n    assert_eq!(days_in(2000), 366);\n}\n";

    fn sources() -> Vec<(String, String)> {
        vec![
            ("src/lib.rs".to_string(), LIB.to_string()),
            ("tests/leap.rs".to_string(), TEST.to_string()),
        ]
    }

    #[test]
    fn the_target_is_the_called_function_and_what_it_calls() {
        let failure = "thread 'days' panicked at tests/leap.rs:4:5:\nassertion `left == right` failed\ntests/leap.rs:4: assert_eq!(days_in(2000), 366);";
        let t = target(failure, "fix it", &sources()).unwrap();
        assert_eq!(t.file, "src/lib.rs");
        assert_eq!(t.names, ["is_leap", "days_in"]);
        assert!(
            t.code
                .starts_with("/// Whether `year` is a leap year.\npub fn is_leap")
        );
        assert!(!t.code.contains("unrelated"));
    }

    #[test]
    fn a_python_frame_names_the_function() {
        let src =
            "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n\n\ndef other():\n    return 2\n";
        let failure = "  File \"stats.py\", line 2, in mean\nZeroDivisionError: division by zero";
        let s = vec![("stats.py".to_string(), src.to_string())];
        let t = target(failure, "fix the crash", &s).unwrap();
        assert_eq!(t.names, ["mean"]);
        assert!(!t.code.contains("other"));
    }

    #[test]
    fn without_a_name_the_file_the_request_names() {
        let t = target(
            "FAILED (1 failure)",
            "Fix the bug in src/lib.rs.",
            &sources(),
        )
        .unwrap();
        assert_eq!(t.names, ["is_leap", "days_in", "unrelated"]);
        assert_eq!(target("FAILED", "fix it", &sources()), None);
    }

    #[test]
    fn a_compile_error_names_the_function_around_its_line() {
        // A file over the short-file limit, as a stub's file often is.
        let mut src = String::from("pub fn first() -> u32 {\n    1\n}\n\n");
        for i in 0..30 {
            src.push_str(&format!("pub fn filler{i}() -> u32 {{\n    {i}\n}}\n\n"));
        }
        let at = src.lines().count() + 2;
        src.push_str("pub fn from_roman(s: &str) -> Option<u32> {\n    let n = 0;\n    if s[0] == 'I' {}\n    Some(n)\n}\n");
        assert!(src.lines().count() > MAX_LINES);
        let s = vec![("src/lib.rs".to_string(), src)];
        let failure = format!(
            "error[E0277]: the type `str` cannot be indexed by `usize`\n  --> src/lib.rs:{at}:8\n   |\n{at} |     if s[0] == 'I' {{}}\nerror: could not compile `roman` (lib) due to 1 previous error"
        );
        let t = target(&failure, "make it compile", &s).unwrap();
        assert_eq!(
            (t.file.as_str(), t.names.clone()),
            ("src/lib.rs", vec!["from_roman".to_string()])
        );
        // No place either: the function the request names in the file it names.
        let t = target(
            "error: could not compile",
            "Implement from_roman in src/lib.rs.",
            &s,
        )
        .unwrap();
        assert_eq!(t.names, ["from_roman"]);
        assert_eq!(
            target("error: could not compile", "Fix src/lib.rs.", &s),
            None
        );
    }

    #[test]
    fn a_rewritten_rust_function_keeps_its_pub() {
        let before = "pub fn to(n: u32) -> u32 {\n    n\n}\n\npub(crate) fn from(s: &str) -> Option<u32> {\n    todo!()\n}\n";
        let reply = "```rust\nfn from(s: &str) -> Option<u32> {\n    s.parse().ok()\n}\n```";
        let (after, changed) = apply(before, reply, &["from".to_string()]).unwrap();
        assert_eq!(changed, ["from"]);
        assert!(
            after.contains("pub(crate) fn from(s: &str) -> Option<u32> {\n    s.parse().ok()"),
            "{after}"
        );
        assert!(after.starts_with("pub fn to("), "{after}");
    }

    #[test]
    fn a_reply_replaces_only_the_functions_shown() {
        let names = vec!["is_leap".to_string(), "days_in".to_string()];
        let reply = "Here:\n```rust\n/// Whether `year` is a leap year.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)\n}\n\npub fn days_in(year: u32) -> u32 {\n    if is_leap(year) {\n        366\n    } else {\n        365\n    }\n}\n```\n";
        let (after, changed) = apply(LIB, reply, &names).unwrap();
        assert_eq!(changed, ["is_leap"]);
        assert!(after.contains("(year % 100 != 0 || year % 400 == 0)"));
        assert!(after.contains("pub fn unrelated"));
        assert_eq!(after.matches("/// Whether").count(), 1);
        // Unchanged, another function, or no code: nothing to apply.
        assert_eq!(
            apply(
                LIB,
                "```rust\npub fn unrelated() -> u32 {\n    2\n}\n```",
                &names
            ),
            None
        );
        assert_eq!(apply(LIB, "The bug is in is_leap.", &names), None);
        let same = format!("```rust\n{}```", guard::block_of(LIB, "is_leap").unwrap());
        assert_eq!(apply(LIB, &same, &names), None);
    }

    #[test]
    fn a_change_across_two_short_files_is_asked_for_file_by_file() {
        let s = vec![
            (
                "fmt.py".to_string(),
                "def f(items):\n    return 1\n".to_string(),
            ),
            (
                "report.py".to_string(),
                "from fmt import f\nprint(f([]))\n".to_string(),
            ),
            ("test_fmt.py".to_string(), "from fmt import f\n".to_string()),
        ];
        let files = change_files(
            "Give f in fmt.py a parameter, and make report.py use it.",
            &s,
        );
        assert_eq!(
            files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            ["fmt.py", "report.py"]
        );
        assert!(change_files("Change f in fmt.py.", &s).is_empty());
        assert!(change_files("Change fmt.py and new.py.", &s).is_empty());
        assert!(change_files("Change fmt.py and test_fmt.py.", &s).is_empty());
        assert!(change_files("Move f from fmt.py to report.py.", &s).is_empty());
    }

    #[test]
    fn a_focused_change_is_kept_only_whole_and_as_asked() {
        let prompt = "Give format_list in fmt.py a parameter sep, and make report.py call it with sep=\" | \".";
        let spelled = harness::spelled_code(prompt);
        let fmt = "def format_list(items):\n    return \", \".join(items)\n\n\ndef format_title(s):\n    return s.title()\n";
        let good = "```python\ndef format_list(items, sep=\", \"):\n    return sep.join(items)\n\n\ndef format_title(s):\n    return s.title()\n```";
        let after = change_of(prompt, "fmt.py", fmt, good, &spelled).unwrap();
        assert!(after.starts_with("def format_list(items, sep=\", \"):"));
        // Only the changed function: merged into the file.
        let part =
            "```python\ndef format_list(items, sep=\", \"):\n    return sep.join(items)\n```";
        let merged = change_of(prompt, "fmt.py", fmt, part, &spelled).unwrap();
        assert!(merged.contains("def format_title"));
        let renamed = "```python\ndef format_list_with_sep(items, sep=\", \"):\n    return sep.join(items)\n\n\ndef format_title(s):\n    return s.title()\n```";
        assert!(change_of(prompt, "fmt.py", fmt, renamed, &spelled).is_err());
        let report = "from fmt import format_list\nprint(format_list([]))\n";
        let unspelled =
            "```python\nfrom fmt import format_list\nprint(format_list([], sep=\"-\"))\n```";
        assert!(change_of(prompt, "report.py", report, unspelled, &spelled).is_err());
        let spelt =
            "```python\nfrom fmt import format_list\nprint(format_list([], sep=' | '))\n```";
        assert!(change_of(prompt, "report.py", report, spelt, &spelled).is_ok());
        // A fragment of a short file with no definitions is not the file.
        let fragment = "```python\nprint(format_list([], sep=' | '))\n```";
        assert!(change_of(prompt, "report.py", report, fragment, &spelled).is_err());
        assert_eq!(
            change_of(
                prompt,
                "report.py",
                report,
                &format!("```\n{report}```"),
                &spelled
            ),
            Err("no change")
        );
    }
}
