//! Asking another agent: the agent declared under `mmConfigs` runs as a
//! child `mm -acp` (this same binary), keeps its own config, tools and
//! session, and answers one prompt over ACP. Used by the `ask_agent`
//! tool, `--ask` and `/ask-NAME`.
//!
//! The child can never do more than the asker: its sandbox mode is capped
//! at the asker's (`MM_SANDBOX_CEILING`), the fence and `-no-net` carry
//! over, and its permission requests are answered here — granted when
//! the asker's `mmConfigs.NAME.yolo` says so, refused otherwise. Agents
//! asking agents stop at `MAX_DEPTH`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, TextContent,
    ToolCallStatus,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams};
use tokio::io::AsyncReadExt;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use crate::config::{SandboxMode, SubAgent};
use crate::protocol::ApprovalDecision;

/// How deep agents may ask agents (the user's agent is depth 0).
pub const MAX_DEPTH: u32 = 3;
pub use crate::config::{
    ASK_CEILING_VAR as CEILING_VAR, ASK_CHAIN_VAR as CHAIN_VAR, ASK_DEPTH_VAR as DEPTH_VAR,
    ASK_YOLO_VAR as YOLO_VAR,
};

/// The agent files this process may run, by digest: taken when the first
/// mm of a chain loaded its settings (every file its agents can reach),
/// and handed down the chain in `MM_ASK_PINS`.
static PINS: std::sync::OnceLock<std::collections::BTreeMap<PathBuf, u64>> =
    std::sync::OnceLock::new();
const PINS_VAR: &str = "MM_ASK_PINS";

/// Pins the agent files: those an asker handed down, or (the first mm of
/// a chain) every file reachable from `agents`, as they are now.
pub fn pin(agents: &std::collections::BTreeMap<String, SubAgent>) {
    let inherited = std::env::var(PINS_VAR)
        .ok()
        .and_then(|v| serde_json::from_str::<Vec<(PathBuf, u64)>>(&v).ok());
    let pins = match inherited {
        Some(list) => list.into_iter().collect(),
        None => {
            let mut pins = std::collections::BTreeMap::new();
            reach(agents, &mut pins);
            pins
        }
    };
    let _ = PINS.set(pins);
}

fn reach(
    agents: &std::collections::BTreeMap<String, SubAgent>,
    pins: &mut std::collections::BTreeMap<PathBuf, u64>,
) {
    for a in agents.values() {
        if pins.contains_key(&a.path) {
            continue;
        }
        let Some(d) = crate::config::file_digest(&a.path) else {
            continue;
        };
        pins.insert(a.path.clone(), d);
        if let Ok(s) = crate::config::load(Some(&a.path), &crate::config::Overrides::default()) {
            reach(&s.sub_agents, pins);
        }
    }
}

/// Whether this process may grant what the agents it asks ask for: not
/// when an asker up the chain does not.
fn may_grant() -> bool {
    std::env::var(YOLO_VAR).map_or(true, |v| v != "0")
}

/// A child's progress as the tool card's progress lines: what says a
/// line, the sender to hand the child, and the task that forwards what it
/// sends (awaited when the child is done).
pub fn card_progress(
    bus: &crate::bus::EventBus,
    ctx: &crate::tools::CallCtx<'_>,
) -> (
    impl Fn(ChildNote) + Clone + Send + 'static,
    Progress,
    tokio::task::JoinHandle<()>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ChildNote>();
    let (bus, turn, call_id) = (bus.clone(), ctx.turn, ctx.call_id.to_string());
    let say = move |note: ChildNote| {
        let call_id = call_id.clone();
        bus.publish(match note {
            ChildNote::Step(text) => crate::protocol::AgentEvent::ToolProgress {
                turn,
                call_id,
                text,
            },
            ChildNote::Session(session) => crate::protocol::AgentEvent::ToolChild {
                turn,
                call_id,
                session,
            },
        });
    };
    let say2 = say.clone();
    let forward = tokio::spawn(async move {
        while let Some(note) = rx.recv().await {
            say2(note);
        }
    });
    (say, tx, forward)
}

/// What the asker brings to every ask.
#[derive(Clone, Debug)]
pub struct Asker {
    /// The asker's workspace: the child's too.
    pub root: PathBuf,
    /// The asker's sandbox mode: the child's at most.
    pub ceiling: SandboxMode,
    /// The tools the asker may offer (its role's): the child's at most.
    pub tools: Option<Vec<String>>,
    pub net: bool,
    pub unfenced: bool,
    /// A child that sends nothing for this long is stopped.
    pub idle: Duration,
    /// `-url`/`-provider`/`-model` the user gave the asker: the child's too.
    pub server_flags: Vec<String>,
    /// The asker's request budget: the child gets what is left of it,
    /// and its requests are charged to it.
    pub budget: Option<Arc<crate::llm::client::RequestBudget>>,
}

/// A finished ask.
#[derive(Clone, Debug)]
pub struct Answer {
    pub text: String,
    /// The files it wrote, as it reported them.
    pub written: Vec<String>,
    /// The child's session id (`mm -show ID`).
    pub session: String,
}

/// What a running child tells the asker's front end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildNote {
    /// One line of its progress: a tool it ran, a question it asked.
    Step(String),
    /// Its session started, with this id: its own transcript.
    Session(String),
}

/// Where a child's notes go, for the asker's front end.
pub type Progress = tokio::sync::mpsc::UnboundedSender<ChildNote>;

/// This process's depth and the names that asked down to it.
pub fn depth() -> (u32, String) {
    let d = std::env::var(DEPTH_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (d, std::env::var(CHAIN_VAR).unwrap_or_default())
}

/// Refuses an ask that would go past `MAX_DEPTH`.
pub fn check_depth(name: &str) -> Result<(), String> {
    let (d, chain) = depth();
    if d + 1 > MAX_DEPTH {
        let chain = if chain.is_empty() {
            name.to_string()
        } else {
            format!("{chain} → {name}")
        };
        return Err(format!(
            "not asked: agents are already {d} deep ({chain}), and {MAX_DEPTH} is the limit. Answer with what you have."
        ));
    }
    Ok(())
}

/// The prompt with the conversation so far in front of it
/// (`/ask-with-context-NAME`).
pub fn with_context(transcript: &str, prompt: &str) -> String {
    if transcript.trim().is_empty() {
        return prompt.to_string();
    }
    format!(
        "The conversation so far, between a user and another assistant:\n\n{transcript}\n\nNow answer this:\n{prompt}"
    )
}

/// The conversation's words, for an agent that does not see it: the
/// user's messages and the answers, without tool traffic.
pub fn transcript(messages: &[crate::llm::Message]) -> String {
    use crate::llm::Role;
    let mut out = Vec::new();
    for m in messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            _ => continue,
        };
        let Some(text) = m
            .content
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        else {
            continue;
        };
        out.push(format!("{who}: {text}"));
    }
    out.join("\n\n")
}

/// Asks `sub` one prompt and returns its final answer (the JSON of a
/// JSON agent). The child is gone when this returns, whatever happened.
pub async fn ask(
    sub: &SubAgent,
    prompt: &str,
    asker: &Asker,
    progress: Option<Progress>,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    check_depth(&sub.name)?;
    // The file must be the one loaded: a file the model rewrote since
    // (a key to send elsewhere, approvals off) is not run.
    // Pinned at the chain's start; a file no asker pinned is not run.
    let pinned = match PINS.get() {
        Some(p) => p.get(&sub.path).copied(),
        None => sub.digest,
    };
    if pinned.is_none() || crate::config::file_digest(&sub.path) != pinned {
        return Err(format!(
            "not asked: the file of agent {} ({}) changed since mm loaded it; start mm again to use it as it is now",
            sub.name,
            sub.path.display()
        ));
    }
    let grant = sub.yolo && may_grant();
    let child = Child {
        name: &sub.name,
        args: vec!["-acp".into(), sub.path.clone().into_os_string()],
        env: Vec::new(),
        grant: if grant {
            Grant::Yes
        } else {
            Grant::No("no yolo for this agent, or for one that asked it")
        },
    };
    run_child(&child, prompt, asker, progress, cancel).await
}

/// A child mm to ask: its name (for the chain and what is said), its
/// arguments (`-acp` and what follows), more environment, and how its
/// permission requests are answered.
pub struct Child<'a> {
    pub name: &'a str,
    pub args: Vec<std::ffi::OsString>,
    pub env: Vec<(&'static str, String)>,
    pub grant: Grant,
}

/// A child's permission request, as the asker puts it to its user.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    /// All it would do, in words: its title, every line of a command, an
    /// edit as a unified diff.
    pub what: String,
    /// An edit: the file (relative to the root), its text now and after.
    pub edit: Option<crate::protocol::FileChange>,
    /// A command: the command, and why the child could not run it unasked.
    pub command: Option<(String, String)>,
    /// What the child's "always" would cover, in its words.
    pub always: Option<String>,
}

/// Asks the asker's user about what a child wants to do: the user's
/// decision, reason and hunks included.
pub type Decide = Arc<
    dyn Fn(Asked) -> std::pin::Pin<Box<dyn std::future::Future<Output = ApprovalDecision> + Send>>
        + Send
        + Sync,
>;

/// How a child's permission requests are answered.
#[derive(Clone)]
pub enum Grant {
    /// All granted.
    Yes,
    /// All refused, for this reason (said as the verdict).
    No(&'static str),
    /// Each put to the asker's user.
    Ask(Decide),
}

impl Grant {
    fn granted(&self) -> bool {
        matches!(self, Grant::Yes)
    }

    /// The decision on `asked`, and the verdict to show.
    async fn decide(&self, asked: Asked) -> (ApprovalDecision, String) {
        match self {
            Grant::Yes => (ApprovalDecision::Yes, "granted (yolo)".into()),
            Grant::No(why) => (
                ApprovalDecision::No {
                    reason: Some((*why).to_string()),
                },
                format!("refused ({why})"),
            ),
            Grant::Ask(decide) => {
                let d = decide(asked).await;
                let verdict = match &d {
                    ApprovalDecision::Yes => "granted by you".to_string(),
                    ApprovalDecision::Always => "granted by you, always".to_string(),
                    ApprovalDecision::Hunks { accepted } => {
                        format!("{} hunk(s) granted by you", accepted.len())
                    }
                    ApprovalDecision::No { reason: Some(r) } if !r.trim().is_empty() => {
                        format!("refused by you ({})", r.trim())
                    }
                    ApprovalDecision::No { .. } => "refused by you".to_string(),
                };
                (d, verdict)
            }
        }
    }
}

/// Runs `child` on one prompt and returns its final answer. The child is
/// gone when this returns, whatever happened.
pub async fn run_child(
    child: &Child<'_>,
    prompt: &str,
    asker: &Asker,
    progress: Option<Progress>,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    check_depth(child.name)?;
    let name = child.name;
    let grant = child.grant.granted();
    // The child's requests count toward this budget: it may make what is
    // left, and tells each to a tally read when it is gone.
    let left = asker.budget.as_ref().and_then(|b| b.remaining());
    if left == Some(0) {
        return Err(format!(
            "not asked: the request budget (-max-requests) is spent, so agent {name} cannot make any"
        ));
    }
    let tally =
        tempfile::NamedTempFile::new().map_err(|e| format!("cannot start agent {name}: {e}"))?;
    let mut cmd = child_command(child, asker, left, tally.path(), grant)?;
    crate::sandbox::procs::own_session(&mut cmd);
    let mut proc = cmd
        .spawn()
        .map_err(|e| format!("cannot start agent {name}: {e}"))?;
    // The child and all it started die with this group, whatever happens.
    let group = proc
        .id()
        .and_then(crate::sandbox::procs::Group::register_graceful);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (proc.stdin.take(), proc.stdout.take(), proc.stderr.take())
    else {
        return Err(format!("cannot talk to agent {name}"));
    };
    // Its stderr: the last few KB, to say why it stopped.
    let (err_tail, err_reader) = stderr_tail(stderr);

    let talk = talk(
        name,
        prompt,
        asker,
        child.grant.clone(),
        progress,
        cancel,
        stdin,
        stdout,
    );
    let result = talk.await;
    // Its input is closed: a child that answered ends its sessions and
    // what they started, and exits. One that does not is asked to (SIGTERM:
    // it kills what it started), then killed with its group.
    end_child(&mut proc).await;
    drop(group);
    if let Some(b) = &asker.budget {
        let made = std::fs::metadata(tally.path()).map_or(0, |m| m.len());
        b.charge(u32::try_from(made).unwrap_or(u32::MAX));
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), err_reader).await;
    let why = || {
        let t = err_tail.lock().map(|t| t.clone()).unwrap_or_default();
        let t = String::from_utf8_lossy(&t);
        let last: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
        let last = last[last.len().saturating_sub(3)..].join(" / ");
        crate::untrusted::displayable(&last).into_owned()
    };
    match result {
        Ok(a) => Ok(a),
        Err(Failure::Said(e)) => Err(e),
        Err(Failure::Gone) => {
            let detail = why();
            Err(format!(
                "agent {name} stopped before it answered{}",
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                }
            ))
        }
    }
}

/// The command that starts a child mm: its flags, the server's, the
/// budget left, the tally file, its depth and chain, and the grants.
fn child_command(
    child: &Child<'_>,
    asker: &Asker,
    left: Option<u32>,
    tally: &std::path::Path,
    grant: bool,
) -> Result<tokio::process::Command, String> {
    let name = child.name;
    let (d, chain) = depth();
    let exe = std::env::current_exe().map_err(|e| format!("cannot find mm's own binary: {e}"))?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(&child.args).args(&asker.server_flags);
    for (k, v) in &child.env {
        cmd.env(k, v);
    }
    if let Some(n) = left {
        cmd.arg("-max-requests").arg(n.to_string());
    }
    cmd.env(crate::llm::client::TALLY_VAR, tally);
    if !asker.net {
        cmd.arg("-no-net");
    }
    if asker.unfenced {
        cmd.arg("-unfenced");
    }
    if let Some(tools) = &asker.tools {
        cmd.env(crate::config::ASK_TOOLS_VAR, tools.join(","));
    }
    cmd.current_dir(&asker.root)
        .env(DEPTH_VAR, (d + 1).to_string())
        .env(
            CHAIN_VAR,
            if chain.is_empty() {
                name.to_string()
            } else {
                format!("{chain} → {name}")
            },
        )
        .env(CEILING_VAR, asker.ceiling.as_str())
        .env(YOLO_VAR, if grant { "1" } else { "0" })
        .env(
            PINS_VAR,
            serde_json::to_string(
                &PINS
                    .get()
                    .map(|p| p.iter().collect::<Vec<_>>())
                    .unwrap_or_default(),
            )
            .unwrap_or_default(),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    Ok(cmd)
}

/// Ends a child whose input is closed: one that answered exits by itself;
/// one that does not is asked to (SIGTERM: it kills what it started),
/// then killed.
async fn end_child(proc: &mut tokio::process::Child) {
    let exited = tokio::time::timeout(Duration::from_secs(8), proc.wait()).await;
    if exited.is_err() {
        if let Some(pid) = proc.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        if tokio::time::timeout(Duration::from_secs(2), proc.wait())
            .await
            .is_err()
        {
            let _ = proc.start_kill();
            let _ = proc.wait().await;
        }
    }
}

/// Reads a child's stderr, keeping its last 4 KB.
fn stderr_tail(
    mut stderr: tokio::process::ChildStderr,
) -> (Arc<Mutex<Vec<u8>>>, tokio::task::JoinHandle<()>) {
    let err_tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let tail = err_tail.clone();
    let err_reader = tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = tail.lock() {
                t.extend_from_slice(&buf[..n]);
                let over = t.len().saturating_sub(4096);
                t.drain(..over);
            }
        }
    });
    (err_tail, err_reader)
}

enum Failure {
    /// What to tell the asker, as is.
    Said(String),
    /// The child went away: its stderr says why.
    Gone,
}

type Shared<T> = Arc<Mutex<T>>;

mod talk;
use talk::talk;
