//! Hunks and line counts on top of `similar`, shared by the tools (a short
//! diff in an edit's result, so the model sees what its edit did) and the
//! front ends.

use similar::{ChangeTag, TextDiff};

/// Lines added and removed between two texts.
pub fn line_counts(before: &str, after: &str) -> (usize, usize) {
    let diff = TextDiff::from_lines(before, after);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// A unified diff with `context` lines around each change, cut to at most
/// `max_lines` lines (the cut is said).
pub fn unified(path: &str, before: &str, after: &str, context: usize, max_lines: usize) -> String {
    let diff = TextDiff::from_lines(before, after);
    let text = diff
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let total = text.lines().count();
    if total <= max_lines {
        return text;
    }
    let mut out: String = text
        .lines()
        .take(max_lines)
        .flat_map(|l| [l, "\n"])
        .collect();
    out.push_str(&format!("… ({} more diff lines)\n", total - max_lines));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines() {
        assert_eq!(line_counts("a\nb\nc\n", "a\nB\nc\nd\n"), (2, 1));
        assert_eq!(line_counts("", "x\n"), (1, 0));
    }

    #[test]
    fn unified_diffs_are_cut_with_a_note() {
        let before: String = (0..100).map(|i| format!("{i}\n")).collect();
        let after: String = (0..100).map(|i| format!("{}\n", i * 2)).collect();
        let d = unified("f.txt", &before, &after, 1, 10);
        assert!(d.starts_with("--- a/f.txt\n+++ b/f.txt\n"), "{d}");
        assert_eq!(d.lines().count(), 11);
        assert!(d.ends_with("more diff lines)\n"));
    }
}
