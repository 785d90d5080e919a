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
                if c.name.is_empty() { "no name" } else { &c.name }
            ));
        };
        if !seen.insert(id) {
            return Some(format!("the server sent two tool calls with the same id {id}"));
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
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
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
    format!("{name} {}", Value::Object(args.clone()))
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
    fn key_order_does_not_make_a_different_call() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"a":2,"b":1}"#).unwrap();
        assert_eq!(call_key("x", &a), call_key("x", &b));
    }
}
