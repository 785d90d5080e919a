//! The OS fence: commands and language servers run inside bubblewrap
//! (`bwrap`, Debian package `bubblewrap`). Inside it the whole file system
//! is read-only except the workspace (read-only too for read-only
//! commands and in `read-only` mode) and, for an approved command, the
//! build caches;
//! `/tmp` is private; credential paths are masked; the workspace's
//! `.git/hooks`, `.git/config` and `.mm/` stay read-only, so code run in
//! the fence cannot plant a hook that runs later outside it; the process
//! gets its own pid namespace and dies with mm; `-no-net` cuts the network.
//! Without network, a seccomp filter also refuses sockets but IPv4, IPv6
//! and netlink (any socket file the fence can see, a database's or the
//! workspace's, would reach a host service), datagram socket pairs,
//! io_uring (whose requests pass by the filter) and the kernel keyrings.
//!
//! Measured here (2 cores, bwrap 0.8, `cargo bench --bench fence`,
//! 2026-12-01): a command started through bwrap takes 4.6–6.8 ms more
//! than `/bin/sh` alone (1.1 ms), the most without network (the filter);
//! the budget is 15 ms.

use std::ffi::OsString;
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

/// What a fenced process may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A command from the read-only list, each of its operands checked by
    /// the gate: nothing but its private /tmp, and no walk of the
    /// workspace first.
    Listed,
    /// Code that writes nothing but its private /tmp (a syntax check, a
    /// test in a read-only sandbox).
    ReadOnly,
    /// Code nobody was asked about (tests, builds): the workspace, but
    /// nothing of `.git` or `.mm`, and no cache.
    Project,
    /// A command the user said yes to: the workspace, `.git` too (a commit
    /// works) but its hooks, config, info and submodules' config and hooks,
    /// and the caches.
    Workspace,
    /// A command nobody was asked about in `auto` mode: writes the
    /// workspace but nothing of `.git` (a commit is the user's), sees what
    /// unasked code sees (no credential file of the workspace), writes no
    /// cache.
    Unattended,
}

impl Access {
    /// Nobody said yes to what runs: the workspace's credential files and
    /// files with other names are hidden from it, and its cache is thrown
    /// away.
    pub fn unasked(self) -> bool {
        !matches!(self, Access::Workspace)
    }
}

/// The fence found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fence {
    Bwrap(PathBuf),
    /// No fence: why, for the banner and the README's promise.
    Off(String),
}

/// Credential paths under HOME that fenced code never sees.
const MASKED: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".config/hub",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".azure",
    ".config/gcloud",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    ".config/mm",
    ".local/share/mm/shadow",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".Xauthority",
    ".ICEauthority",
    // Coding agents', model hubs' and cloud tools' tokens.
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".config/github-copilot",
    ".local/share/opencode/auth.json",
    ".local/share/crush",
    ".local/share/uv/credentials",
    ".gemini",
    ".aider.conf.yml",
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    ".ollama/id_ed25519",
    ".config/gh-copilot",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/doctl",
    ".config/hcloud",
    ".config/op",
    ".config/git/credentials",
    ".gem/credentials",
    ".config/heroku",
    ".fly",
    ".wrangler",
    ".config/.wrangler",
    ".config/netlify",
    ".local/share/com.vercel.cli",
    ".terraformrc",
    ".config/glab-cli",
    ".config/containers/auth.json",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".config/composer/auth.json",
    ".composer/auth.json",
    ".bundle/config",
    ".nuget/NuGet/NuGet.Config",
    ".config/NuGet/NuGet.Config",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".yarnrc.yml",
    ".yarnrc",
    ".config/pnpm/rc",
    ".config/sops",
    ".databrickscfg",
    ".kaggle",
    ".config/configstore",
    ".config/ngrok",
    ".ngrok2",
    ".pulumi/credentials.json",
    ".sentryclirc",
    ".config/io.datasette.llm/keys.json",
    ".config/stripe",
    ".circleci/cli.yml",
    ".snowflake",
    ".snowsql",
    ".oci",
    ".dbt/profiles.yml",
    ".wakatime.cfg",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".node_repl_history",
    ".local/share/fish/fish_history",
    ".claude/projects",
    ".claude/history.jsonl",
    ".codex/sessions",
    ".codex/history.jsonl",
    ".local/share/opencode/storage",
    ".aider.input.history",
    ".aider.chat.history.md",
    ".env",
    ".config/solana",
    ".minikube",
    ".ethereum",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".config/Slack",
    ".thunderbird",
    ".config/Bitwarden CLI",
    ".config/pypoetry/auth.toml",
    ".sbt/.credentials",
    ".ivy2/.credentials",
    ".lein/credentials.clj.gpg",
    ".lein/profiles.clj",
    ".config/helm/repositories.yaml",
    ".config/openstack",
    ".config/argocd",
    ".config/nix/nix.conf",
    ".config/cachix",
    ".supabase",
    ".railway",
    ".bluemix",
    ".config/scw",
    ".config/tea",
    ".config/jira",
    ".continue",
    ".cursor/mcp.json",
    ".codeium",
    ".config/aichat",
    ".config/shell_gpt",
    ".config/goose",
    ".config/zed",
    ".config/Code/User/globalStorage",
    ".rediscli_history",
    ".sqlite_history",
    ".dbshell",
    ".mongosh",
    ".irb_history",
    ".local/share/atuin",
    ".zsh_sessions",
    ".lesshst",
    ".viminfo",
];

/// Build caches under HOME a fenced build may write.
const CACHES: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".cache",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".local/share/pnpm",
    ".m2",
    ".gradle",
    "go/pkg/mod",
    ".bun/install/cache",
    ".nuget/packages",
];

fn bwrap_path(f: &Fence) -> PathBuf {
    match f {
        Fence::Bwrap(b) => b.clone(),
        Fence::Off(_) => PathBuf::new(),
    }
}

/// What a fence verdict holds for: this boot, this bwrap binary (device,
/// inode, size, time) and this workspace. None when one cannot be read.
fn verdict_key(bwrap: &Path, root: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let m = std::fs::metadata(bwrap).ok()?;
    Some(format!(
        "{} {}:{}:{}:{}.{} {}",
        boot.trim(),
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        root.display()
    ))
}

/// Adds `key` to the record of fences that started (the last 64 kept).
/// A record that cannot be written only means the next start probes.
fn remember_verdict(record: &Path, key: &str) {
    let old = std::fs::read_to_string(record).unwrap_or_default();
    let mut lines: Vec<&str> = old.lines().filter(|l| *l != key).collect();
    lines.push(key);
    let keep = &lines[lines.len().saturating_sub(64)..];
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = record.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, keep.join("\n") + "\n").is_ok() {
        let _ = std::fs::rename(&tmp, record);
    }
}

impl Fence {
    /// Finds bwrap and checks that it can start a process here (it cannot
    /// in some containers without user namespaces).
    pub async fn detect() -> Fence {
        Self::detect_in(Path::new("/")).await
    }

    /// Like `detect`, with the very mounts a command in `root` gets (a
    /// mask or a bind this machine refuses shows here, not on every
    /// command later).
    pub async fn detect_in(root: &Path) -> Fence {
        if root != Path::new("/") {
            super::host::add_workspace(root);
        }
        let Some(bwrap) = super::host::program("bwrap") else {
            return Fence::Off(
                "bubblewrap (bwrap) is not installed; apt-get install bubblewrap".into(),
            );
        };
        let record = crate::config::data_dir().map(|d| d.join("fence-ok"));
        Self::probe(bwrap, root, record.as_deref(), true).await
    }

    /// The probe again in a fresh, empty folder: every mount and
    /// namespace a command gets, none of the workspace's content. What
    /// fails here fails on this machine.
    async fn probe_clean(bwrap: PathBuf) -> Fence {
        match tempfile::tempdir() {
            Ok(dir) => match std::fs::canonicalize(dir.path()) {
                Ok(clean) => Box::pin(Self::probe(bwrap, &clean, None, false)).await,
                Err(_) => Box::pin(Self::probe(bwrap, Path::new("/"), None, false)).await,
            },
            Err(_) => Box::pin(Self::probe(bwrap, Path::new("/"), None, false)).await,
        }
    }

    /// Starts `/bin/true` in the fence `bwrap` makes for `root`, unless
    /// `record` says this very bwrap did so for `root` since the machine
    /// started: the probe is ~4 ms of CPU and a process start, paid once a
    /// boot instead of at every start. A verdict taken from the record
    /// can only be wrong towards "on" (bwrap broke since), and then each
    /// command fails to start instead of running unfenced.
    async fn probe(bwrap: PathBuf, root: &Path, record: Option<&Path>, retry: bool) -> Fence {
        let key = verdict_key(&bwrap, root);
        if let (Some(record), Some(key)) = (record, &key)
            && std::fs::read_to_string(record).is_ok_and(|t| t.lines().any(|l| l == key))
        {
            return Fence::Bwrap(bwrap);
        }
        let fence_path = bwrap.clone();
        let fence = Fence::Bwrap(bwrap);
        let launch = if root == Path::new("/") {
            Launch {
                program: match &fence {
                    Fence::Bwrap(b) => b.clone(),
                    Fence::Off(_) => PathBuf::new(),
                },
                args: [
                    "--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    "--unshare-pid",
                    "--die-with-parent",
                    "--new-session",
                    "--",
                    "/bin/true",
                ]
                .iter()
                .map(OsString::from)
                .collect(),
                filter: None,
                refused: false,
            }
        } else {
            let full = fence.argv(root, root, Access::Workspace, false, "/bin/true", &[]);
            // A workspace mm refuses to run unasked code in (masks bwrap
            // cannot take, too big to look through) is refused command by
            // command (fail closed); it must not make the fence look
            // absent, which would let approved commands run outside it.
            if full.refused && retry {
                return Self::probe_clean(bwrap_path(&fence)).await;
            }
            full
        };
        let probe = launch
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output();
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), probe).await;
        // The workspace's own mounts failed (a path too long once bwrap
        // puts /newroot in front, thousands of binds too slow): that may
        // be the workspace, not the machine. The same fence in an empty
        // folder decides, and commands there fail one by one (closed)
        // instead of running outside a fence taken for absent.
        let failed = !matches!(&outcome, Ok(Ok(out)) if out.status.success());
        if failed && retry && root != Path::new("/") {
            return Self::probe_clean(fence_path).await;
        }
        match outcome {
            Ok(Ok(out)) if out.status.success() => {
                if let (Some(record), Some(key)) = (record, &key) {
                    remember_verdict(record, key);
                }
                fence
            }
            Ok(Ok(out)) => Fence::Off(format!(
                "bwrap cannot start a sandbox here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Ok(Err(e)) => Fence::Off(format!("bwrap did not start: {e}")),
            Err(_) => Fence::Off("bwrap did not answer within 5 s".into()),
        }
    }

    pub fn is_on(&self) -> bool {
        matches!(self, Fence::Bwrap(_))
    }

    /// One word for the banner, the status bar and `-json`.
    pub fn name(&self) -> &'static str {
        match self {
            Fence::Bwrap(_) => "bwrap",
            Fence::Off(_) => "none",
        }
    }

    /// What runs `program args` in `cwd` inside the fence (or as it is,
    /// without one).
    pub fn argv(
        &self,
        root: &Path,
        cwd: &Path,
        access: Access,
        net: bool,
        program: &str,
        args: &[&str],
    ) -> Launch {
        self.argv_from(root, root, cwd, access, net, program, args)
    }

    /// What runs `program args` in a copy of the workspace, as code nobody
    /// approved, without network: the copy is mounted where the workspace
    /// is, and the fence is the one the workspace's own code gets (every
    /// mask and redacted git setting worked out from the workspace, the
    /// repository it lies in and the home), over the copy's files. The
    /// folders a copy does not hold (`COPY_LINKED`) are the workspace's,
    /// read-only.
    pub fn argv_copy(&self, root: &Path, copy: &Path, program: &str, args: &[&str]) -> Launch {
        self.argv_from(root, copy, root, Access::Project, false, program, args)
    }

    #[allow(clippy::too_many_arguments)]
    fn argv_from(
        &self,
        root: &Path,
        source: &Path,
        cwd: &Path,
        access: Access,
        net: bool,
        program: &str,
        args: &[&str],
    ) -> Launch {
        let Fence::Bwrap(bwrap) = self else {
            return Launch {
                program: PathBuf::from(program),
                args: args.iter().map(OsString::from).collect(),
                filter: None,
                refused: false,
            };
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut a = Args::default();
        a.pair("--ro-bind", Path::new("/"));
        a.push("--dev");
        a.push("/dev");
        a.push("--proc");
        a.push("/proc");
        // Kernel settings stay the host's, read-only: root without
        // capabilities still passes the permission check on /proc/sys.
        a.pair("--ro-bind", Path::new("/proc/sys"));
        a.push("--tmpfs");
        a.push("/tmp");
        a.push("--tmpfs");
        a.push("/var/tmp");
        // Code nobody approved sees of each home folder what builds
        // need (toolchains, package stores, git's settings redacted)
        // in a throw-away tmpfs: no documents, no keys, no other
        // program's settings or history under a name no list knows.
        let homes = user_homes(home.as_deref());
        let view = if access.unasked() {
            home_views(&mut a, &homes, root)
        } else {
            HomeViews::default()
        };
        let (found, above, mut too_big) = look_through(root, access, &homes);
        match access {
            Access::Workspace | Access::Project | Access::Unattended => {
                workspace_mounts(&mut a, root, source, access, home.as_deref(), &found);
            }
            Access::ReadOnly | Access::Listed => a.pair("--ro-bind", root),
        }
        // mm's records (session logs, traces, exports, its logs) are
        // read by nothing it runs; the workspace's credential files and
        // files with other names (hard links, whose content may be a
        // file outside) by nothing nobody approved.
        let mut hidden: Vec<&PathBuf> = found.private.iter().collect();
        if access.unasked() {
            hidden.extend(found.secrets.iter().chain(&found.linked));
            if let Some((_, f)) = &above {
                hidden.extend(f.private.iter().chain(&f.secrets).chain(&f.linked));
            }
            let mut configs = redacted_git_configs(root, &found.git_dirs);
            if let Some((top, f)) = &above {
                configs.extend(redacted_git_configs(top, &f.git_dirs));
            }
            for (config, copy) in configs {
                if !view.visible(&config, root) {
                    continue;
                }
                a.push("--ro-bind");
                a.push(copy);
                a.push(config);
            }
        }
        if let Some(why) = hide(&mut a, hidden, root)
            && access.unasked()
        {
            too_big = too_big.or(Some(why));
        }
        mask_credentials(&mut a, &homes, root, net);
        isolated(a, bwrap, cwd, net, too_big, program, args)
    }
}

/// Of each hidden home, what is mounted again in its tmpfs, and what the
/// view masks.
#[derive(Default)]
struct HomeViews {
    shown: Vec<(PathBuf, Vec<PathBuf>)>,
    masks: Vec<PathBuf>,
}

impl HomeViews {
    /// What code in the fence could read anyway: a path under a hidden
    /// home only where the home view mounts it again. A redacted copy is
    /// never mounted anywhere else (git settings can name any file: that
    /// must not make it appear).
    fn visible(&self, p: &Path, root: &Path) -> bool {
        !self.masks.iter().any(|m| p.starts_with(m))
            && (p.starts_with(root)
                || self
                    .shown
                    .iter()
                    .all(|(h, m)| !p.starts_with(h) || m.iter().any(|x| p.starts_with(x))))
    }
}

/// Each home, once, where it really is (a second spelling's tmpfs would
/// cover the first one's view), hidden under a tmpfs with its view
/// mounted again.
fn home_views(a: &mut Args, homes: &[PathBuf], root: &Path) -> HomeViews {
    let path_var = std::env::var_os("PATH");
    let mut views = HomeViews::default();
    let real = |h: &&PathBuf| std::fs::canonicalize(h).ok().as_ref() == Some(*h);
    for h in homes.iter().filter(real).filter(|h| hides_home(h, root)) {
        a.push("--tmpfs");
        a.push(h);
        let mut mounts = Vec::new();
        for seen in home_view(h, root, path_var.as_deref()) {
            a.push("--ro-bind");
            a.push(&seen.from);
            a.push(&seen.to);
            // A mask is not a view: nothing goes over it.
            if seen.from == Path::new("/dev/null") {
                views.masks.push(seen.to);
            } else {
                mounts.push(seen.to);
            }
        }
        views.shown.push((h.clone(), mounts));
    }
    views
}

/// What the workspace holds that needs a mount of its own, and the same
/// of the work tree it lies in; why unasked code cannot run yet, when a
/// walk did not see everything.
fn look_through(
    root: &Path,
    access: Access,
    homes: &[PathBuf],
) -> (Found, Option<(PathBuf, Found)>, Option<String>) {
    let mut too_big = None;
    // Read-only commands were checked operand by operand: they get the
    // root's `.mm` records hidden, without a walk.
    let found = match access {
        Access::Listed => Found {
            private: private_records(&root.join(".mm")),
            complete: true,
            ..Found::default()
        },
        _ => scan(root),
    };
    if !found.complete && access.unasked() {
        too_big = Some(format!(
            "mm read {MAX_SCANNED} files and folders of the workspace and has not seen them all: it cannot yet hide every credential file in it from code nobody approved. Running a command again goes on from there; approving it runs it now"
        ));
    }
    // The work tree the workspace lies in (a folder of a bigger
    // repository) is readable to unasked code: looked through like the
    // workspace, its credential files, files with other names and mm's
    // records hidden, its git settings redacted. Not a home that is
    // itself a work tree (dotfiles in git): the view never shows it
    // whole, and a walk of all of it before every command would cost
    // more than it hides.
    let above = match enclosing_work_tree(root) {
        Some(top) if access.unasked() && !homes.contains(&top) => {
            let f = scan(&top);
            if !f.complete {
                too_big = too_big.or(Some(format!(
                    "mm read {MAX_SCANNED} files and folders of {} (the repository the workspace is in) and has not seen them all: it cannot yet hide every credential file in it from code nobody approved. Running a command again goes on from there; approving it runs it now",
                    top.display()
                )));
            }
            Some((top, f))
        }
        _ => None,
    };
    (found, above, too_big)
}

/// The workspace, writable, for code that may write it: what of it stays
/// read-only, and the caches an approved command writes.
fn workspace_mounts(
    a: &mut Args,
    root: &Path,
    source: &Path,
    access: Access,
    home: Option<&Path>,
    found: &Found,
) {
    a.push("--bind");
    a.push(source);
    a.push(root);
    if source != root {
        // Real folders only: a link would bring in whatever it names.
        for name in COPY_LINKED {
            let dir = root.join(name);
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                a.pair("--ro-bind", &dir);
            }
        }
    }
    // The caches persist and what lies in them runs later outside the
    // fence (a pre-commit hook in ~/.cache, a Gradle init script, a
    // crate's source, an npx package): only a command the user approved
    // writes them. Unasked code has no network to fill them anyway; its
    // `XDG_CACHE_HOME` is in its private /tmp.
    if let Some(home) = home.filter(|_| !access.unasked()) {
        for c in cache_dirs(home) {
            if !root.starts_with(&c) {
                a.pair("--bind", &c);
            }
        }
    }
    // Code nobody was asked about changes nothing of `.git`
    // (`commondir`, `config.worktree` and the like, which git honours
    // later, can be made new; a mount cannot keep a file from being
    // made): `auto` too.
    for (p, writable) in protected(root, access == Access::Workspace) {
        a.pair(if writable { "--bind" } else { "--ro-bind" }, &p);
    }
    // A `.mm` below the root is mm's when it runs there.
    for mm in found.mm.iter().filter(|m| m.parent() != Some(root)) {
        a.pair("--ro-bind", mm);
    }
    // What is written through another name lands outside.
    if !access.unasked() {
        for p in &found.linked {
            a.pair("--ro-bind", p);
        }
    }
}

/// Masks each hidden path (a folder at a time where there are many: bwrap
/// takes 9,000 arguments in all, and a workspace may hold 30,000 `.env`
/// files or hard links); why unasked code cannot run, when there are more
/// than the fence can hide.
fn hide(a: &mut Args, hidden: Vec<&PathBuf>, root: &Path) -> Option<String> {
    let (hidden, whole) = fewer_masks(hidden, root);
    let too_many = (hidden.len() + whole.len() > MAX_MASKS).then(|| {
        format!(
            "the workspace holds {} files code nobody approved must not read (credential files, files with other names), more than the fence can hide; approving the command runs it",
            hidden.len()
        )
    });
    for d in &whole {
        a.push("--tmpfs");
        a.push(d);
        a.push("--remount-ro");
        a.push(d);
    }
    for p in hidden {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => {
                a.push("--tmpfs");
                a.push(p);
            }
            Ok(m) if m.is_file() => {
                a.push("--ro-bind");
                a.push("/dev/null");
                a.push(p);
            }
            _ => {}
        }
    }
    too_many
}

/// Masks the credentials under each home and CARGO_HOME, the host's
/// password hashes and SSH host keys, and its service sockets (all of
/// /run without network).
fn mask_credentials(a: &mut Args, homes: &[PathBuf], root: &Path, net: bool) {
    // Host paths through a symlink (/var/run is /run) are masked where
    // they lead, once. Without network, no host service either: the
    // sockets under /run (a database, systemd, an agent) connect through
    // a read-only mount, so /run is emptied.
    let run: &[&str] = if net { &[] } else { &["/run"] };
    let mut host: Vec<PathBuf> = HOST_SOCKETS
        .iter()
        .chain(run)
        .chain(
            std::env::var_os("XAUTHORITY")
                .as_ref()
                .and_then(|x| x.to_str())
                .iter(),
        )
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    host.sort();
    host.dedup();
    if !net {
        host.retain(|p| p == Path::new("/run") || !p.starts_with("/run"));
    }
    // Credentials under HOME and under the home the password database
    // gives (HOME may be set elsewhere), and the host's password hashes
    // and SSH host keys (readable by root without any capability).
    let system = HOST_SECRETS.iter().map(PathBuf::from).chain(
        std::fs::read_dir("/etc/ssh")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
            }),
    );
    // CARGO_HOME may lie outside HOME; its registry tokens too.
    let cargo_home: Vec<PathBuf> = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .into_iter()
        .flat_map(|c| {
            let risky_config = [c.join("config.toml"), c.join("config")]
                .into_iter()
                .filter(|f| may_hold_credential(f));
            [c.join("credentials"), c.join("credentials.toml")]
                .into_iter()
                .chain(risky_config)
                .collect::<Vec<_>>()
        })
        .collect();
    let masked = homes
        .iter()
        .flat_map(|h| MASKED.iter().map(move |m| h.join(m)))
        .chain(cargo_home)
        .chain(system)
        .chain(host);
    for p in masked {
        if root.starts_with(&p) {
            continue;
        }
        // A masked name reached through a link (a dotfiles set-up,
        // `~/.docker` a link, a CARGO_HOME elsewhere) is masked where it
        // really is: the other spelling is not there.
        let p = match std::fs::canonicalize(&p) {
            Ok(t) if t == p => p,
            Ok(t) if !root.starts_with(&t) && !system_folder(&t) => t,
            _ => continue,
        };
        match std::fs::symlink_metadata(&p) {
            Ok(meta) if meta.is_dir() => {
                a.push("--tmpfs");
                a.push(p);
            }
            Ok(meta) if !meta.file_type().is_symlink() => {
                a.push("--ro-bind");
                a.push("/dev/null");
                a.push(p);
            }
            _ => {}
        }
    }
}

/// The namespaces, the capabilities dropped, the socket filter without
/// network, and the program; or, when the fence cannot be what it says
/// (`refused`), a shell that says why and runs nothing.
fn isolated(
    mut a: Args,
    bwrap: &Path,
    cwd: &Path,
    net: bool,
    mut refused: Option<String>,
    program: &str,
    args: &[&str],
) -> Launch {
    // No capabilities inside, whoever runs mm: bwrap started by root
    // keeps them all otherwise, and CAP_SYS_ADMIN remounts `/` writable.
    // Its own hostname, so `sethostname` stays inside.
    for flag in [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
    ] {
        a.push(flag);
    }
    let mut filter = None;
    if !net {
        a.push("--unshare-net");
        match socket_filter() {
            Ok(fd) => {
                a.push("--seccomp");
                a.push(FILTER_FD.to_string());
                filter = Some(fd);
            }
            Err(e) => {
                refused = refused.or(Some(format!(
                    "the fence's socket filter could not be made: {e}"
                )));
            }
        }
    }
    let bytes: usize = a.0.iter().map(|x| x.len() + 1).sum();
    if a.0.len() > MAX_BWRAP_ARGS || bytes > MAX_ARG_BYTES {
        refused = refused.or(Some(format!(
            "the fence would need {} options ({bytes} bytes) for this workspace (nested .mm folders, files to hide), more than bwrap or the kernel take ({MAX_BWRAP_ARGS} options, {MAX_ARG_BYTES} bytes); nothing ran",
            a.0.len()
        )));
        a.0.truncate(0);
        a.push("--ro-bind");
        a.push("/");
        a.push("/");
    }
    a.push("--chdir");
    a.push(cwd);
    a.push("--");
    let is_refused = refused.is_some();
    if let Some(why) = refused {
        // Fail closed: without its filter the fence would let code reach
        // host services, and what was not looked at is not hidden, so
        // nothing runs.
        for w in ["/bin/sh", "-c", "echo \"mm: $1\" >&2; exit 126", "sh"] {
            a.push(w);
        }
        a.push(why);
    } else {
        a.push(program);
        for arg in args {
            a.push(arg);
        }
    }
    Launch {
        program: bwrap.to_path_buf(),
        args: a.0,
        filter,
        refused: is_refused,
    }
}

/// A program and its arguments, and the seccomp filter bwrap reads from an
/// inherited descriptor (named in the arguments).
#[derive(Debug)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    filter: Option<OwnedFd>,
    /// mm put a refusal (with its reason) in place of the command.
    refused: bool,
}

/// The descriptor bwrap reads the filter from, in the child.
const FILTER_FD: i32 = 3;

impl Launch {
    /// The command. The child gets the filter's descriptor as
    /// `FILTER_FD`, and no other descriptor mm has besides its standard
    /// three: one inherited from mm's parent (a socket, a pipe) would
    /// reach past the fence.
    #[allow(unsafe_code)] // the SAFETY notes below say why
    pub fn command(self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args);
        let filter = self.filter;
        // SAFETY: dup2, fcntl and close_range are async-signal-safe; between
        // fork and exec they only touch the child's descriptor table. The
        // descriptor the closure owns lives as long as `cmd`.
        unsafe {
            cmd.pre_exec(move || {
                let keep = match &filter {
                    Some(fd) if fd.as_raw_fd() == FILTER_FD => {
                        nix::fcntl::fcntl(
                            fd,
                            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
                        )
                        .map_err(std::io::Error::from)?;
                        FILTER_FD + 1
                    }
                    Some(fd) => {
                        // dup2 leaves the copy open across exec.
                        if nix::libc::dup2(fd.as_raw_fd(), FILTER_FD) < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        FILTER_FD + 1
                    }
                    None => 3,
                };
                super::procs::close_on_exec_from(keep);
                Ok(())
            });
        }
        cmd
    }
}

/// The compiled filter for a fence without network: a socket of another
/// family than IPv4, IPv6 and netlink, a datagram socket pair, io_uring
/// and the kernel keyrings fail with EPERM. Any other
/// architecture than the build's kills the process (a 32-bit program's
/// `socketcall` cannot be looked into).
fn socket_filter_program() -> Result<&'static [u8], String> {
    static PROGRAM: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            use nix::libc;
            use seccompiler::{
                BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
                SeccompFilter, SeccompRule, TargetArch,
            };
            let e = |e: seccompiler::BackendError| e.to_string();
            let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(e)?;
            let cond = |arg, op, value: u64| {
                SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(e)
            };
            // socket(): only the families the private network namespace
            // holds (IPv4, IPv6 on its loopback; netlink for the
            // interface list). Unix sockets reach host services through any
            // socket file; vsock reaches the hypervisor.
            let family = SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
                cond(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
                cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
            ])
            .map_err(e)?;
            // socketpair(): a datagram pair can still send to any datagram
            // socket file (raw is datagram for Unix sockets); stream and
            // seqpacket pairs cannot be pointed elsewhere.
            let datagram = |kind: i32| {
                SeccompRule::new(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?])
                    .map_err(e)
            };
            let pairs = vec![datagram(libc::SOCK_DGRAM)?, datagram(libc::SOCK_RAW)?];
            // x86_64 also takes the x32 numbers (bit 30 set) under its own
            // audit arch.
            let aliases: &[i64] = if cfg!(target_arch = "x86_64") {
                &[0, 0x4000_0000]
            } else {
                &[0]
            };
            let mut rules = std::collections::BTreeMap::new();
            for base in aliases {
                rules.insert(base | libc::SYS_socket, vec![family.clone()]);
                rules.insert(base | libc::SYS_socketpair, pairs.clone());
                // io_uring's requests pass by this filter; the kernel
                // keyrings are the host's (and request_key runs a host
                // program, outside every namespace).
                for nr in [
                    libc::SYS_io_uring_setup,
                    libc::SYS_io_uring_enter,
                    libc::SYS_io_uring_register,
                    libc::SYS_add_key,
                    libc::SYS_request_key,
                    libc::SYS_keyctl,
                ] {
                    rules.insert(base | nr, vec![]);
                }
            }
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(libc::EPERM as u32),
                arch,
            )
            .map_err(e)?;
            let program: BpfProgram = filter.try_into().map_err(e)?;
            let mut bytes = Vec::new();
            for i in program {
                bytes.extend_from_slice(&i.code.to_ne_bytes());
                bytes.push(i.jt);
                bytes.push(i.jf);
                bytes.extend_from_slice(&i.k.to_ne_bytes());
            }
            Ok(bytes)
        })
        .as_ref()
        .map(std::vec::Vec::as_slice)
        .map_err(Clone::clone)
}

/// The filter in a fresh close-on-exec memory file, read from its start.
fn socket_filter() -> Result<OwnedFd, String> {
    let program = socket_filter_program()?;
    let fd =
        nix::sys::memfd::memfd_create(c"mm-fence-filter", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
            .map_err(|e| e.to_string())?;
    let mut file = std::fs::File::from(fd);
    file.write_all(program)
        .and_then(|_| file.rewind())
        .map_err(|e| e.to_string())?;
    Ok(OwnedFd::from(file))
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, s: impl Into<OsString>) {
        self.0.push(s.into());
    }

    /// `--bind P P`: the same path outside and inside.
    fn pair(&mut self, flag: &str, p: &Path) {
        self.push(flag);
        self.push(p);
        self.push(p);
    }
}

/// HOME and the home the password database gives (HOME may be set
/// elsewhere), each once, each where it really is (`/w/../h` is `/h`).
fn user_homes(home: Option<&Path>) -> Vec<PathBuf> {
    // Resolved once: a link on the way to HOME that lies in the workspace
    // must not move it between commands.
    static HOMES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    HOMES.get_or_init(|| homes_now(home)).clone()
}

fn homes_now(home: Option<&Path>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = home.iter().map(|h| h.to_path_buf()).collect();
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::getuid())
        && !homes.contains(&user.dir)
    {
        homes.push(user.dir);
    }
    let mut real: Vec<PathBuf> = homes
        .iter()
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.clone()))
        .collect();
    real.dedup();
    homes.extend(real);
    homes.sort();
    homes.dedup();
    homes
}

/// Whether a home folder is replaced by a tmpfs for unasked code: not `/`
/// or a folder holding the system, and not one inside the workspace (the
/// workspace is mounted after it and would bring it back whole).
fn hides_home(home: &Path, root: &Path) -> bool {
    home.is_absolute()
        && home.components().count() > 1
        && !["/usr", "/etc", "/bin", "/lib", "/opt", "/var", "/nix"]
            .iter()
            .any(|sys| Path::new(sys).starts_with(home) || home == Path::new(sys))
        && (home == root || !home.starts_with(root))
        && home.is_dir()
}

/// Toolchains and package stores under HOME that unasked code reads.
/// Credential files inside them (`.cargo/credentials.toml`) stay masked.
const HOME_SEEN: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".rbenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".asdf",
    ".sdkman",
    ".juliaup",
    ".ghcup",
    ".elan",
    ".opam",
    ".dotnet",
    ".nix-profile",
    "go",
    ".local/bin",
    ".local/lib",
    ".local/share/mm/lsp",
    ".local/share/pnpm",
    ".local/share/uv",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
];

/// git's own settings under HOME, bound redacted when they hold a token.
const HOME_GIT: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// A read-only mount: `from` on the host seen at `to` in the fence.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    from: PathBuf,
    to: PathBuf,
}

/// What of `home` is mounted, read-only, over the tmpfs that hides it:
/// [`HOME_SEEN`], each PATH entry under it (with its prefix when it is a
/// `bin` folder: `~/.nvm/versions/node/v20/bin` brings `…/v20`), the
/// prefixes the programs in those folders link to (`~/.local/bin/black` →
/// `~/.local/share/pipx/venvs/black`), and git's settings. Nested paths
/// are left to the folder that holds them. The repository the workspace
/// lies in is seen too where it is under HOME: its git dir (a linked
/// worktree's common dir) and, when the workspace is a folder of a larger
/// work tree, that work tree, so git run in the fence sees the repository
/// it would see outside.
fn home_view(home: &Path, root: &Path, path_var: Option<&std::ffi::OsStr>) -> Vec<Seen> {
    let local = home.join(".local");
    let prefix_of = |dir: &Path| -> PathBuf {
        match dir.parent() {
            Some(p) if dir.ends_with("bin") && p != home && p != local && p.starts_with(home) => {
                p.to_path_buf()
            }
            _ => dir.to_path_buf(),
        }
    };
    let mut dirs: Vec<PathBuf> = HOME_SEEN.iter().map(|d| home.join(d)).collect();
    let entries: Vec<PathBuf> = path_var
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_default();
    // Where each entry really is (`~/x/..` is HOME), and none the
    // workspace holds: code run there writes it, links included.
    let bins: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.is_absolute())
        .chain([&home.join(".local/bin")])
        .filter_map(|e| resolve_outside(e, root))
        .filter(|e| e.starts_with(home) && e.as_path() != home)
        .collect();
    for bin in &bins {
        dirs.push(prefix_of(bin));
        // Programs linked from elsewhere under HOME (pipx, uv tools,
        // poetry): the prefix of what each link leads to, a few hundred
        // links at most.
        let Ok(read) = std::fs::read_dir(bin) else {
            continue;
        };
        for e in read.flatten().take(500) {
            if !e.file_type().is_ok_and(|t| t.is_symlink()) {
                continue;
            }
            let Some(target) = resolve_outside(&e.path(), root) else {
                continue;
            };
            if let Some(dir) = target.parent()
                && target.starts_with(home)
                && dir != home
            {
                dirs.push(prefix_of(dir));
            }
        }
    }
    dirs.extend(enclosing_repository(root));
    dirs.retain(|d| d.starts_with(home) && d.as_path() != home && d != &local);
    // A folder reached through the workspace (a link to it, a link in it)
    // is the workspace's to change: not mounted.
    dirs.retain(|d| resolve_outside(d, root).is_some());
    dirs.sort();
    dirs.dedup();
    let outer: Vec<PathBuf> = dirs
        .iter()
        .filter(|d| !dirs.iter().any(|o| o != *d && d.starts_with(o)))
        .filter(|d| std::fs::symlink_metadata(d).is_ok())
        .cloned()
        .collect();
    let mut seen: Vec<Seen> = outer
        .into_iter()
        .map(|d| Seen {
            from: d.clone(),
            to: d,
        })
        .collect();
    // Tokens kept inside what is seen: a node's global npmrc (per nvm
    // version too) and a cargo config's registry token; uv's credential
    // store is masked by name.
    // Where node and python installers keep a global config: `*` is one
    // folder level (a version).
    const INNER: &[&[&str]] = &[
        &["etc", "npmrc"],
        &["pip.conf"],
        &["versions", "node", "*", "etc", "npmrc"],
        &["installs", "nodejs", "*", "etc", "npmrc"],
        &["tools", "image", "node", "*", "etc", "npmrc"],
        &["versions", "*", "etc", "npmrc"],
        &["versions", "*", "pip.conf"],
        &["installs", "python", "*", "pip.conf"],
        // npm's own built-in config, in each node prefix.
        &["lib", "node_modules", "npm", "npmrc"],
        &[
            "versions",
            "node",
            "*",
            "lib",
            "node_modules",
            "npm",
            "npmrc",
        ],
        &[
            "installs",
            "nodejs",
            "*",
            "lib",
            "node_modules",
            "npm",
            "npmrc",
        ],
        &[
            "tools",
            "image",
            "node",
            "*",
            "lib",
            "node_modules",
            "npm",
            "npmrc",
        ],
        &["versions", "*", "lib", "node_modules", "npm", "npmrc"],
        // fnm's versions; npm's config in a `lib` folder seen itself
        // (`~/.local/lib` of a prefix `~/.local`).
        &["node-versions", "*", "installation", "etc", "npmrc"],
        &[
            "node-versions",
            "*",
            "installation",
            "lib",
            "node_modules",
            "npm",
            "npmrc",
        ],
        &["node_modules", "npm", "npmrc"],
    ];
    let mut inner: Vec<PathBuf> = Vec::new();
    // Each folder the view shows, the ones inside another too (a node
    // prefix a PATH entry names inside a version manager's folder).
    for d in dirs.iter().chain(seen.iter().map(|s| &s.to)) {
        for pattern in INNER {
            let mut at = vec![d.clone()];
            for part in *pattern {
                at = match *part {
                    "*" => at
                        .iter()
                        .filter_map(|d| std::fs::read_dir(d).ok())
                        .flat_map(|rd| rd.flatten().take(100).map(|e| e.path()))
                        .collect(),
                    name => at.iter().map(|d| d.join(name)).collect(),
                };
            }
            inner.extend(at);
        }
    }
    inner.sort();
    inner.dedup();
    for f in inner.into_iter().filter(|f| f.is_file()) {
        seen.push(Seen {
            from: PathBuf::from("/dev/null"),
            to: f,
        });
    }
    for c in [".cargo/config.toml", ".cargo/config"].map(|c| home.join(c)) {
        if may_hold_credential(&c) {
            seen.push(Seen {
                from: PathBuf::from("/dev/null"),
                to: c,
            });
        }
    }
    // A mask inside a folder that is a link to elsewhere (`~/.cargo` a
    // link out of HOME): where it really is, outside the hidden home,
    // the file shows through `/` unless masked there too.
    let elsewhere: Vec<Seen> = seen
        .iter()
        .filter(|s| s.from == Path::new("/dev/null"))
        .filter_map(|s| std::fs::canonicalize(&s.to).ok().filter(|t| *t != s.to))
        .filter(|t| !t.starts_with(home) && !root.starts_with(t) && !system_folder(t))
        .map(|to| Seen {
            from: PathBuf::from("/dev/null"),
            to,
        })
        .collect();
    seen.extend(elsewhere);
    for g in HOME_GIT.iter().map(|g| home.join(g)) {
        if !g.is_file() {
            continue;
        }
        let from = if crate::paths::git_text_holds_secret(&g) {
            crate::paths::read_git_text(&g)
                .and_then(|t| redacted_copy(&crate::paths::redact_git_config(&t)))
                .unwrap_or_else(|| PathBuf::from("/dev/null"))
        } else {
            g.clone()
        };
        seen.push(Seen { from, to: g });
    }
    seen
}

/// A cargo config that may hold a credential (a token, a password in a
/// URL, an `[env]` key, a string over several lines, an escaped name):
/// unasked code sees it empty.
fn may_hold_credential(config: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(config) else {
        return false;
    };
    let lower = text.to_ascii_lowercase();
    [
        "token",
        "pass",
        "secret",
        "key",
        "auth",
        "credential",
        "@",
        "[env",
        "'''",
        "\"\"\"",
        "\\",
        "%",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Where `p` leads, followed a component and a link at a time; None when
/// a step (a folder on the way, a link or its target) lies in the
/// workspace — code run there can change where it leads — or does not
/// exist, or the chain is longer than 40 links.
fn resolve_outside(p: &Path, root: &Path) -> Option<PathBuf> {
    use std::collections::VecDeque;
    use std::path::Component;
    let parts = |p: &Path| -> VecDeque<std::ffi::OsString> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect()
    };
    let mut out = PathBuf::from("/");
    let mut rest = parts(p);
    let mut links = 0;
    while let Some(c) = rest.pop_front() {
        if c == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&c);
        if next.starts_with(root) {
            return None;
        }
        let meta = std::fs::symlink_metadata(&next).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > 40 {
                return None;
            }
            let target = std::fs::read_link(&next).ok()?;
            if target.is_absolute() {
                out = PathBuf::from("/");
            }
            let mut ahead = parts(&target);
            ahead.extend(rest);
            rest = ahead;
        } else {
            out = next;
        }
    }
    (!out.starts_with(root)).then_some(out)
}

/// Where git finds the repository of `root` outside it: the top of a work
/// tree above it (code in the workspace cannot plant one there), and a
/// linked worktree's git dir and common dir — only when that git dir
/// names this workspace back (its `gitdir` file, which git writes and
/// code in the workspace cannot) and lies in the common dir's
/// `worktrees/`. A `.git` link or file the workspace's code could have
/// made, pointing anywhere else, brings in nothing.
fn enclosing_repository(root: &Path) -> Vec<PathBuf> {
    let Some((top, git)) = root
        .ancestors()
        .find_map(|d| crate::paths::git_dir_of(d).map(|g| (d.to_path_buf(), g)))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if top != root {
        out.push(top.clone());
    }
    if git.starts_with(&top) {
        return out;
    }
    // git writes the worktree's `.git` file's own path; a `.git` link
    // (made by code in the workspace) is not a worktree's.
    let file = top.join(".git");
    let back = std::fs::read_to_string(git.join("gitdir")).ok();
    let is_file = std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file());
    let common = std::fs::read_to_string(git.join("commondir"))
        .ok()
        .and_then(|c| std::fs::canonicalize(git.join(c.trim())).ok())
        .filter(|c| crate::paths::is_git_dir(c) && git.parent() == Some(&c.join("worktrees")));
    let Some(common) = common else {
        return out;
    };
    if is_file && back.as_deref().map(str::trim).map(Path::new) == Some(file.as_path()) {
        out.push(git);
        if !common.starts_with(&top) {
            out.push(common);
        }
    }
    out
}

/// bwrap's own limit is 9,000 arguments in all; room is left for the
/// command.
const MAX_BWRAP_ARGS: usize = 8_500;

/// Most bytes of options: the kernel takes 2 MiB of arguments and
/// environment together (ARG_MAX).
const MAX_ARG_BYTES: usize = 1 << 20;

/// Most paths the fence hides one by one (three of bwrap's 9,000
/// arguments each).
const MAX_MASKS: usize = 2_000;

/// `hidden` as it is when there are few; when there are more than
/// `MAX_MASKS`, the folders (below `root`) that hold more than one of them
/// are hidden whole instead, empty and read-only: (paths, folders).
fn fewer_masks<'a>(hidden: Vec<&'a PathBuf>, root: &Path) -> (Vec<&'a PathBuf>, Vec<PathBuf>) {
    if hidden.len() <= MAX_MASKS {
        return (hidden, Vec::new());
    }
    let mut per: std::collections::HashMap<&Path, usize> = std::collections::HashMap::new();
    for p in &hidden {
        if let Some(d) = p.parent() {
            *per.entry(d).or_default() += 1;
        }
    }
    let mut whole: Vec<PathBuf> = per
        .into_iter()
        .filter(|(d, n)| *n > 1 && d.starts_with(root) && *d != root)
        .map(|(d, _)| d.to_path_buf())
        .collect();
    whole.sort();
    // One inside another: the outer one hides both.
    let outer: Vec<PathBuf> = whole
        .iter()
        .filter(|d| !whole.iter().any(|o| o != *d && d.starts_with(o)))
        .cloned()
        .collect();
    let rest = hidden
        .into_iter()
        .filter(|p| !outer.iter().any(|d| p.starts_with(d)))
        .collect();
    (rest, outer)
}

/// `/` or one of the system's own top folders: never masked whole, even
/// when a masked name (`~/.aws`) is a link to it.
fn system_folder(p: &Path) -> bool {
    const TOP: &[&str] = &[
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media",
        "/mnt", "/nix", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp",
        "/usr", "/var",
    ];
    TOP.iter().any(|t| p == Path::new(t))
}

/// The top of the git work tree `root` lies in, when that is above it.
fn enclosing_work_tree(root: &Path) -> Option<PathBuf> {
    let top = root
        .ancestors()
        .find(|d| crate::paths::git_dir_of(d).is_some())?;
    (top != root).then(|| top.to_path_buf())
}

/// Caches that exist (CARGO_HOME and GOMODCACHE where they are set).
fn cache_dirs(home: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = CACHES.iter().map(|c| home.join(c)).collect();
    if let Some(cargo) = std::env::var_os("CARGO_HOME").map(PathBuf::from) {
        v.push(cargo.join("registry"));
        v.push(cargo.join("git"));
    }
    if let Some(go) = std::env::var_os("GOMODCACHE") {
        v.push(PathBuf::from(go));
    }
    v.retain(|p| p.is_dir());
    v.dedup();
    v
}

/// Parts of the workspace mounted again over the writable workspace, in
/// order, with whether each stays writable. `.git` becomes a mount point
/// of its own, so it cannot be renamed and rebuilt with a planted config
/// (the red team did that); for unasked code it is read-only whole, for a
/// command the user approved only what runs code later is: hooks, config,
/// info, and each submodule's config and hooks. A `.git` file (a worktree,
/// a submodule's checkout) is read-only, so it cannot be pointed at a
/// planted repository; a `.git` link is followed to the folder it names. For unasked code the submodule folders the index
/// records and `.gitmodules` are read-only too (a `.git` made in one is a
/// repository git looks into later). `.mm/` is read-only. Missing hooks and
/// submodule folders are made empty first, so they cannot be created in
/// the fence.
fn protected(root: &Path, approved: bool) -> Vec<(PathBuf, bool)> {
    let real = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink());
    let dot_git = root.join(".git");
    let mut out = Vec::new();
    if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
        out.push((dot_git.clone(), false));
    }
    if let Some(git) = crate::paths::git_dir_of(root).filter(|g| g.starts_with(root) && real(g)) {
        if !git.join("hooks").exists() {
            let _ = std::fs::create_dir(git.join("hooks"));
        }
        if approved {
            out.push((git.clone(), true));
            // What else git reads settings or a repository's place from,
            // where it is there (a new one is caught after the command).
            let mut inner = vec![
                git.join("hooks"),
                git.join("config"),
                git.join("info"),
                git.join("commondir"),
                git.join("config.worktree"),
                git.join("objects/info/alternates"),
            ];
            if let Ok(rd) = std::fs::read_dir(git.join("modules")) {
                for m in rd.flatten() {
                    inner.push(m.path().join("config"));
                    inner.push(m.path().join("hooks"));
                }
            }
            out.extend(inner.into_iter().filter(|p| real(p)).map(|p| (p, false)));
        } else {
            out.push((git, false));
        }
    }
    if !approved {
        for sub in crate::git::submodule_paths(root) {
            // Only where the path really lies in the workspace: a folder on
            // the way may have become a link out of it.
            let Ok(r) = crate::paths::resolve(root, &sub) else {
                continue;
            };
            if !r.abs.exists() {
                let _ = std::fs::create_dir_all(&r.abs);
            }
            if real(&r.abs) && r.abs.starts_with(root) {
                out.push((r.abs, false));
            }
        }
        let modules = root.join(".gitmodules");
        if real(&modules) {
            out.push((modules, false));
        }
    }
    let mm = root.join(".mm");
    if real(&mm) {
        out.push((mm, false));
    }
    // The Go agent's tools and commands, which mm loads as its own.
    for dir in [".agent/tools", ".agent/commands"] {
        let d = root.join(dir);
        if real(&d) {
            out.push((d, false));
        }
    }
    out
}

/// The repository's text files that hold a credential (its configs, its
/// submodules' and worktrees', an included file, `FETCH_HEAD`; see
/// `paths::repo_config_files`), wherever its git dir lies (a linked
/// worktree's common dir is outside the workspace), each with a copy that
/// has it replaced by `***`, written once into mm's data folder: code
/// nobody approved sees the copy (a remote URL with a token in it is a
/// push away from the user's account).
fn redacted_git_configs(root: &Path, nested: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let mut files: Vec<PathBuf> = crate::paths::git_dir_of(root)
        .iter()
        .chain(nested.iter().take(100))
        .flat_map(|g| crate::paths::repo_config_files(g))
        .collect();
    files.sort();
    files.dedup();
    let mut out = Vec::new();
    for c in files {
        // Where it really is: what decides whether it shows in the fence.
        let Ok(c) = std::fs::canonicalize(&c) else {
            continue;
        };
        if crate::paths::is_kernel_file(&c) || !crate::paths::git_text_holds_secret(&c) {
            continue;
        }
        // Too big or not text: an empty file, git reads no settings
        // rather than the token (and nothing that big is copied: no
        // settings file of git's is a mebibyte).
        let copy = crate::paths::read_git_text(&c)
            .filter(|t| t.len() <= COPY_MAX)
            .and_then(|t| redacted_copy(&crate::paths::redact_git_config(&t)))
            .unwrap_or_else(|| PathBuf::from("/dev/null"));
        out.push((c, copy));
    }
    out.sort();
    out.dedup();
    out
}

/// The biggest git file a redacted copy is made of.
const COPY_MAX: usize = 1 << 20;

/// The most the copies' folder holds before the oldest go.
const COPIES_MAX: u64 = 64 << 20;

/// Removes the least recently written copies until the folder holds at
/// most `COPIES_MAX` (a workspace can make new ones at every command).
fn prune_copies(dir: &Path) {
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, p) in files {
        if total <= COPIES_MAX {
            break;
        }
        if std::fs::remove_file(&p).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

/// `text` in a file of mm's data folder named by its hash.
fn redacted_copy(text: &str) -> Option<PathBuf> {
    let dir = crate::config::data_dir()?.join("redacted");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let path = dir.join(format!("{h:016x}.gitconfig"));
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Some(path);
    }
    std::fs::create_dir_all(&dir).ok()?;
    prune_copies(&dir);
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).ok()?;
    tmp.write_all(text.as_bytes()).ok()?;
    tmp.persist(&path).ok()?;
    Some(path)
}

/// Ignored folders a check in a copy of the workspace reads but does not
/// write: the workspace's own are mounted into the copy, read-only.
pub const COPY_LINKED: &[&str] = &["node_modules", ".venv", "venv"];

/// What in the workspace needs a mount of its own in the fence.
#[derive(Default)]
struct Found {
    /// Credential files (`.env*`, keys).
    secrets: Vec<PathBuf>,
    /// Files with more than one name.
    linked: Vec<PathBuf>,
    /// `.mm` folders, the root's too.
    mm: Vec<PathBuf>,
    /// mm's records in them.
    private: Vec<PathBuf>,
    /// Git dirs below the root (a nested repository's, under any name).
    git_dirs: Vec<PathBuf>,
    /// Every entry was looked at.
    complete: bool,
}

/// Entries read afresh in one walk before mm gives up on a workspace: code
/// nobody approved does not run in one it could not look through. What a
/// walk read is kept, so the next walk goes on from there.
const MAX_SCANNED: usize = 1_000_000;

/// mm's records in the `.mm` folder `mm`.
fn private_records(mm: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(mm)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|i| crate::paths::is_private_mm_entry(&i.file_name().to_string_lossy()))
        .map(|i| i.path())
        .collect()
}

/// What one folder held when it was last read, and the stamp that says
/// whether it still does: a name added, removed or renamed in a folder
/// changes its mtime and ctime (ctime no program can set back), and a
/// folder put in another's place has another inode.
struct DirScan {
    stamp: (i64, i64, i64, i64, u64),
    subdirs: Vec<PathBuf>,
    secrets: Vec<PathBuf>,
    linked: Vec<PathBuf>,
    /// The names of its other regular files: a name made for one
    /// elsewhere changes the file's link count, not this folder's stamp,
    /// so a kept walk looks at each again (names, not paths: a large
    /// workspace keeps one a file).
    files: Vec<std::ffi::OsString>,
    private: Vec<PathBuf>,
    mm: bool,
    /// It holds HEAD, objects and refs: a git dir.
    git: bool,
    /// Entries read.
    entries: usize,
}

/// The folders of the last few workspaces walked (scratch copies come and
/// go; the workspace stays).
type ScanCache = Vec<(PathBuf, std::collections::HashMap<PathBuf, DirScan>)>;
static SCANS: std::sync::Mutex<ScanCache> = std::sync::Mutex::new(Vec::new());
const CACHED_ROOTS: usize = 4;

fn dir_stamp(m: &std::fs::Metadata) -> (i64, i64, i64, i64, u64) {
    use std::os::unix::fs::MetadataExt;
    (
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
    )
}

/// Reads one folder of the workspace for what `Found` holds.
fn read_folder(root: &Path, dir: &Path, stamp: (i64, i64, i64, i64, u64)) -> Option<DirScan> {
    use std::os::unix::fs::MetadataExt;
    let rd = std::fs::read_dir(dir).ok()?;
    let root_git = root.join(".git");
    let mm = dir != root && dir.file_name() == Some(std::ffi::OsStr::new(".mm"));
    let mut out = DirScan {
        stamp,
        subdirs: Vec::new(),
        secrets: Vec::new(),
        linked: Vec::new(),
        files: Vec::new(),
        private: Vec::new(),
        mm,
        git: false,
        entries: 0,
    };
    let (mut head, mut objects, mut refs) = (false, false, false);
    let (mut commondir, mut config) = (false, false);
    for e in rd.flatten() {
        out.entries += 1;
        let Ok(ft) = e.file_type() else { continue };
        match e.file_name().to_str() {
            // git asks only that HEAD be read and objects and refs be
            // searchable: a link or an executable file passes too.
            Some("HEAD") => head |= !ft.is_dir(),
            Some("objects") => objects = true,
            Some("refs") => refs = true,
            Some("commondir") => commondir |= ft.is_file(),
            Some("config") => config |= ft.is_file(),
            _ => {}
        }
        let p = e.path();
        if mm && crate::paths::is_private_mm_entry(&e.file_name().to_string_lossy()) {
            out.private.push(p.clone());
        }
        let Ok(rel) = p.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy();
        if ft.is_dir() {
            // The repository's own git dir is guarded apart; a `.git` or
            // `.mm` below is walked like any folder (code can move a
            // folder there).
            if p == root_git {
                continue;
            }
            // A folder whose name makes its files credentials (`.ssh`,
            // `.envs`) is hidden whole: as a mount point it cannot be
            // renamed into an ordinary one.
            if crate::paths::credential_reason(&format!("{rel}/x")).is_some() {
                out.secrets.push(p);
                continue;
            }
            out.subdirs.push(p);
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        if crate::paths::credential_reason(&rel).is_some() {
            out.secrets.push(p);
        } else if e.metadata().is_ok_and(|m| m.nlink() > 1) {
            out.linked.push(p);
        } else {
            out.files.push(e.file_name());
        }
    }
    // As `paths::is_git_dir` judges.
    out.git = (head && (objects || commondir)) || (objects && refs && config);
    Some(out)
}

/// A walk of the whole workspace (not into the root's `.git`) for what
/// `Found` holds. Nothing the workspace says is taken into account (a
/// `.gitignore` is code's to change): every folder is walked. A folder
/// whose stamp is what it was at the last walk is not read again (one
/// `lstat` instead of a read and an `lstat` an entry); one changed in the
/// last two seconds always is (a change within the clock's resolution
/// would not show). Up to `MAX_SCANNED` entries are read afresh a walk.
fn scan(root: &Path) -> Found {
    use std::os::unix::fs::MetadataExt;
    let mut found = Found::default();
    let mut scans = SCANS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = match scans.iter().position(|(r, _)| r == root) {
        Some(i) => {
            let e = scans.remove(i);
            scans.push(e);
            scans.len() - 1
        }
        None => {
            if scans.len() >= CACHED_ROOTS {
                scans.remove(0);
            }
            scans.push((root.to_path_buf(), std::collections::HashMap::new()));
            scans.len() - 1
        }
    };
    let cache = &mut scans[at].1;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut stack = vec![root.to_path_buf()];
    let mut visited = std::collections::HashSet::new();
    let mut fresh = 0usize;
    while let Some(dir) = stack.pop() {
        let stamp = std::fs::symlink_metadata(&dir)
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .map(|m| dir_stamp(&m));
        let cached = stamp.and_then(|st| cache.get(&dir).filter(|c| c.stamp == st));
        if let Some(c) = cached {
            // A name made elsewhere since the folder was read.
            found.linked.extend(
                c.files
                    .iter()
                    .map(|f| dir.join(f))
                    .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.nlink() > 1)),
            );
        }
        let scanned;
        let entry = match cached {
            Some(c) => c,
            None => {
                let read = stamp.and_then(|st| read_folder(root, &dir, st));
                let Some(read) = read else {
                    // A folder mm cannot read (code made it so, `chmod
                    // 000`) may hold anything: it is hidden whole. The
                    // root must be read.
                    cache.remove(&dir);
                    if dir == root {
                        return found;
                    }
                    found.secrets.push(dir);
                    continue;
                };
                fresh += read.entries + 1;
                if fresh > MAX_SCANNED {
                    return found;
                }
                let recent = read.stamp.0.max(read.stamp.2) >= now - 2;
                if recent {
                    cache.remove(&dir);
                    scanned = read;
                    &scanned
                } else {
                    cache.insert(dir.clone(), read);
                    match cache.get(&dir) {
                        Some(c) => c,
                        None => continue,
                    }
                }
            }
        };
        if entry.git {
            found.git_dirs.push(dir.clone());
        }
        if entry.mm {
            found.mm.push(dir.clone());
            found.private.extend(entry.private.iter().cloned());
        }
        found.secrets.extend(entry.secrets.iter().cloned());
        found.linked.extend(entry.linked.iter().cloned());
        stack.extend(entry.subdirs.iter().cloned());
        visited.insert(dir);
    }
    // Folders gone since the last walk.
    cache.retain(|d, _| visited.contains(d));
    found.linked = outside_named(root, std::mem::take(&mut found.linked));
    found.complete = true;
    found
}

/// The files of `linked` (each had more than one name when its folder
/// was read) with a name the walk did not see: every name of a file
/// cargo links within `target/` is in the workspace, so writing it
/// reaches nothing outside, and its mount would only make the next
/// build fail (EBUSY). Each is looked at afresh: a name made since
/// counts. A name in a place mounted read-only of its own (`.mm/`,
/// `.agent/tools/`, `.gitmodules`) does not count as seen: a second
/// name elsewhere would write through that mount.
fn outside_named(root: &Path, linked: Vec<PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // (dev, inode) -> (links, names seen that count, names).
    let mut names: std::collections::HashMap<(u64, u64), (u64, u64, Vec<PathBuf>)> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for p in linked {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_file() => {
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy();
                let guarded = crate::paths::reserved_reason(&rel, true).is_some()
                    || p.file_name() == Some(std::ffi::OsStr::new(".gitmodules"));
                let e = names
                    .entry((m.dev(), m.ino()))
                    .or_insert((m.nlink(), 0, Vec::new()));
                e.0 = e.0.max(m.nlink());
                if !guarded {
                    e.1 += 1;
                }
                e.2.push(p);
            }
            // Gone or changed since: masked as it was found.
            _ => out.push(p),
        }
    }
    for (nlink, seen, paths) in names.into_values() {
        if seen < nlink {
            out.extend(paths);
        }
    }
    out.sort();
    out
}

/// Host files that hold secrets a process running as root reads without
/// any capability.
const HOST_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
];

/// Sockets on the host that reach past the fence even on a read-only file
/// system: the user's D-Bus session (`systemd-run --user` runs anything),
/// container engines. Hidden when they exist.
const HOST_SOCKETS: &[&str] = &[
    "/run/user",
    "/run/dbus",
    "/var/run/dbus",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_that_started_is_not_probed_again_this_boot() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let other = dir.path().join("other");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let record = dir.path().join("data/fence-ok");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // /bin/true and /bin/false stand in for a bwrap that starts and
        // one that cannot: neither looks at its arguments.
        let probe = |bwrap: &str, root: &Path| {
            rt.block_on(Fence::probe(
                PathBuf::from(bwrap),
                root,
                Some(&record),
                false,
            ))
            .is_on()
        };
        assert!(!probe("/bin/false", &root));
        assert!(!record.exists(), "a failed probe is not remembered");
        assert!(probe("/bin/true", &root));
        let kept = std::fs::read_to_string(&record).unwrap();
        let key = verdict_key(Path::new("/bin/true"), &root).unwrap();
        assert!(kept.lines().any(|l| l == key), "{kept}");
        // A verdict on record is taken without starting anything: one
        // written for /bin/false makes it "start".
        let forged = verdict_key(Path::new("/bin/false"), &root).unwrap();
        std::fs::write(&record, format!("{kept}{forged}\n")).unwrap();
        assert!(probe("/bin/false", &root));
        // It holds for that workspace and that binary only.
        assert!(!probe("/bin/false", &other));
        assert!(probe("/bin/true", &other));
        let kept = std::fs::read_to_string(&record).unwrap();
        assert_eq!(kept.lines().count(), 3, "{kept}");
    }

    #[test]
    fn a_walk_kept_from_before_still_sees_every_change_since() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("deep/x/y")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        std::fs::write(root.join("deep/x/y/b.txt"), "b").unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        // Folders changed in the last two seconds are read every time:
        // wait, so this walk's folders are kept.
        std::thread::sleep(std::time::Duration::from_millis(3100));
        let first = scan(&root);
        assert!(first.complete && first.secrets.is_empty() && first.linked.is_empty());
        std::thread::sleep(std::time::Duration::from_millis(3100));
        // Each change lands in a folder whose contents the walk kept.
        std::fs::write(root.join("sub/.env"), "K=v").unwrap();
        std::fs::hard_link(outside.path().join("secret.txt"), root.join("deep/x/y/hl")).unwrap();
        std::fs::create_dir_all(root.join("deep/x/.mm/sessions")).unwrap();
        std::fs::rename(root.join("sub"), root.join("moved")).unwrap();
        let second = scan(&root);
        assert!(second.complete);
        assert_eq!(second.secrets, vec![root.join("moved/.env")]);
        assert_eq!(second.linked, vec![root.join("deep/x/y/hl")]);
        assert_eq!(second.mm, vec![root.join("deep/x/.mm")]);
        assert_eq!(second.private, vec![root.join("deep/x/.mm/sessions")]);
        // And once more, from what this walk kept.
        std::thread::sleep(std::time::Duration::from_millis(3100));
        let _ = scan(&root);
        std::fs::remove_file(root.join("moved/.env")).unwrap();
        let third = scan(&root);
        assert!(third.secrets.is_empty(), "{:?}", third.secrets);
        assert_eq!(third.linked, vec![root.join("deep/x/y/hl")]);
    }

    /// cargo links its outputs within `target/`: every name is in the
    /// workspace, so none needs a mount (a mount made the next build
    /// fail with EBUSY). A name outside, even one made after the walk
    /// was kept, still does.
    #[test]
    fn a_file_whose_every_name_is_in_the_workspace_is_not_masked() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir_in(root.parent().unwrap()).unwrap();
        std::fs::create_dir_all(root.join("target/debug/deps")).unwrap();
        std::fs::write(root.join("target/debug/deps/libx-1.rlib"), "r").unwrap();
        std::fs::hard_link(
            root.join("target/debug/deps/libx-1.rlib"),
            root.join("target/debug/libx.rlib"),
        )
        .unwrap();
        std::fs::write(outside.path().join("notes.txt"), "n").unwrap();
        std::fs::hard_link(outside.path().join("notes.txt"), root.join("notes.txt")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3100));
        let first = scan(&root);
        assert_eq!(first.linked, vec![root.join("notes.txt")]);
        // A third name, outside, while the folders' walk is kept.
        std::fs::hard_link(
            root.join("target/debug/libx.rlib"),
            outside.path().join("libx.rlib"),
        )
        .unwrap();
        let second = scan(&root);
        assert_eq!(
            second.linked,
            vec![
                root.join("notes.txt"),
                root.join("target/debug/deps/libx-1.rlib"),
                root.join("target/debug/libx.rlib"),
            ]
        );
        // A second name of a file in `.mm/` (red-team round 28): written
        // through, it would change what the `.mm` mount keeps read-only.
        std::fs::create_dir_all(root.join(".mm")).unwrap();
        std::fs::write(root.join(".mm/config.yaml"), "x: 1\n").unwrap();
        std::fs::hard_link(root.join(".mm/config.yaml"), root.join("y.txt")).unwrap();
        let third = scan(&root);
        assert!(
            third.linked.contains(&root.join("y.txt")),
            "{:?}",
            third.linked
        );
        // A file with one name when its folder's walk was kept gains one
        // outside (red-team round 29: a backup by hard links, `ln` into
        // ~/bin): the folder's stamp does not change, the file's links do.
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/plain.txt"), "p").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3100));
        let fourth = scan(&root);
        assert!(!fourth.linked.contains(&root.join("docs/plain.txt")));
        std::fs::hard_link(
            root.join("docs/plain.txt"),
            outside.path().join("plain.txt"),
        )
        .unwrap();
        let fifth = scan(&root);
        assert!(
            fifth.linked.contains(&root.join("docs/plain.txt")),
            "{:?}",
            fifth.linked
        );
    }

    #[test]
    fn without_a_fence_the_command_runs_as_it_is() {
        let off = Fence::Off("test".into());
        let Launch {
            program: prog,
            args,
            filter,
            ..
        } = off.argv(
            Path::new("/w"),
            Path::new("/w"),
            Access::Workspace,
            true,
            "/bin/sh",
            &["-c", "ls"],
        );
        assert_eq!(prog, PathBuf::from("/bin/sh"));
        assert_eq!(args, vec![OsString::from("-c"), OsString::from("ls")]);
        assert!(filter.is_none());
        assert_eq!(off.name(), "none");
    }

    #[test]
    fn the_workspace_is_writable_only_when_asked_and_git_internals_never() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let fence = Fence::Bwrap(PathBuf::from("/usr/bin/bwrap"));
        let text = |access, net| {
            let launch = fence.argv(&root, &root, access, net, "/bin/sh", &["-c", "x"]);
            assert_eq!(
                launch.filter.is_some(),
                !net,
                "a filter exactly without network"
            );
            launch
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let r = root.display().to_string();
        let ws = text(Access::Workspace, true);
        assert!(ws.contains(&format!("--bind {r} {r}")), "{ws}");
        assert!(ws.contains(&format!("--bind {r}/.git {r}/.git")), "{ws}");
        assert!(ws.contains(&format!("--ro-bind {r}/.git/hooks {r}/.git/hooks")));
        assert!(ws.contains(&format!("--ro-bind {r}/.git/config {r}/.git/config")));
        assert!(!ws.contains("--unshare-net"));
        let project = text(Access::Project, true);
        assert!(
            project.contains(&format!("--ro-bind {r}/.git {r}/.git")),
            "{project}"
        );
        assert!(!project.contains(&format!("--bind {r}/.git {r}/.git")));
        let ro = text(Access::ReadOnly, false);
        assert!(ro.contains(&format!("--ro-bind {r} {r}")), "{ro}");
        assert!(!ro.contains(&format!("--bind {r} {r}")));
        assert!(ro.contains("--unshare-net"));
        assert!(ro.contains("--seccomp "), "{ro}");
        assert!(ro.ends_with("-- /bin/sh -c x"));
    }

    #[test]
    fn a_submodule_folder_behind_a_link_out_is_never_made() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(&root)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "i"]);
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&root)
            .output()
            .unwrap();
        let head = String::from_utf8(head.stdout).unwrap();
        let info = format!("160000,{},lnk/sub", head.trim());
        git(&["update-index", "--add", "--cacheinfo", &info]);
        std::os::unix::fs::symlink(outside.path(), root.join("lnk")).unwrap();
        let fence = Fence::Bwrap(PathBuf::from("/usr/bin/bwrap"));
        let _ = fence.argv(&root, &root, Access::Project, false, "/bin/true", &[]);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_socket_filter_is_whole_instructions_and_checks_the_architecture() {
        let p = socket_filter_program().unwrap();
        assert_eq!(p.len() % 8, 0);
        // It starts by loading seccomp_data.arch (offset 4).
        assert_eq!(&p[..2], &0x20u16.to_ne_bytes());
        assert_eq!(&p[4..8], &4u32.to_ne_bytes());
        let fd = socket_filter().unwrap();
        let mut back = Vec::new();
        use std::io::Read;
        std::fs::File::from(fd).read_to_end(&mut back).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn npm_configs_inside_a_version_managers_folder_are_masked() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        // fnm: versions under ~/.local/share/fnm (on PATH), the one in use
        // through a link in ~/.local/state; npm's prefix ~/.local.
        let install = home.join(".local/share/fnm/node-versions/v20.11.0/installation");
        for d in ["bin", "etc", "lib/node_modules/npm"] {
            std::fs::create_dir_all(install.join(d)).unwrap();
        }
        std::fs::create_dir_all(home.join(".local/lib/node_modules/npm")).unwrap();
        std::fs::create_dir_all(home.join(".local/state/fnm_multishells")).unwrap();
        symlink(&install, home.join(".local/state/fnm_multishells/1_2")).unwrap();
        let secrets = [
            install.join("etc/npmrc"),
            install.join("lib/node_modules/npm/npmrc"),
            home.join(".local/lib/node_modules/npm/npmrc"),
        ];
        for f in &secrets {
            std::fs::write(f, "//registry/:_authToken=SECRET\n").unwrap();
        }
        let path = std::env::join_paths([
            home.join(".local/state/fnm_multishells/1_2/bin"),
            home.join(".local/share/fnm"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let root = home.join("work");
        std::fs::create_dir_all(&root).unwrap();
        let seen = home_view(&home, &root, Some(&path));
        for f in &secrets {
            assert!(
                seen.iter()
                    .any(|s| &s.to == f && s.from == Path::new("/dev/null")),
                "{} is not masked",
                f.display()
            );
        }
        assert!(seen.iter().any(|s| s.to == home.join(".local/share/fnm")));
    }

    #[test]
    fn unasked_code_sees_of_home_the_toolchains_not_the_rest() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        let mk = |p: &str| std::fs::create_dir_all(home.join(p)).unwrap();
        for d in [
            ".cargo/bin",
            ".rustup",
            ".local/bin",
            ".local/share/pipx/venvs/black/bin",
            ".local/share/keyrings",
            ".nvm/versions/node/v20/bin",
            "tools/bin",
            "Documents",
            "src/app/.git",
            "src/app/sub",
        ] {
            mk(d);
        }
        std::fs::write(home.join(".local/share/pipx/venvs/black/bin/black"), "").unwrap();
        symlink(
            home.join(".local/share/pipx/venvs/black/bin/black"),
            home.join(".local/bin/black"),
        )
        .unwrap();
        std::fs::write(home.join(".gitconfig"), "[user]\n\tname = a\n").unwrap();
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        std::fs::write(
            home.join(".config/git/config"),
            "[remote \"o\"]\n\turl = https://u:tok3n@example.com/r.git\n",
        )
        .unwrap();
        let path = std::env::join_paths([
            home.join(".nvm/versions/node/v20/bin"),
            home.join("tools/bin"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let root = home.join("src/app/sub");
        let seen = home_view(&home, &root, Some(&path));
        let to: Vec<PathBuf> = seen.iter().map(|s| s.to.clone()).collect();
        let want = |p: &str| home.join(p);
        for p in [
            ".cargo",
            ".rustup",
            ".local/bin",
            ".local/share/pipx/venvs/black",
            ".nvm",
            "tools",
            "src/app",
            ".gitconfig",
            ".config/git/config",
        ] {
            assert!(to.contains(&want(p)), "{p} not seen: {to:?}");
        }
        for p in ["Documents", ".local/share/keyrings", ".local", ".config"] {
            assert!(
                !to.iter().any(|t| want(p).starts_with(t)),
                "{p} seen: {to:?}"
            );
        }
        assert!(!to.contains(&home), "home itself seen");
        // Nothing nested twice; git's settings with a token come redacted.
        assert!(!to.contains(&want(".nvm/versions/node/v20")));
        let git = seen
            .iter()
            .find(|s| s.to == want(".config/git/config"))
            .unwrap();
        assert_ne!(git.from, git.to);
        assert!(
            !std::fs::read_to_string(&git.from)
                .unwrap_or_default()
                .contains("tok3n")
        );
        let plain = seen.iter().find(|s| s.to == want(".gitconfig")).unwrap();
        assert_eq!(plain.from, plain.to);
        // Hidden at all only where it is safe to.
        assert!(hides_home(&home, &root));
        assert!(!hides_home(Path::new("/"), &root));
        assert!(!hides_home(Path::new("/usr"), &root));
        assert!(!hides_home(&home, home.parent().unwrap()));
    }

    /// What the red team got through the first version: a `.git` link or
    /// file (or a `commondir`) planted in the workspace, links in a PATH
    /// folder the workspace holds, `..` in PATH, tokens inside a seen
    /// toolchain.
    #[test]
    fn nothing_planted_in_the_workspace_widens_the_home_view() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        let mk = |p: &str| std::fs::create_dir_all(home.join(p)).unwrap();
        for d in [
            "Documents",
            "ws/.venv/bin",
            "wt",
            "repo/.git/objects",
            "repo/.git/refs",
            "repo/.git/worktrees/wt",
            ".nvm/versions/node/v20/etc",
            ".cargo",
        ] {
            mk(d);
        }
        std::fs::write(home.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(home.join("repo/.git/config"), "").unwrap();
        std::fs::write(
            home.join(".nvm/versions/node/v20/etc/npmrc"),
            "_authToken=x\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".cargo/config.toml"),
            "[build]\njobs = 2\n[registries.x]\ntoken = \"SECRET\"\n",
        )
        .unwrap();
        let ws = home.join("ws");
        // A .git link to a folder of HOME, then a .git file naming it.
        symlink(home.join("Documents"), ws.join(".git")).unwrap();
        assert!(enclosing_repository(&ws).is_empty());
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::fs::write(
            ws.join(".git"),
            format!(
                "gitdir: {}\n",
                home.join("repo/.git/worktrees/wt").display()
            ),
        )
        .unwrap();
        std::fs::write(home.join("repo/.git/worktrees/wt/HEAD"), "x\n").unwrap();
        std::fs::write(home.join("repo/.git/worktrees/wt/commondir"), "../..\n").unwrap();
        // The worktree's git dir names another checkout: nothing.
        std::fs::write(
            home.join("repo/.git/worktrees/wt/gitdir"),
            format!("{}\n", home.join("wt/.git").display()),
        )
        .unwrap();
        assert!(enclosing_repository(&ws).is_empty());
        // It names this one back (git wrote it): the git dir and common dir.
        std::fs::write(
            home.join("repo/.git/worktrees/wt/gitdir"),
            format!("{}\n", ws.join(".git").display()),
        )
        .unwrap();
        assert_eq!(
            enclosing_repository(&ws),
            vec![home.join("repo/.git/worktrees/wt"), home.join("repo/.git")]
        );
        // Links in a PATH folder inside the workspace are not followed; a
        // `..` entry is HOME, which is never seen whole.
        symlink(home.join("Documents"), ws.join(".venv/bin/x")).unwrap();
        let path = std::env::join_paths([ws.join(".venv/bin"), home.join("Documents/..")]).unwrap();
        let seen = home_view(&home, &ws, Some(&path));
        let to: Vec<&PathBuf> = seen.iter().map(|s| &s.to).collect();
        assert!(
            !to.iter().any(|t| home.join("Documents").starts_with(t)),
            "{to:?}"
        );
        // Tokens inside a seen toolchain are not.
        let npmrc = seen
            .iter()
            .find(|s| s.to == home.join(".nvm/versions/node/v20/etc/npmrc"))
            .unwrap();
        assert_eq!(npmrc.from, PathBuf::from("/dev/null"));
        let cargo = seen
            .iter()
            .find(|s| s.to == home.join(".cargo/config.toml"))
            .unwrap();
        assert_eq!(cargo.from, PathBuf::from("/dev/null"));
        // Second round: links that lead through the workspace (which its
        // code can change) are not followed — from a HOME bin folder, a
        // PATH folder spelled through the workspace and swapped for a
        // link, a HOME folder that is a link into it.
        mk(".local/bin");
        mk("ws/target");
        mk("Documents/x");
        symlink(ws.join("target/tool"), home.join(".local/bin/tool")).unwrap();
        symlink(home.join("Documents/x"), ws.join("target/tool")).unwrap();
        std::fs::remove_dir_all(ws.join(".venv/bin")).unwrap();
        symlink(home.join("Documents"), ws.join(".venv/bin")).unwrap();
        symlink(ws.join(".venv"), home.join("bin")).unwrap();
        let path = std::env::join_paths([ws.join(".venv/bin"), home.join("bin/bin")]).unwrap();
        let seen = home_view(&home, &ws, Some(&path));
        let to: Vec<&PathBuf> = seen.iter().map(|s| &s.to).collect();
        assert!(
            !to.iter().any(|t| home.join("Documents/x").starts_with(t)),
            "{to:?}"
        );
        assert_eq!(resolve_outside(&home.join("bin/bin"), &ws), None);
        assert_eq!(resolve_outside(&home.join(".local/bin/tool"), &ws), None);
        assert_eq!(
            resolve_outside(&home.join(".nvm/versions"), &ws),
            Some(home.join(".nvm/versions"))
        );
        // A worktree's git dir borrowed through `.git` links in the
        // workspace (one of them naming the other back) brings nothing.
        std::fs::remove_file(ws.join(".git")).unwrap();
        let g = home.join("repo/.git/worktrees/wt");
        mk("ws/inner");
        symlink(&g, ws.join("inner/.git")).unwrap();
        symlink(&g, ws.join(".git")).unwrap();
        std::fs::write(
            g.join("gitdir"),
            format!("{}\n", ws.join("inner/.git").display()),
        )
        .unwrap();
        assert!(enclosing_repository(&ws).is_empty());
    }
}
