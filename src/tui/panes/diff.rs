//! The live diff pane: every file change of the session as hunks, with a
//! file list and +/- counts on top. While the model is still writing a
//! write_file or edit_file call, the entry is rebuilt from the partial
//! arguments as they stream; when the change lands it shows the result.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::diff::{self, Hunk};
use crate::protocol::{
    AgentEvent, ApprovalDecision, ApprovalKind, ChangeKind, FileChange, ToolStatus,
};
use crate::toolname::ToolName;
use crate::tui::component::Handled;
use crate::tui::keymap::DiffAction;
use crate::tui::partial_json;
use crate::tui::render::diff::{HunkMarks, render as render_hunks};
use crate::tui::render::highlight;
use crate::tui::render::wrap::{Logical, wrap_all};
use crate::tui::theme::Theme;

/// Files bigger than this are not read for a live preview.
const MAX_PREVIEW_BYTES: u64 = 2 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// Being written by the model (call id).
    Live(String),
    /// Waiting for the user's approval.
    Pending,
    Applied,
}

pub struct Entry {
    pub path: String,
    pub kind: ChangeKind,
    pub before: Arc<str>,
    pub after: Arc<str>,
    pub hunks: Vec<Hunk>,
    pub added: usize,
    pub removed: usize,
    pub state: EntryState,
    /// The tool call that made the change.
    pub call_id: String,
    /// What the language server said of it ("adds 2 errors").
    pub check: Option<(String, bool)>,
    /// Whether the file was there before the session's first change to
    /// it (an applied entry is the session's net change to its file).
    existed: bool,
    /// Raw streamed arguments while live.
    args: String,
    tool: String,
    /// The new text highlighted, for context lines.
    colours: RefCell<Option<Vec<Line<'static>>>>,
}

impl Entry {
    /// A change that has landed, as a review or the net change shows it.
    fn applied(c: &FileChange) -> Entry {
        let mut e = Entry {
            path: c.path.clone(),
            kind: c.kind,
            before: c.before.clone(),
            after: c.after.clone(),
            hunks: Vec::new(),
            added: 0,
            removed: 0,
            state: EntryState::Applied,
            call_id: String::new(),
            check: None,
            existed: c.kind != ChangeKind::Created,
            args: String::new(),
            tool: String::new(),
            colours: RefCell::new(None),
        };
        e.recompute();
        e
    }

    fn recompute(&mut self) {
        self.hunks = diff::hunks(&self.before, &self.after, diff::CONTEXT);
        let (a, r) = diff::line_counts(&self.before, &self.after);
        self.added = a;
        self.removed = r;
        *self.colours.borrow_mut() = None;
    }
}

#[derive(Default)]
pub struct DiffPane {
    pub entries: Vec<Entry>,
    pub selected: usize,
    pub hunk: usize,
    pub scroll: usize,
    root: PathBuf,
    /// A review (`/diff`, a rewind preview) shown in place of the live
    /// changes, which wait here.
    pub review: Option<String>,
    saved: Vec<Entry>,
    /// Files a live preview needs as they are now (call id, path): the
    /// app has a job read them, and `current_text` brings them in.
    wants: Vec<(String, String)>,
    /// The edits asked about, by approval id: the call, the change, and
    /// whether it is a helper's (no edit call of the session's streams it).
    asked: std::collections::HashMap<u64, (String, FileChange, bool)>,
    view_height: std::cell::Cell<u16>,
    /// Line of each hunk header in the last render, for jumping.
    hunk_lines: RefCell<Vec<usize>>,
}

/// A file as a live preview starts from: its text (empty when it is too
/// big to preview or not text), or None when there is no such file.
pub fn read_current(root: &Path, rel: &str) -> Option<String> {
    let path = root.join(rel);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= MAX_PREVIEW_BYTES => {
            Some(std::fs::read_to_string(&path).unwrap_or_default())
        }
        Ok(_) => Some(String::new()),
        Err(_) => None,
    }
}

impl DiffPane {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            ..Default::default()
        }
    }

    /// Takes its part of an agent event: edits as they stream, wait for
    /// approval, land, or come to nothing.
    pub fn on_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::ToolCallStarted { call_id, name, .. } => self.begin_live(call_id, name),
            AgentEvent::ToolCallDelta { call_id, delta, .. } => {
                self.live_delta(call_id, delta);
            }
            AgentEvent::ToolCallFinished {
                call_id, status, ..
            } if *status != ToolStatus::Ok => self.finished_without_change(call_id),
            // Done without a change of its own (the content was there
            // already; mm wrote it under another call): its preview goes.
            AgentEvent::ToolCallFinished { call_id, .. } => self.drop_live(call_id),
            // Nothing streams or waits once the turn is over (a re-trial
            // kept `streaming…` for a file a rewind had deleted).
            AgentEvent::TurnFinished { .. } => {
                self.entries
                    .retain(|e| matches!(e.state, EntryState::Applied));
                if self.selected >= self.entries.len() {
                    self.select_last();
                }
            }
            AgentEvent::FileChanged {
                call_id, change, ..
            } => self.applied(call_id, change),
            AgentEvent::ApprovalRequested { request } => {
                if let ApprovalKind::Edit { change } = &request.kind {
                    let helpers = self.live_index(&request.call_id).is_none();
                    self.asked.insert(
                        request.id,
                        (request.call_id.clone(), change.clone(), helpers),
                    );
                    self.pending(&request.call_id, change);
                }
            }
            AgentEvent::ApprovalResolved { id, decision } => {
                if let Some((call_id, change, helpers)) = self.asked.remove(id) {
                    self.resolved(&call_id, &change, helpers, decision);
                }
            }
            AgentEvent::EditChecked {
                call_id,
                errors,
                new_errors,
                preview: false,
                ..
            } => {
                let (text, bad) = super::verdict(*errors, *new_errors, false);
                self.checked(call_id, text, bad);
            }
            _ => {}
        }
    }

    /// A key's action when the diff pane has the focus.
    pub fn handle_key(&mut self, action: DiffAction) -> Handled {
        match action {
            DiffAction::ScrollUp => self.scroll_by(-1),
            DiffAction::ScrollDown => self.scroll_by(1),
            DiffAction::PageUp => self.page(-1),
            DiffAction::PageDown => self.page(1),
            DiffAction::NextFile => self.next_file(1),
            DiffAction::PrevFile => self.next_file(-1),
            DiffAction::NextHunk => self.next_hunk(1),
            DiffAction::PrevHunk => self.next_hunk(-1),
            DiffAction::CloseReview if self.review.is_some() => self.clear_review(),
            DiffAction::CloseReview => return Handled::Ignored,
            DiffAction::Help => return Handled::Help,
        }
        Handled::Consumed
    }

    /// Shows these changes instead of the live ones until `clear_review`.
    pub fn set_review(&mut self, title: &str, changes: &[FileChange]) {
        if self.review.is_none() {
            self.saved = std::mem::take(&mut self.entries);
        }
        self.entries.clear();
        self.entries.extend(changes.iter().map(Entry::applied));
        self.review = Some(title.to_string());
        self.selected = 0;
        self.hunk = 0;
        self.scroll = 0;
    }

    /// The session's net change per file, as the checkpoints see it (the
    /// tree's marks come from the same list): it takes the place of the
    /// changes applied so far, so a rewind, an undo, a resume or a commit
    /// leaves the pane saying what the tree says. Edits still streaming or
    /// waiting for an answer stay.
    pub fn set_net(&mut self, changes: &[FileChange]) {
        let net: Vec<Entry> = changes.iter().map(Entry::applied).collect();
        let list = if self.review.is_some() {
            &mut self.saved
        } else {
            &mut self.entries
        };
        // What the language server said of an applied edit stays with it.
        let checks: Vec<(String, Option<(String, bool)>)> = list
            .iter()
            .filter(|e| e.state == EntryState::Applied)
            .map(|e| (e.path.clone(), e.check.clone()))
            .collect();
        let open: Vec<Entry> = list
            .drain(..)
            .filter(|e| e.state != EntryState::Applied)
            .collect();
        list.extend(net.into_iter().map(|mut e| {
            e.check = checks
                .iter()
                .find(|(p, _)| *p == e.path)
                .and_then(|(_, c)| c.clone());
            e
        }));
        list.extend(open);
        if self.review.is_none() {
            self.selected = self.selected.min(self.entries.len().saturating_sub(1));
            self.hunk = 0;
        }
    }

    pub fn clear_review(&mut self) {
        if self.review.take().is_some() {
            self.entries = std::mem::take(&mut self.saved);
            self.select_last();
        }
    }

    fn select_last(&mut self) {
        self.selected = self.entries.len().saturating_sub(1);
        self.hunk = 0;
        self.scroll = 0;
    }

    /// A write_file or edit_file call started streaming.
    pub fn begin_live(&mut self, call_id: &str, tool: &str) {
        if !crate::toolname::edits(tool) {
            return;
        }
        self.clear_review();
        self.entries.push(Entry {
            path: String::new(),
            kind: ChangeKind::Modified,
            before: Arc::from(""),
            after: Arc::from(""),
            hunks: Vec::new(),
            added: 0,
            removed: 0,
            state: EntryState::Live(call_id.to_string()),
            call_id: call_id.to_string(),
            check: None,
            existed: true,
            args: String::new(),
            tool: tool.to_string(),
            colours: RefCell::new(None),
        });
        self.select_last();
    }

    fn live_index(&self, call_id: &str) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(&e.state, EntryState::Live(id) if id == call_id))
    }

    /// More arguments of a live call arrived.
    pub fn live_delta(&mut self, call_id: &str, delta: &str) -> bool {
        let Some(i) = self.live_index(call_id) else {
            return false;
        };
        let root = self.root.clone();
        let e = &mut self.entries[i];
        e.args.push_str(delta);
        let fields = partial_json::strings(&e.args);
        // llama.cpp's grammar sends keys in alphabetical order, so a
        // write_file's content streams before its path: show it as new text
        // until the path says what it replaces.
        if let Some(path) = fields
            .get(crate::toolname::arg::PATH)
            .filter(|p| p.complete)
            && e.path != path.value
        {
            e.path = path
                .value
                .strip_prefix(&format!("{}/", root.display()))
                .unwrap_or(&path.value)
                .to_string();
            // Shown as new text until a job says what the file holds now.
            e.kind = ChangeKind::Created;
            e.before = Arc::from("");
            self.wants.push((call_id.to_string(), e.path.clone()));
        }
        let after = if e.tool == ToolName::WriteFile {
            fields
                .get(crate::toolname::arg::CONTENT)
                .map(|c| c.value.clone())
        } else {
            match (
                fields.get(crate::toolname::arg::OLD_STRING),
                fields.get(crate::toolname::arg::REPLACEMENT),
            ) {
                (Some(old), Some(new)) if old.complete && !old.value.is_empty() => {
                    // Shown only where the old text is found as is.
                    e.before.find(&old.value).map(|at| {
                        let mut s = String::with_capacity(e.before.len());
                        s.push_str(&e.before[..at]);
                        s.push_str(&new.value);
                        s.push_str(&e.before[at + old.value.len()..]);
                        s
                    })
                }
                _ => None,
            }
        };
        if let Some(after) = after {
            e.after = Arc::from(after.as_str());
            e.recompute();
        }
        true
    }

    /// The reads the live previews wait for (call id, path).
    pub fn take_wants(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.wants)
    }

    /// A file a live preview waited for, as it is now (None: no file).
    pub fn current_text(&mut self, call_id: &str, path: &str, text: Option<String>) {
        let Some(i) = self.live_index(call_id) else {
            return;
        };
        let e = &mut self.entries[i];
        if e.path != path {
            return;
        }
        e.kind = if text.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Created
        };
        e.before = Arc::from(text.unwrap_or_default().as_str());
        // The arguments so far, again, now that the old text is known.
        let args = std::mem::take(&mut e.args);
        self.live_delta(call_id, &args);
    }

    /// An edit asked about was answered. A no: the change will not come
    /// (a helper's call goes on and may ask again; its refused edit would
    /// wait here till the turn's end). A whole yes to a helper's edit:
    /// the helper makes it, and no change event of the session's says
    /// so, so it counts as landed now. (The session's own edits land
    /// with their change event; a partial yes shows when it lands.)
    fn resolved(
        &mut self,
        call_id: &str,
        change: &FileChange,
        helpers: bool,
        decision: &ApprovalDecision,
    ) {
        match decision {
            ApprovalDecision::No { .. } => {
                if let Some(i) = self.entries.iter().rposition(|e| {
                    e.state == EntryState::Pending && e.call_id == call_id && e.path == change.path
                }) {
                    self.entries.remove(i);
                    if self.selected >= self.entries.len() {
                        self.select_last();
                    }
                }
            }
            ApprovalDecision::Yes | ApprovalDecision::Always if helpers => {
                self.applied(call_id, change);
            }
            _ => {}
        }
    }

    /// An approval is asked for this change: show exactly it.
    pub fn pending(&mut self, call_id: &str, change: &FileChange) {
        self.clear_review();
        let i = self.live_index(call_id);
        self.show_change(i, call_id, change, EntryState::Pending);
    }

    /// A change landed.
    /// The language server's verdict on a call's change: `bad` when it
    /// brought errors.
    pub fn checked(&mut self, call_id: &str, text: String, bad: bool) {
        if let Some(e) = self.entries.iter_mut().rev().find(|e| e.call_id == call_id) {
            e.check = Some((text, bad));
        }
    }

    /// The applied changes are committed: the pane starts over from here.
    pub fn forget_applied(&mut self) {
        self.clear_review();
        self.entries.retain(|e| e.state != EntryState::Applied);
        self.select_last();
    }

    /// How many different files the entries show.
    pub fn file_count(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.path.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// A change landed: it joins its file's net change for the session
    /// (the live or pending entry it came from gives way). A file back
    /// as it was leaves the list.
    pub fn applied(&mut self, call_id: &str, change: &FileChange) {
        self.clear_review();
        let check = match self.entries.iter().rposition(|e| {
            matches!(&e.state, EntryState::Live(id) if id == call_id)
                || (e.state == EntryState::Pending && e.path == change.path)
        }) {
            Some(i) => self.entries.remove(i).check,
            None => None,
        };
        let net = self
            .entries
            .iter()
            .position(|e| e.state == EntryState::Applied && e.path == change.path);
        let i = match net {
            Some(i) => {
                let e = &mut self.entries[i];
                e.after = change.after.clone();
                e.kind = match (e.existed, change.kind) {
                    (false, _) => ChangeKind::Created,
                    (true, ChangeKind::Deleted) => ChangeKind::Deleted,
                    (true, _) => ChangeKind::Modified,
                };
                e.call_id = call_id.to_string();
                i
            }
            None => {
                self.show_change(None, call_id, change, EntryState::Applied);
                let i = self.entries.len() - 1;
                self.entries[i].existed = change.kind != ChangeKind::Created;
                i
            }
        };
        let e = &mut self.entries[i];
        if check.is_some() {
            e.check = check;
        }
        let gone = !e.existed && change.kind == ChangeKind::Deleted;
        if gone || (e.existed && change.kind != ChangeKind::Deleted && e.before == e.after) {
            self.entries.remove(i);
            self.select_last();
            return;
        }
        e.recompute();
        self.selected = i;
    }

    /// Puts a known change into entry `i` (a new one when there is none).
    fn show_change(
        &mut self,
        i: Option<usize>,
        call_id: &str,
        change: &FileChange,
        state: EntryState,
    ) {
        let i = match i {
            Some(i) => i,
            None => {
                self.begin_live(call_id, ToolName::WriteFile.as_str());
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.path = change.path.clone();
        e.kind = change.kind;
        e.before = change.before.clone();
        e.after = change.after.clone();
        e.state = state;
        e.call_id = call_id.to_string();
        e.recompute();
        self.selected = i;
    }

    /// A call finished without a change: its live entry goes away.
    /// The live preview of `call_id`, if one is left, goes.
    fn drop_live(&mut self, call_id: &str) {
        if let Some(i) = self.live_index(call_id) {
            self.entries.remove(i);
            if self.selected >= self.entries.len() {
                self.select_last();
            }
        }
    }

    pub fn finished_without_change(&mut self, call_id: &str) {
        if let Some(i) = self.live_index(call_id) {
            self.entries.remove(i);
        }
        // A change the user turned down is not part of the session's.
        if let Some(i) = self
            .entries
            .iter()
            .rposition(|e| e.state == EntryState::Pending)
        {
            self.entries.remove(i);
        }
        if self.selected >= self.entries.len() {
            self.select_last();
        }
    }

    pub fn next_file(&mut self, delta: isize) {
        if self.entries.is_empty() {
            return;
        }
        let n = self.entries.len() as isize;
        self.selected = ((self.selected as isize + delta).rem_euclid(n)) as usize;
        self.hunk = 0;
        self.scroll = 0;
    }

    pub fn next_hunk(&mut self, delta: isize) {
        let Some(e) = self.entries.get(self.selected) else {
            return;
        };
        if e.hunks.is_empty() {
            return;
        }
        let last = e.hunks.len() as isize - 1;
        self.hunk = (self.hunk as isize + delta).clamp(0, last) as usize;
        if let Some(line) = self.hunk_lines.borrow().get(self.hunk) {
            self.scroll = *line;
        }
    }

    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll = (self.scroll as isize + delta).max(0) as usize;
    }

    pub fn page(&mut self, pages: isize) {
        let h = self.view_height.get().max(2) as isize - 1;
        self.scroll_by(pages * h);
    }

    /// The file list and the selected file's hunks.
    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        self.view_height.set(area.height);
        if area.height == 0 {
            return;
        }
        let dim = Style::new().fg(th.dim);
        if self.entries.is_empty() {
            Paragraph::new(Line::styled(
                "no changes yet: edits show here as the model writes them",
                dim,
            ))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(area, buf);
            return;
        }
        let mut header: Vec<Line<'static>> = Vec::new();
        if let Some(title) = &self.review {
            header.push(Line::styled(
                format!("{title} (Esc: back to the live changes)"),
                Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
            ));
        }
        let list_rows = (area.height as usize / 3).clamp(1, 6);
        let start = self.selected.saturating_sub(list_rows - 1);
        for (i, e) in self.entries.iter().enumerate().skip(start).take(list_rows) {
            header.push(entry_line(e, i == self.selected, th));
        }
        if self.entries.len() > list_rows {
            header.push(Line::styled(
                format!("({} changes; ←/→ to move)", self.entries.len()),
                dim,
            ));
        }
        if let Some((text, bad)) = self
            .entries
            .get(self.selected)
            .and_then(|e| e.check.as_ref())
        {
            header.push(super::verdict_line(text, *bad, th));
        }
        header.push(Line::styled(
            "─".repeat(area.width as usize),
            Style::new().fg(th.border),
        ));
        let head_h = (header.len() as u16).min(area.height);
        Paragraph::new(header).render(
            Rect {
                height: head_h,
                ..area
            },
            buf,
        );
        let body = Rect {
            y: area.y + head_h,
            height: area.height - head_h,
            ..area
        };
        let Some(e) = self.entries.get(self.selected) else {
            return;
        };
        if e.colours.borrow().is_none() && !e.after.is_empty() {
            *e.colours.borrow_mut() = Some(highlight::highlight(
                &e.after, &e.path, &th.syntax, th.depth,
            ));
        }
        let colours = e.colours.borrow();
        let logical: Vec<Logical> = render_hunks(
            &e.hunks,
            colours.as_deref(),
            th,
            HunkMarks {
                selected: Some(self.hunk),
                accepted: None,
            },
        );
        // Where each hunk starts, for next/prev hunk.
        let mut starts = Vec::new();
        let mut all = Vec::new();
        for l in &logical {
            if l.line.spans.iter().any(|s| s.content.starts_with("@@")) {
                starts.push(all.len());
            }
            all.extend(wrap_all(std::slice::from_ref(l), body.width as usize));
        }
        *self.hunk_lines.borrow_mut() = starts;
        let from = self.scroll.min(all.len().saturating_sub(1));
        let visible: Vec<Line<'static>> = all
            .into_iter()
            .skip(from)
            .take(body.height as usize)
            .collect();
        Paragraph::new(visible).render(body, buf);
    }
}

/// One change in the pane's list: its kind, its path, its counts, and
/// whether it is still streaming or waiting for approval.
fn entry_line(e: &Entry, sel: bool, th: &Theme) -> Line<'static> {
    let dim = Style::new().fg(th.dim);
    let tag = match (&e.state, e.kind) {
        (EntryState::Live(_), _) => "~",
        (EntryState::Pending, _) => "?",
        (_, ChangeKind::Created) => "A",
        (_, ChangeKind::Deleted) => "D",
        (_, ChangeKind::Modified) => "M",
    };
    let name = if e.path.is_empty() {
        "(path not written yet)"
    } else {
        &e.path
    };
    let st = if sel {
        Style::new()
            .fg(th.text)
            .bg(th.selection)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(th.text)
    };
    Line::from(vec![
        Span::styled(format!("{tag} "), Style::new().fg(th.accent)),
        Span::styled(name.to_string(), st),
        Span::styled(format!(" +{}", e.added), Style::new().fg(th.added)),
        Span::styled(format!(" -{}", e.removed), Style::new().fg(th.removed)),
        Span::styled(
            match &e.state {
                EntryState::Live(_) => "  streaming…",
                EntryState::Pending => "  waiting for approval",
                EntryState::Applied => "",
            },
            dim,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the app does with the pane's wants: a job reads each file.
    fn serve(p: &mut DiffPane, root: &Path) {
        for (call, path) in p.take_wants() {
            let text = read_current(root, &path);
            p.current_text(&call, &path, text);
        }
    }

    fn change(path: &str, kind: ChangeKind, before: &str, after: &str) -> FileChange {
        FileChange {
            path: path.into(),
            kind,
            before: Arc::from(before),
            after: Arc::from(after),
            added: 0,
            removed: 0,
        }
    }

    #[test]
    fn the_net_change_replaces_what_was_applied_and_keeps_open_edits() {
        let mut p = DiffPane::new(PathBuf::from("/nonexistent"));
        // A rewind's changes as they came: a file the model made, deleted
        // again, and one created outside mm that the rewind removed.
        p.applied("c1", &change("a.py", ChangeKind::Modified, "x\n", "y\n"));
        p.applied("", &change("data.txt", ChangeKind::Deleted, "1\n2\n", ""));
        p.begin_live("c2", "write_file");
        // The checkpoints say: only a.py differs from where the session began.
        p.set_net(&[change("a.py", ChangeKind::Modified, "x\n", "z\n")]);
        let rows: Vec<(&str, ChangeKind, &EntryState)> = p
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.kind, &e.state))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("a.py", ChangeKind::Modified, &EntryState::Applied),
                ("", ChangeKind::Modified, &EntryState::Live("c2".into())),
            ]
        );
        assert_eq!(&*p.entries[0].after, "z\n");
        assert_eq!((p.entries[0].added, p.entries[0].removed), (1, 1));
        // Nothing left to show after a commit.
        p.set_net(&[]);
        assert_eq!(p.entries.len(), 1);
    }

    #[test]
    fn a_live_write_shows_the_diff_as_it_streams() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let mut p = DiffPane::new(dir.path().to_path_buf());
        p.begin_live("c1", "write_file");
        p.live_delta("c1", r#"{"path": "a.txt", "content": "one\nTW"#);
        assert_eq!(
            p.entries[0].kind,
            ChangeKind::Created,
            "until the read is in"
        );
        serve(&mut p, dir.path());
        let e = &p.entries[0];
        assert_eq!(e.kind, ChangeKind::Modified);
        assert_eq!(e.path, "a.txt");
        assert_eq!(&*e.before, "one\ntwo\n");
        assert_eq!(&*e.after, "one\nTW");
        assert_eq!((e.added, e.removed), (1, 1));
        p.live_delta("c1", r#"O\n"}"#);
        assert_eq!(&*p.entries[0].after, "one\nTWO\n");
        let change = FileChange {
            path: "a.txt".into(),
            kind: ChangeKind::Modified,
            before: Arc::from("one\ntwo\n"),
            after: Arc::from("one\nTWO\n"),
            added: 1,
            removed: 1,
        };
        p.applied("c1", &change);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].state, EntryState::Applied);
    }

    #[test]
    fn content_before_path_is_shown_as_new_text_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let mut p = DiffPane::new(dir.path().to_path_buf());
        p.begin_live("c1", "write_file");
        p.live_delta("c1", r#"{"content": "new\n", "pa"#);
        assert_eq!(p.entries[0].path, "");
        assert_eq!(p.entries[0].added, 1);
        p.live_delta("c1", r#"th": "a.txt"}"#);
        serve(&mut p, dir.path());
        assert_eq!(p.entries[0].path, "a.txt");
        assert_eq!((p.entries[0].added, p.entries[0].removed), (1, 1));
    }

    #[test]
    fn a_live_edit_replaces_the_old_text_once_it_is_complete() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.py"),
            "def add(a, b):\n    return a - b\n",
        )
        .unwrap();
        let mut p = DiffPane::new(dir.path().to_path_buf());
        p.begin_live("c1", "edit_file");
        p.live_delta(
            "c1",
            r#"{"old_string": "return a - b", "path": "c.py", "replacement": "return a +"#,
        );
        serve(&mut p, dir.path());
        assert_eq!(&*p.entries[0].after, "def add(a, b):\n    return a +\n");
        p.finished_without_change("c1");
        assert!(p.entries.is_empty());
    }
}
