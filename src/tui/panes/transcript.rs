//! The transcript: history cells (prompts, answers, reasoning, tool cards,
//! notices, receipts) that render to lines for a width, each cached until
//! the cell changes or the width does; only what is visible is drawn.
//! Scrolling keeps an anchor (cell, line) so new output does not yank the
//! view; with no anchor the view follows the end.

use std::cell::RefCell;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::config::theme::Theme;
use crate::protocol::{Level, Outcome, ToolStatus, TurnId};
use crate::tui::render::markdown;
use crate::tui::render::wrap::{Logical, wrap_all};

/// Lines of a collapsed tool output, and of reasoning while it streams.
const PREVIEW_LINES: usize = 4;

#[derive(Clone, Debug, PartialEq)]
pub enum ToolState {
    /// The model is still writing the call.
    Writing,
    Waiting,
    Running(Instant),
    Done(ToolStatus, f64),
}

#[derive(Clone, Debug)]
pub enum CellKind {
    User(String),
    Answer {
        text: String,
        done: bool,
    },
    Reasoning {
        text: String,
        done: bool,
    },
    Tool {
        call_id: String,
        name: String,
        summary: String,
        state: ToolState,
        output: String,
        /// Bytes of arguments streamed so far (while writing).
        arg_bytes: usize,
    },
    Notice(Level, String),
    Receipt {
        written: Vec<String>,
        commands: u32,
        notes: Vec<String>,
    },
    TurnEnd {
        outcome: Outcome,
        error: Option<String>,
    },
}

impl CellKind {
    /// The cell as text to copy: an answer as the model wrote it (markdown),
    /// a tool call as its line and output.
    pub fn plain_text(&self) -> String {
        match self {
            CellKind::User(t) => t.clone(),
            CellKind::Answer { text, .. } | CellKind::Reasoning { text, .. } => text.clone(),
            CellKind::Tool {
                name,
                summary,
                output,
                ..
            } => format!("{name} {summary}\n{output}"),
            CellKind::Notice(_, t) => t.clone(),
            CellKind::Receipt {
                written,
                commands,
                notes,
            } => crate::protocol::receipt_text(written, *commands, notes),
            CellKind::TurnEnd { outcome, error } => match error {
                Some(e) => format!("{outcome:?}: {e}"),
                None => format!("{outcome:?}"),
            },
        }
    }
}

/// A cell's lines for (width, version, selected).
type Rendered = (u16, u64, bool, Vec<Line<'static>>);

pub struct Cell {
    pub turn: TurnId,
    pub kind: CellKind,
    pub expanded: bool,
    version: u64,
    cache: RefCell<Option<Rendered>>,
    /// A streaming answer: (bytes of finished blocks, their lines in the cache).
    stream: RefCell<Option<(usize, usize)>>,
}

impl Cell {
    fn new(turn: TurnId, kind: CellKind) -> Self {
        Cell {
            turn,
            kind,
            expanded: false,
            version: 0,
            cache: RefCell::new(None),
            stream: RefCell::new(None),
        }
    }

    fn touch(&mut self) {
        self.version += 1;
    }

    /// The cell's lines for `width`, from the cache when nothing changed.
    fn lines(
        &self,
        width: u16,
        theme: &Theme,
        selected: bool,
    ) -> std::cell::Ref<'_, Vec<Line<'static>>> {
        let fresh = matches!(&*self.cache.borrow(), Some((w, v, s, _)) if *w == width && *v == self.version && *s == selected);
        if !fresh {
            match &self.kind {
                CellKind::Answer { text, done: false } => {
                    self.stream_into_cache(text, width, theme, selected)
                }
                _ => {
                    let lines = wrap_all(&self.logical(theme, selected), width as usize);
                    *self.cache.borrow_mut() = Some((width, self.version, selected, lines));
                }
            }
        }
        std::cell::Ref::map(self.cache.borrow(), |c| match c {
            Some((_, _, _, l)) => l,
            None => unreachable_empty(),
        })
    }

    /// An answer still streaming: the blocks before the last blank line
    /// outside a code fence are rendered once and kept in the cache; each
    /// frame only renders the new blocks and the tail, so a frame costs the
    /// same for a long answer as for a short one. The finished answer is
    /// rendered whole.
    fn stream_into_cache(&self, text: &str, width: u16, th: &Theme, selected: bool) {
        let mut cache = self.cache.borrow_mut();
        let mut st = self.stream.borrow_mut();
        let reusable =
            matches!(&*cache, Some((w, _, s, _)) if *w == width && *s == selected) && st.is_some();
        if !reusable {
            *cache = Some((width, self.version, selected, Vec::new()));
            *st = Some((0, 0));
        }
        let (Some((_, version, _, lines)), Some((boundary, prefix_len))) =
            (cache.as_mut(), st.as_mut())
        else {
            return;
        };
        *version = self.version;
        lines.truncate(*prefix_len);
        let render = |part: &str, lines: &mut Vec<Line<'static>>| {
            if part.trim().is_empty() {
                return;
            }
            if !lines.is_empty() {
                let marker = if selected {
                    Span::styled("▌", Style::new().fg(th.accent))
                } else {
                    Span::raw(" ")
                };
                lines.push(Line::from(marker));
            }
            let kind = CellKind::Answer {
                text: part.to_string(),
                done: true,
            };
            lines.extend(wrap_all(
                &Cell::new(self.turn, kind).logical(th, selected),
                width as usize,
            ));
        };
        let next = *boundary + stable_boundary(&text[*boundary..]);
        if next > *boundary {
            render(&text[*boundary..next], lines);
            *boundary = next;
            *prefix_len = lines.len();
        }
        render(&text[*boundary..], lines);
    }

    fn height(&self, width: u16, theme: &Theme, selected: bool) -> usize {
        self.lines(width, theme, selected).len()
    }

    fn logical(&self, th: &Theme, selected: bool) -> Vec<Logical> {
        let dim = Style::new().fg(th.dim);
        let marker = if selected {
            Span::styled("▌", Style::new().fg(th.accent))
        } else {
            Span::raw(" ")
        };
        let with_marker = |mut lines: Vec<Logical>| {
            for l in &mut lines {
                l.line.spans.insert(0, marker.clone());
                l.hang.insert(0, marker.clone());
            }
            lines
        };
        let out = match &self.kind {
            CellKind::User(text) => {
                let st = Style::new().fg(th.accent).add_modifier(Modifier::BOLD);
                let mut v = vec![Logical::word(Line::default())];
                for (i, line) in text.lines().enumerate() {
                    let prefix = if i == 0 { "› " } else { "  " };
                    let mut l = Logical::word(Line::from(vec![
                        Span::styled(prefix, st),
                        Span::styled(
                            line.to_string(),
                            Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                        ),
                    ]));
                    l.hang = vec![Span::raw("  ")];
                    v.push(l);
                }
                v
            }
            CellKind::Answer { text, .. } => markdown::render(text, th),
            CellKind::Reasoning { text, done } => {
                let st = dim.add_modifier(Modifier::ITALIC);
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                if self.expanded {
                    lines
                        .iter()
                        .map(|l| Logical::word(Line::styled(format!("┊ {l}"), st)))
                        .collect()
                } else if *done {
                    let first = lines.first().copied().unwrap_or("");
                    vec![Logical::chars(Line::styled(
                        format!("┊ thought ({} lines): {first}", lines.len()),
                        st,
                    ))]
                } else {
                    let start = lines.len().saturating_sub(PREVIEW_LINES);
                    lines[start..]
                        .iter()
                        .map(|l| Logical::word(Line::styled(format!("┊ {l}"), st)))
                        .collect()
                }
            }
            CellKind::Tool {
                name,
                summary,
                state,
                output,
                arg_bytes,
                ..
            } => tool_lines(th, name, summary, state, output, *arg_bytes, self.expanded),
            CellKind::Notice(level, text) => {
                let c = match level {
                    Level::Info => th.dim,
                    Level::Warning => th.warning,
                    Level::Error => th.error,
                };
                vec![Logical::word(Line::styled(
                    format!("mm: {text}"),
                    Style::new().fg(c),
                ))]
            }
            CellKind::Receipt {
                written,
                commands,
                notes,
            } => {
                let text = crate::protocol::receipt_text(written, *commands, notes);
                let c = if written.is_empty() { th.dim } else { th.added };
                vec![Logical::word(Line::styled(
                    format!("■ {text}"),
                    Style::new().fg(c).add_modifier(Modifier::BOLD),
                ))]
            }
            CellKind::TurnEnd { outcome, error } => {
                let (c, text) = match outcome {
                    Outcome::Done => return Vec::new(),
                    Outcome::Failed => (
                        th.error,
                        format!("error: {}", error.as_deref().unwrap_or("the turn failed")),
                    ),
                    Outcome::Budget => (
                        th.warning,
                        error
                            .clone()
                            .unwrap_or_else(|| "the round budget is used up".into()),
                    ),
                    Outcome::Truncated => (
                        th.warning,
                        "the answer was cut by the completion token limit".into(),
                    ),
                    Outcome::Cancelled => (th.warning, "cancelled".into()),
                };
                vec![Logical::word(Line::styled(
                    format!("mm: {text}"),
                    Style::new().fg(c),
                ))]
            }
        };
        with_marker(out)
    }
}

/// The end of the last complete block: the last blank line that is not
/// inside a code fence.
fn stable_boundary(text: &str) -> usize {
    let mut in_fence = false;
    let mut boundary = 0;
    let mut pos = 0;
    let mut prev_blank = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let blank = trimmed.is_empty() && line.ends_with('\n');
        pos += line.len();
        if blank && !in_fence && !prev_blank {
            boundary = pos;
        }
        prev_blank = blank;
    }
    boundary
}

fn unreachable_empty() -> &'static Vec<Line<'static>> {
    static EMPTY: Vec<Line<'static>> = Vec::new();
    &EMPTY
}

fn tool_lines(
    th: &Theme,
    name: &str,
    summary: &str,
    state: &ToolState,
    output: &str,
    arg_bytes: usize,
    expanded: bool,
) -> Vec<Logical> {
    let dim = Style::new().fg(th.dim);
    let (icon, status, colour) = match state {
        ToolState::Writing => ("…", format!("writing the call ({arg_bytes} bytes)"), th.dim),
        ToolState::Waiting => ("?", "waiting for approval".to_string(), th.warning),
        ToolState::Running(start) => (
            "▸",
            format!("running {:.1}s", start.elapsed().as_secs_f64()),
            th.accent,
        ),
        ToolState::Done(ToolStatus::Ok, secs) => ("✓", format!("{secs:.1}s"), th.added),
        ToolState::Done(ToolStatus::Error, _) => ("✗", "error".to_string(), th.error),
        ToolState::Done(ToolStatus::Refused, _) => ("⊘", "refused".to_string(), th.warning),
        ToolState::Done(ToolStatus::NotRun, _) => ("⊘", "not run".to_string(), th.warning),
    };
    let mut header = Logical::chars(Line::from(vec![
        Span::styled(
            format!("{icon} "),
            Style::new().fg(colour).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            name.to_string(),
            Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!(" {summary}"), Style::new().fg(th.text)),
        Span::styled(format!("  {status}"), Style::new().fg(colour)),
    ]));
    header.hang = vec![Span::raw("  ")];
    let mut v = vec![header];
    let lines: Vec<&str> = output.lines().collect();
    if lines.is_empty() {
        return v;
    }
    let shown = if expanded {
        lines.len().min(2000)
    } else {
        lines.len().min(PREVIEW_LINES)
    };
    for l in &lines[..shown] {
        let mut line = Logical::chars(Line::styled(format!("  │ {l}"), dim));
        line.hang = vec![Span::styled("  │ ", dim)];
        v.push(line);
    }
    if shown < lines.len() {
        v.push(Logical::chars(Line::styled(
            format!(
                "  └ {} more lines (select and Enter to expand)",
                lines.len() - shown
            ),
            dim,
        )));
    }
    v
}

fn welcome(area: Rect, buf: &mut Buffer, th: &Theme) {
    let dim = Style::new().fg(th.dim);
    let lines = vec![
        Line::styled(
            format!("mm {}", env!("CARGO_PKG_VERSION")),
            Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
        ),
        Line::default(),
        Line::styled(
            "Ask for a fix, a change or an explanation. Name a file to attach it.",
            Style::new().fg(th.text),
        ),
        Line::styled(
            "Edits stream into the diff pane; you approve each one (y, n, a).",
            dim,
        ),
        Line::styled(
            "Tab moves between panes · F1 lists every key · Ctrl-C twice quits",
            dim,
        ),
    ];
    let h = lines.len() as u16;
    let y = area.y + area.height.saturating_sub(h) / 2;
    let rect = Rect {
        y,
        height: h.min(area.height),
        ..area
    };
    Paragraph::new(lines)
        .alignment(ratatui::layout::Alignment::Center)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(rect, buf);
}

/// The transcript pane.
#[derive(Default)]
pub struct Transcript {
    pub cells: Vec<Cell>,
    /// Top of the view when scrolled: (cell, line in cell). None: follow.
    pub anchor: Option<(usize, usize)>,
    pub selected: Option<usize>,
    /// New output arrived while scrolled up.
    pub unseen: bool,
    /// Height of the last drawn view, for paging.
    pub view_height: std::cell::Cell<u16>,
    pub view_width: std::cell::Cell<u16>,
}

impl Transcript {
    pub fn push(&mut self, turn: TurnId, kind: CellKind) -> usize {
        self.cells.push(Cell::new(turn, kind));
        if self.anchor.is_some() {
            self.unseen = true;
        }
        self.cells.len() - 1
    }

    /// Changes a cell and marks it for re-rendering.
    pub fn update(&mut self, idx: usize, f: impl FnOnce(&mut CellKind)) {
        if let Some(c) = self.cells.get_mut(idx) {
            f(&mut c.kind);
            c.touch();
            if self.anchor.is_some() {
                self.unseen = true;
            }
        }
    }

    /// The last answer or reasoning cell of `turn` that is still open.
    pub fn open_text(&self, turn: TurnId, reasoning: bool) -> Option<usize> {
        let last = self.cells.len().checked_sub(1)?;
        let c = &self.cells[last];
        let open = match &c.kind {
            CellKind::Answer { done, .. } if !reasoning => !done,
            CellKind::Reasoning { done, .. } if reasoning => !done,
            _ => false,
        };
        (open && c.turn == turn).then_some(last)
    }

    pub fn find_tool(&self, call_id: &str) -> Option<usize> {
        self.cells
            .iter()
            .rposition(|c| matches!(&c.kind, CellKind::Tool { call_id: id, .. } if id == call_id))
    }

    /// Closes streaming text cells (a tool call or the turn's end came).
    pub fn close_text(&mut self) {
        for i in (0..self.cells.len()).rev().take(3) {
            let changed = match &mut self.cells[i].kind {
                CellKind::Answer { done, .. } | CellKind::Reasoning { done, .. } if !*done => {
                    *done = true;
                    true
                }
                _ => false,
            };
            if changed {
                self.cells[i].touch();
            }
        }
    }

    /// Tool cards that show elapsed time need a redraw every tick.
    pub fn has_running(&self) -> bool {
        self.cells.iter().rev().take(20).any(|c| {
            matches!(
                &c.kind,
                CellKind::Tool {
                    state: ToolState::Running(_),
                    ..
                }
            )
        })
    }

    fn height_of(&self, i: usize, width: u16, th: &Theme) -> usize {
        self.cells[i].height(width, th, self.selected == Some(i))
    }

    /// The anchor of the view `lines` above the end.
    fn anchor_from_bottom(&self, lines: usize, width: u16, th: &Theme) -> Option<(usize, usize)> {
        let mut remaining = lines;
        for i in (0..self.cells.len()).rev() {
            let h = self.height_of(i, width, th);
            if remaining < h {
                return Some((i, h - remaining));
            }
            remaining -= h;
        }
        Some((0, 0))
    }

    /// Lines from the anchor to the end (stops counting past `limit`).
    fn lines_below_anchor(
        &self,
        anchor: (usize, usize),
        width: u16,
        th: &Theme,
        limit: usize,
    ) -> usize {
        let mut n = 0;
        for i in anchor.0..self.cells.len() {
            n += self.height_of(i, width, th);
            if i == anchor.0 {
                n = n.saturating_sub(anchor.1);
            }
            if n > limit {
                break;
            }
        }
        n
    }

    /// Scrolls by `delta` lines (negative: up).
    pub fn scroll(&mut self, delta: isize, th: &Theme) {
        let width = self.view_width.get().max(1);
        let height = self.view_height.get().max(1) as usize;
        let anchor = match self.anchor {
            Some(a) => a,
            None => {
                if delta >= 0 {
                    return;
                }
                match self.anchor_from_bottom(height, width, th) {
                    Some(a) => a,
                    None => return,
                }
            }
        };
        let (mut cell, mut line) = anchor;
        if delta < 0 {
            let mut up = (-delta) as usize;
            while up > 0 {
                if line >= up {
                    line -= up;
                    up = 0;
                } else {
                    up -= line;
                    if cell == 0 {
                        line = 0;
                        break;
                    }
                    cell -= 1;
                    line = self.height_of(cell, width, th);
                }
            }
        } else {
            let mut down = delta as usize;
            while down > 0 && cell < self.cells.len() {
                let h = self.height_of(cell, width, th);
                if line + down < h {
                    line += down;
                    down = 0;
                } else {
                    down -= h - line;
                    cell += 1;
                    line = 0;
                }
            }
        }
        let below = if cell < self.cells.len() {
            self.lines_below_anchor((cell, line), width, th, height)
        } else {
            0
        };
        if below <= height {
            self.follow();
        } else {
            self.anchor = Some((cell, line));
        }
    }

    pub fn page(&mut self, pages: isize, th: &Theme) {
        let h = self.view_height.get().max(2) as isize - 1;
        self.scroll(pages * h, th);
    }

    pub fn top(&mut self) {
        if !self.cells.is_empty() {
            self.anchor = Some((0, 0));
        }
    }

    pub fn follow(&mut self) {
        self.anchor = None;
        self.unseen = false;
    }

    pub fn select(&mut self, delta: isize) {
        if self.cells.is_empty() {
            return;
        }
        let last = self.cells.len() as isize - 1;
        let cur = self.selected.map(|s| s as isize).unwrap_or(last + 1);
        let next = (cur + delta).clamp(0, last) as usize;
        self.selected = Some(next);
        // Bring it into view: put it at the top unless it is already near the end.
        self.anchor = Some((next, 0));
    }

    pub fn toggle_selected(&mut self) {
        if let Some(i) = self.selected
            && let Some(c) = self.cells.get_mut(i)
        {
            c.expanded = !c.expanded;
            c.touch();
        }
    }

    /// Draws the visible part.
    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        self.view_height.set(area.height);
        self.view_width.set(area.width);
        if area.height == 0 || area.width == 0 {
            return;
        }
        if self.cells.is_empty() {
            welcome(area, buf, th);
            return;
        }
        let width = area.width;
        let height = area.height as usize;
        let mut lines: Vec<Line<'static>> = Vec::with_capacity(height);
        match self.anchor {
            None => {
                // Walk back from the end until the view is full.
                // Only the lines that show are copied, so a long cell
                // costs nothing more than a short one.
                let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
                let mut remaining = height;
                for i in (0..self.cells.len()).rev() {
                    let l = self.cells[i].lines(width, th, self.selected == Some(i));
                    let from = l.len().saturating_sub(remaining);
                    remaining -= l.len() - from;
                    chunks.push(l[from..].to_vec());
                    if remaining == 0 {
                        break;
                    }
                }
                for c in chunks.into_iter().rev() {
                    lines.extend(c);
                }
            }
            Some((cell, offset)) => {
                for i in cell..self.cells.len() {
                    let l = self.cells[i].lines(width, th, self.selected == Some(i));
                    let from = if i == cell { offset.min(l.len()) } else { 0 };
                    lines.extend(l[from..].iter().cloned());
                    if lines.len() >= height {
                        break;
                    }
                }
                lines.truncate(height);
            }
        }
        Paragraph::new(lines).render(area, buf);
        if self.anchor.is_some() && self.unseen {
            let label = " ↓ new output (End) ";
            let w = label.chars().count() as u16;
            if area.width > w {
                let x = area.x + area.width - w - 1;
                let y = area.y + area.height - 1;
                buf.set_string(
                    x,
                    y,
                    label,
                    Style::new()
                        .fg(th.text)
                        .bg(th.selection)
                        .add_modifier(Modifier::BOLD),
                );
            }
        }
    }

    /// Plain text of a cell (for tests and copying).
    pub fn cell_text(&self, i: usize, width: u16, th: &Theme) -> String {
        self.cells
            .get(i)
            .map(|c| {
                c.lines(width, th, false)
                    .iter()
                    .map(|l| {
                        l.spans
                            .iter()
                            .map(|s| s.content.as_ref())
                            .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::theme::{ColorDepth, load};

    #[test]
    fn a_streaming_answer_renders_like_the_finished_one() {
        let dir = tempfile::tempdir().unwrap();
        let th = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        let text = "# Plan\n\nFirst paragraph with `code`.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n1. one\n\n2. two\n\nLast words.";
        let streaming = Cell::new(
            1,
            CellKind::Answer {
                text: text.into(),
                done: false,
            },
        );
        let done = Cell::new(
            1,
            CellKind::Answer {
                text: text.into(),
                done: true,
            },
        );
        let plain = |c: &Cell| {
            c.lines(60, &th, false)
                .iter()
                .map(|l| {
                    l.spans
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(plain(&streaming), plain(&done));
        assert_eq!(stable_boundary("a\n\nb"), 3);
        assert_eq!(
            stable_boundary("```\na\n\nb"),
            0,
            "a blank line inside a fence is no boundary"
        );
    }
}
