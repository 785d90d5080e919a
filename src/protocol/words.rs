//! Words every front end shows the same way: the receipt, a tool call in one
//! line, and the slash commands the session adds.

use super::*;

/// The receipt's words: `wrote a.rs, b.rs` or `no files written`, and the
/// commands that may have changed files besides.
pub fn receipt_text(written: &[String], commands: u32, notes: &[String]) -> String {
    let mut text = if written.is_empty() {
        "no files written".to_string()
    } else {
        format!("wrote {}", written.join(", "))
    };
    if commands > 0 {
        text.push_str(&format!(
            "; {commands} shell command{} ran that may have changed files",
            if commands == 1 { "" } else { "s" }
        ));
    }
    for n in notes {
        text.push_str(" · ");
        text.push_str(n);
    }
    text
}

/// A tool call in one line: its key argument (the path, the command, the
/// pattern), cut at 120 characters.
pub fn call_summary(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    use crate::toolname::{ToolName, arg};
    if name == ToolName::AskAgent || name == ToolName::Task {
        // Who is asked (an agent, a role, or a helper) and the start of
        // the prompt.
        let agent = args
            .get(arg::AGENT)
            .or_else(|| args.get(arg::ROLE))
            .and_then(|v| v.as_str())
            .unwrap_or("helper");
        let prompt = args.get(arg::PROMPT).and_then(|v| v.as_str()).unwrap_or("");
        let first = prompt.lines().next().unwrap_or("");
        let mut p: String = first.chars().take(60).collect();
        if p.len() < prompt.len() {
            p.push('…');
        }
        return format!("{agent} — {p}");
    }
    let key = ToolName::parse(name).map_or(arg::PATH, ToolName::key_arg);
    let text = args
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or(if key == arg::PATH { "." } else { "" });
    let one_line = text.lines().next().unwrap_or("");
    let mut s: String = one_line.chars().take(120).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// What a front end offers besides its built-in commands: `/ask-NAME`
/// for each agent, then the custom commands.
pub fn extra_commands(info: &SessionInfo) -> Vec<(String, String)> {
    let mut v = ask_commands(&info.agents);
    v.extend(
        info.commands
            .iter()
            .map(|(n, d)| (format!("/{n}"), d.clone())),
    );
    v
}

/// `/ask-NAME` and `/ask-with-context-NAME` for each agent under
/// `mmConfigs`, with what they do: every front end offers them.
pub fn ask_commands(agents: &[(String, String)]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (name, desc) in agents {
        let first = desc.split(['.', '\n']).next().unwrap_or("").trim();
        v.push((format!("/ask-{name}"), format!("ask {name}: {first}")));
        v.push((
            format!("/ask-with-context-{name}"),
            format!("ask {name}, sending this conversation too"),
        ));
    }
    v
}

/// `/ask-NAME PROMPT` or `/ask-with-context-NAME PROMPT`: (name,
/// with_context, prompt).
pub fn parse_ask(line: &str) -> Option<(String, bool, String)> {
    let (head, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let (name, ctx) = if let Some(n) = head.strip_prefix("/ask-with-context-") {
        (n, true)
    } else {
        (head.strip_prefix("/ask-")?, false)
    };
    (!name.is_empty()).then(|| (name.to_string(), ctx, rest.trim().to_string()))
}

/// How a `task` helper's answer names the session it ran
/// in: the model reads it, and a replay finds the helper's transcript by
/// it (`o` on its card after a resume).
const HELPER_SESSION: &str = "[the helper's session: ";

/// The line a helper's answer ends with.
pub fn helper_session_note(session: &str) -> String {
    format!("\n{HELPER_SESSION}{session}]")
}

/// The helper session a tool result names, if any.
pub fn helper_session_in(text: &str) -> Option<&str> {
    let at = text.rfind(HELPER_SESSION)? + HELPER_SESSION.len();
    let id = text[at..].split(']').next()?;
    (!id.is_empty() && !id.contains(char::is_whitespace)).then_some(id)
}
