//! Where each part of the screen goes, and drawing it all from state:
//! panes side by side on a wide terminal, as tabs on a narrow one, the
//! overlays on top and an approval above everything. No I/O here.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::app::{App, Focus, Layout};
use super::panes::overlays::{Overlay, help_lines};

/// Below this width the side panes become tabs.
pub const NARROW: u16 = 100;
const TREE_WIDTH: u16 = 30;

impl App {
    /// Where everything goes for a screen of `area`.
    pub fn compute_layout(&self, area: Rect) -> Layout {
        let status = Rect {
            y: area.y + area.height.saturating_sub(1),
            height: 1.min(area.height),
            ..area
        };
        let max_composer = (area.height / 3).max(3);
        let ch = self
            .composer
            .height(max_composer)
            .min(area.height.saturating_sub(1));
        let composer = Rect {
            y: status.y.saturating_sub(ch),
            height: ch,
            ..area
        };
        let main = Rect {
            height: composer.y.saturating_sub(area.y),
            ..area
        };
        let mut l = Layout {
            composer,
            status,
            ..Default::default()
        };
        if area.width < NARROW {
            let tabs = Rect {
                height: 1.min(main.height),
                ..main
            };
            let body = Rect {
                y: main.y + tabs.height,
                height: main.height.saturating_sub(tabs.height),
                ..main
            };
            l.tabs = Some(tabs);
            match self.tab {
                Focus::Diff if self.show_diff => l.diff = Some(body),
                Focus::Tree if self.show_tree => l.tree = Some(body),
                _ => l.transcript = Some(body),
            }
            return l;
        }
        let mut x = main.x;
        let mut width = main.width;
        if self.show_tree {
            let w = TREE_WIDTH.min(width / 4);
            l.tree = Some(Rect {
                x,
                width: w,
                ..main
            });
            x += w;
            width -= w;
        }
        if self.show_diff {
            let w = width * 45 / 100;
            l.diff = Some(Rect {
                x: x + width - w,
                width: w,
                ..main
            });
            width -= w;
        }
        l.transcript = Some(Rect { x, width, ..main });
        l
    }

    fn pane_block(&self, title: &str, focus: Focus) -> Block<'static> {
        let focused = self.focus == focus;
        let colour = if focused {
            self.theme.accent
        } else {
            self.theme.border
        };
        Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(colour))
            .title(Span::styled(
                format!(" {title} "),
                Style::new().fg(colour).add_modifier(if focused {
                    Modifier::BOLD
                } else {
                    Modifier::empty()
                }),
            ))
    }

    pub fn render(&mut self, frame: &mut Frame) {
        let area = frame.area();
        self.draw(area, frame.buffer_mut());
    }

    /// Draws the whole screen into a buffer.
    pub fn draw(&mut self, area: Rect, buf: &mut Buffer) {
        let l = self.compute_layout(area);
        self.layout = l;
        let th = self.theme.clone();
        if let Some(tabs) = l.tabs {
            let mut spans = Vec::new();
            for (f, name) in [
                (Focus::Transcript, "transcript"),
                (Focus::Diff, "diff"),
                (Focus::Tree, "files"),
            ] {
                let on = self.tab == f
                    || (f == Focus::Transcript && !matches!(self.tab, Focus::Diff | Focus::Tree));
                let st = if on {
                    Style::new()
                        .fg(th.text)
                        .bg(th.selection)
                        .add_modifier(Modifier::BOLD)
                } else {
                    Style::new().fg(th.dim)
                };
                let extra = match f {
                    Focus::Diff if !self.diff.entries.is_empty() => {
                        format!(" {}", self.diff.entries.len())
                    }
                    Focus::Tree if !self.tree.marks.is_empty() => {
                        format!(" {}", self.tree.marks.len())
                    }
                    _ => String::new(),
                };
                spans.push(Span::styled(format!(" {name}{extra} "), st));
                spans.push(Span::raw(" "));
            }
            spans.push(Span::styled("Tab switches", Style::new().fg(th.dim)));
            Paragraph::new(Line::from(spans)).render(tabs, buf);
        }
        if let Some(r) = l.tree {
            let block = self.pane_block("files", Focus::Tree);
            let inner = block.inner(r);
            block.render(r, buf);
            let focused = self.focus == Focus::Tree;
            // Letters that move (vim's hjkl) do not filter: the key that
            // starts one is said instead.
            let moves_by_letter = crate::tui::keys::Key::parse("j")
                .ok()
                .and_then(|k| self.keymap.action(crate::tui::keymap::Scope::Tree, k))
                .is_some();
            let hint = if moves_by_letter {
                format!(
                    "{} to filter",
                    self.keymap
                        .keys_of(crate::tui::keymap::TreeAction::StartFilter)
                )
            } else {
                "type to filter".to_string()
            };
            self.tree.render(inner, buf, &th, (focused, &hint));
        }
        if let Some(r) = l.transcript {
            let block = self.pane_block("transcript", Focus::Transcript);
            let inner = block.inner(r);
            block.render(r, buf);
            self.transcript.render(inner, buf, &th);
        }
        if let Some(r) = l.diff {
            let title = format!(
                "diff{}",
                if self.diff.entries.is_empty() {
                    String::new()
                } else {
                    match self.diff.file_count() {
                        1 => " · 1 file".to_string(),
                        n => format!(" · {n} files"),
                    }
                }
            );
            let block = self.pane_block(&title, Focus::Diff);
            let inner = block.inner(r);
            block.render(r, buf);
            self.diff.render(inner, buf, &th);
        }
        let hint = if self.working {
            " working… Enter queues a message · Ctrl-C cancels "
        } else {
            " Enter sends · Shift/Alt-Enter new line · F1 keys "
        };
        let focused = self.focus == Focus::Composer;
        self.composer.render(l.composer, buf, &th, focused, hint);
        if focused {
            let popup = self.composer.popup();
            let above = Rect {
                height: l.composer.y.saturating_sub(area.y).min(10),
                y: l.composer
                    .y
                    .saturating_sub(l.composer.y.saturating_sub(area.y).min(10)),
                ..l.composer
            };
            self.composer.render_popup(&popup, above, buf, &th);
        }
        self.status.render(l.status, buf, &th);
        let main = Rect {
            height: l.composer.y.saturating_sub(area.y),
            ..area
        };
        if let Some(o) = self.overlays.last_mut() {
            // The rewind list leaves the diff pane in sight: it previews.
            let area = match o {
                Overlay::Rewind(_) => l.transcript.filter(|_| l.diff.is_some()).unwrap_or(main),
                _ => main,
            };
            o.render(area, buf, &th, &self.keymap, &self.composer.agents);
        }
        if self.approvals.visible() {
            self.approvals.render(main, buf, &th, &self.keymap);
        }
    }

    /// The help text as plain lines (for tests).
    pub fn help_text(&self) -> Vec<String> {
        help_lines(&self.keymap, &self.theme, &self.composer.agents)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }
}
