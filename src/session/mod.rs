//! The session log: `.mm/sessions/<id>.jsonl`, one record a line, appended
//! and fsynced as it happens, mode 0600, locked while open. A step that is
//! not logged is a step that cannot be resumed, so a log that cannot be
//! written fails the turn before the model is called.

pub mod export;
mod made;
pub use made::{MadeFrom, made, made_from};
mod repair;
pub mod replay;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::llm::{Message, Role};
use crate::mmdir::{MmDir, Open};
use crate::protocol::{CheckpointInfo, ToolStatus};

pub use repair::Repair;

/// Format version of the log, in its header.
pub const LOG_VERSION: u32 = 1;

/// The head of the message that stands in for a compacted conversation
/// (a replay shows it as a summary, not as something the user typed).
pub const SUMMARY_HEAD: &str = "[Summary of the conversation before this point, written to fit the context window (mm keeps the whole of it in the session log)]";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Header {
        version: u32,
        id: String,
        created: String,
        cwd: String,
        provider: String,
        model: String,
    },
    Message {
        #[serde(flatten)]
        message: Message,
        /// How a tool call ended (tool results only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ToolStatus>,
        /// What the user typed, when the message sent to the model says
        /// more (attached files, the workspace list): replays show this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        typed: Option<String>,
    },
    /// What a turn wrote, as the receipt said.
    Receipt {
        turn: u64,
        written: Vec<String>,
        #[serde(default)]
        commands: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    /// One model request: what it cost and how it went (a reply that ran
    /// away says how it was stopped).
    Request {
        turn: u64,
        round: u32,
        prompt: u64,
        cached: u64,
        completion: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_token_ms: Option<u64>,
        ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
        /// The request's prompt tokens as each context mode would have
        /// sent it, estimated from its size (`/ctx` and `/stats` compare).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        as_compact: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        as_rebuild: Option<u64>,
        /// The request's body in bytes: with `prompt`, the bytes a token
        /// that a resumed session counts its window with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
    },
    /// Something mm did to the log itself (a repair on resume).
    Note {
        text: String,
    },
    /// The session's title, as `auxModel` wrote it after the first turn.
    Title {
        title: String,
    },
    /// A turn begins: the next message is its prompt.
    Turn {
        turn: u64,
    },
    Checkpoint {
        checkpoint: CheckpointInfo,
    },
    /// What mm left a file as (its tools, a command it ran, a rewind): the
    /// git blob id of the content, "" for a file it deleted. A rewind asks
    /// before overwriting a file that is no longer as mm left it.
    Made {
        path: String,
        blob: String,
        /// The checkpoint that holds the file as it was before this change
        /// (absent in logs written before it was kept): a rewind or the
        /// session diff goes back to it, not past it, so what the user did
        /// to the file before mm touched it stays.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<String>,
    },
    /// The conversation was compacted: its first `replaced` messages (as
    /// the conversation stood, compactions before this one applied) are
    /// sent as `message` from here on. The records before stay whole; a
    /// replay or an export shows them, marked as compacted. Written and
    /// synced before the conversation switches: a crash leaves either the
    /// whole record or none (a torn line is cut on resume).
    Compacted {
        turn: u64,
        replaced: usize,
        /// The summary as the model wrote it (`message` adds what mm
        /// carried over word for word).
        summary: String,
        message: Message,
        tokens_before: u64,
        tokens_after: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<String>,
        /// Asked for (`/compact`), not made near the window. Logs from
        /// before it was kept say so by a focus only.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        asked: bool,
    },
    /// The user answered "always": `key` runs without asking for the rest
    /// of the session, a resumed one included (`=…` one exact command,
    /// `file:…` every change to one file, else a command prefix).
    Always {
        key: String,
    },
    /// A note for the session's next message (a `turnEnd` hook's failure,
    /// a file mm put back); the next `Turn` record's prompt holds it.
    Carried {
        text: String,
    },
    /// `/model NAME` switched the session's model; a resumed session uses
    /// the newest one unless the command line names a model.
    Model {
        model: String,
    },
    /// A plan proposed (`approved` false) or being carried out, as it
    /// stood then; replays show the newest of a turn as its card.
    Plan {
        turn: u64,
        steps: Vec<crate::protocol::PlanStep>,
        approved: bool,
    },
    /// A command mm ran itself (the tests after a change, a check of the
    /// request): shown by replays and exports as the live run showed its
    /// card; never part of the conversation.
    Ran {
        turn: u64,
        command: String,
        status: ToolStatus,
        output: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot write the session log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("session {0} is open in another mm process")]
    Locked(String),
    #[error("no session {0} in {1}")]
    NotFound(String, PathBuf),
    #[error("the session log {path} is damaged at line {line}: {reason}; it was left as it is")]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `.mm/sessions` under a workspace root.
pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join(".mm").join("sessions")
}

/// An open, locked session log.
pub struct SessionLog {
    id: String,
    /// The workspace (as given to `create`/`resume`).
    root: PathBuf,
    path: PathBuf,
    file: Flock<File>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog").field("id", &self.id).finish()
    }
}

/// Opens `.mm/sessions` (creating `.mm/` with a `.gitignore` so logs never
/// get committed), never through a symlink.
fn sessions(root: &Path) -> Result<MmDir, SessionError> {
    let mm_path = root.join(".mm");
    let mm = MmDir::open(&mm_path).map_err(io_err(&mm_path))?;
    match mm.file(".gitignore", Open::CreateNew) {
        Ok(mut f) => f
            .write_all(b"# written by mm: sessions and traces stay out of git\n*\n")
            .map_err(io_err(&mm_path.join(".gitignore")))?,
        // One that is there must be a file: git and mm's walks read it,
        // and a FIFO there would block them.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            mm.file(".gitignore", Open::Read)
                .map_err(io_err(&mm_path.join(".gitignore")))?;
        }
        Err(e) => return Err(io_err(&mm_path.join(".gitignore"))(e)),
    }
    mm.subdir("sessions").map_err(io_err(&sessions_dir(root)))
}

fn lock(file: File, id: &str) -> Result<Flock<File>, SessionError> {
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| SessionError::Locked(id.into()))
}

impl SessionLog {
    /// Creates a new log with a fresh id (UTC time + random suffix,
    /// created exclusively) and writes its header.
    pub fn create(root: &Path, provider: &str, model: &str) -> Result<SessionLog, SessionError> {
        let dir = sessions(root)?;
        let now = jiff::Timestamp::now();
        let stamp = now.strftime("%Y%m%d-%H%M%S").to_string();
        for _ in 0..16 {
            let id = format!("{stamp}-{:06x}", fastrand::u32(..0x100_0000));
            let name = format!("{id}.jsonl");
            let path = dir.path().join(&name);
            let file = match dir.file(&name, Open::CreateNew) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&path)(e)),
            };
            let file = lock(file, &id)?;
            // Written down before the header: a log with a header is
            // always one `-resume last` finds, wherever mm is killed.
            register(root, &id);
            let mut log = SessionLog {
                id,
                root: root.to_path_buf(),
                path,
                file,
            };
            log.append(&Record::Header {
                version: LOG_VERSION,
                id: log.id.clone(),
                created: now.to_string(),
                cwd: root.to_string_lossy().into_owned(),
                provider: provider.to_string(),
                model: model.to_string(),
            })?;
            return Ok(log);
        }
        Err(io_err(dir.path())(std::io::Error::other(
            "could not find a free session id",
        )))
    }

    /// Opens an existing log to continue it: repairs a torn last line and
    /// closes a batch whose results never arrived, writing the repair down.
    pub fn resume(
        root: &Path,
        which: &str,
    ) -> Result<(SessionLog, Vec<Record>, Repair), SessionError> {
        let id = resolve_id(root, which)?;
        let name = format!("{id}.jsonl");
        let dir = sessions(root)?;
        let path = dir.path().join(&name);
        let file = dir.file(&name, Open::Update).map_err(io_err(&path))?;
        let mut file = lock(file, &id)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err(&path))?;
        let parsed = repair::parse(&path, &bytes)?;
        if let Some(len) = parsed.truncate_to {
            file.set_len(len).map_err(io_err(&path))?;
        }
        file.seek(SeekFrom::End(0)).map_err(io_err(&path))?;
        if parsed.needs_newline {
            file.write_all(b"\n").map_err(io_err(&path))?;
        }
        let mut log = SessionLog {
            id,
            root: root.to_path_buf(),
            path,
            file,
        };
        let mut records = parsed.records;
        let mut repair = Repair {
            torn_bytes: parsed.torn_bytes,
            closed_calls: Vec::new(),
            answered_prompt: false,
        };
        if repair.torn_bytes > 0 {
            log.append(&Record::Note {
                text: format!(
                    "resume: cut {} bytes of a torn last line",
                    repair.torn_bytes
                ),
            })?;
        }
        for msg in repair::unanswered(&records) {
            repair
                .closed_calls
                .push(msg.tool_call_id.clone().unwrap_or_default());
            let rec = Record::Message {
                message: msg,
                status: Some(ToolStatus::NotRun),
                typed: None,
            };
            log.append(&rec)?;
            records.push(rec);
        }
        if !repair.closed_calls.is_empty() {
            log.append(&Record::Note {
                text: format!(
                    "resume: closed {} tool call(s) whose results were never recorded",
                    repair.closed_calls.len()
                ),
            })?;
        }
        // A prompt the model never answered (mm was killed mid-stream):
        // the next prompt would make two user messages in a row, which
        // strict chat templates reject.
        if let Some(answer) = repair::unanswered_prompt(&records) {
            let rec = Record::Message {
                message: answer,
                status: None,
                typed: None,
            };
            log.append(&rec)?;
            records.push(rec);
            repair.answered_prompt = true;
            log.append(&Record::Note {
                text: "resume: the last prompt had no answer; marked as interrupted".into(),
            })?;
        }
        Ok((log, records, repair))
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and syncs it to disk before returning.
    pub fn append(&mut self, rec: &Record) -> Result<(), SessionError> {
        let mut line =
            serde_json::to_vec(rec).map_err(|e| io_err(&self.path)(std::io::Error::other(e)))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))?;
        // What the user allowed for good is also written down outside the
        // workspace: a record in the log alone (code in the fence can
        // write a log under a nested `.mm`) grants nothing.
        if let Record::Always { key } = rec {
            remember_always(&self.root, &self.id, key);
        }
        Ok(())
    }

    /// Records that are not "always" answers, in one write and one sync.
    pub fn append_all(&mut self, recs: &[Record]) -> Result<(), SessionError> {
        if recs.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::new();
        for rec in recs {
            if matches!(rec, Record::Always { .. }) {
                self.append(rec)?;
                continue;
            }
            serde_json::to_writer(&mut lines, rec)
                .map_err(|e| io_err(&self.path)(std::io::Error::other(e)))?;
            lines.push(b'\n');
        }
        self.file.write_all(&lines).map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))?;
        Ok(())
    }

    /// A user message with the words the user typed.
    pub fn append_prompt(&mut self, message: &Message, typed: &str) -> Result<(), SessionError> {
        let typed = (message.text() != typed).then(|| typed.to_string());
        self.append(&Record::Message {
            message: message.clone(),
            status: None,
            typed,
        })
    }

    pub fn append_message(
        &mut self,
        message: &Message,
        status: Option<ToolStatus>,
    ) -> Result<(), SessionError> {
        self.append(&Record::Message {
            message: message.clone(),
            status,
            typed: None,
        })
    }
}

/// The conversation as the model sees it, compactions applied, and where
/// each turn starts in it (a turn a compaction summarized starts at the
/// summary, index 0).
pub fn conversation(records: &[Record]) -> (Vec<Message>, Vec<usize>) {
    build(records, true)
}

/// The ids of the tool calls that went through (`Ok`).
pub fn ok_calls(records: &[Record]) -> std::collections::HashSet<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Message {
                message,
                status: Some(ToolStatus::Ok),
                ..
            } => message.tool_call_id.clone(),
            _ => None,
        })
        .collect()
}

/// Every message recorded, compactions not applied, and the turn starts
/// in that list.
pub fn uncompacted(records: &[Record]) -> (Vec<Message>, Vec<usize>) {
    build(records, false)
}

fn build(records: &[Record], compact: bool) -> (Vec<Message>, Vec<usize>) {
    // Older logs have no turn markers: every user message starts one.
    let has_markers = records.iter().any(|r| matches!(r, Record::Turn { .. }));
    let (mut msgs, mut starts) = (Vec::new(), Vec::new());
    let mut pending = false;
    for r in records {
        match r {
            Record::Turn { .. } => pending = true,
            Record::Message { message, .. } => {
                if (has_markers && pending) || (!has_markers && message.role == Role::User) {
                    starts.push(msgs.len());
                }
                pending = false;
                msgs.push(message.clone());
            }
            Record::Compacted {
                replaced, message, ..
            } if compact => {
                let replaced = (*replaced).min(msgs.len());
                msgs.splice(..replaced, [message.clone()]);
                for s in &mut starts {
                    *s = if *s < replaced { 0 } else { *s - replaced + 1 };
                }
            }
            _ => {}
        }
    }
    (msgs, starts)
}

/// The messages of a record list as the model sees them, in order.
pub fn messages(records: &[Record]) -> Vec<Message> {
    conversation(records).0
}

/// Where each turn starts in `messages(records)`: the message after a
/// `Turn` record (older logs without them: every user message).
pub fn turn_starts(records: &[Record]) -> Vec<usize> {
    conversation(records).1
}

/// True when the log was started in `root` (its header says so): a log
/// that came with a cloned repository was not, and its "always" answers
/// are not taken.
pub fn started_in(records: &[Record], root: &Path) -> bool {
    // The first record is the header; its folder is an absolute path (a
    // relative one resolved against wherever mm runs), and this user's mm
    // wrote down that it started the session there: a log planted in a
    // cloned repository, whatever its header says, grants nothing.
    let Some(Record::Header { cwd, id, .. }) = records.first() else {
        return false;
    };
    let cwd = Path::new(cwd);
    let here =
        cwd.is_absolute() && (cwd == root || std::fs::canonicalize(cwd).is_ok_and(|c| c == root));
    here && registered(root, id)
}

const STARTED: &str = "sessions-started.tsv";
const ALWAYS: &str = "always-answers.tsv";

/// The file in mm's data folder where each session it starts is written
/// down with its workspace (`root<TAB>id` lines).
fn registry() -> Option<std::path::PathBuf> {
    crate::config::data_dir().map(|d| d.join(STARTED))
}

/// Writes down that this user's mm started session `id` in `root`.
fn register(root: &Path, id: &str) {
    let _ = crate::config::append_data_line(STARTED, &format!("{}\t{id}", root.to_string_lossy()));
}

/// True when this user's mm started session `id` in `root`.
fn registered(root: &Path, id: &str) -> bool {
    let Some(path) = registry() else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let line = format!("{}\t{id}", root.to_string_lossy());
    text.lines().any(|l| l == line)
}

/// The bytes a token of the log's last request the server measured
/// (None when none did): a resumed session's gauge counts with it, not
/// with the default.
pub fn bytes_per_token(records: &[Record]) -> Option<f64> {
    records.iter().rev().find_map(|r| match r {
        Record::Request {
            prompt,
            bytes: Some(bytes),
            ..
        } if *prompt >= 100 => {
            let ratio = *bytes as f64 / *prompt as f64;
            (1.0..=10.0).contains(&ratio).then_some(ratio)
        }
        _ => None,
    })
}

/// The notes a log owes its next message: those after its last turn began.
pub fn carried(records: &[Record]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        match r {
            Record::Turn { .. } => out.clear(),
            Record::Carried { text } => out.push(text.clone()),
            _ => {}
        }
    }
    out
}

/// The "always" answers recorded in a log.
pub fn always_keys(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Always { key } => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// The "always" answers of a log that this user's mm also wrote down for
/// its session in `root` (a record forged into the log is not among them).
pub fn held_always_keys(records: &[Record], root: &Path) -> Vec<String> {
    let Some(Record::Header { id, .. }) = records.first() else {
        return Vec::new();
    };
    let Some(text) = always_registry().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return Vec::new();
    };
    let prefix = format!("{}\t{id}\t", root.to_string_lossy());
    let held: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect();
    let mut keys = always_keys(records);
    keys.retain(|k| held.contains(k.as_str()));
    keys.sort();
    keys.dedup();
    keys
}

/// The file in mm's data folder where each "always" answer is written
/// down with its workspace and session (`root<TAB>id<TAB>key` lines).
fn always_registry() -> Option<std::path::PathBuf> {
    crate::config::data_dir().map(|d| d.join(ALWAYS))
}

fn remember_always(root: &Path, id: &str, key: &str) {
    // A key is one line of the record: one with a line break is not
    // written (and so never held).
    if !key.contains(['\n', '\r']) {
        let _ = crate::config::append_data_line(
            ALWAYS,
            &format!("{}\t{id}\t{key}", root.to_string_lossy()),
        );
    }
}

/// The model the session last switched to with `/model`, if it did.
pub fn switched_model(records: &[Record]) -> Option<String> {
    records.iter().rev().find_map(|r| match r {
        Record::Model { model } => Some(model.clone()),
        _ => None,
    })
}

/// The checkpoints recorded in a log, oldest first.
pub fn checkpoints(records: &[Record]) -> Vec<CheckpointInfo> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Checkpoint { checkpoint } => Some(checkpoint.clone()),
            _ => None,
        })
        .collect()
}

/// A name mm could have given a session (`20261130-160000-1a2b3c`): other
/// files in `.mm/sessions` (one planted with an escape sequence in its
/// name) are not sessions.
fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `last` is the session most recently written to; anything else is an id
/// (a unique prefix is enough).
pub fn resolve_id(root: &Path, which: &str) -> Result<String, SessionError> {
    let dir = sessions_dir(root);
    let mut entries: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&dir)
        .map_err(|_| SessionError::NotFound(which.into(), dir.clone()))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name
                .strip_suffix(".jsonl")
                .filter(|i| is_session_id(i))?
                .to_string();
            let modified = e.metadata().ok()?.modified().ok()?;
            Some((modified, id))
        })
        .collect();
    if which == "last" {
        // The latest of the sessions this user's mm started here: a log
        // that came with the repository (or was planted with a date in
        // the future) is resumed only by its id.
        let mine: std::collections::HashSet<String> = registry()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| {
                let prefix = format!("{}\t", root.to_string_lossy());
                t.lines()
                    .filter_map(|l| l.strip_prefix(&prefix))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        entries.retain(|(_, id)| mine.contains(id));
        entries.sort();
        return entries
            .pop()
            .map(|(_, id)| id)
            .ok_or(SessionError::NotFound("last".into(), dir));
    }
    let matching: Vec<&String> = entries
        .iter()
        .map(|(_, id)| id)
        .filter(|id| id.as_str() == which || id.starts_with(which))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        _ if entries.iter().any(|(_, id)| id == which) => Ok(which.to_string()),
        _ => Err(SessionError::NotFound(which.into(), dir)),
    }
}

/// The records of a log's bytes, as a resume reads them (a torn last line
/// left out; damage elsewhere is an error).
pub fn parse_log(bytes: &[u8]) -> Result<Vec<Record>, SessionError> {
    Ok(repair::parse(Path::new("log"), bytes)?.records)
}

/// Reads a log without locking or repairing it (for `-show`).
pub fn read_records(root: &Path, which: &str) -> Result<(String, Vec<Record>), SessionError> {
    let id = resolve_id(root, which)?;
    let name = format!("{id}.jsonl");
    let path = sessions_dir(root).join(&name);
    let bytes = sessions(root).and_then(|d| d.read(&name).map_err(io_err(&path)))?;
    let parsed = repair::parse(&path, &bytes)?;
    Ok((id, parsed.records))
}

/// One line of `-sessions`.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub id: String,
    pub messages: usize,
    pub bytes: u64,
    pub first_prompt: String,
    /// The title `auxModel` gave it, if any.
    pub title: Option<String>,
}

impl SessionInfo {
    /// What a list of sessions shows of it: its title, else the first
    /// line of its first prompt.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.first_prompt)
    }
}

/// Every session in the workspace, most recent first.
pub fn list(root: &Path) -> Vec<SessionInfo> {
    let dir = sessions_dir(root);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let Ok(sessions) = sessions(root) else {
        return Vec::new();
    };
    let mut out: Vec<(std::time::SystemTime, SessionInfo)> = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".jsonl").filter(|i| is_session_id(i)) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        let text = sessions
            .read(&name)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let mut messages = 0;
        let mut first_prompt = String::new();
        let mut title = None;
        for line in text.lines() {
            match serde_json::from_str::<Record>(line) {
                Ok(Record::Message { message, typed, .. }) => {
                    messages += 1;
                    if first_prompt.is_empty() && message.role == Role::User {
                        let text = typed.as_deref().unwrap_or(message.text());
                        first_prompt = text.lines().next().unwrap_or("").to_string();
                    }
                }
                Ok(Record::Title { title: t }) => title = Some(t),
                _ => {}
            }
        }
        out.push((
            meta.modified().unwrap_or(std::time::UNIX_EPOCH),
            SessionInfo {
                id: id.to_string(),
                messages,
                bytes: meta.len(),
                first_prompt,
                title,
            },
        ));
    }
    out.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    out.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_resumed_session_counts_tokens_with_its_last_measured_request() {
        let req = |prompt: u64, bytes: Option<u64>| Record::Request {
            turn: 1,
            round: 1,
            prompt,
            cached: 0,
            completion: 1,
            first_token_ms: None,
            ms: 1,
            stopped: None,
            as_compact: None,
            as_rebuild: None,
            bytes,
        };
        assert_eq!(bytes_per_token(&[]), None);
        // A side request (no bytes) and a tiny one do not count.
        let records = vec![req(1000, Some(2500)), req(50, Some(400)), req(900, None)];
        assert_eq!(bytes_per_token(&records), Some(2.5));
        assert_eq!(
            bytes_per_token(&[req(1000, Some(50_000))]),
            None,
            "not a ratio"
        );
    }

    #[test]
    fn a_new_log_is_private_ignored_and_locked() {
        let dir = tempfile::tempdir().unwrap();
        let log = SessionLog::create(dir.path(), "local", "m").unwrap();
        let mode = std::fs::metadata(log.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(dir.path().join(".mm/.gitignore").exists());
        let err = SessionLog::resume(dir.path(), log.id()).unwrap_err();
        assert!(matches!(err, SessionError::Locked(_)), "{err}");
    }

    #[test]
    fn appended_messages_come_back_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path(), "local", "m").unwrap();
        log.append_message(&Message::user("hello"), None).unwrap();
        log.append_message(&Message::assistant("hi"), None).unwrap();
        let id = log.id().to_string();
        drop(log);
        let (_log, records, repair) = SessionLog::resume(dir.path(), "last").unwrap();
        assert_eq!(messages(&records).len(), 2);
        assert_eq!(repair.torn_bytes, 0);
        assert_eq!(resolve_id(dir.path(), &id[..10]).unwrap(), id);
        let listed = list(dir.path());
        assert_eq!(listed[0].messages, 2);
        assert_eq!(listed[0].first_prompt, "hello");
    }
}
