//! The `/rewind` overlay: the session's checkpoints, most recent first
//! (time, prompt or command, what going back would undo). Moving through
//! the list previews the change in the diff pane; Enter asks what to
//! restore (code, conversation, both) and, when files changed outside mm
//! since mm last left them, whether to overwrite them. And the `/commit`
//! overlay: the model's message, editable, with the files it covers.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};
use ratatui_textarea::TextArea;

use crate::config::theme::Theme;
use crate::protocol::{CheckpointSummary, RewindMode};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    Choose,
    /// Which of code, conversation or both.
    Mode,
    /// Files changed outside mm: overwrite them?
    Confirm(RewindMode),
}

pub struct RewindOverlay {
    pub list: Vec<CheckpointSummary>,
    pub loading: bool,
    pub selected: usize,
    pub stage: Stage,
    /// Files changed outside mm, for the selected checkpoint's preview.
    pub foreign: Vec<String>,
}

impl Default for RewindOverlay {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            loading: true,
            selected: 0,
            stage: Stage::Choose,
            foreign: Vec::new(),
        }
    }
}

impl RewindOverlay {
    pub fn selected_id(&self) -> Option<String> {
        self.list.get(self.selected).map(|c| c.info.id.clone())
    }

    pub fn move_by(&mut self, delta: isize) -> Option<String> {
        if self.list.is_empty() {
            return None;
        }
        let last = self.list.len() as isize - 1;
        self.selected = (self.selected as isize + delta).clamp(0, last) as usize;
        self.foreign.clear();
        self.selected_id()
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(th.accent))
            .title(Span::styled(
                " rewind ",
                Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let dim = Style::new().fg(th.dim);
        let mut lines: Vec<Line<'static>> = Vec::new();
        if self.loading {
            lines.push(Line::styled("reading the checkpoints…", dim));
        } else if self.list.is_empty() {
            lines.push(Line::styled(
                "no checkpoints yet: one is taken when each turn starts",
                dim,
            ));
        }
        for (i, c) in self.list.iter().enumerate() {
            let sel = i == self.selected;
            let time = c.info.time.get(11..19).unwrap_or(&c.info.time).to_string();
            let st = if sel {
                Style::new()
                    .fg(th.text)
                    .bg(th.selection)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::new().fg(th.text)
            };
            lines.push(Line::from(vec![
                Span::styled(
                    format!(" turn {} ", c.info.turn),
                    Style::new().fg(th.accent),
                ),
                Span::styled(format!("{time} {:<7} ", c.info.kind), dim),
                Span::styled(c.info.label.clone(), st),
            ]));
            lines.push(Line::from(vec![
                Span::styled("     undoes ", dim),
                Span::styled(
                    format!("{} file(s)", c.files.len()),
                    Style::new().fg(th.text),
                ),
                Span::styled(format!(" +{}", c.added), Style::new().fg(th.added)),
                Span::styled(format!(" -{}", c.removed), Style::new().fg(th.removed)),
                Span::styled(
                    if c.files.is_empty() {
                        String::new()
                    } else {
                        format!("  {}", c.files.join(", "))
                    },
                    dim,
                ),
            ]));
        }
        let footer: Vec<Line<'static>> = match &self.stage {
            Stage::Choose => vec![Line::styled(
                "↑/↓ choose (the diff pane shows what going back does) · Enter rewind · Esc close",
                Style::new().fg(th.accent),
            )],
            Stage::Mode => vec![Line::styled(
                "restore:  c code   v conversation   b both   Esc back",
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            )],
            Stage::Confirm(_) => vec![Line::styled(
                format!(
                    "{} changed since mm last left it, not by mm: overwrite? y / n",
                    self.foreign.join(", ")
                ),
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            )],
        };
        // The footer wraps on a narrow pane: give it the rows it needs.
        let w = inner.width.max(1) as usize;
        let rows: usize = footer
            .iter()
            .map(|l| {
                let n: usize = l
                    .spans
                    .iter()
                    .map(|s| crate::tui::render::wrap::text_width(&s.content))
                    .sum();
                n.div_ceil(w).max(1)
            })
            .sum();
        let fh = rows as u16 + 1;
        let body = Rect {
            height: inner.height.saturating_sub(fh),
            ..inner
        };
        // Keep the selection in view (two lines an entry).
        let skip = (self.selected * 2 + 2).saturating_sub(body.height as usize);
        let visible: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
        Paragraph::new(visible).render(body, buf);
        Paragraph::new(footer).wrap(Wrap { trim: true }).render(
            Rect {
                y: inner.y + body.height + 1,
                height: fh - 1,
                ..inner
            },
            buf,
        );
    }
}

pub struct CommitOverlay {
    pub area: TextArea<'static>,
    pub files: Vec<String>,
}

impl CommitOverlay {
    pub fn new(message: &str, files: Vec<String>) -> Self {
        let mut area = TextArea::new(message.lines().map(str::to_string).collect());
        area.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        Self { area, files }
    }

    pub fn message(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, th: &Theme) {
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(th.accent))
            .title(Span::styled(
                " commit the session's changes ",
                Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let head = Line::from(vec![
            Span::styled("files: ", Style::new().fg(th.dim)),
            Span::styled(self.files.join(", "), Style::new().fg(th.text)),
        ]);
        Paragraph::new(head).wrap(Wrap { trim: true }).render(
            Rect {
                height: 2.min(inner.height),
                ..inner
            },
            buf,
        );
        let foot_y = inner.y + inner.height.saturating_sub(1);
        let body = Rect {
            y: inner.y + 2,
            height: inner.height.saturating_sub(3),
            ..inner
        };
        self.area.set_style(Style::new().fg(th.text));
        self.area
            .set_cursor_style(Style::new().add_modifier(Modifier::REVERSED));
        (&self.area).render(body, buf);
        Paragraph::new(Line::styled(
            "edit the message · ctrl-s commits · Esc cancels",
            Style::new().fg(th.accent),
        ))
        .render(
            Rect {
                y: foot_y,
                height: 1,
                ..inner
            },
            buf,
        );
    }
}
