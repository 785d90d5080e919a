//! Mechanical work done by tools: a rename. Asked to rename a name the
//! workspace defines, a small model adds the new name and leaves the old
//! one in use, or retypes call sites wrong. mm does the rename itself
//! before the model's first look: a word-bounded replace in the file that
//! defines the name and in the files that refer to that file (they import
//! it or name its module), each a write of mm's own; then the checks run
//! and the model hears what changed.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;

static RENAME: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // rename (the function) `old` (in x.py) to `new`
        r"(?i)\brename\s+(?:the\s+)?(?:\w+\s+){0,2}?`?([A-Za-z_$][\w$]*)`?(?:\s*\(\))?\s+(?:(?:in|from|of)\s+`?[\w./-]+`?\s+)?(?:to|as|into)\s+`?([A-Za-z_$][\w$]*)`?",
        // change the name of `old` to `new`
        r"(?i)\bchange\s+the\s+name\s+of\s+(?:the\s+)?(?:\w+\s+){0,2}?`?([A-Za-z_$][\w$]*)`?\s+(?:(?:in|from)\s+`?[\w./-]+`?\s+)?to\s+`?([A-Za-z_$][\w$]*)`?",
    ]
    .iter()
    .filter_map(|p| harness::regex(p).ok())
    .collect()
});

/// Words that follow "rename" but are not the name.
const NOT_NAMES: &[&str] = &[
    "function",
    "class",
    "method",
    "constant",
    "variable",
    "module",
    "file",
    "it",
    "this",
    "that",
    "the",
    "a",
    "an",
    "field",
    "attribute",
    "parameter",
    "argument",
];

/// The rename a request asks for: (old, new).
pub fn asked_rename(prompt: &str) -> Option<(String, String)> {
    // Both patterns need "rename" or "name": most requests have neither.
    if !harness::holds_any(prompt, &["name"]) {
        return None;
    }
    RENAME.iter().find_map(|re| {
        let c = re.captures(prompt)?;
        let old = c.get(1)?.as_str().to_string();
        let new = c.get(2)?.as_str().to_string();
        let plain = |w: &str| !NOT_NAMES.contains(&w.to_lowercase().as_str());
        (plain(&old) && plain(&new) && old != new).then_some((old, new))
    })
}

fn word(name: &str) -> Option<Regex> {
    harness::regex(&format!(r"(^|[^\w$]){}($|[^\w$])", regex::escape(name))).ok()
}

/// Whether `text` defines `name`: a function, class, or a top-level
/// constant (`NAME = …`).
pub fn defines(text: &str, name: &str) -> bool {
    guard::definitions(text).iter().any(|d| d == name)
        || text.lines().any(|l| {
            l.strip_prefix(name).is_some_and(|rest| {
                rest.trim_start().starts_with(['=', ':']) && !rest.trim_start().starts_with("==")
            })
        })
}

/// `text` with every whole-word `old` made `new`, and how many.
pub fn replace_word(text: &str, old: &str, new: &str) -> (String, usize) {
    let Some(re) = word(old) else {
        return (text.to_string(), 0);
    };
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    // Line by line: matches never span lines, and adjacent matches (the
    // regex eats one delimiter on each side) are caught by a second pass.
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut cur = line.to_string();
        loop {
            let mut changed = false;
            let next = re.replace_all(&cur, |c: &regex::Captures| {
                changed = true;
                n += 1;
                format!(
                    "{}{new}{}",
                    c.get(1).map_or("", |m| m.as_str()),
                    c.get(2).map_or("", |m| m.as_str())
                )
            });
            let next = next.into_owned();
            if !changed {
                break;
            }
            cur = next;
        }
        out.push_str(&cur);
    }
    (out, n)
}

/// The module a file is imported as: its stem (`pkg/units.js` → `units`).
fn module_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name)
}

/// The files to change for renaming `old` to `new`: the one source file
/// that defines `old`, and the files that use it and name that file's
/// module. None when not exactly one file defines it, or `new` is in use.
pub fn rename_plan(
    sources: &[(String, String)],
    old: &str,
    new: &str,
) -> Option<Vec<(String, String, String)>> {
    let holders: Vec<&(String, String)> = sources.iter().filter(|(_, t)| defines(t, old)).collect();
    let [(home, _)] = holders.as_slice() else {
        return None;
    };
    let re_new = word(new)?;
    if sources.iter().any(|(_, t)| re_new.is_match(t)) {
        return None;
    }
    let stem = module_stem(home);
    let stem_re = word(stem)?;
    let mut out = Vec::new();
    for (path, text) in sources {
        if path != home && !stem_re.is_match(text) {
            continue;
        }
        let (after, n) = replace_word(text, old, new);
        if n > 0 {
            out.push((path.clone(), text.clone(), after));
        }
    }
    (!out.is_empty()).then_some(out)
}

impl Agent {
    /// After mm's own mechanical writes (a rename, an extraction): the
    /// checks run, and the turn is settled when every write went in and
    /// nothing fails. Returns what to say of the checks.
    pub(super) async fn check_own_writes(
        &mut self,
        st: &mut TurnState,
        all_written: bool,
        cancel: &CancellationToken,
    ) -> String {
        let said = match self.run_checks(st, cancel).await {
            None => st
                .tests
                .as_ref()
                .map(|t| format!(" `{}` passes ({}).", t.command, t.summary))
                .unwrap_or_default(),
            Some((command, out)) => {
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!(" `{command}` fails now:\n{lines}\n")
            }
        };
        if all_written && st.tests.as_ref().is_none_or(|t| t.passed != Some(false)) {
            st.settled = true;
        }
        said
    }

    /// A request to rename a name the workspace defines: done here, word
    /// by word, before the model's first look. Returns what to tell the
    /// model, or None when nothing was changed.
    pub(super) async fn mechanical_rename(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.on(Behaviour::Rename) || st.question || st.mutations > 0 {
            return None;
        }
        let (old, new) = asked_rename(&st.prompt)?;
        let plan = rename_plan(&self.sources_now(), &old, &new)?;
        let mut changed: Vec<String> = Vec::new();
        for (path, _, after) in &plan {
            let label = format!("rename {old} to {new} in {path}");
            if self
                .own_write_with(st, path, after.clone(), &label, true, cancel)
                .await
            {
                changed.push(path.clone());
            }
        }
        if changed.is_empty() {
            return None;
        }
        self.notice(
            Level::Info,
            format!("renamed {old} to {new} in {}", changed.join(", ")),
        );
        let checks = self
            .check_own_writes(st, changed.len() == plan.len(), cancel)
            .await;
        let end = if st.settled {
            "No tool call is needed: check that nothing else uses the old name and say in a few sentences what changed."
        } else {
            "Finish the request with tool calls: nothing may use the old name."
        };
        // Hunks the user rejected keep the old name: said as such, not
        // as "every use".
        let kept: Vec<String> = st
            .own_rejected
            .iter()
            .filter(|(p, _)| changed.contains(p))
            .map(|(p, said)| format!(" In {p}: {said}"))
            .collect();
        let how = if kept.is_empty() {
            "every whole-word use"
        } else {
            "the uses the user accepted"
        };
        Some(format!(
            "\n\n[mm renamed {old} to {new} ({how}) in {}.{}{checks}]\n{end}",
            changed.join(", "),
            kept.concat()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rename_a_request_asks_for() {
        let cases = [
            (
                "Rename the function calc_total in pricing.py to compute_total, and update every caller.",
                Some(("calc_total", "compute_total")),
            ),
            (
                "rename `toCelsius` to `fahrenheitToCelsius` everywhere",
                Some(("toCelsius", "fahrenheitToCelsius")),
            ),
            (
                "Please rename class StockItem to InventoryItem",
                Some(("StockItem", "InventoryItem")),
            ),
            (
                "Change the name of the constant WORK_DAY_HOURS to STANDARD_DAY_HOURS",
                Some(("WORK_DAY_HOURS", "STANDARD_DAY_HOURS")),
            ),
            ("Fix the bug in app.py", None),
        ];
        for (prompt, want) in cases {
            let got = asked_rename(prompt);
            assert_eq!(
                got.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                want,
                "{prompt}"
            );
        }
    }

    #[test]
    fn a_rename_changes_whole_words_in_the_files_that_use_the_module() {
        let sources = vec![
            ("pricing.py".to_string(), "RATE = 2\n\ndef calc_total(xs):\n    return sum(xs) * RATE\n\ndef calc_totals(x):\n    return [calc_total(x)]\n".to_string()),
            ("cart.py".to_string(), "from pricing import calc_total\n\nprint(calc_total([1]), 'calc_total here')\n".to_string()),
            ("other.py".to_string(), "def f(calc_total):\n    return calc_total\n".to_string()),
        ];
        let plan = rename_plan(&sources, "calc_total", "compute_total").unwrap();
        let files: Vec<&str> = plan.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(files, ["pricing.py", "cart.py"]);
        assert!(plan[0].2.contains("def compute_total(xs)"));
        assert!(plan[0].2.contains("def calc_totals(x)"));
        assert!(plan[0].2.contains("[compute_total(x)]"));
        assert!(plan[1].2.contains("from pricing import compute_total\n"));
        assert_eq!(replace_word("a(a,a)", "a", "b"), ("b(b,b)".to_string(), 3));
        // A constant is a definition too; a name already in use is not a plan.
        assert!(defines("WORK_DAY_HOURS = 8\n", "WORK_DAY_HOURS"));
        assert!(rename_plan(&sources, "calc_total", "RATE").is_none());
        assert!(rename_plan(&sources, "missing", "x").is_none());
    }
}
