//! Hunks, intra-line spans and line counts on top of `similar`, shared by
//! the tools (a short diff in an edit's result, so the model sees what its
//! edit did; applying only the hunks a user accepted) and the front ends
//! (the diff pane, the approval overlay, the REPL's coloured diff).

use similar::{ChangeTag, DiffOp, TextDiff};

/// Context lines around each change in a hunk.
pub const CONTEXT: usize = 3;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// One line of a hunk; `segments` split its text into runs, `true` where
/// the run is the part of a modified line that changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    pub segments: Vec<(bool, String)>,
}

impl DiffLine {
    pub fn text(&self) -> String {
        self.segments.iter().map(|(_, s)| s.as_str()).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based first line in the old and the new text.
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Added)
            .count()
    }

    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Removed)
            .count()
    }

    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_len, self.new_start, self.new_len
        )
    }
}

/// The hunks between two texts, with the changed span inside each modified
/// line marked.
pub fn hunks(before: &str, after: &str, context: usize) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(before, after);
    let mut out = Vec::new();
    for group in diff.grouped_ops(context) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let new_start = first.new_range().start;
        let old_end = last.old_range().end;
        let new_end = last.new_range().end;
        let mut lines = Vec::new();
        for op in &group {
            for change in diff.iter_inline_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Equal => LineKind::Context,
                    ChangeTag::Insert => LineKind::Added,
                    ChangeTag::Delete => LineKind::Removed,
                };
                let mut segments: Vec<(bool, String)> = Vec::new();
                for (emph, text) in change.iter_strings_lossy() {
                    let t = text.replace(['\n', '\r'], "");
                    if t.is_empty() {
                        continue;
                    }
                    let emph = emph && kind != LineKind::Context;
                    match segments.last_mut() {
                        Some((e, s)) if *e == emph => s.push_str(&t),
                        _ => segments.push((emph, t)),
                    }
                }
                // A line that changed as a whole is not "partly" changed.
                if segments.iter().all(|(e, _)| *e) {
                    for seg in &mut segments {
                        seg.0 = false;
                    }
                }
                lines.push(DiffLine {
                    kind,
                    old_no: change.old_index().map(|i| i + 1),
                    new_no: change.new_index().map(|i| i + 1),
                    segments,
                });
            }
        }
        out.push(Hunk {
            old_start: old_start + 1,
            old_len: old_end - old_start,
            new_start: new_start + 1,
            new_len: new_end - new_start,
            lines,
        });
    }
    out
}

/// The text with only the changes of the accepted hunks applied (indices
/// into `hunks(before, after, CONTEXT)`); the rest of `before` is kept.
pub fn apply_hunks(before: &str, after: &str, accepted: &[usize]) -> String {
    let diff = TextDiff::from_lines(before, after);
    let groups = diff.grouped_ops(CONTEXT);
    // The same line split `from_lines` makes, so op ranges index into it.
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let group_of = |op: &DiffOp| {
        groups.iter().position(|g| {
            g.iter()
                .any(|o| o.old_range() == op.old_range() && o.new_range() == op.new_range())
        })
    };
    let mut out = String::with_capacity(before.len().max(after.len()));
    for op in diff.ops() {
        let take_new = match op {
            DiffOp::Equal { .. } => false,
            _ => group_of(op).is_some_and(|g| accepted.contains(&g)),
        };
        let lines = if take_new {
            &new[op.new_range()]
        } else {
            &old[op.old_range()]
        };
        for l in lines {
            out.push_str(l);
        }
    }
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

    #[test]
    fn a_modified_line_marks_only_the_changed_span() {
        let h = hunks("let total = a - b;\n", "let total = a + b;\n", 3);
        assert_eq!(h.len(), 1);
        let removed = &h[0].lines[0];
        assert_eq!(removed.kind, LineKind::Removed);
        assert_eq!(removed.text(), "let total = a - b;");
        let marked: Vec<&str> = removed
            .segments
            .iter()
            .filter(|(e, _)| *e)
            .map(|(_, s)| s.as_str())
            .collect();
        assert_eq!(marked, vec!["-"]);
        assert_eq!(h[0].lines[1].kind, LineKind::Added);
        assert_eq!(h[0].header(), "@@ -1,1 +1,1 @@");
    }

    #[test]
    fn hunks_carry_line_numbers_and_context() {
        let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 5\n", "line five\n")
            .replace("line 18\n", "");
        let h = hunks(&before, &after, 2);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].old_start, 3);
        assert_eq!(h[0].lines.first().unwrap().old_no, Some(3));
        assert_eq!((h[1].added(), h[1].removed()), (0, 1));
    }

    #[test]
    fn only_accepted_hunks_are_applied() {
        let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "line two\n")
            .replace("line 25\n", "line twenty-five\n");
        assert_eq!(hunks(&before, &after, CONTEXT).len(), 2);
        assert_eq!(apply_hunks(&before, &after, &[0, 1]), after);
        assert_eq!(apply_hunks(&before, &after, &[]), before);
        let first_only = apply_hunks(&before, &after, &[0]);
        assert!(first_only.contains("line two\n") && first_only.contains("line 25\n"));
        let second_only = apply_hunks(&before, &after, &[1]);
        assert!(second_only.contains("line 2\n") && second_only.contains("line twenty-five\n"));
    }
}
