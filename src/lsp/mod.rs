//! Language servers: started lazily per language when a file of that
//! language is first touched, fed every file the agent writes, asked for
//! definitions and references. Diagnostics reach the model in the tool
//! result of the write that caused them, and the front ends as events.
//!
//! A server that is not installed costs nothing (one notice per language);
//! one that dies is restarted with backoff a few times, then turned off
//! with one notice. Nothing here waits without a time limit.

mod checks;
pub mod client;
mod frames;
mod navigate;
pub mod store;
pub mod text;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::{Location, TextDocumentIdentifier, TextDocumentPositionParams};
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::protocol::{AgentEvent, DiagItem, DiagLevel, Level, LocItem, NavKind};
use client::{Client, OnReport};
use store::{DiagStore, FileDiags};

pub use crate::config::servers::{ServerFile, ServerSpec, defaults, resolve};

/// The LSP language id of a file, by extension.
/// How many entries of the workspace `serves_workspace` looks at.
const LOOKED_AT: usize = 2000;

/// Whether the workspace has a file in one of `languages` (a bounded
/// look: a workspace larger than `LOOKED_AT` entries counts as having
/// one). The language tools are offered only then: a JavaScript
/// workspace with only pyright installed sent ~450 tokens of tools that
/// could only fail with every request.
pub fn serves_workspace(root: &Path, languages: &[&str]) -> bool {
    if languages.is_empty() {
        return false;
    }
    // No ignore files read: one that is a FIFO would hold the start (a
    // test plants one); hidden folders and the usual build output left.
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(true)
        .max_depth(Some(8))
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some("node_modules" | "target")))
        .build();
    for (seen, entry) in walk.flatten().enumerate() {
        if seen >= LOOKED_AT {
            return true;
        }
        if entry.file_type().is_some_and(|t| t.is_file())
            && language_of(entry.path()).is_some_and(|l| languages.contains(&l))
        {
            return true;
        }
    }
    false
}

pub fn language_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?;
    Some(match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "go" => "go",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        _ => return None,
    })
}

/// Where mm's own install of language servers lives (`scripts/lsp`):
/// searched after PATH.
pub fn own_bin_dir() -> Option<PathBuf> {
    crate::config::data_dir().map(|d| d.join("lsp/node_modules/.bin"))
}

/// The program for `command`: a path as is, else PATH, else mm's own dirs.
pub fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        let p = PathBuf::from(command);
        return p.is_file().then_some(p);
    }
    // Never a workspace entry (`.`, `node_modules/.bin`, a venv's bin):
    // what is there may be the model's.
    crate::sandbox::host::program(command).or_else(|| {
        own_bin_dir()
            .map(|d| d.join(command))
            .filter(|p| crate::sandbox::host::executable(p))
    })
}

/// The crash that turns a server off for the session (the ones before it
/// are restarted: at once, then after 2 s).
const MAX_CRASHES: u32 = 3;
const INIT_TIMEOUT: Duration = Duration::from_secs(30);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write waits for the server's verdict (the first check of a
/// fresh server also waits for it to analyse the workspace).
const CHECK_WAIT: Duration = Duration::from_secs(5);
const FIRST_CHECK_WAIT: Duration = Duration::from_secs(20);
const QUIET: Duration = Duration::from_millis(300);
/// How long to wait for the server's word on a file that uses a changed
/// one (it may say nothing: nothing changed there).
const DEPENDENT_WAIT: Duration = Duration::from_millis(2500);
/// Files that use a changed file checked after it, at most.
const MAX_DEPENDENTS: usize = 5;

/// Files that use a file about to change, with what the server said of
/// them before.
pub struct Dependents {
    items: Vec<Dependent>,
}

struct Dependent {
    path: PathBuf,
    generation: u64,
    baseline: Option<Vec<lsp_types::Diagnostic>>,
}

enum Slot {
    Running {
        client: Arc<Client>,
        checked: bool,
    },
    /// Crashed; may start again after `retry_at`.
    Waiting {
        retry_at: Instant,
    },
    Off,
}

#[derive(Default)]
struct State {
    slots: HashMap<String, Slot>,
    crashes: HashMap<String, u32>,
    /// Languages already told they have no server.
    told: HashSet<String>,
}

/// A server's verdict on a written file.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// For the model: the errors, the new ones marked.
    pub text: String,
    pub errors: usize,
    /// Errors the change brought in, when the server knew the file before.
    pub new_errors: Option<usize>,
    /// The error messages before the change (when known) and after it.
    pub baseline: Option<Vec<String>>,
    pub now: Vec<String>,
}

/// Why no server answers for a file.
#[derive(Debug)]
pub enum Unavailable {
    /// Not a language any server handles (or not a code file).
    NoLanguage,
    NoServer(String),
    Off(String),
    Failed(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoLanguage => write!(f, "no language server handles this kind of file"),
            Unavailable::NoServer(l) => write!(f, "no language server for {l} is installed"),
            Unavailable::Off(n) => write!(f, "{n} is turned off for this session"),
            Unavailable::Failed(e) => write!(f, "{e}"),
        }
    }
}

pub struct Lsp {
    root: PathBuf,
    specs: Vec<ServerSpec>,
    programs: HashMap<String, Option<PathBuf>>,
    bus: EventBus,
    pub store: Arc<DiagStore>,
    state: Mutex<State>,
    log: Option<PathBuf>,
    /// Reports about proposed (not written) text: kept from the front ends.
    muted: Arc<std::sync::Mutex<HashSet<(PathBuf, i32)>>>,
    /// What the server last said about each file's real text (reports on
    /// proposals left out): the baseline a write is compared with.
    real: Arc<std::sync::Mutex<HashMap<PathBuf, Vec<lsp_types::Diagnostic>>>>,
    /// One check at a time, so a preview's text never outlives it.
    checking: Mutex<()>,
    /// One start at a time per server.
    starting: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Shut down: a server that finishes starting now is stopped at once.
    closed: std::sync::atomic::AtomicBool,
    /// Servers start inside the fence, as commands do (None in tests: a
    /// plain process with the scrubbed environment).
    sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

impl Lsp {
    /// `log`: where servers' stderr goes.
    pub fn new(root: &Path, specs: Vec<ServerSpec>, bus: EventBus, log: Option<PathBuf>) -> Self {
        let programs = specs
            .iter()
            .filter(|s| s.enabled)
            .map(|s| (s.name.clone(), find_program(&s.command)))
            .collect();
        Self {
            root: root.to_path_buf(),
            specs,
            programs,
            bus,
            store: Arc::new(DiagStore::default()),
            state: Mutex::new(State::default()),
            log,
            muted: Default::default(),
            real: Default::default(),
            checking: Mutex::new(()),
            starting: Default::default(),
            closed: Default::default(),
            sandbox: None,
        }
    }

    /// Starts servers inside `sandbox`'s fence, with its network setting.
    pub fn fenced(mut self, sandbox: Arc<crate::sandbox::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The command that starts a server: in the fence with the workspace
    /// read-only, the secrets scrubbed from its environment. A server
    /// lives as long as the session, beside mm: one that could write the
    /// workspace could swap a folder for a link between mm's check of a
    /// path and mm's own read of it (a grep, a checkpoint, a hover). Its
    /// edits come back to mm as edits; rust-analyzer's cargo check builds
    /// into the fence's private /tmp. Also says mm's pid as the server
    /// will see it: none inside the fence, which has a pid namespace of its
    /// own.
    fn server_command(&self, program: &Path, args: &[String]) -> client::Launch {
        let program = program.to_string_lossy();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match &self.sandbox {
            Some(sb) => {
                // Like unasked code in read-only mode: the workspace to
                // read, never .git, no network, only its own /tmp to write.
                let mut plan = sb.approved_plan();
                plan.net = plan.access.is_none() && plan.net;
                plan.access = plan.access.map(|_| crate::sandbox::Access::ReadOnly);
                let mut cmd = sb.command(&program, &args, &self.root, plan);
                if plan.access.is_some() {
                    cmd.env("CARGO_TARGET_DIR", "/tmp/mm-lsp-target");
                }
                client::Launch {
                    parent_pid: plan.access.is_none().then(std::process::id),
                    cmd,
                }
            }
            None => {
                let mut cmd = tokio::process::Command::new(program.as_ref());
                cmd.args(&args).current_dir(&self.root);
                crate::sandbox::env::apply(&mut cmd);
                crate::sandbox::procs::own_session(&mut cmd);
                client::Launch {
                    cmd,
                    parent_pid: Some(std::process::id()),
                }
            }
        }
    }

    /// Some enabled server is installed.
    pub fn available(&self) -> bool {
        self.programs.values().any(Option::is_some)
    }

    /// An installed server serves a language of the workspace's files:
    /// the language tools are offered.
    pub fn serves_workspace(&self) -> bool {
        let languages: Vec<&str> = self
            .specs
            .iter()
            .filter(|s| self.programs.get(&s.name).is_some_and(Option::is_some))
            .flat_map(|s| s.languages.iter().map(String::as_str))
            .collect();
        serves_workspace(&self.root, &languages)
    }

    /// A server answers, or none has failed yet: once one is turned off
    /// for the session (a rustup proxy named rust-analyzer with no
    /// component behind it fails its start) and none runs, the language
    /// tools are taken to be of no use.
    pub async fn usable(&self) -> bool {
        let st = self.state.lock().await;
        let running = (st.slots.values())
            .any(|s| matches!(s, Slot::Running { client, .. } if !client.exited()));
        let off = st.slots.values().any(|s| matches!(s, Slot::Off));
        self.available() && (running || !off)
    }

    /// The names of the installed servers.
    pub fn installed(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .specs
            .iter()
            .filter(|s| self.programs.get(&s.name).is_some_and(Option::is_some))
            .map(|s| s.name.clone())
            .collect();
        v.dedup();
        v
    }

    fn notice(&self, level: Level, text: String) {
        self.bus.publish(AgentEvent::Notice {
            turn: None,
            level,
            text,
        });
    }

    fn on_report(&self) -> OnReport {
        let bus = self.bus.clone();
        let root = self.root.clone();
        let muted = self.muted.clone();
        let real = self.real.clone();
        Arc::new(move |path: &Path, d: &FileDiags| {
            if let Some(v) = d.version
                && muted
                    .lock()
                    .is_ok_and(|m| m.contains(&(path.to_path_buf(), v)))
            {
                return;
            }
            if let Ok(mut r) = real.lock() {
                r.insert(path.to_path_buf(), d.items.clone());
            }
            if !path.starts_with(&root) {
                return;
            }
            let (errors, warnings) = d.counts();
            // Columns in characters need the line; an empty report needs none.
            let content = if d.items.is_empty() {
                String::new()
            } else {
                crate::paths::read_checked_text(path).unwrap_or_default()
            };
            bus.publish(AgentEvent::Diagnostics {
                path: text::rel(&root, path),
                errors: errors as u32,
                warnings: warnings as u32,
                items: d.items.iter().map(|x| item(x, &content)).collect(),
            });
        })
    }

    /// A server that stopped: what it had open is forgotten, and it is
    /// started again after a wait, or left off after `MAX_CRASHES`.
    async fn after_crash(
        &self,
        st: &mut State,
        name: &str,
        lang: &str,
        client: &Client,
    ) -> Result<(), Unavailable> {
        let why = client
            .exit_reason
            .lock()
            .ok()
            .and_then(|w| w.clone())
            .unwrap_or_else(|| "it exited".into());
        let open = client.open_paths().await;
        self.store.clear(&open);
        // The new process counts versions from 1 again.
        if let Ok(mut m) = self.muted.lock() {
            m.retain(|(p, _)| !open.contains(p));
        }
        if let Ok(mut r) = self.real.lock() {
            r.retain(|p, _| !open.contains(p));
        }
        let n = st.crashes.entry(name.to_string()).or_default();
        *n += 1;
        if *n >= MAX_CRASHES {
            st.slots.insert(name.to_string(), Slot::Off);
            self.notice(
                Level::Warning,
                format!("{name} stopped {MAX_CRASHES} times ({why}); language features for {lang} are off for this session"),
            );
            return Err(Unavailable::Off(name.to_string()));
        }
        let wait = Duration::from_secs(if *n == 1 { 0 } else { 2 });
        self.notice(
            Level::Warning,
            format!("{name} stopped ({why}); restarting it"),
        );
        st.slots.insert(
            name.to_string(),
            Slot::Waiting {
                retry_at: Instant::now() + wait,
            },
        );
        Ok(())
    }

    /// Said once a language: no server for it is configured, or none of
    /// those configured is installed.
    fn say_none_found(&self, lang: &str, candidates: &[&ServerSpec]) {
        let names: Vec<&str> = candidates.iter().map(|s| s.command.as_str()).collect();
        self.notice(
            Level::Info,
            if names.is_empty() {
                format!("no language server is configured for {lang}")
            } else {
                format!(
                    "no language server found for {lang} (looked for {} on PATH); `scripts/lsp install` adds pyright",
                    names.join(", ")
                )
            },
        );
    }

    /// The running server for `path`, started if need be.
    async fn server_for(
        &self,
        path: &Path,
    ) -> Result<(Arc<Client>, &'static str, bool), Unavailable> {
        let lang = language_of(path).ok_or(Unavailable::NoLanguage)?;
        let candidates: Vec<&ServerSpec> = self
            .specs
            .iter()
            .filter(|s| s.enabled && s.languages.iter().any(|l| l == lang))
            .collect();
        let mut st = self.state.lock().await;
        // The first installed one that is not off (pylsp after a pyright
        // that would not start).
        let installed: Vec<(&ServerSpec, PathBuf)> = candidates
            .iter()
            .filter_map(|s| {
                self.programs
                    .get(&s.name)
                    .cloned()
                    .flatten()
                    .map(|p| (*s, p))
            })
            .collect();
        let usable = installed
            .iter()
            .find(|(s, _)| !matches!(st.slots.get(&s.name), Some(Slot::Off)))
            .cloned();
        let Some((spec, program)) = usable else {
            if let Some((s, _)) = installed.first() {
                return Err(Unavailable::Off(s.name.clone()));
            }
            if st.told.insert(lang.to_string()) {
                self.say_none_found(lang, &candidates);
            }
            return Err(Unavailable::NoServer(lang.to_string()));
        };
        let name = spec.name.clone();
        // A server that died a moment ago may not have closed its pipe
        // yet (or a child of it holds it open): ask the process too.
        let running =
            matches!(st.slots.get(&name), Some(Slot::Running { client, .. }) if !client.exited());
        let crashed = match st.slots.get(&name) {
            Some(Slot::Running { client, checked }) if running => {
                return Ok((client.clone(), lang, !checked));
            }
            Some(Slot::Running { client, .. }) => Some(client.clone()),
            Some(Slot::Off) => return Err(Unavailable::Off(name)),
            _ => None,
        };
        if let Some(client) = crashed {
            self.after_crash(&mut st, &name, lang, &client).await?;
        }
        if let Some(Slot::Waiting { retry_at }) = st.slots.get(&name)
            && Instant::now() < *retry_at
        {
            return Err(Unavailable::Failed(format!(
                "{name} is restarting; try again in a few seconds"
            )));
        }
        // Start without holding the state: other languages, the symbol
        // search and quitting do not wait for a slow server.
        let gate = self
            .starting
            .lock()
            .map(|mut g| g.entry(name.clone()).or_default().clone())
            .unwrap_or_default();
        drop(st);
        let _starting = gate.lock().await;
        {
            let st = self.state.lock().await;
            match st.slots.get(&name) {
                Some(Slot::Running { client, checked }) if client.alive() => {
                    return Ok((client.clone(), lang, !checked));
                }
                Some(Slot::Off) => return Err(Unavailable::Off(name)),
                _ => {}
            }
        }
        let started = Client::start(
            spec,
            self.server_command(&program, &spec.args),
            &self.root,
            self.store.clone(),
            self.on_report(),
            self.log.as_deref(),
            INIT_TIMEOUT,
        )
        .await;
        let mut st = self.state.lock().await;
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok(c) = started {
                c.shutdown().await;
            }
            return Err(Unavailable::Off(name));
        }
        match started {
            Ok(c) => {
                let c = Arc::new(c);
                st.slots.insert(
                    name,
                    Slot::Running {
                        client: c.clone(),
                        checked: false,
                    },
                );
                Ok((c, lang, true))
            }
            Err(e) => {
                // A server that cannot start will not start on the next
                // try either: say so once and leave it off.
                st.slots.insert(name.clone(), Slot::Off);
                self.notice(
                    Level::Warning,
                    format!("{e}; language features for {lang} are off for this session"),
                );
                Err(Unavailable::Failed(e.to_string()))
            }
        }
    }

    async fn mark_checked(&self, name: &str) {
        let mut st = self.state.lock().await;
        if let Some(Slot::Running { checked, .. }) = st.slots.get_mut(name) {
            *checked = true;
        }
    }

    /// The file was read: open it so the server has a baseline to tell new
    /// errors from old ones. Never waits for diagnostics.
    pub async fn opened(&self, path: &Path, content: &str) {
        if let Ok((client, lang, _)) = self.server_for(path).await {
            let _ = client.ensure(path, lang, content).await;
        }
    }

    /// A file mm put back (a rewind, an undo): the server hears the text
    /// it holds now, so what it reports is about that; a file put back to
    /// not existing has no errors left.
    pub async fn restored(&self, path: &Path, text: Option<&str>) {
        match text {
            Some(t) => self.opened(path, t).await,
            None => {
                if let Ok(mut real) = self.real.lock() {
                    real.remove(path);
                }
                self.bus.publish(AgentEvent::Diagnostics {
                    path: text::rel(&self.root, path),
                    errors: 0,
                    warnings: 0,
                    items: Vec::new(),
                });
            }
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Ends every server politely, then firmly.
    pub async fn shutdown(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let clients: Vec<Arc<Client>> = {
            let mut st = self.state.lock().await;
            st.slots
                .drain()
                .filter_map(|(_, s)| match s {
                    Slot::Running { client, .. } => Some(client),
                    _ => None,
                })
                .collect()
        };
        futures::future::join_all(clients.iter().map(|c| c.shutdown())).await;
    }

    /// The process ids of running servers (for tests and diagnostics).
    pub async fn pids(&self) -> Vec<(String, u32)> {
        let st = self.state.lock().await;
        st.slots
            .iter()
            .filter_map(|(n, s)| match s {
                Slot::Running { client, .. } => client.pid.map(|p| (n.clone(), p)),
                _ => None,
            })
            .collect()
    }
}

/// A diagnostic for the front ends, its column in characters of `content`.
fn item(d: &lsp_types::Diagnostic, content: &str) -> DiagItem {
    use lsp_types::DiagnosticSeverity as S;
    let line = content
        .lines()
        .nth(d.range.start.line as usize)
        .unwrap_or("");
    DiagItem {
        line: d.range.start.line + 1,
        col: text::char_col(line, d.range.start.character) as u32 + 1,
        level: match d.severity {
            None | Some(S::ERROR) => DiagLevel::Error,
            Some(S::WARNING) => DiagLevel::Warning,
            _ => DiagLevel::Info,
        },
        message: d.message.lines().next().unwrap_or("").to_string(),
        source: d.source.clone(),
    }
}

#[cfg(test)]
mod tests;
