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
    for rec in records {
        match rec {
            Record::Message {
                message,
                status,
                typed,
            } => match message.role {
                Role::User => {
                    if open {
                        out.push(finished(turn, std::mem::take(&mut answer)));
                    }
                    turn += 1;
                    open = true;
                    out.push(AgentEvent::TurnStarted {
                        turn,
                        prompt: typed.clone().unwrap_or_else(|| message.text().to_string()),
                    });
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
            | Record::Carried { .. }
            | Record::Model { .. }
            | Record::Request { .. }
            | Record::Turn { .. }
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
