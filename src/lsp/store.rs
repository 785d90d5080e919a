//! Diagnostics as the servers publish them, per file, with a generation
//! counter so a caller can wait for the report that follows its change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity};
use tokio::sync::watch;
use tokio::time::Instant;

/// What a server last said about one file.
#[derive(Clone, Debug, Default)]
pub struct FileDiags {
    /// The document version the report is about, when the server says.
    pub version: Option<i32>,
    /// Bumped on every report for this file.
    pub generation: u64,
    pub items: Vec<Diagnostic>,
}

impl FileDiags {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| is_error(d))
    }

    pub fn counts(&self) -> (usize, usize) {
        let errors = self.errors().count();
        let warnings = self
            .items
            .iter()
            .filter(|d| d.severity == Some(DiagnosticSeverity::WARNING))
            .count();
        (errors, warnings)
    }
}

/// A diagnostic without a severity is taken as an error, as editors do.
pub fn is_error(d: &Diagnostic) -> bool {
    matches!(d.severity, None | Some(DiagnosticSeverity::ERROR))
}

/// What the store keeps, whatever a server sends: files (a server can
/// report on made-up paths without end), diagnostics a file, and bytes of
/// a message (one of 8 MB a report took 2 GB over 250 reports).
const MAX_FILES: usize = 5_000;
const MAX_ITEMS: usize = 500;
const MAX_MESSAGE: usize = 2_048;
const MAX_RELATED: usize = 8;
/// A related note whose location's URI is longer than this is dropped.
const MAX_URI: usize = 1_024;
/// The bytes of text kept over all files together (the caps above alone
/// multiply to tens of gigabytes).
const MAX_BYTES: usize = 32 << 20;

/// About how many bytes a kept diagnostic holds.
fn weight(d: &Diagnostic) -> usize {
    let related: usize = d
        .related_information
        .iter()
        .flatten()
        .map(|r| r.message.len() + r.location.uri.as_str().len())
        .sum();
    d.message.len() + related + 64
}

/// `text` cut to `max` bytes at a character boundary.
fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

/// A diagnostic as kept: its message cut, a few related notes, no
/// server data.
fn bounded(mut d: Diagnostic) -> Diagnostic {
    cut(&mut d.message, MAX_MESSAGE);
    d.data = None;
    if let Some(related) = d.related_information.as_mut() {
        related.retain(|r| r.location.uri.as_str().len() <= MAX_URI);
        related.truncate(MAX_RELATED);
        for r in related {
            cut(&mut r.message, MAX_MESSAGE);
        }
    }
    if let Some(lsp_types::NumberOrString::String(code)) = d.code.as_mut() {
        cut(code, 200);
    }
    if let Some(source) = d.source.as_mut() {
        cut(source, 200);
    }
    d
}

pub struct DiagStore {
    files: Mutex<HashMap<PathBuf, FileDiags>>,
    /// The bytes the kept diagnostics hold, over all files.
    bytes: Mutex<usize>,
    /// Counts every report, for waiters.
    tick: watch::Sender<u64>,
}

impl Default for DiagStore {
    fn default() -> Self {
        Self {
            files: Mutex::new(HashMap::new()),
            bytes: Mutex::new(0),
            tick: watch::channel(0).0,
        }
    }
}

impl DiagStore {
    /// Records a report; returns the file's new state.
    pub fn publish(
        &self,
        path: PathBuf,
        version: Option<i32>,
        items: Vec<Diagnostic>,
    ) -> FileDiags {
        let state = {
            let Ok(mut files) = self.files.lock() else {
                return FileDiags::default();
            };
            if !files.contains_key(&path) && files.len() >= MAX_FILES {
                return FileDiags::default();
            }
            let f = files.entry(path).or_default();
            f.generation += 1;
            f.version = version;
            let Ok(mut bytes) = self.bytes.lock() else {
                return FileDiags::default();
            };
            let old: usize = f.items.iter().map(weight).sum();
            let mut room = MAX_BYTES.saturating_sub(bytes.saturating_sub(old));
            f.items = items
                .into_iter()
                .take(MAX_ITEMS)
                .map(bounded)
                .take_while(|d| {
                    let w = weight(d);
                    let fits = w <= room;
                    room = room.saturating_sub(w);
                    fits
                })
                .collect();
            let new: usize = f.items.iter().map(weight).sum();
            *bytes = bytes.saturating_sub(old) + new;
            f.clone()
        };
        self.tick.send_modify(|n| *n += 1);
        state
    }

    pub fn get(&self, path: &Path) -> FileDiags {
        self.files
            .lock()
            .ok()
            .and_then(|f| f.get(path).cloned())
            .unwrap_or_default()
    }

    /// Every file with something to say, sorted by path.
    pub fn all(&self) -> Vec<(PathBuf, FileDiags)> {
        let mut v: Vec<(PathBuf, FileDiags)> = self
            .files
            .lock()
            .map(|f| {
                f.iter()
                    .filter(|(_, d)| !d.items.is_empty())
                    .map(|(p, d)| (p.clone(), d.clone()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Forgets what a stopped server said.
    pub fn clear(&self, paths: &[PathBuf]) {
        if let Ok(mut f) = self.files.lock() {
            for p in paths {
                if let Some(gone) = f.remove(p)
                    && let Ok(mut bytes) = self.bytes.lock()
                {
                    *bytes = bytes.saturating_sub(gone.items.iter().map(weight).sum());
                }
            }
        }
    }

    /// Waits until the server has reported on `path` after generation
    /// `since` (for `version` or later when the server gives versions),
    /// then until it has been quiet for `quiet`. None when nothing came
    /// before `deadline`.
    pub async fn settle(
        &self,
        path: &Path,
        since: u64,
        version: i32,
        quiet: Duration,
        deadline: Instant,
    ) -> Option<FileDiags> {
        let mut rx = self.tick.subscribe();
        let fresh = |f: &FileDiags| f.generation > since && f.version.is_none_or(|v| v >= version);
        loop {
            let now = self.get(path);
            if fresh(&now) {
                break;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return None,
            }
        }
        // More may follow (a syntax pass, then a semantic one): wait until
        // this file has been quiet for a while (reports on other files do
        // not count), but never past the deadline.
        let mut seen = self.get(path).generation;
        let mut until = (Instant::now() + quiet).min(deadline);
        loop {
            match tokio::time::timeout_at(until, rx.changed()).await {
                Ok(Ok(())) => {
                    let g = self.get(path).generation;
                    if g != seen {
                        seen = g;
                        until = (Instant::now() + quiet).min(deadline);
                    }
                }
                _ => return Some(self.get(path)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};
    use std::sync::Arc;

    fn diag(line: u32, sev: DiagnosticSeverity, msg: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 0), Position::new(line, 1)),
            severity: Some(sev),
            message: msg.into(),
            ..Default::default()
        }
    }

    /// Red-team round 25: 250 reports of an 8 MB message each, on
    /// made-up files, took 2 GB. What is kept is bounded.
    #[test]
    fn what_a_server_reports_is_kept_within_bounds() {
        let store = DiagStore::default();
        let huge = "x".repeat(1 << 20);
        let many: Vec<Diagnostic> = (0..2_000)
            .map(|i| {
                diag(
                    i,
                    DiagnosticSeverity::ERROR,
                    if i < 3 { &huge } else { "e" },
                )
            })
            .collect();
        let kept = store.publish(PathBuf::from("/w/a.py"), None, many);
        assert_eq!(kept.items.len(), MAX_ITEMS);
        assert!(
            kept.items
                .iter()
                .all(|d| d.message.len() <= MAX_MESSAGE + 3)
        );
        for i in 0..(MAX_FILES + 10) {
            store.publish(PathBuf::from(format!("/w/f{i}.py")), None, vec![]);
        }
        assert!(store.files.lock().unwrap().len() <= MAX_FILES);
        // A file kept already is still updated.
        let again = store.publish(
            PathBuf::from("/w/a.py"),
            None,
            vec![diag(1, DiagnosticSeverity::ERROR, "boom")],
        );
        assert_eq!(again.items.len(), 1);
    }

    /// Red-team round 26: the per-file caps multiplied to ~45 GB. All the
    /// files together keep at most `MAX_BYTES`, and a file that clears
    /// its report gives its room back.
    #[test]
    fn all_files_together_stay_within_a_byte_budget() {
        let store = DiagStore::default();
        let big = "y".repeat(4096);
        let full = || -> Vec<Diagnostic> {
            (0..MAX_ITEMS as u32)
                .map(|i| diag(i, DiagnosticSeverity::ERROR, &big))
                .collect()
        };
        for i in 0..200 {
            store.publish(PathBuf::from(format!("/w/f{i}.py")), None, full());
        }
        let kept: usize = store
            .files
            .lock()
            .unwrap()
            .values()
            .flat_map(|f| f.items.iter().map(weight))
            .sum();
        assert!(kept <= MAX_BYTES, "{kept}");
        assert_eq!(kept, *store.bytes.lock().unwrap());
        assert!(
            store
                .publish(PathBuf::from("/w/late.py"), None, full())
                .items
                .is_empty()
        );
        store.publish(PathBuf::from("/w/f0.py"), None, vec![]);
        assert!(
            !store
                .publish(PathBuf::from("/w/late.py"), None, full())
                .items
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_waiter_gets_the_report_for_its_version_after_a_quiet_spell() {
        let store = Arc::new(DiagStore::default());
        let p = PathBuf::from("/w/a.py");
        store.publish(p.clone(), Some(1), vec![]);
        let since = store.get(&p).generation;
        let s = store.clone();
        let q = p.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            // A stale report for the old version does not count…
            s.publish(q.clone(), Some(1), vec![]);
            tokio::time::sleep(Duration::from_millis(20)).await;
            s.publish(q.clone(), Some(2), vec![]);
            tokio::time::sleep(Duration::from_millis(20)).await;
            // …and a second pass within the quiet spell replaces the first.
            s.publish(q, Some(2), vec![diag(3, DiagnosticSeverity::ERROR, "boom")]);
        });
        let got = store
            .settle(
                &p,
                since,
                2,
                Duration::from_millis(100),
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(got.counts(), (1, 0));
        assert_eq!(got.items[0].message, "boom");
    }

    #[tokio::test]
    async fn silence_ends_at_the_deadline() {
        let store = DiagStore::default();
        let started = std::time::Instant::now();
        let got = store
            .settle(
                Path::new("/w/b.py"),
                0,
                1,
                Duration::from_millis(50),
                Instant::now() + Duration::from_millis(150),
            )
            .await;
        assert!(got.is_none());
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn counts_and_listing() {
        let store = DiagStore::default();
        store.publish(
            "/w/b.py".into(),
            None,
            vec![
                diag(0, DiagnosticSeverity::ERROR, "e"),
                diag(1, DiagnosticSeverity::WARNING, "w"),
                Diagnostic {
                    severity: None,
                    ..diag(2, DiagnosticSeverity::ERROR, "no severity")
                },
            ],
        );
        store.publish("/w/a.py".into(), None, vec![]);
        assert_eq!(store.get(Path::new("/w/b.py")).counts(), (2, 1));
        let all = store.all();
        assert_eq!(all.len(), 1, "files without diagnostics are not listed");
        store.clear(&["/w/b.py".into()]);
        assert!(store.all().is_empty());
    }
}
