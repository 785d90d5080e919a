//! `ask_agent`: hands a question to an agent declared under `mmConfigs`
//! (a child `mm -acp`, see `asking`) and returns its answer.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{CallCtx, ToolOutput, arg_str};
use crate::bus::EventBus;
use crate::config::SubAgent;
use crate::llm::ToolSpec;
use crate::tools::asking::{self as ask, Asker};

/// What the tool needs: the agents it may ask, and the asker's limits.
pub struct AskEnv {
    pub agents: BTreeMap<String, SubAgent>,
    pub asker: Asker,
    /// Where the child's progress goes (nested under the tool's card).
    pub bus: EventBus,
}

pub const DESCRIPTION: &str = "Ask another agent one question and get its answer as the result (JSON, for an agent that answers in JSON). It does not see this conversation: put everything it needs in `prompt`.";

/// The tool's schema: the agents by name, each with its description.
pub fn spec(agents: &BTreeMap<String, SubAgent>) -> ToolSpec {
    let names: Vec<&str> = agents.keys().map(String::as_str).collect();
    let list: Vec<String> = agents
        .values()
        .map(|a| {
            if a.description.trim().is_empty() {
                a.name.clone()
            } else {
                format!("{}: {}", a.name, a.description.trim())
            }
        })
        .collect();
    ToolSpec {
        name: crate::toolname::ToolName::AskAgent.as_str().into(),
        description: DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names, "description": list.join("\n")},
                "prompt": {"type": "string", "description": "The whole question, with every fact the agent needs"},
            },
            "required": ["agent", "prompt"],
        }),
    }
}

impl AskEnv {
    /// Asks, the child capped at `ceiling` (the session's mode as it is
    /// now: read-only while a plan is made).
    pub async fn run(
        &self,
        args: &Map<String, Value>,
        ctx: &CallCtx<'_>,
        ceiling: crate::config::SandboxMode,
    ) -> ToolOutput {
        let name = arg_str(args, "agent").unwrap_or("").trim();
        let prompt = arg_str(args, "prompt").unwrap_or("");
        let Some(sub) = self.agents.get(name) else {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            return ToolOutput::error(format!(
                "no agent named {name:?}; the agents you can ask: {}",
                known.join(", ")
            ));
        };
        if prompt.trim().is_empty() {
            return ToolOutput::error("the prompt is empty: write the whole question in `prompt`");
        }
        if let Err(e) = ask::check_depth(name) {
            return ToolOutput::refused(e);
        }
        let (say, tx, forward) = ask::card_progress(&self.bus, ctx);
        let mut asker = self.asker.clone();
        asker.ceiling = ceiling;
        let result = ask::ask(sub, prompt, &asker, Some(tx), ctx.cancel).await;
        let _ = forward.await;
        match result {
            Ok(a) => {
                say(ask::ChildNote::Step(format!(
                    "answered (session {})",
                    a.session
                )));
                if a.text.trim().is_empty() {
                    ToolOutput::error(format!("agent {name} answered nothing"))
                } else {
                    ToolOutput::ok(a.text)
                }
            }
            Err(e) => ToolOutput::error(e),
        }
    }
}
