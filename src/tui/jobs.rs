//! Work the UI task must not wait for: reading a file for the viewer and
//! walking the workspace for the tree's filter and `@` completion. Each
//! runs on its own thread and reports on a channel the event loop
//! selects on. A read fills only a viewer of its path that still waits
//! (so an older read never overwrites a newer one); one walk serves every
//! asker, and a walk from before the workspace changed (a rewind) is
//! dropped.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

/// Bytes the viewer shows of a file, at most.
pub const MAX_VIEW_BYTES: u64 = 4 * 1024 * 1024;

/// A finished job.
#[derive(Debug)]
pub enum JobDone {
    /// A file for the viewer, as text to show.
    File { path: String, text: String },
    /// A file a live diff preview starts from (None: there is none).
    Current {
        call_id: String,
        path: String,
        text: Option<String>,
    },
    /// This workspace's sessions, most recent first (`/sessions`).
    Sessions {
        list: Vec<crate::session::SessionInfo>,
    },
    /// Every file of the workspace (capped), relative, `/`-separated, as
    /// walk number `generation` found it.
    Index { files: Vec<String>, generation: u64 },
    /// Entries were made, removed or renamed in these watched folders
    /// (relative, "" the top), by anyone.
    Changed { dirs: Vec<String> },
}

pub struct Jobs {
    root: PathBuf,
    tx: mpsc::UnboundedSender<JobDone>,
    rx: Option<mpsc::UnboundedReceiver<JobDone>>,
    indexing: bool,
    /// Walks started; only the latest one's list is current.
    generation: u64,
    /// Jobs started and not yet reported.
    running: Arc<AtomicUsize>,
    /// Watches the folders the tree shows (not recursively), so files
    /// made or removed outside mm appear at once.
    watcher: Option<notify::RecommendedWatcher>,
    watched: std::collections::BTreeSet<String>,
    /// The system would not watch (no inotify): not tried again.
    unwatchable: bool,
}

impl Jobs {
    pub fn new(root: PathBuf) -> Jobs {
        let (tx, rx) = mpsc::unbounded_channel();
        Jobs {
            root,
            tx,
            rx: Some(rx),
            indexing: false,
            generation: 0,
            running: Arc::default(),
            watcher: None,
            watched: Default::default(),
            unwatchable: false,
        }
    }

    /// Watches exactly these folders (relative, "" the top).
    pub fn watch(&mut self, dirs: &std::collections::BTreeSet<String>) {
        use notify::Watcher;
        if self.unwatchable || self.watched == *dirs {
            return;
        }
        if self.watcher.is_none() {
            let (tx, root) = (self.tx.clone(), self.root.clone());
            let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                use notify::EventKind;
                use notify::event::ModifyKind;
                let Ok(ev) = res else { return };
                // Opens, reads and writes inside a file do not change the
                // tree (inotify's first event is often an open).
                if !matches!(
                    ev.kind,
                    EventKind::Create(_)
                        | EventKind::Remove(_)
                        | EventKind::Modify(ModifyKind::Name(_))
                ) {
                    return;
                }
                let dirs: Vec<String> = ev
                    .paths
                    .iter()
                    .filter_map(|p| p.parent()?.strip_prefix(&root).ok())
                    .map(|d| d.to_string_lossy().replace('\\', "/"))
                    .collect();
                if !dirs.is_empty() {
                    let _ = tx.send(JobDone::Changed { dirs });
                }
            });
            match made {
                Ok(w) => self.watcher = Some(w),
                Err(e) => {
                    tracing::info!(error = %e, "the workspace cannot be watched");
                    self.unwatchable = true;
                    return;
                }
            }
        }
        let Some(w) = self.watcher.as_mut() else {
            return;
        };
        for gone in self.watched.difference(dirs) {
            let _ = w.unwatch(&self.root.join(gone));
        }
        for new in dirs.difference(&self.watched) {
            // A folder that is gone by now is simply not watched.
            let _ = w.watch(&self.root.join(new), notify::RecursiveMode::NonRecursive);
        }
        self.watched = dirs.clone();
    }

    /// Whether a job is still running (tests wait for them).
    pub fn busy(&self) -> bool {
        self.running.load(Ordering::SeqCst) > 0
    }

    /// The receiving end, for the event loop (taken once).
    pub fn take_receiver(&mut self) -> Option<mpsc::UnboundedReceiver<JobDone>> {
        self.rx.take()
    }

    /// Reads a file for the viewer.
    pub fn read_file(&mut self, rel: &str) {
        let (tx, root, rel) = (self.tx.clone(), self.root.clone(), rel.to_string());
        let running = self.started();
        std::thread::spawn(move || {
            let text = view_text(&root, &rel);
            let _ = tx.send(JobDone::File { path: rel, text });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Reads what a live diff preview of `path` starts from.
    pub fn read_current(&mut self, call_id: &str, path: &str) {
        let (tx, root) = (self.tx.clone(), self.root.clone());
        let (call_id, path) = (call_id.to_string(), path.to_string());
        let running = self.started();
        std::thread::spawn(move || {
            let text = super::panes::diff::read_current(&root, &path);
            let _ = tx.send(JobDone::Current {
                call_id,
                path,
                text,
            });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Reads a session's transcript (a helper's) as Markdown, for the
    /// viewer's `title`.
    pub fn read_session(&mut self, id: &str, title: &str) {
        let (tx, root) = (self.tx.clone(), self.root.clone());
        let (id, title) = (id.to_string(), title.to_string());
        let running = self.started();
        std::thread::spawn(move || {
            let text = match crate::session::read_records(&root, &id) {
                Ok((_, records)) => crate::session::export::markdown(&records, &[]),
                Err(e) => format!("(cannot read session {id}: {e})"),
            };
            let _ = tx.send(JobDone::File { path: title, text });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Lists the workspace's sessions (each log's head is read).
    pub fn list_sessions(&mut self) {
        let (tx, root) = (self.tx.clone(), self.root.clone());
        let running = self.started();
        std::thread::spawn(move || {
            let list = crate::session::list(&root);
            let _ = tx.send(JobDone::Sessions { list });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Walks the workspace unless a walk is running or done.
    pub fn index(&mut self) {
        if std::mem::replace(&mut self.indexing, true) {
            return;
        }
        let (tx, root, generation) = (self.tx.clone(), self.root.clone(), self.generation);
        let running = self.started();
        std::thread::spawn(move || {
            let files = super::panes::file_tree::index(&root);
            let _ = tx.send(JobDone::Index { files, generation });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Whether a walk's list is the current one.
    pub fn is_current(&self, generation: u64) -> bool {
        generation == self.generation
    }

    fn started(&self) -> Arc<AtomicUsize> {
        self.running.fetch_add(1, Ordering::SeqCst);
        self.running.clone()
    }

    /// The next walk reads the workspace again (a rewind changed it); a
    /// walk still running is dropped when it ends.
    pub fn forget_index(&mut self) {
        self.indexing = false;
        self.generation += 1;
    }
}

/// What the viewer shows of a file: its text, or why not.
pub fn view_text(root: &std::path::Path, rel: &str) -> String {
    let path = root.join(rel);
    match std::fs::metadata(&path) {
        Ok(m) if m.len() > MAX_VIEW_BYTES => format!("({} bytes: too big to show)", m.len()),
        Ok(_) => match crate::paths::read_regular(&path, MAX_VIEW_BYTES) {
            Ok(bytes) if bytes.iter().take(8192).any(|b| *b == 0) => "(a binary file)".to_string(),
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => format!("(cannot read: {e})"),
        },
        Err(e) => format!("(cannot read: {e})"),
    }
}
