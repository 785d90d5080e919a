//! Project instructions, as the other agents read them: `AGENTS.md` (or
//! `CLAUDE.md` in a folder without one) from the git root down to the
//! workspace, after the user's own `~/.config/mm/AGENTS.md`, go into the
//! system prompt; a folder below the workspace with its own file applies
//! to its subtree, so its file joins the result of the first tool call
//! that reads or changes a file there.
//!
//! Every request carries what goes into the system prompt, so it is
//! capped (`MAX_BYTES`) and the user is told when it is cut.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the system prompt carries of instructions, all files together;
/// a nested file gets as much again when it is shown.
pub const MAX_BYTES: usize = 6 * 1024;

/// The names looked for in a folder, in order: the first that is a
/// readable regular file is that folder's instructions.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// One file's instructions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// How the prompt and the notes name it: `~/.config/mm/AGENTS.md`, a
    /// path relative to the workspace (`AGENTS.md`, `../AGENTS.md`).
    pub label: String,
    pub text: String,
}

/// The instructions for the system prompt, and what to tell the user.
#[derive(Debug, Default)]
pub struct ForPrompt {
    pub files: Vec<File>,
    /// Said once at start (a cut).
    pub notes: Vec<String>,
}

impl ForPrompt {
    /// The prompt's section, or empty.
    pub fn section(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            out.push_str(&format!("\nInstructions ({}):\n{}\n", f.label, f.text));
        }
        out
    }
}

/// A text file of at most 256 KiB, only if it is a regular file (a FIFO
/// named AGENTS.md froze mm before its first request) and valid UTF-8.
fn read_text(path: &Path) -> Option<String> {
    let bytes = crate::paths::read_regular(path, 256 * 1024).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The folder's instructions file, read only when it resolves inside
/// `within` (a file linked to `~/.ssh/id_rsa` is not sent to the model).
fn folder_file(dir: &Path, within: &Path) -> Option<(PathBuf, String)> {
    for name in NAMES {
        let path = dir.join(name);
        // Inside, and nothing the file tools would refuse under another
        // name (an AGENTS.md linked to `.env`, to `.git/config`, to a
        // session log).
        let Ok(real) = crate::paths::own_file(&path, within) else {
            continue;
        };
        // Opened as checked: a folder swapped for a link since is not
        // followed (a language server in the fence runs beside mm).
        let text = crate::paths::read_checked(&real, 256 * 1024)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        if let Some(text) = text {
            return Some((path, text));
        }
    }
    None
}

/// The git root at or above `root` (canonical), if any.
fn git_root(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|p| p.join(".git").exists())
        .map(Path::to_path_buf)
}

fn label(path: &Path, root: &Path) -> String {
    if let Ok(rel) = path.strip_prefix(root) {
        return rel.to_string_lossy().into_owned();
    }
    let mut up = String::new();
    for a in root.ancestors().skip(1) {
        up.push_str("../");
        if let Ok(rel) = path.strip_prefix(a) {
            return format!("{up}{}", rel.to_string_lossy());
        }
    }
    path.to_string_lossy().into_owned()
}

/// Cuts `text` to `max` bytes on a character boundary; true when cut.
fn cut(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    true
}

/// The instructions for a session in `root` (canonical): the user's
/// file, then each folder's from the git root down to `root`.
pub fn for_prompt(root: &Path, user_dir: Option<&Path>) -> ForPrompt {
    let mut files = Vec::new();
    if let Some(dir) = user_dir
        && let Some(text) = read_text(&dir.join("AGENTS.md"))
    {
        files.push(File {
            label: "~/.config/mm/AGENTS.md".into(),
            text,
        });
    }
    let top = git_root(root).unwrap_or_else(|| root.to_path_buf());
    let mut dirs: Vec<&Path> = root
        .ancestors()
        .take_while(|p| p.starts_with(&top))
        .collect();
    dirs.reverse();
    for dir in dirs {
        if let Some((path, text)) = folder_file(dir, &top) {
            files.push(File {
                label: label(&path, root),
                text,
            });
        }
    }
    let mut notes = Vec::new();
    let mut left = MAX_BYTES;
    // The nearest files matter most: the budget goes from the workspace
    // up, and the user's file last.
    for f in files.iter_mut().rev() {
        let full = f.text.len();
        if left == 0 {
            notes.push(format!(
                "{} is left out: the instructions nearer the workspace fill the {MAX_BYTES} bytes that go into every request",
                f.label
            ));
            f.text.clear();
            continue;
        }
        if cut(&mut f.text, left) {
            f.text.push_str(&format!(
                "\n[cut: {MAX_BYTES} bytes of instructions go into every request]"
            ));
            notes.push(format!(
                "{} is {full} bytes: only the first {} go to the model (instructions go into every request; the limit for all of them is {MAX_BYTES} bytes)",
                f.label,
                left
            ));
        }
        left = left.saturating_sub(f.text.len());
    }
    files.retain(|f| !f.text.trim().is_empty());
    ForPrompt { files, notes }
}

/// The instruction files of folders below the workspace, shown once each.
#[derive(Default)]
pub struct Nested {
    shown: Mutex<HashSet<PathBuf>>,
}

impl Nested {
    /// The instructions of the folders between `root` (exclusive) and the
    /// file `abs` not shown yet in this session, as a note for the tool
    /// result; empty when there are none.
    pub fn for_file(&self, root: &Path, abs: &Path) -> String {
        let Ok(rel) = abs.strip_prefix(root) else {
            return String::new();
        };
        let mut out = String::new();
        let mut dir = root.to_path_buf();
        let parts: Vec<_> = rel.components().collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            dir.push(part);
            let Ok(mut shown) = self.shown.lock() else {
                return out;
            };
            if shown.contains(&dir) {
                continue;
            }
            shown.insert(dir.clone());
            drop(shown);
            if let Some((path, mut text)) = folder_file(&dir, root) {
                if cut(&mut text, MAX_BYTES) {
                    text.push_str(&format!("\n[cut at {MAX_BYTES} bytes]"));
                }
                out.push_str(&format!(
                    "\n[instructions for {}/ and below ({}):]\n{text}",
                    label(&dir, root),
                    label(&path, root)
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    #[test]
    fn files_from_the_git_root_down_with_claude_md_where_no_agents_md() {
        let d = tempfile::tempdir().unwrap();
        let top = canon(d.path());
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("AGENTS.md"), "top rules").unwrap();
        std::fs::write(top.join("CLAUDE.md"), "not read: AGENTS.md is there").unwrap();
        std::fs::write(top.join("a/CLAUDE.md"), "a rules").unwrap();
        std::fs::write(top.join("a/b/AGENTS.md"), "b rules").unwrap();
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("AGENTS.md"), "my rules").unwrap();
        let p = for_prompt(&top.join("a/b"), Some(user.path()));
        let labels: Vec<&str> = p.files.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "~/.config/mm/AGENTS.md",
                "../../AGENTS.md",
                "../CLAUDE.md",
                "AGENTS.md"
            ]
        );
        let s = p.section();
        assert!(s.find("my rules") < s.find("top rules"));
        assert!(s.find("a rules") < s.find("b rules"));
        assert!(!s.contains("not read"));
        assert!(p.notes.is_empty());
        // Without git, only the workspace's own folder.
        let plain = tempfile::tempdir().unwrap();
        let plain = canon(plain.path());
        std::fs::create_dir_all(plain.join("w")).unwrap();
        std::fs::write(plain.join("AGENTS.md"), "above, not a repository").unwrap();
        std::fs::write(plain.join("w/AGENTS.md"), "w rules").unwrap();
        let p = for_prompt(&plain.join("w"), None);
        assert_eq!(p.section(), "\nInstructions (AGENTS.md):\nw rules\n");
    }

    #[test]
    fn a_long_file_is_cut_and_said_and_a_link_out_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let top = canon(d.path());
        std::fs::write(top.join("AGENTS.md"), "x".repeat(MAX_BYTES + 100)).unwrap();
        let p = for_prompt(&top, None);
        assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
        assert!(
            p.notes[0].starts_with("AGENTS.md is 6244 bytes"),
            "{:?}",
            p.notes
        );
        assert!(p.section().contains("[cut: "));
        let secret = tempfile::tempdir().unwrap();
        std::fs::write(secret.path().join("id"), "SECRET").unwrap();
        let w = tempfile::tempdir().unwrap();
        let w = canon(w.path());
        std::os::unix::fs::symlink(secret.path().join("id"), w.join("AGENTS.md")).unwrap();
        assert!(for_prompt(&w, None).files.is_empty());
        std::fs::write(w.join(".env"), "KEY=1").unwrap();
        std::fs::remove_file(w.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(w.join(".env"), w.join("AGENTS.md")).unwrap();
        assert!(for_prompt(&w, None).files.is_empty());
    }

    #[test]
    fn a_subfolder_file_is_shown_once_with_the_first_file_under_it() {
        let d = tempfile::tempdir().unwrap();
        let root = canon(d.path());
        std::fs::create_dir_all(root.join("web/ui")).unwrap();
        std::fs::write(root.join("web/AGENTS.md"), "use tabs").unwrap();
        let n = Nested::default();
        assert_eq!(n.for_file(&root, &root.join("top.py")), "");
        let first = n.for_file(&root, &root.join("web/ui/app.js"));
        assert_eq!(
            first,
            "\n[instructions for web/ and below (web/AGENTS.md):]\nuse tabs"
        );
        assert_eq!(n.for_file(&root, &root.join("web/x.js")), "");
    }
}
