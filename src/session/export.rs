//! A session as a document: Markdown for people (prompts, answers, tool
//! calls with their results folded, the changes as diffs) or JSONL events
//! for programs (the same events a live run publishes).

use std::collections::HashMap;
use std::path::Path;

use super::Record;
use crate::llm::Role;
use crate::protocol::{FileChange, ToolStatus};

/// What the user saw as answers: the assistant's texts, in order.
pub fn answers(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Message { message, .. }
                if message.role == Role::Assistant && !message.text().trim().is_empty() =>
            {
                Some(message.text().to_string())
            }
            _ => None,
        })
        .collect()
}

/// A code fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                ">".to_string()
            } else {
                format!("> {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The session as Markdown; `changes` (the session's diff) closes it.
pub fn markdown(records: &[Record], changes: &[FileChange]) -> String {
    let mut out = String::new();
    let mut calls: HashMap<String, (String, String)> = HashMap::new();
    let mut turn = 0;
    // A log that marks its turns: only the first user message of a turn
    // is the user's; the others are what mm told the model.
    let marked = records.iter().any(|r| matches!(r, Record::Turn { .. }));
    let mut expect_prompt = !marked;
    let mut held: Vec<&Record> = Vec::new();
    // The last approved plan record of each turn: its steps as left.
    let mut last_plan: HashMap<u64, *const Record> = HashMap::new();
    for r in records {
        if let Record::Plan {
            turn: t,
            approved: true,
            ..
        } = r
        {
            last_plan.insert(*t, std::ptr::from_ref(r));
        }
    }
    let mut queue: std::collections::VecDeque<&Record> = records.iter().collect();
    while let Some(rec) = queue.pop_front() {
        match rec {
            Record::Turn { .. } => expect_prompt = true,
            Record::Message { message, .. }
                if message.role == Role::User && marked && !expect_prompt =>
            {
                let text = message.text().trim_end();
                let f = fence(text);
                out.push_str(&format!(
                    "\n<details><summary>mm, to the model</summary>\n\n{f}text\n{text}\n{f}\n\n</details>\n"
                ));
            }
            // Run before the turn's prompt was sent (the failure it
            // starts from): shown under the prompt.
            Record::Ran { .. } | Record::Plan { .. } if marked && expect_prompt => {
                held.push(rec);
            }
            // A plan as proposed, and as the last mark of its turn left it.
            Record::Plan {
                turn: t,
                steps,
                approved,
            } if !approved || last_plan.get(t) == Some(&std::ptr::from_ref(rec)) => {
                out.push_str(&plan_md(steps, *approved));
            }
            Record::Plan { .. } => {}
            Record::Ran {
                command,
                status,
                output,
                ..
            } => out.push_str(&ran_md(command, *status, output)),
            Record::Header {
                id,
                created,
                cwd,
                provider,
                model,
                ..
            } => {
                out.push_str(&format!("# mm session {id}\n\n"));
                out.push_str(&format!(
                    "- model: {provider}/{model}\n- workspace: `{cwd}`\n- started: {created}\n"
                ));
            }
            Record::Message {
                message,
                status,
                typed,
            } => match message.role {
                Role::User => {
                    expect_prompt = false;
                    turn += 1;
                    let prompt = typed.clone().unwrap_or_else(|| message.text().to_string());
                    let title: String = prompt
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(72)
                        .collect();
                    out.push_str(&format!("\n## {turn}. {title}\n\n{}\n", quote(&prompt)));
                    for r in held.drain(..).rev() {
                        queue.push_front(r);
                    }
                }
                Role::Assistant => {
                    let text = message.text().trim();
                    if !text.is_empty() {
                        out.push_str(&format!("\n{text}\n"));
                    }
                    for c in &message.tool_calls {
                        let summary = serde_json::from_str(&c.arguments)
                            .map(|args| crate::protocol::call_summary(&c.name, &args))
                            .unwrap_or_default();
                        calls.insert(c.id.clone(), (c.name.clone(), summary));
                    }
                }
                Role::Tool => {
                    let id = message.tool_call_id.clone().unwrap_or_default();
                    let (name, summary) = calls.get(&id).cloned().unwrap_or_default();
                    let mark = status_mark(status.unwrap_or(ToolStatus::Ok));
                    let result = message.text().trim_end();
                    let f = fence(result);
                    out.push_str(&format!(
                        "\n<details><summary>{mark} {name} <code>{}</code></summary>\n\n{f}text\n{result}\n{f}\n\n</details>\n",
                        html_escape(&summary)
                    ));
                }
                Role::System => {}
            },
            other => out.push_str(&note_of(other)),
        }
    }
    out.push_str(&changes_md(changes));
    out
}

/// What a record that is not a message says in the export: a receipt,
/// mm's notes, a title, a model change, a compaction, an "always" answer;
/// nothing for the rest.
fn note_of(rec: &Record) -> String {
    match rec {
        Record::Receipt {
            written,
            commands,
            notes,
            ..
        } => format!(
            "\n*{}*\n",
            crate::protocol::receipt_text(written, *commands, notes)
        ),
        Record::Note { text } => format!("\n*mm: {text}*\n"),
        Record::Title { title } => format!("\n*mm: titled \"{title}\"*\n"),
        Record::Model { model } => format!("\n*mm: model {model} from here on*\n"),
        Record::Carried { text } => {
            format!("\n*mm, for the next message:*\n\n{}\n", quote(text))
        }
        Record::Compacted {
            replaced,
            summary,
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "\n*mm compacted the conversation: the {replaced} messages before this point (shown above) are sent as this summary from here on ({tokens_before} → {tokens_after} tokens)*\n\n<details><summary>summary</summary>\n\n{}\n\n</details>\n",
            quote(summary)
        ),
        Record::Always { key } => format!(
            "\n*the user answered always: {}*\n",
            crate::sandbox::always::words(key)
        ),
        _ => String::new(),
    }
}

/// The session's diff, file by file, closing the export.
fn changes_md(changes: &[FileChange]) -> String {
    let mut out = String::new();
    if !changes.is_empty() {
        out.push_str("\n---\n\n## Changes in this session\n");
        for c in changes {
            let diff = crate::diff::unified(&c.path, &c.before, &c.after, 3, usize::MAX);
            let f = fence(&diff);
            out.push_str(&format!(
                "\n### {} (+{} -{})\n\n{f}diff\n{}\n{f}\n",
                c.path,
                c.added,
                c.removed,
                diff.trim_end()
            ));
        }
    }
    out
}

/// A plan as proposed, or as the last mark of its turn left it.
fn plan_md(steps: &[crate::protocol::PlanStep], approved: bool) -> String {
    let what = if approved { "Plan" } else { "Plan proposed" };
    let mut out = format!("\n**{what}:**\n\n");
    for s in steps {
        let mark = match s.status {
            crate::protocol::StepStatus::Completed => "[x]",
            _ => "[ ]",
        };
        out.push_str(&format!("- {mark} {}\n", s.step.trim()));
    }
    out
}

/// A command mm ran itself, folded with its output.
fn ran_md(command: &str, status: ToolStatus, output: &str) -> String {
    let mark = status_mark(status);
    let result = output.trim_end();
    let f = fence(result);
    format!(
        "\n<details><summary>{mark} mm ran <code>{}</code></summary>\n\n{f}text\n{result}\n{f}\n\n</details>\n",
        html_escape(command)
    )
}

/// A tool result's mark: done, failed, refused, not run.
fn status_mark(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Ok => "✓",
        ToolStatus::Error => "✗",
        ToolStatus::Refused => "⊘ refused:",
        ToolStatus::NotRun => "⊘ not run:",
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The export written to `target`: JSONL events, or Markdown whose diff
/// leaves out `target` itself (an export is not a change of the session).
pub fn document(
    root: &Path,
    records: &[Record],
    mut changes: Vec<FileChange>,
    target: Option<&Path>,
    jsonl: bool,
) -> String {
    if jsonl {
        return self::jsonl(records);
    }
    if let Some(t) = target {
        changes.retain(|c| root.join(&c.path) != t);
    }
    markdown(records, &changes)
}

/// The session as JSONL: one event per line, as `-json` consumers see
/// them elsewhere.
pub fn jsonl(records: &[Record]) -> String {
    let mut out = String::new();
    for ev in super::replay::events(records) {
        out.push_str(&crate::untrusted::json_line(&ev));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, ToolCall};
    use std::sync::Arc;

    fn records() -> Vec<Record> {
        let mut assistant = Message::assistant("I will fix `add`.");
        assistant.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "edit_file".into(),
            arguments: r#"{"path":"calc.py","old_string":"a - b","replacement":"a + b"}"#.into(),
        }];
        vec![
            Record::Header {
                version: 1,
                id: "20261130-101010-abcdef".into(),
                created: "2026-11-30T10:10:10Z".into(),
                cwd: "/work/demo".into(),
                provider: "local".into(),
                model: "qwen2.5-coder-1.5b".into(),
            },
            Record::Turn { turn: 1 },
            Record::Message {
                message: Message::user("Fix add in calc.py\n\n[calc.py, as it is now]\n…"),
                status: None,
                typed: Some("Fix add in calc.py".into()),
            },
            Record::Message {
                message: assistant,
                status: None,
                typed: None,
            },
            Record::Message {
                message: Message::tool_result(
                    "c1",
                    "edited calc.py: +1 -1\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n```",
                ),
                status: Some(ToolStatus::Ok),
                typed: None,
            },
            Record::Message {
                message: Message::assistant(
                    "Fixed: `add` now adds.\n\n```python\nadd(1, 2)  # 3\n```",
                ),
                status: None,
                typed: None,
            },
            Record::Receipt {
                turn: 1,
                written: vec!["calc.py".into()],
                commands: 0,
                notes: Vec::new(),
            },
        ]
    }

    #[test]
    fn a_session_as_markdown() {
        let change = FileChange {
            path: "calc.py".into(),
            kind: crate::protocol::ChangeKind::Modified,
            before: Arc::from("def add(a, b):\n    return a - b\n"),
            after: Arc::from("def add(a, b):\n    return a + b\n"),
            added: 1,
            removed: 1,
        };
        insta::assert_snapshot!("export_markdown", markdown(&records(), &[change]));
    }

    #[test]
    fn a_session_as_jsonl_events() {
        let text = jsonl(&records());
        insta::assert_snapshot!("export_jsonl", text);
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["type"].is_string());
        }
    }

    #[test]
    fn answers_are_the_texts_the_user_saw() {
        assert_eq!(
            answers(&records()),
            vec![
                "I will fix `add`.".to_string(),
                "Fixed: `add` now adds.\n\n```python\nadd(1, 2)  # 3\n```".to_string()
            ]
        );
    }
}
