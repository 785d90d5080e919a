//! The panes and overlays of the TUI. Each draws from its own state.

pub mod approvals;
pub mod cell;
pub mod composer;
pub mod diff;
pub mod file_tree;
pub mod frame;
pub mod overlays;
pub mod plan;
pub mod rewind;
pub mod status;
pub mod transcript;

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use crate::tui::theme::Theme;

/// The language server's verdict on an edit: red and bold when it brought
/// errors, dim when not.
pub fn verdict_line(text: &str, bad: bool, th: &Theme) -> Line<'static> {
    let style = if bad {
        Style::new().fg(th.removed).add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(th.dim)
    };
    Line::styled(text.to_string(), style)
}

/// The language server's verdict on an edit, in words, and whether it is
/// bad news.
fn verdict(errors: u32, new_errors: Option<u32>, preview: bool) -> (String, bool) {
    let (adds, left) = if preview {
        ("this edit would add", "would remain")
    } else {
        ("this edit adds", "remain")
    };
    match new_errors {
        Some(0) if errors == 0 => ("language server: no errors".into(), false),
        Some(0) => (
            format!("language server: no new errors ({errors} {left} in the file)"),
            false,
        ),
        Some(n) => (format!("language server: {adds} {n} error(s)"), true),
        None if errors == 0 => ("language server: no errors".into(), false),
        None => (
            format!("language server: {errors} error(s) in the file after this edit"),
            true,
        ),
    }
}
