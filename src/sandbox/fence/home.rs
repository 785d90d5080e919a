//! The homes and what of each unasked code sees: toolchains, package stores
//! and git's settings redacted, in a throw-away tmpfs.

use super::*;

/// HOME and the home the password database gives (HOME may be set
/// elsewhere), each once, each where it really is (`/w/../h` is `/h`).
pub(super) fn user_homes(home: Option<&Path>) -> Vec<PathBuf> {
    // Resolved once: a link on the way to HOME that lies in the workspace
    // must not move it between commands.
    static HOMES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    HOMES.get_or_init(|| homes_now(home)).clone()
}

pub(super) fn homes_now(home: Option<&Path>) -> Vec<PathBuf> {
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
pub(super) fn hides_home(home: &Path, root: &Path) -> bool {
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
pub(super) const HOME_SEEN: &[&str] = &[
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
pub(super) const HOME_GIT: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// A read-only mount: `from` on the host seen at `to` in the fence.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) from: PathBuf,
    pub(super) to: PathBuf,
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
pub(super) fn home_view(home: &Path, root: &Path, path_var: Option<&std::ffi::OsStr>) -> Vec<Seen> {
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
pub(super) fn may_hold_credential(config: &Path) -> bool {
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
pub(super) fn resolve_outside(p: &Path, root: &Path) -> Option<PathBuf> {
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
pub(super) fn enclosing_repository(root: &Path) -> Vec<PathBuf> {
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
