//! The only module that decides permission: the path jail and credential
//! gate for the file tools, the exec gate for `bash`, the OS fence, and
//! the mode.
//!
//! | mode      | file tools write | read-only cmd | tests, builds           | other cmd |
//! |-----------|------------------|---------------|-------------------------|-----------|
//! | read-only | no               | run           | in the fence, read-only; no fence: refused | refused |
//! | workspace | inside root      | run           | in the fence; no fence: ask | ask   |
//! | full      | inside root      | run           | run                     | run       |
//!
//! Everything but `full` runs inside the fence where there is one: what
//! runs without asking with the workspace read-only (read-only commands)
//! or `.git` read-only (tests, builds), and without network; what the user
//! approved with the workspace writable and the network unless `-no-net`.
//! The front end only collects an answer; the sandbox that asked applies
//! it, so "always" is remembered here, for this session.

pub mod always;
pub mod env;
pub mod fence;
mod gitcheck;
pub mod host;
mod operands;
mod own_config;
use crate::paths as path;
pub mod policy;
pub mod procs;
pub mod rules;
pub mod shell;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::paths::{PathError, Resolved};
pub use fence::{Access, Fence};

use crate::config::SandboxMode;
use own_config::own_config_reason;
use policy::{Check, Class};

/// How a command that may run is to be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunPlan {
    /// What it may write; `None` runs it outside any fence.
    pub access: Option<Access>,
    /// The network is there.
    pub net: bool,
    /// Run without asking: git's program-running settings are turned off.
    pub git_guard: bool,
}

/// What the sandbox says about a shell command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecDecision {
    Run(RunPlan),
    /// Ask the user; `key` is what "always" would remember.
    Ask {
        reason: String,
        key: String,
    },
    Deny {
        reason: String,
    },
}

/// What the sandbox says about a change to a file the path jail allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditDecision {
    Apply,
    /// Show it and ask; `key` is what "always" would remember.
    Ask {
        key: String,
    },
}

pub struct Sandbox {
    root: PathBuf,
    mode: SandboxMode,
    fence: Fence,
    net: bool,
    /// File changes wait for the user's yes (`approveEdits`, interactive).
    ask_edits: bool,
    always: Mutex<BTreeSet<String>>,
    /// "Always" answers not yet written to the session log.
    unlogged: Mutex<Vec<String>>,
    /// `envPassthrough`: variables approved commands get.
    passthrough: Vec<String>,
    /// Plan mode: read-only until it is left, whatever the mode.
    planning: std::sync::atomic::AtomicBool,
    /// `planGate`: the files the plan being carried out names; a write
    /// to another asks.
    plan_files: Mutex<Option<Vec<String>>>,
}

impl Sandbox {
    /// `root` is canonicalised here; it must exist. No fence, network on.
    pub fn new(root: &Path, mode: SandboxMode) -> std::io::Result<Self> {
        Self::with_fence(root, mode, Fence::Off("not looked for".into()), true)
    }

    pub fn with_fence(
        root: &Path,
        mode: SandboxMode,
        fence: Fence,
        net: bool,
    ) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        host::add_workspace(&root);
        Ok(Self {
            root,
            mode,
            fence,
            net,
            ask_edits: false,
            always: Mutex::new(BTreeSet::new()),
            unlogged: Mutex::new(Vec::new()),
            passthrough: Vec::new(),
            planning: std::sync::atomic::AtomicBool::new(false),
            plan_files: Mutex::new(None),
        })
    }

    /// Variables the secret filter drops that approved commands get
    /// (`envPassthrough`).
    pub fn with_passthrough(mut self, names: Vec<String>) -> Self {
        self.passthrough = names;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Edits wait for approval when the user wants it (`approveEdits`, and
    /// someone is there to answer) in the workspace mode: read-only has no
    /// edits, and full access asks nothing.
    pub fn ask_before_edits(mut self, wanted: bool) -> Self {
        self.ask_edits = wanted && self.mode == SandboxMode::Workspace;
        self
    }

    /// Whether a change to `rel` (workspace-relative) is applied or asked
    /// about first.
    pub fn edit_decision(&self, rel: &str) -> EditDecision {
        let key = format!("file:{rel}");
        // A file the plan being carried out does not name asks, whatever
        // the mode (`planGate`).
        let outside_plan = self
            .plan_files
            .lock()
            .ok()
            .is_some_and(|f| f.as_ref().is_some_and(|f| !f.iter().any(|p| p == rel)));
        if outside_plan && !self.is_always(&key) {
            return EditDecision::Ask { key };
        }
        if !self.ask_edits || self.is_always(&key) {
            EditDecision::Apply
        } else {
            EditDecision::Ask { key }
        }
    }

    /// Whether a shell command only reads (the allowlist): what it did
    /// needs no checkpoint, and a check it makes is not a change.
    pub fn is_read_only_command(command: &str) -> bool {
        policy::is_read_only(command)
    }

    /// The mode commands and writes are judged by: read-only while the
    /// session plans.
    pub fn mode(&self) -> SandboxMode {
        if self.planning() {
            SandboxMode::ReadOnly
        } else {
            self.mode
        }
    }

    /// Plan mode on or off (`/plan`): the sandbox is read-only meanwhile.
    pub fn set_planning(&self, on: bool) {
        self.planning.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// `planGate`: the files the plan being carried out names (None: no
    /// gate).
    pub fn set_plan_files(&self, files: Option<Vec<String>>) {
        if let Ok(mut f) = self.plan_files.lock() {
            *f = files;
        }
    }

    pub fn planning(&self) -> bool {
        self.planning.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `planGate` holds: a plan is being carried out, and only the files
    /// it names may change unasked.
    pub fn plan_gated(&self) -> bool {
        self.plan_files.lock().ok().is_some_and(|f| f.is_some())
    }

    /// The most an agent this session starts (an asked agent, a
    /// sub-task) may do: the session's mode, read-only while a plan is
    /// made or carried out under `planGate` (the child knows neither).
    pub fn child_ceiling(&self, ceiling: SandboxMode) -> SandboxMode {
        if self.planning() || self.plan_gated() {
            SandboxMode::ReadOnly
        } else {
            ceiling.min(self.mode())
        }
    }

    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The mode and the fence in a few words, for the banner, the status
    /// bar and `-json`: `workspace · bwrap`, `read-only · bwrap · no net`.
    pub fn describe(&self) -> String {
        let fence = match self.fence_name() {
            "none" => "no fence",
            name => name,
        };
        let net = if self.net { "" } else { " · no net" };
        format!("{} · {fence}{net}", self.mode.as_str())
    }

    /// The fence commands run in: `bwrap`, or `none` where there is none
    /// or the mode (`full`) runs them outside it.
    pub fn fence_name(&self) -> &'static str {
        match self.fence {
            Fence::Bwrap(_) if self.mode != SandboxMode::Full => "bwrap",
            _ => "none",
        }
    }

    /// `-no-net`: not even an approved command gets the network.
    pub fn no_net(&self) -> bool {
        !self.net
    }

    /// A path the file tools may read.
    pub fn check_read(&self, input: &str) -> Result<Resolved, PathError> {
        let r = path::resolve(&self.root, input)?;
        self.gate(&r, false)?;
        Ok(r)
    }

    /// A path the file tools may write.
    pub fn check_write(&self, input: &str) -> Result<Resolved, PathError> {
        if self.planning() {
            return Err(PathError::Planning);
        }
        if self.mode == SandboxMode::ReadOnly {
            return Err(PathError::ReadOnly);
        }
        let r = path::resolve(&self.root, input)?;
        if r.rel == "." {
            return Err(PathError::Root);
        }
        self.gate(&r, true)?;
        Ok(r)
    }

    fn gate(&self, r: &Resolved, write: bool) -> Result<(), PathError> {
        if write && let Some(why) = path::reserved_reason(&r.rel, true) {
            return Err(PathError::Reserved(why));
        }
        if let Some(why) = path::read_refusal(&self.root, r) {
            return Err(PathError::Reserved(why));
        }
        if write && let Some(why) = path::git_layout_reason(&self.root, &r.rel) {
            return Err(PathError::Reserved(why));
        }
        if let Some(why) = own_config_reason(&r.abs) {
            return Err(PathError::Reserved(why));
        }
        Ok(())
    }

    /// Judges a shell command under the current mode and fence.
    pub fn check_exec(&self, command: &str) -> ExecDecision {
        let verdict = policy::judge(command);
        let class = match verdict.class {
            Class::ReadOnly | Class::ProjectCode => match self.run_checks(&verdict.checks) {
                Ok(()) => verdict.class,
                Err(why) => Class::NotListed(why),
            },
            other => other,
        };
        let fenced = self.fence.is_on();
        // `planGate`: what could write a file the plan does not name asks
        // (or, in auto mode, does not run); the project's own code (the
        // tests) runs with the workspace read-only in the fence.
        if self.plan_gated() && class != Class::ReadOnly && self.mode() != SandboxMode::ReadOnly {
            return match (&class, self.mode()) {
                (Class::ProjectCode, _) if fenced => ExecDecision::Run(RunPlan {
                    access: Some(Access::ReadOnly),
                    net: false,
                    git_guard: false,
                }),
                (_, SandboxMode::Auto) => ExecDecision::Deny {
                    reason: "a plan is being carried out under planGate, this command could write files the plan does not name, and in auto mode nobody is asked, so it does not run".into(),
                },
                _ => self.ask(
                    command,
                    "a plan is being carried out under planGate, and this command could write files the plan does not name".into(),
                ),
            };
        }
        // What runs without asking gets no network in the fence: nothing
        // to send the workspace to, and no abstract socket (X11, D-Bus)
        // to reach the desktop outside it through.
        let run = |access: Access, git_guard: bool| {
            ExecDecision::Run(RunPlan {
                access: fenced.then_some(access),
                net: !fenced && self.net,
                git_guard,
            })
        };
        match (self.mode(), class) {
            (SandboxMode::Full, class) => ExecDecision::Run(RunPlan {
                // Full access runs outside the fence.
                access: None,
                net: self.net,
                git_guard: class == Class::ReadOnly,
            }),
            // In the fence the file is masked, but git would show its
            // committed copy; nobody is asked in auto, so it does not run.
            (SandboxMode::Auto, _) if self.names_credential(command, &verdict.checks) => {
                ExecDecision::Deny {
                    reason: "it names a credential file of the workspace, and in auto mode nobody is asked, so it does not run".into(),
                }
            }
            (_, Class::ReadOnly) => run(Access::Listed, true),
            // Code that runs unasked with the workspace writable could
            // rewrite the user's own config when the workspace holds it
            // (mm run in a home folder, red-team rounds 31 and 33).
            (SandboxMode::Auto, _) if let Some(p) = self.holds_own_config() => {
                ExecDecision::Deny {
                    reason: format!(
                        "the workspace holds {}, your own configuration, and in auto mode nobody is asked, so commands that could write it do not run; start mm in a project folder",
                        p.display()
                    ),
                }
            }
            (SandboxMode::Workspace, Class::ProjectCode)
                if let Some(p) = self.holds_own_config() =>
            {
                self.ask(
                    command,
                    format!(
                        "it runs the project's own code, which could write {}, your own configuration, inside this workspace",
                        p.display()
                    ),
                )
            }
            (SandboxMode::Auto, Class::ProjectCode) if fenced => run(Access::Project, false),
            // Never asked, so never outside the fence: what the user would
            // have said yes to writes as an approved command does in it, and
            // sees what unasked code sees (no credential file, nothing the
            // user let through).
            (SandboxMode::Auto, _) if fenced => match self.unattended_plan() {
                Some(plan) => ExecDecision::Run(plan),
                None => ExecDecision::Deny {
                    reason: "there is no fence (bubblewrap) to run this command in".into(),
                },
            },
            (SandboxMode::Auto, _) => ExecDecision::Deny {
                reason: "the sandbox is auto and there is no fence (bubblewrap) to run this command in".into(),
            },
            (SandboxMode::Workspace, Class::ProjectCode) if fenced => run(Access::Project, false),
            (SandboxMode::ReadOnly, Class::ProjectCode) if fenced => run(Access::ReadOnly, false),
            (SandboxMode::Workspace, Class::ProjectCode) => self.ask(
                command,
                "it runs the project's own code and there is no fence (bubblewrap) on this machine"
                    .into(),
            ),
            (SandboxMode::ReadOnly, Class::ProjectCode) => ExecDecision::Deny {
                reason: "the sandbox is read-only and this command runs the project's own code, which needs a fence (bubblewrap) to run read-only".into(),
            },
            (SandboxMode::ReadOnly, Class::NotListed(reason)) => ExecDecision::Deny {
                reason: format!(
                    "the sandbox is read-only and this command is not on the read-only list ({reason})"
                ),
            },
            (SandboxMode::Workspace, Class::NotListed(reason)) => self.ask(command, reason),
        }
    }

    fn ask(&self, command: &str, reason: String) -> ExecDecision {
        let key = always::key(command);
        // "Always" for a plain tool's verb (`mkdir …`) covers what lies in
        // the workspace: `mkdir /elsewhere` asks again.
        if self.covers(&key) && (!always::is_verb_key(&key) || self.operands_inside(command)) {
            return ExecDecision::Run(self.approved_plan());
        }
        ExecDecision::Ask { reason, key }
    }

    /// Every word of a one-command line that could name a path (an operand,
    /// an option's `=value`) is inside the workspace and not a credential.
    fn operands_inside(&self, command: &str) -> bool {
        let Ok(simples) = shell::parse(command) else {
            return false;
        };
        let git_dir = path::git_dir_of(&self.root);
        simples.iter().all(|s| {
            // After `--` every word is an operand, `-/../x` too.
            let mut ended = false;
            s.words.iter().skip(1).all(|w| {
                let text = match w.text.split_once('=') {
                    _ if ended => w.text.as_str(),
                    _ if w.text == "--" => {
                        ended = true;
                        return true;
                    }
                    Some((opt, v)) if opt.starts_with('-') => v,
                    _ if w.text.starts_with('-') => return true,
                    _ => w.text.as_str(),
                };
                w.literal()
                    && path::resolve(&self.root, text).is_ok_and(|r| {
                        path::credential_reason(&r.rel).is_none()
                            // A git dir under another name (`lib.git/config`
                            // with a token, red-team round 33).
                            && path::git_secret_reason(&r.rel, &r.abs, git_dir.as_deref())
                                .is_none()
                            && path::reserved_reason(&r.rel, true).is_none()
                            && path::hard_link_reason(&r.rel, &r.abs).is_none()
                    })
            })
        })
    }

    /// How a command the user said yes to runs: inside the fence with the
    /// workspace writable (outside it in `full` mode).
    /// A hook (`afterEdit`, `turnEnd`, `beforeCommit`): the user wrote the
    /// command, but it runs the project's code (`make test`) unasked, so
    /// it gets what tests and builds get — the workspace without `.git`,
    /// no network — read-only in a read-only sandbox; `full` as approved.
    pub fn hook_plan(&self) -> Option<RunPlan> {
        let fenced = self.fence.is_on();
        let access = match self.mode() {
            SandboxMode::Full => return Some(self.approved_plan()),
            // Read-only promises nothing is written: without the fence a
            // hook (`make check`) could write anything (red-team round 19).
            SandboxMode::ReadOnly if !fenced => return None,
            SandboxMode::ReadOnly => Access::ReadOnly,
            SandboxMode::Workspace | SandboxMode::Auto => Access::Project,
        };
        Some(RunPlan {
            access: fenced.then_some(access),
            net: !fenced && self.net,
            git_guard: false,
        })
    }

    /// How what nobody is asked about runs in `-auto` (a command, a
    /// command tool): in the fence with the workspace writable, seeing no
    /// credential file and nothing the user let through; None without a
    /// fence (it does not run).
    pub fn unattended_plan(&self) -> Option<RunPlan> {
        self.fence.is_on().then_some(RunPlan {
            access: Some(Access::Unattended),
            net: self.net,
            git_guard: false,
        })
    }

    pub fn approved_plan(&self) -> RunPlan {
        let access = match self.mode() {
            SandboxMode::Full => None,
            // What runs on the config's word (an MCP server, a hook) in a
            // read-only sandbox writes nothing.
            SandboxMode::ReadOnly => Some(Access::ReadOnly),
            SandboxMode::Workspace | SandboxMode::Auto => Some(Access::Workspace),
        };
        RunPlan {
            access: access.filter(|_| self.fence.is_on()),
            net: self.net,
            git_guard: false,
        }
    }

    /// The command that runs `program args` in `cwd` as `plan` says: in
    /// the fence or not, with the scrubbed environment, in a session and
    /// process group of its own.
    #[allow(unsafe_code)] // the SAFETY notes below say why
    pub fn command(
        &self,
        program: &str,
        args: &[&str],
        cwd: &Path,
        plan: RunPlan,
    ) -> tokio::process::Command {
        // A bare name is looked up where the user put programs, never in
        // a workspace folder on PATH (a venv's `bin`, `.`).
        let found = host::program(program);
        let program = found.as_deref().and_then(Path::to_str).unwrap_or(program);
        let mut cmd = match plan.access {
            Some(access) => self
                .fence
                .argv(&self.root, cwd, access, plan.net, program, args)
                .command(),
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                // SAFETY: see `close_on_exec_from`: async-signal-safe.
                unsafe {
                    cmd.pre_exec(|| {
                        procs::close_on_exec_from(3);
                        Ok(())
                    });
                }
                cmd
            }
        };
        cmd.current_dir(cwd);
        env::apply(&mut cmd);
        // A read-only command (run unasked, perhaps without the fence)
        // finds its programs in the same places: `cat` in `.venv/bin`
        // is the model's.
        if plan.git_guard
            && let Ok(path) = std::env::join_paths(host::dirs())
        {
            cmd.env("PATH", path);
        }
        // What the user let through reaches only what the user approved:
        // not read-only commands (git's guard), not code run unasked.
        let approved = !plan.git_guard
            && !matches!(
                plan.access,
                Some(Access::Listed | Access::ReadOnly | Access::Project | Access::Unattended)
            );
        if approved {
            for name in &self.passthrough {
                if let Some(v) = std::env::var_os(name) {
                    cmd.env(name, v);
                }
            }
        }
        // A script may ask an agent (`"$MM_BIN" agent.yaml -ask NAME`):
        // that mm is capped at this session's sandbox mode.
        if let Ok(exe) = std::env::current_exe() {
            cmd.env("MM_BIN", exe);
        }
        cmd.env(crate::config::ASK_CEILING_VAR, self.mode().as_str());
        // An mm it starts is one level further down the asking chain.
        let depth: u32 = std::env::var(crate::config::ASK_DEPTH_VAR)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        cmd.env(crate::config::ASK_DEPTH_VAR, (depth + 1).to_string());
        if plan.git_guard {
            for (k, v) in env::git_guard() {
                cmd.env(k, v);
            }
        }
        if let Some(access) = plan.access {
            cmd.env("TMPDIR", "/tmp");
            if access.unasked() {
                cmd.env("XDG_CACHE_HOME", "/tmp/.cache");
            }
        }
        procs::own_session(&mut cmd);
        cmd
    }

    /// The command that runs `sh -c script` in a scratch copy of the
    /// workspace that mm made outside it (`tools::scratch`): in the fence,
    /// the copy writable as a workspace would be, everything else
    /// read-only, no network, nothing the user let through. None without
    /// a fence: code mm runs unasked runs only inside one.
    pub fn scratch_command(&self, scratch: &Path, script: &str) -> Option<tokio::process::Command> {
        if !self.fence.is_on() {
            return None;
        }
        if scratch.starts_with(&self.root) || self.root.starts_with(scratch) {
            return None;
        }
        let mut cmd = self
            .fence
            .argv_copy(&self.root, scratch, "sh", &["-c", script])
            .command();
        cmd.current_dir(scratch);
        env::apply(&mut cmd);
        cmd.env("TMPDIR", "/tmp");
        procs::own_session(&mut cmd);
        Some(cmd)
    }

    /// True when "always" was answered for exactly this key.
    pub fn is_always(&self, key: &str) -> bool {
        self.always.lock().map(|s| s.contains(key)).unwrap_or(false)
    }

    /// True when an "always" answer covers a command's key (the same
    /// prefix, no option it was not granted with).
    pub fn covers(&self, key: &str) -> bool {
        self.always
            .lock()
            .map(|s| s.iter().any(|g| always::covers(g, key)))
            .unwrap_or(false)
    }

    /// Remembers an "always" answer for the rest of the session.
    pub fn remember(&self, key: &str) {
        if let Ok(mut set) = self.always.lock()
            && set.insert(key.to_string())
            && let Ok(mut u) = self.unlogged.lock()
        {
            u.push(key.to_string());
        }
    }

    /// Puts back the "always" answers a resumed session had given.
    pub fn restore(&self, keys: &[String]) {
        if let Ok(mut set) = self.always.lock() {
            set.extend(keys.iter().cloned());
        }
    }

    /// Forgets every "always" answer (another session is taken up).
    pub fn forget_always(&self) {
        if let Ok(mut set) = self.always.lock() {
            set.clear();
        }
        if let Ok(mut u) = self.unlogged.lock() {
            u.clear();
        }
    }

    /// The "always" answers given since the last call, for the session log.
    pub fn take_unlogged(&self) -> Vec<String> {
        self.unlogged
            .lock()
            .map(|mut u| std::mem::take(&mut *u))
            .unwrap_or_default()
    }

    /// The "always" answers given so far.
    pub fn remembered(&self) -> Vec<String> {
        self.always
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::gitcheck::{git_dir_fingerprint, unsafe_setting};
    use super::own_config::*;
    use super::*;

    /// Red-team round 22: a FIFO or a link to `/dev/zero` among a planted
    /// repository's hooks neither blocks the fingerprint nor reads without
    /// end.
    #[test]
    fn a_git_dir_fingerprint_reads_no_fifo_and_no_endless_file() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join(".git");
        std::fs::create_dir_all(g.join("hooks")).unwrap();
        std::fs::write(g.join("config"), "[core]\n").unwrap();
        nix::unistd::mkfifo(&g.join("hooks/post-commit"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink("/dev/zero", g.join("hooks/pre-push")).unwrap();
        let started = std::time::Instant::now();
        let a = git_dir_fingerprint(&g);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        std::fs::write(g.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        assert_ne!(a, git_dir_fingerprint(&g), "a new hook changes it");
    }

    fn sandbox(mode: SandboxMode) -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let s = Sandbox::new(dir.path(), mode).unwrap();
        (dir, s)
    }

    fn fenced(mode: SandboxMode) -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let fence = Fence::Bwrap(PathBuf::from("/usr/bin/bwrap"));
        let s = Sandbox::with_fence(dir.path(), mode, fence, true).unwrap();
        (dir, s)
    }

    fn runs(d: &ExecDecision) -> bool {
        matches!(d, ExecDecision::Run(_))
    }

    #[test]
    fn a_hard_link_is_outside_and_a_folder_is_no_diff_operand() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join("one.txt"), "x").unwrap();
        std::fs::write(d.path().join("a.txt"), "a").unwrap();
        std::fs::hard_link(d.path().join("one.txt"), d.path().join("two.txt")).unwrap();
        assert!(ws.check_read("one.txt").is_err());
        assert!(ws.check_write("two.txt").is_err());
        assert!(ws.check_read("a.txt").is_ok());
        assert!(asks(&ws.check_exec("cat two.txt")));
        assert!(runs(&ws.check_exec("cat a.txt")));
        assert!(asks(&ws.check_exec("grep -r x .")));
        std::fs::create_dir_all(d.path().join("d1")).unwrap();
        std::fs::create_dir_all(d.path().join("d2")).unwrap();
        assert!(asks(&ws.check_exec("diff d1 d2")));
        assert!(asks(&ws.check_exec("diff a.txt d1")));
        assert!(asks(&ws.check_exec("cmp a.txt d1")));
        assert!(asks(&ws.check_exec("diff a.txt *.txt")));
        std::fs::write(d.path().join("b.txt"), "b").unwrap();
        assert!(runs(&ws.check_exec("diff -u a.txt b.txt")));
    }

    fn asks(d: &ExecDecision) -> bool {
        matches!(d, ExecDecision::Ask { .. })
    }

    #[test]
    fn a_workspace_holding_the_users_config_is_known() {
        // Unasked code writes the workspace: in a home folder, or with
        // `XDG_CONFIG_HOME` inside the project, that is the user's config
        // (red-team rounds 31 and 33).
        let h = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(h.path()).unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        let own = || vec![home.join(".config/mm"), home.join(".local/share/mm")];
        let held = |root: &Path, xdg: Option<PathBuf>| {
            holds_own_config_in(root, Some(home.clone()), xdg, own())
        };
        assert_eq!(held(&home, None), Some(home.join(".config/mm")));
        assert_eq!(held(&proj, None), None);
        assert_eq!(
            held(&proj, Some(proj.join("cfg"))),
            Some(proj.join("cfg/git"))
        );
    }

    #[test]
    fn in_a_home_folder_the_tools_leave_its_private_files_and_the_users_config_alone() {
        // mm run in a home folder (red-team round 31): `.bash_history`,
        // other agents' records and mm's own config were read and written.
        let h = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(h.path()).unwrap();
        let mm = home.join(".config/mm");
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = x\n[include]\n\tpath = ~/.gitconfig.local\n[includeIf \"gitdir:~/w/\"]\n\tpath = dotfiles/git/extra\n",
        )
        .unwrap();
        let reason = |rel: &str| {
            own_config_reason_in(
                &home.join(rel),
                Some(home.clone()),
                None,
                vec![mm.clone(), home.join(".local/share/mm")],
            )
        };
        for rel in [
            ".config/mm/config.yaml",
            ".gitconfig",
            ".config/git/config",
            ".ssh/id_rsa",
            ".codex/auth.json",
            // Records mm believes, the Go agent's config, and what the
            // user's git config includes (red-team round 33).
            ".local/share/mm/trusted-configs.tsv",
            ".local/share/mm/always-answers.tsv",
            ".agent/config.json",
            ".gitconfig.local",
            "dotfiles/git/extra",
        ] {
            assert!(reason(rel).is_some(), "{rel}");
        }
        for rel in ["src/main.rs", ".config/other/x", "notes.txt"] {
            assert!(reason(rel).is_none(), "{rel}");
        }
        // mm's config folder a link to one not made yet (a dotfiles set-up,
        // red-team round 32): a write through the other spelling is caught.
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::os::unix::fs::symlink("../dotfiles/mm", &mm).unwrap();
        assert!(reason("dotfiles/mm/config.yaml").is_some());
    }

    #[test]
    fn the_users_git_config_is_read_as_git_reads_it_includes_and_named_places_too() {
        // Red-team round 34: a header with its key on one line, a comment
        // after the path, a quoted path, a byte-order mark, includes ten
        // deep, and `core.hooksPath`.
        let h = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(h.path()).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "\u{feff}[include] path = ~/a.inc ; a comment\n[includeIf \"gitdir:~/\"]\n\tpath = \"~/b.inc\" # another\n[core]\n\thooksPath = ~/dots/hooks\n\texcludesFile = rel/ignore\n",
        )
        .unwrap();
        // A chain five deep from a.inc, each naming the next by a path
        // relative to itself.
        for i in 0..5 {
            let next = format!("path = chain{}.inc", i + 1);
            let name = if i == 0 {
                "a.inc".to_string()
            } else {
                format!("chain{i}.inc")
            };
            std::fs::write(home.join(name), format!("[include]\n\t{next}\n")).unwrap();
        }
        let mut got = Vec::new();
        git_config_places(&home.join(".gitconfig"), &home, 0, &mut got);
        for want in ["a.inc", "b.inc", "dots/hooks", "chain1.inc", "chain5.inc"] {
            assert!(got.contains(&home.join(want)), "{want}: {got:?}");
        }
        // A relative excludes file is the repository's own, not the user's.
        assert!(!got.iter().any(|p| p.ends_with("rel/ignore")), "{got:?}");
        assert_eq!(config_value(r#" "a b"\"c ; x"#), "a b\"c");
        assert_eq!(config_value(r#""~/a ; b.inc" # x"#), "~/a ; b.inc");
        assert_eq!(config_value(" ~/x.inc ; note"), "~/x.inc");
        // A workspace that holds an included file or the hooks folder
        // holds the user's config.
        let dots = home.join("dots");
        std::fs::create_dir_all(&dots).unwrap();
        assert_eq!(
            holds_own_config_in(&dots, Some(home.clone()), None, Vec::new()),
            Some(home.join("dots/hooks"))
        );
        std::fs::write(
            home.join(".gitconfig"),
            "[include]\n\tpath = ~/dots/git.inc\n",
        )
        .unwrap();
        assert_eq!(
            holds_own_config_in(&dots, Some(home.clone()), None, Vec::new()),
            Some(home.join("dots/git.inc"))
        );
    }

    #[test]
    fn under_plan_gate_commands_that_could_write_ask_and_project_code_runs_read_only() {
        // Red-team round 35: `sed -i` in -auto, and the project's own code,
        // wrote files the plan did not name.
        for mode in [SandboxMode::Workspace, SandboxMode::Auto, SandboxMode::Full] {
            let (_d, ws) = fenced(mode);
            assert!(runs(&ws.check_exec("sed -i s/a/b/ other.py")) || mode != SandboxMode::Full);
            ws.set_plan_files(Some(vec!["calc.py".into()]));
            assert!(ws.plan_gated());
            let sed = ws.check_exec("sed -i s/a/b/ other.py");
            match mode {
                SandboxMode::Auto => assert!(
                    matches!(&sed, ExecDecision::Deny { reason } if reason.contains("planGate")),
                    "{sed:?}"
                ),
                _ => assert!(asks(&sed), "{mode:?}: {sed:?}"),
            }
            match ws.check_exec("python3 -m unittest") {
                ExecDecision::Run(plan) => {
                    assert_eq!(plan.access, Some(Access::ReadOnly), "{mode:?}");
                }
                other => panic!("{mode:?}: {other:?}"),
            }
            assert!(runs(&ws.check_exec("cat calc.py")));
            // Agents the session starts meanwhile only look.
            assert_eq!(ws.child_ceiling(mode), SandboxMode::ReadOnly);
            ws.set_plan_files(None);
            assert_eq!(ws.child_ceiling(mode), mode);
            ws.set_planning(true);
            assert_eq!(ws.child_ceiling(mode), SandboxMode::ReadOnly);
        }
    }

    #[test]
    fn a_git_config_path_with_doubled_slashes_or_from_git_config_global_is_guarded() {
        // Red-team round 35: `~//proj/x` is `$HOME/proj/x` to git, and
        // `GIT_CONFIG_GLOBAL` names the file git reads instead of
        // `~/.gitconfig`.
        let h = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(h.path()).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[include]\n\tpath = ~//proj/gitcfg.inc\n[core]\n\thooksPath = ~//proj/hooks\n",
        )
        .unwrap();
        let mut got = Vec::new();
        git_config_places(&home.join(".gitconfig"), &home, 0, &mut got);
        assert!(got.contains(&home.join("proj/gitcfg.inc")), "{got:?}");
        assert!(got.contains(&home.join("proj/hooks")), "{got:?}");
        let global = home.join("dotfiles/gitconfig");
        let files = git_config_files(Some(&home), None, Some(global.clone()));
        assert_eq!(files, [home.join(".gitconfig"), global]);
        assert_eq!(
            git_config_files(Some(&home), None, Some("rel/cfg".into())),
            [home.join(".gitconfig")]
        );
    }

    #[test]
    fn in_auto_a_command_that_names_a_credential_file_does_not_run() {
        // In the fence `.env` is masked, but git would show its committed
        // copy (red-team round 30).
        let (d, ws) = fenced(SandboxMode::Auto);
        std::fs::write(d.path().join(".env"), "KEY=1").unwrap();
        for c in [
            "git show HEAD:.env",
            "git cat-file -p HEAD:.env",
            "cat .env",
        ] {
            match ws.check_exec(c) {
                ExecDecision::Deny { reason } => assert!(reason.contains("credential"), "{reason}"),
                other => panic!("{c}: {other:?}"),
            }
        }
        // Whatever the command: a shell's script, a pipe, `git archive`,
        // a revision with a colon in braces (red-team round 31).
        for c in [
            "sh -c 'git show HEAD:.env'",
            "git archive HEAD .env | tar -xO",
            "git show 'HEAD^{/x:./a}:.env'",
            "python3 -c \"print(open('.env').read())\"",
        ] {
            assert!(matches!(ws.check_exec(c), ExecDecision::Deny { .. }), "{c}");
        }
        assert!(runs(&ws.check_exec("git show HEAD:a.txt")));
        assert!(runs(&ws.check_exec("make")));
    }

    #[test]
    fn an_operand_with_spaces_around_it_is_not_judged_as_another_file() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("id_rsa"), "KEY").unwrap();
        std::os::unix::fs::symlink(out.path().join("id_rsa"), d.path().join("notes ")).unwrap();
        assert!(!runs(&ws.check_exec("cat 'notes '")));
        assert!(!runs(&ws.check_exec("cat ' notes'")));
        assert!(!runs(&ws.check_exec("python3 ' x.py'")));
        assert!(runs(&ws.check_exec("cat a.txt")));
    }

    #[test]
    fn modes_decide_what_is_not_listed() {
        let (_d, ro) = sandbox(SandboxMode::ReadOnly);
        assert!(runs(&ro.check_exec("ls")));
        assert!(matches!(ro.check_exec("rm x"), ExecDecision::Deny { .. }));
        assert!(ro.check_write("a.txt").is_err());
        let (_d, ws) = sandbox(SandboxMode::Workspace);
        assert!(asks(&ws.check_exec("rm x")));
        assert!(ws.check_write("a.txt").is_ok());
        let (_d, full) = sandbox(SandboxMode::Full);
        assert!(runs(&full.check_exec("rm x")));
        assert!(full.check_write("../a.txt").is_err());
    }

    #[test]
    fn project_code_runs_only_inside_the_fence() {
        let (_d, ws) = sandbox(SandboxMode::Workspace);
        assert!(asks(&ws.check_exec("cargo test")));
        let (_d, ro) = sandbox(SandboxMode::ReadOnly);
        assert!(matches!(ro.check_exec("pytest"), ExecDecision::Deny { .. }));
        let (_d, ws) = fenced(SandboxMode::Workspace);
        assert_eq!(
            ws.check_exec("cargo test"),
            ExecDecision::Run(RunPlan {
                access: Some(Access::Project),
                net: false,
                git_guard: false
            })
        );
        let (_d, ro) = fenced(SandboxMode::ReadOnly);
        assert!(matches!(
            ro.check_exec("pytest"),
            ExecDecision::Run(RunPlan {
                access: Some(Access::ReadOnly),
                ..
            })
        ));
        assert!(matches!(
            ro.check_exec("ls"),
            ExecDecision::Run(RunPlan {
                access: Some(Access::Listed),
                git_guard: true,
                ..
            })
        ));
    }

    #[test]
    fn operands_outside_or_secret_are_not_read_only() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join(".env"), "KEY=1").unwrap();
        std::fs::write(d.path().join("a.txt"), "x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert!(runs(&ws.check_exec("cat a.txt")));
        assert!(runs(&ws.check_exec("cd sub && cat ../a.txt")));
        for cmd in [
            "cat /etc/passwd",
            "cat ../x",
            "cat .env",
            "grep KEY .env",
            "head -5 .e*",
            "ls .mm/sessions",
            "cd sub; cat ../../x",
            "wc -l < /etc/passwd",
            "git -C .. status",
        ] {
            assert!(asks(&ws.check_exec(cmd)), "{cmd}");
        }
    }

    #[test]
    fn git_operands_and_recursive_searches_are_checked_on_disk() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join("a.txt"), "x").unwrap();
        git2::Repository::init(d.path()).unwrap();
        assert!(runs(&ws.check_exec("git diff HEAD~1 -- a.txt")));
        assert!(runs(&ws.check_exec("grep -rn x .")));
        for cmd in [
            "git diff /etc/passwd a.txt",
            "git diff ../x a.txt",
            "git show HEAD:.env",
            "git log -- .env",
            "git diff a:b/../../x a.txt",
        ] {
            assert!(asks(&ws.check_exec(cmd)), "{cmd}");
        }
        std::fs::create_dir(d.path().join("conf")).unwrap();
        std::fs::write(d.path().join("conf/.env"), "KEY=1").unwrap();
        for cmd in [
            "grep -rn KEY .",
            "grep -r KEY",
            "rg KEY",
            "git grep KEY",
            "grep -rn KEY conf",
        ] {
            assert!(asks(&ws.check_exec(cmd)), "{cmd}");
        }
        assert!(runs(&ws.check_exec("grep -n KEY a.txt")));
    }

    #[test]
    fn a_glob_that_expands_to_an_option_is_caught() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join("--output=x"), "").unwrap();
        std::fs::write(d.path().join("b.txt"), "").unwrap();
        assert!(asks(&ws.check_exec("sort *")));
        assert!(runs(&ws.check_exec("sort *.txt")));
    }

    #[test]
    fn a_symlink_out_found_by_a_glob_is_caught() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::create_dir(d.path().join("docs")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("docs/link"))
            .unwrap();
        assert!(asks(&ws.check_exec("cat docs/*")));
    }

    #[test]
    fn a_repository_config_that_runs_programs_makes_git_ask() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        git2::Repository::init(&sub).unwrap();
        assert!(runs(&ws.check_exec("git -C sub status")));
        let cfg = sub.join(".git/config");
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.push_str("[core]\n\tfsmonitor = touch /tmp/mm-pwned\n");
        std::fs::write(&cfg, text).unwrap();
        assert!(asks(&ws.check_exec("git -C sub status")));
        assert!(unsafe_setting("diff.lfs.textconv", "cat"));
        assert!(unsafe_setting("diff.x.y.textconv", "cat"));
        assert!(unsafe_setting("diff.x.y.command", "cat"));
        assert!(unsafe_setting("merge.a.b.driver", "cat"));
        assert!(unsafe_setting("trace2.eventtarget", "/tmp/x"));
        assert!(!unsafe_setting("diff.renames", "true"));
        assert!(unsafe_setting("blame.ignorerevsfile", "/x"));
        assert!(unsafe_setting("core.worktree", "../.."));
        assert!(unsafe_setting("diff.external", "x"));
        assert!(!unsafe_setting("core.fsmonitor", "true"));
        assert!(!unsafe_setting("remote.origin.url", "x"));
        assert!(!unsafe_setting(
            "remote.origin.url",
            "https://github.com/a/b"
        ));
        assert!(unsafe_setting("remote.origin.url", "ext::sh -c touch% /x"));
        assert!(unsafe_setting("remote.origin.promisor", "true"));
        assert!(unsafe_setting("extensions.partialclone", "origin"));
        assert!(unsafe_setting("protocol.ext.allow", "always"));
    }

    #[test]
    fn a_workspace_inside_a_bigger_repository_reads_only_its_own_files_unasked() {
        // mm run in repo/pkg: files of repo/ops are outside (red-team
        // round 30).
        let top = tempfile::tempdir().unwrap();
        let t = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(t.join("pkg")).unwrap();
        std::fs::create_dir_all(t.join("ops")).unwrap();
        std::fs::write(t.join("ops/deploy.sh"), "SECRET\n").unwrap();
        std::fs::write(t.join("pkg/a.txt"), "a\n").unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "x",
            ],
        ] {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(&t)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
        let ws = Sandbox::new(&t.join("pkg"), SandboxMode::Workspace).unwrap();
        for c in [
            "git show HEAD:../ops/deploy.sh",
            "git show HEAD:ops/deploy.sh",
            "git show HEAD:",
            "git log -p -1",
            "git diff HEAD~0",
            "git status -vv",
            "git tag -l '--format=%(raw)'",
        ] {
            assert!(asks(&ws.check_exec(c)), "{c}");
        }
        for c in [
            "git status",
            "git log --oneline",
            "git ls-files",
            "git tag -l",
        ] {
            assert!(runs(&ws.check_exec(c)), "{c}");
        }
    }

    #[test]
    fn a_repository_reading_objects_or_refs_from_outside_asks() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        let outside = tempfile::tempdir().unwrap();
        let o = outside.path();
        let git = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(o, &["init", "-q", "-b", "main"]);
        std::fs::write(o.join("notes.txt"), "SECRET\n").unwrap();
        git(o, &["add", "-A"]);
        git(o, &["commit", "-qm", "x"]);
        git(d.path(), &["init", "-q", "-b", "main"]);
        git(d.path(), &["commit", "-q", "--allow-empty", "-m", "i"]);
        // A `.git` whose common dir is the outside repository's.
        let sub = d.path().join("sub/.git");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            sub.join("commondir"),
            format!("{}\n", o.join(".git").display()),
        )
        .unwrap();
        assert!(asks(&ws.check_exec("cd sub && git log -p --all")));
        // One that borrows its objects.
        let alt = d.path().join("alt");
        std::fs::create_dir_all(&alt).unwrap();
        git(&alt, &["init", "-q", "-b", "main"]);
        std::fs::write(
            alt.join(".git/objects/info/alternates"),
            format!("{}\n", o.join(".git/objects").display()),
        )
        .unwrap();
        assert!(asks(&ws.check_exec("git -C alt log -p")));
        // The workspace's own repository still reads unasked.
        assert!(runs(&ws.check_exec("git log -p")));
    }

    #[test]
    fn always_applies_to_the_prefix_it_was_given_for() {
        let (_d, ws) = sandbox(SandboxMode::Workspace);
        let ExecDecision::Ask { key, .. } = ws.check_exec("cargo test --lib") else {
            panic!("should ask");
        };
        ws.remember(&key);
        assert!(runs(&ws.check_exec("cargo test")));
        assert!(asks(&ws.check_exec("cargo build")));
        assert!(asks(&ws.check_exec("cargo test && rm -rf .")));
        let ExecDecision::Ask { key, .. } = ws.check_exec("rm -f x.o") else {
            panic!("should ask");
        };
        ws.remember(&key);
        assert!(runs(&ws.check_exec("rm -f x.o")));
        assert!(asks(&ws.check_exec("rm -rf dir")));
        let ExecDecision::Ask { key, .. } = ws.check_exec("mkdir -p out") else {
            panic!("should ask");
        };
        ws.remember(&key);
        assert!(runs(&ws.check_exec("mkdir -p out/deeper")));
        assert!(asks(&ws.check_exec("mkdir /tmp/elsewhere")));
        assert!(asks(&ws.check_exec("mkdir ../elsewhere")));
        // A scope covers the options it was granted with, no others.
        assert!(asks(&ws.check_exec("mkdir -m 777 out")));
        assert!(asks(&ws.check_exec("cargo test --release")));
        let ExecDecision::Ask { key, .. } = ws.check_exec("jq -n 1") else {
            panic!("should ask");
        };
        ws.remember(&key);
        assert!(runs(&ws.check_exec("jq -n 1")));
        assert!(asks(&ws.check_exec("jq -n 2")));
        assert!(asks(&ws.check_exec("jq -L/elsewhere -n 1")));
        // `..` after a folder `mkdir -p` makes leads back to a link out.
        std::os::unix::fs::symlink("/tmp", _d.path().join("lnk")).unwrap();
        assert!(asks(&ws.check_exec("mkdir -p newdir/x/../../lnk/pwned")));
    }

    #[test]
    fn credentials_and_git_internals_are_refused_even_through_a_symlink() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join(".env"), "KEY=1").unwrap();
        std::os::unix::fs::symlink(d.path().join(".env"), d.path().join("notes.txt")).unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(".git", d.path().join("gitlink")).unwrap();
        assert!(ws.check_read(".env").is_err());
        assert!(ws.check_read("notes.txt").is_err());
        assert!(ws.check_write("deploy/id_ed25519").is_err());
        assert!(ws.check_write("gitlink/config").is_err());
        assert!(ws.check_write("vendor/lib/.git/config").is_err());
        assert!(ws.check_read("gitlink/config").is_ok());
    }
}
