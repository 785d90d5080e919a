//! Rewinding the work tree to a checkpoint, and the session's diff. A
//! rewind is planned first (what each file would become, which files
//! are no longer as mm left them), shown, then applied.
//! Ignored files and files left out of snapshots are never touched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use git2::{Delta, DiffOptions, ObjectType, Oid};

use crate::protocol::{ChangeKind, FileChange};

use super::{CheckpointId, GitError, Result, Store, io_err};

/// What a rewind (or the session diff) does to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedChange {
    /// Relative to the workspace root.
    pub path: String,
    /// The file now (empty when it does not exist).
    pub now: String,
    /// The file at the checkpoint (empty when it did not exist).
    pub then: String,
    pub exists_now: bool,
    pub existed_then: bool,
    /// Not as mm last left it (the user, or something mm did not run,
    /// changed it, in this session or between sessions): a rewind asks,
    /// naming the file, before overwriting.
    pub foreign: bool,
    /// What the file is now is in no checkpoint (it is over the size limit,
    /// or not a regular file): a rewind would lose it, so it refuses.
    pub unsaved: bool,
    pub binary: bool,
    /// The file mode at the checkpoint (to restore the executable bit).
    mode: u32,
    blob: Option<Oid>,
}

impl PlannedChange {
    /// The change as the session made it: from then to now (`/diff`).
    pub fn forward(&self) -> FileChange {
        let (added, removed) = crate::diff::line_counts(&self.then, &self.now);
        FileChange {
            path: self.path.clone(),
            kind: match (self.existed_then, self.exists_now) {
                (false, true) => ChangeKind::Created,
                (true, false) => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            },
            before: Arc::from(self.then.as_str()),
            after: Arc::from(self.now.as_str()),
            added,
            removed,
        }
    }

    /// The change a rewind makes: from now back to then.
    pub fn backward(&self) -> FileChange {
        let (added, removed) = crate::diff::line_counts(&self.now, &self.then);
        FileChange {
            path: self.path.clone(),
            kind: match (self.exists_now, self.existed_then) {
                (true, false) => ChangeKind::Deleted,
                (false, true) => ChangeKind::Created,
                _ => ChangeKind::Modified,
            },
            before: Arc::from(self.now.as_str()),
            after: Arc::from(self.then.as_str()),
            added,
            removed,
        }
    }
}

/// A rewind worked out and not yet applied.
#[derive(Clone, Debug)]
pub struct Plan {
    pub target: CheckpointId,
    pub changes: Vec<PlannedChange>,
    /// Files that differ from the checkpoint but mm has not changed since
    /// it: the user's, left as they are.
    pub left: Vec<String>,
}

impl Plan {
    pub fn foreign(&self) -> Vec<&str> {
        self.changes
            .iter()
            .filter(|c| c.foreign)
            .map(|c| c.path.as_str())
            .collect()
    }

    pub fn unsaved(&self) -> Vec<&str> {
        self.changes
            .iter()
            .filter(|c| c.unsaved)
            .map(|c| c.path.as_str())
            .collect()
    }

    /// What each file will hold once the plan is applied: its blob id,
    /// "" for a file the rewind deletes.
    pub fn results(&self) -> Vec<(String, String)> {
        self.changes
            .iter()
            .map(|c| {
                let id = c.blob.map(|o| o.to_string()).unwrap_or_default();
                (c.path.clone(), id)
            })
            .collect()
    }
}

/// The repository path a diff entry is about (the new side's, else the
/// old side's), with `/` separators.
fn delta_path(d: &git2::DiffDelta<'_>) -> String {
    d.new_file()
        .path()
        .or_else(|| d.old_file().path())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default()
}

/// The largest file whose change a command's work shows in full.
const SHOWN_MAX: usize = 512 * 1024;

fn text_of(bytes: &[u8]) -> (String, bool) {
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return (String::new(), true);
    }
    (String::from_utf8_lossy(bytes).into_owned(), false)
}

impl Store {
    /// The workspace-relative form of a repository path (None: outside).
    fn rel(&self, repo_path: &str) -> Option<String> {
        repo_path.strip_prefix(&self.prefix).map(str::to_string)
    }

    /// The diff of two trees, limited to the workspace, submodules left out.
    fn tree_diff(&self, a: &git2::Tree<'_>, b: &git2::Tree<'_>) -> Result<git2::Diff<'_>> {
        let mut opts = DiffOptions::new();
        if !self.prefix.is_empty() {
            opts.pathspec(&self.prefix);
        }
        opts.ignore_submodules(true);
        Ok(self
            .repo
            .diff_tree_to_tree(Some(a), Some(b), Some(&mut opts))?)
    }

    /// Paths that differ between two trees, inside the workspace.
    fn changed_paths(&self, from: Oid, to: Oid) -> Result<Vec<(String, Delta)>> {
        let diff = self.tree_diff(&self.repo.find_tree(from)?, &self.repo.find_tree(to)?)?;
        let mut out = Vec::new();
        for d in diff.deltas() {
            let path = delta_path(&d);
            if let Some(rel) = self.rel(&path) {
                out.push((rel, d.status()));
            }
        }
        Ok(out)
    }

    fn entry(&self, tree: Oid, rel: &str) -> Option<(Oid, u32)> {
        let tree = self.repo.find_tree(tree).ok()?;
        let e = tree
            .get_path(Path::new(&format!("{}{rel}", self.prefix)))
            .ok()?;
        (e.kind() == Some(ObjectType::Blob)).then(|| (e.id(), e.filemode() as u32))
    }

    fn blob_text(&self, oid: Oid) -> (String, bool) {
        match self.repo.find_blob(oid) {
            Ok(b) => text_of(b.content()),
            Err(_) => (String::new(), false),
        }
    }

    /// What going back to `target` would do, against the work tree now.
    /// `made`: what mm last made of each file it changed (its blob id, ""
    /// for a file it deleted), from the session log; a file that is not as
    /// mm left it is foreign. `base`: for each file that differs, the
    /// checkpoint to take it back to (where mm first changed it since
    /// `target`), or None to leave it as it is (mm has not changed it:
    /// the user's own work); those are `Plan::left`.
    pub fn plan(
        &mut self,
        target: CheckpointId,
        made: &HashMap<String, String>,
        base: &dyn Fn(&str) -> Option<CheckpointId>,
    ) -> Result<Plan> {
        let (id, target) = (target, target.0);
        let now = self.snapshot_tree()?;
        let target_tree = self.tree_of(target)?.id();
        let mut changes = Vec::new();
        let mut left = Vec::new();
        let mut trees: HashMap<Oid, Oid> = HashMap::new();
        for (path, _) in self.changed_paths(target_tree, now)? {
            let Some(from) = base(&path) else {
                left.push(path);
                continue;
            };
            let from_tree = match trees.get(&from.0) {
                Some(t) => *t,
                None => {
                    let t = self.tree_of(from.0)?.id();
                    trees.insert(from.0, t);
                    t
                }
            };
            let then = self.entry(from_tree, &path);
            let cur = self.entry(now, &path);
            if then == cur {
                continue;
            }
            let (now_text, now_bin) = cur.map(|(o, _)| self.blob_text(o)).unwrap_or_default();
            let (then_text, then_bin) = then.map(|(o, _)| self.blob_text(o)).unwrap_or_default();
            // The snapshot left the file out (too big, not a regular file):
            // the tree holds an older version, the disk one no checkpoint.
            let unsaved = left_out(&self.root.join(&path));
            let state = cur.map(|(o, _)| o.to_string()).unwrap_or_default();
            changes.push(PlannedChange {
                foreign: unsaved || made.get(&path) != Some(&state),
                unsaved,
                binary: now_bin || then_bin,
                exists_now: cur.is_some(),
                existed_then: then.is_some(),
                now: now_text,
                then: then_text,
                mode: then.map(|(_, m)| m).unwrap_or(0o100644),
                blob: then.map(|(o, _)| o),
                path,
            });
        }
        Ok(Plan {
            target: id,
            changes,
            left,
        })
    }

    /// What each file that differs between two checkpoints became in the
    /// second: (path, blob id, "" when it is gone).
    pub fn changes_between(
        &self,
        from: CheckpointId,
        to: CheckpointId,
    ) -> Result<Vec<(String, String)>> {
        let diff = self.tree_diff(&self.tree_of(from.0)?, &self.tree_of(to.0)?)?;
        // The diff holds each new blob's id: no lookup per path (100,000
        // of them read the same trees again and again).
        let mut out = Vec::new();
        for d in diff.deltas() {
            let path = delta_path(&d);
            let Some(rel) = self.rel(&path) else {
                continue;
            };
            let blob = d.status() != Delta::Deleted
                && matches!(
                    d.new_file().mode(),
                    git2::FileMode::Blob | git2::FileMode::BlobExecutable | git2::FileMode::Link
                );
            let id = if blob {
                d.new_file().id().to_string()
            } else {
                String::new()
            };
            out.push((rel, id));
        }
        Ok(out)
    }

    /// The text files that differ between two checkpoints, as changes the
    /// front ends can show (a command's work in the live diff pane and
    /// the tree): at most `limit` of them; binary files and files over
    /// `SHOWN_MAX` bytes are left out.
    pub fn text_changes_between(
        &self,
        from: CheckpointId,
        to: CheckpointId,
        limit: usize,
    ) -> Result<Vec<FileChange>> {
        let diff = self.tree_diff(&self.tree_of(from.0)?, &self.tree_of(to.0)?)?;
        let mut out = Vec::new();
        for d in diff.deltas() {
            if out.len() >= limit {
                break;
            }
            let path = delta_path(&d);
            let Some(path) = self.rel(&path) else {
                continue;
            };
            let blob = |f: git2::DiffFile<'_>| {
                let file = matches!(
                    f.mode(),
                    git2::FileMode::Blob | git2::FileMode::BlobExecutable
                );
                (file && !f.id().is_zero()).then(|| f.id())
            };
            let (old, new) = (blob(d.old_file()), blob(d.new_file()));
            let (Some(before), Some(after)) = (self.shown_text(old), self.shown_text(new)) else {
                continue;
            };
            let (added, removed) = crate::diff::line_counts(&before, &after);
            out.push(FileChange {
                path,
                kind: match (old.is_some(), new.is_some()) {
                    (false, _) => ChangeKind::Created,
                    (true, false) => ChangeKind::Deleted,
                    (true, true) => ChangeKind::Modified,
                },
                before: Arc::from(before),
                after: Arc::from(after),
                added,
                removed,
            });
        }
        Ok(out)
    }

    /// A blob's text for a shown change ("" for no blob); None when it is
    /// binary, too big or unreadable.
    fn shown_text(&self, oid: Option<Oid>) -> Option<String> {
        let Some(oid) = oid else {
            return Some(String::new());
        };
        let blob = self.repo.find_blob(oid).ok()?;
        if blob.size() > SHOWN_MAX {
            return None;
        }
        match text_of(blob.content()) {
            (_, true) => None,
            (text, false) => Some(text),
        }
    }

    /// The changes from a checkpoint to the work tree now, each file from
    /// its `base` (see `plan`); the files left out are `Plan::left`.
    pub fn diff_since(
        &mut self,
        from: CheckpointId,
        base: &dyn Fn(&str) -> Option<CheckpointId>,
    ) -> Result<Plan> {
        self.plan(from, &HashMap::new(), base)
    }

    /// Puts the files of a plan back as they were at its checkpoint. A
    /// plan with a file no checkpoint holds is refused whole: nothing is
    /// written.
    pub fn apply(&mut self, plan: &Plan) -> Result<()> {
        let unsaved = plan.unsaved();
        if !unsaved.is_empty() {
            return Err(GitError::Other(format!(
                "{} would be lost: no checkpoint holds what {} now",
                unsaved.join(", "),
                if unsaved.len() == 1 {
                    "it is"
                } else {
                    "they are"
                }
            )));
        }
        // Deletions first (a link made since the checkpoint goes before
        // files are written where it was), then writes. Every path is
        // checked as it is used: one that leads through a symlink out of
        // the workspace stops the rewind before anything is written there.
        // A path that leads, through a link made inside the workspace, into
        // git's or mm's own folders (`a -> .git/hooks`) stops it too: a
        // hook written there would run outside the fence.
        let escapes = |rel: &str| match crate::paths::resolve(&self.root, rel) {
            Err(e) => Some(GitError::Other(format!("the rewind stopped at {rel}: {e}"))),
            Ok(r) => crate::paths::reserved_reason(&r.rel, true)
                .or_else(|| crate::paths::git_layout_reason(&self.root, &r.rel))
                .map(|why| GitError::Other(format!("the rewind stopped at {rel}: {why}"))),
        };
        for c in plan.changes.iter().filter(|c| c.blob.is_none()) {
            let parent = Path::new(&c.path)
                .parent()
                .map(|p| p.to_string_lossy().into_owned());
            if let Some(e) = parent.filter(|p| !p.is_empty()).and_then(|p| escapes(&p)) {
                return Err(e);
            }
            remove_file_and_empty_dirs(&self.root.join(&c.path), &self.root)?;
        }
        for c in &plan.changes {
            let Some(oid) = c.blob else { continue };
            if let Some(e) = escapes(&c.path) {
                return Err(e);
            }
            let blob = self.repo.find_blob(oid)?;
            write_file(&self.root.join(&c.path), blob.content(), c.mode)?;
        }
        // The work tree is the target's again: changes from here on are
        // measured against it, not taken for changes made outside mm.
        let tree = self.tree_of(plan.target.0)?.id();
        self.last = Some((plan.target.0, tree));
        Ok(())
    }
}

/// A file checkpoints leave out (over the size limit, or not a regular
/// file or symlink): what it holds now is in no checkpoint.
fn left_out(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => m.len() > super::MAX_FILE_BYTES,
        Ok(m) => !m.file_type().is_symlink() && !m.is_dir(),
        Err(_) => false,
    }
}

fn write_file(path: &Path, content: &[u8], mode: u32) -> Result<()> {
    if mode == 0o120000 {
        // A symlink: its blob is the target.
        let target = PathBuf::from(String::from_utf8_lossy(content).into_owned());
        return crate::paths::symlink_checked(&target, path).map_err(io_err(path));
    }
    let perm = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
    crate::paths::write_checked(path, content, Some(perm)).map_err(io_err(path))
}

fn remove_file_and_empty_dirs(path: &Path, root: &Path) -> Result<()> {
    match crate::paths::remove_checked(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path)(e)),
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) {
            break;
        }
        if std::fs::remove_dir(d).is_err() {
            break; // not empty
        }
        dir = d.parent();
    }
    Ok(())
}
