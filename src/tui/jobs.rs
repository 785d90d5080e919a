//! Work the UI task must not wait for: reading a file for the viewer and
//! walking the workspace for the tree's filter and `@` completion. Each
//! runs on its own thread and reports on a channel the event loop
//! selects on; of several reads, only the latest request's answer is
//! kept, and one walk serves every asker.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::mpsc;

/// Bytes the viewer shows of a file, at most.
pub const MAX_VIEW_BYTES: u64 = 4 * 1024 * 1024;

/// A finished job.
#[derive(Debug)]
pub enum JobDone {
    /// A file for the viewer, as text to show.
    File { path: String, text: String },
    /// Every file of the workspace (capped), relative, `/`-separated.
    Index { files: Vec<String> },
}

pub struct Jobs {
    root: PathBuf,
    tx: mpsc::UnboundedSender<JobDone>,
    rx: Option<mpsc::UnboundedReceiver<JobDone>>,
    /// The number of the latest file read asked for.
    latest_read: Arc<AtomicU64>,
    indexing: bool,
    /// Jobs started and not yet reported.
    running: Arc<AtomicUsize>,
}

impl Jobs {
    pub fn new(root: PathBuf) -> Jobs {
        let (tx, rx) = mpsc::unbounded_channel();
        Jobs {
            root,
            tx,
            rx: Some(rx),
            latest_read: Arc::default(),
            indexing: false,
            running: Arc::default(),
        }
    }

    /// Whether a job is still running (tests wait for them).
    pub fn busy(&self) -> bool {
        self.running.load(Ordering::SeqCst) > 0
    }

    /// The receiving end, for the event loop (taken once).
    pub fn take_receiver(&mut self) -> Option<mpsc::UnboundedReceiver<JobDone>> {
        self.rx.take()
    }

    /// Reads a file for the viewer; an older read still running is
    /// forgotten when it ends.
    pub fn read_file(&mut self, rel: &str) {
        let n = self.latest_read.fetch_add(1, Ordering::SeqCst) + 1;
        let (latest, tx, root, rel) = (
            self.latest_read.clone(),
            self.tx.clone(),
            self.root.clone(),
            rel.to_string(),
        );
        let running = self.started();
        std::thread::spawn(move || {
            let text = view_text(&root, &rel);
            if latest.load(Ordering::SeqCst) == n {
                let _ = tx.send(JobDone::File { path: rel, text });
            }
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Walks the workspace unless a walk is running or done.
    pub fn index(&mut self) {
        if std::mem::replace(&mut self.indexing, true) {
            return;
        }
        let (tx, root) = (self.tx.clone(), self.root.clone());
        let running = self.started();
        std::thread::spawn(move || {
            let files = super::panes::file_tree::index(&root);
            let _ = tx.send(JobDone::Index { files });
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }

    fn started(&self) -> Arc<AtomicUsize> {
        self.running.fetch_add(1, Ordering::SeqCst);
        self.running.clone()
    }

    /// The next walk reads the workspace again (a rewind changed it).
    pub fn forget_index(&mut self) {
        self.indexing = false;
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
