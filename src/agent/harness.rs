//! What the harness knows without the model: the project's test command,
//! the command a request says fails, what a failure's output comes down
//! to, and whether an answer is one. Pure functions; the loop in
//! `agent` decides when to use them.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

mod verify;
pub use verify::*;

mod output;
pub use output::*;

mod answers;
pub use answers::*;

mod values;
pub use values::*;

mod runaway;
pub use runaway::*;

mod limits;
pub use limits::*;

pub(crate) use crate::patterns::{bytes_regex, has_word, holds_any, is_test_file, regex};

/// The request asks for the tests to be run, or says they fail.
pub fn mentions_tests(prompt: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(concat!(
            r"(?i)(?-u:\b)(run|rerun|re-run|execute)(?-u:\b)(?-u:[^.\n]){0,30}(?-u:\b)tests?(?-u:\b)",
            // "the tests fail", "test_checkout.py has failures"
            r"|(?-u:\b)(tests?|test_\w+(?:\.\w+)?|\w+_test(?:\.\w+)?|\w+\.(?:test|spec)\.\w+)(?-u:\b)(?-u:[^\n]){0,40}(?-u:\b)(fail|fails|failing|failed|failure|failures|pass|passes|broken|red)(?-u:\b)",
            // "failures in test_checkout.py", "failing tests"
            r"|(?-u:\b)(fail|fails|failing|failed|failure|failures|broken)(?-u:\b)(?-u:[^.\n]){0,30}(?-u:\b)(tests?|test_\w+)(?-u:\b)",
        ))
            .ok()
    });
    holds_any(prompt, &["test", "spec"])
        && RE.as_ref().is_some_and(|r| r.is_match(prompt.as_bytes()))
}

/// The request asks for something broken to be fixed.
pub fn asks_for_fix(prompt: &str) -> bool {
    has_word(
        prompt,
        &[
            "fix",
            "fixes",
            "repair",
            "bug",
            "bugs",
            "buggy",
            "broken",
            "crash",
            "crashes",
            "wrong",
            "incorrect",
        ],
    )
}

/// The request asks for a change to the code: a fix, or a verb of making
/// or changing something ("add", "implement", "rename", "create").
pub fn asks_for_change(prompt: &str) -> bool {
    const VERBS: &[&str] = &[
        "add",
        "change",
        "edit",
        "update",
        "create",
        "implement",
        "rename",
        "refactor",
        "remove",
        "delete",
        "replace",
        "insert",
        "move",
        "rewrite",
        "extract",
        "convert",
        "make",
        "write",
        "finish",
        "complete",
    ];
    asks_for_fix(prompt) || has_word(prompt, VERBS) || states_a_need(prompt)
}

/// The request adds or implements code rather than fixing it: asks for a
/// change, is not a fix, and names a source file.
pub fn adds_code(prompt: &str) -> bool {
    asks_for_change(prompt) && !asks_for_fix(prompt) && !named_files(prompt).is_empty()
}

/// The request states what the code needs rather than giving an order
/// ("I need slug(title) in blog.py", "report.py should round to cents"):
/// a wish or an obligation, with a source file named for it.
fn states_a_need(prompt: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(concat!(
            r"(?i)(?-u:\b)(?:(?:i|we)\s+(?:need|want|would\s+like)|(?:i'd|we'd)\s+like|",
            r"should|must|needs\s+to|has\s+to|have\s+to)(?-u:\b)"
        ))
        .ok()
    });
    holds_any(
        prompt,
        &["need", "want", "like", "should", "must", "has", "have"],
    ) && RE.as_ref().is_some_and(|r| r.is_match(prompt.as_bytes()))
        && !named_files(prompt).is_empty()
}

/// The request asks for text in the answer, not for a change to a file:
/// a commit message, a summary, a review, an explanation (`question`: it
/// asks a question, which counts when the text to answer about was piped
/// in). Any word of changing, or a file named as a destination, and it
/// does not: a write is then the user's to ask for.
pub fn asks_for_text(prompt: &str, question: bool) -> bool {
    static TEXT: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(concat!(
            r"(?i)^\s*(?:(?:please|now|then)\s+)?(?:",
            r"(?:summari[sz]e|explain|describe|review|translate|tell|say|draft|compose)(?-u:\b)",
            r"|(?:write|give|suggest|propose)(?-u:\b)(?-u:[^.\n]){0,40}?(?-u:\b)",
            r"(?:commit\s+message|message|summary|description|title|changelog\s+entry|release\s+notes|review|explanation|reply|email|tl;?dr)(?-u:\b)",
            r")"
        ))
        .ok()
    });
    static CHANGE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(concat!(
            r"(?i)(?-u:\b)(?:add|adds|change|edit|update|create|implement|rename|refactor|remove|delete|",
            r"replace|insert|append|save|modify|move|rewrite|make|put|apply|commit\s+it|generate|fix|repair|",
            r"(?:to|into|in)\s+(?:the\s+)?(?:file|[\w./-]+\.\w{1,5}))(?-u:\b)"
        ))
        .ok()
    });
    // "the last change", "this fix": nouns, what the text is about.
    static NOUN: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\b(?:the|this|that|last|my|your|a|an|these|those|recent|staged)\s+(?:changes?|edits?|updates?|fix(?:es)?|commits?)\b").ok()
    });
    const VERBS: &[&str] = &[
        "summari",
        "explain",
        "describe",
        "review",
        "translate",
        "tell",
        "say",
        "draft",
        "compose",
        "write",
        "give",
        "suggest",
        "propose",
    ];
    let reviewing = asks_review(prompt);
    let asked = question
        || reviewing
        || holds_any(prompt, VERBS) && TEXT.as_ref().is_some_and(|r| r.is_match(prompt.as_bytes()));
    if !asked {
        return false;
    }
    // "do not change it", "without editing": what not to do.
    static NOT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\b(?:do\s+not|don'?t|never|without)\s+(?:\w+\s+)?(?:change|edit|modify|touch|fix|writ)\w*").ok()
    });
    let mut rest = match NOUN.as_ref() {
        Some(re) => re.replace_all(prompt, " ").into_owned(),
        None => prompt.to_string(),
    };
    if let Some(re) = NOT.as_ref() {
        rest = re.replace_all(&rest, " ").into_owned();
    }
    let about = if reviewing {
        !states_a_need(&rest)
    } else {
        !asks_for_fix(&rest)
    };
    about && !CHANGE.as_ref().is_some_and(|r| r.is_match(rest.as_bytes()))
}

/// A review ("review calc.py for bugs", "check parse.py for anything
/// wrong"): the bugs are what the text is about, not an order to fix
/// them; only a verb of changing makes it one (see `asks_for_text`).
pub fn asks_review(prompt: &str) -> bool {
    static REVIEW: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(concat!(
            r"(?i)^\s*(?:(?:please|now|then)\s+)?(?:review|audit|inspect|proofread|check|find|spot|list|report|",
            r"look\s+(?:for|over|at|through)|point\s+out)(?-u:\b)"
        ))
        .ok()
    });
    REVIEW
        .as_ref()
        .is_some_and(|r| r.is_match(prompt.as_bytes()))
}

/// The request asks for tests to be written or changed.
pub fn asks_for_tests(prompt: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(write|add|create|extend|update|change|rewrite)(?-u:\b)(?-u:[^.\n]){0,30}(?-u:\b)tests?(?-u:\b)")
            .ok()
    });
    holds_any(prompt, &["test"]) && RE.as_ref().is_some_and(|r| r.is_match(prompt.as_bytes()))
}

/// The files an answer says it changed ("I edited store.py", "updated
/// `src/app.js`"), as written.
pub fn claimed_files(answer: &str) -> Vec<String> {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\b(?:edited|changed|updated|modified|fixed|rewrote|rewritten|wrote|patched)\s+(?:the\s+)?(?:file\s+)?`?([\w./-]+\.[A-Za-z]{1,5})`?").ok()
    });
    let Some(re) = RE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(answer) {
        if let Some(m) = c.get(1) {
            let f = m.as_str().trim_start_matches("./").to_string();
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// Whether `answer` quotes every line `printed` has (spaces collapsed):
/// an answer about what a command prints gives that output, not another.
/// Output of more than 20 lines is not held to this.
pub fn quotes_output(answer: &str, printed: &str) -> bool {
    let squeeze = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = printed
        .lines()
        .map(squeeze)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > 20 {
        return true;
    }
    let answer: Vec<String> = answer.lines().map(squeeze).collect();
    let flat = answer.join("\n");
    lines.iter().all(|l| flat.contains(l.as_str()))
}

/// What a fix does when it only hides a failure instead of removing its
/// cause: it catches the error, puts a default in place of the missing
/// value, skips the item that fails, or deletes code. Judged on the lines
/// the change adds and removes; None when it does none of these.
pub fn hides_symptom(before: &str, after: &str) -> Option<&'static str> {
    static KINDS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            (r"^\s*(try\s*:|except\b|try\s*\{|\}?\s*catch\b)", "catches the error"),
            (r"\.get\([^,()]+,[^)]*\)|\bgetattr\([^,()]+,[^,()]+,|(?:\bor|\?\?|\|\|)\s*(0|0\.0|None|null|undefined|''|\x22\x22|\[\]|\{\}|-1)\s*[\),;]?\s*$", "puts a default in place of the missing value"),
            (r"^\s*(continue|pass|return\s*(None|null|undefined)?)\s*;?\s*$", "skips the item that fails"),
        ]
        .iter()
        .filter_map(|(p, w)| regex(p).ok().map(|r| (r, *w)))
        .collect()
    });
    let mut added: Vec<&str> = Vec::new();
    let mut removed = 0usize;
    let diff = similar::TextDiff::from_lines(before, after);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added.push(change.value()),
            similar::ChangeTag::Delete if !change.value().trim().is_empty() => removed += 1,
            _ => {}
        }
    }
    let added: Vec<&str> = added.into_iter().filter(|l| !l.trim().is_empty()).collect();
    if added.is_empty() {
        return (removed > 0).then_some("deletes code");
    }
    KINDS
        .iter()
        .find(|(re, _)| added.iter().any(|l| re.is_match(l)))
        .map(|(_, w)| *w)
        .or_else(|| {
            added
                .iter()
                .any(|l| cuts_itself(l))
                .then_some("cuts part of the input away")
        })
}

/// A line that sets a name to a piece of itself: `text = text[:-1]`,
/// `s = s.replace("x", "")`, `v = v.slice(1)` — the failing input made to
/// fit instead of the code that reads it fixed. (`s = s.strip()` with no
/// argument, trimming whitespace, is not.)
fn cuts_itself(line: &str) -> bool {
    let t = line
        .trim()
        .trim_start_matches("let ")
        .trim_start_matches("const ");
    let Some((name, rest)) = t.split_once('=') else {
        return false;
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return false;
    }
    let rest = rest.trim().trim_end_matches(';');
    let Some(after) = rest.strip_prefix(name) else {
        return false;
    };
    if after.starts_with('[') {
        return after.contains(':') && after.ends_with(']');
    }
    [
        ".strip(",
        ".rstrip(",
        ".lstrip(",
        ".replace(",
        ".slice(",
        ".substring(",
        ".substr(",
    ]
    .iter()
    .any(|m| after.starts_with(m) && !after.starts_with(&format!("{m})")))
}

/// The question is about what something prints or outputs.
pub fn asks_output(prompt: &str) -> bool {
    has_word(
        prompt,
        &[
            "print", "prints", "printed", "output", "outputs", "display", "displays", "show",
            "shows", "says", "writes",
        ],
    )
}

/// The request asks for `file` itself to change ("update SPEC.md", "add a
/// section to docs/notes.md").
pub fn asks_to_edit(prompt: &str, file: &str) -> bool {
    let Ok(re) = regex(&format!(
        r"(?i)\b(update|edit|change|rewrite|fix|write|extend|correct|add\s+\w+(\s+\w+)?\s+to|document\s+\w+\s+in)\s+(the\s+)?(file\s+)?`?{}",
        regex::escape(file)
    )) else {
        return false;
    };
    re.is_match(prompt)
}

/// The request asks for something new: a file, a test, a function.
pub fn asks_to_create(prompt: &str) -> bool {
    has_word(
        prompt,
        &[
            "create", "new", "add", "write", "make", "generate", "put", "save",
        ],
    )
}

/// The request asks something rather than for a change.
pub fn is_question(prompt: &str) -> bool {
    // "Can you fix …?", "Could you add …?": a request, politely put.
    static POLITE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(can|could|would|will)\s+you(?-u:\b)(?-u:[^.?!\n]){0,60}?(?-u:\b)(fix|add|change|rename|implement|update|write|create|make|refactor|move|remove|delete|replace|correct|repair|extract|split|convert|finish|complete)(?-u:\b)").ok()
    });
    // "… Do not change any file.": whatever else it says, nothing is to
    // be written (not "do not change the tests", which is a fix's limit).
    static NO_CHANGE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"\b(?:do not|don't|dont|never)\s+(?:change|modify|edit|touch|write)\s+(?:any|anything|a single)\b|\bwithout\s+(?:changing|modifying|editing|touching)\s+(?:any|anything)\b").ok()
    });
    let p = prompt.trim();
    if NO_CHANGE
        .as_ref()
        .is_some_and(|r| r.is_match(&p.to_lowercase()))
    {
        return true;
    }
    if holds_any(p, &["you"]) && POLITE.as_ref().is_some_and(|r| r.is_match(p.as_bytes())) {
        return false;
    }
    let lower = p.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    p.ends_with('?')
        || matches!(
            first,
            "what"
                | "which"
                | "how"
                | "where"
                | "why"
                | "who"
                | "when"
                | "does"
                | "is"
                | "are"
                | "explain"
                | "describe"
        )
}

/// An `old_string` copied from the error output instead of the code:
/// what to tell the model, naming the line the error points at.
pub fn error_not_code(old: &str, failure: &str) -> Option<String> {
    let first = old.lines().map(str::trim).find(|l| !l.is_empty())?;
    // Only the error's own lines count: the code lines a traceback shows
    // under each frame, and the ones mm quotes, are code.
    let lines: Vec<&str> = failure.lines().collect();
    let in_error = lines.iter().enumerate().any(|(i, l)| {
        let code_under_frame = i > 0 && lines[i - 1].trim_start().starts_with("File \"");
        let quoted = l
            .split_once(": ")
            .is_some_and(|(place, _)| place.contains(':') && !place.contains(' '));
        !code_under_frame && !quoted && l.contains(first)
    });
    if first.len() < 8 || !in_error {
        return None;
    }
    let place = match last_frame(failure) {
        Some((path, line, code)) if !code.is_empty() => format!(
            " The error is raised at {path}:{line}: `{code}`. Change the code there, or where its wrong value comes from, with old_string = the exact line(s) of code."
        ),
        _ => " Use the exact line(s) of code to change as old_string.".to_string(),
    };
    Some(format!(
        "old_string `{first}` is text from the error output, not code from the file, so nothing was changed.{place}"
    ))
}

/// The refusal of an edit that only renames an identifier (`times` to
/// `times_int`) while a failure waits to be fixed and the request asks for
/// no rename; None when the edit is anything else.
/// A rename is a new name made from the old one (`times_int`, `value2`,
/// or back) that the file does not use yet: switching to a name the file
/// has (`min` for `max`) is a real change.
pub fn rename_only_refusal(
    old: &str,
    new: &str,
    file: &str,
    failure: &str,
    prompt: &str,
) -> Option<String> {
    let ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let (old, new) = (old.trim(), new.trim());
    if !ident(old) || !ident(new) || old == new || prompt.to_lowercase().contains("rename") {
        return None;
    }
    let (lo, ln) = (old.to_lowercase(), new.to_lowercase());
    let derived = ln.contains(&lo) || lo.contains(&ln);
    let used = file
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == new);
    if !derived || used {
        return None;
    }
    let error = failure
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.contains("Error") || l.contains("Exception") || l.contains("panicked"))
        .map(|l| format!(":\n{}", l.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    Some(format!(
        "refused: renaming `{old}` to `{new}` changes nothing the code does, so it cannot fix the failure{error}\nNothing was written. Change what makes the wrong value (the values mm showed say which one is wrong), with old_string = the exact line(s) of code and replacement = those lines fixed.\n{}",
        restate(prompt)
    ))
}

/// A file name in a request: a path with a source or config extension.
static SOURCE_FILE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"[A-Za-z0-9_./-]+\.(?:py|js|mjs|cjs|ts|tsx|jsx|rs|go|rb|java|c|h|cpp|toml|json|yaml|yml|cfg|ini)(?-u:\b)").ok()
});

/// The source files the request names, in order, each once.
pub fn named_files(prompt: &str) -> Vec<String> {
    if !prompt.contains('.') {
        return Vec::new();
    }
    let Some(re) = SOURCE_FILE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(prompt) {
        let f = m.as_str().trim_start_matches("./").to_string();
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// Whether every mention of `file` in the request is inside a quoted
/// command (`` `node report.js` ``): the program the user runs to show
/// the problem, not a file it asks to change.
pub fn only_in_quoted_command(prompt: &str, file: &str) -> bool {
    let mut outside = String::new();
    let mut in_command = false;
    for (i, part) in prompt.split('`').enumerate() {
        if i % 2 == 1 && part.trim().contains(char::is_whitespace) {
            in_command |= part.contains(file);
        } else {
            outside.push_str(part);
            outside.push(' ');
        }
    }
    in_command && !named_files(&outside).iter().any(|f| f == file)
}

/// Code the request spells out as `name=value` (a keyword argument or
/// a setting with a quoted, numeric or literal value): what the result
/// must contain, with the file the request named last before it (where
/// it belongs), if any.
pub fn spelled_code(prompt: &str) -> Vec<(Option<String>, String)> {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r#"(?-u:\b)[A-Za-z_][A-Za-z0-9_]*\s?=\s?(?:"[^"\n]{0,40}"|'[^'\n]{0,40}'|-?[0-9]+(?:\.[0-9]+)?(?-u:\b)|(?:True|False|None|true|false|null)(?-u:\b))"#).ok()
    });
    if !prompt.contains('=') {
        return Vec::new();
    }
    let Some(re) = RE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<(Option<String>, String)> = Vec::new();
    for m in re.find_iter(prompt) {
        // `a == b` is a comparison, not code to write.
        if prompt[m.end()..].starts_with('=') || prompt[..m.start()].ends_with(['=', '!', '<', '>'])
        {
            continue;
        }
        let file = SOURCE_FILE
            .as_ref()
            .and_then(|f| f.find_iter(&prompt[..m.start()]).last())
            .map(|f| f.as_str().trim_start_matches("./").to_string());
        let code = m.as_str().to_string();
        if !out.iter().any(|(_, c)| *c == code) {
            out.push((file, code));
        }
    }
    out
}

/// Names the request writes as calls (`slugify(title, max_length=60)`)
/// that none of `sources` defines and that are no builtin of Python or
/// JavaScript: functions the request wants to exist. Not a method call
/// (`s.strip()`), and not a name inside a quoted command.
pub fn undefined_calls(prompt: &str, sources: &[(String, String)]) -> Vec<String> {
    // JavaScript's globals and words a call-shaped phrase may start with.
    const JS_AND_WORDS: &[&str] = &[
        "parseInt",
        "parseFloat",
        "require",
        "String",
        "Number",
        "Array",
        "Object",
        "Math",
        "Date",
        "JSON",
        "Boolean",
        "Error",
        "Promise",
        "Set",
        "Map",
        "if",
        "for",
        "while",
        "return",
        "function",
        "e",
        "i",
        "g",
    ];
    static CALL: LazyLock<Option<Regex>> =
        LazyLock::new(|| regex(r"(?:^|[^.\w$])([A-Za-z_$][\w$]*)\(").ok());
    let Some(re) = CALL.as_ref() else {
        return Vec::new();
    };
    let defined: Vec<String> = sources
        .iter()
        .flat_map(|(_, t)| crate::tools::guard::definitions(t))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(prompt) {
        let Some(m) = c.get(1) else { continue };
        let name = m.as_str().to_string();
        if crate::tools::guard::PY_BUILTINS.contains(&name.as_str())
            || JS_AND_WORDS.contains(&name.as_str())
            || defined.contains(&name)
            || out.contains(&name)
            || only_in_quoted_command(prompt, &name)
        {
            continue;
        }
        out.push(name);
    }
    out
}

/// Functions, methods and classes the request asks to add, by a name
/// written as a call or in backticks (`peek()`, `` `slug` ``), with the
/// file it names for them (the first named after, else the last before).
pub fn asked_definitions(prompt: &str) -> Vec<(String, Option<String>)> {
    static ADD: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)(?:add|write|create|implement|define)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:function|method|class)\s+(?:named\s+|called\s+)?`?([A-Za-z_$][A-Za-z0-9_$]*)(?:`|\()").ok()
    });
    if !holds_any(prompt, &["function", "method", "class"]) {
        return Vec::new();
    }
    let (Some(add), Some(file)) = (ADD.as_ref(), SOURCE_FILE.as_ref()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for c in add.captures_iter(prompt) {
        let Some(name) = c.get(1) else {
            continue;
        };
        let after = file.find(&prompt[name.end()..]);
        let before = file.find_iter(&prompt[..name.start()]).last();
        let named = after
            .or(before)
            .map(|f| f.as_str().trim_start_matches("./").to_string());
        if !out.iter().any(|(n, _)| n == name.as_str()) {
            out.push((name.as_str().to_string(), named));
        }
    }
    out
}

/// Whether `text` holds `code` (from `spelled_code`), spaces and the kind
/// of quotes aside.
pub fn has_code(text: &str, code: &str) -> bool {
    let norm = |t: &str| -> String {
        t.chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| if c == '\'' { '"' } else { c })
            .collect()
    };
    norm(text).contains(&norm(code))
}

/// The request, quoted for a harness message so a small model that lost
/// it has it again.
pub fn restate(prompt: &str) -> String {
    const MAX: usize = 1_500;
    let p = prompt.trim();
    let p = if p.len() > MAX {
        let mut end = MAX;
        while !p.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &p[..end])
    } else {
        p.to_string()
    };
    format!("The user's request: \"{p}\"")
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_the_request_makes_to_functions_no_file_defines() {
        let sources = vec![(
            "blog.py".to_string(),
            "def word_count(text):\n    return len(text.split())\n".to_string(),
        )];
        assert_eq!(
            undefined_calls(
                "I need slugify(title, max_length=60) in blog.py. Example: slugify(\"Hi, you\") == \"hi-you\"; it uses word_count(t) and len(t), like s.strip().",
                &sources
            ),
            vec!["slugify"]
        );
        assert!(undefined_calls("Run `python3 -c 'run(1)'` and fix blog.py", &sources).is_empty());
    }

    use super::*;

    #[test]
    fn files_a_message_says_to_leave_alone_are_found() {
        assert_eq!(
            hands_off("Only fix total() in shop/cart.py. Leave shop/prices.py alone for now."),
            vec!["shop/prices.py"]
        );
        assert_eq!(
            hands_off("don't touch `config.py`, fix app.py"),
            vec!["config.py"]
        );
        assert_eq!(hands_off("keep util.js as it is"), vec!["util.js"]);
        assert!(hands_off("Fix discount() in shop/prices.py").is_empty());
        assert!(hands_off("Leave a comment in cart.py").is_empty());
        assert!(only_what_it_names(
            "rename tmp in shop/catalog.py. Change nothing else."
        ));
        assert!(only_what_it_names("Only fix total() in shop/cart.py"));
        assert!(!only_what_it_names("Fix total() in shop/cart.py"));
    }

    #[test]
    fn a_definition_replaced_by_the_one_the_request_names_is_a_rename_it_implies() {
        let fmt = "def format_list(items):\n    return items\n";
        let renamed = fmt.replace("format_list", "format_items");
        assert!(
            unasked_removal(
                "in fmt.py, make the def line read def format_items(items):",
                fmt,
                &renamed
            )
            .is_empty()
        );
        // Asked to add it, the old one stays.
        assert_eq!(
            unasked_removal("Add format_items to fmt.py", fmt, &renamed),
            vec!["format_list"]
        );
    }

    #[test]
    fn how_to_questions_are_told_from_requests_and_other_questions() {
        assert!(asks_how(
            "I just cloned this. How do I run the project's tests?"
        ));
        assert!(asks_how("what command builds the docs?"));
        assert!(asks_how("How to install it"));
        assert!(!asks_how("How many tests are there?"));
        assert!(!asks_how("Fix the failing test in calc.py"));
    }

    #[test]
    fn a_change_that_takes_out_a_definition_the_request_did_not_name_is_told() {
        let before = "class Stack:\n    def push(self, x):\n        self.items.append(x)\n\n    def pop(self):\n        return self.items.pop()\n";
        let after = before.replace("pop", "peek");
        let add =
            "Add a method peek() to the Stack class: it returns the top item without removing it.";
        assert_eq!(unasked_removal(add, before, &after), vec!["pop"]);
        // Adding beside it takes nothing away.
        let beside = format!("{before}\n    def peek(self):\n        return self.items[-1]\n");
        assert!(unasked_removal(add, before, &beside).is_empty());
        // Asked to take it away, rename it, or naming it: not told.
        assert!(
            unasked_removal("Remove the pop method; add peek instead.", before, &after).is_empty()
        );
        assert!(unasked_removal("Rename pop to peek in stack.py", before, &after).is_empty());
        assert!(
            unasked_removal(
                "Make pop return the top item, as peek would",
                before,
                &after
            )
            .is_empty()
        );
    }

    #[test]
    fn additions_to_named_files_are_told_from_fixes() {
        assert!(adds_code(
            "Add a method peek() to the Stack class in stack.py."
        ));
        assert!(adds_code(
            "Please implement from_roman in src/lib.rs; the rules are in SPEC.md."
        ));
        assert!(adds_code("For post URLs I need slugify(title) in blog.py."));
        assert!(!adds_code("Fix the crash in report.py"));
        assert!(!adds_code("Add a --quiet flag"));
        assert!(!adds_code("What does cli.py print?"));
    }

    #[test]
    fn a_need_stated_for_a_named_file_asks_for_a_change() {
        assert!(asks_for_change(
            "I need parse_size(text) in units.py: \"2k\" is 2048."
        ));
        assert!(asks_for_change(
            "report.js should print totals with two decimals"
        ));
        assert!(asks_for_change(
            "We'd like median(xs) in stats.py to ignore None."
        ));
        assert!(asks_for_change("add a --quiet flag"));
        // A wish with no file to change, and a plain question, do not.
        assert!(!asks_for_change("I need to know what the default port is"));
        assert!(!asks_for_change(
            "What does cli.py print for an empty list?"
        ));
    }

    #[test]
    fn a_run_that_found_no_test_is_no_check() {
        assert!(ran_no_tests("\n----\nRan 0 tests in 0.000s\n\nOK\n"));
        assert!(ran_no_tests(
            "test result: ok. 0 passed; 0 failed; 0 ignored"
        ));
        assert!(ran_no_tests("===== no tests ran in 0.01s ====="));
        assert!(!ran_no_tests("Ran 3 tests in 0.01s\n\nOK\n"));
        assert!(!ran_no_tests("===== 2 passed in 0.02s ====="));
    }

    #[test]
    fn the_test_command_is_detected_from_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect_verify(dir.path()), None);
        std::fs::write(dir.path().join("calc.py"), "").unwrap();
        assert_eq!(detect_verify(dir.path()), None);
        std::fs::create_dir(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_calc.py"), "").unwrap();
        assert!(detect_verify(dir.path()).unwrap().starts_with("python3 -m"));
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts":{"test":"node test.js"}}"#,
        )
        .unwrap();
        assert_eq!(
            detect_verify(dir.path()).as_deref(),
            Some("npm test --silent")
        );
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
        assert_eq!(
            detect_verify(dir.path()).as_deref(),
            Some("cargo test --offline -q")
        );
    }

    #[test]
    fn npm_init_placeholder_is_not_a_test_script() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        )
        .unwrap();
        assert_eq!(detect_verify(dir.path()), None);
    }

    #[test]
    fn commands_quoted_in_a_request_are_found() {
        assert_eq!(
            named_command("Running `python3 report.py` crashes. Fix it.").as_deref(),
            Some("python3 report.py")
        );
        assert_eq!(
            named_command("`node test.js` fails. Fix the bug in clamp.js.").as_deref(),
            Some("node test.js")
        );
        assert_eq!(
            named_command("`cargo test` fails").as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            named_command("rename `calc_total` to `compute_total`"),
            None
        );
        assert_eq!(named_command("use `python3` please"), None);
        assert_eq!(named_command("no code here"), None);
    }

    #[test]
    fn requests_for_text_are_told_from_requests_for_changes() {
        for p in [
            "write a one-line commit message for this",
            "Write a commit message for these staged changes",
            "summarize",
            "Summarise the log",
            "explain this diff",
            "review this",
            "give me a short summary of what changed",
            "suggest a title for this PR",
            "write a commit message for the last change",
            "describe this fix in one line",
            "say hi",
            "Review calc.py for bugs and report each with its line",
            "check parse.py for anything wrong; do not change it",
            "look over util.js and list the bugs you find",
        ] {
            assert!(asks_for_text(p, false), "{p}");
        }
        for p in [
            "write a function reverse(s) in text.py",
            "Add a function reverse(s) to text.py.",
            "explain the bug and fix it",
            "review calc.py and update the docstrings",
            "write a summary to NOTES.md",
            "write the commit message into the file msg.txt",
            "make the tests pass",
            "format the top 20 items into a markdown table",
            "Could you add a function reverse to text.py?",
            "review calc.py for bugs and fix them",
            "find the bug in calc.py and repair it",
            "check that parse() handles blanks, and add a test",
            "look at calc.py: add() should round to cents",
        ] {
            assert!(!asks_for_text(p, false), "{p}");
        }
        // A question counts (the caller says when: text piped in)...
        assert!(asks_for_text("why does this fail?", true));
        // ...unless it asks for a change.
        assert!(!asks_for_text("can you fix this?", true));
        assert!(!asks_for_text("could you add a test for it?", true));
    }

    #[test]
    fn requests_about_tests_and_questions_are_told_apart() {
        assert!(mentions_tests("Fix the bug, then run the tests."));
        assert!(mentions_tests("The tests in test_stats.py fail."));
        assert!(!mentions_tests("Write a function that adds two numbers."));
        assert!(asks_for_fix(
            "The mean function in stats.py has a bug. Fix it."
        ));
        assert!(asks_for_fix("parse_date returns the wrong month"));
        assert!(!asks_for_fix("Add a function slugify to text.py"));
        assert!(!asks_for_fix("list the TODOs (prefix fixme: none)"));
        assert!(asks_for_tests(
            "Write unit tests for slugify in test_slug.py"
        ));
        assert!(!asks_for_tests(
            "The tests in test_stats.py fail. Fix the bug."
        ));
        assert!(is_test_file("test_stats.py") && is_test_file("tests/leap.rs"));
        assert!(is_test_file("src/clamp.test.js") && !is_test_file("stats.py"));
        assert!(is_question("How many functions are in shapes.py?"));
        assert!(is_question(
            "Which file defines parse_header? Answer with its path."
        ));
        assert!(!is_question("Add a function reverse(s) to text.py."));
    }

    #[test]
    fn summaries_of_common_runners() {
        let unittest_ok = "....\n----------------------------------------------------------------------\nRan 4 tests in 0.001s\n\nOK\n";
        assert_eq!(test_summary(unittest_ok, true), "4 passed");
        let unittest_fail = "F..\n======\nFAIL: test_mean (test_stats.StatsTest)\n----\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n";
        assert_eq!(test_summary(unittest_fail, false), "1 of 3 failing");
        let mixed = "Ran 5 tests in 0.001s\n\nFAILED (failures=1, errors=2, skipped=1)\n";
        assert_eq!(
            test_summary(mixed, false),
            "3 of 5 failing (1 failure, 2 errors)"
        );
        let errors = "Ran 1 test in 0.001s\n\nFAILED (errors=1)\n";
        assert_eq!(test_summary(errors, false), "1 of 1 failing (1 error)");
        let pytest = "F.\n=== 1 failed, 1 passed in 0.02s ===\n";
        assert_eq!(test_summary(pytest, false), "1 failed, 1 passed");
        let cargo = "test result: FAILED. 2 passed; 1 failed; 0 ignored\n";
        assert_eq!(test_summary(cargo, false), "1 failed, 2 passed");
        // Unit tests, an integration file and doc-tests: the sum.
        let binaries = "test result: ok. 0 passed; 0 failed; 0 ignored\ntest result: ok. 3 passed; 0 failed; 0 ignored\ntest result: ok. 0 passed; 0 failed; 0 ignored\n";
        assert_eq!(test_summary(binaries, true), "3 passed");
        assert_eq!(test_summary("boom", false), "failing");
    }

    #[test]
    fn a_failure_is_trimmed_to_what_matters() {
        let root = Path::new("/work/ws");
        let out = "F..\n======================================================================\nFAIL: test_mean (test_stats.StatsTest.test_mean)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/work/ws/test_stats.py\", line 12, in test_mean\n    self.assertEqual(mean([2, 4, 6]), 4)\n  File \"/usr/lib/python3.12/unittest/case.py\", line 885, in assertEqual\n    assertion_func(first, second, msg=msg)\nAssertionError: 6.0 != 4\n\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n";
        let t = trim_failure(out, root, 30);
        assert!(t.contains("FAIL: test_mean"), "{t}");
        assert!(t.contains("File \"./test_stats.py\", line 12"), "{t}");
        assert!(t.contains("self.assertEqual(mean([2, 4, 6]), 4)"), "{t}");
        assert!(t.contains("AssertionError: 6.0 != 4"), "{t}");
        assert!(!t.contains("unittest/case.py"), "{t}");
        assert!(!t.contains("assertion_func"), "{t}");
        assert!(!t.contains("====="), "{t}");
        let node = "node:assert:90\n  throw new AssertionError(obj);\n  ^\n\nAssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n0 !== 10\n\n    at Object.<anonymous> (/work/ws/test.js:7:8)\n";
        let t = trim_failure(node, root, 40);
        assert!(
            t.contains("0 !== 10") && t.contains("(./test.js:7:8)"),
            "{t}"
        );
    }

    #[test]
    fn a_compiler_error_keeps_its_place_and_code_and_repeats_fold() {
        let root = Path::new("/work/ws");
        let block = |line: u32, col: u32| {
            format!(
                "error[E0277]: the type `str` cannot be indexed by `usize`\n  --> src/lib.rs:{line}:{col}\n   |\n{line} |         if s[i] == 'I' {{\n   |            ^ string indices are ranges of `usize`\n   |\n   = help: the trait `SliceIndex<str>` is not implemented for `usize`\n\n"
            )
        };
        let mut out = String::from(
            "warning: unused variable: `n`\n --> src/lib.rs:3:9\n  |\n3 |     let n = 0;\n  |         ^ help: prefix it\n\n",
        );
        for (l, c) in [(41, 33), (44, 12), (48, 20)] {
            out.push_str(&block(l, c));
        }
        out.push_str("error[E0308]: mismatched types\n  --> src/lib.rs:60:5\n   |\n60 |     n\n   |     ^ expected `Option<u32>`, found integer\n\nerror: could not compile `roman` (lib) due to 4 previous errors\n");
        // Long enough that nothing is kept whole for being short.
        let t = trim_failure(&out, root, 20);
        assert!(t.contains("--> src/lib.rs:41:33"), "{t}");
        assert!(t.contains("41 |         if s[i] == 'I' {"), "{t}");
        assert!(t.contains("= help: the trait"), "{t}");
        assert!(
            t.contains("(the same error at 2 more place(s): src/lib.rs:44:12, src/lib.rs:48:20)"),
            "{t}"
        );
        assert_eq!(t.matches("cannot be indexed").count(), 1, "{t}");
        assert!(
            t.contains("--> src/lib.rs:60:5") && t.contains("expected `Option<u32>`"),
            "{t}"
        );
        assert!(!t.contains("unused variable"), "{t}");
        assert!(t.contains("could not compile"), "{t}");
        // Output with no such diagnostic is as it was.
        let plain = "FAILED test_x\nAssertionError: 1 != 2\n";
        assert_eq!(
            fold_compiler_errors(plain),
            vec![
                ("FAILED test_x".to_string(), false),
                ("AssertionError: 1 != 2".to_string(), false)
            ]
        );
    }

    #[test]
    fn a_runaway_reply_is_seen_as_it_streams() {
        let block =
            "def main():\n    parser = argparse.ArgumentParser()\n    greet(args.name)\n\n\n";
        let mut w = RunawayWatch::default();
        let mut stopped_at = None;
        for i in 0..40 {
            if let Some(how) = w.push(block, false) {
                assert_eq!(how, REPEATING);
                stopped_at = Some(i);
                break;
            }
        }
        let at = stopped_at.expect("never stopped");
        assert!((5..12).contains(&at), "{at}");
        assert!(runaway(&format!("x = 1{}", " ".repeat(500))));
        // A long file with repeated short lines is not a runaway.
        let file: String = (0..300)
            .map(|i| format!("    assert f({i}) == {}\n", i * 2))
            .collect();
        assert!(!runaway(&file));
        assert!(!runaway(&"}\n".repeat(5)));
    }

    #[test]
    fn a_reply_that_hands_the_message_back_is_stopped_early() {
        let message = "initials() in names.py still raises NotImplementedError. \
            Implement it following SPEC.md, and keep full_name as it is; \
            the badges use both.\n\nnames.py:\n```\ndef initials(name):\n    raise NotImplementedError\n```";
        // Streamed in pieces, with its line breaks laid out differently.
        let echo = message.replace("\n\n", "\n");
        let mut w = RunawayWatch::against(message);
        let mut at = None;
        for (i, piece) in echo.as_bytes().chunks(7).enumerate() {
            let piece = std::str::from_utf8(piece).unwrap_or("");
            if let Some(how) = w.push(piece, true) {
                assert_eq!(how, ECHOING);
                at = Some(i * 7);
                break;
            }
        }
        let at = at.expect("the echo was not stopped");
        assert!(at < 140, "stopped only at byte {at}");
        // An answer that opens otherwise, or quotes a little of the
        // message, runs on; so does the same text inside a tool call.
        for (reply, content) in [
            (format!("I will implement it. {message}"), true),
            (
                message.chars().take(100).collect::<String>() + " is what you asked.",
                true,
            ),
            (message.to_string(), false),
        ] {
            let mut w = RunawayWatch::against(message);
            assert_eq!(w.push(&reply, content), None, "{reply}");
        }
        // A short message is never taken for an echo.
        let mut w = RunawayWatch::against("Fix the bug in calc.py.");
        assert_eq!(w.push("Fix the bug in calc.py.", true), None);
    }

    #[test]
    fn arithmetic_in_an_answer_is_checked() {
        let wrong = "The function calculates 200 - 200 * 0.15 = 180. The result is 180.";
        assert_eq!(
            wrong_arithmetic(wrong),
            ["200 - 200 * 0.15 is 170, not 180"]
        );
        assert!(wrong_arithmetic("200 - 200 * 0.15 = 170.0, so 170").is_empty());
        assert_eq!(
            wrong_arithmetic("(212 - 32) * 5 / 9 = 90"),
            ["(212 - 32) * 5 / 9 is 100, not 90"]
        );
        // Not arithmetic: assignments, versions, dates, a lone number.
        assert!(wrong_arithmetic("x = 5, PORT = 8125, v1.2 = 3, 2026-11-30 = today").is_empty());
        assert!(wrong_arithmetic("`a == b` and 3 = 3").is_empty());
        // A correct computation grounds its result.
        assert!(
            ungrounded_numbers("200 - 200 * 0.15 = 170", "discount(200, gold): 0.15").is_empty()
        );
        assert_eq!(
            ungrounded_numbers("It is 180", "discount(200, gold): 0.15"),
            ["180"]
        );
    }

    #[test]
    fn rust_panics_keep_their_message_and_point_at_code() {
        let out = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored\n\nrunning 3 tests\ntest centuries ... FAILED\n\nfailures:\n\n---- centuries stdout ----\n\nthread 'centuries' (74) panicked at tests/leap.rs:12:5:\nassertion failed: is_leap(2000)\nnote: run with `RUST_BACKTRACE=1`\n\ntest result: FAILED. 1 passed; 2 failed; 0 ignored\n";
        let t = trim_failure(out, Path::new("/w"), 30);
        assert!(t.contains("assertion failed: is_leap(2000)"), "{t}");
        assert!(!t.contains("test result: ok."), "{t}");
        assert_eq!(bare_locations(out), [("tests/leap.rs".to_string(), 12)]);
        let go = "--- FAIL: TestLeap (0.00s)\n    leap_test.go:12: is_leap(2000) = false\n";
        assert_eq!(bare_locations(go), [("leap_test.go".to_string(), 12)]);
    }

    #[test]
    fn the_call_a_question_asks_about() {
        let c = asked_call("What does discount(200, 'gold') return? Answer with the number only.")
            .unwrap();
        assert_eq!(
            (c.name.as_str(), c.shown.as_str(), c.json.as_str()),
            ("discount", "200, 'gold'", "[200,\"gold\"]")
        );
        let c =
            asked_call("What does `normalize([1, 2.5], True, {'a': None}, (3,))` give?").unwrap();
        assert_eq!(c.json, "[[1,2.5],true,{\"a\":null},[3]]");
        // Not literals: nothing is run.
        for q in [
            "What does f(os.system('rm -rf /')) return?",
            "What does f(x) return?",
            "What does f('a\\'); import os') return?",
            r#"What does f(''' ' ''' F"""{__import__('os')}""" """'" """) return?"#,
            "What does f(F'{1}') return?",
            "What does area([]['filter']['constructor']('x')()) return?",
            "What does f(1 + 2) return?",
            "What does f('a' 'b') return?",
        ] {
            assert!(asked_call(q).is_none(), "{q}");
        }
        // Not a question about a value.
        assert!(asked_call("Rename f(1) to g").is_none());
    }

    #[test]
    fn error_text_as_old_string_is_answered_with_the_line_to_change() {
        let fail = "Traceback (most recent call last):\n  File \"./greet.py\", line 18, in <module>\n    main()\n  File \"./greet.py\", line 5, in greet\n    for _ in range(times):\n             ^^^^^^^^^^^\nTypeError: 'str' object cannot be interpreted as an integer";
        assert_eq!(
            last_frame(fail),
            Some(("greet.py".into(), 5, "for _ in range(times):".into()))
        );
        let told = error_not_code(
            "TypeError: 'str' object cannot be interpreted as an integer",
            fail,
        )
        .unwrap();
        assert!(
            told.contains("raised at greet.py:5: `for _ in range(times):`"),
            "{told}"
        );
        assert_eq!(error_not_code("for _ in range(count):", fail), None);
        // A code line of the traceback is code, not the error.
        assert_eq!(error_not_code("for _ in range(times):", fail), None);
        assert_eq!(
            error_not_code(
                "assert!(is_leap(2000));",
                "thread 'c' panicked at tests/leap.rs:12:5:\nassertion failed: is_leap(2000)\ntests/leap.rs:12: assert!(is_leap(2000));"
            ),
            None
        );
        let rust = "thread 'c' panicked at tests/leap.rs:12:5:\nassertion failed: is_leap(2000)\ntests/leap.rs:12: assert!(is_leap(2000));";
        assert_eq!(
            last_frame(rust),
            Some(("tests/leap.rs".into(), 12, "assert!(is_leap(2000));".into()))
        );
    }

    #[test]
    fn answers_that_must_give_a_number_or_a_value() {
        assert!(wants_number("How many functions does it define?"));
        assert!(wants_number(
            "What does f(1) return? Answer with the number only."
        ));
        assert!(!wants_number("Where is parse defined?"));
        assert!(states_value("It returns 170.", "170.0"));
        assert!(!states_value("It returns the discounted price.", "170.0"));
        assert!(states_value("It gives hello-world", "'hello-world'"));
    }

    #[test]
    fn the_test_files_a_failure_runs_through() {
        let fail = "FAIL: test_f_to_c (test_temps.TempsTest.test_f_to_c)\nTraceback (most recent call last):\n  File \"./test_temps.py\", line 11, in test_f_to_c\n    self.assertAlmostEqual(f_to_c(212), 100)\nAssertionError: 194.2 != 100";
        assert_eq!(failing_test_files(fail), ["test_temps.py"]);
        assert_eq!(
            failing_test_files("tests/leap.rs:12: assert!(is_leap(2000));"),
            ["tests/leap.rs"]
        );
        assert!(failing_test_files("  File \"./app.py\", line 3").is_empty());
    }

    #[test]
    fn cutting_the_input_to_fit_hides_the_symptom() {
        let before = "def parse(text):\n    return strptime(text, FMT)\n";
        let cut = "def parse(text):\n    text = text[:-1]\n    return strptime(text, FMT)\n";
        assert_eq!(
            hides_symptom(before, cut),
            Some("cuts part of the input away")
        );
        let replaced =
            "def parse(text):\n    text = text.replace('5', '')\n    return strptime(text, FMT)\n";
        assert!(hides_symptom(before, replaced).is_some());
        let trimmed = "def parse(text):\n    text = text.strip()\n    return strptime(text, FMT)\n";
        assert_eq!(hides_symptom(before, trimmed), None);
        let fixed = "def parse(text):\n    return strptime(text, '%Y-%m-%d')\n";
        assert_eq!(hides_symptom(before, fixed), None);
    }

    #[test]
    fn claims_and_tool_talk_are_recognised() {
        assert!(claims_tests_pass("I fixed it and the tests now pass."));
        assert!(claims_tests_pass("All tests passed."));
        assert!(!claims_tests_pass("The function returns 4."));
        assert!(claims_it_works(
            "I checked the implementation against the provided examples and checks, and it passed."
        ));
        assert!(claims_it_works(
            "The function now correctly handles the pluralization rules."
        ));
        assert!(claims_it_works("All tests passed."));
        assert!(!claims_it_works(
            "I changed pluralize; 3 checks still fail."
        ));
        assert!(!claims_it_works("The function returns 4."));
        let tools = ["read_file", "list_dir"];
        assert!(talks_about_tools(
            "The read_file tool was called with the path shapes.py.",
            &tools
        ));
        assert!(talks_about_tools("read_file(path=\"shapes.py\")", &tools));
        assert!(!talks_about_tools("shapes.py defines 4 functions.", &tools));
        assert!(non_answer("The task is done."));
        let read = "DEFAULT_PORT = 8125\nTIMEOUT_SECONDS = 30\n";
        assert_eq!(
            ungrounded_numbers("It listens on port 5000, timeout 120s.", read),
            ["5000", "120"]
        );
        assert!(ungrounded_numbers("Port 8125, timeout 30 s, 3 retries.", read).is_empty());
        assert!(non_answer("I have completed the task."));
        assert!(!non_answer("It returns 170.0."));
    }

    #[test]
    fn only_a_rename_to_a_name_made_from_the_old_one_is_refused() {
        let fail = "TypeError: bad";
        let file = "def f(times):\n    return max(times)\n";
        assert!(rename_only_refusal("times", "times_int", file, fail, "fix it").is_some());
        // A name the file already uses is a real change.
        assert!(rename_only_refusal("max", "min", "x = min(1)\nmax(2)", fail, "fix it").is_none());
        // Not made from the old name: a real change (int for float).
        assert!(rename_only_refusal("float", "int", file, fail, "fix it").is_none());
        assert!(rename_only_refusal("times", "times_int", file, fail, "rename times").is_none());
        assert!(rename_only_refusal("times(", "x", file, fail, "fix it").is_none());
    }

    #[test]
    fn renaming_a_function_the_request_names_is_caught_unless_asked() {
        let ask = "Give format_list in fmt.py an optional parameter sep";
        assert_eq!(
            unasked_rename(
                ask,
                "def format_list(items):",
                "def format_list_with_sep(items, sep=', '):"
            ),
            Some(("format_list".into(), "format_list_with_sep".into()))
        );
        assert_eq!(
            unasked_rename(
                ask,
                "def format_list(items):",
                "def format_list(items, sep=', '):"
            ),
            None
        );
        assert_eq!(
            unasked_rename(
                "rename format_list to join_items",
                "def format_list(items):",
                "def join_items(items):"
            ),
            None
        );
        assert_eq!(unasked_rename(ask, "def helper():", "def helper2():"), None);
        assert_eq!(
            unasked_rename(ask, "format_list", "format_list_with_sep"),
            Some(("format_list".into(), "format_list_with_sep".into()))
        );
    }

    #[test]
    fn definitions_a_request_asks_to_add_come_with_their_file() {
        let found = asked_definitions(
            "Add a method peek() to the Stack class in stack.py: it returns the top item.",
        );
        assert_eq!(found, [("peek".to_string(), Some("stack.py".to_string()))]);
        let found = asked_definitions(
            "In strings.js, add a function capitalize(s) that upper-cases the first letter.",
        );
        assert_eq!(
            found,
            [("capitalize".to_string(), Some("strings.js".to_string()))]
        );
        assert!(asked_definitions("Fix the bug in clamp.js").is_empty());
        // "the add function in": a word after "function", not a name.
        assert!(asked_definitions("fix the add function in calc.py").is_empty());
        assert_eq!(
            asked_definitions("Add a function named `slug` to text.py")[0].0,
            "slug"
        );
    }

    #[test]
    fn code_the_request_spells_out_is_found_whatever_the_quotes() {
        let p = "Give format_list an optional parameter sep with the default \", \", and make report.py call it with sep=\" | \". Set retries = 3 and debug=True, unless a == b.";
        let found = spelled_code(p);
        let spelled: Vec<(Option<&str>, &str)> = found
            .iter()
            .map(|(f, c)| (f.as_deref(), c.as_str()))
            .collect();
        assert_eq!(
            spelled,
            [
                (Some("report.py"), "sep=\" | \""),
                (Some("report.py"), "retries = 3"),
                (Some("report.py"), "debug=True")
            ]
        );
        assert_eq!(spelled_code("set timeout=30")[0].0, None);
        assert!(has_code(
            "print(format_list(FRUITS, sep=' | '))",
            "sep=\" | \""
        ));
        assert!(!has_code("print(format_list(FRUITS))", "sep=\" | \""));
        assert!(!has_code("RETRIES=3", "retries = 3"));
        assert!(spelled_code("if x >= 3 or y <= 2").is_empty());
    }

    #[test]
    fn a_fix_that_hides_the_failure_is_told_from_one_that_removes_it() {
        let before = "def total(rows):\n    s = 0\n    for r in rows:\n        s += r[\"ammount\"]\n    return s\n";
        let caught = before.replace(
            "        s += r[\"ammount\"]\n",
            "        try:\n            s += r[\"ammount\"]\n        except KeyError:\n            pass\n",
        );
        assert_eq!(hides_symptom(before, &caught), Some("catches the error"));
        let defaulted = before.replace("r[\"ammount\"]", "r.get(\"ammount\", 0)");
        assert_eq!(
            hides_symptom(before, &defaulted),
            Some("puts a default in place of the missing value")
        );
        let js = "const t = task.tags;\n";
        assert_eq!(
            hides_symptom(js, "const t = task.tags || [];\n"),
            Some("puts a default in place of the missing value")
        );
        let deleted = before.replace("        s += r[\"ammount\"]\n", "");
        assert_eq!(hides_symptom(before, &deleted), Some("deletes code"));
        let fixed = before.replace("ammount", "amount");
        assert_eq!(hides_symptom(before, &fixed), None);
    }

    #[test]
    fn failing_tests_are_recognised_however_they_are_named() {
        for p in [
            "The tests in test_stats.py fail. Fix the bug.",
            "test_checkout.py has failures: fix the cause.",
            "There are failing tests in test_temps.py",
            "cargo test fails",
            "run the tests",
            "stats_test.go reports failures",
        ] {
            assert!(mentions_tests(p), "{p}");
        }
        for p in [
            "Add a test file",
            "fix the crash in app.py",
            "the latest version fails to start",
        ] {
            assert!(!mentions_tests(p), "{p}");
        }
    }

    #[test]
    fn a_document_to_follow_is_told_from_one_to_edit() {
        assert!(!asks_to_edit(
            "Implement from_roman in src/lib.rs; the rules are in SPEC.md.",
            "SPEC.md"
        ));
        assert!(!asks_to_edit(
            "Write the body of parse as described in docs/spec.md",
            "docs/spec.md"
        ));
        assert!(asks_to_edit(
            "Update SPEC.md with the new rule and fix parse in p.py",
            "SPEC.md"
        ));
        assert!(asks_to_edit(
            "add a section to docs/notes.md about it",
            "docs/notes.md"
        ));
    }

    #[test]
    fn a_request_put_as_a_question_is_a_request() {
        assert!(!is_question(
            "It prints 3 values, not 4. Can you fix movingAverage in stats.js?"
        ));
        assert!(!is_question(
            "could you please add a peek() method to Stack?"
        ));
        assert!(!is_question(
            "It blows up. Can you reproduce it, find out why and fix it?"
        ));
        assert!(is_question("Can you tell me what parse returns?"));
        assert_eq!(
            claimed_files("I edited `inventory/store.py` and updated the file util.py. Fixed it."),
            ["inventory/store.py", "util.py"]
        );
        assert!(claimed_files("The change is done.").is_empty());
        // A request that forbids every change is a question, whatever its
        // first word; one that only spares the tests is not.
        assert!(is_question(
            "In one sentence: what does total() return? Do not change any file."
        ));
        assert!(is_question(
            "Look at app.py and explain it, without changing anything."
        ));
        assert!(!is_question(
            "Fix the bug in a.py. Do not change the tests."
        ));
        assert!(is_question("What does `python3 a.py` print?"));
    }

    #[test]
    fn an_answer_is_held_to_the_output_it_quotes() {
        let printed = "Stand-ups: Tue 27, Wed 28\nTotal:   2";
        assert!(quotes_output(
            "It prints:\n```\nStand-ups: Tue 27, Wed 28\nTotal: 2\n```",
            printed
        ));
        assert!(!quotes_output(
            "It prints `Stand-ups: Tue 27, Wed 29` and Total: 2",
            printed
        ));
        assert!(!quotes_output("It prints the stand-up days.", printed));
        assert!(asks_to_create("Write tests in a new file test_x.py"));
        assert!(!asks_to_create("Why does app.py crash?"));
    }

    #[test]
    fn a_file_run_by_a_quoted_command_is_told_from_one_to_change() {
        let p = "The table in `node report.js` is one row short. Can you fix rows in table.js?";
        assert!(only_in_quoted_command(p, "report.js"));
        assert!(!only_in_quoted_command(p, "table.js"));
        let q = "`python3 app.py` crashes; fix app.py";
        assert!(!only_in_quoted_command(q, "app.py"));
        assert!(!only_in_quoted_command("fix `app.py`", "app.py"));
    }

    #[test]
    fn a_number_only_request_wants_a_bare_number() {
        assert!(asks_number_only("How many? Answer with the number only."));
        assert!(asks_number_only("Reply with just the number"));
        assert!(!asks_number_only("How many functions are there?"));
        assert!(is_bare_number("5"));
        assert!(is_bare_number("**5**"));
        assert!(is_bare_number("5 functions."));
        assert!(!is_bare_number("There are 5 functions: 2 * pi"));
        assert!(!is_bare_number("five"));
    }

    #[test]
    fn an_answer_that_repeats_the_templates_words_is_an_echo() {
        let template = include_str!("../../assets/llama/qwen2.5-coder-tools.jinja");
        for w in AFTER_TOOL_WORDS {
            assert!(template.contains(w), "the template no longer says {w:?}");
        }
        assert!(echoes_instruction(
            "That call is done; do not repeat it. If the task needs another step, call the next tool; if it is finished, answer the user."
        ));
        assert!(echoes_instruction("That call is done; do not repeat it.\n"));
        let copied = format!(
            "discount subtracts the percent.\n\n[the helper wrote no file]{}\n</tool_response>\nThat call is done; do not repeat it. If the task needs another step, call the next tool; if it is finished, answer the user.",
            crate::protocol::helper_session_note("20261207-180805-25cd27")
        );
        assert_eq!(without_echo(&copied), "discount subtracts the percent.");
        let cut = "I made the change.\n\n[agent task ran out of rounds before it finished: this is what it had written]";
        assert_eq!(without_echo(cut), "I made the change.");
        assert!(echoes_helper_note("The helper wrote no file."));
        assert!(echoes_helper_note("[the helper wrote: shop/catalog.py]"));
        assert!(!echoes_helper_note(
            "The helper wrote no file, but it found that discount subtracts.\nFix it with a percent."
        ));
        let plain = "Use `[x]` here.\n\n- a\n- b";
        assert_eq!(without_echo(plain), plain);
        assert!(!echoes_instruction(
            "That call is done; do not repeat it. The file lists 3000 numbered lines of lorem ipsum text."
        ));
        assert!(!echoes_instruction("The file is a list of lines."));
    }
}
