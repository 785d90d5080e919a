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
mod candidates;
mod checkpoints;
mod compact;
mod examples;
mod extract;
mod focus;
mod follow;
pub mod harness;
mod progress;
pub mod prompt;
mod rebuild;
pub mod recover;
mod rename;
mod rustcheck;
pub mod service;
mod session_ops;
mod stall;
mod stats;
mod structured;
mod trace;
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

fn changed_words(paths: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = format!(
        "changed by commands: {}",
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
    /// Applied edits, last on top (`/undo`).
    edits: Vec<crate::protocol::FileChange>,
    /// The last turn's requests and tokens (`/stats`).
    last_turn: Option<(u32, Usage)>,
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
    /// The running (or last) turn's request, as the user typed it.
    task: String,
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
            lsp: parts.tools.lsp.as_ref().is_some_and(|l| l.available()),
        });
        if let Some(a) = &parts.tools.ask {
            specs.push(tools::ask::spec(&a.agents));
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
        if let Some(m) = &parts.tools.mcp {
            specs.extend(m.specs(parts.context_window));
        }
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
        let (ok_calls, carried) = if parts.resumed {
            crate::session::read_records(parts.tools.sandbox.root(), parts.log.id())
                .map(|(_, r)| (crate::session::ok_calls(&r), crate::session::carried(&r)))
                .unwrap_or_default()
        } else {
            Default::default()
        };
        Self {
            settings: parts.settings,
            model: parts.model,
            context_window: parts.context_window,
            client: parts.client,
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
            edits: Vec::new(),
            last_turn: None,
            tool_warnings: Vec::new(),
            op_error: None,
            git_warned: Default::default(),
            resumed: parts.resumed,
            shed: window::Shed::default(),
            bytes_per_token: window::DEFAULT_BYTES_PER_TOKEN,
            structured,
            window_note: parts.window_note,
            model_note: parts.model_note,
            compact_retry_at: 0,
            task: String::new(),
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
                == crate::config::ProviderKind::DeepSeek,
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
    fn record_made(&mut self, path: &str, blob: String) -> Result<(), SessionError> {
        if self.made.get(path) == Some(&blob) {
            return Ok(());
        }
        self.made.insert(path.to_string(), blob.clone());
        self.log.append(&Record::Made {
            path: path.to_string(),
            blob,
        })
    }

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

    /// Runs one user turn to its end.
    pub async fn run_turn(&mut self, prompt: &str, cancel: &CancellationToken) -> TurnResult {
        self.turn += 1;
        let turn = self.turn;
        self.bus.publish(AgentEvent::TurnStarted {
            turn,
            prompt: prompt.to_string(),
        });
        if let Some(why) = self.oversized(prompt) {
            self.bus.publish(AgentEvent::TurnFinished {
                turn,
                outcome: Outcome::Failed,
                answer: String::new(),
                error: Some(why.clone()),
            });
            return TurnResult {
                turn,
                outcome: Outcome::Failed,
                answer: String::new(),
                written: Vec::new(),
                changed_by_commands: Vec::new(),
                warnings: Vec::new(),
                error: Some(why),
                tests: None,
                unbacked: Vec::new(),
                requests: 0,
                usage: Default::default(),
            };
        }
        let mut state = TurnState {
            prompt: prompt.to_string(),
            piped: std::mem::take(&mut self.piped_next),
            ..TurnState::default()
        };
        self.task = prompt.to_string();
        self.tool_warnings.clear();
        // A dead MCP server's tools are no longer offered.
        if let Some(m) = self.tools.mcp.clone() {
            self.specs
                .retain(|s| m.find(&s.name).is_none() || m.alive(&s.name));
        }
        let usage_before = self.usage;
        let requests_before = self.budget.used();
        self.checkpoint(crate::git::Kind::Turn, prompt).await;
        for f in harness::named_files(prompt) {
            if focus::has_definitions(&f)
                && let Some(text) = self.content_now(&f)
            {
                state.originals.insert(f, text);
            }
        }
        // What mm found and did before the model's first look; the files
        // are attached after it, as they are then.
        let mut found = String::new();
        if self.harness_on() {
            self.plan_checks(&mut state);
            state.text_only = harness::asks_for_text(&state.prompt, state.question && state.piped);
            state.answer_in_text = state.text_only && state.piped;
            if let Some(f) = self.reproduce(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.probe(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.mechanical_rename(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.mechanical_extract(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.focused_change(&mut state, cancel).await {
                found.push_str(&f);
            }
            // `editFormat: whole`: the files the request is about, asked
            // for in full as text before the model's first look.
            let up_front = match self.settings.edit_format {
                crate::config::EditFormat::Tools => false,
                crate::config::EditFormat::Auto => {
                    harness::adds_code(&state.prompt) && state.repro.is_none()
                }
                _ => true,
            };
            if up_front
                && state.mutations == 0
                && !state.settled
                && self.edit_task(&state)
                && let Some(f) = self
                    .deliver_whole(
                        &mut state,
                        &format!("editFormat is {}", self.settings.edit_format.as_str()),
                        cancel,
                    )
                    .await
            {
                found.push_str("\n\n");
                found.push_str(&f);
            }
        }
        let (mut text, mut attached) = self.with_attachments(prompt);
        // A question about the project that names no file: the README is
        // where a newcomer looks first, and where the answer usually is.
        if self.harness_on()
            && state.question
            && attached.is_empty()
            && let Some((name, body)) = self.readme_head()
        {
            self.notice(Level::Info, format!("attached {name}"));
            text.push_str(&format!(
                "\n\n[{name} as it is now, for context; it counts as read]\n{body}"
            ));
            self.tools.note_read(&name);
            attached.push(name);
        }
        text.push_str(&found);
        for note in std::mem::take(&mut self.carried) {
            // (logged with this message; the Turn record ends them)
            text.push_str(&format!("\n\n{note}"));
        }
        // A question about files that are attached in full: the answer is
        // in front of the model, which otherwise wanders off with tools.
        if self.harness_on()
            && state.question
            && !state.settled
            && !attached.is_empty()
            && !harness::named_files(prompt).is_empty()
            && harness::named_files(prompt)
                .iter()
                .all(|f| attached.contains(f))
        {
            state.settled = true;
            let (verb, them) = if attached.len() == 1 {
                ("is", "it")
            } else {
                ("are", "them")
            };
            text.push_str(&format!(
                "\n\nNo tool call is needed: {} {verb} above; answer from {them}.",
                attached.join(", ")
            ));
        }
        let message = Message::user(text);
        let logged = self
            .log
            .append(&Record::Turn { turn })
            .and_then(|()| self.log.append_prompt(&message, prompt));
        if logged.is_ok() {
            self.turn_starts.push(self.messages.len() - 1);
            self.messages.push(message);
            for path in &attached {
                self.note_shown(&mut state, path, 0);
            }
        }
        let (outcome, error) = match logged {
            Err(e) => (Outcome::Failed, Some(e.to_string())),
            Ok(()) => match self.rounds(&mut state, cancel).await {
                Ok(outcome) => (outcome, None),
                Err(Stop::Outcome(o, e)) => (o, e),
                Err(Stop::Log(e)) => (Outcome::Failed, Some(e.to_string())),
                Err(Stop::Loop(why)) => (Outcome::Budget, Some(why)),
                Err(Stop::Runaway(how)) => (
                    Outcome::Failed,
                    Some(format!("the model's replies kept running away ({how})")),
                ),
                Err(Stop::BadReply(why)) => (
                    Outcome::Failed,
                    Some(format!(
                        "the model's tool calls kept failing to parse ({why})"
                    )),
                ),
            },
        };
        let error = error.or(state.stopped.take());
        if outcome != Outcome::Cancelled
            && let Some(hook) = self.settings.hooks.turn_end.clone()
            && let Some(failed) = self.run_hook("turnEnd", &hook, cancel).await
        {
            self.carry(failed);
        }
        // A file this turn left unparsable goes back to its last version
        // that parses (the broken one stays in the checkpoints).
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.restore_unparsable(&mut state, cancel).await;
            self.restore_best(&mut state, cancel).await;
            self.settle_request_checks(&mut state, cancel).await;
        }
        self.publish_context();
        // However the turn ended (an answer, a stopped loop, a budget), the
        // user hears of errors it left, whatever the model's answer claims.
        self.warn_left_errors(&state);
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.flag_unbacked(&mut state);
            self.hold_to_evidence(&mut state);
        }
        let usage = self.usage.minus(&usage_before);
        let requests = self.budget.used().saturating_sub(requests_before);
        self.last_turn = Some((requests, usage));
        if state.used_tools || state.tests.is_some() || !state.unbacked.is_empty() {
            let mut notes = Vec::new();
            if let Some(t) = &state.tests {
                notes.push(t.receipt_words());
            }
            if !state.command_changes.is_empty() {
                notes.push(changed_words(&state.command_changes));
            }
            notes.extend(state.candidate_notes.iter().cloned());
            for u in &state.unbacked {
                notes.push(format!("unbacked claim: {u}"));
            }
            notes.push(format!(
                "{requests} request{}, {} prompt tokens ({} cached), {} generated",
                if requests == 1 { "" } else { "s" },
                usage.prompt,
                usage.cached,
                usage.completion
            ));
            self.bus.publish(AgentEvent::Receipt {
                turn,
                written: state.written.clone(),
                commands: state.commands,
                notes: notes.clone(),
            });
            if let Err(e) = self.log.append(&Record::Receipt {
                turn,
                written: state.written.clone(),
                commands: state.commands,
                notes,
            }) {
                self.notice(Level::Error, e.to_string());
            }
        }
        self.bus.publish(AgentEvent::TurnFinished {
            turn,
            outcome,
            answer: state.answer.clone(),
            error: error.clone(),
        });
        TurnResult {
            turn,
            outcome,
            answer: state.answer,
            written: state.written,
            changed_by_commands: state.command_changes,
            warnings: std::mem::take(&mut self.tool_warnings),
            error,
            tests: state.tests,
            unbacked: state.unbacked,
            requests,
            usage,
        }
    }

    async fn rounds(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<Outcome, Stop> {
        let max_rounds = self.settings.max_rounds;
        let mut round = 0;
        loop {
            round += 1;
            st.round = round;
            // Fixed by mm before the model's first look, with nothing more
            // asked: the first reply is the answer, not more tool calls.
            let tools_on = !(st.answer_in_text
                || (st.settled && round == 1)
                || std::mem::take(&mut st.answer_next));
            // Every language server turned off: its tools are offered no
            // more (a small model kept calling them for their error).
            if self.specs.iter().any(|s| s.name.starts_with("lsp_"))
                && let Some(lsp) = self.lsp()
                && !lsp.usable().await
            {
                self.specs.retain(|s| !s.name.starts_with("lsp_"));
                tracing::info!("no language server left: the lsp tools are no longer offered");
            }
            let reply = match self.request(round, tools_on, cancel).await {
                Err(Stop::Runaway(how)) if st.runaways < 2 => {
                    st.runaways += 1;
                    self.notice(
                        Level::Warning,
                        format!("the reply ran away ({how}); stopped it and asking again"),
                    );
                    let mut again = format!(
                        "Your last reply ran away ({how}) and was stopped; nothing from it was used. Reply again, briefly: one tool call, or your answer.",
                    );
                    if self.harness_on() {
                        again.push('\n');
                        again.push_str(&harness::restate(&st.prompt));
                    }
                    self.push(Message::user(again))?;
                    if round >= max_rounds {
                        return self.final_report(st, round, cancel).await;
                    }
                    continue;
                }
                // The model wrote a call the server could not read. The
                // same request would get the same reply: the conversation
                // says what went wrong, and after two such rounds of an
                // edit task the file is asked for whole, as text.
                Err(Stop::BadReply(why)) if st.bad_rounds < MAX_BAD_REPLIES => {
                    st.bad_rounds += 1;
                    self.notice(
                        Level::Warning,
                        format!("the model's tool call could not be read ({why}); asking again"),
                    );
                    let mut again = String::from(
                        "Your last reply had a tool call whose arguments were not valid JSON (cut short or malformed), so nothing from it ran. Send one call with short, valid JSON arguments; to change a big file, make one small edit_file at a time.",
                    );
                    if self.harness_on() {
                        again.push('\n');
                        again.push_str(&harness::restate(&st.prompt));
                    }
                    self.push(Message::user(again))?;
                    if self.stalled(st)
                        && let Some(text) = self
                            .deliver_whole(st, "the tool calls kept failing to parse", cancel)
                            .await
                    {
                        self.push(Message::user(text))?;
                        st.read_rounds = 0;
                        st.history.clear();
                    }
                    if round >= max_rounds {
                        return self.final_report(st, round, cancel).await;
                    }
                    continue;
                }
                other => other?,
            };
            let recover_code = self.harness_on() && !st.question;
            let (msg, truncated) = self.assistant_message(reply, round, recover_code, tools_on);
            let calls = msg.tool_calls.clone();
            st.answer = msg.text().to_string();
            if calls.is_empty() {
                self.push(msg)?;
                if let Some(answers) = &self.structured {
                    // Only JSON of the declared shape is an answer.
                    return match answers.check(&st.answer, truncated) {
                        Ok(()) => Ok(Outcome::Done),
                        Err(why) => {
                            st.answer.clear();
                            Err(Stop::Outcome(Outcome::Failed, Some(why)))
                        }
                    };
                }
                if truncated {
                    return Ok(Outcome::Truncated);
                }
                if self.harness_on() {
                    if round < max_rounds
                        && let Some(follow_up) = self.check_ending(st, cancel).await?
                    {
                        self.push(Message::user(follow_up))?;
                        continue;
                    }
                    return Ok(Outcome::Done);
                }
                if st.nudges < MAX_NUDGES
                    && round < max_rounds
                    && let Some(nudge) = self.nudge_for(st)
                {
                    st.nudges += 1;
                    self.push(Message::user(nudge))?;
                    continue;
                }
                return Ok(Outcome::Done);
            }
            self.push(msg)?;
            st.used_tools = true;
            st.answer.clear();
            if truncated {
                let cap = self.settings.max_tokens.unwrap_or(0);
                self.close_batch(
                    &calls,
                    &format!(
                        "not executed: your reply was cut by the token limit (max_tokens {cap}) before this call was complete. Write shorter replies: split a big file into several smaller edits."
                    ),
                )?;
                self.notice(
                    Level::Warning,
                    "the reply was cut by the token limit; its tool calls were not run",
                );
                st.bad_rounds += 1;
            } else if round >= max_rounds {
                self.close_batch(
                    &calls,
                    &format!("not executed: this turn's round budget ({max_rounds}) is used up"),
                )?;
                self.notice(
                    Level::Warning,
                    format!("round budget ({max_rounds}) used up: asking for a final report"),
                );
                return self.final_report(st, round, cancel).await;
            } else {
                let before = (st.written.len(), st.command_changes.len());
                self.run_batch(&calls, st, cancel).await?;
                // A round that changed no file: reads, and commands that
                // only look or fail (git commit, the test run again).
                st.idle_rounds = if before == (st.written.len(), st.command_changes.len()) {
                    st.idle_rounds + 1
                } else {
                    0
                };
            }
            if cancel.is_cancelled() {
                return Ok(Outcome::Cancelled);
            }
            // Reads and rereads with nothing written: the file is asked
            // for whole, as text.
            if self.stalled(st) {
                let why = if st.bad_rounds >= 2 {
                    "the tool calls kept failing to parse"
                } else if st.read_rounds >= 2 {
                    "the model read without writing for several rounds"
                } else {
                    "the model went several rounds without changing a file"
                };
                if let Some(text) = self.deliver_whole(st, why, cancel).await {
                    self.push(Message::user(text))?;
                    st.read_rounds = 0;
                    st.history.clear();
                }
            }
            // Rounds since the last change, the model's or mm's own.
            if st.mutations == st.seen_mutations {
                st.unchanged_rounds += 1;
            } else {
                st.unchanged_rounds = 0;
                st.seen_mutations = st.mutations;
            }
            let looping = if st.repeat_rounds >= MAX_REPEAT_ROUNDS {
                Some("the model kept repeating calls that had already failed".to_string())
            } else if self.harness_on()
                && (st.stall_tried || st.tried_candidates)
                && st.unchanged_rounds >= MAX_UNCHANGED_ROUNDS
            {
                // mm's own tries (the file asked for whole, candidates
                // run against the checks) are behind it, and the model's
                // rounds since change nothing: refused writes, edits that
                // do not match, the same files read again.
                Some(format!(
                    "the model changed nothing in {} rounds after mm's own tries",
                    st.unchanged_rounds
                ))
            } else {
                match self.check_cycle(st) {
                    Err(Stop::Loop(why)) => Some(why),
                    Ok(Some(told)) => {
                        // A model going round in circles after a write
                        // never ends the turn, so the checks an ending
                        // runs never would: they run now, and their
                        // failures (with candidates tried) are what it
                        // hears instead of "stop repeating".
                        let text = match self.checks_now(st, cancel).await {
                            Some(checks) => checks,
                            None => told,
                        };
                        self.push(Message::user(text))?;
                        None
                    }
                    Ok(None) => None,
                    Err(e) => return Err(e),
                }
            };
            if let Some(why) = looping {
                // A change the request's checks never ran on: they run
                // before the turn is given up, and the model hears their
                // failures (candidates tried) once.
                if let Some(text) = self.checks_now(st, cancel).await {
                    self.notice(
                        Level::Warning,
                        format!("{why}: running the request's checks on the change first"),
                    );
                    self.push(Message::user(text))?;
                    st.history.clear();
                    st.repeat_rounds = 0;
                    st.unchanged_rounds = 0;
                    st.cycle_warned = false;
                    continue;
                }
                st.stopped = Some(format!("stopped a loop: {why}"));
                self.notice(Level::Warning, format!("{why}: asking for a final report"));
                // An edit task about to end with nothing written, or with
                // a source file the request names still unwritten (one
                // file of a two-file change done): the files asked for
                // whole first, so the turn still delivers.
                if self.on(crate::config::Behaviour::Stall)
                    && !st.stall_tried
                    && (st.written.is_empty() || self.named_unwritten(st))
                    && self.edit_task(st)
                    && let Some(text) = self
                        .deliver_whole(st, "the model was going round in circles", cancel)
                        .await
                {
                    self.push(Message::user(text))?;
                }
                return self.final_report(st, round, cancel).await;
            }
            if round >= max_rounds {
                self.notice(
                    Level::Warning,
                    format!("round budget ({max_rounds}) used up: asking for a final report"),
                );
                return self.final_report(st, round, cancel).await;
            }
        }
    }

    /// The prompt with the files it names attached: a small model that
    /// sees the file first edits what is there instead of guessing.
    /// The request with the workspace overview (first turn) and the files
    /// it names attached; and those files' paths.
    fn with_attachments(&self, prompt: &str) -> (String, Vec<String>) {
        let mut text = prompt.to_string();
        let first_of_session = !self.messages.iter().any(|m| m.role == Role::User);
        if first_of_session
            && !self.specs.is_empty()
            && let Some(files) = tools::fs::workspace_overview(&self.tools.sandbox)
        {
            text.push_str(&format!("\n\n[files in the workspace]\n{files}"));
        }
        let attached = tools::fs::attach_mentioned(&self.tools, prompt);
        if attached.is_empty() {
            return (text, Vec::new());
        }
        let names: Vec<&str> = attached.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(Level::Info, format!("attached {}", names.join(", ")));
        if let Some(lsp) = &self.tools.lsp {
            // Attached counts as read: the server learns the file as it is,
            // so errors an edit brings can be told from old ones.
            for (rel, _) in &attached {
                let abs = self.tools.sandbox.root().join(rel);
                if crate::lsp::language_of(&abs).is_some()
                    && let Ok(content) = crate::paths::read_checked_text(&abs)
                {
                    let lsp = lsp.clone();
                    tokio::spawn(async move { lsp.opened(&abs, &content).await });
                }
            }
        }
        for (path, body) in &attached {
            text.push_str(&format!(
                "\n\n[{path} as it is now, for context; it counts as read]\n{body}"
            ));
        }
        (text, attached.into_iter().map(|(p, _)| p).collect())
    }

    /// The workspace's README (its first 4 KiB, the cut said), for a
    /// question about the project.
    fn readme_head(&self) -> Option<(String, String)> {
        const HEAD: usize = 4096;
        let name = [
            "README.md",
            "README",
            "README.rst",
            "README.txt",
            "readme.md",
        ]
        .into_iter()
        .find(|n| self.content_now(n).is_some())?;
        let body = self.content_now(name)?;
        if body.len() <= HEAD {
            return Some((name.to_string(), body));
        }
        let mut cut = HEAD;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = &body[..cut];
        let head = &head[..head.rfind('\n').unwrap_or(head.len())];
        let lines = head.lines().count();
        Some((
            name.to_string(),
            format!(
                "{head}\n[… the first {lines} lines; read_file {name} offset={} for the rest]",
                lines + 1
            ),
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

    /// The turn ends with errors its edits brought: the user hears it,
    /// whatever the model's answer says.
    fn warn_left_errors(&self, st: &TurnState) {
        let mut left: Vec<String> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .map(|(p, c)| format!("{p} ({} error(s))", c.errors))
            .collect();
        if left.is_empty() {
            return;
        }
        left.sort();
        self.notice(
            Level::Warning,
            format!(
                "the language server still reports errors this turn brought: {}",
                left.join(", ")
            ),
        );
    }

    /// What to tell a model that stopped on a promise, or claimed a change
    /// this turn never made.
    fn nudge_for(&self, st: &mut TurnState) -> Option<String> {
        let can_edit = self.specs.iter().any(|s| s.name == ToolName::EditFile);
        if let Some(text) = self.lsp_follow_up(st) {
            return Some(text);
        }
        if can_edit && st.written.is_empty() && batch::claims_a_change(&st.answer) {
            self.notice(
                Level::Warning,
                "the model says it changed something, but no file was written in this turn; asking it to act or correct itself",
            );
            return Some(
                "You said you changed something, but no file was written in this turn: no write_file or edit_file call succeeded. Make the change now with a tool call, or say plainly that nothing was changed.".into(),
            );
        }
        if batch::announces_next_step(&st.answer) {
            self.notice(
                Level::Info,
                "the model announced a step without taking it; asking it to go on",
            );
            return Some(
                "Go on: take that step now with a tool call. If the task is already finished, give your final answer.".into(),
            );
        }
        None
    }

    /// Errors the language server reports that this turn's edits brought,
    /// said once a turn.
    fn lsp_follow_up(&self, st: &mut TurnState) -> Option<String> {
        if st.told_errors {
            return None;
        }
        let mut broken: Vec<(&String, &crate::lsp::Check)> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .collect();
        if broken.is_empty() {
            return None;
        }
        broken.sort_by_key(|(p, _)| p.as_str());
        let names: Vec<&str> = broken.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(
            Level::Warning,
            format!(
                "errors this turn brought into {} (language server or parser); asking the model to fix them",
                names.join(", ")
            ),
        );
        let reports: Vec<&str> = broken.iter().map(|(_, c)| c.text.as_str()).collect();
        let text = format!(
            "Your changes left errors (from the language server or the parser):\n{}\nFix them now with edit_file, or explain why they are not real problems.",
            reports.join("\n")
        );
        st.told_errors = true;
        Some(text)
    }

    /// What an ending would have checked, on a change the model made and
    /// has not ended on (for an edit task with files written): candidates
    /// against the failing tests, or the request's checks, each once a
    /// turn.
    async fn checks_now(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.harness_on()
            || (st.written.is_empty() && !self.stub_unwritten(st))
            || !self.specs.iter().any(|s| s.name == ToolName::EditFile)
            || !self.edit_task(st)
        {
            return None;
        }
        // The tests on the change, as an ending runs them (candidates
        // tried when they fail).
        if let Some(text) = self.verify_step(st, cancel, false).await {
            st.follow_ups += 1;
            return Some(text);
        }
        // Tests that failed on it already: candidates tried against them.
        if self.on(crate::config::Behaviour::Candidates)
            && !st.tried_candidates
            && let Some(command) = st
                .tests
                .as_ref()
                .filter(|t| t.passed == Some(false))
                .map(|t| t.command.clone())
            && let Some(failure) = st.last_failure.clone()
        {
            st.tried_candidates = true;
            if let Some(made) = self.fix_by_candidates(st, &command, &failure, cancel).await {
                st.follow_ups += 1;
                return Some(format!(
                    "`{command}` fails on your change:\n{failure}{made}\n\n{}",
                    harness::restate(&st.prompt)
                ));
            }
        }
        if st.asserts_tried {
            return None;
        }
        let text = self.request_checks(st, cancel).await?;
        st.follow_ups += 1;
        Some(text)
    }

    /// Calls repeated with the same results change nothing: say so once
    /// (the words to say, for the caller to send), then stop the turn if
    /// it goes on.
    fn check_cycle(&mut self, st: &mut TurnState) -> Result<Option<String>, Stop> {
        // The same calls again, or other calls that write a file back to
        // what it already was (a write undoing an edit, and again).
        let (what, told) = match batch::repeating_cycle(&st.history, MAX_CYCLE) {
            Some(k) => (
                format!("the same {k} call(s) with the same results"),
                "You are repeating the same tool calls and getting the same results: this changes nothing.",
            ),
            None if st.revisits >= MAX_REVISITS => (
                "writes that put a file back to contents it already had".to_string(),
                "Your writes keep putting the file back to versions it already had this turn: this changes nothing.",
            ),
            None => return Ok(None),
        };
        if st.cycle_warned {
            return Err(Stop::Loop(format!("the model kept repeating {what}")));
        }
        st.cycle_warned = true;
        st.history.clear();
        st.revisits = 0;
        self.notice(
            Level::Warning,
            format!("the model is repeating {what}; telling it to change course"),
        );
        let mut text = format!(
            "{told} Stop repeating them. Try a different approach, or give your final answer with what you found.",
        );
        if self.harness_on() {
            text.push('\n');
            text.push_str(&harness::restate(&st.prompt));
        }
        Ok(Some(text))
    }

    /// One tool-less request for a final report when the rounds run out.
    async fn final_report(
        &mut self,
        st: &mut TurnState,
        round: u32,
        cancel: &CancellationToken,
    ) -> Result<Outcome, Stop> {
        let mut ask = String::from(
            "This turn is over: no more tool calls. Report briefly what you did, what you checked, and what is left to do.",
        );
        if self.harness_on() {
            ask.push('\n');
            ask.push_str(&harness::restate(&st.prompt));
            let mut notes: Vec<String> = st.tests.iter().map(TestReport::receipt_words).collect();
            notes.extend(st.candidate_notes.iter().cloned());
            ask.push_str(&format!(
                "\nFacts: {}.",
                crate::protocol::receipt_text(&st.written, st.commands, &notes)
            ));
        }
        // The report must not claim a clean build the server contradicts.
        let mut left: Vec<&crate::lsp::Check> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .map(|(_, c)| c)
            .collect();
        left.sort_by(|a, b| a.text.cmp(&b.text));
        if !left.is_empty() {
            ask.push_str(
                "\nYour changes left errors (language server or parser); say so in the report:\n",
            );
            ask.push_str(
                &left
                    .iter()
                    .map(|c| c.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        self.push(Message::user(ask))?;
        // With the tools still offered the request shares the server's
        // cached prefix (a tool-less one is read again from the start,
        // a minute on a CPU); a reply that is only a call is asked again
        // without them.
        let mut reply = self.request(round + 1, self.harness_on(), cancel).await?;
        if self.harness_on() && reply.reply.content.trim().is_empty() {
            reply = self.request(round + 1, false, cancel).await?;
        }
        let (mut msg, _) = self.assistant_message(reply, round + 1, false, true);
        msg.tool_calls.clear();
        st.answer = msg.text().to_string();
        self.push(msg)?;
        // A report that gets its own sum wrong is asked once more.
        let wrong = harness::wrong_arithmetic(&st.answer);
        if self.harness_on() && !wrong.is_empty() && !st.told_arithmetic {
            st.told_arithmetic = true;
            st.computed.push_str(&wrong.join("\n"));
            self.notice(
                Level::Info,
                format!(
                    "the answer's arithmetic is wrong ({}); asking again",
                    wrong.join("; ")
                ),
            );
            self.push(Message::user(format!(
                "Check your arithmetic: {}. Correct the answer; no tool calls.\n{}",
                wrong.join("; "),
                harness::restate(&st.prompt)
            )))?;
            let reply = self.request(round + 2, false, cancel).await?;
            let (mut msg, _) = self.assistant_message(reply, round + 2, false, true);
            msg.tool_calls.clear();
            if !msg.text().trim().is_empty() {
                st.answer = msg.text().to_string();
            }
            self.push(msg)?;
        }
        Ok(Outcome::Budget)
    }

    /// Sends the conversation and streams the reply onto the bus. A
    /// request that overflows the context window is sent again with old
    /// outputs left out; when nothing more can be, the turn stops with
    /// what the user can do.
    async fn request(
        &mut self,
        round: u32,
        with_tools: bool,
        cancel: &CancellationToken,
    ) -> Result<Streamed, Stop> {
        // Rebuilt requests leave older turns out first: compaction is for
        // what is still too large after that.
        self.advance_rebuild();
        if self.wants_compaction() && !cancel.is_cancelled() {
            self.auto_compact(cancel).await;
        }
        let mut compacted_here = false;
        loop {
            match self.request_once(round, with_tools, cancel).await? {
                Sent::Reply(streamed) => return Ok(streamed),
                Sent::Overflow {
                    requested,
                    window,
                    body_bytes,
                    message,
                } if !compacted_here
                    && self.settings.compact_at > 0
                    && self.messages.len() >= self.compact_retry_at =>
                {
                    // The server says the window is full: compact first,
                    // leave outputs out only if that is not enough.
                    compacted_here = true;
                    tracing::info!(?requested, ?window, message, "overflow: compacting");
                    if let Some(r) = requested {
                        self.calibrate(body_bytes, r);
                    }
                    if self.context_window.is_none() {
                        self.context_window = window;
                    }
                    self.auto_compact(cancel).await;
                }
                Sent::Overflow {
                    requested,
                    window,
                    body_bytes,
                    message,
                } => match self.shed(requested, window, body_bytes) {
                    Some(what) => {
                        tracing::info!(what, "context overflow");
                        self.notice(Level::Warning, what);
                        self.publish_context();
                    }
                    None => {
                        self.bus.publish(AgentEvent::Context {
                            tokens: requested.unwrap_or_else(|| self.next_request_tokens()),
                        });
                        return Err(Stop::Outcome(
                            Outcome::Failed,
                            Some(window::advice(requested, window, &message)),
                        ));
                    }
                },
            }
        }
    }

    /// One request, as the conversation stands.
    async fn request_once(
        &mut self,
        round: u32,
        with_tools: bool,
        cancel: &CancellationToken,
    ) -> Result<Sent, Stop> {
        self.advance_rebuild();
        let view = self.view();
        let body = llm::build_body(&self.chat_request(&view, with_tools));
        // Serialised once: measured here, sent as it is.
        let text = body.to_string();
        let body_bytes = text.len();
        let (as_compact, as_rebuild) =
            self.both_modes_given(&view, with_tools.then_some(body_bytes));
        drop(view);
        self.refresh_glance(Some((
            (body_bytes as f64 / self.bytes_per_token).round() as u64,
            (as_compact, as_rebuild),
        )));
        // The gauge counts the request being sent, not the last one.
        self.bus.publish(AgentEvent::Context {
            tokens: (body_bytes as f64 / self.bytes_per_token).round() as u64,
        });
        tracing::debug!(
            turn = self.turn,
            round,
            with_tools,
            bytes = body_bytes,
            "request"
        );
        let bus = self.bus.clone();
        let turn = self.turn;
        let mut ids: HashMap<usize, String> = HashMap::new();
        // A runaway reply is cut here rather than at max_tokens.
        let request_cancel = cancel.child_token();
        let ran_away: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        // The turn's own message: a reply that hands it back is cut too.
        let message = (self.turn_starts.last())
            .and_then(|&i| self.messages.get(i))
            .map(super::llm::types::Message::text)
            .unwrap_or("");
        let mut watch = self
            .harness_on()
            .then(|| harness::RunawayWatch::against(message));
        let live = Arc::new(std::sync::Mutex::new(progress::Live::new()));
        let shown_live = live.clone();
        let started = std::time::Instant::now();
        let (stop, flag, tracked) = (request_cancel.clone(), ran_away.clone(), live.clone());
        // The answer's text as it streamed: what the user saw is kept if
        // they cancel.
        let shown = Arc::new(std::sync::Mutex::new(String::new()));
        let seen = shown.clone();
        let mut on_event = move |ev: ClientEvent| {
            if let Ok(mut l) = tracked.lock() {
                l.on_event(&ev);
            }
            match &ev {
                ClientEvent::Attempt(_) => {
                    if let Ok(mut s) = seen.lock() {
                        s.clear();
                    }
                }
                ClientEvent::Delta(StreamDelta::Content(text)) => {
                    if let Ok(mut s) = seen.lock() {
                        s.push_str(text);
                    }
                }
                _ => {}
            }
            let streamed = match &ev {
                ClientEvent::Delta(StreamDelta::Content(text)) => Some((text, true)),
                ClientEvent::Delta(StreamDelta::ToolArgs { text, .. }) => Some((text, false)),
                _ => None,
            };
            if let (Some(w), Some((text, content))) = (watch.as_mut(), streamed)
                && let Some(how) = w.push(text, content)
            {
                if let Ok(mut f) = flag.lock() {
                    f.get_or_insert_with(|| how.into());
                }
                stop.cancel();
            }
            let event = match ev {
                ClientEvent::Attempt(attempt) => AgentEvent::RequestStarted {
                    turn,
                    round,
                    attempt,
                },
                ClientEvent::Delta(StreamDelta::Content(text)) => AgentEvent::Token { turn, text },
                ClientEvent::Delta(StreamDelta::Reasoning(text)) => {
                    AgentEvent::Reasoning { turn, text }
                }
                ClientEvent::Delta(StreamDelta::ToolStart { index, id, name }) => {
                    let call_id = id.unwrap_or_else(|| format!("call_{index}"));
                    ids.insert(index, call_id.clone());
                    AgentEvent::ToolCallStarted {
                        turn,
                        call_id,
                        name,
                    }
                }
                ClientEvent::Delta(StreamDelta::ToolArgs { index, text }) => {
                    AgentEvent::ToolCallDelta {
                        turn,
                        call_id: ids
                            .get(&index)
                            .cloned()
                            .unwrap_or_else(|| format!("call_{index}")),
                        delta: text,
                    }
                }
                ClientEvent::Retrying { wait, reason } => AgentEvent::Notice {
                    turn: Some(turn),
                    level: Level::Warning,
                    text: format!("{reason}; retrying in {:.1}s", wait.as_secs_f64()),
                },
                ClientEvent::FellBack { url } => AgentEvent::Notice {
                    turn: Some(turn),
                    level: Level::Info,
                    text: format!("the server did not answer; using the fallback {url}"),
                },
                ClientEvent::Notice(text) => AgentEvent::Notice {
                    turn: Some(turn),
                    level: Level::Warning,
                    text,
                },
            };
            bus.publish(event);
        };
        let ticker = tokio::spawn(progress::watch(progress::Watch {
            client: self.client.clone(),
            bus: self.bus.clone(),
            live,
            turn,
            hidden_limit: self.harness_on().then_some(progress::HIDDEN_LIMIT),
            key: crate::llm::client::SlotKey::of(
                &body,
                (body_bytes as f64 / self.bytes_per_token) as u64,
            ),
            stop: request_cancel.clone(),
            ran_away: ran_away.clone(),
        }));
        let result = self
            .client
            .stream_chat_text(text, &self.budget, &request_cancel, &mut on_event)
            .await;
        ticker.abort();
        // A cancel is a cancel, whatever the connection said as it closed.
        let result = match result {
            Err(e) if cancel.is_cancelled() && !matches!(e, LlmError::Cancelled) => {
                tracing::debug!(error = %e, "an error after the user cancelled");
                Err(LlmError::Cancelled)
            }
            other => other,
        };
        self.trace(&body, &result, started.elapsed().as_millis() as u64);
        let runaway = ran_away.lock().ok().and_then(|r| r.clone());
        // The log keeps each request's figures, and how a runaway ended.
        let (usage, first_token_ms) = match &result {
            Ok(s) => (s.reply.usage.unwrap_or_default(), s.first_token_ms),
            Err(_) => (
                Usage {
                    completion: shown_live.lock().map(|l| l.chunks()).unwrap_or(0),
                    ..Usage::default()
                },
                None,
            ),
        };
        if result.is_ok() || runaway.is_some() {
            self.log.append(&Record::Request {
                turn: self.turn,
                round,
                prompt: usage.prompt,
                cached: usage.cached,
                completion: usage.completion,
                first_token_ms,
                ms: started.elapsed().as_millis() as u64,
                stopped: runaway.clone(),
                as_compact: Some(as_compact),
                as_rebuild: Some(as_rebuild),
            })?;
        }
        match result {
            Ok(streamed) => {
                self.record_usage(&streamed, Some((as_compact, as_rebuild)));
                if let Some(u) = streamed.reply.usage {
                    self.calibrate(body_bytes, u.prompt);
                }
                if let Some(how) = runaway {
                    // It finished before the cut landed: still a runaway.
                    return Err(Stop::Runaway(how));
                }
                Ok(Sent::Reply(streamed))
            }
            Err(LlmError::Overflow {
                requested,
                window,
                message,
            }) => Ok(Sent::Overflow {
                requested,
                window,
                body_bytes,
                message,
            }),
            Err(LlmError::Cancelled) if runaway.is_some() && !cancel.is_cancelled() => {
                Err(Stop::Runaway(runaway.unwrap_or_default()))
            }
            Err(LlmError::Cancelled) => {
                // What streamed before the cancel stays in the conversation
                // (and the log, the replay, a resume), marked as cut.
                let partial = shown.lock().map(|s| s.clone()).unwrap_or_default();
                if !partial.trim().is_empty() {
                    self.push(Message::assistant(format!(
                        "{}\n\n[cancelled by the user]",
                        partial.trim_end()
                    )))?;
                }
                Err(Stop::Outcome(Outcome::Cancelled, None))
            }
            Err(e @ LlmError::Budget(_)) => {
                Err(Stop::Outcome(Outcome::Budget, Some(e.to_string())))
            }
            Err(LlmError::BadReply(why)) => Err(Stop::BadReply(why)),
            Err(LlmError::Http { status, body })
                if self.structured.is_some() && (400..500).contains(&status) =>
            {
                Err(Stop::Outcome(
                    Outcome::Failed,
                    Some(structured::refused(&self.client.base_url(), status, &body)),
                ))
            }
            Err(e) => Err(Stop::Outcome(Outcome::Failed, Some(e.to_string()))),
        }
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
        })
    }

    fn record_usage(&mut self, streamed: &Streamed, modes: Option<(u64, u64)>) {
        let usage = streamed.reply.usage.unwrap_or_default();
        self.usage.add(&usage);
        self.check_budgets();
        self.bus.publish(AgentEvent::Usage {
            turn: self.turn,
            stats: RequestStats {
                usage,
                first_token_ms: streamed.first_token_ms,
                tokens_per_second: streamed.tokens_per_second(),
                modes,
            },
            // A request beside the conversation (`modes` None) says
            // nothing of how full it is.
            context_used: if modes.is_some() {
                usage.prompt + usage.completion
            } else {
                0
            },
        });
    }

    /// The assistant message of a reply, with a tool call the model wrote
    /// as text turned into a real one when the request offered tools
    /// (`tools_on`); else the call is left out of the answer, not run (an
    /// answer was asked for). Returns whether it was truncated.
    fn assistant_message(
        &self,
        streamed: Streamed,
        round: u32,
        recover_code: bool,
        tools_on: bool,
    ) -> (Message, bool) {
        let reply = streamed.reply;
        let truncated = reply.truncated();
        let mut content = reply.content;
        let mut calls: Vec<ToolCall> = reply
            .calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone().unwrap_or_default(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        if calls.is_empty() && !truncated && !self.specs.is_empty() {
            let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_ref()).collect();
            if let Some(r) = recover::fenced_call(&content, &names) {
                if tools_on {
                    self.notice(
                        Level::Info,
                        format!(
                            "the model wrote a {} call as text; running it as a real call",
                            r.name
                        ),
                    );
                    calls.push(ToolCall {
                        id: format!("text_call_{}_{round}", self.turn),
                        name: r.name,
                        arguments: r.arguments,
                    });
                } else {
                    self.notice(
                        Level::Info,
                        format!(
                            "the model wrote a {} call as text where its answer was asked for; not run",
                            r.name
                        ),
                    );
                }
                content = r.remaining_text;
            }
        }
        if calls.is_empty()
            && !truncated
            && recover_code
            && self.specs.iter().any(|s| s.name == ToolName::WriteFile)
            && content.contains("```")
            && let Some(p) = recover::code_proposal(
                &content,
                &self.tools.read_files_now(),
                &self.tools.unread_sources(),
            )
        {
            self.tools.note_read(&p.path);
            // The change was printed instead of made: it becomes the call
            // the model should have sent, with its checks and approval.
            self.notice(
                Level::Info,
                format!(
                    "the model printed a new version of {} instead of writing it; proposing it as a change",
                    p.path
                ),
            );
            calls.push(ToolCall {
                id: format!("text_edit_{}_{round}", self.turn),
                name: ToolName::WriteFile.as_str().into(),
                arguments: serde_json::json!({"path": p.path, "content": p.content}).to_string(),
            });
        }
        let msg = Message {
            role: Role::Assistant,
            content: (!content.is_empty()).then_some(content),
            reasoning: (!reply.reasoning.is_empty()).then_some(reply.reasoning),
            tool_calls: calls,
            tool_call_id: None,
        };
        (msg, truncated)
    }

    /// Why a change to an existing test file is refused, naming the code
    /// the test imports when mm can tell.
    /// The file's content as it is now, when it is a small regular file.
    fn content_now(&self, rel: &str) -> Option<String> {
        let r = self.tools.sandbox.check_read(rel).ok()?;
        let bytes = crate::paths::read_checked(&r.abs, 256 * 1024).ok()?;
        String::from_utf8(bytes).ok()
    }

    /// Notes that the newest message shows `rel` whole, as it is now.
    fn note_shown(&self, st: &mut TurnState, rel: &str, round: u32) {
        let (Some(content), Some(message)) =
            (self.content_now(rel), self.messages.len().checked_sub(1))
        else {
            return;
        };
        // A read shows this many lines at most: a longer file is not whole.
        if content.lines().count() > tools::fs::DEFAULT_READ_LINES {
            return;
        }
        st.shown.insert(
            rel.to_string(),
            Shown {
                content: text_hash(&content),
                message,
                message_hash: text_hash(self.messages[message].text()),
                round,
            },
        );
    }

    /// A whole read of a file the model has in view this turn, unchanged
    /// since: the one line to send instead of the file again.
    fn unchanged_read(
        &self,
        st: &TurnState,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<String> {
        if !self.on(crate::config::Behaviour::Reread)
            || tools::arg_u64(args, crate::toolname::arg::OFFSET).is_some_and(|o| o > 1)
            || tools::arg_u64(args, crate::toolname::arg::LIMIT).is_some()
        {
            return None;
        }
        let r = self
            .tools
            .sandbox
            .check_read(tools::arg_str(args, crate::toolname::arg::PATH)?)
            .ok()?;
        let seen = st.shown.get(&r.rel)?;
        let still_sent = self
            .messages
            .get(seen.message)
            .is_some_and(|m| text_hash(m.text()) == seen.message_hash)
            && self.shed.sends(seen.message);
        if !still_sent || text_hash(&self.content_now(&r.rel)?) != seen.content {
            return None;
        }
        let when = match seen.round {
            0 => "it is attached to the request above".to_string(),
            n => format!("you read it in round {n}; it is above"),
        };
        let next = if st.question {
            "Answer from it."
        } else {
            "Take the next step of the request now (a change, a command, another tool), or answer."
        };
        // The folder's own instructions still come with its first file,
        // whichever way the file reached the model.
        let rules = self
            .tools
            .nested
            .for_file(self.tools.sandbox.root(), &r.abs);
        Some(format!(
            "{} is unchanged since you saw it ({when}). It is not sent again. {next}{rules}",
            r.rel
        ))
    }

    /// A write to `path`, an existing file the request does not name,
    /// while the request names a file to create that does not exist yet:
    /// the refusal that names the file asked for.
    fn named_elsewhere(&self, st: &TurnState, path: &str) -> Option<String> {
        let r = self.tools.sandbox.check_read(path).ok()?;
        if !r.abs.is_file() {
            return None;
        }
        let named = harness::named_files(&st.prompt);
        // The document the code is to follow (a SPEC.md) is not the code.
        if let Some(code) = named.first()
            && stall::named_docs(&st.prompt).contains(&r.rel)
            && !harness::asks_to_edit(&st.prompt, &r.rel)
        {
            return Some(format!(
                "refused: {} is what the request gives to follow; it asks for no change to it. Nothing was written. Write the code the request asks for in {code}.\n{}",
                r.rel,
                harness::restate(&st.prompt)
            ));
        }
        if !harness::asks_to_create(&st.prompt) {
            return None;
        }
        let missing: Vec<&String> = named
            .iter()
            .filter(|f| {
                self.tools
                    .sandbox
                    .check_read(f)
                    .is_ok_and(|n| !n.abs.exists())
            })
            .collect();
        let wanted = missing.first()?;
        // A file the request names may change, but for tests asked into a
        // new test file: the code under test stays as it is.
        let tests_into_code = harness::asks_for_tests(&st.prompt)
            && harness::is_test_file(wanted)
            && !harness::is_test_file(&r.rel);
        if named.contains(&r.rel) && !tests_into_code {
            return None;
        }
        Some(format!(
            "refused: the request asks for {wanted}, which does not exist yet, and this call writes {} instead. Nothing was written. Create {wanted} with write_file (path \"{wanted}\", the whole content); change {} only if the request needs it, after that.\n{}",
            r.rel,
            r.rel,
            harness::restate(&st.prompt)
        ))
    }

    fn test_file_refusal(&self, path: &str, prompt: &str) -> String {
        let root = self.tools.sandbox.root();
        let code = self
            .tools
            .sandbox
            .check_read(path)
            .ok()
            .and_then(|r| crate::paths::read_checked_text(&r.abs).ok())
            .unwrap_or_default();
        let sources: Vec<String> = tools::guard::local_imports(root, path, &code)
            .into_iter()
            .map(|(f, _)| f)
            .filter(|f| !harness::is_test_file(f))
            .collect();
        let there = if sources.is_empty() {
            "the code it tests".to_string()
        } else {
            sources.join(", ")
        };
        format!(
            "refused: {path} is a test file, and the request is to make the code pass its tests, not to change them. Nothing was written. The failing assertion says what the code must do: fix {there} with edit_file.\n{}",
            harness::restate(prompt)
        )
    }

    /// Answers every call of a batch without running it.
    fn close_batch(&mut self, calls: &[ToolCall], why: &str) -> Result<(), SessionError> {
        for c in calls {
            self.finish_call(c, "", ToolOutput::not_run(why))?;
        }
        Ok(())
    }

    /// A file change made this turn: recorded as mm's doing, kept for the
    /// session's edits, and told to the front ends.
    fn record_change(
        &mut self,
        call_id: &str,
        change: crate::protocol::FileChange,
    ) -> Result<(), SessionError> {
        self.record_made(&change.path, crate::git::blob_id(change.after.as_bytes()))?;
        self.edits.push(change.clone());
        self.bus.publish(AgentEvent::FileChanged {
            turn: self.turn,
            call_id: call_id.to_string(),
            change: Arc::new(change),
        });
        Ok(())
    }

    fn finish_call(
        &mut self,
        call: &ToolCall,
        summary: &str,
        out: ToolOutput,
    ) -> Result<(), SessionError> {
        let turn = self.turn;
        if let Some(change) = out.change.clone().map(|c| *c) {
            self.record_change(&call.id, change)?;
        }
        for key in self.tools.sandbox.take_unlogged() {
            self.log.append(&Record::Always { key })?;
        }
        if let Some(w) = &out.warning {
            self.notice(Level::Warning, w.clone());
            self.tool_warnings.push(w.clone());
        }
        let text: Arc<str> = Arc::from(out.text.as_str());
        self.bus.publish(AgentEvent::ToolCallFinished {
            turn,
            call_id: call.id.clone(),
            name: call.name.clone(),
            summary: summary.to_string(),
            status: out.status,
            output: text,
        });
        // The front ends show the whole output; the model gets what fits.
        let sent = self.fit_output(&out.text).unwrap_or(out.text);
        self.push_with(Message::tool_result(&call.id, sent), Some(out.status))
    }

    async fn run_batch(
        &mut self,
        calls: &[ToolCall],
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        let raw: Vec<llm::RawCall> = calls
            .iter()
            .map(|c| llm::RawCall {
                index: 0,
                id: Some(c.id.clone()).filter(|s| !s.is_empty()),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        if let Some(err) = batch::structural_error(&raw) {
            // Without ids the calls cannot be answered: drop them from the
            // conversation so the next request stays valid.
            if let Some(last) = self.messages.last_mut() {
                last.tool_calls.clear();
            }
            return Err(Stop::Outcome(
                Outcome::Failed,
                Some(format!("{err}; none of the batch ran")),
            ));
        }
        let checked = batch::check_calls(calls, &self.specs);
        if checked.iter().any(|c| matches!(c, Checked::Invalid(_))) {
            for (call, check) in calls.iter().zip(checked) {
                let out = match check {
                    Checked::Invalid(e) => ToolOutput::error(e),
                    Checked::Ready(_) => ToolOutput::not_run(
                        "not executed: another call in this batch was invalid, so none of it ran; fix that call and send the batch again",
                    ),
                };
                self.finish_call(call, "", out)?;
            }
            st.repeat_rounds = 0;
            st.bad_rounds += 1;
            return Ok(());
        }
        let reads_only = calls.iter().all(|c| stall::is_read_call(&c.name));
        st.read_rounds = if reads_only { st.read_rounds + 1 } else { 0 };
        let previous = std::mem::take(&mut st.failures);
        let mut all_repeats = true;
        for (call, check) in calls.iter().zip(checked) {
            let Checked::Ready(args) = check else {
                continue;
            };
            self.run_call(call, args, st, cancel, &previous, &mut all_repeats)
                .await?;
        }
        st.repeat_rounds = if all_repeats { st.repeat_rounds + 1 } else { 0 };
        Ok(())
    }

    /// One call of a batch: checked against the turn, run, and what it
    /// did taken into the turn's state. `previous` holds the last batch's
    /// failures; `all_repeats` turns false when this call is not a repeat.
    async fn run_call(
        &mut self,
        call: &ToolCall,
        args: serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        cancel: &CancellationToken,
        previous: &HashMap<String, String>,
        all_repeats: &mut bool,
    ) -> Result<(), Stop> {
        let summary = tools::summary(&call.name, &args);
        if cancel.is_cancelled() {
            self.finish_call(
                call,
                &summary,
                ToolOutput::not_run("not executed: cancelled"),
            )?;
            return Ok(());
        }
        let key = batch::call_key(&call.name, &args);
        if let Some(err) = previous.get(&key) {
            // The line that says what failed, else the first that says
            // something (not a rule of `=`, not a build's "Finished").
            let first = err
                .lines()
                .find(|l| {
                    let t = l.trim_start();
                    ["Error", "error", "FAIL", "panicked", "assert", "Assert"]
                        .iter()
                        .any(|w| t.contains(w))
                        && !t.starts_with("test result: ok")
                })
                .or_else(|| err.lines().find(|l| l.chars().any(char::is_alphanumeric)))
                .unwrap_or("")
                .trim()
                .to_string();
            let check = call.name == ToolName::Bash
                && self.harness_on()
                && st.is_check_command(
                    tools::arg_str(&args, crate::toolname::arg::COMMAND).unwrap_or_default(),
                );
            let out = ToolOutput::not_run(if check {
                format!(
                    "not run again: nothing has changed since it failed just before ({first}), so it would fail the same way. Change the code first with edit_file, then run it again.\n{}",
                    harness::restate(&st.prompt)
                )
            } else {
                format!(
                    "not run again: this exact call failed just before ({first}). Change the approach: different arguments, another tool, or explain the problem in your answer."
                )
            });
            st.failures.insert(key.clone(), err.clone());
            st.history.push(batch::step_hash(&key, &out.text));
            self.finish_call(call, &summary, out)?;
            return Ok(());
        }
        *all_repeats = false;
        let writing_command = (call.name == ToolName::Bash)
            .then(|| tools::arg_str(&args, crate::toolname::arg::COMMAND))
            .flatten()
            .filter(|c| !crate::sandbox::Sandbox::is_read_only_command(c))
            .map(str::to_string)
            // An asked agent may change files too: what it changed
            // is found like a command's.
            .or_else(|| {
                (call.name == ToolName::AskAgent).then(|| {
                    format!(
                        "ask_agent {}",
                        tools::arg_str(&args, crate::toolname::arg::AGENT).unwrap_or("")
                    )
                })
            });
        let mut before = None;
        if let Some(command) = &writing_command {
            // A command may change files the receipt cannot see: a
            // checkpoint before it lets /rewind undo it.
            self.checkpoint(crate::git::Kind::Command, command).await;
            before = self.last_checkpoint().await;
        }
        self.bus.publish(AgentEvent::ToolCallRunning {
            turn: self.turn,
            call_id: call.id.clone(),
            name: call.name.clone(),
            summary: summary.clone(),
            arguments: call.arguments.clone(),
        });
        let ctx = CallCtx {
            turn: self.turn,
            call_id: &call.id,
            cancel,
        };
        let (mut out, reread) = self.guarded_run(call, &args, st, &ctx, &key).await;
        self.take_outcome(
            call,
            &args,
            st,
            &mut out,
            key,
            writing_command,
            before,
            cancel,
        )
        .await?;
        let full_read = call.name == ToolName::ReadFile
            && !reread
            && out.status == ToolStatus::Ok
            && tools::arg_u64(&args, crate::toolname::arg::OFFSET).is_none_or(|o| o <= 1)
            && tools::arg_u64(&args, crate::toolname::arg::LIMIT).is_none();
        self.finish_call(call, &summary, out)?;
        if full_read
            && let Some(path) = tools::arg_str(&args, crate::toolname::arg::PATH)
            && let Ok(r) = self.tools.sandbox.check_read(path)
        {
            self.note_shown(st, &r.rel, st.round);
        }
        Ok(())
    }

    /// What a call that ran came to, taken into the turn: the notes
    /// that go with its output (an edit made again, an error pasted as
    /// code, what a command changed, a write that changed nothing), the
    /// files written, removed names, approvals, the language server's
    /// verdicts, the follow-ups a change brings (callers, checks, a
    /// roll-back) and the afterEdit hook.
    #[allow(clippy::too_many_arguments)]
    async fn take_outcome(
        &mut self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        out: &mut ToolOutput,
        key: String,
        writing_command: Option<String>,
        before: Option<crate::git::CheckpointId>,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        if call.name == ToolName::EditFile && out.change.is_some() {
            st.edits_made.insert(key.clone());
            if let (Some(p), Some(o), Some(n)) = (
                tools::arg_str(args, crate::toolname::arg::PATH),
                tools::arg_str(args, crate::toolname::arg::OLD_STRING),
                tools::arg_str(args, crate::toolname::arg::REPLACEMENT),
            ) {
                st.edit_pairs.push((
                    p.trim_start_matches("./").to_string(),
                    o.to_string(),
                    n.to_string(),
                ));
            }
        }
        // The error message sent as the code to replace: say so, and
        // name the line the error points at.
        if self.harness_on()
            && call.name == ToolName::EditFile
            && out.status == ToolStatus::Error
            && out.text.contains("was not found")
            && let (Some(old), Some(fail)) = (
                tools::arg_str(args, crate::toolname::arg::OLD_STRING),
                st.last_failure.as_deref(),
            )
            && let Some(told) = harness::error_not_code(old, fail)
        {
            out.text = told;
        }
        if let Some(command) = &writing_command {
            // And one after it, so what it changed is not taken later
            // for a change made outside mm.
            self.checkpoint(crate::git::Kind::Command, &format!("after: {command}"))
                .await;
            // What the command changed is mm's doing, not the user's.
            let changed = self.record_command_changes(before).await?;
            st.note_command_changes(changed);
        }
        // The same content written again: the change is made already,
        // which a small model that loops on it needs to hear.
        if self.harness_on()
            && call.name == ToolName::WriteFile
            && out.status == ToolStatus::Ok
            && out
                .text
                .ends_with("already has this content; nothing written")
        {
            out.text.push_str(
                ". That change is made already. If the request is done, give your answer now; if not, change only what is left.",
            );
        }
        st.history.push(batch::step_hash(&key, &out.text));
        if matches!(out.status, ToolStatus::Error | ToolStatus::Refused) {
            st.failures.insert(key, out.text.clone());
        }
        if call.name == ToolName::Bash
            && matches!(out.status, ToolStatus::Ok | ToolStatus::Error)
            && tools::arg_str(args, crate::toolname::arg::COMMAND)
                .is_some_and(|c| !crate::sandbox::Sandbox::is_read_only_command(c))
        {
            st.commands += 1;
            let command = tools::arg_str(args, crate::toolname::arg::COMMAND).unwrap_or_default();
            if st.is_check_command(command) {
                st.model_checked = Some((
                    command.to_string(),
                    out.status == ToolStatus::Ok,
                    st.changes(),
                ));
            } else {
                st.mutations += 1;
            }
        }
        if let Some(change) = &out.change {
            st.mutations += 1;
            st.note_version(change);
            if st.versions.get(&change.path).is_some_and(|v| {
                v.len() > 2 && v[..v.len() - 2].iter().any(|x| **x == *change.after)
            }) {
                st.revisits += 1;
            }
            let removed = tools::guard::removed_names(&change.before, &change.after);
            for name in removed {
                if !st.removed.iter().any(|(n, _)| *n == name) {
                    st.removed.push((name, change.path.clone()));
                }
            }
        }
        if let Some(change) = &out.change
            && !st.written.contains(&change.path)
        {
            st.written.push(change.path.clone());
        }
        st.declined |= out.declined;
        if out.declined
            && let Some((_, reason)) = out
                .text
                .strip_prefix("the user rejected this change to ")
                .and_then(|t| t.split_once(": "))
        {
            st.user_said.push(reason.to_string());
        }
        if let Some(change) = &out.change {
            if out.approved {
                st.approved.insert(change.path.clone());
            } else {
                st.approved.remove(&change.path);
            }
        }
        // What the server says of the files that use the changed one
        // counts at the end of the turn like the file's own errors.
        for (user, check) in &out.dependents {
            st.baselines
                .entry(user.clone())
                .or_insert_with(|| check.baseline.clone());
            st.checks.insert(user.clone(), check.clone());
        }
        if let Some(change) = &out.change {
            match &out.check {
                Some(check) => {
                    // Errors are counted against the file as the turn
                    // found it, not as the last write left it.
                    st.baselines
                        .entry(change.path.clone())
                        .or_insert_with(|| check.baseline.clone());
                    st.checks.insert(change.path.clone(), (**check).clone());
                }
                // Nothing to say any more (the server is off): an old
                // verdict would be stale.
                None => {
                    st.checks.remove(&change.path);
                }
            }
        }
        if self.harness_on()
            && let Some(change) = out.change.clone()
            && let Some(text) = self.follow_rename(st, &change, cancel).await
        {
            out.text.push_str(&text);
        }
        // The turn wrote the project's first test file: its tests are
        // the check from now on.
        if self.harness_on()
            && st.verify.is_none()
            && self.settings.bash_tool
            && self.settings.verify.is_none()
            && out
                .change
                .as_ref()
                .is_some_and(|c| harness::is_test_file(&c.path))
        {
            st.verify = harness::detect_verify(self.tools.sandbox.root());
        }
        if out.change.is_some()
            && self.harness_on()
            && (st.repro.is_some() || (st.wants_tests && st.verify.is_some()))
            && let Some(text) = self.check_after_change(st, cancel).await
        {
            let broke = std::mem::take(&mut st.broke);
            // The command the request said fails passed, and this
            // change made it fail: mm puts the file back.
            let repro_broke = broke
                && st
                    .tests
                    .as_ref()
                    .is_some_and(|t| Some(&t.command) == st.repro.as_ref());
            let failure = st.last_failure.clone().unwrap_or_default();
            // A change a person approved stays: mm says what fails.
            let undone = match out.change.clone().map(|c| *c) {
                Some(change) if repro_broke && !out.approved => {
                    self.roll_back(st, &change, cancel).await
                }
                _ => None,
            };
            match undone {
                Some(undone) => {
                    out.text.push_str(&undone);
                    out.text
                        .push_str(&format!("\nThe failure it caused:\n{failure}"));
                }
                None => {
                    out.text.push_str(&text);
                    // An edit that broke a passing check may be undone.
                    if broke && call.name == ToolName::EditFile {
                        st.edit_pairs.pop();
                    }
                }
            }
        }
        if let Some(change) = out.change.clone()
            && let Some(hook) = self.settings.hooks.after_edit.clone()
        {
            if let Some(failed) = self.run_hook("afterEdit", &hook, cancel).await {
                out.text.push_str(&format!("\n{failed}"));
            }
            // A formatter's change: the file as it is now counts as
            // read, and the model hears that it differs.
            if self
                .tools
                .reread(&change.path)
                .is_some_and(|now| *now != *change.after)
            {
                out.text.push_str(&format!(
                    "\n[the afterEdit hook changed {} after this edit; read it again before you edit it]",
                    change.path
                ));
            }
        }
        Ok(())
    }

    /// The call run, unless a guard of the harness refuses it (a test
    /// file changed to pass, an edit made again or undone, a rename the
    /// request did not ask for, text written over a file, a file reread
    /// unchanged, a write to a file the request does not name). Returns
    /// what it came to, and whether it was a reread answered from view.
    async fn guarded_run(
        &mut self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        ctx: &CallCtx<'_>,
        key: &str,
    ) -> (ToolOutput, bool) {
        // Asked to make failing tests pass, a small model weakens the
        // test: changing an existing test file is refused unless the
        // request asks for test changes.
        let test_file = crate::toolname::edits(call.name.as_str())
            .then(|| tools::arg_str(args, crate::toolname::arg::PATH))
            .flatten()
            .map(|p| p.trim_start_matches("./").to_string())
            .filter(|p| {
                self.harness_on()
                    && st.wants_tests
                    && !harness::asks_for_tests(&st.prompt)
                    // The user, rejecting a change, asked for the tests.
                    && !st
                        .user_said
                        .iter()
                        .any(|r| crate::patterns::has_word(r, &["test", "tests"]))
                    && harness::is_test_file(p)
                    && self.tools.sandbox.root().join(p).is_file()
            });
        // The same edit made a second time changes the file again (its
        // replacement holds its old_string): a small model repeats one
        // and grows the file at each round.
        let edit_again = call.name == ToolName::EditFile
            && st.edits_made.contains(key)
            && matches!(
                (tools::arg_str(args, crate::toolname::arg::OLD_STRING), tools::arg_str(args, crate::toolname::arg::REPLACEMENT)),
                (Some(o), Some(n)) if !o.is_empty() && n.contains(o)
            );
        // An edit that reverses one made this turn: a small model
        // swings a change back and forth until the rounds run out.
        let undo = (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let path =
                    tools::arg_str(args, crate::toolname::arg::PATH)?.trim_start_matches("./");
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                // Undoing a change that left errors (a line that no
                // longer parses) is the repair, not going back on it.
                let rel = self.tools.sandbox.check_read(path).ok()?.rel;
                let broke = st
                    .checks
                    .get(&rel)
                    .is_some_and(|c| turn_new_errors(st, &rel, c) > 0);
                if broke {
                    return None;
                }
                st.edit_pairs
                    .iter()
                    .find(|(p, o, n)| p == path && o == new && n == old)
                    .map(|(_, o, n)| (o.clone(), n.clone()))
            })
            .flatten();
        // Asked to change a function it names, a small model renames
        // it (`format_list` to `format_list_with_sep`): the user's code
        // calls it by the name the request used.
        let renames_named = (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                harness::unasked_rename(&st.prompt, old, new)
            })
            .flatten();
        // Asked to fix a failure, a small model renames a variable
        // (`times` to `times_int` everywhere): a rename changes nothing
        // the code does, and it broke a command-line flag.
        let rename_only = (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                let fail = st.last_failure.as_deref()?;
                let path = tools::arg_str(args, crate::toolname::arg::PATH)?;
                let r = self.tools.sandbox.check_read(path).ok()?;
                let file = crate::paths::read_checked_text(&r.abs).ok()?;
                harness::rename_only_refusal(old, new, &file, fail, &st.prompt)
            })
            .flatten();
        // Asked for a commit message or a summary of piped text, a
        // small model writes the text (or the diff it was given) over
        // a file instead of answering.
        let text_only =
            crate::toolname::edits(call.name.as_str()) && self.harness_on() && st.text_only;
        // A file the model has in view, unchanged since: one line, not
        // the file again (a small model rereads what it was given).
        let reread = (call.name == ToolName::ReadFile)
            .then(|| self.unchanged_read(st, args))
            .flatten();
        st.rereads += u32::from(reread.is_some());
        // The request names a file to create, and the model writes to
        // another one it does not name (tests into the module).
        let elsewhere = crate::toolname::edits(call.name.as_str())
            .then(|| tools::arg_str(args, crate::toolname::arg::PATH))
            .flatten()
            .filter(|_| self.on(crate::config::Behaviour::Named))
            .and_then(|p| self.named_elsewhere(st, p));
        st.answer_in_text |= text_only;
        let out = match &test_file {
            None if text_only => ToolOutput::refused(format!(
                "refused: the request asks for text in your answer, not for a change to a file. Nothing was written. Reply with the text itself{}.\n{}",
                if st.piped {
                    " (what was piped in is context, not a file to write)"
                } else {
                    ""
                },
                harness::restate(&st.prompt)
            )),
            Some(p) => ToolOutput::refused(self.test_file_refusal(p, &st.prompt)),
            None if rename_only.is_some() => {
                ToolOutput::refused(rename_only.clone().unwrap_or_default())
            }
            None if undo.is_some() => {
                let (o, n) = undo.clone().unwrap_or_default();
                let short = |t: &str| {
                    t.lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect::<String>()
                };
                ToolOutput::refused(format!(
                    "refused: this edit would undo the change you made earlier in this turn (`{}` became `{}`). Nothing was written. If that change was right, the work may be done: check it and answer.\n{}",
                    short(&o),
                    short(&n),
                    harness::restate(&st.prompt)
                ))
            }
            None if renames_named.is_some() => {
                let (old, new) = renames_named.clone().unwrap_or_default();
                ToolOutput::refused(format!(
                    "refused: the request names {old}, and this edit renames it to {new}; the request does not ask for a rename. Nothing was written. Keep the name {old} and change only what the request asks.\n{}",
                    harness::restate(&st.prompt)
                ))
            }
            None if reread.is_some() => ToolOutput::ok(reread.clone().unwrap_or_default()),
            None if elsewhere.is_some() => {
                ToolOutput::refused(elsewhere.clone().unwrap_or_default())
            }
            None if edit_again => ToolOutput::refused(format!(
                "refused: this exact edit was already made in this turn; making it again would change the file a second time. Nothing was written. read_file {} to see it as it is now.\n{}",
                tools::arg_str(args, crate::toolname::arg::PATH).unwrap_or_default(),
                harness::restate(&st.prompt)
            )),
            None => tools::run(&self.tools, &call.name, args, ctx).await,
        };
        (out, reread.is_some())
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

/// A file's content as the model was shown it this turn, and where.
#[derive(Clone, Copy)]
struct Shown {
    /// A hash of the file's content then.
    content: u64,
    /// The message that holds it, and a hash of that message's text (a
    /// compaction or a cut message is no longer what the model sees).
    message: usize,
    message_hash: u64,
    /// The round it was read in (0: attached to the request).
    round: u32,
}

fn text_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// What a turn accumulates across its rounds.
#[derive(Default)]
struct TurnState {
    /// The request as the user typed it.
    prompt: String,
    /// The request asks a question rather than for a change.
    question: bool,
    /// Text was piped in with the request (`… | mm -p PROMPT`).
    piped: bool,
    /// The request asks for text in the answer (a commit message, a
    /// summary): a write to a file is refused.
    text_only: bool,
    /// Requests go without tools: the answer is text (a text-only request
    /// about piped text, or one whose write was refused).
    answer_in_text: bool,
    /// The project's test command (configured or detected).
    verify: Option<String>,
    /// The command the request says fails.
    repro: Option<String>,
    /// The request mentions running tests or failing tests.
    wants_tests: bool,
    /// The last harness test run, and how many failures were fed back.
    tests: Option<TestReport>,
    /// `changes()` when the harness last ran the checks.
    checked_at: Option<usize>,
    /// A check command the model ran itself: (command, passed, changes()).
    model_checked: Option<(String, bool, usize)>,
    /// Names the turn's edits removed, with the file that defined them.
    removed: Vec<(String, String)>,
    /// File changes and commands that may have changed files.
    mutations: usize,
    follow_ups: u32,
    told_claim: bool,
    /// Told once that nothing was written while the check still fails.
    told_unfinished: bool,
    /// A one-line fix mm found by trying changes in the fence, not made.
    fix: Option<tools::probe::Fix>,
    /// The last change broke a check that passed before it.
    broke: bool,
    /// mm made a fix before the model's first look, every check passes,
    /// and the request asks for nothing more.
    settled: bool,
    /// mm's own change settled the turn mid-way: the next request is for
    /// the answer, without tools.
    answer_next: bool,
    /// The request's checks the model wrote (not the request's own
    /// examples), as their FAILED lines show them.
    written_checks: Vec<String>,
    /// Code the request spells out that no file held when it began.
    spelled: Vec<(Option<String>, String)>,
    told_spelled: bool,
    told_grounding: bool,
    /// The answer's arithmetic was corrected once.
    told_arithmetic: bool,
    /// `edit_file` calls (by `call_key`) that changed a file this turn.
    edits_made: std::collections::HashSet<String>,
    /// Those edits as (path, old_string, replacement), to tell an undo.
    edit_pairs: Vec<(String, String, String)>,
    /// The sums mm worked out for the model: evidence for its answer.
    computed: String,
    /// The call a question asks about as mm ran it, and what it returned.
    probed: Option<(String, String)>,
    /// The answer was sent back for not giving what was asked.
    told_value: bool,
    /// The last failure output of the request's command or the tests, as
    /// shown to the model.
    last_failure: Option<String>,
    /// The last value trace of a failing test (what the failing call
    /// got, returned and called), for candidates one step down.
    last_trace: Option<String>,
    runaways: u32,
    told_tests_claim: bool,
    told_refs: bool,
    reasked: bool,
    harness_calls: u32,
    unbacked: Vec<String>,
    answer: String,
    written: Vec<String>,
    used_tools: bool,
    /// Calls that failed in the last round, by `call_key`, with their error.
    failures: HashMap<String, String>,
    /// Rounds in a row where every call was a refused repeat.
    repeat_rounds: u32,
    /// Every call of the turn with its result, hashed, for cycle detection.
    history: Vec<u64>,
    cycle_warned: bool,
    /// Writes of the model's that brought a file back to contents it had
    /// before this turn's last change to it (A, B, A): since the last
    /// warning.
    revisits: u32,
    nudges: u32,
    /// Why the loop was stopped early, for the turn's result.
    stopped: Option<String>,
    /// Commands off the read-only list that ran.
    commands: u32,
    /// Files the turn's shell commands changed (checkpoints on).
    command_changes: Vec<String>,
    /// The same, to look up (a command can make 100,000 files).
    command_changed: std::collections::HashSet<String>,
    /// The language server's latest verdict on each file written.
    checks: HashMap<String, crate::lsp::Check>,
    /// Each written file's errors before the turn's first write to it
    /// (None: the server did not know the file).
    baselines: HashMap<String, Option<Vec<String>>>,
    /// The source files the request names, as they were when the turn
    /// began (their placeholders are what the request asks to fill).
    originals: HashMap<String, String>,
    /// The model was told once about errors its changes left.
    told_errors: bool,
    /// Files whose latest change this turn a person approved: mm undoes
    /// none of them (it says what still fails instead).
    approved: std::collections::HashSet<String>,
    /// A person said no to a call this turn (or nobody could be asked):
    /// an ending with nothing written is theirs, not a stall.
    declined: bool,
    /// What the user said when rejecting a change: their words count as
    /// much as the request's ("fix the test" lets the test change).
    user_said: Vec<String>,
    /// The round the turn is in.
    round: u32,
    /// What candidate changes came to this turn ("3 candidates tried, the
    /// 2nd passed"), for the receipt.
    candidate_notes: Vec<String>,
    /// Candidates were tried after a change of the model's this turn.
    tried_candidates: bool,
    /// Rounds in a row whose calls only read (see `stall`).
    read_rounds: u32,
    /// Reads of a file the model had in view, unchanged, this turn.
    rereads: u32,
    /// Rounds whose calls did not parse.
    bad_rounds: u32,
    /// Rounds in a row whose calls changed no file.
    idle_rounds: u32,
    /// Rounds in a row whose calls changed nothing (no write went through,
    /// no command changed a file).
    unchanged_rounds: u32,
    /// `mutations` when `unchanged_rounds` was last counted.
    seen_mutations: usize,
    /// The whole file was asked for this turn (see `stall`).
    stall_tried: bool,
    /// The request's command failed before the turn changed anything:
    /// its failure as shown then.
    first_failure: Option<String>,
    /// What the command the request names printed before any change, when
    /// it exited 0 then: the request's symptom is in its output, not its
    /// exit, so "it passes" after a change says nothing.
    repro_before: Option<String>,
    /// Checks from the request were asked for this turn (see `asserts`).
    asserts_tried: bool,
    /// Their command, a check candidates are tried against too.
    request_checks: Option<String>,
    /// How many checks it holds, the written files as they were when it
    /// last ran and how many failed then, and how many times the model
    /// was told of a later run.
    request_checks_total: usize,
    request_checked: Option<(String, usize)>,
    request_rechecks: u32,
    /// The fewest of the request's checks that failed this turn, and the
    /// written files as they were then: a turn that ends worse than that
    /// gets them back.
    best_checked: Option<(usize, Vec<(String, String)>)>,
    /// What the request's command printed when it last passed.
    repro_output: Option<String>,
    /// The model was asked once whether a now-passing command's output is
    /// what the request expects.
    told_exit0: bool,
    /// A question's command as mm ran it, and what it printed.
    printed: Option<(String, String)>,
    /// The answer was sent back once for not quoting that output.
    told_printed: bool,
    /// Files whose whole content is in view this turn: path -> where.
    shown: HashMap<String, Shown>,
    /// Each file's contents through the turn: as the turn found it, then
    /// after each change of mm's tools (to put back the last that parses).
    versions: HashMap<String, Vec<std::sync::Arc<str>>>,
}

impl TurnState {
    /// How many of the request's checks fail on the code as they last
    /// ran, of how many, when any does.
    fn request_checks_failing(&self) -> Option<(usize, usize)> {
        self.request_checked
            .as_ref()
            .map(|(_, k)| *k)
            .filter(|k| *k > 0)
            .map(|k| (k, self.request_checks_total))
    }

    /// Keeps `change`'s contents among the file's versions of this turn.
    fn note_version(&mut self, change: &crate::protocol::FileChange) {
        let v = self.versions.entry(change.path.clone()).or_default();
        if v.is_empty() {
            v.push(change.before.clone());
        }
        v.push(change.after.clone());
    }
}
