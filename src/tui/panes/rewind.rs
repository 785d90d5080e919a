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

use crate::protocol::{CheckpointSummary, Op, RewindMode, TurnId};
use crate::tui::component::Handled;
use crate::tui::keymap::{CommitAction, Keymap, RewindAction};
use crate::tui::theme::Theme;

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
    /// A key's action while the overlay is open; other keys do nothing.
    pub fn handle_key(&mut self, action: Option<RewindAction>) -> Handled {
        let Some(action) = action else {
            return Handled::Consumed;
        };
        let preview = |chosen: Option<(String, TurnId)>| match chosen {
            Some((id, turn)) => Handled::Send(Op::PreviewRewind {
                id,
                turn: Some(turn),
            }),
            None => Handled::Consumed,
        };
        match (self.stage.clone(), action) {
            (Stage::Choose, RewindAction::Cancel) => return Handled::Close,
            (Stage::Choose, RewindAction::Up) => return preview(self.move_by(-1)),
            (Stage::Choose, RewindAction::Down) => return preview(self.move_by(1)),
            (Stage::Choose, RewindAction::Choose) if !self.list.is_empty() => {
                self.stage = Stage::Mode;
            }
            (Stage::Mode, RewindAction::Cancel) => self.stage = Stage::Choose,
            (
                Stage::Mode,
                a @ (RewindAction::Code | RewindAction::Conversation | RewindAction::Both),
            ) => {
                let mode = match a {
                    RewindAction::Code => RewindMode::Code,
                    RewindAction::Conversation => RewindMode::Conversation,
                    _ => RewindMode::Both,
                };
                if mode != RewindMode::Conversation && !self.foreign.is_empty() {
                    self.stage = Stage::Confirm(mode);
                } else if let Some((id, turn)) = self.selected() {
                    return Handled::SendClose(Op::Rewind {
                        id,
                        turn: Some(turn),
                        mode,
                        overwrite: false,
                    });
                }
            }
            (Stage::Confirm(mode), RewindAction::Overwrite) => {
                if let Some((id, turn)) = self.selected() {
                    return Handled::SendClose(Op::Rewind {
                        id,
                        turn: Some(turn),
                        mode,
                        overwrite: true,
                    });
                }
            }
            (Stage::Confirm(_), RewindAction::Keep | RewindAction::Cancel) => {
                self.stage = Stage::Choose;
            }
            _ => {}
        }
        Handled::Consumed
    }

    pub fn selected_id(&self) -> Option<String> {
        self.list.get(self.selected).map(|c| c.info.id.clone())
    }

    /// The chosen checkpoint: its id and its turn (an id alone may stand
    /// for several turns that changed nothing).
    pub fn selected(&self) -> Option<(String, TurnId)> {
        self.list
            .get(self.selected)
            .map(|c| (c.info.id.clone(), c.info.turn))
    }

    pub fn move_by(&mut self, delta: isize) -> Option<(String, TurnId)> {
        if self.list.is_empty() {
            return None;
        }
        let last = self.list.len() as isize - 1;
        self.selected = (self.selected as isize + delta).clamp(0, last) as usize;
        self.foreign.clear();
        self.selected()
    }

    /// The keys of the stage the list is in, or the question it asks.
    fn footer(&self, th: &Theme, keys: &Keymap) -> Vec<Line<'static>> {
        let k = |a: RewindAction| first_key(keys, a);
        match &self.stage {
            Stage::Choose => vec![Line::styled(
                format!(
                    "{}/{} choose (the diff pane shows what going back does) · {} rewind · {} close",
                    k(RewindAction::Up),
                    k(RewindAction::Down),
                    k(RewindAction::Choose),
                    k(RewindAction::Cancel)
                ),
                Style::new().fg(th.accent),
            )],
            Stage::Mode => vec![Line::styled(
                format!(
                    "restore:  {} code   {} conversation   {} both   {} back",
                    k(RewindAction::Code),
                    k(RewindAction::Conversation),
                    k(RewindAction::Both),
                    k(RewindAction::Cancel)
                ),
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            )],
            Stage::Confirm(_) => vec![Line::styled(
                format!(
                    "{} changed since mm last left it, not by mm: overwrite? {} / {}",
                    self.foreign.join(", "),
                    k(RewindAction::Overwrite),
                    k(RewindAction::Keep)
                ),
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            )],
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme, keys: &Keymap) {
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
                // A safety row undoes a rewind; the turn it was taken in
                // says nothing about where it goes.
                Span::styled(
                    if c.info.kind == crate::protocol::CheckpointKind::Safety {
                        " ↺ undo ".to_string()
                    } else {
                        format!(" turn {} ", c.info.turn)
                    },
                    Style::new().fg(th.accent),
                ),
                Span::styled(format!("{time} {:<7} ", c.info.kind.as_str()), dim),
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
        let footer = self.footer(th, keys);
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

/// The first key bound to an action, for a hint ("esc"), or "unbound".
/// The first key bound to `action`, as help and footers show it.
pub(super) fn first_key<A: crate::tui::keymap::Action>(keys: &Keymap, action: A) -> String {
    keys.keys(A::SCOPE, action.name())
        .first()
        .map_or_else(|| "unbound".to_string(), ToString::to_string)
}

pub struct CommitOverlay {
    pub area: TextArea<'static>,
    pub files: Vec<String>,
}

impl CommitOverlay {
    pub fn new(message: &str, files: Vec<String>) -> Self {
        let mut area = TextArea::new(message.lines().map(str::to_string).collect());
        area.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        // The cursor at the end, as in any text field: Backspace deletes
        // (a newcomer pressed it 60 times at the start and nothing went).
        area.move_cursor(ratatui_textarea::CursorMove::Bottom);
        area.move_cursor(ratatui_textarea::CursorMove::End);
        Self { area, files }
    }

    pub fn message(&self) -> String {
        self.area.lines().join("\n")
    }

    /// Keys edit the message, but for the overlay's own actions.
    pub fn handle_key(
        &mut self,
        action: Option<CommitAction>,
        ev: crossterm::event::KeyEvent,
    ) -> Handled {
        match action {
            Some(CommitAction::Save) => Handled::SendClose(Op::Commit {
                message: self.message(),
            }),
            Some(CommitAction::Cancel) => Handled::Close,
            None => {
                self.area.input(ev);
                Handled::Consumed
            }
        }
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, th: &Theme, keys: &Keymap) {
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
            format!(
                "edit the message · {} commits · {} cancels",
                first_key(keys, CommitAction::Save),
                first_key(keys, CommitAction::Cancel)
            ),
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
