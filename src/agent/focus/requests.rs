//! The focused requests' words: the request, the documents beside it, the
//! code, the failure and the wrong values, and what to reply with; the one
//! function the others call.

use super::*;

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
pub(crate) fn split_top_comma(args: &str) -> Option<(&str, &str)> {
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

pub(crate) fn has_definitions(path: &str) -> bool {
    [".py", ".rs", ".js", ".cjs", ".mjs", ".ts", ".go"]
        .iter()
        .any(|e| path.ends_with(e))
}

/// `name` called in `block` (other than on its own definition line).
pub(crate) fn calls(block: &str, name: &str) -> bool {
    let pattern = format!(r"\b{}\s*\(", regex::escape(name));
    harness::regex(&pattern).is_ok_and(|re| block.lines().skip(1).any(|l| re.is_match(l)))
}

/// The definition of `name` with the comment lines right above it.
pub(crate) fn with_comments(text: &str, name: &str) -> Option<String> {
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
pub(crate) fn request_head(prompt: &str, docs: &[(String, String)]) -> String {
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
