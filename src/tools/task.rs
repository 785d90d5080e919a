//! `task`: the model hands a self-contained sub-task (a search across the
//! repository, a review, a test run and its triage) to a child agent with
//! a fresh context: this same mm as a child `mm -acp`, on the session's
//! own config and server, in a role when one is named (`roles`). The
//! child's final answer, and the files it wrote, come back as the result.
//!
//! The child can do no more than the session: its mode is capped at the
//! session's, the fence and `-no-net` carry over, its requests are charged
//! to the session's `-max-requests`, and what it would have to ask the
//! user is refused (nobody answers a sub-task's questions); in `-auto` it
//! runs in `-auto` too.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{CallCtx, ToolOutput, arg_str};
use crate::approval::{Answer, ApprovalBroker};
use crate::bus::EventBus;
use crate::config::SandboxMode;
use crate::llm::ToolSpec;
use crate::protocol::{ApprovalDecision, ApprovalKind};
use crate::roles::Role;
use crate::toolname::{ToolName, arg};
use crate::tools::asking::{self, Asker};

/// What the helper's "always" covers, from its own option's words
/// ("Always allow `cargo test …` commands in this session").
fn always_scope(option: Option<&str>) -> String {
    let inner = option
        .map(str::trim)
        .and_then(|o| o.strip_prefix("Always allow "))
        .map(|o| o.strip_suffix(" in this session").unwrap_or(o))
        .filter(|o| !o.is_empty());
    match inner {
        Some(what) => format!("{what} in the helper"),
        None => "this command in the helper".into(),
    }
}

pub struct TaskEnv {
    pub roles: Vec<Role>,
    pub asker: Asker,
    pub bus: EventBus,
    /// The agent file the session loaded: the child loads it too.
    pub agent_file: Option<PathBuf>,
    /// The session asks before a file edit: so does the child (through
    /// this session's user). When it does not, neither does the child.
    pub ask_edits: bool,
    /// Who answers for this session: the child's questions go there.
    pub broker: Arc<ApprovalBroker>,
    /// The answers given so far, by role and prompt: the same sub-task
    /// asked again is answered from here, not run again (a real 1.5B
    /// model asked the same review 17 times, each a fresh helper).
    pub answered: std::sync::Mutex<Vec<(String, String, String)>>,
}

pub const DESCRIPTION: &str = "Hand a self-contained sub-task (a search across the repository, a review, running the tests and reading the failures) to a helper agent with a fresh context; its final answer is the result. It does not see this conversation: put everything it needs in `prompt`.";

/// The tool's schema; `role` only when there are roles.
pub fn spec(roles: &[Role]) -> ToolSpec {
    let mut props = json!({
        "prompt": {"type": "string", "description": "The whole sub-task, with every fact the helper needs"},
    });
    if !roles.is_empty() {
        let names: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
        let list: Vec<String> = roles
            .iter()
            .map(|r| format!("{}: {}", r.name, r.description))
            .collect();
        props[arg::ROLE] = json!({"type": "string", "enum": names, "description": list.join("\n")});
    }
    ToolSpec {
        name: ToolName::Task.as_str().into(),
        description: DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": props,
            "required": ["prompt"],
        }),
    }
}

/// Whether a session offers `task`: `taskTool: true` or roles to start
/// one in, tools for the child to work with, and room below the depth
/// limit of agents asking agents.
pub fn offered(settings: &crate::config::Settings, roles: &[Role]) -> bool {
    (settings.task_tool || !roles.is_empty())
        && (settings.bash_tool || settings.edit_tools)
        && asking::depth().0 < asking::MAX_DEPTH
}

impl TaskEnv {
    /// The child's arguments: `-acp`, the session's agent file, the role,
    /// and `-auto` when the session never asks.
    fn args(&self, role: Option<&Role>, ceiling: SandboxMode) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["-acp".into()];
        if let Some(f) = &self.agent_file {
            args.push(f.clone().into_os_string());
        }
        if let Some(r) = role {
            args.push("-role".into());
            args.push(r.name.clone().into());
        }
        if ceiling == SandboxMode::Auto {
            args.push("-auto".into());
        }
        args
    }

    /// The child's questions go to this session's user, when there is
    /// one to ask; otherwise they are refused.
    fn grant(&self, ctx: &CallCtx<'_>) -> asking::Grant {
        if !self.broker.can_ask() {
            return asking::Grant::No("nobody can answer a sub-task's question in this run");
        }
        let broker = self.broker.clone();
        let (turn, call_id, cancel) = (ctx.turn, ctx.call_id.to_string(), ctx.cancel.clone());
        asking::Grant::Ask(Arc::new(move |asked: asking::Asked| {
            let (broker, call_id, cancel) = (broker.clone(), call_id.clone(), cancel.clone());
            Box::pin(async move {
                // An edit is asked as the session's own edits are (its
                // hunks, the diff pane); a command with the helper's reason.
                let kind = match (asked.edit, asked.command) {
                    (Some(change), _) => ApprovalKind::Edit { change },
                    (None, command) => {
                        let (command, why) = command.unwrap_or((asked.what, String::new()));
                        ApprovalKind::Exec {
                            command,
                            reason: if why.trim().is_empty() {
                                "the helper (task tool) asks".into()
                            } else {
                                format!("the helper (task tool) asks: {}", why.trim())
                            },
                            always_key: String::new(),
                            scope: always_scope(asked.always.as_deref()),
                        }
                    }
                };
                match broker.ask(turn, &call_id, kind, &cancel).await {
                    Answer::User(d) => d,
                    _ => ApprovalDecision::No {
                        reason: Some("nobody answered".into()),
                    },
                }
            })
        }))
    }

    /// Runs the sub-task, the child capped at `ceiling` (the session's
    /// mode as it is now: read-only while a plan is made).
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &CallCtx<'_>,
        ceiling: SandboxMode,
    ) -> ToolOutput {
        let prompt = arg_str(args, arg::PROMPT).unwrap_or("");
        if prompt.trim().is_empty() {
            return ToolOutput::error("the prompt is empty: write the whole sub-task in `prompt`");
        }
        let role = match arg_str(args, arg::ROLE)
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            None => None,
            Some(name) => match self.roles.iter().find(|r| r.name == name) {
                Some(r) => Some(r),
                None => {
                    let known: Vec<&str> = self.roles.iter().map(|r| r.name.as_str()).collect();
                    return ToolOutput::error(format!(
                        "no role named {name:?}; the roles: {}",
                        if known.is_empty() {
                            "none (leave role out)".to_string()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
            },
        };
        let name = role.map_or_else(|| "task".to_string(), |r| format!("task:{}", r.name));
        let key = (name.clone(), prompt.trim().to_string());
        if let Some((.., before)) = self.answered.lock().ok().and_then(|a| {
            a.iter()
                .find(|(n, p, _)| (n, p) == (&key.0, &key.1))
                .cloned()
        }) {
            return ToolOutput::ok(format!(
                "This sub-task was done already in this session; its answer, as it came:\n{before}\n\n[not run again: answer the user from it, or give a different sub-task]"
            ));
        }
        let (say, tx, forward) = asking::card_progress(&self.bus, ctx);
        let mut asker = self.asker.clone();
        asker.ceiling = ceiling;
        let child = asking::Child {
            name: &name,
            args: self.args(role, ceiling),
            env: if self.ask_edits {
                Vec::new()
            } else {
                vec![(crate::config::APPROVE_EDITS_VAR, "0".to_string())]
            },
            grant: self.grant(ctx),
        };
        let result = asking::run_child(&child, prompt, &asker, Some(tx), ctx.cancel).await;
        let _ = forward.await;
        match result {
            Ok(a) => {
                say(asking::ChildNote::Step(format!(
                    "answered (session {})",
                    a.session
                )));
                let mut text = a.text.trim().to_string();
                if text.is_empty() {
                    return ToolOutput::error("the helper answered nothing");
                }
                text.push_str(&if a.written.is_empty() {
                    "\n\n[the helper wrote no file]".to_string()
                } else {
                    format!("\n\n[the helper wrote: {}]", a.written.join(", "))
                });
                text.push_str(&crate::protocol::helper_session_note(&a.session));
                if let Ok(mut done) = self.answered.lock() {
                    done.push((key.0, key.1, text.clone()));
                }
                ToolOutput::ok(text)
            }
            Err(e) => ToolOutput::error(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_the_roles_only_when_there_are_some() {
        let none = spec(&[]);
        assert!(none.parameters["properties"].get("role").is_none());
        let role = Role {
            name: "reviewer".into(),
            description: "Reviews a change".into(),
            model: None,
            tools: None,
            sandbox: None,
            body: "You review.".into(),
            file: PathBuf::new(),
        };
        let one = spec(&[role]);
        assert_eq!(
            one.parameters["properties"]["role"]["enum"],
            json!(["reviewer"])
        );
        assert!(
            one.parameters["properties"]["role"]["description"]
                .as_str()
                .unwrap()
                .contains("reviewer: Reviews a change")
        );
    }
}
