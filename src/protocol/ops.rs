//! What the front ends ask of the agent: every Op, each answered by its
//! events and one Finished.

use super::*;

/// Everything a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    UserMessage {
        text: String,
        /// Pictures sent with it (an editor's, through ACP).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::Image>,
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
    /// `/plan REQUEST`: a turn in plan mode (read-only tools and
    /// commands; it ends in a numbered plan the user approves).
    Plan {
        text: String,
    },
    /// Carry out an approved plan (as the user left it): a turn whose
    /// steps' progress the model marks with `update_plan`.
    RunPlan {
        steps: Vec<String>,
    },
    /// Cancel the running turn, if any.
    Cancel,
    /// Start a new session (`/new`).
    NewSession,
    /// List the checkpoints with what rewinding to each would undo.
    ListCheckpoints,
    PreviewRewind {
        id: String,
        /// The turn of the checkpoint chosen: checkpoints of an unchanged
        /// tree share an id (turns 1, 2 and 3 of a session that changed
        /// no file), and the turn says which one.
        #[serde(default)]
        turn: Option<TurnId>,
    },
    /// Rewind; `overwrite` confirms overwriting files changed outside mm.
    Rewind {
        id: String,
        #[serde(default)]
        turn: Option<TurnId>,
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
    /// `/agents`: the roles a sub-task may work in.
    Agents,
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
