//! What a turn accumulates across its rounds (`TurnState`), and what
//! the model was shown of each file (`Shown`).

use super::*;

/// A file's content as the model was shown it this turn, and where.
#[derive(Clone, Copy)]
pub(super) struct Shown {
    /// A hash of the file's content then.
    pub(super) content: u64,
    /// The message that holds it, and a hash of that message's text (a
    /// compaction or a cut message is no longer what the model sees).
    pub(super) message: usize,
    pub(super) message_hash: u64,
    /// The round it was read in (0: attached to the request).
    pub(super) round: u32,
}

pub(super) fn text_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// What a turn accumulates across its rounds.
#[derive(Default)]
pub(super) struct TurnState {
    /// The request as the user typed it.
    pub(super) prompt: String,
    /// The request asks a question rather than for a change.
    pub(super) question: bool,
    /// Text was piped in with the request (`… | mm -p PROMPT`).
    pub(super) piped: bool,
    /// The request asks for text in the answer (a commit message, a
    /// summary): a write to a file is refused.
    pub(super) text_only: bool,
    /// Requests go without tools: the answer is text (a text-only request
    /// about piped text, or one whose write was refused).
    pub(super) answer_in_text: bool,
    /// The project's test command (configured or detected).
    pub(super) verify: Option<String>,
    /// The command the request says fails.
    pub(super) repro: Option<String>,
    /// The request mentions running tests or failing tests.
    pub(super) wants_tests: bool,
    /// The last harness test run, and how many failures were fed back.
    pub(super) tests: Option<TestReport>,
    /// `changes()` when the harness last ran the checks.
    pub(super) checked_at: Option<usize>,
    /// A check command the model ran itself: (command, passed, changes()).
    pub(super) model_checked: Option<(String, bool, usize)>,
    /// Names the turn's edits removed, with the file that defined them.
    pub(super) removed: Vec<(String, String)>,
    /// File changes and commands that may have changed files.
    pub(super) mutations: usize,
    pub(super) follow_ups: u32,
    pub(super) told_claim: bool,
    /// Told once that nothing was written while the check still fails.
    pub(super) told_unfinished: bool,
    /// A one-line fix mm found by trying changes in the fence, not made.
    pub(super) fix: Option<tools::probe::Fix>,
    /// The last change broke a check that passed before it.
    pub(super) broke: bool,
    /// mm made a fix before the model's first look, every check passes,
    /// and the request asks for nothing more.
    pub(super) settled: bool,
    /// mm's own change settled the turn mid-way: the next request is for
    /// the answer, without tools.
    pub(super) answer_next: bool,
    /// The request's checks the model wrote (not the request's own
    /// examples), as their FAILED lines show them.
    pub(super) written_checks: Vec<String>,
    /// Code the request spells out that no file held when it began.
    pub(super) spelled: Vec<(Option<String>, String)>,
    pub(super) told_spelled: bool,
    pub(super) told_grounding: bool,
    /// The answer's arithmetic was corrected once.
    pub(super) told_arithmetic: bool,
    /// What the user said of mm's own writes they accepted only in part
    /// (the hunks they rejected), by file.
    pub(super) own_rejected: Vec<(String, String)>,
    /// Files the user said to leave alone, in this turn's message or an
    /// earlier one: mm makes no change of its own to them, and the
    /// model's writes to them are refused.
    pub(super) hands_off: Vec<String>,
    /// The message limits changes to the files it names ("change nothing
    /// else"): those files, for mm's own changes.
    pub(super) only_files: Option<Vec<String>>,
    /// `edit_file` calls (by `call_key`) that changed a file this turn.
    pub(super) edits_made: std::collections::HashSet<String>,
    /// Those edits as (path, old_string, replacement), to tell an undo.
    pub(super) edit_pairs: Vec<(String, String, String)>,
    /// The sums mm worked out for the model: evidence for its answer.
    pub(super) computed: String,
    /// The call a question asks about as mm ran it, and what it returned.
    pub(super) probed: Option<(String, String)>,
    /// A review's functions the model, asked about each alone, found wrong.
    pub(super) review: Vec<super::review::Finding>,
    /// The answer was sent back for not giving what was asked.
    pub(super) told_value: bool,
    /// The last failure output of the request's command or the tests, as
    /// shown to the model.
    pub(super) last_failure: Option<String>,
    /// The last value trace of a failing test (what the failing call
    /// got, returned and called), for candidates one step down.
    pub(super) last_trace: Option<String>,
    pub(super) runaways: u32,
    pub(super) told_tests_claim: bool,
    pub(super) told_refs: bool,
    pub(super) reasked: bool,
    pub(super) harness_calls: u32,
    pub(super) unbacked: Vec<String>,
    pub(super) answer: String,
    pub(super) written: Vec<String>,
    pub(super) used_tools: bool,
    /// Calls that failed in the last round, by `call_key`, with their error.
    pub(super) failures: HashMap<String, String>,
    /// Rounds in a row where every call was a refused repeat.
    pub(super) repeat_rounds: u32,
    /// Every call of the turn with its result, hashed, for cycle detection.
    pub(super) history: Vec<u64>,
    pub(super) cycle_warned: bool,
    /// Writes of the model's that brought a file back to contents it had
    /// before this turn's last change to it (A, B, A): since the last
    /// warning.
    pub(super) revisits: u32,
    pub(super) nudges: u32,
    /// Why the loop was stopped early, for the turn's result.
    pub(super) stopped: Option<String>,
    /// Commands off the read-only list that ran.
    pub(super) commands: u32,
    /// Files the turn's shell commands changed (checkpoints on).
    pub(super) command_changes: Vec<String>,
    /// The same, to look up (a command can make 100,000 files).
    pub(super) command_changed: std::collections::HashSet<String>,
    /// Of those, the files a helper (`task`, `ask_agent`) changed.
    pub(super) helper_changed: std::collections::HashSet<String>,
    /// The last `task` helper's answer, without mm's notes under it.
    pub(super) helper_answer: Option<String>,
    /// The language server's latest verdict on each file written.
    pub(super) checks: HashMap<String, crate::lsp::Check>,
    /// Each written file's errors before the turn's first write to it
    /// (None: the server did not know the file).
    pub(super) baselines: HashMap<String, Option<Vec<String>>>,
    /// The source files the request names, as they were when the turn
    /// began (their placeholders are what the request asks to fill).
    pub(super) originals: HashMap<String, String>,
    /// The model was told once about errors its changes left.
    pub(super) told_errors: bool,
    /// Files whose latest change this turn a person approved: mm undoes
    /// none of them (it says what still fails instead).
    pub(super) approved: std::collections::HashSet<String>,
    /// A person said no to a call this turn (or nobody could be asked):
    /// an ending with nothing written is theirs, not a stall.
    pub(super) declined: bool,
    /// What the user said when rejecting a change: their words count as
    /// much as the request's ("fix the test" lets the test change).
    pub(super) user_said: Vec<String>,
    /// Files a person refused a change to this turn: mm proposes no
    /// change of its own to them (candidates) in the same turn.
    pub(super) refused: Vec<String>,
    /// The round the turn is in.
    pub(super) round: u32,
    /// What candidate changes came to this turn ("3 candidates tried, the
    /// 2nd passed"), for the receipt.
    pub(super) candidate_notes: Vec<String>,
    /// Candidates were tried after a change of the model's this turn.
    pub(super) tried_candidates: bool,
    /// Rounds in a row whose calls only read (see `stall`).
    pub(super) read_rounds: u32,
    /// Reads of a file the model had in view, unchanged, this turn.
    pub(super) rereads: u32,
    /// Rounds whose calls did not parse.
    pub(super) bad_rounds: u32,
    /// Rounds in a row whose calls changed no file.
    pub(super) idle_rounds: u32,
    /// Rounds in a row whose calls changed nothing (no write went through,
    /// no command changed a file).
    pub(super) unchanged_rounds: u32,
    /// `mutations` when `unchanged_rounds` was last counted.
    pub(super) seen_mutations: usize,
    /// The whole file was asked for this turn (see `stall`).
    pub(super) stall_tried: bool,
    /// The request's command failed before the turn changed anything:
    /// its failure as shown then.
    pub(super) first_failure: Option<String>,
    /// What the command the request names printed before any change, when
    /// it exited 0 then: the request's symptom is in its output, not its
    /// exit, so "it passes" after a change says nothing.
    pub(super) repro_before: Option<String>,
    /// Checks from the request were asked for this turn (see `asserts`).
    pub(super) asserts_tried: bool,
    /// Their command, a check candidates are tried against too.
    pub(super) request_checks: Option<String>,
    /// How many checks it holds, the written files as they were when it
    /// last ran and how many failed then, and how many times the model
    /// was told of a later run.
    pub(super) request_checks_total: usize,
    pub(super) request_checked: Option<(String, usize)>,
    pub(super) request_rechecks: u32,
    /// The fewest of the request's checks that failed this turn, and the
    /// written files as they were then: a turn that ends worse than that
    /// gets them back.
    pub(super) best_checked: Option<(usize, Vec<(String, String)>)>,
    /// What the request's command printed when it last passed.
    pub(super) repro_output: Option<String>,
    /// The model was asked once whether a now-passing command's output is
    /// what the request expects.
    pub(super) told_exit0: bool,
    /// A question's command as mm ran it, and what it printed.
    pub(super) printed: Option<(String, String)>,
    /// The answer was sent back once for not quoting that output.
    pub(super) told_printed: bool,
    /// Files whose whole content is in view this turn: path -> where.
    pub(super) shown: HashMap<String, Shown>,
    /// Each file's contents through the turn: as the turn found it, then
    /// after each change of mm's tools (to put back the last that parses).
    pub(super) versions: HashMap<String, Vec<std::sync::Arc<str>>>,
}

impl TurnState {
    /// What the user said of mm's write to `file` when they kept only
    /// some of its hunks, for the model: the diff shows what landed, this
    /// says why.
    pub(super) fn rejected_note(&self, file: &str) -> Option<String> {
        self.own_rejected
            .iter()
            .rev()
            .find(|(p, _)| p == file)
            .map(|(_, said)| format!("[{file}: {said}]"))
    }

    /// Why mm may not change `file` on its own in this turn, or None.
    pub(super) fn off_limits(&self, file: &str) -> Option<String> {
        if self.refused.iter().any(|f| f == file) {
            return Some(format!("you refused a change to {file} in this turn"));
        }
        if self.hands_off.iter().any(|f| f == file) {
            return Some(format!("you asked to leave {file} alone"));
        }
        match &self.only_files {
            Some(only) if !only.iter().any(|f| f == file) => Some(format!(
                "the request asks for changes to {} only",
                only.join(", ")
            )),
            _ => None,
        }
    }

    /// How many of the request's checks fail on the code as they last
    /// ran, of how many, when any does.
    pub(super) fn request_checks_failing(&self) -> Option<(usize, usize)> {
        self.request_checked
            .as_ref()
            .map(|(_, k)| *k)
            .filter(|k| *k > 0)
            .map(|k| (k, self.request_checks_total))
    }

    /// Keeps `change`'s contents among the file's versions of this turn.
    pub(super) fn note_version(&mut self, change: &crate::protocol::FileChange) {
        let v = self.versions.entry(change.path.clone()).or_default();
        if v.is_empty() {
            v.push(change.before.clone());
        }
        v.push(change.after.clone());
    }
}
