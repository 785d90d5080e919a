//! Diff hunks as styled lines: line numbers, removed lines red, added
//! lines green, the changed span inside a modified line on a stronger
//! background, context lines in the file's syntax colours.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::Logical;
use crate::diff::{Hunk, LineKind};
use crate::tui::theme::Theme;

/// How hunks are shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct HunkMarks<'a> {
    /// The hunk the cursor is on.
    pub selected: Option<usize>,
    /// In review: which hunks are accepted (a checkbox per hunk).
    pub accepted: Option<&'a [bool]>,
}

/// `context_colours`: the new text highlighted line by line, if known.
pub fn render(
    hunks: &[Hunk],
    context_colours: Option<&[Line<'static>]>,
    theme: &Theme,
    marks: HunkMarks<'_>,
) -> Vec<Logical> {
    let max_no = hunks
        .iter()
        .flat_map(|h| h.lines.iter())
        .filter_map(|l| l.new_no.max(l.old_no))
        .max()
        .unwrap_or(1);
    let w = max_no.to_string().len();
    let dim = Style::new().fg(theme.dim);
    let mut out = Vec::new();
    for (i, h) in hunks.iter().enumerate() {
        let selected = marks.selected == Some(i);
        let mut header = Vec::new();
        if let Some(acc) = marks.accepted {
            let on = acc.get(i).copied().unwrap_or(true);
            let st = if on {
                Style::new().fg(theme.added)
            } else {
                Style::new().fg(theme.removed)
            };
            header.push(Span::styled(
                if on { "[x] " } else { "[ ] " },
                st.add_modifier(Modifier::BOLD),
            ));
        }
        let hs = if selected {
            Style::new().fg(theme.accent).add_modifier(Modifier::BOLD)
        } else {
            dim
        };
        header.push(Span::styled(
            format!(
                "{} hunk {}/{} (+{} -{})",
                h.header(),
                i + 1,
                hunks.len(),
                h.added(),
                h.removed()
            ),
            hs,
        ));
        out.push(Logical::chars(Line::from(header)));
        for line in &h.lines {
            let (mark, fg, span_bg) = match line.kind {
                LineKind::Added => ('+', theme.added, Some(theme.added_span)),
                LineKind::Removed => ('-', theme.removed, Some(theme.removed_span)),
                LineKind::Context => (' ', theme.text, None),
            };
            let no = match line.kind {
                LineKind::Removed => line.old_no,
                _ => line.new_no,
            };
            let gutter = match no {
                Some(n) => format!("{n:>w$} "),
                None => " ".repeat(w + 1),
            };
            let mut spans = vec![
                Span::styled(gutter, dim),
                Span::styled(format!("{mark} "), Style::new().fg(fg)),
            ];
            let coloured = match (line.kind, line.new_no, context_colours) {
                (LineKind::Context, Some(n), Some(cols)) => cols.get(n - 1).cloned(),
                _ => None,
            };
            match coloured {
                Some(l) => spans.extend(l.spans),
                None => {
                    for (emph, text) in &line.segments {
                        let mut st = Style::new().fg(fg);
                        if *emph && let Some(bg) = span_bg {
                            st = st.bg(bg).add_modifier(Modifier::BOLD);
                        }
                        spans.push(Span::styled(text.clone(), st));
                    }
                }
            }
            let mut l = Logical::chars(Line::from(spans));
            l.hang = vec![Span::raw(" ".repeat(w + 3))];
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::hunks;
    use crate::tui::theme::{ColorDepth, load};

    #[test]
    fn the_changed_span_gets_the_span_background() {
        let dir = tempfile::tempdir().unwrap();
        let theme = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        let h = hunks("a\nlet x = 1;\nb\n", "a\nlet x = 2;\nb\n", 1);
        let lines = render(&h, None, &theme, HunkMarks::default());
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text[1], "1   a");
        assert_eq!(text[2], "2 - let x = 1;");
        assert_eq!(text[3], "2 + let x = 2;");
        let removed_one = lines[2]
            .line
            .spans
            .iter()
            .find(|s| s.content == "1")
            .unwrap();
        assert_eq!(removed_one.style.bg, Some(theme.removed_span));
        let added_two = lines[3]
            .line
            .spans
            .iter()
            .find(|s| s.content == "2")
            .unwrap();
        assert_eq!(added_two.style.bg, Some(theme.added_span));
    }
}
