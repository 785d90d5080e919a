//! The TUI's state and the only place that fans agent events out to the
//! panes, in order. Key, paste and mouse events change state; `render`
//! draws from state and does no I/O. Tests drive an `App` with scripted
//! events and keys, with no terminal, and read the ops it sends.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::panes::approvals::Approvals;
use super::panes::composer::{Composer, Popup};
use super::panes::diff::DiffPane;
use super::panes::file_tree::FileTree;
use super::panes::overlays::{Overlay, Place, PlaceList, Viewer, help_lines};
use super::panes::rewind::{CommitOverlay, RewindOverlay, Stage};
use super::panes::status::Status;
use super::panes::transcript::{CellKind, ToolState, Transcript};
use crate::bus::OpSender;
use crate::config::keymap::{self, Key, Keymap, Scope};
use crate::config::theme::{self, Theme};
use crate::protocol::{
    AgentEvent, ApprovalDecision, ApprovalKind, Level, NavKind, Op, Outcome, RewindMode,
    ToolStatus, TurnId,
};

/// Typing this recently when an approval opens guards it…
const TYPING: Duration = Duration::from_secs(1);
/// …until the keyboard has been quiet this long.
const GUARD: Duration = Duration::from_millis(600);

/// Below this width the side panes become tabs.
pub const NARROW: u16 = 100;
const TREE_WIDTH: u16 = 30;
/// Two Ctrl-C within this time quit.
const DOUBLE_PRESS: Duration = Duration::from_millis(1500);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Composer,
    Transcript,
    Diff,
    Tree,
}

/// Where each part went in the last frame (for the mouse).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub tabs: Option<Rect>,
    pub tree: Option<Rect>,
    pub transcript: Option<Rect>,
    pub diff: Option<Rect>,
    pub composer: Rect,
    pub status: Rect,
}

/// What the session is, for the status bar.
#[derive(Clone, Debug, Default)]
pub struct Info {
    pub provider: String,
    pub model: String,
    pub sandbox: String,
    pub session: String,
    pub context_window: Option<u64>,
}

pub struct App {
    pub theme: Theme,
    pub keymap: Keymap,
    ops: OpSender,
    pub root: PathBuf,
    pub transcript: Transcript,
    pub diff: DiffPane,
    pub tree: FileTree,
    pub composer: Composer,
    pub approvals: Approvals,
    pub overlay: Option<Overlay>,
    pub status: Status,
    pub focus: Focus,
    /// The main pane shown on a narrow screen.
    pub tab: Focus,
    pub show_tree: bool,
    pub show_diff: bool,
    pub mouse_capture: bool,
    queued: VecDeque<String>,
    cancel_armed: Option<Instant>,
    pub quit: bool,
    pub suspend: bool,
    /// Ring the terminal bell on the next frame.
    pub bell: bool,
    /// The mouse capture changed: the terminal layer applies it.
    pub mouse_changed: bool,
    pub dirty: bool,
    pub working: bool,
    turn: TurnId,
    started: HashMap<String, Instant>,
    pub layout: Layout,
    /// A session diff was asked for only to re-mark the file tree (after a
    /// rewind or an undo), not to be shown.
    marks_only: bool,
    /// Language-server diagnostics per file (the list and the viewer).
    pub diags: std::collections::BTreeMap<String, Vec<crate::protocol::DiagItem>>,
    /// Text to put on the clipboard (what it is, the text): the terminal
    /// layer copies it and reports back with `copied`.
    pub clipboard: Option<(String, String)>,
    /// When a character was last typed into the composer.
    last_typed: Option<Instant>,
    /// An approval opened while the user was typing: its keys wait until
    /// the typing stops, so a `y` meant for a message answers nothing.
    approval_guard: Option<Instant>,
    /// `g` was pressed in the viewer: `gd`, `gr` or `gg` may follow.
    viewer_g: bool,
    /// The code block of the selected cell copied last (cell, block).
    code_cursor: Option<(usize, usize)>,
    /// Viewers and lists left by "go to definition" or opening a place;
    /// "back" returns to them.
    back: Vec<Overlay>,
}

impl App {
    pub fn new(theme: Theme, keymap: Keymap, ops: OpSender, root: PathBuf, info: Info) -> App {
        let status = Status {
            provider: info.provider,
            model: info.model,
            sandbox: info.sandbox,
            session: info.session,
            context_window: info.context_window,
            ..Default::default()
        };
        App {
            theme,
            keymap,
            ops,
            transcript: Transcript::default(),
            diff: DiffPane::new(root.clone()),
            tree: FileTree::new(root.clone()),
            composer: Composer::new(),
            approvals: Approvals::default(),
            overlay: None,
            status,
            focus: Focus::Composer,
            tab: Focus::Transcript,
            show_tree: true,
            show_diff: true,
            mouse_capture: true,
            queued: VecDeque::new(),
            cancel_armed: None,
            quit: false,
            suspend: false,
            bell: false,
            mouse_changed: false,
            dirty: true,
            working: false,
            turn: 0,
            started: HashMap::new(),
            layout: Layout::default(),
            marks_only: false,
            diags: Default::default(),
            clipboard: None,
            last_typed: None,
            approval_guard: None,
            viewer_g: false,
            code_cursor: None,
            back: Vec::new(),
            root,
        }
    }

    /// Redraws are needed on a timer only while something moves.
    pub fn animating(&self) -> bool {
        self.working || self.transcript.has_running()
    }

    fn flash(&mut self, text: impl Into<String>) {
        self.status.flash = Some(text.into());
    }

    fn send(&mut self, text: String) {
        if self.ops.send(Op::UserMessage { text }) {
            self.working = true;
            self.status.working_since = Some(Instant::now());
        } else {
            self.flash("the agent has stopped");
        }
    }

    // ---------------------------------------------------------------- events

    /// Fans one agent event out to the panes.
    pub fn on_agent(&mut self, ev: AgentEvent) {
        self.dirty = true;
        match ev {
            AgentEvent::SessionStarted {
                session,
                provider,
                model,
                context_window,
                sandbox,
                ..
            } => {
                self.status.session = session;
                self.status.provider = provider;
                self.status.model = model;
                self.status.context_window = context_window;
                self.status.sandbox = sandbox;
            }
            AgentEvent::SessionCleared { session } => {
                self.status.session = session.clone();
                self.status.total = Default::default();
                self.status.context_used = 0;
                self.transcript.push(
                    self.turn,
                    CellKind::Notice(Level::Info, format!("new session {session}")),
                );
            }
            AgentEvent::TurnStarted { turn, prompt } => {
                self.turn = turn;
                self.working = true;
                self.status.working_since.get_or_insert_with(Instant::now);
                self.transcript.push(turn, CellKind::User(prompt));
                self.transcript.follow();
            }
            AgentEvent::Token { turn, text } => self.append_text(turn, &text, false),
            AgentEvent::Reasoning { turn, text } => self.append_text(turn, &text, true),
            AgentEvent::ToolCallStarted {
                turn,
                call_id,
                name,
            } => {
                self.transcript.close_text();
                self.diff.begin_live(&call_id, &name);
                self.transcript.push(
                    turn,
                    CellKind::Tool {
                        call_id,
                        name,
                        summary: String::new(),
                        state: ToolState::Writing,
                        output: String::new(),
                        arg_bytes: 0,
                    },
                );
            }
            AgentEvent::ToolCallDelta { call_id, delta, .. } => {
                if let Some(i) = self.transcript.find_tool(&call_id) {
                    self.transcript.update(i, |k| {
                        if let CellKind::Tool { arg_bytes, .. } = k {
                            *arg_bytes += delta.len();
                        }
                    });
                }
                self.diff.live_delta(&call_id, &delta);
            }
            AgentEvent::ToolCallRunning {
                turn,
                call_id,
                name,
                summary,
                ..
            } => {
                self.transcript.close_text();
                let now = Instant::now();
                self.started.insert(call_id.clone(), now);
                let i = self.tool_cell(turn, &call_id, &name);
                self.transcript.update(i, |k| {
                    if let CellKind::Tool {
                        summary: s, state, ..
                    } = k
                    {
                        *s = summary;
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
                    .remove(&call_id)
                    .map(|s| s.elapsed().as_secs_f64())
                    .unwrap_or(0.0);
                let i = self.tool_cell(turn, &call_id, &name);
                self.transcript.update(i, |k| {
                    if let CellKind::Tool {
                        summary: s,
                        state,
                        output: o,
                        ..
                    } = k
                    {
                        if s.is_empty() {
                            *s = summary;
                        }
                        *state = ToolState::Done(status, secs);
                        *o = output.to_string();
                    }
                });
                if status != ToolStatus::Ok {
                    self.diff.finished_without_change(&call_id);
                }
            }
            AgentEvent::FileChanged {
                call_id, change, ..
            } => {
                self.diff.applied(&call_id, &change);
                self.tree.mark(&change.path, change.kind);
                self.composer.file_added(&change.path);
            }
            AgentEvent::ApprovalRequested { request } => {
                if let Some(i) = self.transcript.find_tool(&request.call_id) {
                    self.transcript.update(i, |k| {
                        if let CellKind::Tool { state, .. } = k {
                            *state = ToolState::Waiting;
                        }
                    });
                }
                if let ApprovalKind::Edit { change } = &request.kind {
                    self.diff.pending(&request.call_id, change);
                }
                // Only mid-message: after Enter the composer is empty and
                // the next keys are meant for what comes up.
                if self.approvals.queue.is_empty()
                    && !self.composer.is_empty()
                    && self.last_typed.is_some_and(|t| t.elapsed() < TYPING)
                {
                    self.approval_guard = Some(Instant::now() + GUARD);
                }
                self.approvals.push(request);
                self.status.approvals_waiting = self.approvals.queue.len();
                self.bell = true;
            }
            AgentEvent::ApprovalResolved { id, .. } => {
                self.approvals.remove(id);
                self.status.approvals_waiting = self.approvals.queue.len();
            }
            AgentEvent::Usage {
                stats,
                context_used,
                ..
            } => {
                self.status.total.add(&stats.usage);
                self.status.last = Some(stats);
                if context_used > 0 {
                    self.status.context_used = context_used;
                }
            }
            AgentEvent::Notice { turn, level, text } => {
                self.transcript
                    .push(turn.unwrap_or(self.turn), CellKind::Notice(level, text));
            }
            AgentEvent::Receipt {
                turn,
                written,
                commands,
                notes,
            } => {
                self.transcript.push(
                    turn,
                    CellKind::Receipt {
                        written,
                        commands,
                        notes,
                    },
                );
            }
            AgentEvent::TurnFinished {
                turn,
                outcome,
                error,
                ..
            } => {
                self.transcript.close_text();
                if outcome != Outcome::Done {
                    self.transcript
                        .push(turn, CellKind::TurnEnd { outcome, error });
                }
                self.working = false;
                self.status.working_since = None;
                self.cancel_armed = None;
                if let Some(next) = self.queued.pop_front() {
                    self.status.queued = self.queued.len();
                    self.send(next);
                }
            }
            AgentEvent::CheckpointCreated { .. } => self.status.checkpoints += 1,
            AgentEvent::Checkpoints { list } => {
                if let Some(Overlay::Rewind(r)) = &mut self.overlay {
                    r.list = list;
                    r.loading = false;
                    r.selected = 0;
                    if let Some(id) = r.selected_id() {
                        self.ops.send(Op::PreviewRewind { id });
                    }
                }
            }
            AgentEvent::RewindPreview {
                id,
                changes,
                foreign,
            } => {
                if let Some(Overlay::Rewind(r)) = &mut self.overlay
                    && r.selected_id().as_deref() == Some(id.as_str())
                {
                    r.foreign = foreign;
                    self.diff
                        .set_review("rewind preview: what going back does", &changes);
                }
            }
            AgentEvent::SessionDiff { changes, .. } if self.marks_only => {
                self.marks_only = false;
                self.tree.marks = changes.iter().map(|c| (c.path.clone(), c.kind)).collect();
            }
            AgentEvent::SessionDiff { changes, .. } => {
                self.diff
                    .set_review("the session's changes since it began", &changes);
                self.show_diff = true;
                self.focus = Focus::Diff;
                self.tab = Focus::Diff;
                self.flash(format!("{} file(s) changed in this session", changes.len()));
            }
            AgentEvent::ConversationTrimmed { turn, session } => {
                self.transcript.cells.retain(|c| c.turn < turn);
                self.transcript.selected = None;
                self.transcript.follow();
                self.status.session = session;
            }
            AgentEvent::CommitProposed { message, files } => {
                self.status.flash = None;
                self.overlay = Some(Overlay::Commit(Box::new(CommitOverlay::new(
                    &message, files,
                ))));
            }
            AgentEvent::Committed { id, summary } => {
                self.flash(format!(
                    "committed {}: {summary}",
                    id.get(..8).unwrap_or(&id)
                ));
            }
            AgentEvent::Diagnostics {
                path,
                errors,
                warnings,
                items,
            } => {
                if items.is_empty() {
                    self.tree.diags.remove(&path);
                    self.diags.remove(&path);
                } else {
                    self.tree.diags.insert(path.clone(), (errors, warnings));
                    self.diags.insert(path, items);
                }
                let (e, w) = self
                    .tree
                    .diags
                    .values()
                    .fold((0, 0), |(e, w), (de, dw)| (e + de, w + dw));
                self.status.errors = e;
                self.status.warnings = w;
                if let Some(Overlay::Viewer(v)) = &mut self.overlay {
                    v.diags = self.diags.get(&v.path).cloned().unwrap_or_default();
                }
            }
            AgentEvent::EditChecked {
                call_id,
                errors,
                new_errors,
                preview,
                ..
            } => {
                let (text, bad) = verdict(errors, new_errors, preview);
                if preview {
                    self.approvals.checks.insert(call_id, (text, bad));
                } else {
                    self.diff.checked(&call_id, text, bad);
                }
            }
            AgentEvent::Locations {
                kind,
                query,
                items,
                error,
            } => {
                self.status.flash = None;
                if let Some(e) = error {
                    self.flash(format!("{kind}: {e}"));
                } else if items.is_empty() {
                    self.flash(format!("no {kind} found for {query}"));
                } else if kind == "definition" && items.len() == 1 {
                    let it = &items[0];
                    let (path, line, col) = (it.path.clone(), it.line, it.col);
                    self.open_place(&path, line, col);
                } else {
                    let places = items
                        .into_iter()
                        .map(|i| Place {
                            path: i.path,
                            line: i.line,
                            col: i.col,
                            text: i.text,
                            level: None,
                        })
                        .collect();
                    if let Some(prev) = self.overlay.take() {
                        self.back.push(prev);
                    }
                    self.overlay = Some(Overlay::Places(PlaceList::new(
                        format!("{kind} of {query}"),
                        places,
                    )));
                }
            }
            AgentEvent::OpFinished { op } if op == "rewind" || op == "undo" => {
                // The tree and its marks follow the work tree back.
                self.tree.refresh();
                self.marks_only = true;
                self.ops.send(Op::SessionDiff { from: None });
                if self.status.flash.as_deref() == Some("rewinding…") {
                    self.status.flash = None;
                }
            }
            _ => {}
        }
    }

    fn append_text(&mut self, turn: TurnId, text: &str, reasoning: bool) {
        let idx = match self.transcript.open_text(turn, reasoning) {
            Some(i) => i,
            None => {
                if !reasoning {
                    // The answer follows the reasoning: close it.
                    self.transcript.close_text();
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
                self.transcript.push(turn, kind)
            }
        };
        self.transcript.update(idx, |k| match k {
            CellKind::Answer { text: t, .. } | CellKind::Reasoning { text: t, .. } => {
                t.push_str(text)
            }
            _ => {}
        });
    }

    fn tool_cell(&mut self, turn: TurnId, call_id: &str, name: &str) -> usize {
        match self.transcript.find_tool(call_id) {
            Some(i) => i,
            None => self.transcript.push(
                turn,
                CellKind::Tool {
                    call_id: call_id.to_string(),
                    name: name.to_string(),
                    summary: String::new(),
                    state: ToolState::Writing,
                    output: String::new(),
                    arg_bytes: 0,
                },
            ),
        }
    }

    // ------------------------------------------------------------------ input

    pub fn on_paste(&mut self, text: &str) {
        self.dirty = true;
        if let Some(reason) = &mut self.approvals.reason {
            reason.push_str(&text.replace('\n', " "));
            return;
        }
        self.focus = Focus::Composer;
        self.composer.paste(text);
    }

    pub fn on_mouse(&mut self, ev: MouseEvent) {
        let at = |r: Option<Rect>| {
            r.is_some_and(|r| {
                ev.column >= r.x
                    && ev.column < r.x + r.width
                    && ev.row >= r.y
                    && ev.row < r.y + r.height
            })
        };
        let delta = match ev.kind {
            MouseEventKind::ScrollUp => -3,
            MouseEventKind::ScrollDown => 3,
            MouseEventKind::Down(_) => {
                self.dirty = true;
                if at(self.layout.transcript) {
                    self.focus = Focus::Transcript;
                } else if at(self.layout.diff) {
                    self.focus = Focus::Diff;
                } else if at(self.layout.tree) {
                    self.focus = Focus::Tree;
                } else if at(Some(self.layout.composer)) {
                    self.focus = Focus::Composer;
                }
                return;
            }
            _ => return,
        };
        self.dirty = true;
        if let Some(Overlay::Viewer(v)) = &mut self.overlay {
            v.scroll_by(delta);
        } else if at(self.layout.diff) {
            self.diff.scroll_by(delta);
        } else if at(self.layout.tree) {
            self.tree.move_by(delta);
        } else if at(self.layout.transcript) {
            self.transcript.scroll(delta, &self.theme);
        }
    }

    pub fn on_key(&mut self, ev: KeyEvent) {
        if ev.kind == KeyEventKind::Release {
            return;
        }
        let Some(key) = Key::from_event(&ev) else {
            return;
        };
        self.dirty = true;
        if self.approvals.visible() {
            self.approval_key(ev, key);
            return;
        }
        if self.overlay.is_some() {
            self.overlay_key(ev, key);
            return;
        }
        // An open completion popup takes Tab, arrows and Enter first.
        if self.focus == Focus::Composer && self.popup_key(ev) {
            return;
        }
        if let Some(action) = self.keymap.action(Scope::Global, key).map(str::to_string) {
            self.global(&action);
            return;
        }
        if key.code == keymap::KeyCodeKey::Esc && !self.approvals.queue.is_empty() {
            self.approvals.deferred = false;
            return;
        }
        match self.focus {
            Focus::Composer => self.composer_key(ev, key),
            Focus::Transcript => self.transcript_key(ev, key),
            Focus::Diff => self.diff_key(ev, key),
            Focus::Tree => self.tree_key(ev, key),
        }
    }

    fn global(&mut self, action: &str) {
        match action {
            "cancel" => {
                let armed = self
                    .cancel_armed
                    .is_some_and(|t| t.elapsed() < DOUBLE_PRESS);
                if armed {
                    self.quit = true;
                    return;
                }
                self.cancel_armed = Some(Instant::now());
                if self.working {
                    self.ops.send(Op::Cancel);
                    self.flash("cancelling… (Ctrl-C again quits)");
                } else if !self.composer.is_empty() {
                    self.composer.clear();
                    self.flash("cleared (Ctrl-C again quits)");
                } else {
                    self.flash("Ctrl-C again quits");
                }
            }
            "quit" => self.quit = true,
            "suspend" => self.suspend = true,
            "focus_next" => self.cycle_focus(1),
            "focus_prev" => self.cycle_focus(-1),
            "toggle_tree" => {
                self.show_tree = !self.show_tree;
                if !self.show_tree && self.focus == Focus::Tree {
                    self.focus = Focus::Composer;
                }
            }
            "toggle_diff" => {
                self.show_diff = !self.show_diff;
                if !self.show_diff && self.focus == Focus::Diff {
                    self.focus = Focus::Composer;
                }
            }
            "toggle_mouse" => self.toggle_mouse(),
            "diagnostics" => self.show_diagnostics(),
            "help" => self.overlay = Some(Overlay::Help { scroll: 0 }),
            "palette" => {
                self.focus = Focus::Composer;
                if self.composer.is_empty() {
                    self.composer.set_text("/");
                }
            }
            _ => {}
        }
    }

    fn toggle_mouse(&mut self) {
        self.mouse_capture = !self.mouse_capture;
        self.mouse_changed = true;
        self.status.mouse_off = !self.mouse_capture;
        self.flash(if self.mouse_capture {
            "mouse capture on"
        } else {
            "mouse capture off: select text with the terminal"
        });
    }

    fn visible_focuses(&self) -> Vec<Focus> {
        let mut v = vec![Focus::Composer, Focus::Transcript];
        if self.show_diff {
            v.push(Focus::Diff);
        }
        if self.show_tree {
            v.push(Focus::Tree);
        }
        v
    }

    fn cycle_focus(&mut self, delta: isize) {
        let order = self.visible_focuses();
        let i = order.iter().position(|f| *f == self.focus).unwrap_or(0) as isize;
        let n = order.len() as isize;
        self.focus = order[((i + delta).rem_euclid(n)) as usize];
        if self.focus != Focus::Composer {
            self.tab = self.focus;
        }
    }

    fn approval_key(&mut self, ev: KeyEvent, key: Key) {
        if self.approval_guard.is_some_and(|t| Instant::now() < t) {
            // Still typing: nothing answers until a short pause.
            self.approval_guard = Some(Instant::now() + GUARD);
            self.flash("an approval opened while you typed: read it, then answer");
            return;
        }
        self.approval_guard = None;
        if let Some(reason) = &mut self.approvals.reason {
            match ev.code {
                KeyCode::Enter => {
                    let r = reason.trim().to_string();
                    let decision = ApprovalDecision::No {
                        reason: (!r.is_empty()).then_some(r),
                    };
                    self.answer(decision);
                }
                KeyCode::Esc => self.approvals.reason = None,
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !ev.modifiers.contains(KeyModifiers::CONTROL) => reason.push(c),
                _ => {}
            }
            return;
        }
        let action = self.keymap.action(Scope::Approval, key).map(str::to_string);
        match action.as_deref() {
            Some("yes") => {
                if let Some((id, decision)) = self.approvals.yes() {
                    self.ops.send(Op::Approval { id, decision });
                }
                self.status.approvals_waiting = self.approvals.queue.len();
            }
            Some("no") => self.approvals.reason = Some(String::new()),
            Some("always") => self.answer(ApprovalDecision::Always),
            Some("defer") => self.approvals.deferred = true,
            Some("toggle_hunk") => self.approvals.toggle_hunk(),
            Some("next_hunk") => self.approvals.move_cursor(1),
            Some("prev_hunk") => self.approvals.move_cursor(-1),
            _ => {
                if self.keymap.action(Scope::Global, key) == Some("cancel") {
                    self.global("cancel");
                }
            }
        }
    }

    fn answer(&mut self, decision: ApprovalDecision) {
        if let Some((id, decision)) = self.approvals.answer(decision) {
            self.ops.send(Op::Approval { id, decision });
        }
        self.status.approvals_waiting = self.approvals.queue.len();
    }

    fn overlay_key(&mut self, ev: KeyEvent, key: Key) {
        let viewer_action = if matches!(self.overlay, Some(Overlay::Viewer(_))) {
            self.viewer_action(key)
        } else {
            None
        };
        let Some(overlay) = &mut self.overlay else {
            return;
        };
        match overlay {
            Overlay::Rewind(r) => {
                let mut send = None;
                match (&r.stage, ev.code) {
                    (Stage::Choose, KeyCode::Esc) => {
                        self.overlay = None;
                        self.diff.clear_review();
                    }
                    (Stage::Choose, KeyCode::Up | KeyCode::Char('k')) => {
                        send = r.move_by(-1).map(|id| Op::PreviewRewind { id })
                    }
                    (Stage::Choose, KeyCode::Down | KeyCode::Char('j')) => {
                        send = r.move_by(1).map(|id| Op::PreviewRewind { id })
                    }
                    (Stage::Choose, KeyCode::Enter) if !r.list.is_empty() => r.stage = Stage::Mode,
                    (Stage::Mode, KeyCode::Esc) => r.stage = Stage::Choose,
                    (Stage::Mode, KeyCode::Char(c @ ('c' | 'v' | 'b'))) => {
                        let mode = match c {
                            'c' => RewindMode::Code,
                            'v' => RewindMode::Conversation,
                            _ => RewindMode::Both,
                        };
                        if mode != RewindMode::Conversation && !r.foreign.is_empty() {
                            r.stage = Stage::Confirm(mode);
                        } else {
                            send = r.selected_id().map(|id| Op::Rewind {
                                id,
                                mode,
                                overwrite: false,
                            });
                        }
                    }
                    (Stage::Confirm(mode), KeyCode::Char('y')) => {
                        let mode = *mode;
                        send = r.selected_id().map(|id| Op::Rewind {
                            id,
                            mode,
                            overwrite: true,
                        });
                    }
                    (Stage::Confirm(_), KeyCode::Char('n') | KeyCode::Esc) => {
                        r.stage = Stage::Choose
                    }
                    _ => {}
                }
                if let Some(op) = send {
                    let rewind = matches!(op, Op::Rewind { .. });
                    self.ops.send(op);
                    if rewind {
                        self.overlay = None;
                        self.diff.clear_review();
                        self.flash("rewinding…");
                    }
                }
            }
            Overlay::Commit(c) => {
                if ev.code == KeyCode::Esc {
                    self.overlay = None;
                    self.flash("not committed");
                } else if ev.code == KeyCode::Char('s')
                    && ev.modifiers.contains(KeyModifiers::CONTROL)
                {
                    let message = c.message();
                    self.overlay = None;
                    self.ops.send(Op::Commit { message });
                    self.flash("committing…");
                } else {
                    c.area.input(ev);
                }
            }
            Overlay::Viewer(v) => match viewer_action.as_deref() {
                Some("close") => {
                    self.overlay = None;
                    self.back.clear();
                }
                Some("scroll_up") => v.scroll_by(-1),
                Some("scroll_down") => v.scroll_by(1),
                Some("left") => v.move_col(-1),
                Some("right") => v.move_col(1),
                Some("word_next") => v.word(true),
                Some("word_prev") => v.word(false),
                Some("page_up") => v.page(-1),
                Some("page_down") => v.page(1),
                Some("top") => v.top(),
                Some("bottom") => v.bottom(),
                Some(a @ ("definition" | "references")) => {
                    let kind = if a == "definition" {
                        NavKind::Definition
                    } else {
                        NavKind::References
                    };
                    let (path, line, col) = (v.path.clone(), v.line as u32 + 1, v.col as u32 + 1);
                    self.ops.send(Op::Navigate {
                        kind,
                        path,
                        line,
                        col,
                    });
                    self.flash(format!("asking the language server for the {a}…"));
                }
                Some("back") => self.go_back(),
                _ => {}
            },
            Overlay::Places(p) => match key.code {
                keymap::KeyCodeKey::Up => p.move_by(-1),
                keymap::KeyCodeKey::Down => p.move_by(1),
                keymap::KeyCodeKey::PageUp => p.page(-1),
                keymap::KeyCodeKey::PageDown => p.page(1),
                keymap::KeyCodeKey::Enter => {
                    if let Some(place) = p.current() {
                        let (path, line, col) = (place.path.clone(), place.line, place.col);
                        self.open_place(&path, line, col);
                    }
                }
                keymap::KeyCodeKey::Esc | keymap::KeyCodeKey::Backspace => self.go_back(),
                _ => {}
            },
            Overlay::Help { scroll } => match key.code {
                keymap::KeyCodeKey::Up => *scroll = scroll.saturating_sub(1),
                keymap::KeyCodeKey::Down => *scroll += 1,
                keymap::KeyCodeKey::PageUp => *scroll = scroll.saturating_sub(10),
                keymap::KeyCodeKey::PageDown => *scroll += 10,
                _ => self.overlay = None,
            },
        }
    }

    /// The viewer's action for a key, with vim's `gd` (definition), `gr`
    /// (references) and `gg` (top) on top of the keymap.
    fn viewer_action(&mut self, key: Key) -> Option<String> {
        let plain = |c: char| key.code == keymap::KeyCodeKey::Char(c) && !key.ctrl && !key.alt;
        if std::mem::take(&mut self.viewer_g) {
            if plain('d') {
                return Some("definition".into());
            }
            if plain('r') {
                return Some("references".into());
            }
            if plain('g') {
                return Some("top".into());
            }
        } else if plain('g') {
            self.viewer_g = true;
            return None;
        }
        self.keymap.action(Scope::Viewer, key).map(str::to_string)
    }

    /// Opens a file in the viewer at a 1-based place; what was open is
    /// kept for "back".
    fn open_place(&mut self, path: &str, line: u32, col: u32) {
        self.ops.send(Op::OpenFile {
            path: path.to_string(),
        });
        let mut v = Viewer::open(&self.root, path);
        v.goto(line as usize, col as usize);
        v.diags = self.diags.get(path).cloned().unwrap_or_default();
        if let Some(prev) = self.overlay.take() {
            self.back.push(prev);
        }
        self.overlay = Some(Overlay::Viewer(v));
    }

    /// Back to the previous viewer or list; closes when there is none.
    fn go_back(&mut self) {
        self.overlay = self.back.pop();
        if let Some(Overlay::Viewer(v)) = &mut self.overlay {
            v.diags = self.diags.get(&v.path).cloned().unwrap_or_default();
        }
    }

    /// The terminal layer copied (or could not): say where it went.
    pub fn copied(&mut self, what: &str, got: &crate::clipboard::Copied, bytes: usize) {
        self.flash(got.describe(what, bytes));
        self.dirty = true;
    }

    /// `/copy [N]`: the last answer, or the N-th counting back.
    fn copy_answer(&mut self, arg: Option<&str>) {
        let n = match arg.map(str::parse::<usize>) {
            None => 1,
            Some(Ok(n)) if n >= 1 => n,
            _ => return self.flash("usage: /copy [N] (1 is the last answer, 2 the one before)"),
        };
        let answers: Vec<&str> = self
            .transcript
            .cells
            .iter()
            .filter_map(|c| match &c.kind {
                CellKind::Answer { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        match answers.len().checked_sub(n).and_then(|i| answers.get(i)) {
            Some(text) => {
                let what = if n == 1 {
                    "the last answer".to_string()
                } else {
                    format!("answer {n} back")
                };
                self.clipboard = Some((what, text.to_string()));
            }
            None => self.flash(format!(
                "no answer {n} back: the transcript has {} answer(s)",
                answers.len()
            )),
        }
    }

    /// The selected cell (or, with `code`, its next fenced code block).
    fn copy_selected(&mut self, code: bool) {
        let Some(i) = self.transcript.selected else {
            return self.flash("select a cell first (j/k), then copy it");
        };
        let Some(cell) = self.transcript.cells.get(i) else {
            return;
        };
        let text = cell.kind.plain_text();
        if !code {
            self.clipboard = Some(("the selected cell".into(), text));
            return;
        }
        let blocks = crate::clipboard::code_blocks(&text);
        if blocks.is_empty() {
            return self.flash("no code block in this cell");
        }
        let next = match self.code_cursor {
            Some((c, b)) if c == i => (b + 1) % blocks.len(),
            _ => 0,
        };
        self.code_cursor = Some((i, next));
        self.clipboard = Some((
            format!("code block {}/{}", next + 1, blocks.len()),
            blocks[next].clone(),
        ));
    }

    /// Every diagnostic of the workspace, errors first.
    fn show_diagnostics(&mut self) {
        let mut items: Vec<Place> = self
            .diags
            .iter()
            .flat_map(|(path, list)| {
                list.iter().map(move |d| Place {
                    path: path.clone(),
                    line: d.line,
                    col: d.col,
                    text: match &d.source {
                        Some(s) => format!("{} ({s})", d.message),
                        None => d.message.clone(),
                    },
                    level: Some(d.level),
                })
            })
            .collect();
        items.sort_by_key(|p| {
            (
                p.level != Some(crate::protocol::DiagLevel::Error),
                p.path.clone(),
                p.line,
            )
        });
        if let Some(prev) = self.overlay.take() {
            self.back.push(prev);
        }
        self.overlay = Some(Overlay::Places(PlaceList::new("diagnostics".into(), items)));
    }

    /// A plain character typed while a pane other than the composer has
    /// the focus starts a message.
    fn type_into_composer(&mut self, ev: KeyEvent) {
        if let KeyCode::Char(_) = ev.code
            && !ev
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            self.focus = Focus::Composer;
            self.composer.area.input(ev);
        }
    }

    fn transcript_key(&mut self, ev: KeyEvent, key: Key) {
        let th = self.theme.clone();
        match self.keymap.action(Scope::Transcript, key) {
            Some("scroll_up") => self.transcript.scroll(-1, &th),
            Some("scroll_down") => self.transcript.scroll(1, &th),
            Some("page_up") => self.transcript.page(-1, &th),
            Some("page_down") => self.transcript.page(1, &th),
            Some("top") => self.transcript.top(),
            Some("bottom") => {
                self.transcript.selected = None;
                self.transcript.follow();
            }
            Some("select_prev") => self.transcript.select(-1),
            Some("select_next") => self.transcript.select(1),
            Some("toggle") => self.transcript.toggle_selected(),
            Some("copy") => self.copy_selected(false),
            Some("copy_code") => self.copy_selected(true),
            Some("help") => self.overlay = Some(Overlay::Help { scroll: 0 }),
            _ => self.type_into_composer(ev),
        }
    }

    fn diff_key(&mut self, ev: KeyEvent, key: Key) {
        if ev.code == KeyCode::Esc && self.diff.review.is_some() {
            self.diff.clear_review();
            return;
        }
        match self.keymap.action(Scope::Diff, key) {
            Some("scroll_up") => self.diff.scroll_by(-1),
            Some("scroll_down") => self.diff.scroll_by(1),
            Some("page_up") => self.diff.page(-1),
            Some("page_down") => self.diff.page(1),
            Some("next_file") => self.diff.next_file(1),
            Some("prev_file") => self.diff.next_file(-1),
            Some("next_hunk") => self.diff.next_hunk(1),
            Some("prev_hunk") => self.diff.next_hunk(-1),
            Some("help") => self.overlay = Some(Overlay::Help { scroll: 0 }),
            _ => self.type_into_composer(ev),
        }
    }

    fn tree_key(&mut self, ev: KeyEvent, key: Key) {
        match self.keymap.action(Scope::Tree, key) {
            Some("up") => self.tree.move_by(-1),
            Some("down") => self.tree.move_by(1),
            Some("open") => {
                if let Some(path) = self.tree.open() {
                    self.ops.send(Op::OpenFile { path: path.clone() });
                    let mut v = Viewer::open(&self.root, &path);
                    v.diags = self.diags.get(&path).cloned().unwrap_or_default();
                    self.back.clear();
                    self.overlay = Some(Overlay::Viewer(v));
                }
            }
            Some("expand") => self.tree.set_expanded(true),
            Some("collapse") => self.tree.set_expanded(false),
            Some("clear_filter") => self.tree.clear_filter(),
            _ => match ev.code {
                KeyCode::Backspace => self.tree.backspace(),
                KeyCode::Char(c)
                    if !ev
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                {
                    self.tree.type_char(c)
                }
                _ => {}
            },
        }
    }

    /// Keys for the completion popup; true when one was used.
    fn popup_key(&mut self, ev: KeyEvent) -> bool {
        let popup = self.composer.popup();
        let n = match &popup {
            Popup::Commands(m) => m.len(),
            Popup::Files(m) => m.len(),
            Popup::None => return false,
        };
        match ev.code {
            KeyCode::Up => self.composer.popup_sel = self.composer.popup_sel.saturating_sub(1),
            KeyCode::Down => {
                self.composer.popup_sel = (self.composer.popup_sel + 1).min(n.saturating_sub(1))
            }
            KeyCode::Tab => self.composer.complete(&popup),
            KeyCode::Enter if matches!(popup, Popup::Files(_)) => self.composer.complete(&popup),
            KeyCode::Enter if matches!(&popup, Popup::Commands(m) if m.len() > 1) => {
                self.composer.complete(&popup)
            }
            _ => return false,
        }
        true
    }

    fn composer_key(&mut self, ev: KeyEvent, key: Key) {
        match self.keymap.action(Scope::Composer, key) {
            Some("send") => self.submit(),
            Some("newline") => self.composer.insert_newline(),
            Some("history_prev") if self.composer.on_first_line() => self.composer.history_prev(),
            Some("history_next") if self.composer.on_last_line() => self.composer.history_next(),
            Some("complete") => {}
            _ => {
                if matches!(ev.code, KeyCode::Char(_)) {
                    self.last_typed = Some(Instant::now());
                }
                self.composer.area.input(ev);
                self.composer.load_files_if_needed(&self.root);
            }
        }
    }

    fn submit(&mut self) {
        let text = self.composer.take();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if trimmed.starts_with('/') && !trimmed.contains('\n') {
            self.command(trimmed);
            return;
        }
        self.transcript.follow();
        if self.working {
            self.queued.push_back(text);
            self.status.queued = self.queued.len();
            self.flash("queued: sent when this turn ends");
            return;
        }
        self.send(text);
    }

    /// A slash command typed in the composer.
    pub fn command(&mut self, line: &str) {
        let mut parts = line.split_whitespace();
        let name = parts.next().unwrap_or("");
        let arg = parts.next();
        match name {
            "/quit" | "/exit" | "/q" => self.quit = true,
            "/help" | "/?" => self.overlay = Some(Overlay::Help { scroll: 0 }),
            "/new" => {
                self.ops.send(Op::NewSession);
            }
            "/sessions" => {
                let list = crate::session::list(&self.root);
                let text = if list.is_empty() {
                    "no sessions yet".to_string()
                } else {
                    list.iter()
                        .take(20)
                        .map(|s| {
                            format!(
                                "{}  {:>4} messages  {}",
                                s.id,
                                s.messages,
                                s.first_prompt.chars().take(50).collect::<String>()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                self.transcript.push(
                    self.turn,
                    CellKind::Notice(
                        Level::Info,
                        format!("sessions (resume with mm -tui -resume ID):\n{text}"),
                    ),
                );
            }
            "/theme" => match arg {
                Some(n) => match theme::load(n, &self.root, self.theme.depth) {
                    Ok(t) => {
                        self.theme = t;
                        self.invalidate();
                        self.flash(format!("theme {n}"));
                    }
                    Err(e) => self.flash(e.to_string()),
                },
                None => self.flash(format!(
                    "theme {} (shipped: dark, light, high-contrast)",
                    self.theme.name
                )),
            },
            "/keymap" => match arg {
                Some(n) => match keymap::load(n, &self.root) {
                    Ok(k) => {
                        self.keymap = k;
                        self.flash(format!("keymap {n}"));
                    }
                    Err(e) => self.flash(e.to_string()),
                },
                None => self.flash(format!(
                    "keymap {} (shipped: default, vim, emacs)",
                    self.keymap.name
                )),
            },
            "/mouse" => self.toggle_mouse(),
            "/tree" => self.global("toggle_tree"),
            "/rewind" => {
                self.overlay = Some(Overlay::Rewind(RewindOverlay::default()));
                self.show_diff = true;
                self.ops.send(Op::ListCheckpoints);
            }
            "/diff" => {
                self.marks_only = false;
                self.ops.send(Op::SessionDiff { from: None });
                self.flash("reading the session's changes…");
            }
            "/commit" => {
                self.ops.send(Op::ProposeCommit);
                self.flash("asking the model for a commit message…");
            }
            "/undo" => {
                self.ops.send(Op::Undo);
            }
            "/stats" => {
                self.ops.send(Op::Stats);
            }
            "/diagnostics" => self.show_diagnostics(),
            "/copy" => self.copy_answer(arg),
            "/export" => {
                self.ops.send(Op::Export {
                    path: arg.map(str::to_string),
                });
                self.flash("exporting the session…");
            }
            other => self.flash(format!("unknown command {other}; /help lists them")),
        }
    }

    /// Every cached rendering is stale (the theme changed).
    fn invalidate(&mut self) {
        let cells = std::mem::take(&mut self.transcript.cells);
        for c in cells {
            let idx = self.transcript.push(c.turn, c.kind.clone());
            self.transcript.cells[idx].expanded = c.expanded;
        }
        self.transcript.unseen = false;
    }

    /// Called on a timer: clears an old flash.
    pub fn tick(&mut self) {
        if self
            .cancel_armed
            .is_some_and(|t| t.elapsed() > DOUBLE_PRESS)
        {
            self.cancel_armed = None;
            if self
                .status
                .flash
                .as_deref()
                .is_some_and(|f| f.contains("Ctrl-C again"))
            {
                self.status.flash = None;
                self.dirty = true;
            }
        }
    }

    // ---------------------------------------------------------------- drawing

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
            self.tree.render(inner, buf, &th, focused);
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
        if let Some(o) = &mut self.overlay {
            // The rewind list leaves the diff pane in sight: it previews.
            let area = match o {
                Overlay::Rewind(_) => l.transcript.filter(|_| l.diff.is_some()).unwrap_or(main),
                _ => main,
            };
            o.render(area, buf, &th, &self.keymap);
        }
        if self.approvals.visible() {
            self.approvals.render(main, buf, &th, &self.keymap);
        }
    }

    /// The help text as plain lines (for tests).
    pub fn help_text(&self) -> Vec<String> {
        help_lines(&self.keymap, &self.theme)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }
}

/// The language server's verdict on an edit, in words, and whether it is
/// bad news.
fn verdict(errors: u32, new_errors: Option<u32>, preview: bool) -> (String, bool) {
    let (adds, left) = if preview {
        ("this edit would add", "would remain")
    } else {
        ("this edit adds", "remain")
    };
    match new_errors {
        Some(0) if errors == 0 => ("language server: no errors".into(), false),
        Some(0) => (
            format!("language server: no new errors ({errors} {left} in the file)"),
            false,
        ),
        Some(n) => (format!("language server: {adds} {n} error(s)"), true),
        None if errors == 0 => ("language server: no errors".into(), false),
        None => (
            format!("language server: {errors} error(s) in the file after this edit"),
            true,
        ),
    }
}
