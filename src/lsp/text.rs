//! Positions between the model's words (a symbol name, 1-based line and
//! column in characters) and LSP's (0-based line, UTF-16 column), and the
//! short text the tools return.

use std::path::Path;

use lsp_types::{Diagnostic, Location, Position};

use super::store::is_error;

/// The UTF-16 column of character `col` (0-based) in `line`.
pub fn utf16_col(line: &str, col: usize) -> u32 {
    line.chars().take(col).map(|c| c.len_utf16() as u32).sum()
}

/// The character column (0-based) of UTF-16 column `col` in `line`.
pub fn char_col(line: &str, col: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in line.chars().enumerate() {
        if units >= col {
            return i;
        }
        units += c.len_utf16() as u32;
    }
    line.chars().count()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `symbol` occurs as a whole word: on `line` (1-based) when given,
/// else its first occurrence in the file. For a dotted name (`obj.method`)
/// the last part is looked up.
pub fn find_symbol(text: &str, symbol: &str, line: Option<usize>) -> Option<Position> {
    let name = symbol.rsplit(['.', ':']).next().unwrap_or(symbol).trim();
    if name.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let candidates: Box<dyn Iterator<Item = usize>> = match line {
        Some(l) if l >= 1 && l <= lines.len() => Box::new(std::iter::once(l - 1)),
        Some(_) => return None,
        None => Box::new(0..lines.len()),
    };
    for i in candidates {
        let l = lines[i];
        let mut start = 0;
        while let Some(off) = l[start..].find(name) {
            let at = start + off;
            let before = l[..at].chars().next_back();
            let after = l[at + name.len()..].chars().next();
            if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
                let col = l[..at].chars().count();
                return Some(Position::new(i as u32, utf16_col(l, col)));
            }
            start = at + name.len();
        }
    }
    None
}

/// A 1-based line and character column, as the model gives them.
pub fn position(text: &str, line: usize, col: usize) -> Option<Position> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    Some(Position::new(
        (line - 1) as u32,
        utf16_col(l, col.saturating_sub(1)),
    ))
}

/// `path` relative to `root` when inside it.
pub fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// One location as `path:line:col: source line`.
///
/// The server names the path, and code running beside it in its fence
/// could answer in its place: the line is read only from a regular file
/// that really lies in the workspace (`..` and links resolved) and that
/// the file tools could read; of anything else only the place is told.
pub fn location_line(root: &Path, loc: &Location) -> Option<(String, u32, u32, String)> {
    let path = loc.uri.to_file_path().ok()?;
    let readable = path
        .strip_prefix(root)
        .ok()
        .and_then(|r| crate::paths::resolve(root, &r.to_string_lossy()).ok())
        .filter(|r| crate::paths::read_refusal(root, r).is_none());
    let text = readable
        .and_then(|r| crate::paths::read_checked(&r.abs, 8 << 20).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let line = loc.range.start.line as usize;
    let src = text.lines().nth(line).unwrap_or("");
    let col = char_col(src, loc.range.start.character) + 1;
    Some((
        rel(root, &path),
        line as u32 + 1,
        col as u32,
        src.trim().chars().take(120).collect(),
    ))
}

/// Locations as text, at most `max`, the rest counted.
pub fn locations(root: &Path, locs: &[Location], max: usize) -> String {
    let mut out = String::new();
    for loc in locs.iter().take(max) {
        if let Some((p, l, c, src)) = location_line(root, loc) {
            out.push_str(&format!("{p}:{l}:{c}: {src}\n"));
        }
    }
    if locs.len() > max {
        out.push_str(&format!("… and {} more\n", locs.len() - max));
    }
    out
}

/// The errors of one file for the model: every error now in it, the ones
/// this change brought in marked, capped.
pub fn error_report(
    server: &str,
    rel_path: &str,
    content: &str,
    now: &[Diagnostic],
    before: Option<&[Diagnostic]>,
    max: usize,
) -> (String, usize, Option<usize>) {
    let errors: Vec<&Diagnostic> = now.iter().filter(|d| is_error(d)).collect();
    if errors.is_empty() {
        return (format!("{server}: no errors in {rel_path}"), 0, Some(0));
    }
    // Lines move when code is inserted above: compare messages, not places.
    let mut old: Vec<&str> = before
        .unwrap_or(&[])
        .iter()
        .filter(|d| is_error(d))
        .map(|d| d.message.as_str())
        .collect();
    let mut fresh = Vec::with_capacity(errors.len());
    for d in &errors {
        match old.iter().position(|m| *m == d.message) {
            Some(i) => {
                old.swap_remove(i);
                fresh.push(false);
            }
            None => fresh.push(before.is_some()),
        }
    }
    let new_count = before.map(|_| fresh.iter().filter(|f| **f).count());
    let head = match new_count {
        Some(n) => format!(
            "{server}: {} error(s) in {rel_path}, {n} new from this change:",
            errors.len()
        ),
        None => format!("{server}: {} error(s) in {rel_path}:", errors.len()),
    };
    let mut out = head;
    for (d, new) in errors.iter().zip(&fresh).take(max) {
        let msg: String = d
            .message
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        let line = content
            .lines()
            .nth(d.range.start.line as usize)
            .unwrap_or("");
        out.push_str(&format!(
            "\n{rel_path}:{}:{}: {msg}{}",
            d.range.start.line + 1,
            char_col(line, d.range.start.character) + 1,
            if *new { " (new)" } else { "" }
        ));
    }
    if errors.len() > max {
        out.push_str(&format!("\n… and {} more", errors.len() - max));
    }
    (out, errors.len(), new_count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{DiagnosticSeverity, Range};

    #[test]
    fn symbols_are_found_as_whole_words() {
        let text = "import math\ndef area(r):\n    return math.pi * r\narea(2)\n";
        assert_eq!(find_symbol(text, "area", None), Some(Position::new(1, 4)));
        assert_eq!(
            find_symbol(text, "area", Some(4)),
            Some(Position::new(3, 0))
        );
        assert_eq!(
            find_symbol(text, "math.pi", None),
            Some(Position::new(2, 16))
        );
        assert_eq!(find_symbol(text, "ar", None), None);
        assert_eq!(find_symbol(text, "area", Some(9)), None);
    }

    #[test]
    fn columns_count_utf16_units() {
        let line = "é😀x";
        assert_eq!(utf16_col(line, 2), 3);
        assert_eq!(char_col(line, 3), 2);
        assert_eq!(position("a\né😀x\n", 2, 3), Some(Position::new(1, 3)));
    }

    fn err(line: u32, msg: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 5)),
            severity: Some(DiagnosticSeverity::ERROR),
            message: msg.into(),
            ..Default::default()
        }
    }

    #[test]
    fn new_errors_are_told_apart_from_old_ones_that_moved() {
        let body = "xxxxxxxx\n".repeat(6);
        let before = vec![err(1, "old problem")];
        let now = vec![
            err(3, "old problem"),
            err(5, "\"sqroot\" is not a known attribute"),
        ];
        let (text, n, new) = error_report("pyright", "a.py", &body, &now, Some(&before), 10);
        assert_eq!((n, new), (2, Some(1)));
        assert!(text.contains("a.py:4:5: old problem\n"), "{text}");
        assert!(
            text.ends_with("a.py:6:5: \"sqroot\" is not a known attribute (new)"),
            "{text}"
        );
        let (text, _, new) = error_report("pyright", "a.py", &body, &now, None, 1);
        assert_eq!(new, None);
        assert!(text.ends_with("… and 1 more"), "{text}");
        let (text, n, _) = error_report("pyright", "a.py", &body, &[], Some(&before), 10);
        assert_eq!((text.as_str(), n), ("pyright: no errors in a.py", 0));
    }

    #[test]
    fn a_location_shows_a_line_only_of_a_workspace_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "SECRET-HASH\n").unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=abc\n").unwrap();
        std::os::unix::fs::symlink(&secret, root.join("leak.py")).unwrap();
        let at = |uri: &str| {
            let loc = Location {
                uri: uri.parse().unwrap(),
                range: Range::new(Position::new(0, 0), Position::new(0, 1)),
            };
            location_line(&root, &loc).unwrap().3
        };
        let base = format!("file://{}", root.display());
        assert_eq!(at(&format!("{base}/a.py")), "x = 1");
        let up = "..%2F".repeat(root.components().count());
        let escape = format!(
            "{base}/{up}{}",
            secret
                .display()
                .to_string()
                .trim_start_matches('/')
                .replace('/', "%2F")
        );
        assert!(
            std::fs::read_to_string(loc_path(&escape)).is_ok(),
            "the escape must point at the file"
        );
        assert_eq!(at(&escape), "");
        assert_eq!(at(&format!("{base}/leak.py")), "");
        assert_eq!(at(&format!("{base}/.env")), "");
        assert_eq!(at(&format!("file://{}", secret.display())), "");
        // Red-team round 24: a definition in git's config, which holds a
        // token, showed the token; the file tools' rule holds here too.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "\turl = https://oauth2:TOKEN123@example.com/r.git\n",
        )
        .unwrap();
        assert_eq!(at(&format!("{base}/.git/config")), "");
    }

    fn loc_path(uri: &str) -> std::path::PathBuf {
        uri.parse::<lsp_types::Url>()
            .unwrap()
            .to_file_path()
            .unwrap()
    }
}
