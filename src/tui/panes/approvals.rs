//! The approval overlay: the waiting requests in order, the first one
//! shown with exactly what will happen (the command and why it needs
//! approval, or the edit's hunks, each of which can be accepted or
//! rejected). Answering never blocks the UI: the agent waits, the screen
//! does not.

use std::collections::VecDeque;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::diff::{self, Hunk};
use crate::protocol::{AgentEvent, ApprovalDecision, ApprovalKind, ApprovalRequest};
use crate::tui::keymap::{Keymap, Scope};
use crate::tui::render::diff::{HunkMarks, render as render_hunks};
use crate::tui::render::wrap::{Logical, wrap_all};
use crate::tui::theme::Theme;

#[derive(Default)]
pub struct Approvals {
    pub queue: VecDeque<ApprovalRequest>,
    /// Hidden by Esc to look around; the request still waits.
    pub deferred: bool,
    /// Typing a reason for a "no".
    pub reason: Option<String>,
    hunks: Vec<Hunk>,
    pub accepted: Vec<bool>,
    pub cursor: usize,
    pub scroll: usize,
    /// The language server's verdict on a proposed edit, by call id.
    pub checks: std::collections::HashMap<String, (String, bool)>,
}

impl Approvals {
    /// Takes its part of an agent event: requests come and go, and the
    /// language server's verdict on a proposed edit.
    pub fn on_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::ApprovalRequested { request } => self.push(request.clone()),
            AgentEvent::ApprovalResolved { id, .. } => self.remove(*id),
            AgentEvent::EditChecked {
                call_id,
                errors,
                new_errors,
                preview: true,
                ..
            } => {
                let verdict = super::verdict(*errors, *new_errors, true);
                self.checks.insert(call_id.clone(), verdict);
            }
            _ => {}
        }
    }

    pub fn push(&mut self, req: ApprovalRequest) {
        self.queue.push_back(req);
        if self.queue.len() == 1 {
            self.load_current();
        }
    }

    /// A request resolved elsewhere (cancelled): drop it.
    pub fn remove(&mut self, id: u64) {
        let was_first = self.queue.front().map(|r| r.id) == Some(id);
        self.queue.retain(|r| r.id != id);
        if was_first {
            self.load_current();
        }
    }

    pub fn visible(&self) -> bool {
        !self.queue.is_empty() && !self.deferred
    }

    fn load_current(&mut self) {
        self.reason = None;
        self.cursor = 0;
        self.scroll = 0;
        self.hunks = match self.queue.front().map(|r| &r.kind) {
            Some(ApprovalKind::Edit { change }) => {
                diff::hunks(&change.before, &change.after, diff::CONTEXT)
            }
            _ => Vec::new(),
        };
        self.accepted = vec![true; self.hunks.len()];
    }

    /// Takes the answer to the first request and moves to the next.
    pub fn answer(&mut self, decision: ApprovalDecision) -> Option<(u64, ApprovalDecision)> {
        let req = self.queue.pop_front()?;
        self.load_current();
        if self.queue.is_empty() {
            self.deferred = false;
        }
        Some((req.id, decision))
    }

    /// "yes" with the hunks as toggled: all accepted is a plain yes.
    pub fn yes(&mut self) -> Option<(u64, ApprovalDecision)> {
        let decision = if self.accepted.iter().all(|a| *a) {
            ApprovalDecision::Yes
        } else {
            ApprovalDecision::Hunks {
                accepted: self
                    .accepted
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| **a)
                    .map(|(i, _)| i)
                    .collect(),
            }
        };
        self.answer(decision)
    }

    /// Accepts or rejects the selected hunk; says what it did. An edit of
    /// one hunk has nothing to pick: y or n answers it whole.
    pub fn toggle_hunk(&mut self) -> String {
        let n = self.accepted.len();
        if n <= 1 {
            return match n {
                0 => "nothing to pick here: y allows, n refuses".into(),
                _ => "one hunk: y applies it, n refuses it".into(),
            };
        }
        let Some(a) = self.accepted.get_mut(self.cursor) else {
            return String::new();
        };
        *a = !*a;
        let now = if *a { "accepted" } else { "rejected" };
        let kept = self.accepted.iter().filter(|a| **a).count();
        // Short: the bar shares its room with "1 approval waiting".
        format!("hunk {}/{n} {now} · y applies {kept}/{n}", self.cursor + 1)
    }

    pub fn move_cursor(&mut self, delta: isize) {
        if self.hunks.is_empty() {
            self.scroll = (self.scroll as isize + delta).max(0) as usize;
            return;
        }
        let last = self.hunks.len() as isize - 1;
        self.cursor = (self.cursor as isize + delta).clamp(0, last) as usize;
    }

    /// What is asked: the command with why it needs a yes and what
    /// "always" covers, or the edit's file, figures and hunks.
    fn body(&self, req: &ApprovalRequest, th: &Theme) -> Vec<Logical> {
        let mut logical: Vec<Logical> = Vec::new();
        match &req.kind {
            ApprovalKind::Exec {
                command,
                reason,
                scope,
                ..
            } => {
                for (i, l) in command.lines().enumerate() {
                    let p = if i == 0 { "$ " } else { "  " };
                    logical.push(Logical::chars(Line::from(vec![
                        Span::styled(p, Style::new().fg(th.accent)),
                        Span::styled(
                            l.to_string(),
                            Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                        ),
                    ])));
                }
                logical.push(Logical::word(Line::default()));
                logical.push(Logical::word(Line::styled(
                    format!("needs approval: {reason}"),
                    Style::new().fg(th.dim),
                )));
                logical.push(Logical::word(Line::styled(
                    format!("always = allow {scope} for this session"),
                    Style::new().fg(th.dim),
                )));
            }
            ApprovalKind::Edit { change } => {
                logical.push(Logical::word(Line::from(vec![
                    Span::styled(
                        change.path.clone(),
                        Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(format!(" +{}", change.added), Style::new().fg(th.added)),
                    Span::styled(format!(" -{}", change.removed), Style::new().fg(th.removed)),
                    Span::styled(
                        if self.hunks.len() > 1 {
                            format!(
                                "  {} hunks: space toggles the selected one",
                                self.hunks.len()
                            )
                        } else {
                            String::new()
                        },
                        Style::new().fg(th.dim),
                    ),
                ])));
                if let Some((text, bad)) = self.checks.get(&req.call_id) {
                    logical.push(Logical::word(super::verdict_line(text, *bad, th)));
                }
                logical.extend(render_hunks(
                    &self.hunks,
                    None,
                    th,
                    HunkMarks {
                        selected: Some(self.cursor),
                        accepted: (self.hunks.len() > 1).then_some(self.accepted.as_slice()),
                    },
                ));
            }
        }
        logical
    }

    /// The keys that answer, or the reason being typed for a no.
    fn footer(&self, th: &Theme, keys: &Keymap) -> Line<'static> {
        match &self.reason {
            Some(text) => Line::from(vec![
                Span::styled("reason for the model: ", Style::new().fg(th.warning)),
                Span::styled(format!("{text}▏"), Style::new().fg(th.text)),
                Span::styled("  (Enter sends, Esc goes back)", Style::new().fg(th.dim)),
            ]),
            None => Line::from(vec![Span::styled(
                format!(
                    "{} yes   {} no (+ reason)   {} always   {} look around",
                    keys.describe(Scope::Approval, "yes"),
                    keys.describe(Scope::Approval, "no"),
                    keys.describe(Scope::Approval, "always"),
                    keys.describe(Scope::Approval, "defer"),
                ),
                Style::new().fg(th.accent),
            )]),
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme, keys: &Keymap) {
        let Some(req) = self.queue.front() else {
            return;
        };
        let logical = self.body(req, th);
        let w = area.width.saturating_sub(4).clamp(20, 120).min(area.width);
        let content = wrap_all(&logical, w.saturating_sub(2) as usize).len() as u16;
        let h = (content + 3)
            .clamp(6, area.height.saturating_sub(2).max(6))
            .min(area.height);
        let rect = Rect {
            x: area.x + (area.width.saturating_sub(w)) / 2,
            y: area.y + (area.height.saturating_sub(h)) / 2,
            width: w,
            height: h,
        };
        Clear.render(rect, buf);
        let waiting = if self.queue.len() > 1 {
            format!(" ({} more waiting)", self.queue.len() - 1)
        } else {
            String::new()
        };
        let title = match &req.kind {
            ApprovalKind::Exec { .. } => format!(" run this command?{waiting} "),
            ApprovalKind::Edit { change } => format!(
                " {} {}?{waiting} ",
                match change.kind {
                    crate::protocol::ChangeKind::Created => "create",
                    crate::protocol::ChangeKind::Deleted => "delete",
                    crate::protocol::ChangeKind::Modified => "change",
                },
                change.path
            ),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(th.warning))
            .title(Span::styled(
                title,
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            ));
        let inner = block.inner(rect);
        block.render(rect, buf);
        let footer = self.footer(th, keys);
        // The footer wraps (a long reason stays readable as it is typed):
        // its last rows, where the cursor is, up to half the box.
        let mut footer_rows = wrap_all(&[Logical::word(footer)], inner.width.max(1) as usize);
        let footer_h = (footer_rows.len() as u16)
            .min((inner.height / 2).max(1))
            .min(inner.height);
        let drop = footer_rows.len().saturating_sub(footer_h as usize);
        footer_rows.drain(..drop);
        let body_h = inner.height.saturating_sub(footer_h);
        let lines = wrap_all(&logical, inner.width as usize);
        // Keep the selected hunk in view.
        let target = if self.hunks.is_empty() {
            self.scroll
        } else {
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.spans.iter().any(|s| s.content.contains("@@ -")))
                .nth(self.cursor)
                .map(|(i, _)| i.saturating_sub(1))
                .unwrap_or(0)
        };
        let from = target.min(lines.len().saturating_sub(body_h as usize));
        let visible: Vec<Line<'static>> =
            lines.into_iter().skip(from).take(body_h as usize).collect();
        Paragraph::new(visible).render(
            Rect {
                height: body_h,
                ..inner
            },
            buf,
        );
        Paragraph::new(footer_rows).render(
            Rect {
                y: inner.y + body_h,
                height: footer_h,
                ..inner
            },
            buf,
        );
    }
}
