//! The agent loop: a turn is rounds of (request, tool batch) until the
//! model answers without tools. Everything it does goes out on the bus;
//! every message goes into the session log before the next step.
//!
//! The guarantees, each with a test that tries to break it: no tool runs
//! from an incomplete reply; a batch is judged whole before any of it
//! runs; every call gets an answer, cancelled or not; the same failing
//! call right after its error is not run again; budgets end the turn.

mod asking;
mod asserts;
pub mod batch;
mod calls;
mod candidates;
mod checkpoints;
mod compact;
mod ending;
mod evidence;
mod examples;
mod extract;
mod focus;
mod follow;
pub mod harness;
mod own_writes;
pub mod planning;
mod progress;
pub mod prompt;
mod rebuild;
pub mod recover;
mod rename;
mod request;
mod review;
mod roles_named;
mod rustcheck;
pub mod service;
mod session_ops;
mod stall;
mod state;
mod stats;
mod structured;
mod trace;
mod turn;
mod window;

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::config::Settings;
use crate::llm::{
    self, ChatRequest, ClientEvent, LlmClient, LlmError, Message, RequestBudget, Role, StreamDelta,
    Streamed, ToolCall, ToolSpec,
};
use crate::protocol::{
    AgentEvent, Level, Outcome, RequestStats, SessionInfo, ToolStatus, TurnId, Usage,
};
use crate::session::{Record, SessionError, SessionLog};
use crate::toolname::ToolName;
use crate::tools::{self, CallCtx, ToolEnv, ToolOutput, ToolSet};

use batch::Checked;
use state::{Shown, TurnState, text_hash};

/// A turn stops after this many rounds in a row where every call was a
/// refused repeat: the model is looping (seen: 52 and 106 identical calls
/// in a row from other agents' small models).
const MAX_REPEAT_ROUNDS: u32 = 3;
/// Rounds in a row that change nothing, after mm's own tries, before the
/// turn ends with a report.
const MAX_UNCHANGED_ROUNDS: u32 = 5;
/// Nudges per turn when the model stops on a promise or claims a change
/// it never made (Qwen2.5-Coder 1.5B ends on "Let's fix the bug." after a
/// read about one time in three).
const MAX_NUDGES: u32 = 2;
/// Replies whose tool call the server could not read, before the turn
/// ends on one.
const MAX_BAD_REPLIES: u32 = 3;
/// The longest cycle of repeated calls the loop detector looks for.
const MAX_CYCLE: usize = 8;
/// Writes back to a file's earlier contents before the loop guard speaks.
const MAX_REVISITS: u32 = 3;
/// Harness follow-ups per turn (empty answers, claims the facts do not
/// back, answers about tool calls, callers left behind), besides the
/// test runs `verifyAttempts` counts.
const MAX_FOLLOW_UPS: u32 = 4;
/// Lines of a failing run fed back to the model.
const FAILURE_LINES: usize = 40;

/// The receipt's note on what shell commands changed: at most 8 paths.
/// How much of the window text piped on stdin may take.
const PIPED_SHARE: f64 = 0.3;
/// Its cap in bytes when the window is not known.
const PIPED_CAP_UNKNOWN: usize = 32 * 1024;

/// Piped text as the model sees it: fenced with a fence longer than any
/// run of backticks inside, so the text cannot close it.
pub(crate) fn piped_note(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("[piped to mm on stdin, for context]\n{fence}\n{text}\n{fence}")
}

fn changed_words(by: &str, paths: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = format!(
        "changed by {by}: {}",
        paths
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

/// How a turn ended, for the front end that asked.
pub use crate::protocol::{TestReport, TurnResult};

pub struct AgentParts {
    pub settings: Arc<Settings>,
    pub model: String,
    pub context_window: Option<u64>,
    pub client: Arc<LlmClient>,
    pub budget: Arc<RequestBudget>,
    pub tools: Arc<ToolEnv>,
    pub bus: EventBus,
    pub log: SessionLog,
    /// Messages of a resumed session (no system message).
    pub history: Vec<Message>,
    /// Nobody can answer approvals (headless).
    pub unattended: bool,
    /// The session was resumed from its log.
    pub resumed: bool,
    /// Where each turn of `history` starts.
    pub turn_starts: Vec<usize>,
    /// The session's checkpoints so far (a resumed session has some).
    pub checkpoints: Vec<crate::protocol::CheckpointInfo>,
    /// None when checkpoints are off.
    pub git: Option<Arc<std::sync::Mutex<crate::git::Store>>>,
    /// What mm last made of each file (a resumed session's, from its log).
    pub made: HashMap<String, String>,
    /// A resumed session's bytes a token, from its log's last request.
    pub bytes_per_token: Option<f64>,
    /// When mm changed each file, against the checkpoints.
    pub made_from: crate::session::MadeFrom,
    /// Said once at start: the server's window is small (Ollama).
    pub window_note: Option<String>,
    /// Said once at start: the server does not list the model.
    pub model_note: Option<String>,
}

pub struct Agent {
    settings: Arc<Settings>,
    model: String,
    context_window: Option<u64>,
    client: Arc<LlmClient>,
    /// `auxUrl`'s server, for housekeeping requests (None: the main one).
    aux: Option<Arc<LlmClient>>,
    budget: Arc<RequestBudget>,
    tools: Arc<ToolEnv>,
    specs: Vec<ToolSpec>,
    bus: EventBus,
    log: SessionLog,
    /// The system message first, then the conversation.
    messages: Vec<Message>,
    turn: TurnId,
    usage: Usage,
    turn_starts: Vec<usize>,
    checkpoints: Vec<crate::protocol::CheckpointInfo>,
    git: Option<Arc<std::sync::Mutex<crate::git::Store>>>,
    /// What mm last made of each file it changed (blob id, "" deleted),
    /// this session and the runs of it before a resume.
    made: HashMap<String, String>,
    /// When mm changed each file: a rewind or the session diff goes back
    /// to where mm first changed it, not past the user's own work.
    made_from: crate::session::MadeFrom,
    /// Applied edits, last on top (`/undo`).
    edits: Vec<crate::protocol::FileChange>,
    /// The last turn's requests and tokens (`/stats`).
    last_turn: Option<(u32, Usage)>,
    /// Requests of the conversation itself sent so far (not side
    /// requests, not helpers'): what `/stats` counts.
    conversation_requests: u32,
    /// What tools warned the user of this turn (a git repository a command
    /// made): `-json` carries them.
    tool_warnings: Vec<String>,
    /// What the running checkpoint op failed with (`Finished` says it).
    op_error: Option<String>,
    /// Checkpoint warnings already given (each is said once).
    git_warned: std::collections::HashSet<String>,
    /// Whether this run resumed a saved session.
    resumed: bool,
    /// What requests leave out to fit the context window.
    shed: window::Shed,
    /// Request-body bytes per prompt token, as the last reply measured.
    bytes_per_token: f64,
    /// `structuredOutput`: every answer is JSON of this shape.
    structured: Option<structured::Answers>,
    /// Said at the first announce, then dropped.
    window_note: Option<String>,
    model_note: Option<String>,
    /// Automatic compaction waits until the conversation has this many
    /// messages (after a refused summary).
    compact_retry_at: usize,
    /// The plan proposed or being carried out, its steps as last marked.
    plan: Option<Vec<crate::protocol::PlanStep>>,
    /// An approved plan is being carried out (`run_plan`): follow-ups
    /// restate its current step, not the whole plan.
    carrying_plan: bool,
    /// The running (or last) turn's request, as the user typed it.
    task: String,
    /// Files the user said to leave alone, until a message asks for them.
    hands_off: Vec<String>,
    /// Requests traced so far (`trace: true`), and whether writing failed.
    trace_seq: u32,
    trace_failed: bool,
    /// When this run began (`budgetMinutes`), and the budgets' next levels.
    started: std::time::Instant,
    budgets: stats::Budgets,
    /// How requests are made from the conversation (`/ctx` switches).
    ctx_mode: crate::config::ContextMode,
    /// Rebuilt requests begin at this message (0: at the first).
    rebuild_from: usize,
    /// Tool calls that went through (`Ok`), by id: a write among them
    /// makes earlier reads of its file stale.
    ok_calls: std::collections::HashSet<String>,
    /// The last check mm ran (the tests, the request's command).
    last_check: Option<crate::protocol::TestReport>,
    /// The figures the queries answered during a turn read (`/stats`).
    glance_slot: stats::GlanceSlot,
    /// Notes joined to the session's next message: a `turnEnd` hook's
    /// failure, a file mm put back at the end of a turn.
    carried: Vec<String>,
    /// The next message carries text piped on stdin.
    piped_next: bool,
    /// Images sent with the next prompt (an editor's, through ACP).
    images_next: Vec<crate::llm::Image>,
}

/// What one request came to, short of an error that ends the turn.
enum Sent {
    Reply(Streamed),
    /// The server refused it as longer than the context window.
    Overflow {
        requested: Option<u64>,
        window: Option<u64>,
        body_bytes: usize,
        /// The server's words.
        message: String,
    },
}

/// Why the loop stopped early.
enum Stop {
    Outcome(Outcome, Option<String>),
    Log(SessionError),
    /// The model is looping: end with a final report, as at the budget.
    Loop(String),
    /// The reply ran away (a block repeated over and over, or thousands
    /// of tokens the server never streamed) and was stopped: how.
    Runaway(String),
    /// The server could not read the model's tool call (not valid JSON):
    /// the server's words.
    BadReply(String),
}

impl Stop {
    /// The turn's outcome when the loop stopped this way, and the error
    /// to report.
    fn ending(self) -> (Outcome, Option<String>) {
        match self {
            Stop::Outcome(o, e) => (o, e),
            Stop::Log(e) => (Outcome::Failed, Some(e.to_string())),
            Stop::Loop(why) => (Outcome::Budget, Some(why)),
            Stop::Runaway(how) => (
                Outcome::Failed,
                Some(format!("the model's replies kept running away ({how})")),
            ),
            Stop::BadReply(why) => (
                Outcome::Failed,
                Some(format!(
                    "the model's tool calls kept failing to parse ({why})"
                )),
            ),
        }
    }
}

impl From<SessionError> for Stop {
    fn from(e: SessionError) -> Self {
        Stop::Log(e)
    }
}

impl Agent {
    /// The session's language servers, if any.
    pub fn lsp(&self) -> Option<Arc<crate::lsp::Lsp>> {
        self.tools.lsp.clone()
    }

    pub fn new(parts: AgentParts) -> Self {
        let mut specs = tools::specs(ToolSet {
            bash: parts.settings.bash_tool,
            edit: parts.settings.edit_tools,
            write: parts.tools.sandbox.mode() != crate::config::SandboxMode::ReadOnly,
            lsp: parts
                .tools
                .lsp
                .as_ref()
                .is_some_and(|l| l.available() && l.serves_workspace()),
        });
        if let Some(a) = &parts.tools.ask {
            specs.push(tools::ask::spec(&a.agents));
        }
        if let Some(t) = &parts.tools.task {
            specs.push(tools::task::spec(&t.roles));
        }
        if !parts.tools.skills.is_empty() {
            specs.push(crate::skills::spec());
        }
        specs.extend(
            parts
                .tools
                .command_tools
                .iter()
                .map(super::tools::custom::CommandTool::spec),
        );
        if parts.tools.fetch.is_some() {
            specs.push(tools::fetch::spec());
        }
        if parts.settings.plan_tool {
            specs.push(planning::spec());
        }
        if let Some(m) = &parts.tools.mcp {
            specs.extend(m.specs(parts.context_window));
        }
        crate::roles::keep_tools(&mut specs, parts.settings.role.as_ref());
        let system = prompt::system_prompt(
            &parts.settings,
            &prompt::PromptEnv {
                fenced: parts.tools.sandbox.fence().is_on(),
                root: parts.tools.sandbox.root(),
                unattended: parts.unattended,
                skills: &parts.tools.skills,
            },
        );
        let turn = parts.turn_starts.len() as TurnId;
        let structured = parts
            .settings
            .structured
            .as_ref()
            .and_then(|s| structured::Answers::new(s));
        let mut messages = vec![Message::system(system)];
        messages.extend(parts.history);
        let ctx_mode = parts.settings.context_mode;
        // A resumed session's calls that went through, from its log.
        // and the notes it owes its next message.
        // And the files its user said to leave alone, prompt by prompt.
        let (ok_calls, carried, hands_off) = if parts.resumed {
            crate::session::read_records(parts.tools.sandbox.root(), parts.log.id())
                .map(|(_, r)| {
                    (
                        crate::session::ok_calls(&r),
                        crate::session::carried(&r),
                        left_alone(&r),
                    )
                })
                .unwrap_or_default()
        } else {
            Default::default()
        };
        let aux = parts.settings.aux_url.as_ref().and_then(|url| {
            LlmClient::new(crate::llm::ClientOptions {
                base_url: url.clone(),
                api: crate::config::Api::Chat,
                fallback: None,
                api_key: parts.settings.aux_api_key.clone(),
                first_token_timeout: parts.settings.first_token_timeout,
                watchdog: parts.settings.watchdog,
            })
            .ok()
            .map(Arc::new)
        });
        Self {
            settings: parts.settings,
            model: parts.model,
            context_window: parts.context_window,
            client: parts.client,
            aux,
            budget: parts.budget,
            tools: parts.tools,
            specs,
            bus: parts.bus,
            log: parts.log,
            messages,
            turn,
            usage: Usage::default(),
            turn_starts: parts.turn_starts,
            checkpoints: parts.checkpoints,
            git: parts.git,
            made: parts.made,
            made_from: parts.made_from,
            edits: Vec::new(),
            last_turn: None,
            conversation_requests: 0,
            tool_warnings: Vec::new(),
            op_error: None,
            git_warned: Default::default(),
            resumed: parts.resumed,
            shed: window::Shed::default(),
            bytes_per_token: parts
                .bytes_per_token
                .unwrap_or(window::DEFAULT_BYTES_PER_TOKEN),
            structured,
            window_note: parts.window_note,
            model_note: parts.model_note,
            compact_retry_at: 0,
            plan: None,
            carrying_plan: false,
            task: String::new(),
            hands_off,
            trace_seq: 0,
            trace_failed: false,
            started: std::time::Instant::now(),
            budgets: stats::Budgets::default(),
            ctx_mode,
            rebuild_from: 0,
            ok_calls,
            last_check: None,
            glance_slot: Default::default(),
            carried,
            piped_next: false,
            images_next: Vec::new(),
        }
    }

    pub fn session_id(&self) -> &str {
        self.log.id()
    }

    /// The sandbox the tools run under.
    pub fn sandbox(&self) -> &crate::sandbox::Sandbox {
        &self.tools.sandbox
    }

    /// The facts every front end shows about this session.
    pub fn info(&self) -> SessionInfo {
        let sandbox = &self.tools.sandbox;
        SessionInfo {
            session: self.log.id().to_string(),
            provider: self.settings.provider.clone(),
            model: self.model.clone(),
            base_url: self.client.base_url(),
            context_window: self.context_window,
            context_mode: self.ctx_mode.as_str().to_string(),
            sandbox: sandbox.describe(),
            sandbox_mode: sandbox.mode().as_str().to_string(),
            fence: sandbox.fence_name().to_string(),
            network: !sandbox.no_net(),
            resumed: self.resumed,
            structured: self.structured.is_some(),
            agents: self
                .settings
                .sub_agents
                .values()
                .map(|a| (a.name.clone(), a.description.clone()))
                .collect(),
            commands: self
                .tools
                .commands
                .iter()
                .map(|c| (c.name.clone(), c.description.clone()))
                .collect(),
            notify_after_ms: self.settings.notify_after.map(|d| d.as_millis() as u64),
        }
    }

    /// Tells the front ends what this session is.
    pub fn announce(&mut self) {
        self.bus
            .publish(AgentEvent::SessionStarted { info: self.info() });
        for note in [self.model_note.take(), self.window_note.take()]
            .into_iter()
            .flatten()
        {
            self.notice(Level::Warning, note);
        }
        if let Ok(mut notes) = self.tools.start_notes.lock() {
            for text in std::mem::take(&mut *notes) {
                self.notice(Level::Warning, text);
            }
        }
        if let Some(m) = self.tools.mcp.clone() {
            for (warning, text) in m.take_notices() {
                let level = if warning { Level::Warning } else { Level::Info };
                self.notice(level, text);
            }
            if crate::mcp::McpServers::trims(self.context_window) && !m.specs(None).is_empty() {
                self.notice(
                    Level::Info,
                    "MCP tool descriptions are cut to their first sentence for this small window (every request carries them)",
                );
            }
        }
        if let Some(warning) = self.fixed_weight_warning() {
            self.notice(Level::Warning, warning);
        }
        // What the first request will weigh (a resumed conversation's
        // too), before anything is sent.
        self.publish_context();
    }

    pub fn system_prompt(&self) -> &str {
        self.messages.first().map(Message::text).unwrap_or("")
    }

    /// The body of the next request, for tests and `-show-prompt`.
    pub fn request_body(&self, with_tools: bool) -> serde_json::Value {
        let view = self.view();
        llm::build_body(&self.chat_request(&view, with_tools))
    }

    pub fn usage(&self) -> Usage {
        self.usage
    }

    pub fn requests(&self) -> u32 {
        self.budget.used()
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages[1..]
    }

    /// Starts a new session log and forgets the conversation (`/new`).
    pub fn new_session(&mut self) -> Result<(), SessionError> {
        let log = SessionLog::create(
            self.tools.sandbox.root(),
            &self.settings.provider,
            &self.model,
        )?;
        // "Always" answers hold for the session they were given in: a new
        // session asks again (a grant given by a stray key in the old one
        // let the next session's edits through unasked).
        self.tools.sandbox.forget_always();
        self.log = log;
        self.ok_calls.clear();
        self.last_check = None;
        self.carried.clear();
        self.messages.truncate(1);
        self.reset_shed();
        self.turn = 0;
        self.turn_starts.clear();
        self.checkpoints.clear();
        self.edits.clear();
        self.made.clear();
        self.made_from.clear();
        self.bus.publish(AgentEvent::SessionCleared {
            session: self.log.id().to_string(),
        });
        Ok(())
    }

    fn chat_request<'a>(&'a self, messages: &'a [Message], with_tools: bool) -> ChatRequest<'a> {
        ChatRequest {
            model: &self.model,
            messages,
            tools: if with_tools { &self.specs } else { &[] },
            sampling: &self.settings.sampling,
            max_tokens: self.settings.max_tokens,
            replay_reasoning: self.settings.provider_info.kind
                == crate::config::ProviderKind::DeepSeek
                || self.settings.api != crate::config::Api::Chat,
            response_format: self.structured.as_ref().map(|s| &s.response_format),
        }
    }

    fn notice(&self, level: Level, text: impl Into<String>) {
        self.bus.publish(AgentEvent::Notice {
            turn: Some(self.turn),
            level,
            text: text.into(),
        });
    }

    /// Notes what mm left a file as, in memory and in the log.
    fn push(&mut self, msg: Message) -> Result<(), SessionError> {
        self.push_with(msg, None)
    }

    fn push_with(&mut self, msg: Message, status: Option<ToolStatus>) -> Result<(), SessionError> {
        self.log.append_message(&msg, status)?;
        if let (Some(ToolStatus::Ok), Some(id)) = (status, &msg.tool_call_id) {
            self.ok_calls.insert(id.clone());
        }
        self.messages.push(msg);
        Ok(())
    }

    /// A custom command's turn: its prompt with `args` placed, on its
    /// model and with only its tools when it names them.
    pub async fn command_turn(
        &mut self,
        name: &str,
        args: &str,
        cancel: &CancellationToken,
    ) -> TurnResult {
        let Some(cmd) = self.tools.commands.iter().find(|c| c.name == name).cloned() else {
            return self.run_turn(&format!("/{name} {args}"), cancel).await;
        };
        let prompt = crate::commands::expand(&cmd.body, args);
        let model = cmd.model.map(|m| std::mem::replace(&mut self.model, m));
        let specs = cmd.allowed_tools.map(|allowed| {
            let all = self.specs.clone();
            self.specs.retain(|s| allowed.iter().any(|a| *a == s.name));
            all
        });
        let report = self.run_turn(&prompt, cancel).await;
        if let Some(m) = model {
            self.model = m;
        }
        if let Some(s) = specs {
            self.specs = s;
        }
        report
    }

    /// Runs a hook in the fence with the workspace writable. None when it
    /// passed; else what to tell the model (the user hears it at once).
    pub(super) async fn run_hook(
        &self,
        which: &str,
        command: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let sandbox = &self.tools.sandbox;
        let Some(plan) = sandbox.hook_plan() else {
            self.notice(
                Level::Warning,
                format!("the {which} hook did not run: read-only mode without the OS fence runs no project code"),
            );
            return None;
        };
        let cmd = sandbox.command("sh", &["-c", command], sandbox.root(), plan);
        let (ok, output) = match tools::bash::run(cmd, self.settings.bash_timeout, cancel).await {
            Ok(f) if f.exit_code == Some(0) => (true, f.output),
            Ok(f) if f.timed_out => (
                false,
                format!(
                    "stopped after {} s\n{}",
                    self.settings.bash_timeout.as_secs(),
                    f.output
                ),
            ),
            Ok(f) => (
                false,
                format!(
                    "exit {}\n{}",
                    f.exit_code
                        .map_or("by a signal".to_string(), |c| c.to_string()),
                    f.output
                ),
            ),
            Err(e) => (false, e.to_string()),
        };
        if ok {
            tracing::debug!(which, command, "hook passed");
            return None;
        }
        let tail: String = {
            let lines: Vec<&str> = output.trim_end().lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        self.notice(
            Level::Warning,
            format!("the {which} hook `{command}` failed: {tail}"),
        );
        Some(format!(
            "[mm ran the {which} hook `{command}`; it failed:]\n{tail}"
        ))
    }

    /// Keeps `note` for the session's next message, in the log too so a
    /// resumed session still says it.
    pub(super) fn carry(&mut self, note: String) {
        if let Err(e) = self.log.append(&Record::Carried { text: note.clone() }) {
            self.notice(Level::Error, e.to_string());
        }
        self.carried.push(note);
    }

    /// Text piped to `mm -p PROMPT`: it goes with the next message as
    /// context, fenced, after the request (the harness reads the request
    /// alone), cut to about a third of the window and said when cut.
    pub fn piped(&mut self, text: &str) {
        let text = text.trim_end();
        if text.trim().is_empty() {
            return;
        }
        let cap = match self.context_window {
            Some(w) => (w as f64 * PIPED_SHARE * self.bytes_per_token) as usize,
            None => PIPED_CAP_UNKNOWN,
        };
        let body = if text.len() > cap {
            self.notice(
                Level::Warning,
                format!(
                    "stdin is {} KB, more than a third of the context window: its start and end are sent, the middle left out",
                    text.len().div_ceil(1024)
                ),
            );
            compact::capped(text, cap)
        } else {
            text.to_string()
        };
        self.carry(piped_note(&body));
        self.piped_next = true;
    }

    /// Adds a reply's usage to the turn's and tells the front ends.
    /// A request beside the conversation (a candidate, a check, a commit
    /// message) in the log, as round 0: `/stats` counts what the receipt
    /// and the status bar count.
    pub(super) fn log_side_request(&mut self, streamed: &Streamed, started: std::time::Instant) {
        if let Err(e) = self.append_side_request(streamed, started) {
            self.notice(Level::Error, e.to_string());
        }
    }

    /// The log record of a request beside the conversation (round 0).
    pub(super) fn append_side_request(
        &mut self,
        streamed: &Streamed,
        started: std::time::Instant,
    ) -> Result<(), crate::session::SessionError> {
        let usage = streamed.reply.usage.unwrap_or_default();
        self.log.append(&Record::Request {
            turn: self.turn,
            round: 0,
            prompt: usage.prompt,
            cached: usage.cached,
            completion: usage.completion,
            first_token_ms: streamed.first_token_ms,
            ms: started.elapsed().as_millis() as u64,
            stopped: None,
            as_compact: None,
            as_rebuild: None,
            bytes: None,
        })
    }
}

/// Errors in `path` now that were not there before the turn first wrote
/// it (all of them when the server did not know the file).
fn turn_new_errors(st: &TurnState, path: &str, check: &crate::lsp::Check) -> usize {
    let Some(Some(before)) = st.baselines.get(path) else {
        return check.now.len();
    };
    let mut old: Vec<&str> = before.iter().map(String::as_str).collect();
    check
        .now
        .iter()
        .filter(|m| match old.iter().position(|o| o == m) {
            Some(i) => {
                old.swap_remove(i);
                false
            }
            None => true,
        })
        .count()
}

/// The files a session's prompts left alone, as its turns kept them.
fn left_alone(records: &[crate::session::Record]) -> Vec<String> {
    let mut list = Vec::new();
    for r in records {
        if let crate::session::Record::Message { message, typed, .. } = r
            && message.role == crate::llm::Role::User
            && let Some(typed) = typed.as_deref().or(Some(message.text()))
        {
            harness::update_hands_off(&mut list, typed);
        }
    }
    list
}
