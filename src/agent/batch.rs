//! Judging a batch of tool calls whole before any of it runs, and the
//! memory of what failed last round. Pure functions.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::llm::{RawCall, ToolCall, ToolSpec};
use crate::tools;

/// A batch the agent cannot even answer: no id to attach a result to.
pub fn structural_error(calls: &[RawCall]) -> Option<String> {
    let mut seen = HashSet::new();
    for c in calls {
        let Some(id) = c.id.as_deref().filter(|s| !s.is_empty()) else {
            return Some(format!(
                "the server sent a tool call ({}) without an id",
                if c.name.is_empty() {
                    "no name"
                } else {
                    &c.name
                }
            ));
        };
        if !seen.insert(id) {
            return Some(format!(
                "the server sent two tool calls with the same id {id}"
            ));
        }
    }
    None
}

/// One call after validation: ready to run, or its error.
pub enum Checked {
    Ready(Map<String, Value>),
    Invalid(String),
}

/// Validates each call against the offered tools.
pub fn check_calls(calls: &[ToolCall], specs: &[ToolSpec]) -> Vec<Checked> {
    calls
        .iter()
        .map(|c| {
            if c.name.is_empty() {
                return Checked::Invalid("the call has no tool name".into());
            }
            let Some(spec) = specs.iter().find(|s| s.name == c.name) else {
                let names: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
                // The write tools are left out of a read-only session.
                if crate::toolname::edits(c.name.as_str())
                    && names.contains(&crate::toolname::ToolName::ReadFile.as_str())
                {
                    return Checked::Invalid(format!(
                        "{} not run: the sandbox is read-only: no file may be written in this session. Answer from what you read.",
                        c.name
                    ));
                }
                return Checked::Invalid(format!(
                    "there is no tool named {}; the tools are: {}",
                    c.name,
                    names.join(", ")
                ));
            };
            match tools::validate(spec, &c.arguments) {
                Ok(args) => Checked::Ready(args),
                Err(e) => Checked::Invalid(format!("{} not run: {e}", c.name)),
            }
        })
        .collect()
}

/// The identity of a call for "the same call again": its name and its
/// arguments as a canonical JSON object (key order does not matter).
pub fn call_key(name: &str, args: &Map<String, Value>) -> String {
    format!("{name} {}", sorted(&Value::Object(args.clone())))
}

/// The value with every object's keys in order, so the same call written
/// with its keys in another order gives the same key.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A hash of one executed call and its result, for cycle detection.
pub fn step_hash(key: &str, result: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    result.hash(&mut h);
    h.finish()
}

/// The length of a run of steps that the end of `history` repeats right
/// after itself (the same calls with the same results: nothing changes).
pub fn repeating_cycle(history: &[u64], max_len: usize) -> Option<usize> {
    (1..=max_len).find(|&k| {
        history.len() >= 2 * k
            && history[history.len() - k..] == history[history.len() - 2 * k..history.len() - k]
    })
}

/// The reply ends by announcing a step instead of taking it ("Let's fix
/// the bug.", "I will now run the tests:").
pub fn announces_next_step(text: &str) -> bool {
    let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return false;
    };
    if last.len() > 240 {
        return false;
    }
    let lower = last.to_lowercase();
    const OPENERS: &[&str] = &[
        "let's ",
        "let me ",
        "i will ",
        "i'll ",
        "i am going to ",
        "i'm going to ",
        "now i ",
        "next, i ",
        "next i ",
        "first, i ",
        "first i ",
    ];
    lower.ends_with(':')
        || OPENERS
            .iter()
            .any(|o| lower.starts_with(o) || lower.contains(&format!(". {o}")))
}

/// The reply says files were changed ("I fixed the bug", "has been
/// updated"); checked against what the turn actually wrote.
pub fn claims_a_change(text: &str) -> bool {
    // Every form needs one of these verbs: most replies have none, and
    // the regex is built only for one that does.
    const VERBS: &[&str] = &[
        "fixed",
        "updated",
        "changed",
        "modified",
        "corrected",
        "edited",
        "replaced",
        "added",
        "removed",
        "created",
        "rewrote",
        "renamed",
        "wrote",
        "written",
        "implemented",
    ];
    if !crate::patterns::holds_any(text, VERBS) {
        return false;
    }
    static CLAIM: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = CLAIM.get_or_init(|| {
        crate::agent::harness::regex(
            r"(?i)(?-u:\b)(i(?:'ve| have)?|we(?:'ve| have)?)(?-u:\s)+(?:now(?-u:\s)+|successfully(?-u:\s)+)?(fixed|updated|changed|modified|corrected|edited|replaced|added|removed|created|rewrote|renamed|wrote|written|implemented)(?-u:\b)|(?-u:\b)(has|have) been (fixed|updated|changed|modified|corrected|edited|replaced|added|removed|created|written|implemented|renamed)(?-u:\b)|(?-u:\b)and (fixed|updated|changed|corrected|modified|edited)(?-u:\b)",
        )
        .ok()
    });
    re.as_ref().is_some_and(|re| re.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(id: Option<&str>, name: &str) -> RawCall {
        RawCall {
            index: 0,
            id: id.map(str::to_string),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn missing_and_duplicate_ids_are_structural_errors() {
        assert!(structural_error(&[raw(None, "bash")]).is_some());
        assert!(structural_error(&[raw(Some("a"), "bash"), raw(Some("a"), "ls")]).is_some());
        assert!(structural_error(&[raw(Some("a"), "bash"), raw(Some("b"), "ls")]).is_none());
    }

    #[test]
    fn cycles_of_identical_steps_are_found() {
        assert_eq!(repeating_cycle(&[1, 2, 3, 1, 2, 3], 8), Some(3));
        assert_eq!(repeating_cycle(&[5, 1, 2, 1, 2], 8), Some(2));
        assert_eq!(repeating_cycle(&[7, 7], 8), Some(1));
        assert_eq!(repeating_cycle(&[1, 2, 3, 4], 8), None);
        assert_eq!(repeating_cycle(&[1, 2, 3, 1, 2, 4], 8), None);
        assert_eq!(repeating_cycle(&[], 8), None);
    }

    #[test]
    fn announcements_and_claims_are_recognised() {
        assert!(announces_next_step(
            "I have read the file. Let's fix the bug in the add function."
        ));
        assert!(announces_next_step("I will now run the tests:"));
        assert!(announces_next_step("Done reading.\nNext, I will edit it."));
        assert!(!announces_next_step("The tests pass: 3 of 3."));
        assert!(!announces_next_step(
            "Fixed add in calc.py; the tests pass."
        ));
        assert!(claims_a_change("I found the bug and fixed it."));
        assert!(claims_a_change("I've updated calc.py."));
        assert!(claims_a_change("The function has been corrected."));
        assert!(!claims_a_change(
            "The add function subtracts instead of adding."
        ));
        assert!(!claims_a_change("calc.py contains two functions."));
    }

    #[test]
    fn key_order_does_not_make_a_different_call() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"a":2,"b":1}"#).unwrap();
        assert_eq!(call_key("x", &a), call_key("x", &b));
    }
}
