//! Reading what checks printed: test summaries, compiler errors folded with
//! their place, failures trimmed to what a small model needs, the failing
//! test files.

use super::*;

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
pub(super) static DIAG_HEAD: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"^(error|warning)(\[[A-Z]+\d+\])?: ").ok());

/// Lines that go on a diagnostic's block: its place, the code it marks
/// (`41 |     s[i]`, `   |  ^ …`) and its notes (`= help: …`).
pub(super) fn diag_line(line: &str) -> bool {
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
pub(super) fn fold_compiler_errors(output: &str) -> Vec<(String, bool)> {
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
