//! The frame an overlay is drawn in: cleared, bordered, titled.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::tui::theme::Theme;

/// Clears `area`, draws its border and `title`, and returns what is inside.
pub(super) fn frame(area: Rect, buf: &mut Buffer, th: &Theme, title: String) -> Rect {
    // The whole area, over the panes' own borders: an inset frame left
    // them showing beside it (`┌┌ calc.py …┐┐`).
    let rect = area;
    Clear.render(rect, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(th.accent))
        .title(Span::styled(
            title,
            Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(rect);
    block.render(rect, buf);
    inner
}
