//! Where keys, pastes and the mouse go: an approval waiting on screen
//! first, then the overlay on top, the composer's completion popup, the
//! global keys, and the focused pane. Every key an action takes comes
//! from the keymap, matched as a typed action.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::app::{App, DOUBLE_PRESS, Focus, Queued, TYPING_GUARD};
use super::component::{Effect, Handled};
use super::keymap::{ApprovalAction, ComposerAction, GlobalAction, Key, KeyCodeKey};
use super::panes::composer::Popup;
use super::panes::overlays::Overlay;
use crate::protocol::{ApprovalDecision, Op};

impl App {
    pub fn on_paste(&mut self, text: &str) -> Vec<Effect> {
        self.dirty = true;
        if let Some(reason) = &mut self.approvals.reason {
            reason.push_str(&text.replace('\n', " "));
        } else {
            self.focus = Focus::Composer;
            self.composer.paste(text);
        }
        self.take_effects()
    }

    pub fn on_mouse(&mut self, ev: MouseEvent) -> Vec<Effect> {
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
                return Vec::new();
            }
            // Moves are many and change nothing: no redraw.
            _ => return Vec::new(),
        };
        self.dirty = true;
        if let Some(Overlay::Viewer(v)) = self.overlays.last_mut() {
            v.scroll_by(delta);
        } else if at(self.layout.diff) {
            self.diff.scroll_by(delta);
        } else if at(self.layout.tree) {
            self.tree.move_by(delta);
        } else if at(self.layout.transcript) {
            self.transcript.scroll(delta, &self.theme);
        }
        Vec::new()
    }

    pub fn on_key(&mut self, ev: KeyEvent) -> Vec<Effect> {
        if ev.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let Some(key) = super::keymap::Key::from_event(&ev) else {
            return Vec::new();
        };
        self.dirty = true;
        self.route_key(ev, key);
        self.take_effects()
    }

    fn route_key(&mut self, ev: KeyEvent, key: Key) {
        if self.approvals.visible() {
            return self.approval_key(ev, key);
        }
        if let Some(top) = self.overlays.last_mut() {
            // Ctrl-C closes an overlay as Esc does (the commit message
            // too, whose text area would take it for nothing).
            if self.keymap.lookup::<GlobalAction>(key) == Some(GlobalAction::Cancel) {
                return self.handled(Handled::Close);
            }
            let h = top.handle_key(key, ev, &self.keymap);
            return self.handled(h);
        }
        // An open completion popup takes Tab, arrows and Enter first.
        if self.focus == Focus::Composer && self.popup_key(ev) {
            return;
        }
        if let Some(action) = self.keymap.lookup::<GlobalAction>(key) {
            return self.global(action);
        }
        if key.code == KeyCodeKey::Esc && !self.approvals.queue.is_empty() {
            self.approvals.deferred = false;
            return;
        }
        let handled = match self.focus {
            Focus::Composer => return self.composer_key(ev, key),
            Focus::Transcript => match self.keymap.lookup(key) {
                Some(a) => self.transcript.handle_key(a, &self.theme),
                None => Handled::Ignored,
            },
            Focus::Diff => match self.keymap.lookup(key) {
                Some(a) => self.diff.handle_key(a),
                None => Handled::Ignored,
            },
            Focus::Tree => {
                // While a filter is typed, every printable key is text (a
                // vim `j` is a letter of the name, not "down").
                let typing = self.tree.typing() && plain_char(&ev).is_some();
                let action = if typing {
                    None
                } else {
                    self.keymap.lookup(key)
                };
                let h = self.tree.handle_key(action, plain_char(&ev));
                if self.tree.needs_index() {
                    self.jobs.index();
                }
                h
            }
        };
        match handled {
            // A plain character typed in another pane starts a message.
            Handled::Ignored => self.type_into_composer(ev),
            h => self.handled(h),
        }
    }

    pub(super) fn global(&mut self, action: GlobalAction) {
        match action {
            GlobalAction::Cancel => {
                let armed = self
                    .cancel_armed
                    .is_some_and(|t| t.elapsed() < DOUBLE_PRESS);
                if armed {
                    self.effects.push(Effect::Quit);
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
            GlobalAction::Quit => self.effects.push(Effect::Quit),
            GlobalAction::Suspend => self.effects.push(Effect::Suspend),
            GlobalAction::FocusNext => self.cycle_focus(1),
            GlobalAction::FocusPrev => self.cycle_focus(-1),
            GlobalAction::ToggleTree => {
                self.show_tree = !self.show_tree;
                if !self.show_tree && self.focus == Focus::Tree {
                    self.focus = Focus::Composer;
                }
            }
            GlobalAction::ToggleDiff => {
                self.show_diff = !self.show_diff;
                if !self.show_diff && self.focus == Focus::Diff {
                    self.focus = Focus::Composer;
                }
            }
            GlobalAction::ToggleMouse => self.toggle_mouse(),
            GlobalAction::Diagnostics => self.show_diagnostics(),
            GlobalAction::Help => self.overlays.push(Overlay::help()),
            GlobalAction::Palette => {
                self.focus = Focus::Composer;
                if self.composer.is_empty() {
                    self.composer.set_text("/");
                }
            }
        }
    }

    pub(super) fn toggle_mouse(&mut self) {
        self.mouse_capture = !self.mouse_capture;
        self.effects.push(Effect::MouseCapture(self.mouse_capture));
        self.status.mouse_off = !self.mouse_capture;
        // Short: the status bar says "mouse off" beside it already.
        self.flash(if self.mouse_capture {
            "mouse on: the wheel scrolls"
        } else {
            "select with the terminal; F2: back"
        });
    }

    fn cycle_focus(&mut self, delta: isize) {
        // The order the panes are seen in: left to right on a wide
        // screen (files, transcript, diff), the tabs' order on a narrow one.
        let narrow = self.layout.tabs.is_some();
        let mut order = vec![Focus::Composer];
        if self.show_tree && !narrow {
            order.push(Focus::Tree);
        }
        order.push(Focus::Transcript);
        if self.show_diff {
            order.push(Focus::Diff);
        }
        if self.show_tree && narrow {
            order.push(Focus::Tree);
        }
        let i = order.iter().position(|f| *f == self.focus).unwrap_or(0) as isize;
        let n = order.len() as isize;
        self.focus = order[((i + delta).rem_euclid(n)) as usize];
        if self.focus != Focus::Composer {
            self.tab = self.focus;
        }
    }

    fn approval_key(&mut self, ev: KeyEvent, key: Key) {
        if self.approval_guard.is_some_and(|t| Instant::now() < t) {
            // Still typing: what is typed goes to the composer, and nothing
            // answers the approval until a pause.
            self.approval_guard = Some(Instant::now() + TYPING_GUARD);
            if plain_char(&ev).is_some() || matches!(ev.code, KeyCode::Backspace | KeyCode::Enter) {
                self.focus = Focus::Composer;
                self.composer_key(ev, key);
            }
            self.flash("typing: the approval waits; answer it after a pause");
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
        match self.keymap.lookup::<ApprovalAction>(key) {
            Some(ApprovalAction::Yes) => {
                if let Some((id, decision)) = self.approvals.yes() {
                    self.ops.send(Op::Approval { id, decision });
                    // The hunk picker's words are about the answered one.
                    self.status.flash = None;
                }
                self.status.approvals_waiting = self.approvals.queue.len();
            }
            Some(ApprovalAction::No) => self.approvals.reason = Some(String::new()),
            Some(ApprovalAction::Always) => self.answer(ApprovalDecision::Always),
            Some(ApprovalAction::Defer) => self.approvals.deferred = true,
            Some(ApprovalAction::ToggleHunk) => {
                let said = self.approvals.toggle_hunk();
                self.flash(said);
            }
            Some(ApprovalAction::NextHunk) => self.approvals.move_cursor(1),
            Some(ApprovalAction::PrevHunk) => self.approvals.move_cursor(-1),
            None => {
                if self.keymap.lookup::<GlobalAction>(key) == Some(GlobalAction::Cancel) {
                    self.global(GlobalAction::Cancel);
                } else if plain_char(&ev).is_some() {
                    // A key that answers nothing (`/`, a letter of a word)
                    // starts a message: it and the keys right after it go
                    // to the composer, so the `a` of `/stats` is never
                    // taken for "always".
                    self.approval_guard = Some(Instant::now() + TYPING_GUARD);
                    self.focus = Focus::Composer;
                    self.composer_key(ev, key);
                    self.flash("typing: the approval waits; answer it after a pause");
                }
            }
        }
    }

    fn answer(&mut self, decision: ApprovalDecision) {
        if let Some((id, decision)) = self.approvals.answer(decision) {
            self.ops.send(Op::Approval { id, decision });
            self.status.flash = None;
        }
        self.status.approvals_waiting = self.approvals.queue.len();
    }

    /// A plain character typed while a pane other than the composer has
    /// the focus starts a message.
    fn type_into_composer(&mut self, ev: KeyEvent) {
        if plain_char(&ev).is_some() {
            self.focus = Focus::Composer;
            self.composer.area.input(ev);
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
                self.composer.popup_sel = (self.composer.popup_sel + 1).min(n.saturating_sub(1));
            }
            KeyCode::Tab => self.composer.complete(&popup),
            KeyCode::Enter if matches!(popup, Popup::Files(_)) => self.composer.complete(&popup),
            KeyCode::Enter if matches!(&popup, Popup::Commands(m) if m.len() > 1) => {
                self.composer.complete(&popup);
            }
            _ => return false,
        }
        true
    }

    fn composer_key(&mut self, ev: KeyEvent, key: Key) {
        match self.keymap.lookup::<ComposerAction>(key) {
            Some(ComposerAction::Send) => self.submit_composer(),
            Some(ComposerAction::Newline) => self.composer.insert_newline(),
            // With nothing typed, the last queued message comes back to
            // be edited or cleared (Enter queues it again).
            Some(ComposerAction::HistoryPrev)
                if self.composer.is_empty() && !self.queued.is_empty() =>
            {
                match self.queued.pop_back() {
                    Some(Queued::Message(last)) => {
                        self.composer.set_text(&last);
                        self.flash("taken out of the queue: edit it and Enter, or clear it");
                    }
                    Some(Queued::Command(_, name)) => {
                        self.flash(format!("{name} taken out of the queue"));
                    }
                    None => {}
                }
                self.status.queued = self.queued.len();
            }
            Some(ComposerAction::HistoryPrev) if self.composer.on_first_line() => {
                self.composer.history_prev();
            }
            Some(ComposerAction::HistoryNext) if self.composer.on_last_line() => {
                self.composer.history_next();
            }
            Some(ComposerAction::Complete) => {}
            // The composer is a line or two: page keys belong to the
            // transcript, and so do Home and End with nothing typed.
            Some(ComposerAction::PageUp) => self.transcript.page(-1, &self.theme),
            Some(ComposerAction::PageDown) => self.transcript.page(1, &self.theme),
            Some(ComposerAction::Top) if self.composer.is_empty() => self.transcript.top(),
            Some(ComposerAction::Bottom) if self.composer.is_empty() => {
                self.transcript.selected = None;
                self.transcript.follow();
            }
            Some(ComposerAction::KillLine) => {
                self.composer.area.delete_line_by_head();
            }
            // Esc with nothing typed, while the agent works: stop it, as
            // in Claude Code and Codex (Ctrl-C does too, and twice quits).
            Some(ComposerAction::Clear) if self.composer.is_empty() && self.working => {
                self.ops.send(Op::Cancel);
                self.flash("cancelling…");
            }
            Some(ComposerAction::Clear) if !self.composer.is_empty() => {
                let armed = self.esc_armed.is_some_and(|t| t.elapsed() < DOUBLE_PRESS);
                if armed {
                    self.esc_armed = None;
                    let text = self.composer.text();
                    self.composer.clear();
                    self.composer.area.set_yank_text(text);
                    self.flash("cleared (Ctrl-Y brings it back)");
                } else {
                    self.esc_armed = Some(Instant::now());
                    let key = self.keymap.keys_of(ComposerAction::Clear);
                    self.flash(format!("{key} again clears the message"));
                }
            }
            _ => {
                if matches!(ev.code, KeyCode::Char(_)) {
                    self.last_typed = Some(Instant::now());
                }
                self.composer.area.input(ev);
                if self.composer.needs_files() {
                    self.jobs.index();
                }
            }
        }
    }

    fn submit_composer(&mut self) {
        let text = self.composer.take();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if trimmed.starts_with('/') && !trimmed.contains('\n') {
            let line = trimmed.to_string();
            self.command(&line);
            return;
        }
        self.transcript.follow();
        if self.working {
            self.queued.push_back(Queued::Message(text));
            self.status.queued = self.queued.len();
            self.flash("queued: sent when this turn ends (↑ takes it back)");
            return;
        }
        self.send(text);
    }
}

/// The character of a key press without Ctrl or Alt.
fn plain_char(ev: &KeyEvent) -> Option<char> {
    match ev.code {
        KeyCode::Char(c)
            if !ev
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(c)
        }
        _ => None,
    }
}
