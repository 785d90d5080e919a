//! Full-screen overlays: help (every key of the active keymap), the
//! read-only file viewer with syntax highlighting, and the slot that
//! `/rewind` and `/diff` review will fill once checkpoints exist.

use std::cell::RefCell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::frame::frame;
use crate::protocol::{DiagItem, DiagLevel};
use crate::protocol::{NavKind, Op};
use crate::tui::component::Handled;
use crate::tui::keymap::{HelpAction, Key, KeyCodeKey, Keymap, PlacesAction, Scope, ViewerAction};
use crate::tui::render::highlight;
use crate::tui::theme::Theme;

pub enum Overlay {
    /// F1: the keys and commands; `page` is what the last draw showed (a
    /// page for PgUp/PgDn), `lines` how many there are.
    Help {
        scroll: usize,
        page: std::cell::Cell<usize>,
        lines: std::cell::Cell<usize>,
    },
    Viewer(Viewer),
    Places(PlaceList),
    Rewind(super::rewind::RewindOverlay),
    Commit(Box<super::rewind::CommitOverlay>),
    Plan(Box<super::plan::PlanOverlay>),
}

/// A box in the middle of `area`, up to 100 columns wide and `height`
/// rows high (the commit message, the plan).
fn centered(area: Rect, height: u16) -> Rect {
    let w = area.width.saturating_sub(8).clamp(20, 100).min(area.width);
    let h = height.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// What the marks in the tree and the status bar mean (F1 lists them).
const MARKS: &[(&str, &str)] = &[
    (
        "A  M  D",
        "in the tree: a file this session created, modified or deleted; a folder's number counts the files changed under it",
    ),
    (
        "✗N  ⚠N",
        "the language servers' errors and warnings (in the tree: per file; F8 lists them)",
    ),
    (
        "⟲N",
        "the session's checkpoints: /rewind goes back to one, /diff shows what changed since the first",
    ),
    (
        "ctx N/M (P%)",
        "the next request's size in tokens, the model's window, and how full it is",
    ),
    (
        "(asked alone)",
        "a tool card of mm's own: it asked the model for one file's change in a request without tools, and wrote it through the same checks as write_file",
    ),
    (
        "N queued",
        "messages and commands waiting for the turn to end (↑ on an empty composer takes the last out)",
    ),
];

/// A help line wider than `width`: its last span (the words) folded onto
/// lines of their own under where it starts, so nothing is cut off.
fn fold(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if width < 30 || line.width() <= width || line.spans.is_empty() {
        return vec![line];
    }
    let mut spans = line.spans;
    let Some(last) = spans.pop() else {
        return Vec::new();
    };
    let lead: usize = spans.iter().map(Span::width).sum();
    let room = width.saturating_sub(lead).max(20);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut row = String::new();
    for word in last.content.split(' ') {
        if !row.is_empty() && row.chars().count() + 1 + word.chars().count() > room {
            out.push(Line::from(std::mem::take(&mut row)));
        }
        if !row.is_empty() {
            row.push(' ');
        }
        row.push_str(word);
    }
    out.push(Line::from(row));
    let pad = " ".repeat(lead.min(width.saturating_sub(20)));
    out.into_iter()
        .enumerate()
        .map(|(i, l)| {
            let text = l.to_string();
            let mut v = if i == 0 {
                spans.clone()
            } else {
                vec![Span::raw(pad.clone())]
            };
            v.push(Span::styled(text, last.style));
            Line::from(v)
        })
        .collect()
}

pub fn help_lines(keys: &Keymap, th: &Theme, agents: &[(String, String)]) -> Vec<Line<'static>> {
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
            let k = keys.describe(*scope, action);
            // A long list of keys still leaves a clear gap before the words.
            let gap = if k.chars().count() >= 22 { "   " } else { " " };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {k:<22}{gap}"),
                    Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                ),
                Span::styled(desc.to_string(), Style::new().fg(th.dim)),
            ]));
        }
    }
    lines.push(Line::default());
    lines.push(Line::styled("[commands]", head));
    for (c, d) in crate::tui::slash::all(agents) {
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {c:<22}"),
                Style::new().fg(th.text).add_modifier(Modifier::BOLD),
            ),
            Span::styled(d.clone(), Style::new().fg(th.dim)),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::styled("[marks]", head));
    for (mark, what) in MARKS {
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {mark:<22}"),
                Style::new().fg(th.text).add_modifier(Modifier::BOLD),
            ),
            Span::styled((*what).to_string(), Style::new().fg(th.dim)),
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
    /// The cursor, 0-based line and character column: where "go to
    /// definition" and "find references" look.
    pub line: usize,
    pub col: usize,
    /// The language server's diagnostics for this file.
    pub diags: Vec<DiagItem>,
    lines: RefCell<Option<Vec<Line<'static>>>>,
    height: std::cell::Cell<u16>,
    /// `g` was pressed: `gd`, `gr` or `gg` may follow.
    pending_g: bool,
    /// The text is still being read.
    pub loading: bool,
    /// Where the cursor goes once it is.
    target: (usize, usize),
}

impl Viewer {
    /// A key while the viewer is on top: the keymap's actions, with vim's
    /// `gd` (definition), `gr` (references) and `gg` (top) besides.
    pub fn handle_key(&mut self, key: Key, keys: &Keymap) -> Handled {
        let plain = |c: char| key.code == KeyCodeKey::Char(c) && !key.ctrl && !key.alt;
        let action = if std::mem::take(&mut self.pending_g) {
            if plain('d') {
                Some(ViewerAction::Definition)
            } else if plain('r') {
                Some(ViewerAction::References)
            } else if plain('g') {
                Some(ViewerAction::Top)
            } else {
                keys.lookup(key)
            }
        } else if plain('g') {
            self.pending_g = true;
            return Handled::Consumed;
        } else {
            keys.lookup(key)
        };
        let Some(action) = action else {
            return Handled::Consumed;
        };
        match action {
            ViewerAction::Close => return Handled::CloseAll,
            ViewerAction::Back => return Handled::Close,
            ViewerAction::ScrollUp => self.scroll_by(-1),
            ViewerAction::ScrollDown => self.scroll_by(1),
            ViewerAction::Left => self.move_col(-1),
            ViewerAction::Right => self.move_col(1),
            ViewerAction::WordNext => self.word(true),
            ViewerAction::WordPrev => self.word(false),
            ViewerAction::LineStart => self.col = 0,
            ViewerAction::LineEnd => self.col = self.line_len(self.line).saturating_sub(1),
            ViewerAction::Help => return Handled::Help,
            ViewerAction::PageUp => self.page(-1),
            ViewerAction::PageDown => self.page(1),
            ViewerAction::Top => self.top(),
            ViewerAction::Bottom => self.bottom(),
            ViewerAction::Definition | ViewerAction::References => {
                let kind = if action == ViewerAction::Definition {
                    NavKind::Definition
                } else {
                    NavKind::References
                };
                return Handled::Send(Op::Navigate {
                    kind,
                    path: self.path.clone(),
                    line: self.line as u32 + 1,
                    col: self.col as u32 + 1,
                });
            }
        }
        Handled::Consumed
    }

    /// A viewer waiting for its file (a job reads it): the cursor goes to
    /// the 1-based place once the text is in.
    pub fn loading(rel: &str, line: usize, col: usize) -> Viewer {
        Viewer {
            path: rel.to_string(),
            text: "(reading…)".to_string(),
            scroll: 0,
            line: 0,
            col: 0,
            diags: Vec::new(),
            lines: RefCell::new(None),
            height: std::cell::Cell::new(10),
            pending_g: false,
            loading: true,
            target: (line, col),
        }
    }

    /// The file's text arrived.
    pub fn set_text(&mut self, text: String) {
        self.text = text;
        self.loading = false;
        *self.lines.borrow_mut() = None;
        let (line, col) = self.target;
        self.goto(line, col);
    }

    fn line_count(&self) -> usize {
        self.text.lines().count().max(1)
    }

    fn line_len(&self, i: usize) -> usize {
        self.text
            .lines()
            .nth(i)
            .map(|l| l.chars().count())
            .unwrap_or(0)
    }

    /// Keeps the cursor on the screen, and no empty rows under the end.
    fn follow(&mut self) {
        let h = self.height.get().max(2) as usize - 1;
        if self.line < self.scroll {
            self.scroll = self.line;
        } else if self.line >= self.scroll + h {
            self.scroll = self.line + 1 - h;
        }
        self.scroll = self.scroll.min(self.line_count().saturating_sub(h));
    }

    /// Puts the cursor at a 1-based line and column, a few lines from the top.
    pub fn goto(&mut self, line: usize, col: usize) {
        self.line = line.saturating_sub(1).min(self.line_count() - 1);
        self.col = col.saturating_sub(1).min(self.line_len(self.line));
        self.scroll = self.line.saturating_sub(3);
        self.follow();
    }

    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.line_count() - 1;
        self.line = ((self.line as isize + delta).max(0) as usize).min(max);
        self.col = self.col.min(self.line_len(self.line));
        self.follow();
    }

    pub fn move_col(&mut self, delta: isize) {
        let len = self.line_len(self.line);
        self.col = ((self.col as isize + delta).max(0) as usize).min(len);
    }

    /// To the start of the next (or previous) word on the line.
    pub fn word(&mut self, forward: bool) {
        let chars: Vec<char> = self
            .text
            .lines()
            .nth(self.line)
            .unwrap_or("")
            .chars()
            .collect();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let mut i = self.col.min(chars.len());
        if forward {
            while i < chars.len() && ident(chars[i]) {
                i += 1;
            }
            while i < chars.len() && !ident(chars[i]) {
                i += 1;
            }
        } else {
            while i > 0 && !ident(chars[i - 1]) {
                i -= 1;
            }
            while i > 0 && ident(chars[i - 1]) {
                i -= 1;
            }
        }
        self.col = i;
    }

    pub fn page(&mut self, pages: isize) {
        let h = self.height.get().max(2) as isize - 1;
        self.scroll_by(pages * h);
    }

    pub fn top(&mut self) {
        self.line = 0;
        self.col = 0;
        self.scroll = 0;
    }

    pub fn bottom(&mut self) {
        self.line = self.line_count() - 1;
        self.col = 0;
        self.follow();
    }

    fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        let total = self.text.lines().count();
        let errors = self
            .diags
            .iter()
            .filter(|d| d.level == DiagLevel::Error)
            .count();
        let inner = frame(
            area,
            buf,
            th,
            format!(
                " {} ({total} lines, read-only){} ",
                self.path,
                if errors > 0 {
                    format!(" ✗{errors}")
                } else {
                    String::new()
                }
            ),
        );
        // The last row says where the cursor is and what is wrong there.
        let body = Rect {
            height: inner.height.saturating_sub(1),
            ..inner
        };
        self.height.set(body.height);
        if self.lines.borrow().is_none() {
            *self.lines.borrow_mut() = Some(highlight::highlight(
                &self.text, &self.path, &th.syntax, th.depth,
            ));
        }
        let lines = self.lines.borrow();
        let w = total.max(1).to_string().len();
        // A file that fits is shown from its first line, whatever the
        // cursor's place (set before the viewer knew its height).
        let scroll = self.scroll.min(total.saturating_sub(body.height as usize));
        // Long lines scroll sideways with the cursor.
        let room = (body.width as usize).saturating_sub(w + 2).max(1);
        let shift = if self.col < room {
            0
        } else {
            self.col + 1 - room / 2
        };
        let mark = |i: usize| {
            let on = self.diags.iter().filter(|d| d.line as usize == i + 1);
            on.map(|d| d.level).min_by_key(|l| match l {
                DiagLevel::Error => 0,
                DiagLevel::Warning => 1,
                DiagLevel::Info => 2,
            })
        };
        let visible: Vec<Line<'static>> = lines
            .iter()
            .flatten()
            .enumerate()
            .skip(scroll)
            .take(body.height as usize)
            .map(|(i, l)| {
                let (m, colour) = match mark(i) {
                    Some(DiagLevel::Error) => ("●", th.removed),
                    Some(DiagLevel::Warning) => ("●", th.warning),
                    Some(DiagLevel::Info) => ("·", th.dim),
                    None => (" ", th.dim),
                };
                let mut spans = vec![
                    Span::styled(m, Style::new().fg(colour)),
                    Span::styled(format!("{:>w$} ", i + 1), Style::new().fg(th.dim)),
                ];
                let text = if i == self.line {
                    cursor_spans(l, self.col, th)
                } else {
                    l.spans.clone()
                };
                spans.extend(skip_chars(text, shift));
                Line::from(spans)
            })
            .collect();
        Paragraph::new(visible).render(body, buf);
        let here: Vec<&DiagItem> = self
            .diags
            .iter()
            .filter(|d| d.line as usize == self.line + 1)
            .collect();
        let foot = match here.first() {
            Some(d) => Line::styled(
                format!("{}:{} {}", d.line, d.col, d.message),
                Style::new().fg(if d.level == DiagLevel::Error {
                    th.removed
                } else {
                    th.warning
                }),
            ),
            None => Line::styled(
                format!(
                    "{}:{} · F12/d definition · r references · Backspace back · Esc close",
                    self.line + 1,
                    self.col + 1
                ),
                Style::new().fg(th.dim),
            ),
        };
        Paragraph::new(foot).render(
            Rect {
                y: inner.y + body.height,
                height: 1.min(inner.height),
                ..inner
            },
            buf,
        );
    }
}

/// The spans without their first `n` characters.
fn skip_chars(spans: Vec<Span<'static>>, mut n: usize) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let len = s.content.chars().count();
        if n >= len {
            n -= len;
            continue;
        }
        if n > 0 {
            let rest: String = s.content.chars().skip(n).collect();
            n = 0;
            out.push(Span::styled(rest, s.style));
        } else {
            out.push(s);
        }
    }
    out
}

/// A highlighted line with the character at `col` shown as the cursor.
fn cursor_spans(line: &Line<'static>, col: usize, th: &Theme) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut placed = false;
    for s in &line.spans {
        let n = s.content.chars().count();
        if !placed && col < at + n {
            let k = col - at;
            let chars: Vec<char> = s.content.chars().collect();
            let (a, rest) = chars.split_at(k);
            let (c, b) = rest.split_at(1);
            out.push(Span::styled(a.iter().collect::<String>(), s.style));
            out.push(Span::styled(
                c.iter().collect::<String>(),
                s.style.bg(th.selection).add_modifier(Modifier::REVERSED),
            ));
            out.push(Span::styled(b.iter().collect::<String>(), s.style));
            placed = true;
        } else {
            out.push(s.clone());
        }
        at += n;
    }
    if !placed {
        out.push(Span::styled(
            " ",
            Style::new()
                .bg(th.selection)
                .add_modifier(Modifier::REVERSED),
        ));
    }
    out
}

/// A list of places (references, definitions, diagnostics): Enter opens
/// the selected one in the viewer.
pub struct PlaceList {
    pub title: String,
    pub items: Vec<Place>,
    pub selected: usize,
    pub kind: ListKind,
    height: std::cell::Cell<u16>,
}

/// What the list holds, and so what Enter does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Places in files: Enter opens one in the viewer.
    Places,
    /// Saved sessions (the id in `path`): Enter takes one up.
    Sessions,
}

pub struct Place {
    pub path: String,
    pub line: u32,
    pub col: u32,
    pub text: String,
    /// Colour the line as an error or a warning.
    pub level: Option<DiagLevel>,
}

impl PlaceList {
    pub fn new(title: String, items: Vec<Place>) -> Self {
        Self {
            title,
            items,
            selected: 0,
            kind: ListKind::Places,
            height: std::cell::Cell::new(10),
        }
    }

    pub fn move_by(&mut self, delta: isize) {
        let n = self.items.len();
        if n > 0 {
            self.selected = (self.selected as isize + delta).clamp(0, n as isize - 1) as usize;
        }
    }

    pub fn page(&mut self, pages: isize) {
        self.move_by(pages * self.height.get().max(2) as isize);
    }

    pub fn current(&self) -> Option<&Place> {
        self.items.get(self.selected)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        let inner = frame(
            area,
            buf,
            th,
            format!(" {} ({}) ", self.title, self.items.len()),
        );
        let body = Rect {
            height: inner.height.saturating_sub(1),
            ..inner
        };
        self.height.set(body.height);
        let h = body.height as usize;
        let start = if h == 0 {
            0
        } else {
            self.selected.saturating_sub(h - 1)
        };
        let mut lines = Vec::new();
        if self.items.is_empty() {
            lines.push(Line::styled("nothing here", Style::new().fg(th.dim)));
        }
        for (i, p) in self.items.iter().enumerate().skip(start).take(h) {
            let mut st = Style::new().fg(match p.level {
                Some(DiagLevel::Error) => th.removed,
                Some(DiagLevel::Warning) => th.warning,
                _ => th.text,
            });
            if i == self.selected {
                st = st.bg(th.selection).add_modifier(Modifier::BOLD);
            }
            let at = match self.kind {
                ListKind::Places => format!("{}:{}:{} ", p.path, p.line, p.col),
                ListKind::Sessions => format!("{}  ", p.path),
            };
            lines.push(Line::from(vec![
                Span::styled(at, Style::new().fg(th.accent)),
                Span::styled(p.text.clone(), st),
            ]));
        }
        Paragraph::new(lines).render(body, buf);
        Paragraph::new(Line::styled(
            match self.kind {
                ListKind::Places => "↑/↓ choose · Enter open · Esc back",
                ListKind::Sessions => "↑/↓ choose · Enter resume it here · Esc back",
            },
            Style::new().fg(th.dim),
        ))
        .render(
            Rect {
                y: inner.y + body.height,
                height: 1.min(inner.height),
                ..inner
            },
            buf,
        );
    }
}

impl Overlay {
    /// F1's help, at its top.
    pub fn help() -> Overlay {
        Overlay::Help {
            scroll: 0,
            page: std::cell::Cell::new(10),
            lines: std::cell::Cell::new(usize::MAX),
        }
    }

    /// A key while this overlay is on top of the stack.
    pub fn handle_key(
        &mut self,
        key: Key,
        ev: crossterm::event::KeyEvent,
        keys: &Keymap,
    ) -> Handled {
        match self {
            Overlay::Help {
                scroll,
                page,
                lines,
            } => {
                // A page is what shows; the last line stops at the bottom.
                let step = page.get().max(1);
                let last = lines.get().saturating_sub(page.get());
                match keys.lookup::<HelpAction>(key) {
                    Some(HelpAction::ScrollUp) => *scroll = scroll.saturating_sub(1),
                    Some(HelpAction::ScrollDown) => *scroll = (*scroll + 1).min(last),
                    Some(HelpAction::PageUp) => *scroll = scroll.saturating_sub(step),
                    Some(HelpAction::PageDown) => *scroll = (*scroll + step).min(last),
                    Some(HelpAction::Close) | None => return Handled::Close,
                }
            }
            Overlay::Viewer(v) => return v.handle_key(key, keys),
            Overlay::Places(p) => match keys.lookup::<PlacesAction>(key) {
                Some(PlacesAction::Up) => p.move_by(-1),
                Some(PlacesAction::Down) => p.move_by(1),
                Some(PlacesAction::PageUp) => p.page(-1),
                Some(PlacesAction::PageDown) => p.page(1),
                Some(PlacesAction::Open) if p.kind == ListKind::Sessions => {
                    if let Some(s) = p.current() {
                        return Handled::SendClose(crate::protocol::Op::SwitchSession {
                            id: s.path.clone(),
                        });
                    }
                }
                Some(PlacesAction::Open) => {
                    if let Some(place) = p.current() {
                        return Handled::Open {
                            path: place.path.clone(),
                            line: place.line,
                            col: place.col,
                        };
                    }
                }
                Some(PlacesAction::Back) => return Handled::Close,
                None => {}
            },
            Overlay::Rewind(r) => return r.handle_key(keys.lookup(key)),
            Overlay::Commit(c) => return c.handle_key(keys.lookup(key), ev),
            Overlay::Plan(p) => return p.handle_key(keys.lookup(key), ev),
        }
        Handled::Consumed
    }

    pub fn render(
        &mut self,
        area: Rect,
        buf: &mut Buffer,
        th: &Theme,
        keys: &Keymap,
        agents: &[(String, String)],
    ) {
        match self {
            Overlay::Rewind(r) => r.render(area, buf, th, keys),
            Overlay::Plan(p) => p.render(centered(area, 18), buf, th, keys),
            Overlay::Commit(c) => c.render(centered(area, 14), buf, th, keys),
            Overlay::Help {
                scroll,
                page,
                lines,
            } => {
                let inner = frame(area, buf, th, " help ".into());
                let all: Vec<Line<'static>> = help_lines(keys, th, agents)
                    .into_iter()
                    .flat_map(|l| fold(l, usize::from(inner.width)))
                    .collect();
                page.set(usize::from(inner.height));
                lines.set(all.len());
                let shown: Vec<Line<'static>> = all.into_iter().skip(*scroll).collect();
                Paragraph::new(shown).render(inner, buf);
            }
            Overlay::Viewer(v) => v.render(area, buf, th),
            Overlay::Places(p) => p.render(area, buf, th),
        }
    }
}
