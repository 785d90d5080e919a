//! The wire between the agent and its front ends: plain serde types, no I/O.
//!
//! Commands go up as a `Submission { id, op }`; every event an op causes
//! comes down in an `Event { id, msg }` that carries the op's id, and the op
//! ends with exactly one `AgentEvent::Finished`. Events no op caused (the
//! session's start, a language server's own reports) carry id 0. Inside an
//! event, turn and call ids let a front end route it without keeping its
//! own clock.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Turns are numbered from 1 within a process run (a resumed session goes on
/// from the number of user messages already in its log).
pub type TurnId = u64;

/// Numbers a front end's commands, from 1; 0 means "no op".
pub type OpId = u64;

/// A command with the id its events and its `Finished` will carry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Submission {
    pub id: OpId,
    pub op: Op,
}

/// An event with the id of the op that caused it (0: none did).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Event {
    pub id: OpId,
    pub msg: AgentEvent,
}

/// The facts about a session that every front end shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session: String,
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub context_window: Option<u64>,
    /// The sandbox in words: `workspace-write, fence: bwrap`.
    pub sandbox: String,
    /// `read-only`, `workspace-write` or `full-access`.
    pub sandbox_mode: String,
    /// The OS fence's name (`bwrap`, `landlock`, `none`).
    pub fence: String,
    pub network: bool,
    pub resumed: bool,
    /// Every answer is JSON of a declared shape (`structuredOutput`), and
    /// the agent has no tools.
    #[serde(default)]
    pub structured: bool,
    /// The agents under `mmConfigs` (name, description): `/ask-NAME`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<(String, String)>,
    /// Custom slash commands (name without `/`, description).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<(String, String)>,
    /// A turn longer than this (ms) ends with the bell and a notification;
    /// None: never (`notifyAfter: 0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_after_ms: Option<u64>,
    /// How requests are made from the conversation: `compact` or `rebuild`.
    #[serde(default)]
    pub context_mode: String,
}

/// How each request is made from the conversation (`contextMode`, `/ctx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContextMode {
    /// The whole conversation, compacted into a summary near the window.
    #[default]
    Compact,
    /// Rebuilt for each request: the recent turns without stale file
    /// reads, and a session-state block (files changed, the last check,
    /// earlier requests).
    Rebuild,
}

impl ContextMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "compact" => Some(ContextMode::Compact),
            "rebuild" => Some(ContextMode::Rebuild),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContextMode::Compact => "compact",
            ContextMode::Rebuild => "rebuild",
        }
    }
}

/// How an op ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum OpResult {
    /// A turn ended: what it came to.
    Turn { report: Box<TurnResult> },
    /// The op did what it was asked (its answer came as events).
    Done,
    /// It could not; the error was also published as a notice.
    Failed { error: String },
}

/// What a turn came to: the answer, what it wrote, what the harness found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnResult {
    pub turn: TurnId,
    pub outcome: Outcome,
    pub answer: String,
    pub written: Vec<String>,
    /// Files that shell commands (the model's or the harness's check runs)
    /// changed, as the checkpoints around them show.
    pub changed_by_commands: Vec<String>,
    /// What tools warned of (a git repository a command made).
    pub warnings: Vec<String>,
    pub error: Option<String>,
    /// The last test run the harness made this turn.
    pub tests: Option<TestReport>,
    /// Claims in the answer that the turn's facts contradict.
    pub unbacked: Vec<String>,
    /// Model requests this turn and their tokens.
    pub requests: u32,
    pub usage: Usage,
}

/// A test (or reproduction) run the harness made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestReport {
    pub command: String,
    /// None: it could not run (refused, cancelled).
    pub passed: Option<bool>,
    pub summary: String,
    /// Failing runs fed back to the model.
    pub attempts: u32,
}

/// How a turn ended. Maps one to one onto the headless exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered without tools, within its budgets.
    Done,
    /// A request or the loop failed (server error, cut stream, log error).
    Failed,
    /// `maxTurns`/`-max-rounds` or `-max-requests` ran out.
    Budget,
    /// The final reply was cut by the completion token limit.
    Truncated,
    /// The user cancelled the turn.
    Cancelled,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Done => 0,
            Outcome::Failed => 1,
            Outcome::Budget => 3,
            Outcome::Truncated => 4,
            Outcome::Cancelled => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Failed => "failed",
            Outcome::Budget => "budget",
            Outcome::Truncated => "truncated",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Token counts of one request or summed over several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.prompt += other.prompt;
        self.cached += other.cached;
        self.completion += other.completion;
    }

    /// What was added since `earlier`.
    pub fn minus(&self, earlier: &Usage) -> Usage {
        Usage {
            prompt: self.prompt.saturating_sub(earlier.prompt),
            cached: self.cached.saturating_sub(earlier.cached),
            completion: self.completion.saturating_sub(earlier.completion),
        }
    }
}

/// Figures about one request that a status line shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestStats {
    pub usage: Usage,
    /// Milliseconds from sending the request to the first streamed delta.
    pub first_token_ms: Option<u64>,
    /// Completion tokens per second, as the server measured it when it says.
    pub tokens_per_second: Option<f64>,
    /// The prompt as each context mode would have sent it, estimated
    /// from its size: (compact, rebuild). None for a summary request.
    pub modes: Option<(u64, u64)>,
}

/// What a finished tool call came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    /// The sandbox or the user said no.
    Refused,
    /// Never ran: cancelled, cut reply, invalid batch, repeated failure.
    NotRun,
}

/// What kind of change a file went through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// One file change with the text before and after, so any front end can
/// render its own diff. Big payloads travel behind `Arc`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileChange {
    /// Path relative to the workspace root, with `/` separators.
    pub path: String,
    pub kind: ChangeKind,
    pub before: Arc<str>,
    pub after: Arc<str>,
    pub added: usize,
    pub removed: usize,
}

/// A "may I?" question the sandbox could not answer by itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub id: u64,
    pub turn: TurnId,
    pub call_id: String,
    pub kind: ApprovalKind,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A shell command outside the read-only allowlist.
    Exec {
        command: String,
        /// Why it is not allowlisted, in a few words.
        reason: String,
        /// What "always" would allow for the rest of the session.
        always_key: String,
        /// The same in words: "`cargo test …` commands", "this exact command".
        #[serde(default)]
        scope: String,
    },
    /// A file edit, with the change it would make.
    Edit { change: FileChange },
}

/// The answer to an `ApprovalRequest`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    Yes,
    /// No, with an optional reason that is passed on to the model.
    No {
        reason: Option<String>,
    },
    /// Yes, and the same for this command prefix or file for the session.
    Always,
    /// Apply only these hunks of an edit (indices into the change's hunks
    /// as `diff::hunks(before, after, diff::CONTEXT)` lists them).
    Hunks {
        accepted: Vec<usize>,
    },
}

/// What kind of moment a checkpoint records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// Before a turn.
    Turn,
    /// Before a shell command that may change files.
    Command,
    /// Before a rewind, so the rewind can be undone.
    Safety,
}

impl CheckpointKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointKind::Turn => "turn",
            CheckpointKind::Command => "command",
            CheckpointKind::Safety => "safety",
        }
    }
}

/// A checkpoint as the front ends list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    /// The commit id (hex).
    pub id: String,
    pub turn: TurnId,
    pub kind: CheckpointKind,
    /// When it was taken (RFC 3339, UTC).
    pub time: String,
    /// The turn's prompt or the command, first line.
    pub label: String,
    /// Set on the checkpoint taken before a rewind of the conversation:
    /// the session whose log holds the conversation as it was then, so
    /// rewinding to this checkpoint brings it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

/// A checkpoint with what going back to it would undo.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointSummary {
    pub info: CheckpointInfo,
    pub files: Vec<String>,
    pub added: usize,
    pub removed: usize,
}

/// What a rewind restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindMode {
    /// The files only.
    Code,
    /// The conversation only (back to before the checkpoint's turn).
    Conversation,
    Both,
}

/// What a front end asks a language server about a place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NavKind {
    Definition,
    References,
}

/// A notice's weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagLevel {
    Error,
    Warning,
    Info,
}

/// One diagnostic of a language server, 1-based.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagItem {
    pub line: u32,
    pub col: u32,
    pub level: DiagLevel,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A place in a file a language server pointed at, 1-based, with the
/// source line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocItem {
    pub path: String,
    pub line: u32,
    pub col: u32,
    pub text: String,
}

/// Everything the agent tells its front ends.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    SessionStarted {
        info: SessionInfo,
    },
    TurnStarted {
        turn: TurnId,
        prompt: String,
    },
    /// A model request is about to be sent (after retries, once per attempt).
    RequestStarted {
        turn: TurnId,
        round: u32,
        attempt: u32,
    },
    /// How the request in flight is going, about once a second: tokens
    /// generated so far (the server's count when it gives one, which
    /// includes tokens it does not stream), their rate, and while the
    /// prompt is still being read, how far the server is.
    Generating {
        turn: TurnId,
        tokens: u64,
        tokens_per_second: Option<f64>,
        /// Prompt tokens read and in all, before the first token.
        prompt: Option<(u64, u64)>,
        /// The server is busy with another client's request; this one
        /// waits its turn (nothing of it is read or generated yet).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        queued: bool,
    },
    /// A piece of the answer text.
    Token {
        turn: TurnId,
        text: String,
    },
    /// A piece of the model's reasoning.
    Reasoning {
        turn: TurnId,
        text: String,
    },
    /// The model started writing a tool call (its name is known).
    ToolCallStarted {
        turn: TurnId,
        call_id: String,
        name: String,
    },
    /// More of a tool call's JSON arguments arrived while streaming.
    ToolCallDelta {
        turn: TurnId,
        call_id: String,
        delta: String,
    },
    /// A tool call is about to run (validated, permission settled).
    ToolCallRunning {
        turn: TurnId,
        call_id: String,
        name: String,
        /// The key argument in one line: a path, a command, a pattern.
        summary: String,
        arguments: String,
    },
    ToolCallFinished {
        turn: TurnId,
        call_id: String,
        name: String,
        summary: String,
        status: ToolStatus,
        output: Arc<str>,
    },
    /// A line of what a running tool does: an asked agent's steps.
    ToolProgress {
        turn: TurnId,
        call_id: String,
        text: String,
    },
    /// A file tool changed a file.
    FileChanged {
        turn: TurnId,
        call_id: String,
        change: Arc<FileChange>,
    },
    ApprovalRequested {
        request: ApprovalRequest,
    },
    ApprovalResolved {
        id: u64,
        decision: ApprovalDecision,
    },
    /// Figures of one finished request.
    Usage {
        turn: TurnId,
        stats: RequestStats,
        /// Prompt and completion tokens of the last request of the
        /// conversation: how full the context is. 0 for a request beside
        /// it (a summary, a commit message, a focused side request), which
        /// says nothing of the conversation's size.
        context_used: u64,
    },
    /// How many tokens the next request will send: the conversation as it
    /// stands, by the bytes per token the server last measured.
    Context {
        tokens: u64,
    },
    /// The conversation was compacted: `replaced` earlier messages are
    /// sent as a summary from now on (the log keeps them whole).
    Compacted {
        turn: TurnId,
        replaced: usize,
        summary: String,
        tokens_before: u64,
        tokens_after: u64,
        /// Near the window on its own (false: `/compact`).
        auto: bool,
    },
    Notice {
        turn: Option<TurnId>,
        level: Level,
        text: String,
    },
    /// What the turn wrote: `wrote a.rs, b.rs` or `no files written`.
    Receipt {
        turn: TurnId,
        written: Vec<String>,
        /// Shell commands off the read-only list that ran: their effects
        /// on files are not in `written`.
        commands: u32,
        /// What the harness checked (`tests: 4 passed`), claims the
        /// facts did not back, and the turn's cost.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    TurnFinished {
        turn: TurnId,
        outcome: Outcome,
        answer: String,
        error: Option<String>,
    },
    /// The session was replaced by a new one (`/new`).
    SessionCleared {
        session: String,
    },
    CheckpointCreated {
        turn: TurnId,
        checkpoint: CheckpointInfo,
    },
    /// The answer to `Op::ListCheckpoints`, most recent first.
    Checkpoints {
        list: Vec<CheckpointSummary>,
    },
    /// What a rewind to `id` would do: each change goes from the file now
    /// (`before`) to the file at the checkpoint (`after`).
    RewindPreview {
        id: String,
        changes: Vec<FileChange>,
        /// Files that are no longer as mm last left them (changed by the user).
        foreign: Vec<String>,
    },
    /// The conversation was cut back to before `turn` (a rewind).
    ConversationTrimmed {
        turn: TurnId,
        session: String,
    },
    /// The session's changes since a checkpoint (`/diff`).
    SessionDiff {
        from: String,
        changes: Vec<FileChange>,
    },
    /// A commit message written by the model, for the user to approve or edit.
    CommitProposed {
        message: String,
        files: Vec<String>,
    },
    Committed {
        id: String,
        summary: String,
    },
    /// The op in the envelope ended; nothing more comes for its id.
    Finished {
        result: OpResult,
    },
    /// A language server's diagnostics for one file (all of them, as now).
    Diagnostics {
        path: String,
        errors: u32,
        warnings: u32,
        items: Vec<DiagItem>,
    },
    /// What the language server said about the file a tool call wrote:
    /// `new_errors` when it knew the file before the change.
    EditChecked {
        call_id: String,
        path: String,
        errors: u32,
        new_errors: Option<u32>,
        /// Checked before approval, on the proposed text.
        preview: bool,
    },
    /// Definitions or references asked for by a front end.
    Locations {
        kind: NavKind,
        /// What was asked about (`calc.py:3:5`).
        query: String,
        items: Vec<LocItem>,
        error: Option<String>,
    },
}

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
    if name == ToolName::AskAgent {
        let agent = args.get(arg::AGENT).and_then(|v| v.as_str()).unwrap_or("");
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

/// Everything a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    UserMessage {
        text: String,
    },
    Approval {
        id: u64,
        decision: ApprovalDecision,
    },
    /// `/ask-NAME PROMPT`: the agent NAME (under `mmConfigs`) answers as a
    /// child; the question and its answer join the conversation.
    /// `with_context`: the conversation so far is sent along.
    AskAgent {
        name: String,
        prompt: String,
        with_context: bool,
    },
    /// Cancel the running turn, if any.
    Cancel,
    /// Start a new session (`/new`).
    NewSession,
    /// List the checkpoints with what rewinding to each would undo.
    ListCheckpoints,
    PreviewRewind {
        id: String,
    },
    /// Rewind; `overwrite` confirms overwriting files changed outside mm.
    Rewind {
        id: String,
        mode: RewindMode,
        overwrite: bool,
    },
    /// The session's changes since its first checkpoint (or `from`).
    SessionDiff {
        from: Option<String>,
    },
    /// Take up another saved session of this workspace (the `/sessions`
    /// picker): its conversation, checkpoints and "always" answers.
    SwitchSession {
        id: String,
    },
    /// The session's changes since its last `/commit` (or its start): what
    /// the tree marks. Answered with a `SessionDiff`.
    UncommittedDiff,
    /// Ask the model for a commit message for the session's changes.
    ProposeCommit,
    /// Stage the session's changes and commit them with this message.
    Commit {
        message: String,
    },
    /// Revert the last applied edit.
    Undo,
    /// What the session and its last turn cost (`/stats`), as a notice.
    Stats,
    /// The session's tokens and their price (`/cost`), as a notice.
    Cost,
    /// `/mcp`: the MCP servers, how each stands, and their tools.
    Mcp,
    /// A custom slash command (`.mm/commands/NAME.md`) with its arguments:
    /// a turn with the command's prompt (and model and tools, when it
    /// names them).
    RunCommand {
        name: String,
        args: String,
    },
    /// `/skills`: the skills offered, with where each comes from.
    Skills,
    /// `/init`: write a starting `AGENTS.md` from a look at the repository.
    Init,
    /// Text piped to `mm -p PROMPT` on stdin: it goes with the next
    /// message as context (cut to fit the window), not as the request.
    Piped {
        text: String,
    },
    /// `/model [NAME]`: list the server's models (None), or switch the
    /// session to NAME from the next request on.
    Model {
        name: Option<String>,
    },
    /// `/ctx [compact|rebuild]`: switch how requests are made from the
    /// conversation (None: keep it), and say what each mode sends.
    Ctx {
        mode: Option<ContextMode>,
    },
    /// Summarize the conversation so far into one message (`/compact`),
    /// with what the summary should keep most.
    Compact {
        focus: Option<String>,
    },
    /// Write the session as Markdown (or JSONL events when the path ends
    /// in `.jsonl`); default `mm-<session>.md` in the workspace.
    Export {
        path: Option<String>,
    },
    /// The user opened a file: its language server starts (if need be)
    /// and reports on it.
    OpenFile {
        path: String,
    },
    /// Go to definition / find references at a place (1-based).
    Navigate {
        kind: NavKind,
        path: String,
        line: u32,
        col: u32,
    },
    Shutdown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_documented_exit_codes() {
        let codes: Vec<i32> = [
            Outcome::Done,
            Outcome::Failed,
            Outcome::Budget,
            Outcome::Truncated,
            Outcome::Cancelled,
        ]
        .iter()
        .map(|o| o.exit_code())
        .collect();
        assert_eq!(codes, vec![0, 1, 3, 4, 130]);
    }

    #[test]
    fn events_serialize_with_a_type_tag() {
        let ev = AgentEvent::Token {
            turn: 3,
            text: "hi".into(),
        };
        let json = serde_json::to_string(&ev).unwrap();
        assert_eq!(json, r#"{"type":"token","turn":3,"text":"hi"}"#);
        let op: Op = serde_json::from_str(r#"{"op":"cancel"}"#).unwrap();
        assert!(matches!(op, Op::Cancel));
    }
}
