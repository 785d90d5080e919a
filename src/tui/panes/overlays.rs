//! Full-screen overlays: help (every key of the active keymap), the
//! read-only file viewer with syntax highlighting, and the slot that
//! `/rewind` and `/diff` review will fill once checkpoints exist.

use std::cell::RefCell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::composer::COMMANDS;
use crate::config::keymap::{Keymap, Scope};
use crate::config::theme::Theme;
use crate::tui::render::highlight;

pub enum Overlay {
    Help { scroll: usize },
    Viewer(Viewer),
    Rewind(super::rewind::RewindOverlay),
    Commit(Box<super::rewind::CommitOverlay>),
}

fn frame(area: Rect, buf: &mut Buffer, th: &Theme, title: String) -> Rect {
    let rect = Rect {
        x: area.x + 1,
        y: area.y,
        width: area.width.saturating_sub(2),
        height: area.height,
    };
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

pub fn help_lines(keys: &Keymap, th: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let head = Style::new().fg(th.accent).add_modifier(Modifier::BOLD);
    lines.push(Line::styled(
        format!("keymap: {}   (F1 or Esc closes)", keys.name),
        Style::new().fg(th.dim),
    ));
    for scope in Scope::ALL {
        lines.push(Line::default());
        lines.push(Line::styled(format!("[{}]", scope.name()), head));
        for (action, desc) in scope.actions() {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {:<22}", keys.describe(*scope, action)),
                    Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                ),
                Span::styled(desc.to_string(), Style::new().fg(th.dim)),
            ]));
        }
    }
    lines.push(Line::default());
    lines.push(Line::styled("[commands]", head));
    for (c, d) in COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {c:<22}"),
                Style::new().fg(th.text).add_modifier(Modifier::BOLD),
            ),
            Span::styled(d.to_string(), Style::new().fg(th.dim)),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        "The mouse wheel scrolls the pane under it. With mouse capture off, the terminal's own selection works.",
        Style::new().fg(th.dim),
    ));
    lines
}

pub struct Viewer {
    pub path: String,
    pub text: String,
    pub scroll: usize,
    lines: RefCell<Option<Vec<Line<'static>>>>,
    height: std::cell::Cell<u16>,
}

impl Viewer {
    pub fn open(root: &std::path::Path, rel: &str) -> Viewer {
        let path = root.join(rel);
        let text = match std::fs::metadata(&path) {
            Ok(m) if m.len() > 4 * 1024 * 1024 => format!("({} bytes: too big to show)", m.len()),
            Ok(_) => match std::fs::read(&path) {
                Ok(bytes) if bytes.iter().take(8192).any(|b| *b == 0) => {
                    "(a binary file)".to_string()
                }
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => format!("(cannot read: {e})"),
            },
            Err(e) => format!("(cannot read: {e})"),
        };
        Viewer {
            path: rel.to_string(),
            text,
            scroll: 0,
            lines: RefCell::new(None),
            height: std::cell::Cell::new(10),
        }
    }

    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.text.lines().count().saturating_sub(1);
        self.scroll = ((self.scroll as isize + delta).max(0) as usize).min(max);
    }

    pub fn page(&mut self, pages: isize) {
        let h = self.height.get().max(2) as isize - 1;
        self.scroll_by(pages * h);
    }

    pub fn bottom(&mut self) {
        self.scroll = self
            .text
            .lines()
            .count()
            .saturating_sub(self.height.get() as usize);
    }

    fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        let total = self.text.lines().count();
        let inner = frame(
            area,
            buf,
            th,
            format!(" {} ({total} lines, read-only) ", self.path),
        );
        self.height.set(inner.height);
        if self.lines.borrow().is_none() {
            *self.lines.borrow_mut() = Some(highlight::highlight(
                &self.text, &self.path, &th.syntax, th.depth,
            ));
        }
        let lines = self.lines.borrow();
        let w = total.max(1).to_string().len();
        let visible: Vec<Line<'static>> = lines
            .iter()
            .flatten()
            .enumerate()
            .skip(self.scroll)
            .take(inner.height as usize)
            .map(|(i, l)| {
                let mut spans = vec![Span::styled(
                    format!("{:>w$} ", i + 1),
                    Style::new().fg(th.dim),
                )];
                spans.extend(l.spans.iter().cloned());
                Line::from(spans)
            })
            .collect();
        Paragraph::new(visible).render(inner, buf);
    }
}

impl Overlay {
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, th: &Theme, keys: &Keymap) {
        match self {
            Overlay::Rewind(r) => r.render(area, buf, th),
            Overlay::Commit(c) => {
                let w = area.width.saturating_sub(8).clamp(20, 100).min(area.width);
                let h = 14.min(area.height);
                let rect = Rect {
                    x: area.x + (area.width - w) / 2,
                    y: area.y + (area.height - h) / 2,
                    width: w,
                    height: h,
                };
                c.render(rect, buf, th);
            }
            Overlay::Help { scroll } => {
                let inner = frame(area, buf, th, " help ".into());
                let lines: Vec<Line<'static>> =
                    help_lines(keys, th).into_iter().skip(*scroll).collect();
                Paragraph::new(lines).render(inner, buf);
            }
            Overlay::Viewer(v) => v.render(area, buf, th),
        }
    }
}
