//! Small models often print their tool call into the text instead of the
//! API's `tool_calls` (Qwen2.5-Coder 1.5B writes a fenced
//! ```json {"name": …, "arguments": …} block with its own chat template).
//! When a reply has no real calls but carries exactly one such block
//! naming an offered tool (or is nothing but such an object, which the
//! same model writes after a tool result, or has one such object on
//! lines of its own amid prose), it becomes a real call.

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
pub(crate) fn fenced_blocks(text: &str) -> Vec<(usize, usize, &str)> {
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

/// Call objects written without a fence, each starting a line, with
/// prose before or after (`{"name": "edit_file", "arguments": {…}}` and
/// then "After running the edit_file function, …", as the 1.5B model
/// wrote after a compaction): (start, end, name, arguments).
fn bare_calls(text: &str, tools: &[&str]) -> Vec<(usize, usize, String, String)> {
    let mut found = Vec::new();
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let indent =
            text[line_start..line_end].len() - text[line_start..line_end].trim_start().len();
        let start = line_start + indent;
        let mut next = line_end + 1;
        if text[start..].starts_with('{') {
            let mut values =
                serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                let end = start + values.byte_offset();
                if let Some((name, arguments)) = as_call(&value, tools) {
                    found.push((start, end, name, arguments));
                }
                // A value over several lines is skipped whole.
                next = next.max(end);
            }
        }
        line_start = next;
    }
    found
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
    if found.is_empty() {
        found = bare_calls(text, tools);
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
    fn a_bare_call_object_with_prose_around_it_becomes_a_call() {
        // As Qwen2.5-Coder-1.5B-Instruct wrote it after a compaction.
        let text = "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n\nAfter running the bash function, the listing shows.";
        let r = fenced_call(text, TOOLS).unwrap();
        assert_eq!(r.name, "bash");
        assert_eq!(r.arguments, r#"{"command":"ls"}"#);
        assert_eq!(
            r.remaining_text,
            "After running the bash function, the listing shows."
        );
        let indented = "I will list:\n  {\"name\": \"read_file\",\n   \"arguments\": {\"path\": \"a.py\"}}\nDone.";
        let r = fenced_call(indented, TOOLS).unwrap();
        assert_eq!(r.name, "read_file");
        assert_eq!(r.remaining_text, "I will list:\n  \nDone.");
        // Two bare calls, an unknown tool, or a call inside a sentence: left alone.
        let two = "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}";
        assert!(fenced_call(two, TOOLS).is_none());
        assert!(fenced_call("{\"name\": \"rm\", \"arguments\": {}}\nok", TOOLS).is_none());
        assert!(fenced_call("Send {\"name\": \"bash\", \"arguments\": {}} later", TOOLS).is_none());
        // Broken JSON is not a call.
        assert!(fenced_call("{\"name\": \"bash\", \"arguments\": {\nmore", TOOLS).is_none());
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

/// A change the model printed as a fenced code block instead of making
/// it: a new version of a whole file, or of functions a file defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub path: String,
    pub content: String,
}

/// The fenced code blocks of an answer, with the line before each (where
/// a path is often named) and the fence's info string.
fn code_blocks(text: &str) -> Vec<(String, &str)> {
    fenced_blocks(text)
        .into_iter()
        .map(|(open, _, body)| {
            let info_end = text[open..].find('\n').map(|i| open + i).unwrap_or(open);
            let info = text[open + 3..info_end].trim();
            let before = text[..open].trim_end().rsplit('\n').next().unwrap_or("");
            (format!("{before} {info}"), body)
        })
        .collect()
}

/// Turns the first code block that changes one of `files` (path and
/// current content) into a proposal: the block as the whole file when it
/// names the file or keeps most of it, else each function it defines put
/// in place of the file's function of the same name.
///
/// `others` are workspace files not read this turn: a block whose
/// functions are all defined in exactly one of them replaces those
/// functions there (the model fixed a function it only saw in a
/// traceback).
pub fn code_proposal(
    text: &str,
    files: &[(String, String)],
    others: &[(String, String)],
) -> Option<Proposal> {
    use crate::tools::guard::definitions;
    if let Some(p) = proposal_in_read(text, files) {
        return Some(p);
    }
    for (_, body) in code_blocks(text) {
        let defs = definitions(body);
        if defs.is_empty() {
            continue;
        }
        let holders: Vec<&(String, String)> = others
            .iter()
            .filter(|(_, current)| {
                let theirs = definitions(current);
                defs.iter().all(|d| theirs.contains(d))
            })
            .collect();
        if let [(path, current)] = holders.as_slice()
            && let Some(content) = replace_functions(body, &defs, current)
        {
            return Some(Proposal {
                path: path.clone(),
                content,
            });
        }
    }
    None
}

/// `current` with each of `defs` replaced by its block from `body`; None
/// when that changes nothing.
fn replace_functions(body: &str, defs: &[String], current: &str) -> Option<String> {
    use crate::tools::guard::{block_of, leading, reindent};
    let mut content = current.to_string();
    for d in defs {
        let (Some(new_block), Some(old_block)) = (block_of(body, d), block_of(&content, d)) else {
            continue;
        };
        let indent = old_block.lines().next().map(leading).unwrap_or(0);
        content = content.replacen(&old_block, &reindent(&new_block, indent), 1);
    }
    (content != current).then_some(content)
}

fn proposal_in_read(text: &str, files: &[(String, String)]) -> Option<Proposal> {
    use crate::tools::guard::definitions;
    for (context, body) in code_blocks(text) {
        if body.trim().is_empty() || body.trim_start().starts_with('{') {
            continue;
        }
        let defs = definitions(body);
        for (path, current) in files {
            let name = path.rsplit('/').next().unwrap_or(path);
            let named = context.contains(path.as_str()) || context.contains(name);
            let cur_lines: Vec<&str> = current
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let shared = body
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && cur_lines.contains(l))
                .count();
            let whole = !cur_lines.is_empty() && shared * 10 >= cur_lines.len() * 8;
            let file_defs = definitions(current);
            // Functions the file has: each goes in place of its namesake,
            // and everything else in the file stays.
            if !defs.is_empty()
                && defs.iter().all(|d| file_defs.contains(d))
                && let Some(content) = replace_functions(body, &defs, current)
            {
                return Some(Proposal {
                    path: path.clone(),
                    content,
                });
            }
            // The whole file, when the block says so or is most of it.
            if (named || whole) && file_defs.iter().all(|d| defs.contains(d)) {
                let mut content = body.to_string();
                if !content.ends_with('\n') {
                    content.push('\n');
                }
                if content.trim() != current.trim() {
                    return Some(Proposal {
                        path: path.clone(),
                        content,
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod proposal_tests {
    use super::*;

    const STATS: &str = "def total(values):\n    return sum(values)\n\n\ndef mean(values):\n    return total(values) / (len(values) - 1)\n\n\ndef spread(values):\n    return max(values) - min(values)\n";

    #[test]
    fn a_printed_function_of_an_unread_file_replaces_it_there() {
        let answer = "Here's the updated code for `f_to_c`:\n\n```python\ndef f_to_c(fahrenheit):\n    return round((fahrenheit - 32) * 5 / 9)\n```\n";
        let test = (
            "test_temps.py".to_string(),
            "from temps import f_to_c\n\ndef test_f():\n    assert f_to_c(212) == 100\n"
                .to_string(),
        );
        let temps = ("temps.py".to_string(), "def c_to_f(c):\n    return c * 9 / 5 + 32\n\n\ndef f_to_c(f):\n    return f - 32 * 5 / 9\n".to_string());
        let p = code_proposal(
            answer,
            std::slice::from_ref(&test),
            &[test.clone(), temps.clone()],
        )
        .unwrap();
        assert_eq!(p.path, "temps.py");
        assert_eq!(
            p.content,
            "def c_to_f(c):\n    return c * 9 / 5 + 32\n\n\ndef f_to_c(fahrenheit):\n    return round((fahrenheit - 32) * 5 / 9)\n"
        );
        // Defined in two unread files: which one is meant is a guess; none.
        let twin = ("old/temps.py".to_string(), temps.1.clone());
        assert_eq!(code_proposal(answer, &[], &[temps, twin]), None);
    }

    #[test]
    fn a_printed_function_replaces_the_one_in_the_file() {
        let answer = "The bug is in mean. The corrected function should look like this:\n\n```python\ndef mean(values):\n    if not values:\n        return 0.0\n    return total(values) / len(values)\n```\n";
        let files = vec![("stats.py".to_string(), STATS.to_string())];
        let p = code_proposal(answer, &files, &[]).unwrap();
        assert_eq!(p.path, "stats.py");
        assert!(
            p.content.contains("return total(values) / len(values)\n"),
            "{}",
            p.content
        );
        assert!(
            p.content.contains("def total(values):") && p.content.contains("def spread(values):")
        );
        assert!(!p.content.contains("len(values) - 1"));
        assert!(p.content.contains("\n\n\ndef spread"), "{}", p.content);
    }

    #[test]
    fn a_printed_whole_file_becomes_the_file() {
        let fixed = STATS.replace("(len(values) - 1)", "len(values)");
        let answer = format!("Here is the corrected stats.py:\n```python\n{fixed}```");
        let files = vec![("stats.py".to_string(), STATS.to_string())];
        let p = code_proposal(&answer, &files, &[]).unwrap();
        assert_eq!(p.content, fixed);
    }

    #[test]
    fn blocks_that_change_nothing_or_match_no_file_are_not_proposals() {
        let files = vec![("stats.py".to_string(), STATS.to_string())];
        let same =
            "```python\ndef mean(values):\n    return total(values) / (len(values) - 1)\n```";
        assert_eq!(code_proposal(same, &files, &[]), None);
        let other = "```python\ndef unrelated():\n    pass\n```";
        assert_eq!(code_proposal(other, &files, &[]), None);
        let shell = "Run it with:\n```sh\npython3 -m unittest\n```";
        assert_eq!(code_proposal(shell, &files, &[]), None);
    }

    #[test]
    fn a_method_keeps_its_indentation_and_braces_close_blocks() {
        let js = "function clamp(x, lo, hi) {\n  if (x > hi) return lo;\n  return x;\n}\n\nmodule.exports = { clamp };\n";
        let answer =
            "```js\nfunction clamp(x, lo, hi) {\n  if (x > hi) return hi;\n  return x;\n}\n```";
        let files = vec![("clamp.js".to_string(), js.to_string())];
        let p = code_proposal(answer, &files, &[]).unwrap();
        assert_eq!(p.content, js.replace("return lo;", "return hi;"));
        let py = "class S:\n    def pop(self):\n        return 1\n\n    def size(self):\n        return 0\n";
        let answer = "```python\ndef pop(self):\n    return 2\n```";
        let files = vec![("s.py".to_string(), py.to_string())];
        let p = code_proposal(answer, &files, &[]).unwrap();
        assert_eq!(p.content, py.replace("return 1", "return 2"));
    }
}
