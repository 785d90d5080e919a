//! The gate's file-system checks on a command's operands: inside the
//! workspace, no credential below a folder it reads, git's operands in the
//! repository the gate inspected.

use super::*;

impl Sandbox {
    /// True when an operand names a credential file of the workspace
    /// (`cat .env`, `git show HEAD:.env`): in `auto`, where nobody is
    /// asked, such a command does not run at all (in the fence the file is
    /// masked, but git would show its committed copy).
    pub(super) fn names_credential(&self, command: &str, checks: &[Check]) -> bool {
        // Any word of the command line (as the shell reads it, and each
        // piece of it, for a script given to a shell: `sh -c '…'`) that
        // names one, as a path in the workspace or as a `REV:PATH`. A word
        // from `$HOME` or `~`, or one that leaves the workspace, names no
        // file of it (the fence masks those).
        let token_names = |t: &str| {
            if t.is_empty() || t.starts_with('$') || t.starts_with('~') {
                return false;
            }
            rev_path(t)
                .is_some_and(|p| path::credential_reason(p.trim_start_matches("./")).is_some())
                || path::resolve(&self.root, t)
                    .is_ok_and(|r| path::credential_reason(&r.rel).is_some())
        };
        let pieces = |w: &str| {
            w.split(|c: char| c.is_whitespace() || "'\";|&<>()`=".contains(c))
                .any(token_names)
        };
        let words_name = match shell::parse(command) {
            Ok(simples) => simples.iter().any(|s| {
                s.words
                    .iter()
                    .any(|w| token_names(&w.text) || pieces(&w.text))
            }),
            Err(_) => false,
        };
        if words_name || pieces(command) {
            return true;
        }
        checks.iter().any(|c| match c {
            Check::Read { word, dirs } | Check::GitOperand { word, dirs } => {
                let git = matches!(c, Check::GitOperand { .. });
                let text = word.text.as_str();
                let rev_path = rev_path(text)
                    .filter(|_| git)
                    .map(|p| p.trim_start_matches("./"));
                rev_path.is_some_and(|p| path::credential_reason(p).is_some())
                    || dirs.iter().any(|d| {
                        path::resolve(&self.root, &join(d, text))
                            .is_ok_and(|r| path::credential_reason(&r.rel).is_some())
                    })
            }
            _ => false,
        })
    }

    /// The file-system checks a verdict asked for; Err says what failed.
    pub(super) fn run_checks(&self, checks: &[Check]) -> Result<(), String> {
        // The path resolver forgives spaces around a file tool's path; a
        // shell word keeps them, so the gate would judge another file.
        let spaced = |t: &str| {
            (t.trim() != t).then(|| {
                format!(
                    "an operand with spaces around it ({:?})",
                    crate::untrusted::displayable(t)
                )
            })
        };
        for c in checks {
            let (word, dirs) = match c {
                Check::Read { word, dirs }
                | Check::Dir { word, dirs }
                | Check::GitOperand { word, dirs }
                | Check::NotAFolder { word, dirs } => (Some(word), dirs),
                Check::NoSecretsUnder { word, dirs } => (word.as_ref(), dirs),
                Check::Git { at, dirs, .. } => (at.as_ref(), dirs),
            };
            if let Some(why) = word
                .and_then(|w| spaced(&w.text))
                .or_else(|| dirs.iter().find_map(|d| spaced(d)))
            {
                return Err(why);
            }
        }
        for c in checks {
            match c {
                Check::Read { word, dirs } => {
                    for d in dirs {
                        self.check_operand(d, &word.text, word.globs, true)?;
                    }
                }
                Check::Dir { word, dirs } => {
                    for d in dirs {
                        self.check_operand(d, &word.text, false, false)?;
                    }
                }
                Check::GitOperand { word, dirs } => {
                    for d in dirs {
                        self.check_git_operand(d, &word.text)?;
                    }
                }
                Check::NotAFolder { word, dirs } => {
                    for d in dirs {
                        let at = join(d, &word.text);
                        if path::resolve(&self.root, &at).is_ok_and(|r| r.abs.is_dir()) {
                            return Err(format!(
                                "{} is a folder: compared as one, the files in it are read through their links",
                                crate::untrusted::displayable(&word.text)
                            ));
                        }
                    }
                }
                Check::NoSecretsUnder { word, dirs } => {
                    for d in dirs {
                        let at = match word {
                            // A glob's matches all lie in its folder: walk that.
                            Some(w) if w.globs => join(d, &path::glob_base(&w.text)),
                            Some(w) => join(d, &w.text),
                            None => d.clone(),
                        };
                        self.check_no_secrets_under(&at)?;
                    }
                }
                Check::Git {
                    at,
                    dirs,
                    content,
                    notes,
                    settings,
                } => {
                    for d in dirs {
                        let dir = match at {
                            Some(w) => join(d, &w.text),
                            None => d.clone(),
                        };
                        let dir = if dir.is_empty() { ".".to_string() } else { dir };
                        let r = path::resolve(&self.root, &dir)
                            .map_err(|e| format!("git outside the workspace ({e})"))?;
                        self.git_settings_hazard(&r.abs, (*content, *notes), *settings)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One path operand seen from directory `dir` of the workspace.
    pub(super) fn check_operand(
        &self,
        dir: &str,
        text: &str,
        globs: bool,
        read: bool,
    ) -> Result<(), String> {
        if text == "-" || (read && text == "/dev/null") {
            return Ok(());
        }
        let base = path::resolve(&self.root, if dir.is_empty() { "." } else { dir })
            .map_err(|e| format!("a folder outside the workspace ({e})"))?;
        let candidates: Vec<String> = if globs {
            let matches = path::glob_matches(&base.abs, text)?;
            if matches.is_empty() {
                vec![join(dir, text)]
            } else {
                let bare = !text.contains('/');
                let mut v = Vec::new();
                for m in matches {
                    let shown = m.to_string_lossy().into_owned();
                    if bare
                        && m.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with('-'))
                    {
                        return Err(format!(
                            "a glob that matches a file named like an option ({shown})"
                        ));
                    }
                    v.push(shown);
                }
                v
            }
        } else {
            vec![join(dir, text)]
        };
        for c in candidates {
            let r = path::resolve(&self.root, &c)
                .map_err(|e| format!("a path outside the workspace ({e})"))?;
            self.refuse_resolved(&r, read)?;
        }
        Ok(())
    }

    /// What no operand may be once resolved: a credential file (when it is
    /// read), a reserved path, a file with other names (whose content may
    /// be a file outside).
    fn refuse_resolved(&self, r: &Resolved, read: bool) -> Result<(), String> {
        if read
            && let Some(why) = path::credential_reason(&r.rel).or_else(|| {
                path::git_secret_reason(&r.rel, &r.abs, path::git_dir_of(&self.root).as_deref())
            })
        {
            return Err(format!("it reads a credential file ({why})"));
        }
        if let Some(why) = path::reserved_reason(&r.rel, false) {
            return Err(why);
        }
        path::hard_link_reason(&r.rel, &r.abs).map_or(Ok(()), Err)
    }

    /// A git revision or path, seen from `dir`. git decides late which one
    /// a word is (a word that names no revision but a file is a path, and
    /// two paths make `git diff` a `--no-index` diff), so every word is
    /// checked as a path: inside the workspace, no credential. `rev:path`
    /// also names a file of the repository, whose name is checked too.
    /// The PATH of `REV:PATH` lies inside the workspace: `./` and `../`
    /// from the command's folder, any other from the top of the work tree
    /// (which may be above the workspace: `HEAD:ops/deploy.sh` from a
    /// workspace `pkg/`, or `HEAD:` for all of it).
    fn check_rev_path(&self, dir: &str, inside: &str) -> Result<(), String> {
        let here = path::resolve(&self.root, if dir.is_empty() { "." } else { dir })
            .map_err(|e| format!("git outside the workspace ({e})"))?
            .abs;
        let from_here = inside == "."
            || inside == ".."
            || inside.starts_with("./")
            || inside.starts_with("../");
        let base = match from_here {
            true => here,
            false => crate::git::work_tree_of(&here)
                .and_then(|w| std::fs::canonicalize(w).ok())
                .unwrap_or_else(|| self.root.clone()),
        };
        let mut at = PathBuf::new();
        for c in base.join(inside).components() {
            match c {
                std::path::Component::ParentDir => {
                    at.pop();
                }
                std::path::Component::CurDir => {}
                other => at.push(other),
            }
        }
        if at.starts_with(&self.root) {
            Ok(())
        } else {
            Err(format!(
                "`REV:{inside}` names what git holds outside the workspace ({})",
                at.display()
            ))
        }
    }

    pub(super) fn check_git_operand(&self, dir: &str, text: &str) -> Result<(), String> {
        if let Some(inside) = rev_path(text) {
            let trimmed = inside.trim_start_matches("./");
            if let Some(why) = path::credential_reason(trimmed) {
                return Err(format!("it reads a credential file from git ({why})"));
            }
            self.check_rev_path(dir, inside)?;
        }
        let r = path::resolve(&self.root, &join(dir, text))
            .map_err(|e| format!("a git operand outside the workspace ({e})"))?;
        // `git diff REV:PATH FILE` prints FILE: read, and a file with other
        // names is as good as one outside.
        self.refuse_resolved(&r, true)
    }

    /// A recursive search under `at` (relative to the workspace) would
    /// read every file there: none may look like a credential. Ignored and
    /// hidden files count (grep -r reads them); `.git` and `.mm` do not.
    pub(super) fn check_no_secrets_under(&self, at: &str) -> Result<(), String> {
        const MAX_WALKED: usize = 100_000;
        let base = path::resolve(&self.root, if at.is_empty() { "." } else { at })
            .map_err(|e| format!("a search outside the workspace ({e})"))?;
        if !base.abs.is_dir() {
            return Ok(());
        }
        // A `.mm` holding mm's records is no place to search (the root's
        // is hidden in the fence). Only the repository's own `.git` is
        // passed over: code can move a folder into a `.git` or `.mm` below.
        let root_git = self.root.join(".git");
        let root_git_covered = root_git.starts_with(&base.abs) || base.abs.starts_with(&root_git);
        let git_dir = path::git_dir_of(&self.root);
        let walk = ignore::WalkBuilder::new(&base.abs)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(move |e| e.path() != root_git)
            .build();
        let entries: Vec<_> = walk.flatten().take(MAX_WALKED + 2).collect();
        let root_mm = self.root.join(".mm");
        for e in &entries {
            if e.file_name() == ".mm"
                && e.file_type().is_some_and(|t| t.is_dir())
                && !(self.fence.is_on() && e.path() == root_mm)
                && std::fs::read_dir(e.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|i| path::is_private_mm_entry(&i.file_name().to_string_lossy()))
            {
                let rel = e.path().strip_prefix(&self.root).unwrap_or(e.path());
                return Err(format!(
                    "a recursive search would read mm's records in {}",
                    rel.display()
                ));
            }
        }
        for (n, e) in entries.into_iter().enumerate() {
            if n > MAX_WALKED {
                return Err("a recursive search over more files than mm checks".into());
            }
            let Ok(rel) = e.path().strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel.to_string_lossy();
            if e.depth() > 0
                && let Some(why) = path::credential_reason(&rel)
            {
                return Err(format!("a recursive search would read {why}"));
            }
            if e.depth() > 0
                && let Some(why) = path::hard_link_reason(&rel, e.path())
                    .or_else(|| path::git_secret_reason(&rel, e.path(), git_dir.as_deref()))
            {
                return Err(format!("a recursive search would read {why}"));
            }
        }
        // The walk passes over the repository's own `.git`; a search from
        // above it or in it still reads its config.
        if root_git_covered {
            for c in git_dir.iter().flat_map(|g| path::repo_config_files(g)) {
                if path::git_text_holds_secret(&c) {
                    return Err(format!(
                        "a recursive search would read {}, which holds a credential (a token in a URL or a header)",
                        c.strip_prefix(&self.root).unwrap_or(&c).display()
                    ));
                }
            }
        }
        Ok(())
    }
}

pub(super) fn join(dir: &str, text: &str) -> String {
    if dir.is_empty() || text.starts_with('/') {
        text.to_string()
    } else {
        format!("{dir}/{text}")
    }
}

/// The PATH of a `REV:PATH` operand as git reads it: after the first
/// colon outside `{…}` (`HEAD@{2099-01-01 00:00}:x`, `HEAD^{/fix: y}:x`);
/// `:N:PATH` is PATH in the index at stage N, `:PATH` in the index.
pub(super) fn rev_path(text: &str) -> Option<&str> {
    if let Some(rest) = text.strip_prefix(':') {
        let b = rest.as_bytes();
        if b.len() >= 2 && b[0].is_ascii_digit() && b[1] == b':' {
            return Some(&rest[2..]);
        }
        return Some(rest);
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => return Some(&text[i + 1..]),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::rev_path;

    #[test]
    fn the_path_of_rev_path_is_found_as_git_finds_it() {
        assert_eq!(rev_path("HEAD:a.txt"), Some("a.txt"));
        assert_eq!(rev_path("HEAD^{/x:./a}:.env"), Some(".env"));
        assert_eq!(rev_path("HEAD@{2099-01-01 00:00:00}:.env"), Some(".env"));
        assert_eq!(rev_path(":0:.env"), Some(".env"));
        assert_eq!(rev_path(":.env"), Some(".env"));
        assert_eq!(rev_path("HEAD~2"), None);
    }
}
