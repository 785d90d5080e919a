//! A session's log told again as the events it caused: what `-show`, the
//! export and a resumed TUI replay, without a model.

use std::collections::HashMap;
use std::sync::Arc;

use super::Record;
use crate::llm::Role;
use crate::protocol::{AgentEvent, Outcome, ToolStatus};

/// The events a live run would have published for these records.
pub fn events(records: &[Record]) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let mut turn = 0;
    let mut calls: HashMap<String, (String, String)> = HashMap::new();
    let mut open = false;
    // The turn's last text, its answer.
    let mut answer = String::new();
    // A log that marks its turns: only the first user message of a turn
    // starts one; the others are what mm told the model, which a live
    // run does not show as a prompt.
    let marked = records.iter().any(|r| matches!(r, Record::Turn { .. }));
    let mut expect_prompt = !marked;
    let mut ran = 0;
    let mut held: Vec<&Record> = Vec::new();
    let mut queue: std::collections::VecDeque<&Record> = records.iter().collect();
    while let Some(rec) = queue.pop_front() {
        match rec {
            Record::Turn { .. } => expect_prompt = true,
            Record::Message { message, .. }
                if message.role == Role::User && marked && !expect_prompt => {}
            // Run before the turn's prompt was sent: shown in its turn.
            Record::Ran { .. } | Record::Plan { .. } if marked && expect_prompt => {
                held.push(rec);
            }
            Record::Plan {
                steps, approved, ..
            } => out.push(AgentEvent::Plan {
                turn,
                steps: steps.clone(),
                approved: *approved,
            }),
            Record::Ran {
                command,
                status,
                output,
                ..
            } => {
                ran += 1;
                let call_id = format!("mm_ran_{ran}");
                let mut args = serde_json::Map::new();
                args.insert("command".into(), serde_json::Value::String(command.clone()));
                let summary =
                    crate::protocol::call_summary(crate::toolname::ToolName::Bash.as_str(), &args);
                out.push(AgentEvent::ToolCallRunning {
                    turn,
                    call_id: call_id.clone(),
                    name: crate::toolname::ToolName::Bash.as_str().into(),
                    summary: summary.clone(),
                    arguments: serde_json::json!({ "command": command }).to_string(),
                });
                out.push(AgentEvent::ToolCallFinished {
                    turn,
                    call_id,
                    name: crate::toolname::ToolName::Bash.as_str().into(),
                    summary,
                    status: *status,
                    output: Arc::from(output.as_str()),
                });
            }
            Record::Message {
                message,
                status,
                typed,
            } => match message.role {
                Role::User => {
                    expect_prompt = false;
                    if open {
                        out.push(finished(turn, std::mem::take(&mut answer)));
                    }
                    turn += 1;
                    open = true;
                    out.push(AgentEvent::TurnStarted {
                        turn,
                        prompt: typed.clone().unwrap_or_else(|| message.text().to_string()),
                    });
                    for r in held.drain(..).rev() {
                        queue.push_front(r);
                    }
                }
                Role::Assistant => {
                    if let Some(r) = &message.reasoning {
                        out.push(AgentEvent::Reasoning {
                            turn,
                            text: format!("{r}\n"),
                        });
                    }
                    if !message.text().is_empty() {
                        answer = message.text().to_string();
                        out.push(AgentEvent::Token {
                            turn,
                            text: message.text().to_string(),
                        });
                    }
                    for c in &message.tool_calls {
                        let summary = serde_json::from_str(&c.arguments)
                            .map(|args| crate::protocol::call_summary(&c.name, &args))
                            .unwrap_or_default();
                        calls.insert(c.id.clone(), (c.name.clone(), summary.clone()));
                        out.push(AgentEvent::ToolCallRunning {
                            turn,
                            call_id: c.id.clone(),
                            name: c.name.clone(),
                            summary,
                            arguments: c.arguments.clone(),
                        });
                    }
                }
                Role::Tool => {
                    let id = message.tool_call_id.clone().unwrap_or_default();
                    let (name, summary) = calls.get(&id).cloned().unwrap_or_default();
                    out.push(AgentEvent::ToolCallFinished {
                        turn,
                        call_id: id,
                        name,
                        summary,
                        status: status.unwrap_or(ToolStatus::Ok),
                        output: Arc::from(message.text()),
                    });
                }
                Role::System => {}
            },
            Record::Receipt {
                turn: t,
                written,
                commands,
                notes,
            } => out.push(AgentEvent::Receipt {
                turn: *t,
                written: written.clone(),
                commands: *commands,
                notes: notes.clone(),
            }),
            Record::Always { key } => out.push(AgentEvent::Notice {
                turn: None,
                level: crate::protocol::Level::Info,
                text: format!(
                    "the user answered always: {}",
                    crate::sandbox::always::words(key)
                ),
            }),
            Record::Compacted {
                turn: t,
                replaced,
                summary,
                tokens_before,
                tokens_after,
                focus,
                ..
            } => out.push(AgentEvent::Compacted {
                turn: *t,
                replaced: *replaced,
                summary: summary.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                auto: focus.is_none(),
            }),
            Record::Header { .. }
            | Record::Note { .. }
            | Record::Title { .. }
            | Record::Carried { .. }
            | Record::Model { .. }
            | Record::Request { .. }
            | Record::Made { .. }
            | Record::Checkpoint { .. } => {}
        }
    }
    if open {
        out.push(finished(turn, answer));
    }
    out
}

fn finished(turn: u64, answer: String) -> AgentEvent {
    AgentEvent::TurnFinished {
        turn,
        outcome: Outcome::Done,
        answer,
        error: None,
    }
}
