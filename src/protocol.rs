//! The wire between the agent and its front ends: plain serde types, no I/O.
//!
//! Commands go up as a `Submission { id, op }`; every event an op causes
//! comes down in an `Event { id, msg }` that carries the op's id, and the op
//! ends with exactly one `AgentEvent::Finished`. Events no op caused (the
//! session's start, a language server's own reports) carry id 0. Inside an
//! event, turn and call ids let a front end route it without keeping its
//! own clock.

mod ops;
mod words;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use ops::Op;
pub use words::{
    ask_commands, call_summary, extra_commands, helper_session_in, helper_session_note, parse_ask,
    receipt_text,
};

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
    /// The plan a plan-mode turn proposed, or an approved plan's steps as
    /// the turn left them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStep>,
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

/// Where a plan's step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
}

impl StepStatus {
    /// The mark a plan card shows before the step.
    pub fn mark(self) -> &'static str {
        match self {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[>]",
            StepStatus::Completed => "[x]",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s
            .trim()
            .to_ascii_lowercase()
            .replace([' ', '-'], "_")
            .as_str()
        {
            "pending" | "todo" | "left" => Some(StepStatus::Pending),
            "in_progress" | "current" | "doing" | "active" => Some(StepStatus::InProgress),
            "completed" | "done" | "complete" => Some(StepStatus::Completed),
            _ => None,
        }
    }
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step: String,
    #[serde(default)]
    pub status: StepStatus,
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

/// Where mm puts what an ACP permission answer cannot say (the option
/// chosen is only yes or no): the user's reason for a no and the hunks of
/// a partial yes, under `_meta.mm` of the answer. mm asking a helper `mm
/// -acp` sends it; mm as an agent reads it from any client.
pub const PERMISSION_META: &str = "mm";

impl ApprovalDecision {
    /// The reason and hunks, as `_meta` of an ACP permission answer.
    pub fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        let inner = match self {
            ApprovalDecision::No { reason: Some(r) } if !r.trim().is_empty() => {
                serde_json::json!({ "reason": r })
            }
            ApprovalDecision::Hunks { accepted } => serde_json::json!({ "hunks": accepted }),
            _ => return None,
        };
        let mut m = serde_json::Map::new();
        m.insert(PERMISSION_META.into(), inner);
        Some(m)
    }

    /// A plain yes or no, made exact by the `_meta` an answer carried.
    pub fn with_meta(self, meta: Option<&serde_json::Map<String, serde_json::Value>>) -> Self {
        let Some(inner) = meta.and_then(|m| m.get(PERMISSION_META)) else {
            return self;
        };
        match self {
            ApprovalDecision::No { reason } => ApprovalDecision::No {
                reason: inner
                    .get("reason")
                    .and_then(|r| r.as_str())
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string)
                    .or(reason),
            },
            ApprovalDecision::Yes => match inner.get("hunks").and_then(|h| h.as_array()) {
                Some(h) => ApprovalDecision::Hunks {
                    accepted: h
                        .iter()
                        .filter_map(|i| i.as_u64().map(|i| i as usize))
                        .collect(),
                },
                None => ApprovalDecision::Yes,
            },
            other => other,
        }
    }
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
    /// A running tool's helper (`task`, `ask_agent`) started its own
    /// session: its transcript, `mm -show SESSION`.
    ToolChild {
        turn: TurnId,
        call_id: String,
        session: String,
    },
    /// A file tool changed a file, or a command or helper did (the first
    /// 50 text files it changed, under its call).
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
    /// A plan: proposed at the end of a plan-mode turn (`approved`
    /// false: it waits for the user's yes), or approved and carried out,
    /// its steps' progress as the model marks it (`update_plan`).
    Plan {
        turn: TurnId,
        steps: Vec<PlanStep>,
        approved: bool,
    },
    /// The session's model is planning (`/plan`): read-only until a plan
    /// is approved or plan mode is left.
    PlanMode {
        on: bool,
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
        /// Files that differ from the checkpoint but mm has not changed
        /// since: the user's, left as they are.
        #[serde(default)]
        left: Vec<String>,
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
        /// Files changed beside mm (by the user) that it has not changed
        /// since: not the session's, not in `changes`.
        #[serde(default)]
        left: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helpers_call_is_summed_up_by_who_is_asked_and_what() {
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            call_summary(
                "task",
                &args(
                    serde_json::json!({"prompt": "Review calc.py\nfor bugs", "role": "reviewer"})
                )
            ),
            "reviewer — Review calc.py…"
        );
        assert_eq!(
            call_summary(
                "task",
                &args(serde_json::json!({"prompt": "Find the callers"}))
            ),
            "helper — Find the callers"
        );
    }

    #[test]
    fn a_reason_and_hunks_ride_beside_a_plain_permission_answer() {
        let no = ApprovalDecision::No {
            reason: Some("keep the test".into()),
        };
        let plain = ApprovalDecision::No {
            reason: Some("the user rejected it".into()),
        };
        assert_eq!(plain.clone().with_meta(no.meta().as_ref()), no);
        let some = ApprovalDecision::Hunks {
            accepted: vec![0, 2],
        };
        assert_eq!(ApprovalDecision::Yes.with_meta(some.meta().as_ref()), some);
        // Nothing to add: the plain answer stands, from mm or any client.
        assert!(ApprovalDecision::Yes.meta().is_none());
        assert_eq!(plain.clone().with_meta(None), plain);
        // A reason does not turn a yes into a no.
        assert_eq!(
            ApprovalDecision::Yes.with_meta(no.meta().as_ref()),
            ApprovalDecision::Yes
        );
    }

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

/// A picture that goes to the model with a message (see `llm::images`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Where it came from (a file name), for what is shown and logged.
    pub name: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, base64.
    pub data: String,
}
