//! The panes and overlays of the TUI. Each draws from its own state.

pub mod approvals;
pub mod composer;
pub mod diff;
pub mod file_tree;
pub mod overlays;
pub mod rewind;
pub mod status;
pub mod transcript;

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use crate::config::theme::Theme;

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
