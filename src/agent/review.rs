//! A review, held to checks that run. Asked to "review calc.py", a small
//! model answers for the whole file that it "is already in the correct
//! state" — for a file with a plain bug too — and asked about one
//! function alone ("does it do what its docstring says?") it said yes to
//! `return price + qty` under "unit price times quantity". What it does
//! better is write checks from a function's documentation with the code
//! hidden; run against the code, they fail where the code does not do
//! what its documentation says (or where a check is wrong: the model is
//! told to judge which). So before the model's first look, mm has checks
//! written for each documented Python or JavaScript function of the files
//! the request names, one small request each, runs them in the fence, and
//! gives the results with the request; an answer that leaves out a
//! function whose checks failed gets them under it.

use tokio_util::sync::CancellationToken;

use super::asserts::{self, python_module};
use super::examples::{self, Example, Lang};
use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;

/// The functions asked about in one request at most (a request each).
const MAX_FUNCTIONS: usize = 8;
/// A function longer than this is not asked about alone (the question
/// would cost more than it tells).
const MAX_LINES: usize = 80;
/// A function, its first line, and the checks written for it.
type Checked = (String, usize, Vec<Example>);

/// Checks kept for one function.
const CHECKS_EACH: usize = 4;
/// Tokens a reply of checks may take.
const CHECKS_CAP: u64 = 300;

/// A function the model, asked about it alone, found wrong.
#[derive(Clone, Debug)]
pub(super) struct Finding {
    pub name: String,
    pub file: String,
    pub line: usize,
    pub why: String,
}

impl Finding {
    fn place(&self) -> String {
        format!("{} ({}:{})", self.name, self.file, self.line)
    }
}

/// The functions of `text` with their first line (1-based) and code, in
/// the file's order.
fn functions(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for name in guard::definitions(text) {
        let Some(block) = guard::block_of(text, &name) else {
            continue;
        };
        let head = block
            .lines()
            .find(|l| !l.trim_start().starts_with('@'))
            .unwrap_or("");
        if !is_function(head) || block.lines().count() < 2 || block.lines().count() > MAX_LINES {
            continue;
        }
        let Some(at) = text.find(&block) else {
            continue;
        };
        // Without documentation there is nothing to hold the code to.
        if super::asserts::doc_of(text, &name).trim().is_empty() {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        out.push((name, line, block));
    }
    out
}

/// A definition line that starts a function or a method.
fn is_function(line: &str) -> bool {
    let t = line.trim_start();
    let t = t
        .strip_prefix("export ")
        .or_else(|| t.strip_prefix("pub "))
        .unwrap_or(t);
    let t = t.strip_prefix("async ").unwrap_or(t);
    t.starts_with("def ")
        || t.starts_with("function ")
        || t.starts_with("function*")
        || t.starts_with("fn ")
        || t.starts_with("func ")
        || (t.contains("=>") && (t.starts_with("const ") || t.starts_with("let ")))
}

/// What the model is shown of a function to write checks from: its
/// documentation and its first line, not its code.
fn doc_view(text: &str, name: &str, block: &str, lang: Lang) -> String {
    let head = block
        .lines()
        .find(|l| !l.trim_start().starts_with('@'))
        .unwrap_or("");
    let doc = super::asserts::doc_of(text, name);
    match lang {
        Lang::Python => {
            let indent: String = head.chars().take_while(|c| c.is_whitespace()).collect();
            let doc = doc.trim().replace('\n', &format!("\n{indent}    "));
            format!("{head}\n{indent}    \"\"\"{doc}\"\"\"\n{indent}    ...")
        }
        _ => {
            let comments: String = doc
                .trim()
                .lines()
                .map(|l| format!("// {}\n", l.trim()))
                .collect();
            format!("{comments}{head}\n  // ...\n}}")
        }
    }
}

/// The request for checks of one function from its documentation.
fn checks_request(view: &str, name: &str, lang: Lang) -> String {
    let (shape, fence) = match lang {
        Lang::Python => (format!("  assert {name}(ARGS) == EXPECTED"), "python"),
        _ => (
            format!("  assert.deepStrictEqual({name}(ARGS), EXPECTED);"),
            "js",
        ),
    };
    format!(
        "A function is documented like this (its code is not shown):\n```{fence}\n{view}\n```\nWrite {CHECKS_EACH} checks of what its documentation says it returns: plain values, and the edge of every rule it states (a limit itself, zero). One per line:\n{shape}\nReply with only those lines in one ```{fence} block."
    )
}

impl Agent {
    /// A review of named source files: each function asked about alone,
    /// the answers to tell the model with the request.
    pub(super) async fn review_by_function(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.on(Behaviour::Review) || !st.text_only || !harness::asks_review(&st.prompt) {
            return None;
        }
        // Each function as the model is shown it: its documentation and
        // first line (Python and JavaScript; the file read once).
        let mut asked: Vec<(String, String, usize, String)> = Vec::new();
        for file in harness::named_files(&st.prompt) {
            let Some(lang) = Lang::of(&file).filter(|l| *l != Lang::Rust) else {
                continue;
            };
            let Some(text) = self.content_now(&file) else {
                continue;
            };
            for (name, line, code) in functions(&text) {
                if asked.len() < MAX_FUNCTIONS {
                    let view = doc_view(&text, &name, &code, lang);
                    asked.push((file.clone(), name, line, view));
                }
            }
        }
        if asked.is_empty() {
            return None;
        }
        if !self.tools.sandbox.fence().is_on() {
            return None;
        }
        self.notice(
            Level::Info,
            format!(
                "having checks written from the documentation of {} function(s) alone, to run against their code",
                asked.len()
            ),
        );
        let by_file = self.ask_doc_checks(asked, cancel).await?;
        let lines = self.run_doc_checks(st, by_file, cancel).await;
        if lines.is_empty() {
            return None;
        }
        self.notice(
            Level::Info,
            if st.review.is_empty() {
                "the checks from the documentation pass for every function".to_string()
            } else {
                format!(
                    "checks from the documentation fail for: {}",
                    st.review
                        .iter()
                        .map(Finding::place)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        Some(format!(
            "\n\n[mm had checks written from each function's documentation alone (not its code) and ran them against the code:\n{}\nA failing check means a bug, or a wrong check: judge each against the documentation and the code, and say which in your answer, with file and line.]",
            lines.join("\n")
        ))
    }

    /// For each function, checks written from its documentation alone,
    /// by file; None when cancelled.
    async fn ask_doc_checks(
        &mut self,
        asked: Vec<(String, String, usize, String)>,
        cancel: &CancellationToken,
    ) -> Option<Vec<(String, Vec<Checked>)>> {
        let mut by_file: Vec<(String, Vec<Checked>)> = Vec::new();
        for (file, name, line, view) in asked {
            let Some(lang) = Lang::of(&file) else {
                continue;
            };
            let ask = checks_request(&view, &name, lang);
            let reply = self
                .side_request_cut(asserts::system(lang), &ask, 0.0, CHECKS_CAP, true, cancel)
                .await;
            if cancel.is_cancelled() {
                return None;
            }
            let mut checks = reply
                .map(|r| asserts::parsed_checks(&r, std::slice::from_ref(&name)))
                .unwrap_or_default();
            checks.truncate(CHECKS_EACH);
            match by_file.iter_mut().find(|(f, _)| *f == file) {
                Some((_, list)) => list.push((name, line, checks)),
                None => by_file.push((file, vec![(name, line, checks)])),
            }
        }
        Some(by_file)
    }

    /// The checks run against the code, file by file: a line a function
    /// for the model, the functions whose checks failed noted.
    async fn run_doc_checks(
        &mut self,
        st: &mut TurnState,
        by_file: Vec<(String, Vec<Checked>)>,
        cancel: &CancellationToken,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        for (file, funcs) in by_file {
            let Some(lang) = Lang::of(&file) else {
                continue;
            };
            let names: Vec<String> = funcs.iter().map(|(n, _, _)| n.clone()).collect();
            let checks: Vec<Example> = funcs.iter().flat_map(|(_, _, c)| c.clone()).collect();
            if checks.is_empty() {
                continue;
            }
            let script = match lang {
                Lang::Python => examples::python_script(&[python_module(&file)], &names, &checks),
                _ => examples::js_script(&file, &names, &checks),
            };
            let Some((code, out)) = self
                .run_request_checks(&examples::command(lang, &script), cancel)
                .await
            else {
                continue;
            };
            if code == Some(3) {
                continue;
            }
            for (name, line, mine) in funcs {
                if mine.is_empty() {
                    continue;
                }
                let failed: Vec<&str> = out
                    .lines()
                    .filter(|l| l.starts_with("FAILED: ") && l.contains(&format!("{name}(")))
                    .collect();
                if failed.is_empty() {
                    lines.push(format!(
                        "- {name} ({file}:{line}): {} check(s) pass",
                        mine.len()
                    ));
                    continue;
                }
                let why = failed
                    .iter()
                    .take(2)
                    .map(|l| l.trim_start_matches("FAILED: ").trim().to_string())
                    .collect::<Vec<_>>()
                    .join("; ");
                let f = Finding {
                    name,
                    file: file.clone(),
                    line,
                    why,
                };
                lines.push(format!(
                    "- {}: {} of {} check(s) fail: {}",
                    f.place(),
                    failed.len(),
                    mine.len(),
                    f.why
                ));
                st.review.push(f);
            }
        }
        lines
    }

    /// The functions found wrong that the answer does not name, as a note
    /// under it.
    pub(super) fn review_left_out(&self, st: &TurnState) -> Option<String> {
        let missing: Vec<&Finding> = st
            .review
            .iter()
            .filter(|f| !crate::patterns::has_word(&st.answer, &[f.name.as_str()]))
            .collect();
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "mm: checks written from the documentation alone fail for:\n{}",
            missing
                .iter()
                .map(|f| format!("- {}: {}", f.place(), f.why))
                .collect::<Vec<_>>()
                .join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_sees_the_documentation_and_first_line_not_the_code() {
        let py = "def line_total(price, qty):\n    \"\"\"Unit price times quantity.\"\"\"\n    return price + qty\n";
        let block = guard::block_of(py, "line_total").unwrap();
        let view = doc_view(py, "line_total", &block, Lang::Python);
        assert!(view.starts_with("def line_total(price, qty):"), "{view}");
        assert!(view.contains("Unit price times quantity."), "{view}");
        assert!(!view.contains("price + qty"), "{view}");
        let js =
            "// True for leap years.\nfunction isLeapYear(year) {\n  return year % 4 === 0;\n}\n";
        let block = guard::block_of(js, "isLeapYear").unwrap();
        let view = doc_view(js, "isLeapYear", &block, Lang::JavaScript);
        assert!(
            view.contains("// True for leap years.\nfunction isLeapYear(year) {"),
            "{view}"
        );
        assert!(!view.contains("% 4"), "{view}");
    }

    #[test]
    fn functions_are_found_with_their_line_and_code() {
        let py = "\"\"\"Prices.\"\"\"\n\nRATE = 0.2\n\n\ndef discount(price, percent):\n    \"\"\"Reduce.\"\"\"\n    return price - percent\n\n\nclass Cart:\n    def total(self):\n        \"\"\"The sum.\"\"\"\n        return 1\n\n    def size(self):\n        return 0\n";
        let found = functions(py);
        let names: Vec<(&str, usize)> = found.iter().map(|(n, l, _)| (n.as_str(), *l)).collect();
        assert_eq!(names, vec![("discount", 6), ("total", 12)]);
        assert!(found[0].2.contains("return price - percent"));
        let js = "const A = 1;\n// The sum.\nfunction add(a, b) {\n  return a - b;\n}\n// Half of x.\nconst half = (x) => {\n  return x / 2;\n};\nfunction bare() {\n  return 1;\n}\n";
        let names: Vec<String> = functions(js).into_iter().map(|(n, _, _)| n).collect();
        assert_eq!(names, vec!["add", "half"]);
    }
}
