//! What the agent does for the user between turns besides checkpoints:
//! the export of the session, the commit of its changes with a message
//! the model writes, and undo of the last edit.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Agent;
use super::checkpoints::{parse_id, with_store};
use crate::git::PlannedChange;
use crate::llm::{self, ChatRequest, LlmError, Message};
use crate::protocol::{AgentEvent, ChangeKind, FileChange, Level};

/// Writes an export where the user said, but never through what the
/// model may have made: a link there (`session.md -> ~/.bashrc`), a file
/// with other names, or, for a path relative to the workspace, a folder
/// that leads out of it.
fn write_export(
    root: &std::path::Path,
    given: &std::path::Path,
    target: &std::path::Path,
    text: &str,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |why: String| Err(std::io::Error::other(why));
    if let Ok(m) = std::fs::symlink_metadata(target) {
        if m.file_type().is_symlink() {
            return refuse("it is a link; give another name".into());
        }
        if m.is_file() && m.nlink() > 1 {
            return refuse(format!(
                "it has {} names (hard links); give another name",
                m.nlink()
            ));
        }
    }
    if given.is_relative()
        && let Some(parent) = target.parent()
        && !crate::paths::resolves_inside(parent, root)
    {
        return refuse("its folder leads outside the workspace".into());
    }
    // Inside the workspace, the folder is opened as it was checked: one
    // swapped for a link since (by a process beside mm) is not followed.
    if given.is_relative()
        && let (Some(parent), Some(name)) = (target.parent(), target.file_name())
    {
        use nix::fcntl::{OFlag, openat};
        let dir = crate::paths::open_dir_strict(&std::fs::canonicalize(parent)?, false)?;
        let fd = openat(
            &dir,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )?;
        let mut f = std::fs::File::from(fd);
        // Checked before a byte changes: truncating a second name would
        // empty the file it names.
        if f.metadata()?.nlink() > 1 {
            return refuse("it has other names (hard links); give another name".into());
        }
        f.set_len(0)?;
        return f.write_all(text.as_bytes());
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(target)?;
    f.write_all(text.as_bytes())
}

impl Agent {
    /// Writes the session to a file: Markdown with the session's diff, or
    /// JSONL events for a `.jsonl` path. With no path it goes to
    /// `.mm/exports/`, out of what the model lists and reads.
    pub async fn export(&mut self, path: Option<String>) {
        let root = self.tools.sandbox.root().to_path_buf();
        let id = self.log.id().to_string();
        let named = path.filter(|p| !p.trim().is_empty());
        let default_name = format!("mm-{id}.md");
        let target = match &named {
            Some(p) => {
                let p = std::path::PathBuf::from(p.trim());
                if p.is_absolute() { p } else { root.join(p) }
            }
            None => root.join(".mm").join("exports").join(&default_name),
        };
        let records = match crate::session::read_records(&root, &id) {
            Ok((_, r)) => r,
            Err(e) => return self.git_notice(Level::Error, format!("not exported: {e}")),
        };
        let jsonl = target.extension().is_some_and(|e| e == "jsonl");
        let changes = match (jsonl, self.git.clone(), self.checkpoints.first()) {
            (false, Some(store), Some(first)) => match parse_id(&first.id) {
                Ok(oid) => {
                    let base = self.bases(0);
                    with_store(&store, move |s| s.diff_since(oid, &base))
                        .await
                        .map(|p| p.changes.iter().map(PlannedChange::forward).collect())
                        .unwrap_or_default()
                }
                Err(_) => Vec::new(),
            },
            _ => Vec::new(),
        };
        let text = crate::session::export::document(&root, &records, changes, Some(&target), jsonl);
        let written = match &named {
            Some(p) => write_export(&root, std::path::Path::new(p.trim()), &target, &text),
            None => crate::mmdir::MmDir::open(&root.join(".mm"))
                .and_then(|d| d.subdir("exports"))
                .and_then(|d| d.write(&default_name, text.as_bytes())),
        };
        match written {
            Ok(()) => self.git_notice(
                Level::Info,
                format!("exported the session to {}", target.display()),
            ),
            Err(e) => self.git_notice(
                Level::Error,
                format!("not exported: cannot write {}: {e}", target.display()),
            ),
        }
    }

    /// One tool-less request for a Conventional Commits message.
    pub async fn propose_commit(&mut self, cancel: &CancellationToken) {
        let Some(store) = self.git.clone() else {
            return self.git_notice(
                Level::Warning,
                "/commit needs checkpoints, which are off for this session",
            );
        };
        let shadow = with_store(&store, |s| Ok(s.is_shadow()))
            .await
            .unwrap_or(true);
        if shadow {
            return self.git_notice(
                Level::Warning,
                "/commit: the workspace is not a git repository",
            );
        }
        let Some(first) = self.checkpoints.first().map(|c| c.id.clone()) else {
            return self.git_notice(
                Level::Info,
                "nothing to commit: the session has made no change",
            );
        };
        let Ok(oid) = parse_id(&first) else { return };
        let base = self.bases(0);
        let changes = match with_store(&store, move |s| s.diff_since(oid, &base)).await {
            // The session's own: files its tools and commands made, not
            // those the user made beside it.
            Ok(plan) => plan.changes,
            Err(e) => {
                return self.git_notice(
                    Level::Error,
                    format!("cannot read the session's changes: {e}"),
                );
            }
        };
        if changes.is_empty() {
            return self.git_notice(
                Level::Info,
                "nothing to commit: the files are as they were when the session began",
            );
        }
        let mut diff = String::new();
        for c in &changes {
            diff.push_str(&crate::diff::unified(&c.path, &c.then, &c.now, 2, 120));
            if diff.len() > 12_000 {
                diff.push_str("… (diff cut)\n");
                break;
            }
        }
        let messages = [
            Message::system("You write git commit messages."),
            Message::user(format!(
                "Write a commit message for the diff below, in the Conventional Commits format: a first line `type(scope): summary` (types: feat, fix, refactor, docs, test, chore) under 72 characters, a blank line, then one to three short lines on what changed and why. Answer with the message only.\n\n{diff}"
            )),
        ];
        // Housekeeping goes to `auxModel` when there is one.
        let model = self.aux_model();
        let body = llm::build_body(&ChatRequest {
            model: &model,
            messages: &messages,
            tools: &[],
            sampling: &self.settings.sampling,
            max_tokens: Some(400),
            replay_reasoning: false,
            response_format: None,
        });
        let started = std::time::Instant::now();
        match self.stream_aux(&body, cancel).await {
            Ok(s) => {
                self.log_side_request(&s, started);
                self.record_usage(&s, None);
                let message = clean_message(&s.reply.content);
                self.bus.publish(AgentEvent::CommitProposed {
                    message,
                    files: changes.iter().map(|c| c.path.clone()).collect(),
                });
            }
            Err(LlmError::Cancelled) => {
                self.git_notice(Level::Info, "/commit cancelled: nothing committed");
            }
            Err(e) => self.git_notice(
                Level::Error,
                format!("the model did not write a message: {e}"),
            ),
        }
    }

    /// Stages the session's changes and commits them.
    pub async fn commit(&mut self, message: String) {
        let Some(store) = self.git.clone() else {
            return;
        };
        let Some(first) = self.checkpoints.first().map(|c| c.id.clone()) else {
            return self.git_notice(Level::Info, "nothing to commit");
        };
        let Ok(oid) = parse_id(&first) else { return };
        let msg = message.trim().to_string();
        if msg.is_empty() {
            return self.git_notice(Level::Warning, "not committed: the message is empty");
        }
        if let Some(hook) = self.settings.hooks.before_commit.clone()
            && self
                .run_hook(
                    "beforeCommit",
                    &hook,
                    &tokio_util::sync::CancellationToken::new(),
                )
                .await
                .is_some()
        {
            return self.git_notice(
                Level::Error,
                format!("not committed: the beforeCommit hook `{hook}` failed"),
            );
        }
        let base = self.bases(0);
        let result = with_store(&store, move |s| {
            let paths: Vec<String> = s
                .diff_since(oid, &base)?
                .changes
                .into_iter()
                .map(|c| c.path)
                .collect();
            s.commit_paths(&paths, &msg).map(|id| (id, paths))
        })
        .await;
        match result {
            Ok((id, paths)) => {
                // What is committed is no longer the session's to undo.
                self.edits.clear();
                let summary = message.lines().next().unwrap_or("").to_string();
                let label = format!(
                    "{}{:.8}: {summary}",
                    super::checkpoints::COMMITTED,
                    id.to_string()
                );
                // The tree as committed: the changes since are the
                // session's uncommitted ones (the tree's marks).
                self.checkpoint(crate::git::Kind::Safety, &label).await;
                self.git_notice(
                    Level::Info,
                    format!(
                        "committed {} file(s) as {:.8}: {summary}",
                        paths.len(),
                        id.to_string()
                    ),
                );
                self.bus.publish(AgentEvent::Committed {
                    id: id.to_string(),
                    summary,
                });
            }
            Err(e) => self.git_notice(Level::Error, format!("not committed: {e}")),
        }
    }

    /// Reverts the last edit mm's file tools applied, if the file is still
    /// as that edit left it.
    pub async fn undo(&mut self) {
        let Some(change) = self.edits.pop() else {
            return self.git_notice(
                Level::Info,
                "nothing to undo: no edit of this session since its last commit",
            );
        };
        // Where the file is now: never through a link out of the workspace.
        let path = match crate::paths::resolve(self.tools.sandbox.root(), &change.path) {
            Ok(r) => r.abs,
            Err(e) => return self.git_notice(Level::Warning, format!("not undone: {e}")),
        };
        // Byte for byte: a file the user filled with bytes that are not
        // text, or made a FIFO, is changed, not empty (red-team round
        // 17: a failed read counted as "" and the file was deleted).
        let same = match crate::paths::read_regular(&path, change.after.len() as u64 + 1) {
            Ok(bytes) => bytes == change.after.as_bytes(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => change.after.is_empty(),
            Err(_) => false,
        };
        if !same {
            // After a rewind, what undoes it is its safety checkpoint.
            let rewound = self
                .checkpoints
                .last()
                .filter(|c| c.kind == crate::protocol::CheckpointKind::Safety);
            let how = match rewound {
                Some(c) => format!("to undo the rewind, /rewind and pick \"{}\"", c.label),
                None => "/rewind can go back further".to_string(),
            };
            self.git_notice(
                Level::Warning,
                format!(
                    "not undone: {} changed since that edit ({how})",
                    change.path
                ),
            );
            return;
        }
        let result = if change.kind == ChangeKind::Created {
            crate::paths::remove_checked(&path).map_err(|e| e.to_string())
        } else {
            crate::tools::fs::atomic_write(&path, &change.before).map_err(|e| e.to_string())
        };
        if let Err(e) = result {
            return self.git_notice(Level::Error, format!("not undone: {e}"));
        }
        let blob = if change.kind == ChangeKind::Created {
            String::new()
        } else {
            crate::git::blob_id(change.before.as_bytes())
        };
        if let Err(e) = self.record_made(&change.path, blob) {
            self.git_notice(Level::Error, e.to_string());
        }
        if let Ok(mut reads) = self.tools.reads.lock() {
            reads.remove(&path);
        }
        let back = FileChange {
            path: change.path.clone(),
            kind: match change.kind {
                ChangeKind::Created => ChangeKind::Deleted,
                ChangeKind::Deleted => ChangeKind::Created,
                ChangeKind::Modified => ChangeKind::Modified,
            },
            before: change.after.clone(),
            after: change.before.clone(),
            added: change.removed,
            removed: change.added,
        };
        self.tell_lsp_restored(&back).await;
        self.bus.publish(AgentEvent::FileChanged {
            turn: self.turn,
            call_id: "undo".into(),
            change: Arc::new(back),
        });
        self.git_notice(
            Level::Info,
            format!("undid the last edit to {}", change.path),
        );
    }
}

/// The message without code fences or quotes around it.
/// A title as the model wrote it, as one short line: quotes, a `Title:`
/// label and a full stop off, at most 60 characters.
fn clean_title(text: &str) -> String {
    let line = clean_message(text);
    let line = line.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim().trim_start_matches('#').trim();
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let line = line
        .trim()
        .trim_matches(['"', '\'', '*', '`'])
        .trim_end_matches('.');
    crate::untrusted::displayable(line.trim())
        .chars()
        .take(60)
        .collect()
}

fn clean_message(text: &str) -> String {
    let t = text.trim();
    let t = t
        .strip_prefix("```")
        .map(|r| r.split_once('\n').map(|(_, rest)| rest).unwrap_or(r))
        .unwrap_or(t);
    let t = t.strip_suffix("```").unwrap_or(t);
    t.trim().trim_matches('"').trim().to_string()
}

impl Agent {
    /// The session's title, from `auxModel` (or `auxUrl`) after the first
    /// turn, kept in the log for the session pickers. Nothing without an
    /// aux model: the main model's time is the user's.
    pub(super) async fn write_title(&mut self, prompt: &str, cancel: &CancellationToken) {
        // A sub-task's session is short and nobody picks it from a list.
        let child = std::env::var(crate::config::ASK_DEPTH_VAR)
            .ok()
            .and_then(|d| d.parse::<u32>().ok())
            .is_some_and(|d| d > 0);
        if (self.settings.aux_model.is_none() && self.aux.is_none()) || child {
            return;
        }
        let request: String = prompt.chars().take(1500).collect();
        let messages = [
            Message::system("You name coding sessions."),
            Message::user(format!(
                "Write a title of at most six words for a coding session that began with this request. Answer with the title only.\n\n{request}"
            )),
        ];
        let model = self.aux_model();
        let body = llm::build_body(&ChatRequest {
            model: &model,
            messages: &messages,
            tools: &[],
            sampling: &self.settings.sampling,
            max_tokens: Some(30),
            replay_reasoning: false,
            response_format: None,
        });
        let started = std::time::Instant::now();
        if let Ok(s) = self.stream_aux(&body, cancel).await {
            self.log_side_request(&s, started);
            self.record_usage(&s, None);
            let title = clean_title(&s.reply.content);
            if !title.is_empty()
                && let Err(e) = self.log.append(&crate::session::Record::Title { title })
            {
                self.notice(Level::Error, e.to_string());
            }
        }
    }

    /// Takes up another saved session of this workspace in place of this
    /// one, as `-resume` would have: its conversation (told to the front
    /// ends again), checkpoints, what mm made of files, and its "always"
    /// answers when it was started here. This session's log stays as it is.
    pub async fn switch_session(&mut self, which: &str) {
        use crate::session;
        if which == self.log.id() {
            return self.git_notice(Level::Info, format!("session {which} is this one"));
        }
        let root = self.tools.sandbox.root().to_path_buf();
        let (log, records, _repair) = match session::SessionLog::resume(&root, which) {
            Ok(r) => r,
            Err(e) => return self.git_notice(Level::Error, e.to_string()),
        };
        self.tools.sandbox.forget_always();
        if session::started_in(&records, &root) {
            self.tools
                .sandbox
                .restore(&session::held_always_keys(&records, &root));
        }
        if self.git.is_some() {
            self.git = match crate::git::Store::open(&root, log.id()) {
                Ok(mut s) => {
                    if let Some(oid) = session::checkpoints(&records)
                        .last()
                        .and_then(|c| crate::git::CheckpointId::parse(&c.id).ok())
                    {
                        let _ = s.resume_at(oid);
                    }
                    Some(Arc::new(std::sync::Mutex::new(s)))
                }
                Err(e) => {
                    self.git_notice(Level::Warning, format!("checkpoints are off: {e}"));
                    None
                }
            };
        }
        self.messages.truncate(1);
        self.messages.extend(session::messages(&records));
        self.turn_starts = session::turn_starts(&records);
        self.turn = self.turn_starts.len() as u64;
        self.checkpoints = session::checkpoints(&records);
        self.made = session::made(&records);
        self.made_from = session::made_from(&records);
        if let Some(b) = session::bytes_per_token(&records) {
            self.bytes_per_token = b;
        }
        self.ok_calls = session::ok_calls(&records);
        self.carried = session::carried(&records);
        self.last_check = None;
        self.edits.clear();
        self.reset_shed();
        self.resumed = true;
        self.log = log;
        let id = self.log.id().to_string();
        self.bus.publish(AgentEvent::ConversationTrimmed {
            turn: 0,
            session: id.clone(),
        });
        for ev in session::replay::events(&records) {
            self.bus.publish(ev);
        }
        self.announce();
        self.git_notice(
            Level::Info,
            format!(
                "took up session {id} ({} turn{})",
                self.turn,
                if self.turn == 1 { "" } else { "s" }
            ),
        );
    }
}

/// What `/init` writes: a starting `AGENTS.md` from a look at the
/// repository — its languages, its folders, the commands that test and
/// build it — with a place for the conventions only its people know.
pub fn starter_agents_md(root: &std::path::Path) -> String {
    use std::collections::BTreeMap;
    let mut by_lang: BTreeMap<&'static str, usize> = BTreeMap::new();
    let walker = crate::paths::walk(root).max_depth(Some(6)).build();
    for e in walker.flatten().take(20_000) {
        if !e.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let lang = match e.path().extension().and_then(|x| x.to_str()) {
            Some("rs") => "Rust",
            Some("py") => "Python",
            Some("js" | "mjs" | "cjs" | "jsx") => "JavaScript",
            Some("ts" | "tsx") => "TypeScript",
            Some("go") => "Go",
            Some("c" | "h") => "C",
            Some("cc" | "cpp" | "hpp" | "cxx") => "C++",
            Some("java") => "Java",
            Some("rb") => "Ruby",
            Some("sh") => "Shell",
            _ => continue,
        };
        *by_lang.entry(lang).or_default() += 1;
    }
    let mut langs: Vec<(&str, usize)> = by_lang.into_iter().collect();
    langs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    !n.starts_with('.')
                        && !matches!(
                            n.as_str(),
                            "target" | "node_modules" | "__pycache__" | "venv" | "dist" | "build"
                        )
                })
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    let mut out = String::from(
        "# AGENTS.md\n\nInstructions for coding agents working in this repository (mm, Codex, Claude Code and others read this file). Keep it short: it goes into every request.\n\n## Project\n",
    );
    if langs.is_empty() {
        out.push_str("- Languages: (none recognised yet)\n");
    } else {
        let list: Vec<String> = langs
            .iter()
            .map(|(l, n)| format!("{l} ({n} file{})", if *n == 1 { "" } else { "s" }))
            .collect();
        out.push_str(&format!("- Languages: {}\n", list.join(", ")));
    }
    if !dirs.is_empty() {
        let list: Vec<String> = dirs.iter().map(|d| format!("`{d}/`")).collect();
        out.push_str(&format!("- Folders: {}\n", list.join(", ")));
    }
    out.push_str("\n## Commands\n");
    // A Makefile's own targets are the project's word for its commands.
    let make = make_targets(root);
    let has = |t: &str| make.iter().any(|m| m == t);
    let test = if has("test") {
        Some("make test".to_string())
    } else if has("check") {
        Some("make check".to_string())
    } else {
        super::harness::detect_verify(root)
    };
    match test {
        Some(t) => out.push_str(&format!("- Test: `{t}`\n")),
        None => out.push_str("- Test: (say how to run the tests)\n"),
    }
    let build = if root.join("Cargo.toml").is_file() {
        Some("cargo build")
    } else if root.join("go.mod").is_file() {
        Some("go build ./...")
    } else if std::fs::read_to_string(root.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v["scripts"]["build"].is_string())
    {
        Some("npm run build")
    } else if has("build") {
        Some("make build")
    } else if make
        .first()
        .is_some_and(|t| !matches!(t.as_str(), "test" | "check" | "clean" | "help"))
    {
        Some("make")
    } else {
        None
    };
    if let Some(b) = build {
        out.push_str(&format!("- Build: `{b}`\n"));
    }
    out.push_str("\n## Conventions\n- (How code here is written and named, what must not be changed, what to check before a change is done.)\n");
    // CLAUDE.md is read only where there is no AGENTS.md: its rules move
    // in here, or they would stop counting.
    if let Ok(real) = crate::paths::own_file(&root.join("CLAUDE.md"), root)
        && let Ok(bytes) = crate::paths::read_regular(&real, 256 * 1024)
    {
        let claude = String::from_utf8_lossy(&bytes);
        if !claude.trim().is_empty() {
            out.push_str("\n## From CLAUDE.md\n\n");
            out.push_str(claude.trim_end());
            out.push('\n');
        }
    }
    out
}

/// A Makefile's targets, in order (not variables, not `.PHONY` and kin,
/// not pattern rules).
fn make_targets(root: &std::path::Path) -> Vec<String> {
    let Ok(bytes) = crate::paths::read_regular(&root.join("Makefile"), 256 * 1024) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with(['\t', ' ', '#', '.']) {
            continue;
        }
        let Some((head, rest)) = line.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || head.contains(['=', '%', '$']) {
            continue;
        }
        for t in head.split_whitespace() {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_string());
            }
        }
    }
    out
}

impl Agent {
    /// `/init`: writes a starting `AGENTS.md` (never over one that is
    /// there), as an edit of the session (`/undo` takes it back).
    pub async fn init_agents_md(&mut self) {
        let root = self.tools.sandbox.root().to_path_buf();
        let path = root.join("AGENTS.md");
        if std::fs::symlink_metadata(&path).is_ok() {
            return self.notice(
                Level::Warning,
                "AGENTS.md is already there: /init writes one only where there is none (edit it instead)",
            );
        }
        if self.settings.sandbox == crate::config::SandboxMode::ReadOnly {
            return self.notice(
                Level::Warning,
                "the sandbox is read-only: /init writes nothing",
            );
        }
        let text = starter_agents_md(&root);
        if let Err(e) = crate::tools::fs::atomic_write(&path, &text) {
            return self.notice(Level::Error, format!("AGENTS.md not written: {e}"));
        }
        let change = FileChange {
            path: "AGENTS.md".into(),
            kind: ChangeKind::Created,
            before: Arc::from(""),
            after: Arc::from(text.as_str()),
            added: text.lines().count(),
            removed: 0,
        };
        if let Err(e) = self.record_change("init", change) {
            self.notice(Level::Error, e.to_string());
        }
        self.notice(
            Level::Info,
            format!(
                "wrote AGENTS.md from a look at the repository{}: check its commands and fill in the conventions; it goes into every request from the next session on (/undo takes it back)",
                if text.contains("\n## From CLAUDE.md\n") {
                    ", with CLAUDE.md's text at its end (AGENTS.md is read in its place from now on)"
                } else {
                    ""
                }
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Red-team round 14: `/export session.md` over a link the model
    /// made wrote the transcript into the file it named (a `.bashrc`).
    #[test]
    fn an_export_never_writes_through_a_link_or_a_second_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("bashrc");
        std::fs::write(&victim, "original\n").unwrap();
        std::os::unix::fs::symlink(&victim, root.join("session.md")).unwrap();
        let rel = std::path::Path::new("session.md");
        assert!(write_export(&root, rel, &root.join(rel), "transcript").is_err());
        std::fs::hard_link(&victim, root.join("hl.md")).unwrap();
        let rel = std::path::Path::new("hl.md");
        assert!(write_export(&root, rel, &root.join(rel), "transcript").is_err());
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        let rel = std::path::Path::new("out/new.md");
        assert!(write_export(&root, rel, &root.join(rel), "transcript").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n");
        assert!(!outside.path().join("new.md").exists());
        // A plain name is written, and written over.
        let rel = std::path::Path::new("notes.md");
        write_export(&root, rel, &root.join(rel), "one").unwrap();
        write_export(&root, rel, &root.join(rel), "two").unwrap();
        assert_eq!(std::fs::read_to_string(root.join(rel)).unwrap(), "two");
    }

    #[test]
    fn init_takes_make_targets_and_keeps_claude_md() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("Makefile"),
            ".PHONY: test\nPY := python3\ntest: deps\n\t$(PY) -m pytest -q\nbuild:\n\ttrue\n%.o: %.c\n\tcc $<\n",
        )
        .unwrap();
        std::fs::write(root.join("test_calc.py"), "def test_x():\n    assert 1\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "CLAUDE-RULE: never touch src/\n").unwrap();
        assert_eq!(make_targets(root), ["test", "build"]);
        let text = starter_agents_md(root);
        assert!(text.contains("- Test: `make test`\n"), "{text}");
        assert!(text.contains("- Build: `make build`\n"), "{text}");
        assert!(
            text.ends_with("## From CLAUDE.md\n\nCLAUDE-RULE: never touch src/\n"),
            "{text}"
        );
        // Without them: the detected command, and no empty section.
        std::fs::remove_file(root.join("Makefile")).unwrap();
        std::fs::remove_file(root.join("CLAUDE.md")).unwrap();
        let text = starter_agents_md(root);
        assert!(text.contains("- Test: `python3 -m"), "{text}");
        assert!(
            !text.contains("Build:") && !text.contains("CLAUDE"),
            "{text}"
        );
        // A CLAUDE.md that is a link out of the workspace, or to git's
        // config, is not copied in (red-team round 13).
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "SECRET-OUTSIDE\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("CLAUDE.md")).unwrap();
        assert!(!starter_agents_md(root).contains("SECRET"));
        std::fs::remove_file(root.join("CLAUDE.md")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "url = https://x:SECRET@h/r\n").unwrap();
        std::os::unix::fs::symlink(".git/config", root.join("CLAUDE.md")).unwrap();
        assert!(!starter_agents_md(root).contains("SECRET"));
    }

    #[test]
    fn fences_around_a_message_are_dropped() {
        assert_eq!(
            clean_message("```\nfix(calc): add adds\n\nIt subtracted.\n```"),
            "fix(calc): add adds\n\nIt subtracted."
        );
        assert_eq!(clean_message("\"feat: x\""), "feat: x");
    }
}
