//! The transcript: history cells (prompts, answers, reasoning, tool cards,
//! notices, receipts) that render to lines for a width, each cached until
//! the cell changes or the width does; only what is visible is drawn.
//! Scrolling keeps an anchor (cell, line) so new output does not yank the
//! view; with no anchor the view follows the end.

use std::collections::HashMap;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use crate::protocol::{AgentEvent, Level, Outcome, ToolStatus, TurnId};
use crate::tui::component::Handled;
use crate::tui::keymap::TranscriptAction;
use crate::tui::theme::Theme;

pub use super::cell::{Cell, CellKind, ToolState};

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
    /// The turn on screen: notices without one go to it.
    pub turn: TurnId,
    /// When each running tool call started.
    started: HashMap<String, Instant>,
    /// The code block of the selected cell copied last (cell, block).
    code_cursor: Option<(usize, usize)>,
    /// Every answer is JSON (`structuredOutput`): the welcome says so.
    pub structured: bool,
}

/// Bytes of a call's arguments shown while the model writes them.
const ARGS_SHOWN: usize = 100;

/// A whole `"path": "…"` in a piece of a call's arguments.
fn path_in(args: &str) -> Option<String> {
    let at = args.find("\"path\"")? + "\"path\"".len();
    let rest = args[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    let path = &rest[..end];
    (!path.is_empty() && !path.contains('\\')).then(|| path.to_string())
}

/// A streamed piece of a call's arguments: counted, its tail kept for
/// the card, and the file it is about named as soon as its path is
/// written (before or after the content).
fn grow_args((bytes, tail, summary): (&mut usize, &mut String, &mut String), delta: &str) {
    *bytes += delta.len();
    tail.push_str(delta);
    if summary.is_empty()
        && let Some(path) = path_in(tail)
    {
        *summary = path;
    }
    if tail.len() > ARGS_SHOWN {
        let mut from = tail.len() - ARGS_SHOWN;
        while !tail.is_char_boundary(from) {
            from += 1;
        }
        tail.drain(..from);
    }
}

impl Transcript {
    /// Takes its part of an agent event.
    pub fn on_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::SessionStarted { info } => self.structured = info.structured,
            AgentEvent::SessionCleared { session } => {
                self.push(
                    self.turn,
                    CellKind::Notice(Level::Info, format!("new session {session}")),
                );
            }
            AgentEvent::TurnStarted { turn, prompt } => {
                self.turn = *turn;
                self.push(*turn, CellKind::User(prompt.clone()));
                self.follow();
            }
            AgentEvent::Token { turn, text } => self.append_text(*turn, text, false),
            AgentEvent::Reasoning { turn, text } => self.append_text(*turn, text, true),
            AgentEvent::Compacted {
                turn,
                replaced,
                summary,
                tokens_before,
                tokens_after,
                auto,
            } => {
                self.push(
                    *turn,
                    CellKind::Compacted {
                        replaced: *replaced,
                        summary: summary.clone(),
                        before: *tokens_before,
                        after: *tokens_after,
                        auto: *auto,
                    },
                );
            }
            AgentEvent::Notice { turn, level, text } => {
                self.push(
                    turn.unwrap_or(self.turn),
                    CellKind::Notice(*level, text.clone()),
                );
            }
            AgentEvent::Plan {
                turn,
                steps,
                approved,
            } => self.plan(*turn, steps, *approved),
            AgentEvent::Receipt {
                turn,
                written,
                commands,
                notes,
            } => {
                self.push(
                    *turn,
                    CellKind::Receipt {
                        written: written.clone(),
                        commands: *commands,
                        notes: notes.clone(),
                    },
                );
            }
            AgentEvent::TurnFinished {
                turn,
                outcome,
                error,
                ..
            } => self.turn_finished(*turn, *outcome, error.as_ref()),
            AgentEvent::ConversationTrimmed { turn, .. } => {
                self.cells.retain(|c| c.turn < *turn);
                self.selected = None;
                self.follow();
            }
            _ => self.on_tool_event(ev),
        }
    }

    /// The events of a tool call's card: written, run, its helper's
    /// steps and session, waiting for approval, done.
    fn on_tool_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::ToolCallStarted {
                turn,
                call_id,
                name,
            } => {
                self.close_text();
                self.tool_cell(*turn, call_id, name);
            }
            AgentEvent::ToolCallDelta { call_id, delta, .. } => self.with_tool(call_id, |k| {
                if let CellKind::Tool {
                    arg_bytes,
                    args_tail,
                    summary,
                    ..
                } = k
                {
                    grow_args((arg_bytes, args_tail, summary), delta);
                }
            }),
            AgentEvent::ToolCallRunning {
                turn,
                call_id,
                name,
                summary,
                ..
            } => {
                self.close_text();
                let now = Instant::now();
                self.started.insert(call_id.clone(), now);
                let i = self.tool_cell(*turn, call_id, name);
                self.update(i, |k| {
                    if let CellKind::Tool {
                        summary: s, state, ..
                    } = k
                    {
                        s.clone_from(summary);
                        if *state != ToolState::Waiting {
                            *state = ToolState::Running(now);
                        }
                    }
                });
            }
            AgentEvent::ToolCallFinished {
                turn,
                call_id,
                name,
                summary,
                status,
                output,
            } => {
                let secs = self
                    .started
                    .remove(call_id)
                    .map(|s| s.elapsed().as_secs_f64());
                let i = self.tool_cell(*turn, call_id, name);
                self.update(i, |k| {
                    if let CellKind::Tool {
                        summary: s,
                        state,
                        output: o,
                        ..
                    } = k
                    {
                        if s.is_empty() {
                            s.clone_from(summary);
                        }
                        *state = ToolState::Done(*status, secs);
                        *o = output.to_string();
                    }
                });
            }
            AgentEvent::ToolProgress { call_id, text, .. } => self.with_tool(call_id, |k| {
                if let CellKind::Tool { steps, .. } = k {
                    steps.push(text.clone());
                }
            }),
            AgentEvent::ToolChild {
                call_id, session, ..
            } => self.with_tool(call_id, |k| {
                if let CellKind::Tool { child, .. } = k {
                    *child = Some(session.clone());
                }
            }),
            AgentEvent::ApprovalRequested { request } => {
                self.with_tool(&request.call_id, |k| {
                    if let CellKind::Tool { state, .. } = k {
                        *state = ToolState::Waiting;
                    }
                });
            }
            _ => {}
        }
    }

    /// Changes the card of `call_id`, if there is one.
    fn with_tool(&mut self, call_id: &str, f: impl FnOnce(&mut CellKind)) {
        if let Some(i) = self.find_tool(call_id) {
            self.update(i, f);
        }
    }

    /// A plan came: its progress redraws its approved card of the same
    /// turn; any other is a card of its own.
    fn plan(&mut self, turn: TurnId, steps: &[crate::protocol::PlanStep], approved: bool) {
        let card = self.cells.iter().rposition(|c| {
            c.turn == turn && matches!(c.kind, CellKind::Plan { approved: true, .. })
        });
        match card.filter(|_| approved) {
            Some(idx) => self.update(idx, |k| {
                *k = CellKind::Plan {
                    steps: steps.to_vec(),
                    approved: true,
                };
            }),
            None => {
                self.push(
                    turn,
                    CellKind::Plan {
                        steps: steps.to_vec(),
                        approved,
                    },
                );
            }
        }
    }

    /// The turn ended: a call still being written (a cancel, a cut
    /// stream) never ran, and its card says so instead of "writing the
    /// call" for ever; an ending other than done gets a card.
    fn turn_finished(&mut self, turn: TurnId, outcome: Outcome, error: Option<&String>) {
        self.close_text();
        let unfinished: Vec<usize> = self
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.turn == turn
                    && matches!(
                        c.kind,
                        CellKind::Tool {
                            state: ToolState::Writing,
                            ..
                        }
                    )
            })
            .map(|(i, _)| i)
            .collect();
        for i in unfinished {
            self.update(i, |k| {
                if let CellKind::Tool { state, output, .. } = k {
                    *state = ToolState::Done(ToolStatus::NotRun, None);
                    *output = "the turn ended before this call was complete; it did not run".into();
                }
            });
        }
        if outcome != Outcome::Done {
            self.push(
                turn,
                CellKind::TurnEnd {
                    outcome,
                    error: error.cloned(),
                },
            );
        }
    }

    /// A key's action when the transcript has the focus.
    pub fn handle_key(&mut self, action: TranscriptAction, th: &Theme) -> Handled {
        match action {
            TranscriptAction::ScrollUp => self.scroll(-1, th),
            TranscriptAction::ScrollDown => self.scroll(1, th),
            TranscriptAction::PageUp => self.page(-1, th),
            TranscriptAction::PageDown => self.page(1, th),
            TranscriptAction::Top => self.top(),
            TranscriptAction::Bottom => {
                self.selected = None;
                self.follow();
            }
            TranscriptAction::SelectPrev => self.select(-1),
            TranscriptAction::SelectNext => self.select(1),
            TranscriptAction::Toggle => self.toggle_selected(),
            TranscriptAction::Copy => return self.copy_selected(false),
            TranscriptAction::CopyCode => return self.copy_selected(true),
            TranscriptAction::OpenChild => return self.open_child(),
            TranscriptAction::Help => return Handled::Help,
        }
        Handled::Consumed
    }

    /// The selected card's helper session, to read its transcript.
    fn open_child(&self) -> Handled {
        let child = self
            .selected
            .and_then(|i| self.cells.get(i))
            .and_then(|c| match &c.kind {
                CellKind::Tool { child, .. } => child.clone(),
                _ => None,
            });
        match child {
            Some(session) => Handled::OpenSession(session),
            None => Handled::Flash("select a helper's card first (j/k)".into()),
        }
    }

    /// The selected cell (or, with `code`, its next fenced code block).
    fn copy_selected(&mut self, code: bool) -> Handled {
        let Some(i) = self.selected else {
            return Handled::Flash("select a cell first (j/k), then copy it".into());
        };
        let Some(cell) = self.cells.get(i) else {
            return Handled::Consumed;
        };
        let text = cell.kind.plain_text();
        if !code {
            return Handled::Copy {
                what: "the selected cell".into(),
                text,
            };
        }
        let blocks = crate::clipboard::code_blocks(&text);
        if blocks.is_empty() {
            return Handled::Flash("no code block in this cell".into());
        }
        let next = match self.code_cursor {
            Some((c, b)) if c == i => (b + 1) % blocks.len(),
            _ => 0,
        };
        self.code_cursor = Some((i, next));
        Handled::Copy {
            what: format!("code block {}/{}", next + 1, blocks.len()),
            text: blocks[next].clone(),
        }
    }

    /// The n-th answer counting back from the last (1 is the last).
    pub fn answer_back(&self, n: usize) -> Result<&str, usize> {
        let answers: Vec<&str> = self
            .cells
            .iter()
            .filter_map(|c| match &c.kind {
                CellKind::Answer { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        answers
            .len()
            .checked_sub(n)
            .and_then(|i| answers.get(i).copied())
            .ok_or(answers.len())
    }

    fn append_text(&mut self, turn: TurnId, text: &str, reasoning: bool) {
        let idx = match self.open_text(turn, reasoning) {
            Some(i) => i,
            None => {
                if !reasoning {
                    // The answer follows the reasoning: close it.
                    self.close_text();
                }
                let kind = if reasoning {
                    CellKind::Reasoning {
                        text: String::new(),
                        done: false,
                    }
                } else {
                    CellKind::Answer {
                        text: String::new(),
                        done: false,
                    }
                };
                self.push(turn, kind)
            }
        };
        self.update(idx, |k| match k {
            CellKind::Answer { text: t, .. } | CellKind::Reasoning { text: t, .. } => {
                t.push_str(text);
            }
            _ => {}
        });
    }

    fn tool_cell(&mut self, turn: TurnId, call_id: &str, name: &str) -> usize {
        match self.find_tool(call_id) {
            Some(i) => i,
            None => self.push(
                turn,
                CellKind::Tool {
                    call_id: call_id.to_string(),
                    name: name.to_string(),
                    summary: String::new(),
                    state: ToolState::Writing,
                    output: String::new(),
                    arg_bytes: 0,
                    args_tail: String::new(),
                    steps: Vec::new(),
                    child: None,
                },
            ),
        }
    }

    /// Every cached rendering is stale (the theme changed).
    pub fn invalidate(&mut self) {
        for c in &mut self.cells {
            c.touch();
        }
        self.unseen = false;
    }

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

    /// Running tool cards show their time: drawn afresh each tick, not
    /// from the cache of their last step. True when there was one.
    pub fn touch_running(&mut self) -> bool {
        let n = self.cells.len();
        let mut any = false;
        for c in &mut self.cells[n.saturating_sub(20)..] {
            if matches!(
                &c.kind,
                CellKind::Tool {
                    state: ToolState::Running(_),
                    ..
                }
            ) {
                c.touch();
                any = true;
            }
        }
        any
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

    /// The top of the transcript; the selection starts again from there.
    pub fn top(&mut self) {
        if !self.cells.is_empty() {
            self.anchor = Some((0, 0));
            self.selected = None;
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
        let cur = match (self.selected, self.anchor) {
            (Some(s), _) => s as isize,
            // Nothing selected in a scrolled view (after Home): the first
            // step takes the cell at the top of the view, not the last one.
            (None, Some((top, _))) => top as isize - delta.signum(),
            (None, None) => last + 1,
        };
        let next = (cur + delta).clamp(0, last) as usize;
        self.selected = Some(next);
        // Bring it into view at the top; the last cell is shown with the
        // end of the transcript under it, not blank rows.
        self.anchor = (next as isize != last).then_some((next, 0));
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
            super::cell::welcome(area, buf, th, self.structured);
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
