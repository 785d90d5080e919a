//! A review asked function by function. Asked to "review calc.py", a
//! small model answers for the whole file that it "is already in the
//! correct state" — for a file with a plain bug too. Asked about one
//! documented function alone ("does it do what its docstring says?", at
//! temperature 0), the same 1.5B model named the bug in 4 of 6 wrong
//! functions and called none of 4 right ones wrong (2026-12-07; with
//! "documentation and name" in the question, or asked to work through an
//! example first, it did worse). So before the model's first look, mm
//! asks that of each documented function of the files the request names,
//! one small request each, and gives the answers with the request; an
//! answer that leaves out a function found wrong gets mm's finding under
//! it.

use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;

/// The functions asked about in one request at most (a request each).
const MAX_FUNCTIONS: usize = 8;
/// A function longer than this is not asked about alone (the question
/// would cost more than it tells).
const MAX_LINES: usize = 80;
const SYSTEM: &str = "You review code. Reply with one line.";

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

/// The verdict of a one-line reply: Some(why) when it says the function
/// is wrong, None when it says it is right or cannot be read.
fn verdict(reply: &str) -> Option<String> {
    let line = reply
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))?;
    let t = line.trim_start_matches(['"', '\'', '*', '`', '-', ' ']);
    let lower = t.to_lowercase();
    let rest = lower.strip_prefix("no")?;
    // "no" as a word ("no:", "no,", "no -", "no."), not "not"/"none".
    if rest.chars().next().is_some_and(char::is_alphanumeric) {
        return None;
    }
    let why = t[2..]
        .trim_start_matches([':', ',', '.', '-', ' ', '"', '*'])
        .trim()
        .trim_end_matches(['"', '*'])
        .to_string();
    // The reply form copied as it was ("no: <the bug>").
    let why = if why.starts_with('<') {
        String::new()
    } else {
        why
    };
    Some(if why.is_empty() {
        "it does not do what its documentation says".to_string()
    } else {
        why.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(300)
            .collect()
    })
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
        let mut asked: Vec<(String, String, usize, String)> = Vec::new();
        for file in harness::named_files(&st.prompt) {
            let Some(text) = self.content_now(&file) else {
                continue;
            };
            for (name, line, code) in functions(&text) {
                if asked.len() < MAX_FUNCTIONS {
                    asked.push((file.clone(), name, line, code));
                }
            }
        }
        if asked.is_empty() {
            return None;
        }
        self.notice(
            Level::Info,
            format!(
                "asking the model about each of {} documented function(s) alone: does it do what its documentation says?",
                asked.len()
            ),
        );
        let mut lines = Vec::new();
        for (file, name, line, code) in asked {
            let lang = super::focus::fence_language(&file);
            let user = format!(
                "```{lang}\n{code}```\nDoes {name} do what its docstring says? Reply \"yes\" or \"no: <the bug>\"."
            );
            let reply = self
                .side_request_capped(SYSTEM, &user, 0.0, 120, cancel)
                .await;
            if cancel.is_cancelled() {
                return None;
            }
            let Some(reply) = reply else { continue };
            match verdict(&reply) {
                Some(why) => {
                    let f = Finding {
                        name,
                        file,
                        line,
                        why,
                    };
                    lines.push(format!("- {}: no: {}", f.place(), f.why));
                    st.review.push(f);
                }
                None => lines.push(format!("- {name} ({file}:{line}): looks right")),
            }
        }
        if lines.is_empty() {
            return None;
        }
        let found = st.review.len();
        self.notice(
            Level::Info,
            if found == 0 {
                "asked alone, the model found nothing wrong in any function".to_string()
            } else {
                format!(
                    "asked alone, the model found {found} function(s) wrong: {}",
                    st.review
                        .iter()
                        .map(Finding::place)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        Some(format!(
            "\n\n[mm asked about each documented function alone whether it does what its documentation says:\n{}\nUse what holds in your answer, with file and line.]",
            lines.join("\n")
        ))
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
            "mm: asked about each function alone, the model found:\n{}",
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
    fn a_reply_says_no_with_its_reason_or_anything_else() {
        assert_eq!(
            verdict("no: it subtracts the percent as an amount").as_deref(),
            Some("it subtracts the percent as an amount")
        );
        assert_eq!(
            verdict("No, it ignores qty.").as_deref(),
            Some("it ignores qty.")
        );
        assert!(verdict("**No**").is_some());
        assert_eq!(
            verdict("no: <the bug>").as_deref(),
            Some("it does not do what its documentation says")
        );
        assert_eq!(verdict("yes"), None);
        assert_eq!(verdict("Yes, it does."), None);
        assert_eq!(verdict("None of the lines is wrong."), None);
        assert_eq!(verdict("Not sure."), None);
        assert_eq!(verdict(""), None);
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
