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

mod scan;
use scan::*;

mod gitview;
use gitview::*;

mod home;
use home::*;

mod filter;
use filter::*;

mod mounts;
use mounts::*;

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

/// The path under HOME, of those fenced code never sees, that `abs` (a
/// canonical path) lies in: mm run in a home folder does not let its file
/// tools read or write them either.
pub fn masked_home_path(abs: &Path) -> Option<PathBuf> {
    masked_home_path_in(abs, std::env::var_os("HOME").map(PathBuf::from)?)
}

pub(crate) fn masked_home_path_in(abs: &Path, home: PathBuf) -> Option<PathBuf> {
    let home = std::fs::canonicalize(&home).unwrap_or(home);
    MASKED
        .iter()
        .map(|m| home.join(m))
        .find(|m| abs.starts_with(m))
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
        // Code nobody approved gets the socket filter with the network
        // too (`-auto`): a Unix socket reaches host services (D-Bus, a
        // container daemon) that run programs outside the fence.
        let filtered = !net || access.unasked();
        isolated(a, bwrap, cwd, net, filtered, too_big, program, args)
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

/// Ignored folders a check in a copy of the workspace reads but does not
/// write: the workspace's own are mounted into the copy, read-only.
pub const COPY_LINKED: &[&str] = &["node_modules", ".venv", "venv"];

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
        let text = |access: Access, net| {
            let launch = fence.argv(&root, &root, access, net, "/bin/sh", &["-c", "x"]);
            assert_eq!(
                launch.filter.is_some(),
                !net || access.unasked(),
                "a filter without network, and for unasked code"
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
        assert!(!ws.contains("--seccomp "), "{ws}");
        // Unasked code with the network (`-auto`) still gets no Unix
        // socket: host services are reached through them.
        let auto = text(Access::Unattended, true);
        assert!(!auto.contains("--unshare-net"));
        assert!(auto.contains("--seccomp "), "{auto}");
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
