//! bwrap's arguments, step by step: the homes, the workspace, what is
//! hidden, the credentials, the namespaces.

use super::*;

/// Of each hidden home, what is mounted again in its tmpfs, and what the
/// view masks.
#[derive(Default)]
pub(super) struct HomeViews {
    pub(super) shown: Vec<(PathBuf, Vec<PathBuf>)>,
    pub(super) masks: Vec<PathBuf>,
}

impl HomeViews {
    /// What code in the fence could read anyway: a path under a hidden
    /// home only where the home view mounts it again. A redacted copy is
    /// never mounted anywhere else (git settings can name any file: that
    /// must not make it appear).
    pub(super) fn visible(&self, p: &Path, root: &Path) -> bool {
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
pub(super) fn home_views(a: &mut Args, homes: &[PathBuf], root: &Path) -> HomeViews {
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
pub(super) fn look_through(
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
pub(super) fn workspace_mounts(
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
pub(super) fn hide(a: &mut Args, hidden: Vec<&PathBuf>, root: &Path) -> Option<String> {
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
pub(super) fn mask_credentials(a: &mut Args, homes: &[PathBuf], root: &Path, net: bool) {
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

/// The namespaces, the capabilities dropped, the socket filter (without
/// network, and for unasked code with it), and the program; or, when the
/// fence cannot be what it says (`refused`), a shell that says why and
/// runs nothing.
#[allow(clippy::too_many_arguments)]
pub(super) fn isolated(
    mut a: Args,
    bwrap: &Path,
    cwd: &Path,
    net: bool,
    filtered: bool,
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
    }
    if filtered {
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
