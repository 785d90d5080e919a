//! The one-shot subcommands that need no model: `-prune`, `-export`,
//! `-show-diff`, and the debug log.

use super::*;

/// `MM_LOG=debug` (any `tracing` filter: `mm=trace`, `mm::lsp=debug`)
/// appends what mm does to `.mm/debug.log`: the ops, each request, each
/// tool call, the language servers' own messages. Nothing is written
/// without it.
pub(super) fn debug_log(root: &std::path::Path) {
    let Some(filter) = std::env::var("MM_LOG")
        .ok()
        .filter(|f| !f.trim().is_empty())
    else {
        return;
    };
    let file = crate::mmdir::MmDir::open(&root.join(".mm"))
        .and_then(|d| d.file("debug.log", crate::mmdir::Open::Append));
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mm: MM_LOG is set but .mm/debug.log cannot be opened: {e}");
            return;
        }
    };
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mm: MM_LOG={filter}: {e}");
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init();
}

/// `-prune`: drops the checkpoint refs of every session but the one
/// whose last checkpoint is newest (the refs say which, not a session log
/// a repository could bring).
pub(super) fn prune(root: &std::path::Path) -> i32 {
    let newest = crate::git::Store::open(root, "").and_then(|s| s.newest_session());
    let latest = match newest {
        Ok(l) => l.unwrap_or_default(),
        Err(e) => {
            eprintln!("mm: {e}");
            return 1;
        }
    };
    let store = match crate::git::Store::open(root, &latest) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mm: {e}");
            return 1;
        }
    };
    match store.prune(&[latest.as_str()]) {
        Ok(n) => {
            println!(
                "removed {n} checkpoint ref(s) under refs/mm/checkpoints (kept session {latest}); `git gc` frees their space"
            );
            0
        }
        Err(e) => {
            eprintln!("mm: {e}");
            1
        }
    }
}

/// The session's changes since its first checkpoint (empty when there
/// are none or git cannot say).
pub(super) fn session_changes(
    root: &std::path::Path,
    id: &str,
    records: &[session::Record],
) -> Result<Vec<crate::protocol::FileChange>, String> {
    let Some(first) = session::checkpoints(records).into_iter().next() else {
        return Ok(Vec::new());
    };
    let made = session::made_from(records);
    let base = |path: &str| {
        made.base(path, 0)
            .and_then(|id| crate::git::CheckpointId::parse(id).ok())
    };
    crate::git::Store::open(root, id)
        .and_then(|mut s| {
            let oid = crate::git::CheckpointId::parse(&first.id)?;
            s.diff_since(oid, &base)
        })
        .map(|p| {
            p.changes
                .iter()
                .map(crate::git::PlannedChange::forward)
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// `-show ID -export PATH`: the session as Markdown, or JSONL with -json.
pub(super) fn export(
    root: &std::path::Path,
    id: &str,
    records: &[session::Record],
    path: &str,
    json: bool,
) -> i32 {
    let changes = if json {
        Vec::new()
    } else {
        session_changes(root, id, records).unwrap_or_else(|e| {
            eprintln!("mm: the export has no diff: {e}");
            Vec::new()
        })
    };
    // A path on the command line is the shell's: relative to the current
    // directory, also with -cwd.
    let target =
        (path != "-").then(|| std::path::absolute(path).unwrap_or_else(|_| root.join(path)));
    let text = session::export::document(root, records, changes, target.as_deref(), json);
    let Some(target) = target else {
        // To a terminal (or a pipe read by one): nothing raw.
        print!("{}", crate::untrusted::displayable(&text));
        return 0;
    };
    match std::fs::write(&target, text) {
        Ok(()) => {
            eprintln!("mm: exported session {id} to {path}");
            0
        }
        Err(e) => {
            eprintln!("mm: cannot write {path}: {e}");
            1
        }
    }
}

/// `-show ID -diff`: the session's changes against its first checkpoint.
pub(super) fn show_diff(root: &std::path::Path, id: &str, records: &[session::Record]) -> i32 {
    if session::checkpoints(records).is_empty() {
        eprintln!("mm: session {id} has no checkpoints");
        return 1;
    }
    match session_changes(root, id, records) {
        Ok(changes) => {
            if changes.is_empty() {
                println!("no changes since session {id} began");
            }
            crate::console::git_cmds::print_changes(&changes);
            0
        }
        Err(e) => {
            eprintln!("mm: {e}");
            1
        }
    }
}
