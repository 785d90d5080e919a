//! glob and grep, in-process with the `ignore` and `regex` crates: a tool
//! that shells out to a binary that is not installed fails offline (seen on
//! another agent whose grep needed ripgrep).

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use super::{ToolOutput, arg_str};
use crate::sandbox::Sandbox;

const MAX_GLOB_RESULTS: usize = 200;
const MAX_GREP_MATCHES: usize = 100;
const MAX_GREP_LINE: usize = 240;
const MAX_GREP_FILE: u64 = 2 * 1024 * 1024;

fn walker(base: &Path) -> ignore::Walk {
    crate::paths::walk(base)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build()
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The `path` argument, which must exist.
fn existing(
    sandbox: &Sandbox,
    args: &Map<String, Value>,
) -> Result<crate::sandbox::Resolved, ToolOutput> {
    let r = sandbox
        .check_read(arg_str(args, crate::toolname::arg::PATH).unwrap_or("."))
        .map_err(ToolOutput::refused)?;
    if !r.abs.exists() {
        return Err(ToolOutput::error(format!(
            "no such file or folder: {}{}",
            r.rel,
            super::fs::missing_hint(sandbox, &r)
        )));
    }
    Ok(r)
}

pub fn glob(sandbox: &Sandbox, args: &Map<String, Value>) -> ToolOutput {
    let pattern = arg_str(args, crate::toolname::arg::PATTERN)
        .unwrap_or_default()
        .trim();
    let base = match existing(sandbox, args) {
        Ok(r) => r,
        Err(out) => return out,
    };
    // A pattern without `/` matches file names at any depth.
    let full = if pattern.contains('/') {
        pattern.trim_start_matches("./").to_string()
    } else {
        format!("**/{pattern}")
    };
    let matcher = match globset::GlobBuilder::new(&full)
        .literal_separator(true)
        .build()
    {
        Ok(g) => g.compile_matcher(),
        Err(e) => return ToolOutput::error(format!("invalid glob {pattern:?}: {e}")),
    };
    let root = sandbox.root();
    let mut hits = Vec::new();
    let mut total = 0;
    for entry in walker(&base.abs).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel_base = rel_of(&base.abs, entry.path());
        if matcher.is_match(&rel_base) {
            total += 1;
            if hits.len() < MAX_GLOB_RESULTS {
                hits.push(rel_of(root, entry.path()));
            }
        }
    }
    if hits.is_empty() {
        return ToolOutput::ok(format!("no files match {pattern:?}"));
    }
    let mut out = hits.join("\n");
    if total > hits.len() {
        out.push_str(&format!("\n… and {} more", total - hits.len()));
    }
    ToolOutput::ok(out)
}

pub fn grep(sandbox: &Sandbox, args: &Map<String, Value>) -> ToolOutput {
    let pattern = arg_str(args, crate::toolname::arg::PATTERN).unwrap_or_default();
    let base = match existing(sandbox, args) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let (re, note) = match regex::Regex::new(pattern) {
        Ok(re) => (re, ""),
        Err(_) => match regex::Regex::new(&regex::escape(pattern)) {
            Ok(re) => (re, "(not a valid regex; searched for the literal text)\n"),
            Err(e) => return ToolOutput::error(format!("invalid pattern: {e}")),
        },
    };
    let filter = match arg_str(args, "glob").filter(|g| !g.is_empty()) {
        Some(g) => {
            let g = if g.contains('/') {
                g.to_string()
            } else {
                format!("**/{g}")
            };
            match globset::Glob::new(&g) {
                Ok(g) => Some(g.compile_matcher()),
                Err(e) => return ToolOutput::error(format!("invalid glob: {e}")),
            }
        }
        None => None,
    };
    let root = sandbox.root();
    let mut out = String::from(note);
    let mut shown = 0;
    let mut total = 0;
    let files: Box<dyn Iterator<Item = std::path::PathBuf>> = if base.abs.is_file() {
        Box::new(std::iter::once(base.abs.clone()))
    } else {
        Box::new(
            walker(&base.abs)
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(ignore::DirEntry::into_path),
        )
    };
    for path in files {
        let rel = rel_of(root, &path);
        // What read_file would refuse is not searched either: a
        // credential, a git dir's token under any name, a file with
        // other names, mm's records.
        let Ok(checked) = sandbox.check_read(&rel) else {
            continue;
        };
        if let Some(f) = &filter
            && !f.is_match(&rel)
        {
            continue;
        }
        // Opened as checked: no link followed, nothing but a regular
        // file (a FIFO swapped in would block), no other names.
        let Ok(bytes) = crate::paths::read_checked(&checked.abs, MAX_GREP_FILE) else {
            continue;
        };
        let mut reader = BufReader::new(std::io::Cursor::new(bytes));
        let mut buf = Vec::new();
        let mut line_no = 0;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            line_no += 1;
            if buf.contains(&0) {
                break; // binary
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if re.is_match(line) {
                total += 1;
                if shown < MAX_GREP_MATCHES {
                    shown += 1;
                    let cut: String = line.chars().take(MAX_GREP_LINE).collect();
                    out.push_str(&format!("{rel}:{line_no}: {}\n", cut.trim_start()));
                }
            }
        }
    }
    if total == 0 {
        out.push_str(&format!("no matches for {pattern:?}"));
    } else if total > shown {
        out.push_str(&format!(
            "… {} more matches not shown; narrow the search\n",
            total - shown
        ));
    }
    ToolOutput::ok(out)
}
