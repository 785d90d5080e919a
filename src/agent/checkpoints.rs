//! The agent's side of checkpoints: one before each turn and before each
//! shell command that may write, the rewind (code, conversation or both,
//! itself undoable) and the session diff. Git work runs on a blocking
//! thread; everything that happens goes out on the bus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::git::CheckpointId;

use super::Agent;
use crate::git::{self, Kind, PlannedChange, Store};
use crate::protocol::{
    AgentEvent, CheckpointInfo, CheckpointSummary, FileChange, Level, RewindMode,
};
use crate::session::{Record, SessionLog};

mod conversation;

/// How the label of the checkpoint taken after a `/commit` begins.
pub(super) const COMMITTED: &str = "committed ";

/// How long a checkpoint runs before mm looks for what may hold it: git
/// opens every `.gitignore` it meets, and one that is a FIFO waits for a
/// writer (a 10,000-file repository takes 0.2 s here).
const CHECKPOINT_STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// How many of the files a command changed the front ends are shown as
/// changes (all of them are in the receipt).
const SHOWN_CHANGES: usize = 50;

/// The longest mm waits for one checkpoint; it is skipped then, and the
/// next one is tried as usual.
const CHECKPOINT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs a closure on the store on a blocking thread.
pub(super) async fn with_store<T: Send + 'static>(
    store: &Arc<Mutex<Store>>,
    f: impl FnOnce(&mut Store) -> git::Result<T> + Send + 'static,
) -> Result<T, String> {
    let store = store.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let mut s = store
            .lock()
            .map_err(|_| "the checkpoint store is unusable".to_string())?;
        f(&mut s).map_err(|e| e.to_string())
    })
    .await;
    joined.map_err(|e| e.to_string())?
}

/// Like `with_store`, but never waits for a store another (stuck) call
/// holds.
async fn with_free_store<T: Send + 'static>(
    store: &Arc<Mutex<Store>>,
    f: impl FnOnce(&mut Store) -> git::Result<T> + Send + 'static,
) -> Result<T, String> {
    let store = store.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let mut s = match store.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err("the one before it is still being taken".to_string());
            }
            Err(std::sync::TryLockError::Poisoned(_)) => {
                return Err("the checkpoint store is unusable".to_string());
            }
        };
        f(&mut s).map_err(|e| e.to_string())
    })
    .await;
    joined.map_err(|e| e.to_string())?
}

/// The FIFOs in the work tree (not in `.git` folders), at most 1,000,000
/// entries looked at.
fn fifos(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > 1_000_000 {
                return out;
            }
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && e.file_name() != ".git" {
                stack.push(e.path());
            } else if t.is_fifo() {
                out.push(e.path());
            }
        }
    }
    out
}

/// Lets a reader blocked opening a FIFO go on: a writer opens it and
/// closes it at once (the reader sees an empty file). Without a reader
/// the open fails (ENXIO) and nothing happens.
fn release(fifo: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(fifo);
}

pub(super) fn parse_id(id: &str) -> Result<CheckpointId, String> {
    CheckpointId::parse(id).map_err(|e| e.to_string())
}

impl Agent {
    /// Tells the user; an error is also what the running op comes to.
    pub(super) fn git_notice(&mut self, level: Level, text: impl Into<String>) {
        let text = text.into();
        if level == Level::Error {
            self.op_error = Some(text.clone());
        }
        self.bus.publish(AgentEvent::Notice {
            turn: Some(self.turn),
            level,
            text,
        });
    }

    /// A warning about checkpoints, said once per session in these words.
    fn git_warn_once(&mut self, text: String) {
        if self.git_warned.insert(text.clone()) {
            self.git_notice(Level::Warning, text);
        }
    }

    /// The error the last checkpoint op ended with, if any.
    pub fn take_op_error(&mut self) -> Option<String> {
        self.op_error.take()
    }

    /// Takes a checkpoint; a turn checkpoint is recorded even when the
    /// work tree did not change (so every turn can be rewound to).
    pub(super) async fn checkpoint(&mut self, kind: Kind, label: &str) -> Option<CheckpointInfo> {
        self.checkpoint_with(kind, label, None).await
    }

    /// A checkpoint that also names the session holding the conversation
    /// as it is now (taken before a rewind of the conversation).
    async fn checkpoint_with(
        &mut self,
        kind: Kind,
        label: &str,
        conversation: Option<String>,
    ) -> Option<CheckpointInfo> {
        let store = self.git.clone()?;
        let turn = self.turn;
        let label_owned = label.to_string();
        let taking = with_free_store(&store, move |s| s.checkpoint(kind, turn, &label_owned));
        tokio::pin!(taking);
        let taken = match tokio::time::timeout(CHECKPOINT_STALL, &mut taking).await {
            Ok(t) => t,
            Err(_) => {
                // Still going: a FIFO where git opens files may hold it.
                // Each one found is let go, again and again, until the
                // checkpoint is done or the time is up.
                let root = self.tools.sandbox.root().to_path_buf();
                let found = tokio::task::spawn_blocking(move || fifos(&root))
                    .await
                    .unwrap_or_default();
                let releasing = async {
                    loop {
                        for f in &found {
                            release(f);
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                };
                let rest = CHECKPOINT_TIMEOUT.saturating_sub(CHECKPOINT_STALL);
                let taken = tokio::select! {
                    t = tokio::time::timeout(rest, &mut taking) => t.unwrap_or_else(|_| Err(format!(
                        "it took over {} s (the tree may be huge or deep)",
                        CHECKPOINT_TIMEOUT.as_secs()
                    ))),
                    () = releasing => Err("the checkpoint was given up".into()),
                };
                if !found.is_empty() {
                    let root = self.tools.sandbox.root().to_path_buf();
                    let names: Vec<String> = found
                        .iter()
                        .take(3)
                        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                        .collect();
                    self.git_warn_once(format!(
                        "checkpoints: {} FIFO(s) in the workspace ({}) held git; they are left out of checkpoints",
                        found.len(),
                        names.join(", ")
                    ));
                }
                taken
            }
        };
        match taken {
            Ok((oid, changed)) => {
                if !changed && kind == Kind::Command {
                    return None;
                }
                let info = CheckpointInfo {
                    id: oid.to_string(),
                    turn,
                    kind,
                    time: jiff::Timestamp::now().to_string(),
                    label: label
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect(),
                    conversation,
                };
                self.checkpoints.push(info.clone());
                if let Err(e) = self.log.append(&Record::Checkpoint {
                    checkpoint: info.clone(),
                }) {
                    self.git_notice(Level::Error, e.to_string());
                }
                self.bus.publish(AgentEvent::CheckpointCreated {
                    turn,
                    checkpoint: info.clone(),
                });
                Some(info)
            }
            // One checkpoint that could not be taken turns nothing off:
            // the next one is tried as usual.
            Err(e) => {
                self.git_warn_once(format!(
                    "a checkpoint was skipped: {e}; the next one is tried as usual"
                ));
                None
            }
        }
    }

    /// Notes what mm left a file as, changed from the state the last
    /// checkpoint holds.
    pub(super) fn record_made(
        &mut self,
        path: &str,
        blob: String,
    ) -> Result<(), crate::session::SessionError> {
        if self.made.get(path) == Some(&blob) {
            return Ok(());
        }
        let before = self.checkpoints.last().map(|c| c.id.clone());
        if let Some(b) = &before {
            self.made_from.note(path, b, &self.checkpoints);
        }
        self.made.insert(path.to_string(), blob.clone());
        self.log.append(&Record::Made {
            path: path.to_string(),
            blob,
            before,
        })
    }

    /// Each file's base for a rewind or diff from checkpoint number
    /// `from`: where mm first changed it since (None: mm has not, the
    /// file is the user's to keep).
    pub(super) fn bases(
        &self,
        from: usize,
    ) -> impl Fn(&str) -> Option<crate::git::CheckpointId> + Send + 'static {
        let made = self.made_from.clone();
        move |path| {
            made.base(path, from)
                .and_then(|id| crate::git::CheckpointId::parse(id).ok())
        }
    }

    /// The checkpoint chosen, and its place: the latest with this id, and
    /// of this turn when one is given.
    pub(super) fn chosen(&self, id: &str, turn: Option<u64>) -> Option<(usize, CheckpointInfo)> {
        let at = self
            .checkpoints
            .iter()
            .rposition(|c| c.id == id && turn.is_none_or(|t| c.turn == t))
            .or_else(|| self.checkpoints.iter().rposition(|c| c.id == id))?;
        Some((at, self.checkpoints[at].clone()))
    }

    /// The place of the latest checkpoint with this id (0 when none).
    pub(super) fn checkpoint_index(&self, id: &str) -> usize {
        self.checkpoints
            .iter()
            .rposition(|c| c.id == id)
            .unwrap_or(0)
    }

    /// The last checkpoint the store took.
    pub(super) async fn last_checkpoint(&self) -> Option<CheckpointId> {
        let store = self.git.clone()?;
        with_store(&store, |s| Ok(s.last_commit()))
            .await
            .ok()
            .flatten()
    }

    /// Notes what a command changed (between the checkpoints before and
    /// after it) as mm's doing, and tells the front ends, as a file tool's
    /// change is told (the first `SHOWN_CHANGES` text files, under the
    /// command's call).
    pub(super) async fn record_command_changes(
        &mut self,
        call_id: &str,
        before: Option<CheckpointId>,
    ) -> Result<Vec<String>, crate::session::SessionError> {
        let (Some(store), Some(before)) = (self.git.clone(), before) else {
            return Ok(Vec::new());
        };
        let Some(after) = self.last_checkpoint().await else {
            return Ok(Vec::new());
        };
        if after == before {
            return Ok(Vec::new());
        }
        let changed = with_store(&store, move |s| s.changes_between(before, after))
            .await
            .unwrap_or_default();
        // One write and one sync for them all: a command can make 100,000
        // files.
        let mut paths = Vec::with_capacity(changed.len());
        let mut records = Vec::new();
        let before_id = before.to_string();
        for (path, blob) in changed {
            if self.made.get(&path) != Some(&blob) {
                self.made_from.note(&path, &before_id, &self.checkpoints);
                self.made.insert(path.clone(), blob.clone());
                records.push(Record::Made {
                    path: path.clone(),
                    blob,
                    before: Some(before_id.clone()),
                });
            }
            paths.push(path);
        }
        self.log.append_all(&records)?;
        if !paths.is_empty() {
            let shown = with_store(&store, move |s| {
                s.text_changes_between(before, after, SHOWN_CHANGES)
            })
            .await
            .unwrap_or_default();
            for change in shown {
                self.bus.publish(AgentEvent::FileChanged {
                    turn: self.turn,
                    call_id: call_id.to_string(),
                    change: Arc::new(change),
                });
            }
        }
        Ok(paths)
    }

    /// Every checkpoint, most recent first, with what going back undoes.
    pub async fn list_checkpoints(&mut self) {
        let Some(store) = self.git.clone() else {
            self.git_notice(
                Level::Warning,
                "no checkpoints: they are off for this session",
            );
            return;
        };
        let infos: Vec<CheckpointInfo> = self.checkpoints.iter().rev().cloned().collect();
        // Each as a rewind to it would be planned: from its own place.
        let last = self.checkpoints.len().saturating_sub(1);
        let ids: Vec<(String, _)> = infos
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), self.bases(last - i)))
            .collect();
        let result = with_store(&store, move |s| {
            let mut out = Vec::new();
            for (id, base) in ids {
                let oid = CheckpointId::parse(&id)?;
                out.push(s.plan(oid, &HashMap::new(), &base)?.changes);
            }
            Ok(out)
        })
        .await;
        match result {
            Ok(plans) => {
                let list = infos
                    .into_iter()
                    .zip(plans)
                    .map(|(info, changes)| {
                        // What going back adds and removes, as its
                        // preview counts it (`backward` is already the
                        // change the rewind makes).
                        let counts = changes
                            .iter()
                            .map(PlannedChange::backward)
                            .fold((0, 0), |(a, r), c| (a + c.added, r + c.removed));
                        CheckpointSummary {
                            info,
                            files: changes.iter().map(|c| c.path.clone()).collect(),
                            added: counts.0,
                            removed: counts.1,
                        }
                    })
                    .collect();
                self.bus.publish(AgentEvent::Checkpoints { list });
            }
            Err(e) => self.git_notice(Level::Error, format!("cannot list checkpoints: {e}")),
        }
    }

    pub async fn preview_rewind(&mut self, id: &str, turn: Option<u64>) {
        let Some(store) = self.git.clone() else {
            return;
        };
        let oid = match parse_id(id) {
            Ok(o) => o,
            Err(e) => return self.git_notice(Level::Error, e),
        };
        let made = self.made.clone();
        let from = self.chosen(id, turn).map_or(0, |(i, _)| i);
        let base = self.bases(from);
        match with_store(&store, move |s| s.plan(oid, &made, &base)).await {
            Ok(plan) => self.bus.publish(AgentEvent::RewindPreview {
                id: id.to_string(),
                foreign: plan
                    .foreign()
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect(),
                changes: plan.changes.iter().map(PlannedChange::backward).collect(),
                left: plan.left.clone(),
            }),
            Err(e) => self.git_notice(Level::Error, format!("cannot preview the rewind: {e}")),
        }
    }

    /// Goes back to a checkpoint: the files, the conversation, or both.
    /// The files are first checkpointed themselves, so the rewind can be
    /// undone; files changed outside mm are only overwritten when confirmed.
    pub async fn rewind(&mut self, id: &str, turn: Option<u64>, mode: RewindMode, overwrite: bool) {
        // Checkpoints of an unchanged tree share an id: the turn says
        // which was chosen (without it, the latest of that id).
        let Some((_, target)) = self.chosen(id, turn) else {
            return self.git_notice(Level::Error, format!("no checkpoint {id} in this session"));
        };
        // The checkpoint before a rewind of the conversation names the log
        // that holds it whole: going back to that checkpoint undoes it.
        let holding = (mode != RewindMode::Code).then(|| self.log.id().to_string());
        let mut files_said = None;
        if mode == RewindMode::Conversation {
            let label = format!("before rewinding the conversation to turn {}", target.turn);
            self.checkpoint_with(Kind::Safety, &label, holding).await;
        } else {
            match self.rewind_files(&target, overwrite, holding).await {
                Some(said) => files_said = Some(said),
                None => return,
            }
        }
        if mode != RewindMode::Code {
            match &target.conversation {
                Some(session) if session != self.log.id() => {
                    self.restore_conversation(session.clone());
                }
                _ => self.trim_conversation(target.turn),
            }
        }
        // Said after the conversation's words: a front end that starts a
        // new transcript for the rewound conversation keeps it in view.
        if let Some(said) = files_said {
            self.git_notice(Level::Info, said);
        }
    }

    async fn rewind_files(
        &mut self,
        target: &CheckpointInfo,
        overwrite: bool,
        holding: Option<String>,
    ) -> Option<String> {
        let Some(store) = self.git.clone() else {
            self.git_notice(
                Level::Error,
                "checkpoints are off for this session: nothing to rewind to",
            );
            return None;
        };
        let oid = match parse_id(&target.id) {
            Ok(o) => o,
            Err(e) => {
                self.git_notice(Level::Error, e);
                return None;
            }
        };
        let made = self.made.clone();
        let from = self
            .chosen(&target.id, Some(target.turn))
            .map_or(0, |(i, _)| i);
        let base = self.bases(from);
        let plan = match with_store(&store, move |s| s.plan(oid, &made, &base)).await {
            Ok(p) => p,
            Err(e) => {
                self.git_notice(Level::Error, format!("cannot rewind: {e}"));
                return None;
            }
        };
        let unsaved = plan.unsaved();
        if !unsaved.is_empty() {
            self.git_notice(
                Level::Warning,
                format!(
                    "not rewound: no checkpoint holds what {} now ({} over {} MB or not a regular file), so a rewind would lose it; move {} out of the workspace and rewind again",
                    unsaved.join(", "),
                    if unsaved.len() == 1 { "it is:" } else { "they are:" },
                    crate::git::MAX_FILE_BYTES / (1024 * 1024),
                    if unsaved.len() == 1 { "it" } else { "them" }
                ),
            );
            return None;
        }
        let foreign = plan.foreign();
        if !foreign.is_empty() && !overwrite {
            self.git_notice(
                Level::Warning,
                format!(
                    "not rewound: {} changed since mm last left {}, not by mm (by you?); confirm to overwrite {}",
                    foreign.join(", "),
                    if foreign.len() == 1 { "it" } else { "them" },
                    if foreign.len() == 1 { "it" } else { "them" }
                ),
            );
            return None;
        }
        let results = plan.results();
        let left = plan.left.clone();
        let label = format!("before rewinding to turn {}", target.turn);
        self.checkpoint_with(Kind::Safety, &label, holding).await;
        let changes: Vec<FileChange> = plan.changes.iter().map(PlannedChange::backward).collect();
        if let Err(e) = with_store(&store, move |s| s.apply(&plan)).await {
            self.git_notice(Level::Error, format!("the rewind stopped half way: {e}; /rewind lists the safety checkpoint to go back"));
            return None;
        }
        if let Ok(mut reads) = self.tools.reads.lock() {
            // The model must read these files again before editing them.
            for c in &changes {
                reads.remove(&self.tools.sandbox.root().join(&c.path));
            }
        }
        for (path, blob) in results {
            if let Err(e) = self.record_made(&path, blob) {
                self.git_notice(Level::Error, e.to_string());
            }
        }
        for change in &changes {
            self.tell_lsp_restored(change).await;
            self.bus.publish(AgentEvent::FileChanged {
                turn: self.turn,
                call_id: format!("rewind-{}", target.id),
                change: Arc::new(change.clone()),
            });
        }
        let named = |deleted: bool| -> Vec<&str> {
            changes
                .iter()
                .filter(|c| (c.kind == crate::protocol::ChangeKind::Deleted) == deleted)
                .map(|c| c.path.as_str())
                .collect()
        };
        let (deleted, restored) = (named(true), named(false));
        let to = if target.kind == Kind::Safety {
            // Forward, to where a rewind started.
            format!("went back to the checkpoint {:?}", target.label)
        } else {
            format!("rewound to turn {}", target.turn)
        };
        let kept = if left.is_empty() {
            String::new()
        } else {
            format!(
                "; left as they are (mm did not change them): {}",
                left.join(", ")
            )
        };
        let said = match (deleted.is_empty(), restored.is_empty()) {
            (true, true) if !left.is_empty() => format!("{to}: mm changed no file since"),
            (true, true) => format!("{to}: no file differed"),
            (true, false) => format!("{to}: restored {}", restored.join(", ")),
            (false, true) => format!("{to}: deleted {}", deleted.join(", ")),
            (false, false) => format!(
                "{to}: deleted {}; restored {}",
                deleted.join(", "),
                restored.join(", ")
            ),
        };
        Some(format!("{said}{kept}"))
    }

    /// The language server hears of a file mm put back.
    pub(super) async fn tell_lsp_restored(&self, change: &FileChange) {
        if let Some(lsp) = self.tools.lsp.clone() {
            let path = self.tools.sandbox.root().join(&change.path);
            let text =
                (change.kind != crate::protocol::ChangeKind::Deleted).then_some(&*change.after);
            lsp.restored(&path, text).await;
        }
    }

    /// The checkpoint taken after the session's last `/commit` (a resumed
    /// session's too: its log has the checkpoints).
    pub fn last_commit_checkpoint(&self) -> Option<String> {
        self.checkpoints
            .iter()
            .rev()
            .find(|c| c.kind == Kind::Safety && c.label.starts_with(COMMITTED))
            .map(|c| c.id.clone())
    }

    /// The session's changes since its first checkpoint (or `from`).
    pub async fn session_diff(&mut self, from: Option<String>) {
        self.session_diff_of(from, true).await;
    }

    /// What the tree marks: the changes since the last `/commit` to files
    /// mm made (its tools, its commands), not those made beside it.
    pub async fn uncommitted_diff(&mut self) {
        let from = self.last_commit_checkpoint();
        self.session_diff_of(from, false).await;
    }

    async fn session_diff_of(&mut self, from: Option<String>, say_left: bool) {
        let Some(store) = self.git.clone() else {
            return self.git_notice(
                Level::Warning,
                "no session diff: checkpoints are off for this session",
            );
        };
        let Some(from) = from.or_else(|| self.checkpoints.first().map(|c| c.id.clone())) else {
            return self.git_notice(
                Level::Info,
                "no changes yet: the first checkpoint is taken when the first turn starts",
            );
        };
        let oid = match parse_id(&from) {
            Ok(o) => o,
            Err(e) => return self.git_notice(Level::Error, e),
        };
        let base = self.bases(self.checkpoint_index(&from));
        match with_store(&store, move |s| s.diff_since(oid, &base)).await {
            // The session's own changes: each file from where mm first
            // changed it; what the user did beside mm is not the session's.
            Ok(plan) => {
                if say_left && !plan.left.is_empty() {
                    self.git_notice(
                        Level::Info,
                        format!(
                            "not in the session's diff, changed beside mm: {}",
                            plan.left.join(", ")
                        ),
                    );
                }
                self.bus.publish(AgentEvent::SessionDiff {
                    from,
                    changes: plan.changes.iter().map(PlannedChange::forward).collect(),
                    left: plan.left,
                });
            }
            Err(e) => self.git_notice(
                Level::Error,
                format!("cannot compute the session diff: {e}"),
            ),
        }
    }
}
