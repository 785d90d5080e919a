//! A session's log told again as the events it caused: what `-show`, the
//! export and a resumed TUI replay, without a model.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::Record;
use crate::llm::Role;
use crate::protocol::{AgentEvent, CheckpointKind, Outcome, ToolStatus};

/// The events a live run would have published for these records.
pub fn events(records: &[Record]) -> Vec<AgentEvent> {
    // A log that marks its turns: only the first user message of a turn
    // starts one; the others are what mm told the model, which a live
    // run does not show as a prompt.
    let marked = records.iter().any(|r| matches!(r, Record::Turn { .. }));
    let mut r = Replay {
        marked,
        expect_prompt: !marked,
        ..Replay::default()
    };
    let mut queue: VecDeque<&Record> = records.iter().collect();
    while let Some(rec) = queue.pop_front() {
        r.record(rec, &mut queue);
    }
    if r.open {
        let answer = std::mem::take(&mut r.answer);
        r.out.push(finished(r.turn, answer));
    }
    r.out
}

/// Where a replay is in the log.
#[derive(Default)]
struct Replay<'a> {
    out: Vec<AgentEvent>,
    /// The replay's own count of turns (one a prompt).
    turn: u64,
    /// Tool calls by id: their name and summary, for their results.
    calls: HashMap<String, (String, String)>,
    /// A turn is open (started, not yet finished).
    open: bool,
    /// The turn's last text, its answer.
    answer: String,
    marked: bool,
    expect_prompt: bool,
    /// mm's own runs told so far (their call ids).
    ran: u32,
    /// Runs and plans logged before their turn's prompt.
    held: Vec<&'a Record>,
    /// The agent's number of the turn the last Turn record opened.
    logged_turn: u64,
}

impl<'a> Replay<'a> {
    fn notice(&mut self, text: String) {
        self.out.push(AgentEvent::Notice {
            turn: None,
            level: crate::protocol::Level::Info,
            text,
        });
    }

    fn record(&mut self, rec: &'a Record, queue: &mut VecDeque<&'a Record>) {
        let turn = self.turn;
        match rec {
            Record::Turn { turn: t } => {
                self.expect_prompt = true;
                self.logged_turn = *t;
            }
            Record::Message { message, .. }
                if message.role == Role::User && self.marked && !self.expect_prompt => {}
            // Run before the turn's prompt was sent: shown in its turn
            // (a turn's first test run is logged before its Turn record).
            Record::Ran { turn: t, .. } | Record::Plan { turn: t, .. }
                if self.marked && (self.expect_prompt || *t > self.logged_turn) =>
            {
                self.held.push(rec);
            }
            Record::Plan {
                steps, approved, ..
            } => self.out.push(AgentEvent::Plan {
                turn,
                steps: steps.clone(),
                approved: *approved,
            }),
            Record::Ran {
                command,
                status,
                output,
                ..
            } => self.mm_ran(command, *status, output),
            // The stand-in for a compacted conversation: a summary, not a
            // prompt the user typed.
            Record::Message { message, .. }
                if message.role == Role::User
                    && message.text().starts_with(super::SUMMARY_HEAD) =>
            {
                let summary = message.text()[super::SUMMARY_HEAD.len()..].trim();
                self.notice(format!(
                    "the conversation before this point, as summarized: {summary}"
                ));
            }
            Record::Message {
                message,
                status,
                typed,
            } => self.message(message, *status, typed.as_deref(), queue),
            Record::Receipt {
                turn: t,
                written,
                commands,
                notes,
            } => self.out.push(AgentEvent::Receipt {
                turn: *t,
                written: written.clone(),
                commands: *commands,
                notes: notes.clone(),
            }),
            Record::Always { key } => self.notice(format!(
                "the user answered always: {}",
                crate::sandbox::always::words(key)
            )),
            Record::Compacted {
                turn: t,
                replaced,
                summary,
                tokens_before,
                tokens_after,
                focus,
                asked,
                ..
            } => self.out.push(AgentEvent::Compacted {
                turn: *t,
                replaced: *replaced,
                summary: summary.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                auto: !asked && focus.is_none(),
            }),
            // A rewind (its safety checkpoint comes first) and what mm did
            // to the log itself are said where they happened.
            Record::Checkpoint { checkpoint } if checkpoint.kind == CheckpointKind::Safety => {
                self.notice(checkpoint.label.replacen("before rewinding", "rewound", 1));
            }
            Record::Note { text } => self.notice(text.clone()),
            Record::Header { .. }
            | Record::Title { .. }
            | Record::Carried { .. }
            | Record::Model { .. }
            | Record::Request { .. }
            | Record::Made { .. }
            | Record::Checkpoint { .. } => {}
        }
    }

    /// A command mm ran itself, told as the call a live run showed.
    fn mm_ran(&mut self, command: &str, status: ToolStatus, output: &str) {
        self.ran += 1;
        let call_id = format!("mm_ran_{}", self.ran);
        let bash = crate::toolname::ToolName::Bash.as_str();
        let mut args = serde_json::Map::new();
        args.insert("command".into(), serde_json::Value::String(command.into()));
        let summary = crate::protocol::call_summary(bash, &args);
        self.out.push(AgentEvent::ToolCallRunning {
            turn: self.turn,
            call_id: call_id.clone(),
            name: bash.into(),
            summary: summary.clone(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        });
        self.out.push(AgentEvent::ToolCallFinished {
            turn: self.turn,
            call_id,
            name: bash.into(),
            summary,
            status,
            output: Arc::from(output),
        });
    }

    fn message(
        &mut self,
        message: &crate::llm::Message,
        status: Option<ToolStatus>,
        typed: Option<&str>,
        queue: &mut VecDeque<&'a Record>,
    ) {
        match message.role {
            Role::User => {
                self.expect_prompt = false;
                if self.open {
                    let answer = std::mem::take(&mut self.answer);
                    self.out.push(finished(self.turn, answer));
                }
                self.turn += 1;
                self.open = true;
                self.out.push(AgentEvent::TurnStarted {
                    turn: self.turn,
                    prompt: typed.map_or_else(|| message.text().to_string(), str::to_string),
                });
                for r in self.held.drain(..).rev() {
                    queue.push_front(r);
                }
            }
            Role::Assistant => self.assistant(message),
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                let (name, summary) = self.calls.get(&id).cloned().unwrap_or_default();
                // A helper's card opens its transcript after a resume too.
                if let Some(session) = crate::protocol::helper_session_in(message.text()) {
                    self.out.push(AgentEvent::ToolChild {
                        turn: self.turn,
                        call_id: id.clone(),
                        session: session.to_string(),
                    });
                }
                self.out.push(AgentEvent::ToolCallFinished {
                    turn: self.turn,
                    call_id: id,
                    name,
                    summary,
                    status: status.unwrap_or(ToolStatus::Ok),
                    output: Arc::from(message.text()),
                });
            }
            Role::System => {}
        }
    }

    fn assistant(&mut self, message: &crate::llm::Message) {
        let turn = self.turn;
        if let Some(r) = &message.reasoning {
            self.out.push(AgentEvent::Reasoning {
                turn,
                text: format!("{r}\n"),
            });
        }
        if !message.text().is_empty() {
            // A second reply of the turn (after mm's word to the model,
            // which a replay does not show) is a paragraph of its own, not
            // run on from the first ("…updated.There are 10…").
            let run_on =
                matches!(self.out.last(), Some(AgentEvent::Token { turn: t, .. }) if *t == turn);
            let text = if run_on {
                format!("\n\n{}", message.text())
            } else {
                message.text().to_string()
            };
            self.answer = message.text().to_string();
            self.out.push(AgentEvent::Token { turn, text });
        }
        for c in &message.tool_calls {
            let summary = serde_json::from_str(&c.arguments)
                .map(|args| crate::protocol::call_summary(&c.name, &args))
                .unwrap_or_default();
            self.calls
                .insert(c.id.clone(), (c.name.clone(), summary.clone()));
            self.out.push(AgentEvent::ToolCallRunning {
                turn,
                call_id: c.id.clone(),
                name: c.name.clone(),
                summary,
                arguments: c.arguments.clone(),
            });
        }
    }
}

fn finished(turn: u64, answer: String) -> AgentEvent {
    AgentEvent::TurnFinished {
        turn,
        outcome: Outcome::Done,
        answer,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(lines: &[serde_json::Value]) -> Vec<Record> {
        lines
            .iter()
            .map(|l| serde_json::from_value(l.clone()).unwrap())
            .collect()
    }

    /// Two replies of one turn (the second after mm's word to the model)
    /// are two paragraphs, not one run-on line.
    #[test]
    fn a_second_reply_of_a_turn_is_a_paragraph_of_its_own() {
        let recs = records(&[
            serde_json::json!({"type": "turn", "turn": 1}),
            serde_json::json!({"type": "message", "role": "user", "content": "count the errors"}),
            serde_json::json!({"type": "message", "role": "assistant", "content": "The file has been updated."}),
            serde_json::json!({"type": "message", "role": "user", "content": "mm: no file was written; answer the question."}),
            serde_json::json!({"type": "message", "role": "assistant", "content": "There are 10 ERROR lines."}),
        ]);
        let text: String = events(&recs)
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            text,
            "The file has been updated.\n\nThere are 10 ERROR lines."
        );
    }

    /// A helper's card keeps its session after a resume, so `o` opens
    /// its transcript (a trial's resumed cards had lost it).
    #[test]
    fn a_helpers_answer_names_its_session_for_the_card() {
        use serde_json::json;
        let answer = format!(
            "Looks fine.\n\n[the helper wrote no file]{}",
            crate::protocol::helper_session_note("20261207-1-abc")
        );
        let recs = records(&[
            json!({"type": "turn", "turn": 1}),
            json!({"type": "message", "role": "user", "content": "review cart.py"}),
            json!({"type": "message", "role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "task", "arguments": "{\"prompt\":\"review cart.py\"}"}]}),
            json!({"type": "message", "role": "tool", "tool_call_id": "t1", "content": answer}),
        ]);
        let evs = events(&recs);
        assert!(
            evs.iter().any(
                |e| matches!(e, AgentEvent::ToolChild { call_id, session, .. }
                if call_id == "t1" && session == "20261207-1-abc")
            ),
            "{evs:?}"
        );
    }

    /// Seen in a trial's printed transcript: the summary a rewound or
    /// compacted session starts from was shown as a prompt, a turn's first
    /// test run as the end of the turn before, and a rewind not at all.
    #[test]
    fn a_summary_a_rewind_and_a_turns_first_run_are_told_where_they_belong() {
        use serde_json::json;
        let summary = format!(
            "{}\nThe assistant fixed total().",
            crate::session::SUMMARY_HEAD
        );
        let recs = records(&[
            json!({"type": "turn", "turn": 1}),
            json!({"type": "message", "role": "user", "content": summary}),
            json!({"type": "turn", "turn": 4}),
            json!({"type": "message", "role": "user", "content": "Create util.py"}),
            json!({"type": "message", "role": "assistant", "content": "Created."}),
            json!({"type": "checkpoint", "checkpoint": {"id": "ab", "turn": 4, "kind": "safety", "time": "t", "label": "before rewinding to turn 4"}}),
            json!({"type": "ran", "turn": 5, "command": "python3 -m unittest -q", "status": "error", "output": "FAIL"}),
            json!({"type": "turn", "turn": 5}),
            json!({"type": "message", "role": "user", "content": "Fix the test"}),
        ]);
        let evs = events(&recs);
        let prompts: Vec<&str> = evs
            .iter()
            .filter_map(|e| match e {
                AgentEvent::TurnStarted { prompt, .. } => Some(prompt.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(prompts, ["Create util.py", "Fix the test"]);
        let at = |want: &dyn Fn(&AgentEvent) -> bool| evs.iter().position(want).unwrap();
        let told = at(
            &|e| matches!(e, AgentEvent::Notice { text, .. } if text.contains("as summarized: The assistant fixed total().")),
        );
        let rewound =
            at(&|e| matches!(e, AgentEvent::Notice { text, .. } if text == "rewound to turn 4"));
        let second = at(
            &|e| matches!(e, AgentEvent::TurnStarted { prompt, .. } if prompt == "Fix the test"),
        );
        let ran = at(
            &|e| matches!(e, AgentEvent::ToolCallRunning { summary, .. } if summary.contains("unittest")),
        );
        assert!(
            told < rewound && rewound < second && second < ran,
            "{evs:#?}"
        );
    }
}
