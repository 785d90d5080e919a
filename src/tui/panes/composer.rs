//! The composer: a multi-line editor (ratatui-textarea), the history of
//! sent messages, a palette of slash commands when the text starts with
//! `/`, and completion of workspace paths after `@`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use crate::tui::theme::Theme;

use crate::tui::slash::all;

/// What the popup above the composer offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Popup {
    None,
    Commands(Vec<usize>),
    Files(Vec<String>),
}

pub struct Composer {
    pub area: TextArea<'static>,
    history: Vec<String>,
    /// Position while walking the history (None: editing a new message).
    hist_pos: Option<usize>,
    draft: String,
    pub popup_sel: usize,
    files: Option<Vec<String>>,
    /// The commands besides the built-in ones (from `SessionStarted`):
    /// `/ask-NAME` for each agent, the custom commands.
    pub agents: Vec<(String, String)>,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    pub fn new() -> Self {
        let mut area = TextArea::default();
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.set_cursor_line_style(Style::default());
        area.set_placeholder_text(
            "Ask mm to do something · / for commands · @ to attach a file · F1 for keys",
        );
        Self {
            area,
            history: Vec::new(),
            hist_pos: None,
            draft: String::new(),
            popup_sel: 0,
            files: None,
            agents: Vec::new(),
        }
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    pub fn set_text(&mut self, text: &str) {
        self.area.select_all();
        self.area.cut();
        self.area.insert_str(text);
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.hist_pos = None;
        self.popup_sel = 0;
    }

    /// Takes the text to send and remembers it.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    pub fn on_first_line(&self) -> bool {
        self.area.cursor().0 == 0
    }

    pub fn on_last_line(&self) -> bool {
        self.area.cursor().0 + 1 >= self.area.lines().len()
    }

    pub fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let pos = match self.hist_pos {
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(p) => p - 1,
        };
        self.hist_pos = Some(pos);
        let text = self.history[pos].clone();
        self.set_text(&text);
    }

    pub fn history_next(&mut self) {
        let Some(pos) = self.hist_pos else { return };
        if pos + 1 >= self.history.len() {
            self.hist_pos = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        } else {
            self.hist_pos = Some(pos + 1);
            let text = self.history[pos + 1].clone();
            self.set_text(&text);
        }
    }

    /// The word under the cursor that starts with `@`, if any.
    fn at_word(&self) -> Option<String> {
        let (row, col) = (self.area.cursor().0, self.area.cursor().1);
        let line = self.area.lines().get(row)?;
        let before: String = line.chars().take(col).collect();
        let word = before.rsplit(char::is_whitespace).next()?;
        word.strip_prefix('@').map(str::to_string)
    }

    /// `@` completion needs the workspace's file list, which a job walks.
    pub fn needs_files(&self) -> bool {
        self.files.is_none() && self.at_word().is_some()
    }

    /// The workspace's file list arrived.
    pub fn set_files(&mut self, files: Vec<String>) {
        self.files = Some(files);
    }

    /// The workspace changed (a rewind): the list is read again when needed.
    pub fn forget_files(&mut self) {
        self.files = None;
    }

    /// What the popup shows for the current text.
    pub fn popup(&self) -> Popup {
        let text = self.text();
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let m: Vec<usize> = all(&self.agents)
                .iter()
                .enumerate()
                .filter(|(_, (c, _))| c.starts_with(text.as_str()))
                .map(|(i, _)| i)
                .collect();
            return if m.is_empty() {
                Popup::None
            } else {
                Popup::Commands(m)
            };
        }
        if let Some(prefix) = self.at_word() {
            let needle = prefix.to_lowercase();
            let m: Vec<String> = self
                .files
                .iter()
                .flatten()
                .filter(|p| p.to_lowercase().contains(&needle))
                .take(8)
                .cloned()
                .collect();
            return if m.is_empty() {
                Popup::None
            } else {
                Popup::Files(m)
            };
        }
        Popup::None
    }

    /// Accepts the selected popup entry.
    pub fn complete(&mut self, popup: &Popup) {
        match popup {
            Popup::Commands(m) => {
                if let Some(i) = m.get(self.popup_sel.min(m.len().saturating_sub(1)))
                    && let Some((cmd, _)) = all(&self.agents).get(*i)
                {
                    self.set_text(&format!("{cmd} "));
                }
            }
            Popup::Files(m) => {
                if let (Some(path), Some(prefix)) = (
                    m.get(self.popup_sel.min(m.len().saturating_sub(1))),
                    self.at_word(),
                ) {
                    for _ in 0..prefix.chars().count() {
                        self.area.delete_char();
                    }
                    self.area.insert_str(format!("{path} "));
                }
            }
            Popup::None => {}
        }
        self.popup_sel = 0;
    }

    /// A new file appeared (the agent wrote it).
    pub fn file_added(&mut self, path: &str) {
        if let Some(files) = &mut self.files
            && !files.iter().any(|f| f == path)
        {
            files.push(path.to_string());
        }
    }

    /// "1,500 lines, 146 KB" when the text has more lines than `rows`.
    pub fn size_note(&self, rows: u16) -> Option<String> {
        let lines = self.area.lines();
        if lines.len() <= usize::from(rows) {
            return None;
        }
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum::<usize>() - 1;
        Some(format!(
            " {} lines, {} ",
            super::cell::group(lines.len()),
            super::cell::size(bytes)
        ))
    }

    /// Height the composer wants for its text (borders included).
    pub fn height(&self, max: u16) -> u16 {
        (self.area.lines().len() as u16 + 2).clamp(3, max.max(3))
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, th: &Theme, focused: bool, title: &str) {
        let border = if focused { th.accent } else { th.border };
        let mut block = Block::default()
            .borders(Borders::TOP | Borders::BOTTOM)
            .border_style(Style::new().fg(border))
            .title(Span::styled(title.to_string(), Style::new().fg(th.dim)));
        // More lines than show (a paste): say how many there are.
        if let Some(count) = self.size_note(area.height.saturating_sub(2)) {
            block = block.title_bottom(
                Line::from(Span::styled(count, Style::new().fg(th.dim))).right_aligned(),
            );
        }
        self.area.set_block(block);
        self.area.set_style(Style::new().fg(th.text));
        self.area.set_placeholder_style(Style::new().fg(th.dim));
        self.area.set_cursor_style(if focused {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        });
        (&self.area).render(area, buf);
    }

    pub fn render_popup(&self, popup: &Popup, above: Rect, buf: &mut Buffer, th: &Theme) {
        let items: Vec<(String, String)> = match popup {
            Popup::None => return,
            Popup::Commands(m) => {
                let all = all(&self.agents);
                m.iter().filter_map(|i| all.get(*i).cloned()).collect()
            }
            Popup::Files(m) => m.iter().map(|p| (format!("@{p}"), String::new())).collect(),
        };
        let h = (items.len() as u16).min(above.height);
        if h == 0 {
            return;
        }
        let rect = Rect {
            y: above.y + above.height - h,
            height: h,
            ..above
        };
        Clear.render(rect, buf);
        let sel = self.popup_sel.min(items.len() - 1);
        let lines: Vec<Line<'static>> = items
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let st = if i == sel {
                    Style::new()
                        .fg(th.text)
                        .bg(th.selection)
                        .add_modifier(Modifier::BOLD)
                } else {
                    Style::new().fg(th.text)
                };
                Line::from(vec![
                    Span::styled(format!(" {a:<12}"), st),
                    Span::styled(format!(" {b}"), Style::new().fg(th.dim)),
                ])
            })
            .collect();
        Paragraph::new(lines).render(rect, buf);
    }

    pub fn insert_newline(&mut self) {
        self.area.insert_newline();
    }

    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.area.insert_str(text);
    }

    pub fn move_end(&mut self) {
        self.area.move_cursor(CursorMove::Bottom);
        self.area.move_cursor(CursorMove::End);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_taller_than_the_composer_has_its_size_said() {
        let mut c = Composer::new();
        c.set_text("one line");
        assert_eq!(c.size_note(8), None);
        let paste: String = (0..1500).map(|i| format!("row {i:04}\n")).collect();
        c.set_text(paste.trim_end());
        assert_eq!(c.size_note(8).as_deref(), Some(" 1,500 lines, 13 KB "));
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut c = Composer::new();
        c.set_text("first");
        c.take();
        c.set_text("second");
        c.take();
        c.set_text("draft");
        c.history_prev();
        assert_eq!(c.text(), "second");
        c.history_prev();
        assert_eq!(c.text(), "first");
        c.history_next();
        c.history_next();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn slash_opens_the_palette_and_at_completes_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        let mut c = Composer::new();
        c.set_text("/th");
        let p = c.popup();
        assert_eq!(p, Popup::Commands(vec![3]));
        c.complete(&p);
        assert_eq!(c.text(), "/theme ");
        c.set_text("look at @li");
        assert!(c.needs_files());
        c.set_files(super::super::file_tree::index(dir.path()));
        assert!(!c.needs_files());
        let p = c.popup();
        assert_eq!(p, Popup::Files(vec!["src/lib.rs".into()]));
        c.complete(&p);
        assert_eq!(c.text(), "look at @src/lib.rs ");
    }
}
