//! git seen by the gate: settings in a repository's config that would run a
//! program or read a file for a read-only command, and the fingerprints of
//! the repositories in the workspace (a change to one between commands is
//! noticed).

use super::*;

impl Sandbox {
    /// A repository whose own config names a program git would run for a
    /// read command (an external diff, a textconv filter, an fsmonitor
    /// hook…) or a file it would read, whose work tree lies elsewhere, or
    /// (for a command that prints file contents) that tracks a credential
    /// file, is not read-only: the command asks. `notes`: the command
    /// prints the repository's notes if it has any (`git log`), which
    /// counts as printing contents then.
    pub(super) fn git_settings_hazard(
        &self,
        dir: &Path,
        (content, notes): (bool, bool),
        settings: bool,
    ) -> Result<(), String> {
        let Some(facts) = crate::git::inspect(dir)
            .map_err(|e| format!("git's repository there cannot be read ({e})"))?
        else {
            return Ok(());
        };
        let content = content || (notes && facts.notes);
        for (name, value) in &facts.settings {
            if unsafe_setting(name, value) {
                return Err(format!(
                    "the repository's config sets {name}, which makes git run a program or read a file"
                ));
            }
        }
        if facts.info_attributes {
            return Err(
                "the repository's info/attributes can send files to a filter or textconv".into(),
            );
        }
        if let Some(w) = &facts.workdir {
            let w = std::fs::canonicalize(w).unwrap_or_else(|_| w.clone());
            if !w.starts_with(&self.root) && !self.root.starts_with(&w) {
                return Err(format!(
                    "the repository's work tree is outside the workspace ({})",
                    w.display()
                ));
            }
            // The workspace is a folder of a bigger repository: `git log
            // -p` or `git diff` print its files outside the workspace too.
            if content && w != self.root && self.root.starts_with(&w) {
                return Err(format!(
                    "the repository reaches above the workspace (its work tree is {}), and this command prints its files",
                    w.display()
                ));
            }
            // A `.gitignore` or `.mailmap` that is a FIFO: `git status`
            // and `git log` would wait on it until their time runs out.
            if let Some(why) = crate::git::blocking_worktree_file(&w) {
                return Err(why);
            }
        }
        // A repository that reads objects or refs from elsewhere shows
        // what lies there.
        for e in &facts.elsewhere {
            // A place that cannot be resolved is not taken to be inside
            // by its spelling (`<ws>/sub/.git/objects/../../x` is wherever
            // the link `x` leads).
            let Ok(e) = std::fs::canonicalize(e) else {
                return Err(format!(
                    "the repository reads objects or refs from {}, which mm cannot resolve",
                    e.display()
                ));
            };
            let inside = |w: &Path| {
                let w = std::fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf());
                e.starts_with(&w)
            };
            if !inside(&self.root) && !facts.workdir.as_deref().is_some_and(inside) {
                return Err(format!(
                    "the repository reads objects or refs from {}, outside the workspace",
                    e.display()
                ));
            }
        }
        if settings
            && let Some((name, _)) = facts
                .settings
                .iter()
                .find(|(n, v)| path::git_setting_is_secret(n, v))
        {
            return Err(format!(
                "the repository's {name} holds a credential, and this command prints it"
            ));
        }
        // Another repository's objects, even one in the workspace, hold
        // what that one tracks (a `.env`) past this index (round 34).
        if content && facts.borrows_objects {
            return Err(
                "the repository borrows another object store (alternates, or a linked objects folder), and this command prints what it holds".into(),
            );
        }
        if content && let Some(p) = facts.linked_tracked.first() {
            return Err(format!(
                "the tracked file {p} has another name (a hard link), and this command prints it"
            ));
        }
        if content && let Some(p) = facts.tracked_credentials.first() {
            return Err(format!(
                "the repository tracks {p}, which looks like a credential file, and this command prints file contents"
            ));
        }
        Ok(())
    }

    /// Every git repository in the workspace (a `.git` folder or file,
    /// nested ones included, and a folder laid out as a git dir under any
    /// name, the root too) with a fingerprint of what makes git run code
    /// there or look elsewhere (its config, `config.worktree`, its hooks,
    /// `commondir`, `objects/info/alternates`, where a `.git` file points). None when
    /// the workspace is too big to look through.
    pub fn git_repositories(&self) -> Option<std::collections::BTreeMap<String, u64>> {
        use std::hash::{Hash, Hasher};
        const MAX_WALKED: usize = 200_000;
        let mut out = std::collections::BTreeMap::new();
        // `.git` itself is seen, nothing in it (nor in `.mm`).
        let walk = ignore::WalkBuilder::new(&self.root)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(|e| {
                e.depth() == 0
                    || (e.file_name() != ".mm"
                        && e.path()
                            .parent()
                            .is_none_or(|p| p.file_name() != Some(std::ffi::OsStr::new(".git"))))
            })
            .build();
        for (n, e) in walk.flatten().enumerate() {
            if n > MAX_WALKED {
                return None;
            }
            let p = e.path();
            // A git dir under another name (the root itself, `src/` given
            // a HEAD, objects, refs and a config) is one git honours too.
            let named = e.file_name() == ".git";
            let laid_out = e.file_type().is_some_and(|t| t.is_dir()) && crate::paths::is_git_dir(p);
            if !(named || laid_out) {
                continue;
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if p.is_file() {
                // A `gitdir:` line is short; a link to /proc or a sparse
                // file named `.git` is not read without end.
                let text = crate::paths::read_regular(p, 64 * 1024).ok();
                text.hash(&mut h);
                // And the git dir it points to: a hook planted there runs
                // as surely as one in a `.git` folder.
                let target = text
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .and_then(|t| {
                        t.trim()
                            .strip_prefix("gitdir:")
                            .map(|g| g.trim().to_string())
                    })
                    .map(|g| p.parent().unwrap_or(p).join(g));
                if let Some(dir) = target.filter(|d| d.is_dir()) {
                    git_dir_fingerprint(&dir).hash(&mut h);
                }
            } else {
                git_dir_fingerprint(p).hash(&mut h);
            }
            let rel = p.strip_prefix(&self.root).unwrap_or(p);
            out.insert(rel.to_string_lossy().into_owned(), h.finish());
        }
        Some(out)
    }
}

/// git settings that start a program, write a file (`trace2.*`), read a
/// file the command then shows (`blame.ignoreRevsFile` printed its first
/// line), or move the work tree (`core.worktree`). Subsections may hold
/// dots (`diff.x.y.textconv` is the driver `x.y`), so a setting is known by
/// its section and its last part. `core.fsmonitor` may also be a plain
/// boolean (the built-in daemon).
pub(super) fn unsafe_setting(name: &str, value: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    let sub = parts.len() >= 3;
    match first {
        "alias" | "filter" | "pager" | "include" | "includeif" | "trace2" | "mailmap" => true,
        // `diff.orderFile` names a file git reads (a FIFO there blocks it).
        "diff" => {
            name == "diff.external"
                || name == "diff.orderfile"
                || (sub && matches!(last, "textconv" | "command"))
        }
        "merge" => sub && last == "driver",
        "difftool" | "mergetool" => matches!(last, "cmd" | "path"),
        "submodule" => last == "update",
        "core" => match last {
            "fsmonitor" => !matches!(
                value.to_ascii_lowercase().as_str(),
                "" | "false" | "true" | "no" | "yes" | "0" | "1" | "off" | "on"
            ),
            "pager" | "editor" | "askpass" | "sshcommand" | "gitproxy" | "hookspath"
            | "worktree" | "excludesfile" | "attributesfile" => true,
            _ => false,
        },
        "blame" => last == "ignorerevsfile",
        "commit" => last == "template",
        "credential" => last == "helper",
        "gpg" => matches!(last, "program" | "allowedsignersfile"),
        "sequence" => last == "editor",
        "interactive" => last == "difffilter",
        "uploadpack" => last == "packobjectshook",
        // A missing object in a partial clone is fetched from its promisor
        // remote by a plain `git show`, and a remote's URL can be a
        // program (`ext::sh -c …`).
        "remote" => {
            matches!(
                last,
                "uploadpack" | "receivepack" | "vcs" | "promisor" | "proxy"
            ) || (matches!(last, "url" | "pushurl") && value.contains("::"))
        }
        "extensions" => last == "partialclone",
        "protocol" => true,
        "url" => matches!(last, "insteadof" | "pushinsteadof"),
        "fetch" => last == "uploadpack",
        _ => false,
    }
}

/// What a git file is, for a fingerprint: a link's target, then the
/// file's bytes when it is a regular file of at most 1 MiB (else its size
/// and time), or its type. Nothing here blocks or reads without end: a
/// command may have put a FIFO or a link to `/dev/zero` there.
pub(super) fn fingerprint_file(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mut out = Vec::new();
    if meta.file_type().is_symlink() {
        out.extend_from_slice(b"link:");
        out.extend_from_slice(
            std::fs::read_link(path)
                .ok()?
                .as_os_str()
                .as_encoded_bytes(),
        );
    }
    match crate::paths::read_regular(path, 1 << 20) {
        Ok(bytes) => out.extend_from_slice(&bytes),
        Err(_) => {
            let m = std::fs::metadata(path).unwrap_or(meta);
            out.extend_from_slice(
                format!(
                    "{:o} {} {} {}",
                    m.mode(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec()
                )
                .as_bytes(),
            );
        }
    }
    Some(out)
}

/// What git takes settings, code or the repository's place from in the
/// git dir `p`: its config, `commondir`, `config.worktree`, alternates and
/// hooks.
pub(super) fn git_dir_fingerprint(p: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in [
        "config",
        "commondir",
        "config.worktree",
        "objects/info/alternates",
    ] {
        fingerprint_file(&p.join(f)).hash(&mut h);
    }
    let mut hooks: Vec<(String, Option<Vec<u8>>)> = std::fs::read_dir(p.join("hooks"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fingerprint_file(&e.path()),
            )
        })
        .collect();
    hooks.sort();
    hooks.hash(&mut h);
    h.finish()
}
