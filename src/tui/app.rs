//! The TUI's state: the panes (each owns its state and takes its part of
//! every agent event), a stack of overlays, and what ties them together —
//! the focus, the queue of messages typed while the agent works, and the
//! ops in flight with what their answers are for. Input handlers and
//! agent events change state and return the terminal's side effects as
//! values; `layout.rs` draws; `input.rs` routes keys; `commands.rs` runs
//! slash commands. Tests drive an `App` with scripted events and keys, with
//! no terminal, and read the ops it sends.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ratatui::layout::Rect;

use super::component::{Effect, Handled};
use super::jobs::{JobDone, Jobs};
use super::keymap::Keymap;
use super::panes::approvals::Approvals;
use super::panes::composer::Composer;
use super::panes::diff::DiffPane;
use super::panes::file_tree::FileTree;
use super::panes::overlays::{ListKind, Overlay, Place, PlaceList, Viewer};
use super::panes::plan::PlanOverlay;
use super::panes::rewind::CommitOverlay;
use super::panes::status::Status;
use super::panes::transcript::Transcript;
use super::theme::Theme;
use crate::bus::OpSender;
use crate::protocol::{AgentEvent, DiagItem, Event, NavKind, Op, OpId, OpResult, SessionInfo};

mod places;
use crate::slash::Slash;

/// Typing this recently when an approval opens guards it…
pub(super) const TYPING: Duration = Duration::from_secs(1);
/// …until the keyboard has been quiet this long.
pub(super) const GUARD: Duration = Duration::from_millis(600);
/// How long after a key typed into a message an approval on screen takes
/// no answer (the keys go to the composer).
pub(super) const TYPING_GUARD: Duration = Duration::from_millis(1500);
/// Two Ctrl-C within this time quit.
pub(super) const DOUBLE_PRESS: Duration = Duration::from_millis(1500);
/// How long a message stays in the status bar.
pub const FLASH_FOR: Duration = Duration::from_secs(6);
/// How long the tree waits after a folder changed before reading it.
const TREE_SETTLE: Duration = Duration::from_millis(150);

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

/// What the answer to an op in flight is for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pending {
    /// A rewind or an undo: when it ends, the tree and its marks follow
    /// the work tree back.
    Restore(String),
    /// A session diff asked for only to re-mark the file tree.
    Marks,
    /// The status bar says this until the op ends (then it goes, or
    /// gives way to why the op failed).
    Waiting(String),
}

pub struct App {
    pub theme: Theme,
    pub keymap: Keymap,
    pub(super) ops: OpSender,
    pub root: PathBuf,
    pub transcript: Transcript,
    pub diff: DiffPane,
    pub tree: FileTree,
    pub composer: Composer,
    pub approvals: Approvals,
    pub status: Status,
    /// Open overlays, the top one last: it takes the keys, and closing it
    /// goes back to the one beneath.
    pub overlays: Vec<Overlay>,
    pub focus: Focus,
    /// The main pane shown on a narrow screen.
    pub tab: Focus,
    pub show_tree: bool,
    pub show_diff: bool,
    pub mouse_capture: bool,
    /// What waits for the running turn to end, in order: messages, and
    /// commands the agent runs between turns.
    pub(super) queued: VecDeque<Queued>,
    pub(super) cancel_armed: Option<Instant>,
    /// When Esc was pressed in a composer with text (a second press clears).
    pub(super) esc_armed: Option<Instant>,
    /// Something changed that the next frame must show.
    pub dirty: bool,
    pub working: bool,
    /// A model request asked for between turns (`/compact`, `/commit`'s
    /// message): it shows and is cancelled like a turn.
    pub(super) side_request: Option<OpId>,
    /// The `/plan` op whose turn is running or ending (see `start_turn`).
    pub(super) plan_op: Option<OpId>,
    /// Watched folders that changed, read again once they settle.
    tree_stale: std::collections::BTreeSet<String>,
    tree_stale_at: Option<Instant>,
    pub layout: Layout,
    /// Language-server diagnostics per file (the list and the viewer).
    pub diags: BTreeMap<String, Vec<DiagItem>>,
    /// When a character was last typed into the composer.
    pub(super) last_typed: Option<Instant>,
    /// An approval opened while the user was typing: its keys wait until
    /// the typing stops, so a `y` meant for a message answers nothing.
    pub(super) approval_guard: Option<Instant>,
    pending: HashMap<OpId, Pending>,
    /// Side effects gathered while handling one input or event.
    pub(super) effects: Vec<Effect>,
    /// When the status bar's message was set: it goes after `FLASH_FOR`
    /// unless an op in flight still owns it.
    pub flash_at: Option<Instant>,
    /// File reads and workspace walks, off the UI task.
    pub jobs: Jobs,
}

impl App {
    pub fn new(
        theme: Theme,
        keymap: Keymap,
        ops: OpSender,
        root: PathBuf,
        info: SessionInfo,
    ) -> App {
        let jobs = Jobs::new(root.clone());
        App {
            theme,
            keymap,
            ops,
            transcript: Transcript::default(),
            diff: DiffPane::new(root.clone()),
            tree: FileTree::new(root.clone()),
            composer: Composer::new(),
            approvals: Approvals::default(),
            overlays: Vec::new(),
            status: Status::new(info),
            focus: Focus::Composer,
            tab: Focus::Transcript,
            show_tree: true,
            show_diff: true,
            mouse_capture: true,
            queued: VecDeque::new(),
            cancel_armed: None,
            esc_armed: None,
            dirty: true,
            working: false,
            side_request: None,
            plan_op: None,
            tree_stale: Default::default(),
            tree_stale_at: None,
            layout: Layout::default(),
            diags: BTreeMap::new(),
            last_typed: None,
            approval_guard: None,
            pending: HashMap::new(),
            effects: Vec::new(),
            flash_at: None,
            jobs,
            root,
        }
    }

    /// Redraws are needed on a timer only while something moves (or a
    /// message in the status bar is to go).
    pub fn animating(&self) -> bool {
        self.working
            || self.transcript.has_running()
            || self.status.flash.is_some()
            || self.tree_stale_at.is_some()
    }

    /// Asks for the session's changes (since the last commit) for the
    /// tree's marks.
    pub fn refresh_marks(&mut self) {
        if let Some(id) = self.ops.submit(Op::UncommittedDiff) {
            self.pending.insert(id, Pending::Marks);
        }
    }

    /// Watches the folders the tree shows.
    pub fn sync_watch(&mut self) {
        let mut dirs = self.tree.expanded.clone();
        dirs.insert(String::new());
        self.jobs.watch(&dirs);
    }

    /// The overlay on top, if any.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlays.last()
    }

    pub(super) fn flash(&mut self, text: impl Into<String>) {
        self.status.flash = Some(text.into());
        self.flash_at = Some(Instant::now());
    }

    pub(super) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Sends a message as a turn.
    pub(super) fn send(&mut self, text: String) {
        // A picture named by its absolute path (dropped into the
        // terminal) goes with what the user typed.
        let images = crate::llm::images::typed(&text, 4)
            .into_iter()
            .map(|(_, img)| img)
            .collect();
        self.start_turn(Op::UserMessage { text, images });
    }

    /// Sends an op that runs as a turn (a message, `/plan`, a plan to
    /// carry out).
    pub(super) fn start_turn(&mut self, op: Op) {
        // On a narrow screen the answer's tab comes to the front.
        if self.focus == Focus::Composer {
            self.tab = Focus::Transcript;
        }
        // A plan turn's op goes on after the turn (the plan is asked for
        // when the answer held none): the work is over when the op is.
        let plan = matches!(op, Op::Plan { .. });
        if let Some(id) = self.ops.submit(op) {
            self.working = true;
            self.status.working_since = Some(Instant::now());
            if plan {
                self.plan_op = Some(id);
            }
        } else {
            self.flash("the agent has stopped");
        }
    }

    /// Sends an op; says in the status bar what it is waiting for.
    pub(super) fn submit(&mut self, op: Op) -> Option<OpId> {
        let waiting = match &op {
            Op::Rewind { .. } => Some("rewinding…".to_string()),
            Op::Commit { .. } => Some("committing…".to_string()),
            Op::ProposeCommit => Some("asking the model for a commit message…".to_string()),
            Op::Compact { .. } => Some("compacting the conversation…".to_string()),
            Op::SessionDiff { .. } => Some("reading the session's changes…".to_string()),
            Op::Export { .. } => Some("exporting the session…".to_string()),
            Op::SwitchSession { .. } => Some("taking up the session…".to_string()),
            Op::Navigate { kind, .. } => Some(format!(
                "asking the language server for the {}…",
                match kind {
                    NavKind::Definition => "definition",
                    NavKind::References => "references",
                }
            )),
            _ => None,
        };
        // What the agent runs after the running turn waits here, where
        // it shows in the queue and ↑ can take it out.
        if self.working
            && let Some(name) = queued_name(&op)
        {
            self.flash(format!(
                "queued until the turn ends: {name} (↑ takes it out)"
            ));
            self.queued.push_back(Queued::Command(op, name));
            self.status.queued = self.queued.len();
            return None;
        }
        let restore = matches!(op, Op::Rewind { .. } | Op::Undo | Op::SwitchSession { .. });
        let model_request = matches!(op, Op::Compact { .. } | Op::ProposeCommit);
        // A language server's answer says itself how it went.
        let answered_by_event = matches!(op, Op::Navigate { .. });
        let Some(id) = self.ops.submit(op) else {
            self.flash("the agent has stopped");
            return None;
        };
        if let Some(w) = &waiting {
            self.flash(w.clone());
        }
        // A model request between turns shows its time and is cancelled
        // with Ctrl-C, as a turn is.
        if model_request && !self.working {
            self.working = true;
            self.status.working_since = Some(Instant::now());
            self.side_request = Some(id);
        }
        if restore {
            self.pending
                .insert(id, Pending::Restore(waiting.unwrap_or_default()));
        } else if let Some(w) = waiting.filter(|_| !answered_by_event) {
            self.pending.insert(id, Pending::Waiting(w));
        }
        Some(id)
    }

    /// Acts on what a pane or an overlay answered.
    pub(super) fn handled(&mut self, h: Handled) {
        match h {
            Handled::Ignored | Handled::Consumed => {}
            Handled::Close => self.close_top(false),
            Handled::CloseAll => {
                while !self.overlays.is_empty() {
                    self.close_top(false);
                }
            }
            Handled::Send(op) => {
                self.submit(op);
            }
            Handled::SendClose(op @ Op::RunPlan { .. }) => {
                self.close_top(true);
                self.start_turn(op);
            }
            Handled::SendClose(op) => {
                self.close_top(true);
                self.submit(op);
            }
            Handled::Open { path, line, col } => self.open_place(&path, line, col),
            Handled::OpenSession(id) => {
                // Read off the UI task, as Markdown: the helper may still
                // be writing it (open it again for more).
                let title = format!("session {id}.md");
                self.jobs.read_session(&id, &title);
                self.overlays
                    .push(Overlay::Viewer(Viewer::loading(&title, 1, 1)));
            }
            Handled::Copy { what, text } => self.effects.push(Effect::Copy { what, text }),
            Handled::Flash(text) => self.flash(text),
            Handled::Help => self.overlays.push(Overlay::help()),
            Handled::Command(line) => self.command(&line),
        }
    }

    /// Pops the top overlay; `sent` when it closed by sending its op.
    fn close_top(&mut self, sent: bool) {
        match self.overlays.pop() {
            Some(Overlay::Rewind(_)) => self.diff.clear_review(),
            Some(Overlay::Commit(_)) if !sent => self.flash("not committed"),
            Some(Overlay::Plan(_)) if !sent => {
                self.flash("the plan is set aside; it was not carried out");
            }
            _ => {}
        }
        if let Some(Overlay::Viewer(v)) = self.overlays.last_mut() {
            v.diags = self.diags.get(&v.path).cloned().unwrap_or_default();
        }
    }

    // ---------------------------------------------------------------- events

    /// Takes one event from the bus: its op's answer, then every pane's part.
    pub fn on_event(&mut self, ev: Event) -> Vec<Effect> {
        let Event { id, msg } = ev;
        match (&msg, self.pending.get(&id).cloned()) {
            (AgentEvent::Finished { result }, pending) => {
                self.pending.remove(&id);
                let waited = match &pending {
                    Some(Pending::Waiting(w)) => Some(w.as_str()),
                    Some(Pending::Restore(w)) => Some(w.as_str()),
                    _ => None,
                };
                if let Some(w) = waited
                    && self.status.flash.as_deref() == Some(w)
                {
                    // The op's "…ing" gives way to why it failed (the
                    // notice is in the transcript too), or goes.
                    self.status.flash = match result {
                        OpResult::Failed { error } => Some(format!("failed: {error}")),
                        _ => None,
                    };
                }
                if self.side_request == Some(id) || self.plan_op == Some(id) {
                    self.side_request = None;
                    self.plan_op = None;
                    self.work_over();
                }
                if matches!(pending, Some(Pending::Restore(_))) {
                    // The tree, its marks and the file list follow the
                    // work tree back.
                    self.tree.refresh();
                    self.composer.forget_files();
                    self.jobs.forget_index();
                    if self.tree.needs_index() || self.composer.needs_files() {
                        self.jobs.index();
                    }
                    self.refresh_marks();
                }
                self.dirty = true;
                self.take_effects()
            }
            (AgentEvent::SessionDiff { changes, .. }, Some(Pending::Marks)) => {
                self.tree.marks = changes.iter().map(|c| (c.path.clone(), c.kind)).collect();
                self.diff.set_net(changes);
                self.dirty = true;
                self.take_effects()
            }
            // The marks are refreshed quietly (checkpoints may be off).
            (AgentEvent::Notice { .. }, Some(Pending::Marks)) => Vec::new(),
            (AgentEvent::TurnFinished { .. }, _) => {
                // The marks follow what the session changed, commands'
                // changes too, as the checkpoints see it.
                self.refresh_marks();
                self.on_agent(msg)
            }
            _ => self.on_agent(msg),
        }
    }

    /// The turn (or the model request between turns) has ended: the
    /// status bar says so, and the next queued message goes.
    fn work_over(&mut self) {
        self.working = false;
        self.status.working_since = None;
        self.status.generating = None;
        self.cancel_armed = None;
        // The cancel is done: its word goes before the next turn.
        if self
            .status
            .flash
            .as_deref()
            .is_some_and(|f| f.starts_with("cancelling…") || f.starts_with("queued:"))
        {
            self.status.flash = None;
        }
        // Commands run in order; the first message starts the next turn,
        // and what is queued after it waits for that turn.
        while let Some(next) = self.queued.pop_front() {
            self.status.queued = self.queued.len();
            match next {
                Queued::Message(text) => {
                    self.send(text);
                    break;
                }
                Queued::Command(op, _) => {
                    self.submit(op);
                    if self.working {
                        break;
                    }
                }
            }
        }
    }

    /// The running turn has gone on longer than `notifyAfter`.
    fn long_turn(&self) -> bool {
        match (self.status.working_since, self.status.info.notify_after_ms) {
            (Some(since), Some(limit)) => since.elapsed().as_millis() as u64 >= limit,
            _ => false,
        }
    }

    /// Fans one agent event out to the panes (also what a resumed
    /// session's replay goes through).
    pub fn on_agent(&mut self, ev: AgentEvent) -> Vec<Effect> {
        self.dirty = true;
        self.transcript.on_event(&ev);
        self.diff.on_event(&ev);
        for (call_id, path) in self.diff.take_wants() {
            self.jobs.read_current(&call_id, &path);
        }
        self.tree.on_event(&ev);
        self.status.on_event(&ev);
        if let AgentEvent::FileChanged { change, .. } = &ev {
            self.composer.file_added(&change.path);
        }
        if let AgentEvent::SessionStarted { info } = &ev {
            self.composer.agents = crate::protocol::extra_commands(info);
        }
        if let AgentEvent::ApprovalRequested { .. } = &ev {
            self.approval_asked();
        }
        self.approvals.on_event(&ev);
        self.status.approvals_waiting = self.approvals.queue.len();
        match ev {
            AgentEvent::TurnStarted { .. } => {
                self.working = true;
                self.status.working_since.get_or_insert_with(Instant::now);
            }
            AgentEvent::Committed { .. } => {
                // Committed work is no longer the session's change.
                self.tree.marks.clear();
                self.diff.forget_applied();
            }
            AgentEvent::TurnFinished { outcome, .. } => {
                if self.long_turn() && self.queued.is_empty() {
                    let secs = self
                        .status
                        .working_since
                        .map_or(0, |s| s.elapsed().as_secs());
                    self.effects.push(Effect::Notify(format!(
                        "mm: the turn ended ({}) after {secs} s",
                        outcome.as_str()
                    )));
                }
                if self.plan_op.is_none() {
                    self.work_over();
                }
            }
            AgentEvent::Diagnostics { path, items, .. } => self.diagnostics(path, items),
            AgentEvent::Checkpoints { list } => {
                if let Some(Overlay::Rewind(r)) = self.overlays.last_mut() {
                    r.list = list;
                    r.loading = false;
                    r.selected = 0;
                    if let Some((id, turn)) = r.selected() {
                        self.submit(Op::PreviewRewind {
                            id,
                            turn: Some(turn),
                        });
                    }
                }
            }
            AgentEvent::RewindPreview {
                id,
                changes,
                foreign,
                left,
            } => {
                if let Some(Overlay::Rewind(r)) = self.overlays.last_mut()
                    && r.selected_id().as_deref() == Some(id.as_str())
                {
                    r.foreign = foreign;
                    let title = if left.is_empty() {
                        "going back does this".to_string()
                    } else {
                        format!("going back does this · not mm's, left: {}", left.join(", "))
                    };
                    self.diff.set_review(&title, &changes);
                }
            }
            AgentEvent::SessionDiff { changes, .. } => {
                self.diff.set_review("session changes", &changes);
                self.show_diff = true;
                self.focus = Focus::Diff;
                self.tab = Focus::Diff;
                self.flash(format!("{} file(s) changed in this session", changes.len()));
            }
            AgentEvent::Plan {
                steps,
                approved: false,
                ..
            } => self.plan_proposed(&steps),
            AgentEvent::CommitProposed { message, files } => {
                self.status.flash = None;
                self.overlays
                    .push(Overlay::Commit(Box::new(CommitOverlay::new(
                        &message, files,
                    ))));
            }
            AgentEvent::Locations {
                kind,
                query,
                items,
                error,
            } => self.locations(kind, &query, items, error),
            _ => {}
        }
        self.take_effects()
    }

    /// A question came: a guard against keys typed for the message, and
    /// a bell (a notification after a long turn: the user may have
    /// looked away).
    fn approval_asked(&mut self) {
        // Only mid-message: after Enter the composer is empty and the
        // next keys are meant for what comes up.
        if self.approvals.queue.is_empty()
            && !self.composer.is_empty()
            && self.last_typed.is_some_and(|t| t.elapsed() < TYPING)
        {
            self.approval_guard = Some(Instant::now() + GUARD);
        }
        if self.long_turn() {
            self.effects
                .push(Effect::Notify("mm is waiting for your answer".into()));
        } else {
            self.effects.push(Effect::Bell);
        }
    }

    /// A language server's report on one file: kept, counted in the bar,
    /// shown in a viewer open on it.
    fn diagnostics(&mut self, path: String, items: Vec<crate::protocol::DiagItem>) {
        if items.is_empty() {
            self.diags.remove(&path);
        } else {
            self.diags.insert(path, items);
        }
        (self.status.errors, self.status.warnings) = self.tree.diag_totals();
        for o in &mut self.overlays {
            if let Overlay::Viewer(v) = o {
                v.diags = self.diags.get(&v.path).cloned().unwrap_or_default();
            }
        }
    }

    /// A plan proposed: its card, to approve, edit or reject.
    fn plan_proposed(&mut self, steps: &[crate::protocol::PlanStep]) {
        let steps: Vec<String> = steps.iter().map(|s| s.step.clone()).collect();
        let plan = Overlay::Plan(Box::new(PlanOverlay::new(&steps)));
        // A plan already open (perhaps being edited) keeps the keys: the
        // new one waits under it, and nothing runs unseen.
        match self
            .overlays
            .iter()
            .position(|o| matches!(o, Overlay::Plan(_)))
        {
            Some(i) => {
                self.overlays.insert(i, plan);
                self.flash("another plan came back: it opens when this one is closed");
            }
            None => self.overlays.push(plan),
        }
    }

    /// The terminal layer copied (or could not): say where it went.
    pub fn copied(&mut self, what: &str, got: &crate::clipboard::Copied, text: &str) {
        self.flash(got.describe(what, text.lines().count().max(1), text.len()));
        self.dirty = true;
    }

    /// Called on a timer: clears an old flash; true when the screen must
    /// be drawn again.
    pub fn tick(&mut self) -> bool {
        if self
            .tree_stale_at
            .is_some_and(|at| at.elapsed() >= TREE_SETTLE)
        {
            self.tree_stale_at = None;
            let dirs = std::mem::take(&mut self.tree_stale);
            if self.tree.reload(&dirs) {
                self.composer.forget_files();
                self.jobs.forget_index();
                // A filter being shown is walked for again at once (it
                // showed no file until a key was typed).
                if self.tree.needs_index() {
                    self.jobs.index();
                }
                self.dirty = true;
            }
        }
        if self.transcript.touch_running() {
            self.dirty = true;
        }
        let owned = |flash: &str| {
            self.pending
                .values()
                .any(|p| matches!(p, Pending::Restore(w) if w == flash))
                || self
                    .pending
                    .values()
                    .any(|p| matches!(p, Pending::Waiting(w) if w == flash))
        };
        if self.status.flash.is_some() && self.flash_at.is_none() {
            // Set by a pane (a commit's summary): its time starts now.
            self.flash_at = Some(Instant::now());
        }
        if let (Some(at), Some(flash)) = (self.flash_at, self.status.flash.as_deref())
            && at.elapsed() > FLASH_FOR
            && !owned(flash)
        {
            self.status.flash = None;
            self.flash_at = None;
            self.dirty = true;
        }
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
        self.dirty || self.animating()
    }
}

/// What waits in the TUI for the running turn to end.
pub(crate) enum Queued {
    /// A message, sent as the next turn.
    Message(String),
    /// A command the agent runs between turns, and what it was typed as.
    Command(Op, String),
}

/// The command an op that the agent runs after the running turn came
/// from, for "queued until the turn ends: /model". What only reads
/// (`Slash::glance`: `/stats`, `/cost`, `/ctx`, `/mcp`, `/skills`) is
/// answered at once; `/ctx MODE` changes how requests are made and waits.
fn queued_name(op: &Op) -> Option<String> {
    let slash = match op {
        Op::Model { .. } => Slash::Model,
        Op::Init => Slash::Init,
        Op::Export { .. } => Slash::Export,
        Op::SessionDiff { .. } => Slash::Diff,
        Op::ProposeCommit => Slash::Commit,
        Op::Undo => Slash::Undo,
        Op::ListCheckpoints => Slash::Rewind,
        Op::Ctx { mode: Some(_) } => return Some("/ctx".into()),
        Op::Ctx { mode: None } => Slash::Ctx,
        Op::Compact { .. } => Slash::Compact,
        Op::NewSession => Slash::New,
        Op::Stats => Slash::Stats,
        Op::Cost => Slash::Cost,
        Op::Mcp => Slash::Mcp,
        Op::Skills => Slash::Skills,
        Op::Agents => Slash::Agents,
        _ => return None,
    };
    (!slash.glance()).then(|| format!("/{}", slash.name()))
}
