//! Language servers: started lazily per language when a file of that
//! language is first touched, fed every file the agent writes, asked for
//! definitions and references. Diagnostics reach the model in the tool
//! result of the write that caused them, and the front ends as events.
//!
//! A server that is not installed costs nothing (one notice per language);
//! one that dies is restarted with backoff a few times, then turned off
//! with one notice. Nothing here waits without a time limit.

pub mod client;
mod frames;
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

    /// Some enabled server is installed (the LSP tools are offered).
    pub fn available(&self) -> bool {
        self.programs.values().any(Option::is_some)
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
            return Err(Unavailable::NoServer(lang.to_string()));
        };
        let name = spec.name.clone();
        // A server that died a moment ago may not have closed its pipe
        // yet (or a child of it holds it open): ask the process too.
        let running = match st.slots.get(&name) {
            Some(Slot::Running { client, .. }) => !client.exited(),
            _ => false,
        };
        match st.slots.get(&name) {
            Some(Slot::Running { client, checked }) if running => {
                return Ok((client.clone(), lang, !checked));
            }
            Some(Slot::Running { client, .. }) => {
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
                let n = st.crashes.entry(name.clone()).or_default();
                *n += 1;
                if *n >= MAX_CRASHES {
                    st.slots.insert(name.clone(), Slot::Off);
                    self.notice(
                        Level::Warning,
                        format!("{name} stopped {MAX_CRASHES} times ({why}); language features for {lang} are off for this session"),
                    );
                    return Err(Unavailable::Off(name));
                }
                let wait = Duration::from_secs(if *n == 1 { 0 } else { 2 });
                self.notice(
                    Level::Warning,
                    format!("{name} stopped ({why}); restarting it"),
                );
                st.slots.insert(
                    name.clone(),
                    Slot::Waiting {
                        retry_at: Instant::now() + wait,
                    },
                );
            }
            Some(Slot::Off) => return Err(Unavailable::Off(name)),
            _ => {}
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

    /// After a write: the server's errors in the file, as a note for the
    /// tool result, and an `EditChecked` event for the front ends. None
    /// when no server handles the file.
    pub async fn check_write(
        &self,
        call_id: &str,
        path: &Path,
        content: &str,
        cancel: &CancellationToken,
    ) -> Option<Check> {
        tokio::select! {
            c = self.check_write_inner(call_id, path, content) => c,
            _ = cancel.cancelled() => Some(Check {
                text: "(no diagnostics: cancelled)".into(),
                errors: 0,
                new_errors: None,
                baseline: None,
                now: Vec::new(),
            }),
        }
    }

    async fn check_write_inner(&self, call_id: &str, path: &Path, content: &str) -> Option<Check> {
        let no = |text: String| {
            Some(Check {
                text,
                errors: 0,
                new_errors: None,
                baseline: None,
                now: Vec::new(),
            })
        };
        let _one = self.checking.lock().await;
        let (client, lang, fresh) = match self.server_for(path).await {
            Ok(v) => v,
            Err(Unavailable::NoLanguage | Unavailable::NoServer(_) | Unavailable::Off(_)) => {
                return None;
            }
            Err(e) => return no(format!("(no diagnostics: {e})")),
        };
        let since = self.store.get(path).generation;
        let baseline = if client.is_open(path).await {
            self.real.lock().ok().and_then(|r| r.get(path).cloned())
        } else {
            None
        };
        let version = match client.sync(path, lang, content, true).await {
            Ok(v) => v,
            Err(e) => return no(format!("(no diagnostics: {e})")),
        };
        let wait = if fresh { FIRST_CHECK_WAIT } else { CHECK_WAIT };
        let got = self
            .store
            .settle(path, since, version, QUIET, Instant::now() + wait)
            .await;
        self.mark_checked(&client.name).await;
        let rel = text::rel(&self.root, path);
        let Some(now) = got else {
            return no(format!(
                "({} sent no diagnostics for {rel} within {}s)",
                client.name,
                wait.as_secs()
            ));
        };
        let (note, errors, new) = text::error_report(
            &client.name,
            &rel,
            content,
            &now.items,
            baseline.as_deref(),
            8,
        );
        self.bus.publish(AgentEvent::EditChecked {
            call_id: call_id.to_string(),
            path: rel,
            errors: errors as u32,
            new_errors: new.map(|n| n as u32),
            preview: false,
        });
        let messages = |items: &[lsp_types::Diagnostic]| -> Vec<String> {
            items
                .iter()
                .filter(|d| store::is_error(d))
                .map(|d| d.message.clone())
                .collect()
        };
        Some(Check {
            text: note,
            errors,
            new_errors: new,
            baseline: baseline.as_deref().map(messages),
            now: messages(&now.items),
        })
    }

    /// Before a change to a file: the files that use it (`paths`), opened
    /// in their server so it reports on them, with what it says about
    /// them now. Waits for a first report on a file it had to open.
    pub async fn watch_dependents(&self, paths: &[PathBuf]) -> Dependents {
        let mut items = Vec::new();
        for path in paths.iter().take(MAX_DEPENDENTS) {
            let Ok((client, lang, _)) = self.server_for(path).await else {
                continue;
            };
            let Ok(content) = crate::paths::read_checked_text(path) else {
                continue;
            };
            if !client.is_open(path).await {
                let since = self.store.get(path).generation;
                if client.ensure(path, lang, &content).await.is_err() {
                    continue;
                }
                let _ = self
                    .store
                    .settle(path, since, 0, QUIET, Instant::now() + DEPENDENT_WAIT)
                    .await;
            }
            let baseline = self.real.lock().ok().and_then(|r| r.get(path).cloned());
            items.push(Dependent {
                path: path.clone(),
                generation: self.store.get(path).generation,
                baseline,
            });
        }
        Dependents { items }
    }

    /// After the change: what the server now says of each file that uses
    /// it (those it said something new about), errors it did not report
    /// before counted as new.
    pub async fn dependents_after(&self, watched: Dependents) -> Vec<(String, Check)> {
        let waits = watched.items.into_iter().map(|d| async move {
            let now = self
                .store
                .settle(
                    &d.path,
                    d.generation,
                    0,
                    QUIET,
                    Instant::now() + DEPENDENT_WAIT,
                )
                .await?;
            let client = self.server_for(&d.path).await.ok()?.0;
            let content = crate::paths::read_checked_text(&d.path).ok()?;
            let rel = text::rel(&self.root, &d.path);
            let (note, errors, new) = text::error_report(
                &client.name,
                &rel,
                &content,
                &now.items,
                d.baseline.as_deref(),
                6,
            );
            let messages = |items: &[lsp_types::Diagnostic]| -> Vec<String> {
                items
                    .iter()
                    .filter(|x| store::is_error(x))
                    .map(|x| x.message.clone())
                    .collect()
            };
            Some((
                rel,
                Check {
                    text: note,
                    errors,
                    new_errors: new,
                    baseline: d.baseline.as_deref().map(messages),
                    now: messages(&now.items),
                },
            ))
        });
        futures::future::join_all(waits)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Before an approval: what the proposed text would do to the file's
    /// errors, as a preview `EditChecked`. The server is left with the
    /// current text again; its reports on the proposal never reach the
    /// front ends' counts. `answered` ends it early (the user decided).
    pub async fn preview(
        &self,
        call_id: &str,
        path: &Path,
        current: &str,
        proposed: &str,
        answered: &CancellationToken,
    ) {
        let _one = self.checking.lock().await;
        // Answered already, or the file changed: nothing to preview.
        if answered.is_cancelled()
            || crate::paths::read_checked_text(path).ok().as_deref() != Some(current)
        {
            return;
        }
        let Ok((client, lang, fresh)) = self.server_for(path).await else {
            return;
        };
        let wait = if fresh { FIRST_CHECK_WAIT } else { CHECK_WAIT };
        let settle = |since: u64, version: i32| async move {
            tokio::select! {
                got = self.store.settle(path, since, version, QUIET, Instant::now() + wait) => got,
                _ = answered.cancelled() => None,
            }
        };
        if !client.is_open(path).await {
            let since = self.store.get(path).generation;
            let Ok(v) = client.sync(path, lang, current, false).await else {
                return;
            };
            if settle(since, v).await.is_none() {
                return;
            }
        }
        self.mark_checked(&client.name).await;
        let baseline = self.real.lock().ok().and_then(|r| r.get(path).cloned());
        let since = self.store.get(path).generation;
        let v = client.next_version(path).await;
        if let Ok(mut m) = self.muted.lock() {
            m.insert((path.to_path_buf(), v));
        }
        if client.sync(path, lang, proposed, false).await.is_err() {
            return;
        }
        let got = settle(since, v).await;
        // Back to the text on disk (what a later check compares with is
        // kept apart from the proposal's reports, in `real`).
        let _ = client.sync(path, lang, current, false).await;
        let (Some(now), Some(baseline)) = (got, baseline) else {
            return;
        };
        let rel = text::rel(&self.root, path);
        let (_, errors, new) =
            text::error_report(&client.name, &rel, proposed, &now.items, Some(&baseline), 8);
        self.bus.publish(AgentEvent::EditChecked {
            call_id: call_id.to_string(),
            path: rel,
            errors: errors as u32,
            new_errors: new.map(|n| n as u32),
            preview: true,
        });
    }

    /// The position the model means: `line`:`col` (1-based) when both are
    /// given, else `symbol` (on `line` if given).
    async fn position(
        &self,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<(Arc<Client>, TextDocumentPositionParams), String> {
        let content = crate::paths::read_checked_text(path)
            .map_err(|e| format!("cannot read {}: {e}", text::rel(&self.root, path)))?;
        let pos = match (symbol, line, col) {
            (_, Some(l), Some(c)) => text::position(&content, l, c)
                .ok_or_else(|| format!("line {l} is past the end of the file"))?,
            (Some(s), l, _) => text::find_symbol(&content, s, l).ok_or_else(|| match l {
                Some(l) => format!("`{s}` is not on line {l}"),
                None if !s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') => format!(
                    "`{s}` is not a name in the code: give `symbol` as one identifier that occurs in the file (a function, class or variable name), not an error message or a sentence. To fix an error, change the code with edit_file"
                ),
                None => format!("`{s}` does not occur in the file"),
            })?,
            _ => return Err("give `symbol`, or `line` and `col`".into()),
        };
        // Not while a preview holds proposed text; and the server gets the
        // text on disk if what it has differs (a shell command changed it).
        let _one = self.checking.lock().await;
        let (client, lang, _) = self.server_for(path).await.map_err(|e| e.to_string())?;
        client
            .ensure(path, lang, &content)
            .await
            .map_err(|e| e.to_string())?;
        let uri = client::uri(path).ok_or("not an absolute path")?;
        Ok((
            client,
            TextDocumentPositionParams {
                text_document: TextDocumentIdentifier { uri },
                position: pos,
            },
        ))
    }

    /// Where the symbol at the place is defined, or every use of it.
    pub async fn locations(
        &self,
        kind: NavKind,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<Vec<Location>, String> {
        let (client, pos) = self.position(path, symbol, line, col).await?;
        match kind {
            NavKind::Definition => client.definition(pos, REQUEST_TIMEOUT).await,
            NavKind::References => client.references(pos, REQUEST_TIMEOUT).await,
        }
        .map_err(|e| e.to_string())
    }

    pub async fn hover(
        &self,
        path: &Path,
        symbol: Option<&str>,
        line: Option<usize>,
        col: Option<usize>,
    ) -> Result<String, String> {
        let (client, pos) = self.position(path, symbol, line, col).await?;
        let h = client
            .hover(pos, REQUEST_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        Ok(h.map(|h| hover_text(&h.contents)).unwrap_or_default())
    }

    /// Symbols matching `query` from every running server (starting the
    /// one for `hint`'s language when none runs yet).
    pub async fn workspace_symbols(
        &self,
        query: &str,
        hint: Option<&Path>,
    ) -> Result<Vec<(String, lsp_types::SymbolKind, Location)>, String> {
        if let Some(h) = hint {
            let _ = self.server_for(h).await;
        }
        let clients: Vec<Arc<Client>> = {
            let st = self.state.lock().await;
            st.slots
                .values()
                .filter_map(|s| match s {
                    Slot::Running { client, .. } if client.alive() => Some(client.clone()),
                    _ => None,
                })
                .collect()
        };
        if clients.is_empty() {
            return Err(
                "no language server is running yet: name a file with `path` to start one".into(),
            );
        }
        let mut all = Vec::new();
        let mut errors = Vec::new();
        for c in clients {
            match c.workspace_symbols(query, REQUEST_TIMEOUT).await {
                Ok(v) => all.extend(v),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if all.is_empty() && !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(all)
    }

    /// Locations as front-end items.
    pub fn loc_items(&self, locs: &[Location]) -> Vec<LocItem> {
        locs.iter()
            .filter_map(|l| text::location_line(&self.root, l))
            .map(|(path, line, col, text)| LocItem {
                path,
                line,
                col,
                text,
            })
            .collect()
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

fn hover_text(c: &lsp_types::HoverContents) -> String {
    use lsp_types::{HoverContents, MarkedString};
    let one = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => l.value.clone(),
    };
    match c {
        HoverContents::Scalar(m) => one(m),
        HoverContents::Array(v) => v.iter().map(one).collect::<Vec<_>>().join("\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}

#[cfg(test)]
mod tests;
