//! The harness around a small model's turn: run what the request says
//! fails before the model looks, run the tests after it changes files,
//! and before a turn ends, hold the answer against the facts (what was
//! written, what ran, what still refers to a removed name). Each
//! follow-up restates the request and names the next step.

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::ending::printed_output;
use super::{Agent, FAILURE_LINES, TestReport, TurnState, harness};
use crate::protocol::{AgentEvent, Level, ToolStatus};
use crate::toolname::ToolName;
use crate::tools::{self, CallCtx, ToolOutput};

impl TestReport {
    /// The receipt's words for it: `tests: 4 passed`, `tests: 1 failed
    /// after 3 attempts`, `` `python3 app.py`: passed ``.
    pub fn receipt_words(&self) -> String {
        let generic = matches!(self.summary.as_str(), "passed" | "failing");
        let head = if generic {
            format!("`{}`", self.command)
        } else {
            "tests".to_string()
        };
        match self.passed {
            Some(false) if self.attempts > 0 => format!(
                "{head}: {} after {} attempt{}",
                self.summary,
                self.attempts,
                if self.attempts == 1 { "" } else { "s" }
            ),
            Some(_) => format!("{head}: {}", self.summary),
            None => format!("`{}` could not run: {}", self.command, self.summary),
        }
    }
}

impl TurnState {
    /// Adds what a shell command changed to the receipt's list.
    pub(super) fn note_command_changes(&mut self, changed: Vec<String>) {
        for path in changed {
            if self.command_changed.insert(path.clone()) {
                self.command_changes.push(path);
            }
        }
    }

    /// Changes so far: file changes and commands that may have changed
    /// files (a test run is not one).
    pub(super) fn changes(&self) -> usize {
        self.mutations
    }

    /// A command that runs the project's tests or the request's command.
    pub(super) fn is_check_command(&self, command: &str) -> bool {
        let words: Vec<&str> = command.split_whitespace().collect();
        let has = |c: &Option<String>| {
            c.as_deref().is_some_and(|c| {
                command.contains(
                    c.split_whitespace()
                        .take(2)
                        .collect::<Vec<_>>()
                        .join(" ")
                        .as_str(),
                )
            })
        };
        has(&self.repro)
            || has(&self.verify)
            || words.iter().any(|w| {
                matches!(
                    *w,
                    "pytest" | "unittest" | "test" | "jest" | "vitest" | "mocha"
                ) || w.starts_with("test_")
                    || w.starts_with("test.")
            })
    }
}

impl Agent {
    pub(super) fn harness_on(&self) -> bool {
        self.settings.harness && !self.specs.is_empty()
    }

    /// One of the harness's behaviours is on: the harness is, and
    /// `harnessOff` does not name it.
    pub(super) fn on(&self, b: crate::config::Behaviour) -> bool {
        self.harness_on() && !self.settings.harness_off.contains(&b)
    }

    /// The files the user's words keep mm's changes from: those said to
    /// be left alone (kept across turns until a message names them
    /// without saying so), and, when the message says "nothing else",
    /// every file it does not name.
    pub(super) fn note_limits(&mut self, st: &mut TurnState) {
        if !self.harness_on() {
            return;
        }
        let named = harness::named_files(&st.prompt);
        harness::update_hands_off(&mut self.hands_off, &st.prompt);
        st.hands_off = self.hands_off.clone();
        let only: Vec<String> = named
            .into_iter()
            .filter(|f| !st.hands_off.contains(f))
            .collect();
        if !only.is_empty() && harness::only_what_it_names(&st.prompt) {
            st.only_files = Some(only);
        }
    }

    /// What this turn's checks are: the test command, the command the
    /// request says fails, whether it asks a question.
    pub(super) fn plan_checks(&self, st: &mut TurnState) {
        st.question = harness::is_question(&st.prompt);
        // Tests asked for are run like tests said to fail: they are the
        // check of the turn's work.
        st.wants_tests = harness::mentions_tests(&st.prompt) || harness::asks_for_tests(&st.prompt);
        if !st.question {
            let sources = self.sources_now();
            st.spelled = harness::spelled_code(&st.prompt)
                .into_iter()
                .filter(|(_, c)| !sources.iter().any(|(_, t)| harness::has_code(t, c)))
                .collect();
        }
        if !self.settings.bash_tool {
            return;
        }
        st.repro = harness::named_command(&st.prompt);
        st.verify = match self.settings.verify.as_deref() {
            Some("") => None,
            Some(v) => Some(v.to_string()),
            None => harness::detect_verify(self.tools.sandbox.root()),
        };
    }

    /// The workspace's source files (those read and the others), with
    /// their content now.
    pub(super) fn sources_now(&self) -> Vec<(String, String)> {
        let mut sources = self.tools.read_files_now();
        sources.extend(self.tools.unread_sources());
        sources
    }

    /// Runs the command the request says fails (or the tests it says
    /// fail) before the model's first look; returns what to add to the
    /// request so the model starts from the traceback.
    pub(super) async fn reproduce(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let command = match (&st.repro, &st.verify) {
            (Some(r), _) => r.clone(),
            (None, Some(v)) if st.wants_tests && !st.question => v.clone(),
            _ => return None,
        };
        let out = self.harness_run(st, &command, cancel).await;
        let report = self.report_of(&command, &out, 0);
        st.checked_at = Some(0);
        let (passed, summary) = (report.passed, report.summary.clone());
        // Set first: a fix mm makes below runs the checks again.
        self.last_check = Some(report.clone());
        st.tests = Some(report);
        // A question about what the command prints: what it printed is
        // the evidence the answer is held to.
        if st.question {
            let printed = printed_output(&out.text);
            if passed != Some(false) && harness::asks_output(&st.prompt) {
                st.printed = Some((command.clone(), printed.clone()));
            }
            return Some(if passed == Some(false) {
                format!(
                    "\n\n[mm ran `{command}` before you start; it fails:]\n{}",
                    self.failure_lines(&out.text)
                )
            } else {
                format!(
                    "\n\n[mm ran `{command}` to check; it printed exactly this:]\n```\n{printed}\n```\nNo tool call is needed: answer from that output."
                )
            });
        }
        let text = match passed {
            Some(true) => {
                let mut text =
                    format!("\n\n[mm ran `{command}` before you start: it passed ({summary})]");
                if st.repro.as_deref() == Some(command.as_str()) {
                    st.repro_before = Some(printed_output(&out.text));
                    // The request says it misbehaves and it exits 0: its
                    // words are the check, run on the code as it is.
                    if !st.question
                        && let Some(checked) = self.request_checks(st, cancel).await
                    {
                        text.push('\n');
                        text.push_str(&checked);
                    }
                }
                text
            }
            Some(false) => {
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                if st.repro.as_deref() == Some(command.as_str()) {
                    st.first_failure = Some(lines.clone());
                }
                // What the variables held where it crashed: the wrong
                // value is usually plain to see.
                let values = tools::probe::crash_values(&self.tools, &command, cancel)
                    .await
                    .map(|v| format!("\n{v}"))
                    .unwrap_or_default();
                let trace = self.value_trace(st, &command, &out.text, cancel).await;
                let mut made = self.fix_text(st, cancel).await;
                // Nothing found by trying small changes: ask for the
                // function the failure points at, alone.
                if st.fix.is_none()
                    && st.tests.as_ref().is_some_and(|t| t.passed == Some(false))
                    && let Some(text) = self
                        .fix_by_candidates(
                            st,
                            &command,
                            &st.last_failure.clone().unwrap_or_default(),
                            cancel,
                        )
                        .await
                {
                    made.push_str(&text);
                }
                st.settled = st.fix.is_none()
                    && !made.is_empty()
                    && st.tests.as_ref().is_some_and(|t| t.passed == Some(true))
                    && st.spelled.is_empty()
                    && !harness::asks_for_tests(&st.prompt);
                let end = if st.settled {
                    "\nNo tool call is needed: answer in a few sentences what was wrong and what changed."
                } else {
                    ""
                };
                format!(
                    "\n\n[mm ran `{command}` before you start; it fails:]\n{lines}{values}{trace}{made}{end}"
                )
            }
            None => return None,
        };
        Some(text)
    }

    /// A question about what a call returns: mm runs the call (the
    /// function from the one file that defines it, the question's literal
    /// arguments, in the fence, read-only) and puts the result in front of
    /// the model, which reads code well and does sums badly.
    pub(super) async fn probe(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !st.question || !self.tools.sandbox.fence().is_on() {
            return None;
        }
        let asked = harness::asked_call(&st.prompt)?;
        let mut sources = self.tools.read_files_now();
        sources.extend(self.tools.unread_sources());
        let file = tools::probe::defining_file(&sources, &asked.name)?.to_string();
        let shown = format!("{}({}) from {file}", asked.name, asked.shown);
        let (call_id, summary) = self.card_start(st, &shown);
        let probe = tools::probe::call(&self.tools, &file, &asked, cancel).await;
        let (status, output) = match &probe {
            Some(p) => match &p.result {
                Ok(v) => (ToolStatus::Ok, v.clone()),
                Err(e) => (ToolStatus::Error, e.clone()),
            },
            None => (ToolStatus::NotRun, "not run: no fence here".to_string()),
        };
        self.card_finish(call_id, summary, status, &output);
        let p = probe?;
        if let Ok(v) = &p.result {
            st.probed = Some((p.call.clone(), v.clone()));
            // The question was what the call returns: that is known now,
            // and the first reply is the answer.
            st.settled = true;
        }
        Some(match p.result {
            Ok(v) => format!(
                "\n\n[mm called {} (from {}) to check: it returns {v}]\nNo tool call is needed: answer the question with that.",
                p.call, p.file
            ),
            Err(e) => format!(
                "\n\n[mm called {} (from {}) to check: it raises {e}]",
                p.call, p.file
            ),
        })
    }

    /// A failing test's wrong value traced to the expression that made
    /// it (see `probe::wrong_value_trace`), as lines to add, or nothing.
    /// With it, a one-line change of that expression that makes the
    /// test file pass, when trying small changes finds one. A script
    /// that crashed with a `TypeError` gets the conversion that makes it
    /// run instead (see `probe::crash_repair`).
    pub(super) async fn value_trace(
        &self,
        st: &mut TurnState,
        command: &str,
        output: &str,
        cancel: &CancellationToken,
    ) -> String {
        st.fix = None;
        st.last_trace = None;
        let Some(trace) = tools::probe::wrong_value_trace(&self.tools, output, cancel).await else {
            // A script that crashed on a value of the wrong type: a
            // conversion where the text comes in that makes it run. A
            // JavaScript test script: a small change of the code it runs.
            st.fix = if output.contains("TypeError") {
                tools::probe::crash_repair(&self.tools, command, cancel).await
            } else {
                None
            };
            if st.fix.is_none() && command.starts_with("node ") {
                st.fix = tools::probe::script_repair(&self.tools, command, cancel).await;
            }
            return String::new();
        };
        st.last_trace = Some(trace.clone());
        match tools::probe::repair_candidate(&self.tools, output, cancel).await {
            // With a fix in hand, what the call returned is enough: the
            // first request stays small.
            Some(fix) => {
                st.fix = Some(fix);
                format!("\n{}", trace.lines().next().unwrap_or(""))
            }
            None => format!("\n{trace}"),
        }
    }

    /// Starts the tool card of something the harness runs, shown as a
    /// command line: the call id and summary to finish it with.
    pub(super) fn card_start(&self, st: &mut TurnState, command: &str) -> (String, String) {
        let mut card = Map::new();
        card.insert("command".into(), Value::String(command.to_string()));
        let summary = tools::summary(ToolName::Bash.as_str(), &card);
        let arguments = json!({"command": command}).to_string();
        self.card_start_as(st, ToolName::Bash.as_str(), summary, arguments)
    }

    /// Starts the tool card of a call the harness makes itself, under the
    /// tool's name, with `summary` saying why.
    pub(super) fn card_start_as(
        &self,
        st: &mut TurnState,
        name: &str,
        summary: String,
        arguments: String,
    ) -> (String, String) {
        st.harness_calls += 1;
        let call_id = format!("mm_check_{}_{}", self.turn, st.harness_calls);
        self.bus.publish(AgentEvent::ToolCallStarted {
            turn: self.turn,
            call_id: call_id.clone(),
            name: name.into(),
        });
        self.bus.publish(AgentEvent::ToolCallRunning {
            turn: self.turn,
            call_id: call_id.clone(),
            name: name.into(),
            summary: summary.clone(),
            arguments,
        });
        (call_id, summary)
    }

    /// A change that renamed one definition (one name gone, one new, in
    /// the same file): the files that import the old name from it get the
    /// new one, as writes of mm's own (with approval, checks and a tool
    /// card), so a rename never leaves its callers broken. Returns what to
    /// add to the change's result.
    pub(super) async fn follow_rename(
        &mut self,
        st: &mut TurnState,
        change: &crate::protocol::FileChange,
        cancel: &CancellationToken,
    ) -> Option<String> {
        use tools::guard::{definitions, removed_names};
        let removed = removed_names(&change.before, &change.after);
        let had = definitions(&change.before);
        let added: Vec<String> = definitions(&change.after)
            .into_iter()
            .filter(|d| !had.contains(d))
            .collect();
        let ([old], [new]) = (removed.as_slice(), added.as_slice()) else {
            return None;
        };
        let word = regex::Regex::new(&format!(r"\b{}\b", regex::escape(old))).ok()?;
        let root = self.tools.sandbox.root().to_path_buf();
        let mut done = Vec::new();
        for user in self.tools.dependents(&change.path) {
            let Ok(rel) = user
                .strip_prefix(&root)
                .map(|p| p.to_string_lossy().into_owned())
            else {
                continue;
            };
            // What read_file would refuse (a link out, a credential, a
            // file with other names) is not read here either.
            let Some(text) = self
                .tools
                .sandbox
                .check_read(&rel)
                .ok()
                .and_then(|r| crate::paths::read_checked(&r.abs, 256 * 1024).ok())
                .and_then(|b| String::from_utf8(b).ok())
            else {
                continue;
            };
            let imports_it = tools::guard::local_imports(&root, &rel, &text)
                .iter()
                .any(|(f, names)| *f == change.path && (names.contains(old) || names.is_empty()));
            if !imports_it || !word.is_match(&text) {
                continue;
            }
            let renamed = word.replace_all(&text, new.as_str()).into_owned();
            let label = format!("rename {old} to {new} in {rel}");
            if self.own_write(st, &rel, renamed, &label, cancel).await {
                done.push(rel.clone());
            }
        }
        if done.is_empty() {
            return None;
        }
        st.removed.retain(|(n, _)| n != old);
        Some(format!(
            "\n[mm renamed {old} to {new} in the files that import it: {}]",
            done.join(", ")
        ))
    }

    /// Ends a tool card `card_start` began.
    pub(super) fn card_finish(
        &self,
        call_id: String,
        summary: String,
        status: ToolStatus,
        output: &str,
    ) {
        self.card_finish_as(ToolName::Bash.as_str(), call_id, summary, status, output);
    }

    pub(super) fn card_finish_as(
        &self,
        name: &str,
        call_id: String,
        summary: String,
        status: ToolStatus,
        output: &str,
    ) {
        self.bus.publish(AgentEvent::ToolCallFinished {
            turn: self.turn,
            call_id,
            name: name.into(),
            summary,
            status,
            output: std::sync::Arc::from(output),
        });
    }

    /// Runs a command for the harness: through the gate and the fence
    /// like the model's commands, shown as a tool card, with checkpoints
    /// around it; its output does not enter the conversation here.
    pub(super) async fn harness_run(
        &mut self,
        st: &mut TurnState,
        command: &str,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let mut args = Map::new();
        args.insert("command".into(), Value::String(command.to_string()));
        let read_only = crate::sandbox::Sandbox::is_read_only_command(command);
        let mut before = None;
        if !read_only {
            self.checkpoint(crate::git::Kind::Command, command).await;
            before = self.last_checkpoint().await;
        }
        let (call_id, summary) = self.card_start(st, command);
        let ctx = CallCtx {
            turn: self.turn,
            call_id: &call_id,
            cancel,
        };
        let out = tools::run(&self.tools, ToolName::Bash.as_str(), &args, &ctx).await;
        if !read_only {
            self.checkpoint(crate::git::Kind::Command, &format!("after: {command}"))
                .await;
            match self.record_command_changes(&call_id, before).await {
                Ok(changed) => st.note_command_changes(changed),
                Err(e) => self.notice(Level::Error, e.to_string()),
            }
        }
        self.card_finish(call_id, summary, out.status, &out.text);
        // Kept for replays and exports, as the card showed it.
        if let Err(e) = self.log.append(&crate::session::Record::Ran {
            turn: self.turn,
            command: command.to_string(),
            status: out.status,
            output: head_and_tail(&out.text, 4 * 1024, 12 * 1024),
        }) {
            self.notice(Level::Error, e.to_string());
        }
        out
    }

    fn report_of(&self, command: &str, out: &ToolOutput, attempts: u32) -> TestReport {
        let passed = match out.status {
            ToolStatus::Ok => Some(true),
            ToolStatus::Error => Some(false),
            ToolStatus::Refused | ToolStatus::NotRun => None,
        };
        // A run that found no test checked nothing: not a pass
        // (`python3 -m unittest` finds no pytest-style function).
        if passed == Some(true) && harness::ran_no_tests(&out.text) {
            return TestReport {
                command: command.to_string(),
                passed: None,
                summary: "the command ran no test".into(),
                attempts,
            };
        }
        let summary = match passed {
            Some(ok) => harness::test_summary(&out.text, ok),
            None => out
                .text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(160)
                .collect(),
        };
        TestReport {
            command: command.to_string(),
            passed,
            summary,
            attempts,
        }
    }

    pub(super) fn failure_lines(&self, output: &str) -> String {
        let body: Vec<&str> = output
            .lines()
            .filter(|l| !(l.starts_with("[exit code") && l.ends_with(']')))
            .collect();
        let body = body.join("\n");
        let root = self.tools.sandbox.root();
        let mut text = harness::trim_failure(&body, root, FAILURE_LINES);
        // A failing test points at the code it tests: name where that is,
        // so the fix goes there and not into the test.
        let trimmed = text.clone();
        for test in harness::failing_test_files(&trimmed).iter().take(2) {
            let Ok(r) = self.tools.sandbox.check_read(test) else {
                continue;
            };
            let Ok(bytes) = crate::paths::read_checked(&r.abs, 256 * 1024) else {
                continue;
            };
            let code = String::from_utf8_lossy(&bytes);
            let sources: Vec<String> = tools::guard::local_imports(root, test, &code)
                .into_iter()
                .filter(|(f, _)| !harness::is_test_file(f))
                .map(|(f, names)| {
                    if names.is_empty() {
                        f
                    } else {
                        format!("{f} ({})", names.join(", "))
                    }
                })
                .collect();
            if !sources.is_empty() {
                text.push_str(&format!(
                    "\n[{test} tests code from {}: a wrong result is usually fixed there, not in the test]",
                    sources.join(", ")
                ));
            }
        }
        // The code at the places a panic names, which the output does not
        // show: the assertion that failed says what the code should do.
        let mut quoted = 0;
        for (path, line) in harness::bare_locations(&body) {
            if quoted == 4 {
                break;
            }
            let Ok(r) = self.tools.sandbox.check_read(&path) else {
                continue;
            };
            let Ok(bytes) = crate::paths::read_checked(&r.abs, 256 * 1024) else {
                continue;
            };
            let content = String::from_utf8_lossy(&bytes);
            if let Some(code) = content.lines().nth(line.saturating_sub(1)) {
                let code: String = code.trim().chars().take(200).collect();
                text.push_str(&format!("\n{path}:{line}: {code}"));
                quoted += 1;
            }
        }
        text
    }

    /// Runs the request's command and the tests, in that order; the first
    /// that does not pass comes back with its output. Sets `st.tests`.
    pub(super) async fn run_checks(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<(String, ToolOutput)> {
        let mut commands: Vec<String> = Vec::new();
        for c in [st.repro.clone(), st.verify.clone()].into_iter().flatten() {
            if !commands.contains(&c) {
                commands.push(c);
            }
        }
        let attempts = st.tests.as_ref().map(|t| t.attempts).unwrap_or(0);
        st.checked_at = Some(st.changes());
        for command in commands {
            let out = self.harness_run(st, &command, cancel).await;
            let report = self.report_of(&command, &out, attempts);
            let passed = report.passed;
            if passed == Some(true) && st.repro.as_deref() == Some(command.as_str()) {
                st.repro_output = Some(printed_output(&out.text));
            }
            self.last_check = Some(report.clone());
            st.tests = Some(report);
            if passed != Some(true) {
                return Some((command, out));
            }
        }
        None
    }

    /// Right after a change, when the request named what fails: runs it
    /// again and returns what to add to the change's result.
    pub(super) async fn check_after_change(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let was_passing = st.tests.as_ref().is_some_and(|t| t.passed == Some(true));
        match self.run_checks(st, cancel).await {
            None => {
                let t = st.tests.as_ref()?;
                Some(format!(
                    "\n[mm ran `{}` after this change: it passes ({})]",
                    t.command, t.summary
                ))
            }
            Some((command, out)) if out.status == ToolStatus::Error => {
                let lines = self.failure_lines(&out.text);
                // The same failure as before the change: the change did not
                // touch the cause, which is worth saying outright.
                let same = st.last_failure.as_deref() == Some(lines.as_str());
                st.last_failure = Some(lines.clone());
                let mut trace = self.value_trace(st, &command, &out.text, cancel).await;
                trace.push_str(&self.fix_text(st, cancel).await);
                Some(if was_passing {
                    // It passed before this change: undoing it is the way
                    // back, not a swing to refuse.
                    st.broke = true;
                    format!(
                        "\n[mm ran `{command}` after this change: it fails, and it passed before this change, so this change broke it. Undo it (edit_file with old_string and replacement swapped) unless the request needs it]\n{lines}{trace}"
                    )
                } else if same {
                    let at = harness::last_frame(&lines)
                        .map(|(p, n, code)| format!(" ({p}:{n}: `{code}`)"))
                        .unwrap_or_default();
                    format!(
                        "\n[mm ran `{command}` after this change: it still fails exactly as before, so this change did not fix the cause. Look again at the error and the line it points to{at}]\n{lines}{trace}"
                    )
                } else {
                    format!(
                        "\n[mm ran `{command}` after this change: it still fails]\n{lines}{trace}"
                    )
                })
            }
            Some(_) => None,
        }
    }

    /// After changes (or when the answer claims passing tests), runs the
    /// checks; a failure goes back to the model while attempts last.
    pub(super) async fn verify_step(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        force: bool,
    ) -> Option<String> {
        if st.repro.is_none() && st.verify.is_none() {
            return None;
        }
        let fresh = st.checked_at != Some(st.changes());
        if !fresh || !(st.changes() > 0 || force) {
            return None;
        }
        let max = self.settings.verify_attempts;
        if st
            .tests
            .as_ref()
            .is_some_and(|t| t.passed == Some(false) && t.attempts >= max)
        {
            return None;
        }
        let (command, out) = self.run_checks(st, cancel).await?;
        if out.status != ToolStatus::Error {
            self.notice(
                Level::Warning,
                format!("the check `{command}` could not run, so the change is not verified"),
            );
            return None;
        }
        let report = st.tests.as_mut()?;
        if report.attempts >= max {
            return None;
        }
        report.attempts += 1;
        let (n, summary) = (report.attempts, report.summary.clone());
        self.notice(
            Level::Warning,
            format!(
                "`{command}` fails after the change ({summary}): telling the model (attempt {n} of {max})"
            ),
        );
        let lines = self.failure_lines(&out.text);
        st.last_failure = Some(lines.clone());
        let mut trace = self.value_trace(st, &command, &out.text, cancel).await;
        let mut made = self.make_fix(st, cancel).await;
        // The model's change fails the check: alternatives, tried in
        // scratch copies, once a turn.
        if made.is_none() && self.on(crate::config::Behaviour::Candidates) && !st.tried_candidates {
            st.tried_candidates = true;
            made = self.fix_by_candidates(st, &command, &lines, cancel).await;
        }
        let ask = self.restated(st);
        if made.is_none()
            && let Some(f) = &st.fix
        {
            trace.push_str(&format!(
                "\n{} If that is the fix, make it with edit_file.",
                f.note
            ));
        }
        if let Some(made) = made {
            let next = if st.tests.as_ref().is_some_and(|t| t.passed == Some(true)) {
                "Check that change and answer."
            } else {
                "Fix the code so that it passes, with tool calls."
            };
            return Some(format!(
                "After your change, `{command}` failed:\n{lines}{trace}{made}\n\n{ask}\n{next}"
            ));
        }
        Some(format!(
            "After your change, `{command}` fails:\n{lines}{trace}\n\n{ask}\nFix the code so that it passes, with tool calls. Change a test only if the request asks for it."
        ))
    }
}

/// `text` with at most `head` bytes of its start and `tail` of its end,
/// the cut said between them.
fn head_and_tail(text: &str, head: usize, tail: usize) -> String {
    if text.len() <= head + tail {
        return text.to_string();
    }
    let mut a = head;
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = text.len() - tail;
    while !text.is_char_boundary(b) {
        b += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..a],
        b - a,
        &text[b..]
    )
}
