//! Git checkpoints: the only module that touches git objects.
//!
//! A checkpoint is an unreferenced commit of the whole work tree, made the
//! way `git stash create` makes one but with untracked (not ignored) files
//! too: a private in-memory index filled from the work tree, a tree written
//! from it, a commit with HEAD as parent. No branch or tag moves, the real
//! index file is never written, the stash is never touched. A ref under
//! `refs/mm/checkpoints/<session>/<n>` keeps each one alive against
//! `git gc` (it shows in `git log --all`; `mm -prune` deletes old ones).
//!
//! Outside a git repository the same happens in a shadow repository kept
//! under the user's data directory, with the workspace as its work tree.
//! git2 calls block: callers run them on a blocking thread.

mod inspect;
mod restore;
mod snapshot;

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature};

use inspect::*;
pub use inspect::{
    RepoFacts, blocking_file, blocking_worktree_file, inspect, submodule_paths, work_tree_of,
};
pub use restore::{Plan, PlannedChange};

/// Files bigger than this are left out of checkpoints (and so never
/// restored or deleted by a rewind).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, GitError>;

/// A checkpoint (or a commit mm made) as the rest of mm names it: only
/// `git/` sees git2's ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CheckpointId(Oid);

impl CheckpointId {
    /// A checkpoint id from its hex form (as the session log keeps it).
    pub fn parse(hex: &str) -> Result<CheckpointId> {
        Oid::from_str(hex)
            .map(CheckpointId)
            .map_err(|_| GitError::Other(format!("{hex} is not a checkpoint id")))
    }
}

impl std::fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What kind of moment a checkpoint records.
pub use crate::protocol::CheckpointKind as Kind;

/// The checkpoints of one session in one workspace.
pub struct Store {
    repo: Repository,
    /// The workspace root.
    root: PathBuf,
    /// The workspace relative to the repository's work tree ("" when it is
    /// the whole work tree), `/`-separated with a trailing `/`.
    prefix: String,
    session: String,
    shadow: bool,
    /// The git dir found at the workspace that mm did not take for the
    /// workspace's own (see `owns`): checkpoints went to a shadow
    /// repository instead.
    passed_over: Option<PathBuf>,
    /// mm's own folder for this repository's bookkeeping (the shadow
    /// repositories' folder): nothing of mm's goes into a user's `.git`
    /// but refs.
    own: PathBuf,
    index: git2::Index,
    /// The last checkpoint commit and its tree: an unchanged work tree
    /// reuses it.
    last: Option<(Oid, Oid)>,
    count: u32,
}

// SAFETY: git2's `Index` is !Send only because it wraps a raw pointer.
// libgit2 objects may move between threads as long as no two threads use
// them at once. The index is owned by this `Store`, never handed out, and
// the agent only reaches a `Store` through a `Mutex`, one thread at a time.
#[allow(unsafe_code)] // the SAFETY note above says why
unsafe impl Send for Store {}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> GitError + '_ {
    move |source| GitError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether a folder below `dir` (an object fan-out folder, `refs/mm`) is
/// a link, or there are too many to look through; `deep`: at any depth
/// (refs), else only `dir`'s own entries (the fan-out folders, whose
/// objects are files git only ever adds).
fn links_below(dir: &Path, deep: bool) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > 100_000 {
                return true;
            }
            match e.file_type() {
                Ok(t) if t.is_symlink() => return true,
                Ok(t) if t.is_dir() && deep => stack.push(e.path()),
                _ => {}
            }
        }
    }
    false
}

/// Where shadow repositories live: `$XDG_DATA_HOME/mm/shadow` or
/// `~/.local/share/mm/shadow` (`MM_DATA_DIR` replaces `…/mm`).
pub fn shadow_dir() -> Option<PathBuf> {
    crate::config::data_dir().map(|d| d.join("shadow"))
}

/// The repository found from `root` is the workspace's own: its git
/// directory lies in the workspace or above it (the workspace is a folder
/// of the repository), or a `.git` file points at a linked worktree or a
/// submodule whose records point back here. A `.git` file that points at
/// some other repository (a planted one) is not followed: checkpoints
/// would write refs and objects into that repository.
fn owns(repo: &Repository, root: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let git_dir = canon(repo.path());
    // A git folder with a `commondir` (a worktree's, which lives in the
    // main repository's `worktrees/`) inside the workspace was planted:
    // checkpoints would be written to the repository it names.
    if git_dir.join("commondir").exists() && git_dir.starts_with(root) {
        return false;
    }
    // A git dir in the workspace is its `.git`, whose work tree is the
    // workspace: one under another name (the workspace itself laid out as
    // a git dir) or with a `core.worktree` elsewhere (a home folder) was
    // planted, and checkpoints would copy that work tree.
    if git_dir.starts_with(root) {
        let workdir = repo.workdir().map(canon);
        // Its objects and refs are where it is, not a link out of it:
        // checkpoints write there.
        let own = |name: &str| {
            std::fs::symlink_metadata(git_dir.join(name)).is_ok_and(|m| m.is_dir())
                && !links_below(&git_dir.join(name), name == "refs")
        };
        return git_dir == canon(&root.join(".git"))
            && workdir.as_deref() == Some(root)
            && own("objects")
            && own("refs");
    }
    let Some(workdir) = repo.workdir().map(canon) else {
        return false;
    };
    if !root.starts_with(&workdir) {
        // The repository's work tree is elsewhere.
        return false;
    }
    let dot_git = workdir.join(".git");
    if dot_git.is_dir() {
        // An ordinary repository whose folder the workspace is (or is in).
        return canon(&dot_git) == git_dir;
    }
    if !dot_git.is_file() {
        return false;
    }
    // A linked worktree: its git dir says where its `.git` file is.
    if let Some(back) = small_text(&git_dir.join("gitdir")) {
        return canon(Path::new(back.trim())) == canon(&dot_git);
    }
    // A submodule checkout: its git dir's config names this work tree.
    repo.config()
        .ok()
        .and_then(|c| c.get_string("core.worktree").ok())
        .is_some_and(|w| canon(&git_dir.join(w)) == workdir)
}

/// The highest checkpoint number a session already has.
fn last_number(repo: &Repository, session: &str) -> Result<u32> {
    let mut max = 0;
    for r in repo.references_glob(&format!("refs/mm/checkpoints/{session}/*"))? {
        let r = r?;
        if let Some(n) = r
            .name()
            .ok()
            .and_then(|n| n.rsplit('/').next())
            .and_then(|n| n.parse::<u32>().ok())
        {
            max = max.max(n);
        }
    }
    Ok(max)
}

/// The git blob id of some content: what mm made of a file, compared
/// later with the file's entry in a checkpoint.
pub fn blob_id(content: &[u8]) -> String {
    Oid::hash_object(git2::ObjectType::Blob, content)
        .map(|o| o.to_string())
        .unwrap_or_default()
}

fn path_key(root: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    let name: String = root
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        })
        .unwrap_or_default();
    format!("{name}-{:016x}", h.finish())
}

impl Store {
    /// Opens the repository that holds `root` (or its shadow repository).
    pub fn open(root: &Path, session: &str) -> Result<Store> {
        let shadows = shadow_dir()
            .ok_or_else(|| GitError::Other("no HOME: nowhere to keep checkpoints".into()))?;
        Self::open_in(root, session, &shadows)
    }

    /// Like `open`, with shadow repositories kept under `shadows`.
    pub fn open_in(root: &Path, session: &str, shadows: &Path) -> Result<Store> {
        let root = std::fs::canonicalize(root).map_err(io_err(root))?;
        // A repository with a file that would block libgit2 (a FIFO for
        // `packed-refs`) is not opened: checkpoints go to a shadow one.
        if blocking_file(&root).is_some() {
            let found = git_would_open(&root).unwrap_or_else(|| root.join(".git"));
            return Self::finish_open(
                Self::open_shadow(&root, shadows)?,
                root,
                session,
                shadows,
                true,
                Some(found),
            );
        }
        let (repo, shadow, passed_over) = match Repository::discover(&root) {
            Ok(r) if !r.is_bare() && r.workdir().is_some() && owns(&r, &root) => (r, false, None),
            Ok(r) => {
                let found = r.path().to_path_buf();
                (Self::open_shadow(&root, shadows)?, true, Some(found))
            }
            Err(_) => (Self::open_shadow(&root, shadows)?, true, None),
        };
        Self::finish_open(repo, root, session, shadows, shadow, passed_over)
    }

    fn finish_open(
        repo: Repository,
        root: PathBuf,
        session: &str,
        shadows: &Path,
        shadow: bool,
        passed_over: Option<PathBuf>,
    ) -> Result<Store> {
        let workdir = repo
            .workdir()
            .map(|w| std::fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf()))
            .ok_or_else(|| GitError::Other("the repository has no work tree".into()))?;
        let prefix = match root.strip_prefix(&workdir) {
            Ok(p) if p.as_os_str().is_empty() => String::new(),
            Ok(p) => format!("{}/", p.to_string_lossy().replace('\\', "/")),
            Err(_) => String::new(),
        };
        // A private index: a copy of the real one (its stat data makes the
        // first snapshot cheap); the real index file is only ever read.
        let mut index = git2::Index::new()?;
        if !shadow && let Ok(real) = repo.index() {
            for entry in real.iter() {
                if entry.flags & 0x3000 == 0 {
                    // Stage 0 only: conflicted entries are taken from the work tree.
                    index.add(&entry)?;
                }
            }
        }
        repo.set_index(&mut index)?;
        // A resumed session numbers on from its last checkpoint: an
        // overwritten ref once let `git gc` delete turn 1 (issue 9).
        let count = last_number(&repo, session)?;
        Ok(Store {
            repo,
            root,
            prefix,
            session: session.to_string(),
            shadow,
            passed_over,
            own: shadows.to_path_buf(),
            index,
            last: None,
            count,
        })
    }

    /// The repository found at the workspace that checkpoints do not go
    /// to (a planted one, one whose work tree is elsewhere), if any.
    pub fn passed_over(&self) -> Option<&Path> {
        self.passed_over.as_deref()
    }

    /// Takes up from a checkpoint of an earlier run of this session: an
    /// unchanged work tree reuses it.
    pub fn resume_at(&mut self, commit: CheckpointId) -> Result<()> {
        let commit = commit.0;
        let tree = self.tree_of(commit)?.id();
        self.last = Some((commit, tree));
        Ok(())
    }

    /// The last checkpoint taken (or resumed at).
    pub fn last_commit(&self) -> Option<CheckpointId> {
        self.last.map(|(c, _)| CheckpointId(c))
    }

    fn open_shadow(root: &Path, shadows: &Path) -> Result<Repository> {
        let dir = shadows.join(format!("{}.git", path_key(root)));
        let repo = match Repository::open_bare(&dir) {
            Ok(r) => r,
            Err(_) => {
                std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
                let r = Repository::init_bare(&dir)?;
                let info = dir.join("info");
                std::fs::create_dir_all(&info).map_err(io_err(&info))?;
                // mm's own files stay out of the snapshots.
                std::fs::write(info.join("exclude"), ".mm/\n.git/\n").map_err(io_err(&info))?;
                std::fs::write(dir.join("mm-workspace"), root.to_string_lossy().as_bytes())
                    .map_err(io_err(&dir))?;
                r
            }
        };
        repo.set_workdir(root, false)?;
        Ok(repo)
    }

    pub fn is_shadow(&self) -> bool {
        self.shadow
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn signature(&self) -> Result<Signature<'static>> {
        Ok(Signature::now("mm", "mm@localhost")?)
    }

    fn head_commit(&self) -> Option<git2::Commit<'_>> {
        self.repo.head().ok()?.peel_to_commit().ok()
    }

    /// Takes a checkpoint and keeps it alive with a ref. Returns the commit
    /// id and whether the work tree had changed since the last one.
    pub fn checkpoint(
        &mut self,
        kind: Kind,
        turn: u64,
        label: &str,
    ) -> Result<(CheckpointId, bool)> {
        self.checkpoint_oid(kind, turn, label)
            .map(|(id, changed)| (CheckpointId(id), changed))
    }

    fn checkpoint_oid(&mut self, kind: Kind, turn: u64, label: &str) -> Result<(Oid, bool)> {
        let tree = self.snapshot_tree()?;
        // An unchanged tree reuses the last checkpoint; a safety checkpoint
        // is always its own (it names the conversation it keeps, and a
        // rewind finds it by id).
        if let Some((commit, last_tree)) = self.last
            && last_tree == tree
            && kind != Kind::Safety
        {
            return Ok((commit, false));
        }
        let first_line = label
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(72)
            .collect::<String>();
        let message = format!(
            "mm checkpoint ({kind:?}, turn {turn}): {first_line}\n\nsession {}\n",
            self.session
        );
        let commit = {
            let sig = self.signature()?;
            let tree_obj = self.repo.find_tree(tree)?;
            let head = self.head_commit();
            let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
            self.repo
                .commit(None, &sig, &sig, &message, &tree_obj, &parents)?
        };
        // Never force: a ref that exists is another checkpoint to keep.
        loop {
            self.count += 1;
            let name = format!("refs/mm/checkpoints/{}/{:04}", self.session, self.count);
            match self.repo.reference(&name, commit, false, "mm checkpoint") {
                Ok(_) => break,
                Err(e) if e.code() == git2::ErrorCode::Exists => continue,
                Err(e) => return Err(e.into()),
            }
        }
        self.last = Some((commit, tree));
        Ok((commit, true))
    }

    /// The tree of a checkpoint commit.
    fn tree_of(&self, commit: Oid) -> Result<git2::Tree<'_>> {
        Ok(self.repo.find_commit(commit)?.tree()?)
    }

    /// Stages `paths` (workspace-relative; deleted files are removed) in
    /// the real index and commits them on the current branch. This is the
    /// one place mm writes the user's index, because the user asked to.
    pub fn commit_paths(&self, paths: &[String], message: &str) -> Result<CheckpointId> {
        self.commit_paths_oid(paths, message).map(CheckpointId)
    }

    fn commit_paths_oid(&self, paths: &[String], message: &str) -> Result<Oid> {
        if self.shadow {
            return Err(GitError::Other(
                "the workspace is not a git repository".into(),
            ));
        }
        let repo = Repository::open(self.repo.path())?;
        if repo.state() != git2::RepositoryState::Clean {
            return Err(GitError::Other(format!(
                "the repository is in the middle of a {:?}; finish it with git first",
                repo.state()
            )));
        }
        let mut index = repo.index()?;
        if index.has_conflicts() {
            return Err(GitError::Other(
                "the index has conflicts; resolve them with git first".into(),
            ));
        }
        let workdir = repo
            .workdir()
            .map(Path::to_path_buf)
            .ok_or_else(|| GitError::Other("no work tree".into()))?;
        for p in paths {
            // Never through a link out of the workspace (the file it
            // reaches is not the project's), never a credential.
            if let Err(e) = crate::paths::resolve(&self.root, p) {
                return Err(GitError::Other(format!("not committed: {e}")));
            }
            if let Some(why) = crate::paths::credential_reason(p) {
                return Err(GitError::Other(format!("not committed: {why}")));
            }
            let rel = format!("{}{p}", self.prefix);
            if workdir.join(&rel).exists() {
                index.add_path(Path::new(&rel))?;
            } else {
                let _ = index.remove_path(Path::new(&rel));
            }
        }
        index.write()?;
        // The commit's tree is HEAD's with the session's files as the index
        // now has them (filters applied), and nothing else: what the user
        // staged of their own stays staged, not committed.
        let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let mut tree_index = git2::Index::new()?;
        if let Some(h) = &head {
            tree_index.read_tree(&h.tree()?)?;
        }
        for p in paths {
            let rel = format!("{}{p}", self.prefix);
            match index.get_path(Path::new(&rel), 0) {
                Some(entry) => tree_index.add(&entry)?,
                None => {
                    let _ = tree_index.remove_path(Path::new(&rel));
                }
            }
        }
        let tree = repo.find_tree(tree_index.write_tree_to(&repo)?)?;
        let sig = repo
            .signature()
            .or_else(|_| Signature::now("mm", "mm@localhost"))?;
        let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
        Ok(repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)?)
    }

    /// The session whose newest checkpoint is the newest of all (by its
    /// commit's time): read from the refs, not from the session logs in
    /// `.mm/sessions`, which a repository can bring with it.
    pub fn newest_session(&self) -> Result<Option<String>> {
        let mut best: Option<(i64, String)> = None;
        // A checkpoint from the future was not made by mm (a ref written
        // with a planted date): mm dates its own by this machine's clock,
        // so a minute's leeway is enough.
        let now = jiff::Timestamp::now().as_second() + 60;
        for r in self.repo.references_glob("refs/mm/checkpoints/*")? {
            let r = r?;
            let Ok(name) = r.name() else { continue };
            let session = name
                .trim_start_matches("refs/mm/checkpoints/")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string();
            let Ok(commit) = r.peel_to_commit() else {
                continue;
            };
            let t = commit.time().seconds();
            if t > now {
                continue;
            }
            if best.as_ref().is_none_or(|(b, _)| t > *b) {
                best = Some((t, session));
            }
        }
        Ok(best.map(|(_, s)| s))
    }

    /// Deletes the checkpoint refs of every session but `keep`; returns
    /// how many went.
    pub fn prune(&self, keep: &[&str]) -> Result<usize> {
        self.prune_where(|session| !keep.contains(&session))
    }

    /// Deletes the checkpoint refs of sessions whose id (a UTC time,
    /// `YYYYMMDD-HHMMSS-…`) is older than `days` days. Once a day per
    /// repository (a file in mm's own folder holds the day, never in the
    /// user's `.git`): reading every checkpoint ref took a tenth of a
    /// headless run's start.
    pub fn prune_older_than(&self, days: u64) -> Result<usize> {
        let stamp = self.pruned_stamp();
        let day = jiff::Timestamp::now().strftime("%Y%m%d").to_string();
        if std::fs::read_to_string(&stamp).is_ok_and(|d| d.trim() == day) {
            return Ok(0);
        }
        let Ok(today) = jiff::civil::Date::strptime("%Y%m%d", &day) else {
            return Ok(0);
        };
        let _ = std::fs::create_dir_all(&self.own);
        let _ = std::fs::write(&stamp, &day);
        let own = self.session.clone();
        self.prune_where(|session| {
            if session == own {
                // The session that is open keeps its checkpoints.
                return false;
            }
            let then = session
                .get(..8)
                .and_then(|d| jiff::civil::Date::strptime("%Y%m%d", d).ok());
            match then.and_then(|t| today.since(t).ok()) {
                Some(span) => span.get_days() as u64 > days,
                None => false,
            }
        })
    }

    /// Where the day of the last pruning is kept for this repository.
    pub fn pruned_stamp(&self) -> PathBuf {
        self.own
            .join(format!("{}.pruned", path_key(self.repo.path())))
    }

    fn prune_where(&self, remove: impl Fn(&str) -> bool) -> Result<usize> {
        let mut names = Vec::new();
        for r in self.repo.references_glob("refs/mm/checkpoints/*")? {
            let r = r?;
            if let Ok(name) = r.name() {
                let session = name
                    .trim_start_matches("refs/mm/checkpoints/")
                    .split('/')
                    .next()
                    .unwrap_or("");
                if remove(session) {
                    names.push(name.to_string());
                }
            }
        }
        for n in &names {
            self.repo.find_reference(n)?.delete()?;
        }
        Ok(names.len())
    }
}

#[cfg(test)]
mod tests;
