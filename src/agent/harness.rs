//! What the harness knows without the model: the project's test command,
//! the command a request says fails, what a failure's output comes down
//! to, and whether an answer is one. Pure functions; the loop in
//! `agent` decides when to use them.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

pub(crate) use crate::patterns::{bytes_regex, has_word, holds_any, is_test_file, regex};

/// The command that runs the project's tests, when the workspace says
/// which: pytest or unittest for Python test files, `cargo test`,
/// `go test ./...`, `npm test` when package.json has a test script.
pub fn detect_verify(root: &Path) -> Option<String> {
    if root.join("Cargo.toml").is_file() {
        return Some("cargo test --offline -q".into());
    }
    if root.join("go.mod").is_file() {
        return Some("go test ./...".into());
    }
    // The workspace's own file, not through a link, and not a FIFO or a
    // device that would hang or fill memory.
    if let Ok(bytes) = crate::paths::read_regular(&root.join("package.json"), 1 << 20)
        && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes)
        && let Some(test) = v["scripts"]["test"].as_str()
        && !test.contains("no test specified")
    {
        return Some("npm test --silent".into());
    }
    if has_python_tests(root) {
        return Some(if python_has_pytest() {
            "python3 -m pytest -q -x --no-header -p no:cacheprovider".into()
        } else {
            "python3 -m unittest -q".into()
        });
    }
    None
}

fn has_python_tests(root: &Path) -> bool {
    // A plain walk, three levels deep: the ignore-aware walker compiles
    // every ignore file it meets, a megabyte of memory for one answer.
    fn look(dir: &Path, depth: u32, budget: &mut u32) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for e in entries.flatten() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_file()
                && name.ends_with(".py")
                && (name.starts_with("test_") || name.ends_with("_test.py"))
            {
                return true;
            }
            let skip = name.starts_with('.')
                || matches!(
                    name.as_ref(),
                    "node_modules" | "target" | "venv" | "__pycache__" | "build" | "dist"
                );
            if kind.is_dir() && !skip && depth > 0 && look(&e.path(), depth - 1, budget) {
                return true;
            }
        }
        false
    }
    look(root, 2, &mut 2_000)
}

/// Whether pytest is installed for the host's python3 (found outside the
/// workspace), seen on disk without running anything: nothing the
/// workspace holds (a `pytest.py`, a `python3` in `.venv/bin`) runs here,
/// outside the fence.
fn python_has_pytest() -> bool {
    static HAS: LazyLock<bool> = LazyLock::new(|| {
        let Some(python) =
            crate::sandbox::host::program("python3").and_then(|p| std::fs::canonicalize(p).ok())
        else {
            return false;
        };
        let mut libs: Vec<std::path::PathBuf> = python
            .parent()
            .and_then(Path::parent)
            .map(|prefix| prefix.join("lib"))
            .into_iter()
            .collect();
        if let Some(home) = std::env::var_os("HOME") {
            libs.push(Path::new(&home).join(".local/lib"));
        }
        libs.iter().any(|lib| has_pytest_under(lib))
    });
    *HAS
}

/// `lib/python3*/{site,dist}-packages/pytest` under `lib`.
fn has_pytest_under(lib: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(lib) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("python3")
            && ["site-packages", "dist-packages"]
                .iter()
                .any(|p| e.path().join(p).join("pytest").is_dir())
    })
}

/// Programs whose command line a request may quote as the thing that
/// fails (`python3 app.py` crashes, `cargo test` fails).
const RUNNERS: &[&str] = &[
    "python", "python3", "pytest", "node", "npm", "npx", "cargo", "go", "make", "ruby", "perl",
    "sh", "bash", "deno", "yarn", "pnpm", "java", "mvn", "gradle", "dotnet", "php",
];

/// The command a request quotes in backticks (or after "run"), when it
/// looks like one of the project's programs or test runners.
pub fn named_command(prompt: &str) -> Option<String> {
    static TICKS: LazyLock<Option<regex::bytes::Regex>> =
        LazyLock::new(|| bytes_regex(r"`((?-u:[^`\n]){2,200})`").ok());
    if !prompt.contains('`') {
        return None;
    }
    let re = TICKS.as_ref()?;
    re.captures_iter(prompt.as_bytes())
        .filter_map(|c| c.get(1))
        .filter_map(|m| std::str::from_utf8(m.as_bytes()).ok())
        .map(|m| m.trim().trim_start_matches("$ ").to_string())
        .find(|cmd| {
            let first = cmd.split_whitespace().next().unwrap_or("");
            (RUNNERS.contains(&first) || first.starts_with("./"))
                && cmd.split_whitespace().count() >= 2
                || matches!(first, "pytest" | "make")
        })
}

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
    let asked = question
        || holds_any(prompt, VERBS) && TEXT.as_ref().is_some_and(|r| r.is_match(prompt.as_bytes()));
    if !asked {
        return false;
    }
    let rest = match NOUN.as_ref() {
        Some(re) => re.replace_all(prompt, " ").into_owned(),
        None => prompt.to_string(),
    };
    !asks_for_fix(&rest) && !CHANGE.as_ref().is_some_and(|r| r.is_match(rest.as_bytes()))
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

/// How a test run ended, in a few words: `4 passed`, `1 failed, 3 passed`.
/// A test command's output that says no test ran at all.
pub fn ran_no_tests(output: &str) -> bool {
    test_summary(output, true) == "0 passed" || output.contains("no tests ran")
}

pub fn test_summary(output: &str, ok: bool) -> String {
    static PYTEST: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?m)^=*\s*((?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?)(?:, )?)+)").ok()
    });
    static UNITTEST: LazyLock<Option<Regex>> =
        LazyLock::new(|| regex(r"(?m)^Ran (\d+) tests?").ok());
    static UNITTEST_FAIL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?m)^FAILED \(((?:failures|errors)=\d+(?:, (?:failures|errors|skipped)=\d+)*)\)")
            .ok()
    });
    static CARGO: LazyLock<Option<Regex>> =
        LazyLock::new(|| regex(r"test result: \w+\. (\d+) passed; (\d+) failed").ok());
    // One `test result:` line per test binary (unit, each integration
    // file, doc-tests): the run is their sum.
    if let Some(re) = CARGO.as_ref()
        && re.is_match(output)
    {
        let (mut p, mut f) = (0u64, 0u64);
        for c in re.captures_iter(output) {
            p += c[1].parse::<u64>().unwrap_or(0);
            f += c[2].parse::<u64>().unwrap_or(0);
        }
        return if f == 0 {
            format!("{p} passed")
        } else {
            format!("{f} failed, {p} passed")
        };
    }
    if let Some(c) = PYTEST.as_ref().and_then(|r| r.captures_iter(output).last()) {
        return c[1].trim().trim_end_matches(',').to_string();
    }
    if let Some(c) = UNITTEST.as_ref().and_then(|r| r.captures(output)) {
        let n = &c[1];
        if ok {
            return format!("{n} passed");
        }
        if let Some(f) = UNITTEST_FAIL.as_ref().and_then(|r| r.captures(output)) {
            // `failures=1, errors=2`: 3 of them failing, and of which kind.
            let (mut failures, mut errors) = (0u64, 0u64);
            for part in f[1].split(", ") {
                match part.split_once('=') {
                    Some(("failures", k)) => failures = k.parse().unwrap_or(0),
                    Some(("errors", k)) => errors = k.parse().unwrap_or(0),
                    _ => {}
                }
            }
            let kinds = match (failures, errors) {
                (_, 0) => String::new(),
                (0, e) => format!(" ({e} error{})", if e == 1 { "" } else { "s" }),
                (f, e) => format!(
                    " ({f} failure{}, {e} error{})",
                    if f == 1 { "" } else { "s" },
                    if e == 1 { "" } else { "s" }
                ),
            };
            return format!("{} of {n} failing{kinds}", failures + errors);
        }
        return format!("{n} ran, failing");
    }
    if ok {
        "passed".into()
    } else {
        "failing".into()
    }
}

/// A compiler diagnostic's headline (`error[E0277]: …`, rustc's shape),
/// when the line after it gives its place (`  --> src/lib.rs:41:33`).
static DIAG_HEAD: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"^(error|warning)(\[[A-Z]+\d+\])?: ").ok());

/// Lines that go on a diagnostic's block: its place, the code it marks
/// (`41 |     s[i]`, `   |  ^ …`) and its notes (`= help: …`).
fn diag_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("--> ")
        || t.starts_with("::: ")
        || t.starts_with('|')
        || t.starts_with("= ")
        || t.split_once(" |")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        || t == "..."
}

/// The output's lines, each with whether it must be kept: a compiler
/// error's block (headline, place, marked code, notes) is kept whole, as
/// the place and the code are what a fix needs; an error whose headline
/// came before is folded into one line naming its places; warnings are
/// left out when there are errors.
fn fold_compiler_errors(output: &str) -> Vec<(String, bool)> {
    let lines: Vec<&str> = output.lines().collect();
    let head_at = |i: usize| {
        DIAG_HEAD.as_ref().is_some_and(|r| r.is_match(lines[i]))
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("--> "))
    };
    let heads: Vec<usize> = (0..lines.len()).filter(|&i| head_at(i)).collect();
    if heads.is_empty() {
        return lines.iter().map(|l| (l.to_string(), false)).collect();
    }
    let errors = heads.iter().any(|&i| lines[i].starts_with("error"));
    let mut out: Vec<(String, bool)> = Vec::new();
    // Headline -> (where its fold line goes in `out`, further places).
    let mut seen: Vec<(String, usize, Vec<String>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !heads.contains(&i) {
            out.push((lines[i].to_string(), false));
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < lines.len() && diag_line(lines[end]) && !heads.contains(&end) {
            end += 1;
        }
        let head = lines[i];
        let place = lines[i + 1]
            .trim_start()
            .trim_start_matches("--> ")
            .to_string();
        if head.starts_with("warning") && errors {
            // Not the failure: left out.
        } else if let Some((_, _, places)) = seen.iter_mut().find(|(h, _, _)| h == head) {
            places.push(place);
        } else {
            for l in lines[i..end].iter().take(12) {
                out.push((l.to_string(), true));
            }
            seen.push((head.to_string(), out.len(), Vec::new()));
        }
        i = end;
    }
    // The fold lines, from the last so the earlier places stay right.
    seen.sort_by_key(|(_, at, _)| std::cmp::Reverse(*at));
    for (_, at, places) in seen {
        if places.is_empty() {
            continue;
        }
        let shown: Vec<&str> = places.iter().take(6).map(String::as_str).collect();
        let more = if places.len() > shown.len() {
            ", …"
        } else {
            ""
        };
        out.insert(
            at,
            (
                format!(
                    "(the same error at {} more place(s): {}{more})",
                    places.len(),
                    shown.join(", ")
                ),
                true,
            ),
        );
    }
    out
}

/// The lines of a failing run that matter: failing test names, assertion
/// and error lines, traceback lines inside the workspace (with the code
/// line under each), the summary. At most `max` lines.
pub fn trim_failure(output: &str, root: &Path, max: usize) -> String {
    static KEEP: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)^(FAIL|ERROR|FAILED|failures:|---- |thread '.*' panicked|\s*(assert|expected|left|right|actual)(?-u:\b)|.*(Error|Exception|error\[|panicked at|AssertionError|Traceback)|E\s{2,}|test result:|Ran \d+ test|.*(?-u:\b)not ok(?-u:\b)|\s+at .*\.(js|ts|mjs):\d+)").ok()
    });
    let root_text = root.to_string_lossy();
    let (lines, forced): (Vec<String>, Vec<bool>) = fold_compiler_errors(output)
        .into_iter()
        .filter(|(l, _)| {
            let t = l.trim();
            !(t.len() > 8 && t.chars().all(|c| c == '=' || c == '-'))
        })
        .unzip();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut keep = forced;
    if lines.len() <= max / 2 {
        // Short enough to keep whole: the values a message names (`0 !==
        // 10`) are often on lines no pattern knows.
        keep.fill(true);
    }
    let mut skip_next = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if skip_next {
            // The code line under a frame outside the workspace.
            skip_next = false;
            if !t.starts_with("File \"") && !KEEP.as_ref().is_some_and(|r| r.is_match(line)) {
                keep[i] = false;
                continue;
            }
        }
        let frame = t.starts_with("File \"");
        let in_workspace = frame
            && !t.contains("/lib/python")
            && (t.contains(root_text.as_ref()) || !t.starts_with("File \"/"));
        if in_workspace {
            keep[i] = true;
            if let Some(k) = keep.get_mut(i + 1) {
                *k = true;
            }
        } else if frame {
            keep[i] = false;
            skip_next = true;
        } else if t.starts_with("test result: ok.") {
            // A test binary with nothing failing says nothing.
            keep[i] = false;
        } else if KEEP.as_ref().is_some_and(|r| r.is_match(line)) {
            keep[i] = true;
            // Rust puts the assertion's message on the line after.
            if t.contains("panicked at")
                && let Some(k) = keep.get_mut(i + 1)
            {
                *k = true;
            }
        }
    }
    let mut out: Vec<&str> = lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(l, _)| *l)
        .collect();
    if out.is_empty() {
        out = lines.iter().rev().take(max).rev().copied().collect();
    }
    if out.len() > max {
        let skip = out.len() - max;
        out.drain(..skip);
    }
    out.iter()
        .map(|l| {
            let l = l.replace(root_text.as_ref(), ".");
            if l.chars().count() > 300 {
                l.chars().take(300).collect::<String>() + "…"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Workspace places a failure points at without showing their code:
/// Rust's `panicked at tests/leap.rs:12:5`, Go's `leap_test.go:12:`.
/// Relative paths only (a frame in the workspace); each once, in order.
pub fn bare_locations(output: &str) -> Vec<(String, usize)> {
    static AT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?:panicked at |^\s+)([A-Za-z0-9_][\w./-]*\.(?:rs|go)):(\d+)(?::\d+)?:").ok()
    });
    let Some(re) = AT.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<(String, usize)> = Vec::new();
    for line in output.lines() {
        if let Some(c) = re.captures(line)
            && let (Some(p), Some(n)) = (c.get(1), c.get(2).and_then(|n| n.as_str().parse().ok()))
        {
            let place = (p.as_str().to_string(), n);
            if !out.contains(&place) {
                out.push(place);
            }
        }
    }
    out
}

/// The innermost place in the workspace a failure points at, with its
/// code line: a Python frame `File "./greet.py", line 5` and the line
/// under it, or a `path:line: code` line mm quoted under a panic.
pub fn last_frame(failure: &str) -> Option<(String, usize, String)> {
    static PY: LazyLock<Option<Regex>> =
        LazyLock::new(|| regex(r#"^\s*File "(\./[^"]+|[^/"][^"]*)", line (\d+)"#).ok());
    static QUOTED: LazyLock<Option<Regex>> =
        LazyLock::new(|| regex(r"^([A-Za-z0-9_][\w./-]*\.\w+):(\d+): (.+)$").ok());
    let lines: Vec<&str> = failure.lines().collect();
    let mut found = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = PY.as_ref().and_then(|r| r.captures(line)) {
            let path = c[1].trim_start_matches("./").to_string();
            let code = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
            if let Ok(n) = c[2].parse() {
                found = Some((path, n, code.to_string()));
            }
        } else if let Some(c) = QUOTED.as_ref().and_then(|r| r.captures(line))
            && let Ok(n) = c[2].parse()
        {
            found = Some((c[1].to_string(), n, c[3].trim().to_string()));
        }
    }
    found
}

/// The workspace test files a failure's frames run through (Python
/// `File "./test_x.py"` lines, or quoted `path:line:` places).
pub fn failing_test_files(failure: &str) -> Vec<String> {
    static FILE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r#"(?m)(?:File "(?:\./)?([^"/][^"]*)"|^(?:\./)?([\w./-]+\.\w+):\d+:)"#).ok()
    });
    let Some(re) = FILE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(failure) {
        if let Some(p) = c.get(1).or_else(|| c.get(2)) {
            let p = p.as_str().to_string();
            if is_test_file(&p) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
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

/// The answer says tests ran or pass ("the tests now pass", "all tests
/// passed"), to be checked against what actually ran.
pub fn claims_tests_pass(text: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(tests?|test suite)(?-u:\b)(?-u:[^.\n]){0,40}(?-u:\b)(now )?(pass|passes|passed|passing|succeed|succeeds|succeeded|are green)(?-u:\b)|(?-u:\b)(ran|run|running) the tests(?-u:\b)").ok()
    });
    holds_any(text, &["test"]) && RE.as_ref().is_some_and(|r| r.is_match(text.as_bytes()))
}

/// The answer says the change works: tests or checks pass, "it
/// works", "correctly handles". Checked against the checks mm ran from
/// the request, which may say otherwise.
pub fn claims_it_works(text: &str) -> bool {
    static RE: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
        bytes_regex(r"(?i)(?-u:\b)(checks?|examples?|assertions?|cases?)(?-u:\b)(?-u:[^.\n]){0,40}(?-u:\b)(now )?(pass|passes|passed|passing|succeed|succeeds|succeeded|hold)(?-u:\b)|(?-u:\b)(it|this|they|function|code|implementation|change|fix)(?-u:\b)(?-u:[^.\n]){0,30}(?-u:\b)(now )?(works|worked|passes|passed)(?-u:\b)|(?-u:\b)(works|working) (correctly|as expected|as described|as specified)(?-u:\b)|(?-u:\b)correctly (handles|implements|returns|computes|produces)(?-u:\b)").ok()
    });
    claims_tests_pass(text) || RE.as_ref().is_some_and(|r| r.is_match(text.as_bytes()))
}

/// An answer that reports the tool calls instead of answering: "the
/// read_file tool was called with…", "I called list_dir".
pub fn talks_about_tools(text: &str, tools: &[&str]) -> bool {
    let lower = text.to_lowercase();
    if lower.trim().is_empty() {
        return false;
    }
    let names_a_tool = tools.iter().any(|t| lower.contains(t));
    if !names_a_tool {
        return false;
    }
    static CALLED: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)(?-u:\b)(was|were|is|has been) (called|invoked|executed)(?-u:\b)|(?-u:\b)(tool|function) call(?-u:\b)|(?-u:\b)the (tool|function) (returned|was)(?-u:\b)|(?-u:\b)called (the )?\w+ (tool|function)(?-u:\b)").ok()
    });
    let about_calls = CALLED.as_ref().is_some_and(|r| r.is_match(&lower));
    about_calls || (lower.len() < 400 && lower.contains("(") && lower.contains("path"))
}

/// An answer that reports the work as done instead of giving what a
/// question asked for: "The task is done.", "I have completed the task."
pub fn non_answer(text: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)^[^A-Za-z0-9_]*(the )?(task|request|job|work)( is| has been| was)? (done|complete|completed|finished)[^A-Za-z0-9_]*$|^[^A-Za-z0-9_]*(i have|i've|i) (completed|finished|done) (the|this|your) (task|request)[^A-Za-z0-9_]*$|^[^A-Za-z0-9_]*(done|completed|finished)[^A-Za-z0-9_]*$").ok()
    });
    holds_any(text, &["done", "complet", "finished"])
        && RE.as_ref().is_some_and(|r| r.is_match(text.trim()))
}

/// Numbers of two or more digits an answer gives that appear nowhere in
/// `evidence` (what the turn read): a small model answering a question
/// about the code invents ports and limits it never saw.
pub fn ungrounded_numbers(answer: &str, evidence: &str) -> Vec<String> {
    static NUM: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"[0-9]{2,}(?:\.[0-9]+)?").ok());
    let two_digits = answer
        .as_bytes()
        .windows(2)
        .any(|w| w.iter().all(u8::is_ascii_digit));
    if !two_digits {
        return Vec::new();
    }
    let Some(re) = NUM.as_ref() else {
        return Vec::new();
    };
    // A result the answer computes and shows, correctly, is grounded in
    // the numbers it was computed from.
    let computed: Vec<f64> = arithmetic(answer)
        .into_iter()
        .filter(|(_, claimed, value)| (claimed - value).abs() <= 1e-6 * value.abs().max(1.0))
        .map(|(_, claimed, _)| claimed)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(answer) {
        if m.as_str()
            .parse::<f64>()
            .is_ok_and(|n| computed.contains(&n))
        {
            continue;
        }
        let glued = answer[..m.start()]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if glued {
            continue;
        }
        let n = m.as_str();
        let whole = n.split('.').next().unwrap_or(n);
        let seen = regex(&format!(r"\b{}\b", regex::escape(whole)))
            .map(|r| r.is_match(evidence))
            .unwrap_or(true);
        if !seen && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// The arithmetic an answer shows (`200 - 200 * 0.15 = 180`): each
/// expression, the result it claims, and the right result. A small
/// model reads the code correctly and then gets the sum wrong.
pub fn arithmetic(answer: &str) -> Vec<(String, f64, f64)> {
    static EQ: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(
            r"([0-9(][0-9. \t()+\-*/×÷]*[0-9)])[ \t]*=[ \t]*(-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?)",
        )
        .ok()
    });
    if !answer.contains('=') {
        return Vec::new();
    }
    let Some(re) = EQ.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in re.captures_iter(answer) {
        let (Some(expr), Some(claim)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let expr = expr.as_str().trim();
        let glued = answer[..c.get(0).map_or(0, |m| m.start())]
            .chars()
            .next_back()
            .is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.');
        let operators = expr
            .char_indices()
            .filter(|&(i, ch)| matches!(ch, '+' | '*' | '/' | '×' | '÷') || (ch == '-' && i > 0))
            .count();
        if glued || operators == 0 {
            continue;
        }
        let (Some(value), Ok(claimed)) = (
            Calc::new(expr).eval(),
            claim.as_str().replace(',', "").parse::<f64>(),
        ) else {
            continue;
        };
        out.push((expr.to_string(), claimed, value));
    }
    out
}

/// The wrong sums among an answer's arithmetic, as "`expr` is X, not Y".
pub fn wrong_arithmetic(answer: &str) -> Vec<String> {
    arithmetic(answer)
        .into_iter()
        .filter(|(_, claimed, value)| (claimed - value).abs() > 1e-6 * value.abs().max(1.0))
        .map(|(expr, claimed, value)| {
            format!("{expr} is {}, not {}", number(value), number(claimed))
        })
        .collect()
}

/// A number as a person writes it: no `.0`, at most six decimals.
fn number(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// A calculator for the four operations and parentheses.
struct Calc {
    chars: Vec<char>,
    at: usize,
}

impl Calc {
    fn new(expr: &str) -> Self {
        Calc {
            chars: expr.chars().filter(|c| !c.is_whitespace()).collect(),
            at: 0,
        }
    }

    fn eval(mut self) -> Option<f64> {
        let v = self.sum()?;
        (self.at == self.chars.len() && v.is_finite()).then_some(v)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn sum(&mut self) -> Option<f64> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<f64> {
        let mut v = self.factor()?;
        while let Some(op @ ('*' | '/' | '×' | '÷')) = self.peek() {
            self.at += 1;
            let r = self.factor()?;
            v = if matches!(op, '*' | '×') {
                v * r
            } else {
                v / r
            };
        }
        Some(v)
    }

    fn factor(&mut self) -> Option<f64> {
        match self.peek()? {
            '-' => {
                self.at += 1;
                Some(-self.factor()?)
            }
            '(' => {
                self.at += 1;
                let v = self.sum()?;
                (self.peek()? == ')').then(|| self.at += 1)?;
                Some(v)
            }
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    self.at += 1;
                }
                self.chars[start..self.at]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .ok()
            }
        }
    }
}

pub use crate::tools::probe::AskedCall;

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
struct Literals<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Literals<'a> {
    fn new(s: &'a str) -> Self {
        Literals {
            s: s.as_bytes(),
            at: 0,
        }
    }

    fn all(mut self) -> Option<Vec<serde_json::Value>> {
        let v = self.items(None)?;
        self.ws();
        (self.at == self.s.len()).then_some(v)
    }

    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Comma-separated values up to `close` (or the end).
    fn items(&mut self, close: Option<u8>) -> Option<Vec<serde_json::Value>> {
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

    fn value(&mut self) -> Option<serde_json::Value> {
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

/// Watches a reply as it streams for a runaway: the same block of text
/// over and over, a long run of whitespace (a small model inside a
/// tool call writes thousands of tokens of them, minutes on a CPU), or
/// the user's message handed back word for word (hundreds of tokens, a
/// minute and more on a CPU, and nothing in it the model can use).
#[derive(Default)]
pub struct RunawayWatch {
    text: String,
    checked: usize,
    /// The opening of the message a reply must not repeat, its
    /// whitespace folded; empty when the message is too short to tell.
    echo: String,
    /// The reply's text (not its tool calls), whitespace folded, while
    /// it could still be an echo.
    said: Option<String>,
}

/// How much of a message a reply must repeat, in order, to be an echo.
const ECHO_CHARS: usize = 120;

/// What a runaway was, for the notice and the model.
pub const REPEATING: &str = "the same text over and over";
pub const ECHOING: &str = "the request handed back word for word";

fn fold_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl RunawayWatch {
    /// A watch that also stops a reply opening with `message`'s first
    /// words, when it has enough of them to tell.
    pub fn against(message: &str) -> Self {
        let folded = fold_space(message);
        let echo = if folded.chars().count() >= ECHO_CHARS {
            folded.chars().take(ECHO_CHARS).collect()
        } else {
            String::new()
        };
        Self {
            said: (!echo.is_empty()).then(String::new),
            echo,
            ..Self::default()
        }
    }

    /// Adds streamed text (`content`: the reply's words, not a tool
    /// call's arguments); what the runaway is, once the reply has run away.
    pub fn push(&mut self, delta: &str, content: bool) -> Option<&'static str> {
        if content && let Some(said) = self.said.as_mut() {
            said.push_str(delta);
            let folded = fold_space(said);
            if folded.chars().count() >= self.echo.chars().count() {
                if folded.starts_with(&self.echo) {
                    return Some(ECHOING);
                }
                self.said = None;
            } else if !self.echo.starts_with(folded.as_str()) && !folded.is_empty() {
                self.said = None;
            }
        }
        self.text.push_str(delta);
        if self.text.len() < self.checked + 256 {
            return None;
        }
        self.checked = self.text.len();
        runaway(&self.text).then_some(REPEATING)
    }
}

/// The end of `text` repeats one block (16 to 1,000 bytes) at least six
/// times in a row, or is 400 bytes of whitespace.
pub fn runaway(text: &str) -> bool {
    let b = text.as_bytes();
    let n = b.len();
    if n >= 400 && b[n - 400..].iter().all(u8::is_ascii_whitespace) {
        return true;
    }
    const TIMES: usize = 6;
    (16..=1000).any(|len| {
        n >= len * TIMES && {
            let last = &b[n - len..];
            (2..=TIMES).all(|k| &b[n - k * len..n - (k - 1) * len] == last)
        }
    })
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

/// An edit that renames a definition the request names, when the request
/// does not ask for a rename: the old name and the new one.
pub fn unasked_rename(prompt: &str, old: &str, new: &str) -> Option<(String, String)> {
    let lower = prompt.to_lowercase();
    if lower.contains("rename") || lower.contains("call it ") && lower.contains(" instead") {
        return None;
    }
    let ident = |t: &str| {
        let t = t.trim();
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    // A bare name replaced by another: a rename too.
    let (before, after) = if ident(old) && ident(new) {
        (vec![old.trim().to_string()], vec![new.trim().to_string()])
    } else {
        (
            crate::tools::guard::definitions(old),
            crate::tools::guard::definitions(new),
        )
    };
    let gone: Vec<&String> = before.iter().filter(|d| !after.contains(d)).collect();
    let added: Vec<&String> = after.iter().filter(|d| !before.contains(d)).collect();
    let ([gone], [added]) = (gone.as_slice(), added.as_slice()) else {
        return None;
    };
    let named = Regex::new(&format!(r"(?-u:\b){}(?-u:\b)", regex::escape(gone))).ok()?;
    named
        .is_match(prompt)
        .then(|| ((*gone).clone(), (*added).clone()))
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
/// What mm's chat template for local models says after each tool result
/// (`assets/llama/qwen2.5-coder-tools.jinja`): small models copy it as
/// their answer.
pub const AFTER_TOOL_WORDS: &[&str] = &[
    "That call is done; do not repeat it.",
    "If the task needs another step, call the next tool; if it is finished, answer the user.",
];

/// An answer that is only mm's own instructions repeated back: not an
/// answer (a 1.5B model ended three turns in a row with the template's
/// words after a long read).
pub fn echoes_instruction(answer: &str) -> bool {
    let mut rest = answer.trim().to_string();
    let mut found = false;
    for w in AFTER_TOOL_WORDS {
        if rest.contains(w) {
            found = true;
            rest = rest.replace(w, "");
        }
    }
    found && rest.trim().chars().filter(|c| c.is_alphanumeric()).count() < 20
}

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
        assert!(!echoes_instruction(
            "That call is done; do not repeat it. The file lists 3000 numbered lines of lorem ipsum text."
        ));
        assert!(!echoes_instruction("The file is a list of lines."));
    }
}
