//! A request that names one of the session's roles ("use the reviewer
//! role to…", "ask the tester agent…", "@reviewer …") starts a helper in
//! that role before the model's first look, as if the model had called
//! `task` itself; the model then answers with the helper's result in
//! front of it. A trial's 1.5B model, asked to "use the reviewer role",
//! reviewed the file itself instead and never started one.

use tokio_util::sync::CancellationToken;

use super::state::TurnState;
use super::{Agent, Stop};
use crate::llm::{Message, ToolCall};
use crate::protocol::Level;
use crate::toolname::{ToolName, arg};

/// Words after a role's name that make it the role, not a common noun
/// ("the reviewer role", "the tester agent", "a docs subagent").
const ROLE_WORDS: [&str; 7] = [
    "role",
    "roles",
    "agent",
    "agents",
    "subagent",
    "subagents",
    "helper",
];

/// Words shortly before the name that turn the request around ("do not
/// use the reviewer role", "without the tester agent").
const NOT: [&str; 6] = ["not", "don't", "dont", "never", "without", "no"];

impl Agent {
    /// The message mentions one of the session's roles by its name, in
    /// any form ("review calc.py with the reviewer"): the model may want
    /// to hand it on, so its tools stay.
    pub(super) fn mentions_a_role(&self, prompt: &str) -> bool {
        let offered = self.specs.iter().any(|s| s.name == ToolName::Task.as_str());
        self.tools
            .task
            .as_ref()
            .filter(|_| offered)
            .is_some_and(|env| {
                env.roles
                    .iter()
                    .any(|r| crate::patterns::has_word(prompt, &[r.name.as_str()]))
            })
    }

    /// The helper the request names, started and answered; nothing when
    /// the request names no role of this session or `task` is not offered.
    pub(super) async fn start_named_role(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        let offered = self.specs.iter().any(|s| s.name == ToolName::Task.as_str());
        let Some(env) = self.tools.task.as_ref().filter(|_| offered) else {
            return Ok(());
        };
        let names: Vec<String> = env.roles.iter().map(|r| r.name.clone()).collect();
        let Some(role) = named_role(&st.prompt, &names) else {
            return Ok(());
        };
        let call = ToolCall {
            id: format!("named_role_{}", self.turn),
            name: ToolName::Task.as_str().into(),
            arguments:
                serde_json::json!({ arg::ROLE: role, arg::PROMPT: helper_prompt(&st.prompt, role) })
                    .to_string(),
        };
        self.notice(
            Level::Info,
            format!("the request names the {role} role: a helper in it starts"),
        );
        let mut msg = Message::assistant("");
        msg.tool_calls.push(call.clone());
        self.push(msg)?;
        st.used_tools = true;
        self.run_batch(&[call], st, cancel).await?;
        // The request was the helper's: the model passes on what it
        // found, and nothing presses it to make a change of its own (a
        // trial's model, after a review, rewrote the reviewed file).
        st.text_only = true;
        st.answer_in_text = true;
        Ok(())
    }
}

/// What the helper is asked: the message without the words that
/// address the role ("use the reviewer role to review cart.py" becomes
/// "review cart.py"), so it reads as the task itself; the whole message
/// when nothing is left.
fn helper_prompt(prompt: &str, role: &str) -> String {
    let name = regex::escape(role);
    let lead = format!(
        r"(?i)^\s*(?:please\s+)?(?:(?:use|ask|have|let|get|start)\s+(?:the\s+|a\s+|an\s+|your\s+|my\s+)?{name}\s+(?:role|agent|subagent|helper)(?:\s+to)?|@{name})[\s,:]+"
    );
    let rest = crate::patterns::regex(&lead)
        .map(|re| re.replace(prompt, "").into_owned())
        .unwrap_or_else(|_| prompt.to_string());
    if rest.trim().is_empty() {
        prompt.to_string()
    } else {
        rest
    }
}

/// The role of `roles` the prompt asks for by name: `@name`, or the name
/// followed by "role", "agent", "subagent" or "helper", not negated.
fn named_role<'a>(prompt: &str, roles: &'a [String]) -> Option<&'a str> {
    let words: Vec<String> = prompt
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '@' | '-' | '_' | '\'')))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-').to_lowercase())
        .collect();
    let negated = |i: usize| {
        words[i.saturating_sub(4)..i]
            .iter()
            .any(|w| NOT.contains(&w.as_str()) || w.ends_with("n't"))
    };
    for (i, w) in words.iter().enumerate() {
        let hit = roles.iter().find(|r| {
            let r = r.to_lowercase();
            let plain = *w == r
                && words
                    .get(i + 1)
                    .is_some_and(|n| ROLE_WORDS.contains(&n.as_str()));
            plain || w.strip_prefix('@') == Some(r.as_str())
        });
        if let Some(r) = hit
            && !negated(i)
        {
            return Some(r.as_str());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::named_role;

    #[test]
    fn a_role_is_named_by_its_name_and_a_role_word_or_an_at() {
        let roles = vec!["reviewer".to_string(), "test-writer".to_string()];
        let cases = [
            (
                "use the reviewer role to review shop/cart.py",
                Some("reviewer"),
            ),
            (
                "Ask the Reviewer agent whether calc.py is right",
                Some("reviewer"),
            ),
            ("@reviewer look at the diff", Some("reviewer")),
            (
                "have the test-writer subagent add tests for parse()",
                Some("test-writer"),
            ),
            ("Fix the bug; the reviewer will look later", None),
            ("do not use the reviewer role, just fix it", None),
            ("Don't ask the reviewer agent", None),
            ("the roles are listed in .mm/agents", None),
            ("email me@reviewer.org", None),
        ];
        for (prompt, want) in cases {
            assert_eq!(named_role(prompt, &roles), want, "{prompt}");
        }
    }

    #[test]
    fn the_helper_is_asked_the_task_not_to_take_the_role() {
        use super::helper_prompt;
        let cases = [
            (
                "use the reviewer role to review shop/cart.py",
                "review shop/cart.py",
            ),
            (
                "Please ask the Reviewer agent to check calc.py",
                "check calc.py",
            ),
            ("@reviewer look at the diff", "look at the diff"),
            ("@reviewer: what is wrong?", "what is wrong?"),
            (
                "review cart.py with the reviewer role",
                "review cart.py with the reviewer role",
            ),
            ("use the reviewer role", "use the reviewer role"),
        ];
        for (prompt, want) in cases {
            assert_eq!(helper_prompt(prompt, "reviewer"), want, "{prompt}");
        }
    }
}
