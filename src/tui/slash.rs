//! The TUI's slash-command table: what the palette, completion and F1
//! show. It uses nothing of the app, so the panes that list the commands
//! do not reach back up to it; what each command does is in `commands`.

/// The slash commands the TUI knows, with what they do.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "keys and commands"),
    ("/new", "start a new session"),
    (
        "/sessions",
        "pick one of this workspace's sessions to resume here",
    ),
    (
        "/theme",
        "switch theme: /theme dark | light | high-contrast",
    ),
    ("/keymap", "switch keymap: /keymap default | vim | emacs"),
    (
        "/mouse",
        "mouse capture on/off (off: select text with the terminal)",
    ),
    ("/tree", "show or hide the file tree"),
    ("/diff", "review the session's changes in the diff pane"),
    (
        "/rewind",
        "go back to a checkpoint: files, conversation or both",
    ),
    ("/undo", "revert the last edit"),
    (
        "/stats",
        "requests, tokens, cache share and speeds; the window; the cost",
    ),
    ("/cost", "the session's tokens and what they cost"),
    (
        "/compact",
        "summarize the conversation so far (/compact FOCUS: what to keep)",
    ),
    ("/mcp", "the MCP servers, how each stands, and their tools"),
    ("/skills", "the skills the model may load"),
    (
        "/init",
        "write a starting AGENTS.md from a look at the repository",
    ),
    (
        "/model",
        "the server's models; /model NAME switches from the next request",
    ),
    (
        "/ctx",
        "how requests are made: /ctx compact | rebuild; what each sends",
    ),
    (
        "/copy",
        "copy the last answer (/copy N: the N-th counting back)",
    ),
    (
        "/export",
        "write the session as Markdown (/export PATH; .jsonl: events)",
    ),
    (
        "/diagnostics",
        "the language servers' errors and warnings (F8); Enter opens one",
    ),
    (
        "/commit",
        "commit the session's changes with a message the model writes",
    ),
    ("/quit", "leave"),
];

/// The built-in commands, then `extra` (`/ask-NAME` for each agent under
/// `mmConfigs`, the custom commands: `protocol::extra_commands`).
pub fn all(extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = COMMANDS
        .iter()
        .map(|(c, d)| (c.to_string(), d.to_string()))
        .collect();
    v.extend(extra.iter().cloned());
    v
}
