//! `/ask-NAME`: a turn another agent answers. The question and the answer
//! join the conversation as a user/assistant pair, so the model sees them
//! in the turns that follow, and the log keeps them for `-resume`.

use crate::toolname::ToolName;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::llm::Message;
use crate::protocol::{AgentEvent, Outcome, ToolStatus, TurnResult, Usage};
use crate::session::Record;
use crate::tools::CallCtx;

impl Agent {
    pub async fn ask_turn(
        &mut self,
        name: &str,
        prompt: &str,
        with_context: bool,
        cancel: &CancellationToken,
    ) -> TurnResult {
        self.turn += 1;
        let turn = self.turn;
        let command = if with_context {
            format!("/ask-with-context-{name} {prompt}")
        } else {
            format!("/ask-{name} {prompt}")
        };
        self.bus.publish(AgentEvent::TurnStarted {
            turn,
            prompt: command.clone(),
        });
        self.checkpoint(crate::git::Kind::Turn, &command).await;
        let before = self.last_checkpoint().await;
        let sent = if with_context {
            let t = crate::tools::asking::transcript(self.messages.get(1..).unwrap_or_default());
            crate::tools::asking::with_context(&t, prompt)
        } else {
            prompt.to_string()
        };
        let question = Message::user(format!("(I asked the agent {name}:) {prompt}"));
        let logged = self
            .log
            .append(&Record::Turn { turn })
            .and_then(|()| self.log.append_prompt(&question, &command));
        let (outcome, error, answer) = match logged {
            Err(e) => (Outcome::Failed, Some(e.to_string()), String::new()),
            Ok(()) => {
                self.turn_starts.push(self.messages.len() - 1);
                self.messages.push(question);
                self.ask_now(turn, name, prompt, sent, cancel).await
            }
        };
        let changed = self.ask_changes(turn, &command, before).await;
        self.publish_context();
        self.bus.publish(AgentEvent::TurnFinished {
            turn,
            outcome,
            answer: answer.clone(),
            error: error.clone(),
        });
        TurnResult {
            turn,
            outcome,
            answer,
            written: Vec::new(),
            changed_by_commands: changed,
            warnings: Vec::new(),
            error,
            tests: None,
            unbacked: Vec::new(),
            requests: 0,
            usage: Usage::default(),
            plan: Vec::new(),
        }
    }
    /// Asks agent `name` (`sent`: the prompt as it goes, with the
    /// conversation when asked so) as a tool card; the outcome, the error
    /// and the answer, which joins the conversation.
    async fn ask_now(
        &mut self,
        turn: crate::protocol::TurnId,
        name: &str,
        prompt: &str,
        sent: String,
        cancel: &CancellationToken,
    ) -> (Outcome, Option<String>, String) {
        let call_id = format!("ask-{turn}");
        let args: serde_json::Map<String, serde_json::Value> = [
            (
                crate::toolname::arg::AGENT.to_string(),
                serde_json::Value::from(name),
            ),
            (
                crate::toolname::arg::PROMPT.to_string(),
                serde_json::Value::from(prompt),
            ),
        ]
        .into_iter()
        .collect();
        let summary = crate::tools::summary(ToolName::AskAgent.as_str(), &args);
        self.bus.publish(AgentEvent::ToolCallStarted {
            turn,
            call_id: call_id.clone(),
            name: ToolName::AskAgent.as_str().into(),
        });
        self.bus.publish(AgentEvent::ToolCallRunning {
            turn,
            call_id: call_id.clone(),
            name: ToolName::AskAgent.as_str().into(),
            summary: summary.clone(),
            arguments: serde_json::Value::Object(args.clone()).to_string(),
        });
        let mut sent_args = args;
        sent_args.insert(
            crate::toolname::arg::PROMPT.into(),
            serde_json::Value::from(sent),
        );
        let out = match &self.tools.ask {
            Some(a) => {
                a.run(
                    &sent_args,
                    &CallCtx {
                        turn,
                        call_id: &call_id,
                        cancel,
                    },
                    self.tools.sandbox.child_ceiling(a.asker.ceiling),
                )
                .await
            }
            None => crate::tools::ToolOutput::error(
                "this agent declares no mmConfigs: there is no one to ask",
            ),
        };
        self.bus.publish(AgentEvent::ToolCallFinished {
            turn,
            call_id,
            name: ToolName::AskAgent.as_str().into(),
            summary,
            status: out.status,
            // The answer shows as the turn's answer, not twice.
            output: if out.status == ToolStatus::Ok {
                "".into()
            } else {
                out.text.clone().into()
            },
        });
        if out.status == ToolStatus::Ok {
            let answer = out.text;
            self.bus.publish(AgentEvent::Token {
                turn,
                text: answer.clone(),
            });
            match self.push(Message::assistant(answer.clone())) {
                Ok(()) => (Outcome::Done, None, answer),
                Err(e) => (Outcome::Failed, Some(e.to_string()), answer),
            }
        } else {
            // The pair stays whole: the conversation says it failed.
            let said = format!("(The agent {name} did not answer: {})", out.text);
            let _ = self.push(Message::assistant(said));
            let outcome = if cancel.is_cancelled() {
                Outcome::Cancelled
            } else {
                Outcome::Failed
            };
            (outcome, Some(out.text), String::new())
        }
    }

    /// What the asked agent changed in the workspace, said as a receipt.
    async fn ask_changes(
        &mut self,
        turn: crate::protocol::TurnId,
        command: &str,
        before: Option<crate::git::CheckpointId>,
    ) -> Vec<String> {
        // What the asked agent changed in the workspace is said, as a
        // command's changes are.
        let mut changed = Vec::new();
        if before.is_some() {
            self.checkpoint(crate::git::Kind::Command, &format!("after: {command}"))
                .await;
            if let Ok(c) = self
                .record_command_changes(&format!("ask-{turn}"), before)
                .await
            {
                changed = c;
            }
        }
        if !changed.is_empty() {
            let notes = vec![super::changed_words("the agent asked", &changed)];
            self.bus.publish(AgentEvent::Receipt {
                turn,
                written: Vec::new(),
                commands: 0,
                notes: notes.clone(),
            });
            let _ = self.log.append(&Record::Receipt {
                turn,
                written: Vec::new(),
                commands: 0,
                notes,
            });
        }
        changed
    }
}
