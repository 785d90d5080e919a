//! Small models often print their tool call into the text instead of the
//! API's `tool_calls` (Qwen2.5-Coder 1.5B writes a fenced
//! ```json {"name": …, "arguments": …} block with its own chat template).
//! When a reply has no real calls but carries exactly one such block
//! naming an offered tool (or is nothing but such an object, which the
//! same model writes after a tool result), it becomes a real call.

use serde_json::Value;

/// A call found in the text, and the text without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub name: String,
    pub arguments: String,
    pub remaining_text: String,
}

/// Fenced blocks: (start of the opening fence, end after the closing
/// fence, body).
fn fenced_blocks(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(open_rel) = text[pos..].find("```") {
        let open = pos + open_rel;
        let after_ticks = open + 3;
        let Some(nl_rel) = text[after_ticks..].find('\n') else {
            break;
        };
        let body_start = after_ticks + nl_rel + 1;
        let Some(close_rel) = text[body_start..].find("```") else {
            break;
        };
        let close = body_start + close_rel;
        out.push((open, close + 3, &text[body_start..close]));
        pos = close + 3;
    }
    out
}

/// The call in `{"name": TOOL, "arguments": {...}}`, if `value` is one.
fn as_call(value: &Value, tools: &[&str]) -> Option<(String, String)> {
    let obj = value.as_object()?;
    let name = obj.get("name").and_then(Value::as_str)?;
    if !tools.contains(&name) {
        return None;
    }
    let arguments = match obj.get("arguments") {
        Some(Value::Object(a)) => Value::Object(a.clone()).to_string(),
        Some(Value::String(s)) => crate::llm::stream::unwrap_arguments(s),
        None => "{}".to_string(),
        Some(_) => return None,
    };
    Some((name.to_string(), arguments))
}

/// Looks for exactly one fenced JSON block of the shape
/// `{"name": TOOL, "arguments": {...}}` naming one of `tools`, or a reply
/// that is nothing but such an object.
pub fn fenced_call(text: &str, tools: &[&str]) -> Option<Recovered> {
    let mut found = Vec::new();
    for (start, end, body) in fenced_blocks(text) {
        let Ok(value) = serde_json::from_str::<Value>(body.trim()) else {
            continue;
        };
        if let Some((name, arguments)) = as_call(&value, tools) {
            found.push((start, end, name, arguments));
        }
    }
    if found.is_empty()
        && let Ok(value) = serde_json::from_str::<Value>(text.trim())
        && let Some((name, arguments)) = as_call(&value, tools)
    {
        return Some(Recovered {
            name,
            arguments,
            remaining_text: String::new(),
        });
    }
    if found.len() != 1 {
        return None;
    }
    let (start, end, name, arguments) = found.remove(0);
    let remaining_text = format!("{}{}", &text[..start], &text[end..])
        .trim()
        .to_string();
    Some(Recovered {
        name,
        arguments,
        remaining_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &["read_file", "bash"];

    #[test]
    fn a_recorded_qwen_reply_becomes_a_call() {
        // As Qwen2.5-Coder-1.5B-Instruct wrote it with its own template.
        let text = "I'll read the file first.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```";
        let r = fenced_call(text, TOOLS).unwrap();
        assert_eq!(r.name, "read_file");
        assert_eq!(r.arguments, r#"{"path":"src/lib.rs"}"#);
        assert_eq!(r.remaining_text, "I'll read the file first.");
    }

    #[test]
    fn string_arguments_are_unwrapped() {
        let text =
            "```json\n{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}\n```";
        let r = fenced_call(text, TOOLS).unwrap();
        assert_eq!(r.arguments, r#"{"command": "ls"}"#);
    }

    #[test]
    fn a_reply_that_is_only_the_call_object_counts_too() {
        let r = fenced_call(
            "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n",
            TOOLS,
        )
        .unwrap();
        assert_eq!(r.name, "bash");
        assert_eq!(r.remaining_text, "");
        assert!(fenced_call("Run {\"name\": \"bash\"} later", TOOLS).is_none());
    }

    #[test]
    fn unknown_tools_prose_and_several_blocks_are_left_alone() {
        assert!(
            fenced_call(
                "```json\n{\"name\": \"rm_rf\", \"arguments\": {}}\n```",
                TOOLS
            )
            .is_none()
        );
        assert!(fenced_call("```json\n{\"a\": 1}\n```", TOOLS).is_none());
        assert!(fenced_call("no block here", TOOLS).is_none());
        let two = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}\n```";
        assert!(fenced_call(two, TOOLS).is_none());
    }
}
