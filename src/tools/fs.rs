//! read_file, write_file, edit_file, list_dir: the file tools, jailed by
//! the sandbox. Reading is what makes a file editable: a write over an
//! existing file or an edit needs a read of its current content first.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::edit_match::{self, MatchError};
use super::{ToolEnv, ToolOutput, arg_str, arg_u64};
use crate::diff;
use crate::protocol::{ChangeKind, FileChange};
use crate::sandbox::{Resolved, Sandbox};

mod write;
pub use write::*;

/// Lines returned when the model does not say how many.
pub const DEFAULT_READ_LINES: usize = 500;
/// A read returns at most this much text; a small model's window is the limit.
const MAX_READ_BYTES: usize = 24 * 1024;
/// Longer lines are cut (minified files would fill the window in one line).
const MAX_LINE_CHARS: usize = 400;
/// Files bigger than this are not read whole.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

fn content_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Reads a file as UTF-8 text; binary files, huge files and anything but
/// a regular file are refused.
fn read_text(path: &Path, rel: &str) -> Result<String, String> {
    let bytes = crate::paths::read_checked(path, MAX_FILE_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            format!("cannot read {rel}: {}", io_reason(&e))
        }
        _ if e.to_string() == "is a directory" => format!("{rel} is a directory; use list_dir"),
        _ => format!("{rel} {e}"),
    })?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!("{rel} is a binary file"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{rel} is not UTF-8 text (binary?)"))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

pub fn read_file(env: &ToolEnv, args: &Map<String, Value>) -> ToolOutput {
    let path = arg_str(args, crate::toolname::arg::PATH).unwrap_or_default();
    let r = match env.sandbox.check_read(path) {
        Ok(r) => r,
        Err(e) => return ToolOutput::refused(e),
    };
    if crate::llm::images::is_image_name(&r.rel) && r.abs.is_file() {
        return read_image(env, &r);
    }
    let text = match read_text(&r.abs, &r.rel) {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("{e}{}", missing_hint(&env.sandbox, &r))),
    };
    env.remember_read(&r, &text);
    if text.is_empty() {
        return ToolOutput::ok(format!("{} is empty", r.rel));
    }
    let mut offset = arg_u64(args, crate::toolname::arg::OFFSET)
        .unwrap_or(1)
        .max(1) as usize;
    let mut limit = arg_u64(args, crate::toolname::arg::LIMIT)
        .map(|l| l as usize)
        .unwrap_or(DEFAULT_READ_LINES)
        .max(1);
    let total = text.lines().count();
    // A small model asks for a line or two of a short file and answers
    // from that: a short file comes back whole, whatever the range.
    if total <= WHOLE_BELOW && env.guard_writes {
        (offset, limit) = (1, DEFAULT_READ_LINES);
    }
    if offset > total {
        return ToolOutput::error(format!(
            "{} has {total} lines; offset {offset} is past the end",
            r.rel
        ));
    }
    let shown = numbered(&text, offset, limit);
    ToolOutput::ok(match (offset, outline(env, &r.rel, &text)) {
        (1, Some(o)) => format!("{o}\n{shown}"),
        _ => shown,
    })
}

/// A picture, for the model to see: the result says what it is and the
/// image goes with it, unless the model cannot take images.
fn read_image(env: &ToolEnv, r: &crate::sandbox::Resolved) -> ToolOutput {
    if env.vision.get() == Some(&false) {
        return ToolOutput::error(format!(
            "{} is an image, and this model cannot take images (its server says so)",
            r.rel
        ));
    }
    match crate::llm::images::from_file(&r.abs, &r.rel) {
        Ok(img) => {
            let mut out = ToolOutput::ok(format!(
                "{} is an image ({}, {}); it is shown to you with this result",
                r.rel,
                img.media_type,
                img.size()
            ));
            out.image = Some(Box::new(img));
            out
        }
        Err(e) => ToolOutput::error(e),
    }
}

/// Files of at most this many lines are read whole (with the harness on).
const WHOLE_BELOW: usize = 150;

/// The names a file defines, in one line above its content: a small
/// model that sees the list keeps them when it edits, and finds and
/// counts them without reading every line.
/// The workspace files it imports from are named too: where a value it
/// uses is defined is the next file to read.
fn outline(env: &ToolEnv, rel: &str, text: &str) -> Option<String> {
    if !env.guard_writes {
        return None;
    }
    let mut parts = Vec::new();
    let counted = super::guard::counted_definitions(text);
    if !counted.is_empty() && super::guard::definitions(text).len() <= 60 {
        parts.push(format!("defines {counted}"));
    }
    for (file, names) in super::guard::local_imports(env.sandbox.root(), rel, text)
        .into_iter()
        .take(6)
    {
        parts.push(if names.is_empty() || names.len() > 8 {
            format!("imports from {file}")
        } else {
            format!("imports {} from {file}", names.join(", "))
        });
    }
    (!parts.is_empty()).then(|| format!("({})", parts.join("; ")))
}

/// Lines `offset..offset+limit` (1-based) numbered like `cat -n`, long
/// lines cut, the whole bounded; says where to read on.
fn numbered(text: &str, offset: usize, limit: usize) -> String {
    let total = text.lines().count();
    let mut out = String::new();
    let mut last = offset - 1;
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        if out.len() > MAX_READ_BYTES {
            break;
        }
        let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
        let cut = if shown.len() < line.len() {
            " …[line cut]"
        } else {
            ""
        };
        out.push_str(&format!("{:>6}\t{shown}{cut}\n", i + 1));
        last = i + 1;
    }
    if last < total {
        out.push_str(&format!(
            "({} of {total} lines shown; read on with offset={})\n",
            last + 1 - offset,
            last + 1
        ));
    }
    out
}

/// A short list of the workspace's files for the first message of a
/// session: every file when there are few, else the top level. A small
/// model that sees the files does not invent paths.
pub fn workspace_overview(sandbox: &Sandbox) -> Option<String> {
    const MAX_LISTED: usize = 60;
    let root = sandbox.root();
    let mut files = Vec::new();
    let mut total = 0usize;
    let walker = crate::paths::walk(root)
        .max_depth(Some(4))
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for e in walker.flatten() {
        if !e.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        total += 1;
        if total > MAX_LISTED {
            break;
        }
        if let Ok(rel) = e.path().strip_prefix(root) {
            files.push(rel.to_string_lossy().into_owned());
        }
    }
    if total == 0 {
        return Some("(the workspace is empty)".into());
    }
    if total <= MAX_LISTED {
        return Some(files.join("\n"));
    }
    let mut top: Vec<String> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .filter(|e| e.file_name() != ".git" && e.file_name() != ".mm")
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    top.sort();
    top.truncate(MAX_LISTED);
    Some(format!(
        "{}\n(top level only; more than {MAX_LISTED} files in all)",
        top.join("\n")
    ))
}

/// Pictures in the workspace a prompt names (`@shot.png`), to go with
/// it: files `read_file` may read, whose bytes are an image; at most four.
/// A picture outside the workspace goes only when the user typed its path:
/// the front end reads those (`llm::images::typed`), never the agent from
/// a prompt that a command, a plan or a model may have written.
pub fn images_mentioned(env: &ToolEnv, prompt: &str) -> Vec<crate::llm::Image> {
    const MAX_IMAGES: usize = 4;
    let mut out: Vec<crate::llm::Image> = Vec::new();
    // A file an editor embeds in the prompt (`<file path=…>…</file>`, see
    // acp) is the file's words, not the user's: no path in it is read.
    let mut typed = String::new();
    let mut rest = prompt;
    while let Some(start) = rest.find("<file path=") {
        typed.push_str(&rest[..start]);
        rest = match rest[start..].find("</file>") {
            Some(end) => &rest[start + end + "</file>".len()..],
            None => "",
        };
    }
    typed.push_str(rest);
    for word in crate::llm::images::words(&typed) {
        let word = crate::llm::images::path_of_word(&word);
        if !crate::llm::images::is_image_name(&word) || out.len() >= MAX_IMAGES {
            continue;
        }
        let Ok(r) = env.sandbox.check_read(&word) else {
            continue;
        };
        if let Ok(img) = crate::llm::images::from_file(&r.abs, &r.rel)
            && !out.iter().any(|o| o.data == img.data)
        {
            out.push(img);
        }
    }
    out
}

/// Files a prompt names, attached to it so the model starts with their
/// content (and they count as read). Only small text files inside the
/// workspace; at most `MAX_ATTACHED`.
pub fn attach_mentioned(env: &ToolEnv, prompt: &str) -> Vec<(String, String)> {
    const MAX_ATTACHED: usize = 4;
    const MAX_ATTACHED_BYTES: u64 = 16 * 1024;
    let mut out: Vec<(String, String)> = Vec::new();
    for word in prompt.split_whitespace() {
        let word = word
            .trim_start_matches(['@', '`', '"', '\'', '('])
            .trim_end_matches(['`', '"', '\'', ')', ',', ';', ':', '.', '!', '?']);
        if word.len() < 3 || !(word.contains('.') || word.contains('/')) || word.contains("://") {
            continue;
        }
        let Ok(r) = env.sandbox.check_read(word) else {
            continue;
        };
        if out.iter().any(|(rel, _)| *rel == r.rel) {
            continue;
        }
        let small_file = std::fs::metadata(&r.abs)
            .map(|m| m.is_file() && m.len() <= MAX_ATTACHED_BYTES)
            .unwrap_or(false);
        if !small_file {
            continue;
        }
        let Ok(text) = read_text(&r.abs, &r.rel) else {
            continue;
        };
        env.remember_read(&r, &text);
        let body = if text.is_empty() {
            "(empty file)\n".to_string()
        } else {
            match outline(env, &r.rel, &text) {
                Some(o) => format!("{o}\n{}", numbered(&text, 1, DEFAULT_READ_LINES)),
                None => numbered(&text, 1, DEFAULT_READ_LINES),
            }
        };
        out.push((r.rel.clone(), body));
        if out.len() == MAX_ATTACHED {
            break;
        }
    }
    out
}

/// Writes through a private temp file in the same directory (created
/// exclusively, mode 0600) and a rename, so a crash leaves either the old
/// file or the new one; the old file's permissions are kept. The folder
/// is opened without following links (see `paths::write_checked`).
pub fn atomic_write(path: &Path, content: &str) -> std::io::Result<()> {
    crate::paths::write_checked(path, content.as_bytes(), None)
}

pub fn list_dir(env: &ToolEnv, args: &Map<String, Value>) -> ToolOutput {
    let path = arg_str(args, crate::toolname::arg::PATH).unwrap_or(".");
    let r = match env
        .sandbox
        .check_read(if path.is_empty() { "." } else { path })
    {
        Ok(r) => r,
        Err(e) => return ToolOutput::refused(e),
    };
    if !r.abs.is_dir() {
        return ToolOutput::error(format!("{} is not a directory", r.rel));
    }
    const MAX: usize = 300;
    let mut entries: Vec<String> = Vec::new();
    let walker = crate::paths::walk(&r.abs)
        .max_depth(Some(1))
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        entries.push(if is_dir { format!("{name}/") } else { name });
    }
    entries.sort_by_key(|e| (!e.ends_with('/'), e.clone()));
    let total = entries.len();
    if total == 0 {
        return ToolOutput::ok(format!(
            "{} is empty (or everything in it is ignored)",
            r.rel
        ));
    }
    let mut out = entries.into_iter().take(MAX).collect::<Vec<_>>().join("\n");
    if total > MAX {
        out.push_str(&format!("\n… and {} more", total - MAX));
    }
    ToolOutput::ok(out)
}

impl ToolEnv {
    /// A file as it is now counts as read (after a hook reformatted it).
    /// Returns its text, when it can be read.
    pub fn reread(&self, rel: &str) -> Option<String> {
        let r = self.sandbox.check_read(rel).ok()?;
        let text = crate::paths::read_checked_text(&r.abs).ok()?;
        self.remember_read(&r, &text);
        Some(text)
    }

    fn remember_read(&self, r: &Resolved, text: &str) {
        if let Ok(mut reads) = self.reads.lock() {
            reads.insert(r.abs.clone(), content_hash(text));
        }
    }

    /// The files read this session, with their content now.
    pub fn read_files_now(&self) -> Vec<(String, String)> {
        self.files_read(None)
    }

    /// The files read this session (but `except`), with their content now.
    fn read_files(&self, except: &Resolved) -> Vec<(String, String)> {
        self.files_read(Some(&except.abs))
    }

    fn files_read(&self, except: Option<&std::path::PathBuf>) -> Vec<(String, String)> {
        let mut paths: Vec<std::path::PathBuf> = match self.reads.lock() {
            Ok(reads) => reads
                .keys()
                .filter(|p| Some(*p) != except)
                .cloned()
                .collect(),
            Err(_) => return Vec::new(),
        };
        paths.sort();
        paths
            .into_iter()
            .filter_map(|p| {
                let rel = p
                    .strip_prefix(self.sandbox.root())
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                let text = self.small_text_now(&rel)?;
                Some((rel, text))
            })
            .collect()
    }

    /// A small file's text as it is now, when `read_file` would show it:
    /// the gate is asked again, since what was read may have become a
    /// link out of the workspace, to a credential or to a file with other
    /// names since (red-team round 15).
    fn small_text_now(&self, rel: &str) -> Option<String> {
        let r = self.sandbox.check_read(rel).ok()?;
        let bytes = crate::paths::read_checked(&r.abs, 64 * 1024).ok()?;
        String::from_utf8(bytes).ok().filter(|t| !t.contains('\0'))
    }

    /// The workspace's source files that were not read this session,
    /// with their content: small regular files, at most a few hundred.
    pub fn unread_sources(&self) -> Vec<(String, String)> {
        const EXTENSIONS: &[&str] = &[
            "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rs", "go", "rb", "sh", "c", "h", "cpp",
            "java",
        ];
        let root = self.sandbox.root();
        let read: Vec<std::path::PathBuf> = match self.reads.lock() {
            Ok(reads) => reads.keys().cloned().collect(),
            Err(_) => return Vec::new(),
        };
        crate::paths::walk(root)
            .max_depth(Some(4))
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter(|e| {
                e.path()
                    .extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| EXTENSIONS.contains(&x))
            })
            .filter(|e| !read.iter().any(|p| p == e.path()))
            .take(300)
            .filter_map(|e| {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                let text = self.small_text_now(&rel)?;
                Some((rel, text))
            })
            .collect()
    }

    /// Workspace files that files read this session import from but that
    /// were not read themselves: (file, the file importing it, the names
    /// it takes).
    pub fn unread_imports(&self) -> Vec<(String, String, Vec<String>)> {
        let root = self.sandbox.root();
        let read = self.read_files_now();
        let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
        for (rel, text) in &read {
            for (file, names) in super::guard::local_imports(root, rel, text) {
                if !read.iter().any(|(r, _)| *r == file) && !out.iter().any(|(f, _, _)| *f == file)
                {
                    out.push((file, rel.clone(), names));
                }
            }
        }
        out
    }

    /// The workspace files that import `rel` (same language), absolute.
    pub fn dependents(&self, rel: &str) -> Vec<std::path::PathBuf> {
        let root = self.sandbox.root();
        let Some(lang) = crate::lsp::language_of(&root.join(rel)) else {
            return Vec::new();
        };
        crate::paths::walk(root)
            .max_depth(Some(6))
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter(|e| crate::lsp::language_of(e.path()) == Some(lang))
            .take(400)
            .filter_map(|e| {
                let user = e
                    .path()
                    .strip_prefix(root)
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                if user == rel {
                    return None;
                }
                let text = read_text(e.path(), &user).ok()?;
                super::guard::local_imports(root, &user, &text)
                    .iter()
                    .any(|(f, _)| f == rel)
                    .then(|| e.path().to_path_buf())
            })
            .collect()
    }

    /// Records `rel` as read as it is now: mm read it for the model (a
    /// change proposed from a file the model saw only in a traceback).
    pub fn note_read(&self, rel: &str) {
        if let Ok(r) = self.sandbox.check_read(rel)
            && let Ok(text) = read_text(&r.abs, &r.rel)
        {
            self.remember_read(&r, &text);
        }
    }

    fn read_hash(&self, r: &Resolved) -> Option<u64> {
        self.reads.lock().ok()?.get(&r.abs).copied()
    }
}
