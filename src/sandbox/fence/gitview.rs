//! What of `.git` stays read-only in the fence, and git settings shown
//! redacted to unasked code.

use super::*;

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
pub(super) fn protected(root: &Path, approved: bool) -> Vec<(PathBuf, bool)> {
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
pub(super) fn redacted_git_configs(root: &Path, nested: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
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
pub(super) const COPY_MAX: usize = 1 << 20;

/// The most the copies' folder holds before the oldest go.
pub(super) const COPIES_MAX: u64 = 64 << 20;

/// Removes the least recently written copies until the folder holds at
/// most `COPIES_MAX` (a workspace can make new ones at every command).
pub(super) fn prune_copies(dir: &Path) {
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
pub(super) fn redacted_copy(text: &str) -> Option<PathBuf> {
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
