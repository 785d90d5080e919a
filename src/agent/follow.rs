//! The harness around a small model's turn: run what the request says
//! fails before the model looks, run the tests after it changes files,
//! and before a turn ends, hold the answer against the facts (what was
//! written, what ran, what still refers to a removed name). Each
//! follow-up restates the request and names the next step.

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Agent, FAILURE_LINES, MAX_FOLLOW_UPS, MAX_NUDGES, Stop, TestReport, TurnState, batch, harness,
};
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

/// What the ending rules share, worked out as the turn ended.
struct EndingFacts {
    /// The model may edit files (edit_file is offered).
    can_edit: bool,
    /// No write succeeded and no command changed a file in this turn.
    unchanged: bool,
    /// Unchanged, and not because a person said no.
    idle: bool,
    /// The whole-file fallback for a stalled edit has not been tried.
    whole_left: bool,
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
                if st.repro.as_deref() == Some(command.as_str()) {
                    st.repro_before = Some(printed_output(&out.text));
                }
                format!("\n\n[mm ran `{command}` before you start: it passed ({summary})]")
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
    async fn value_trace(
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

    /// Writes `content` to `rel` as a write of mm's own (approval, checks
    /// and a tool card labelled `label` as for the model's); true when the
    /// file changed.
    pub(super) async fn own_write(
        &mut self,
        st: &mut TurnState,
        rel: &str,
        content: String,
        label: &str,
        cancel: &CancellationToken,
    ) -> bool {
        self.own_write_with(st, rel, content, label, false, cancel)
            .await
    }

    /// `own_write`; `plain`: content mm computed itself (a rename), written
    /// as it is, without the guards for a model's whole-file write.
    pub(super) async fn own_write_with(
        &mut self,
        st: &mut TurnState,
        rel: &str,
        content: String,
        label: &str,
        plain: bool,
        cancel: &CancellationToken,
    ) -> bool {
        // A turn whose tools cannot write (a command's `allowedTools`, a
        // read-only agent) gets no write of mm's either.
        if !self
            .specs
            .iter()
            .any(|s| crate::toolname::edits(s.name.as_ref()))
        {
            return false;
        }
        self.tools.note_read(rel);
        let (call_id, summary) = self.card_start_as(
            st,
            ToolName::WriteFile.as_str(),
            label.to_string(),
            json!({ (crate::toolname::arg::PATH): rel }).to_string(),
        );
        let mut args = Map::new();
        args.insert(
            crate::toolname::arg::PATH.into(),
            Value::String(rel.to_string()),
        );
        args.insert(crate::toolname::arg::CONTENT.into(), Value::String(content));
        let ctx = CallCtx {
            turn: self.turn,
            call_id: &call_id,
            cancel,
        };
        let out = if plain {
            tools::write_own(
                &self.tools,
                rel,
                tools::arg_str(&args, crate::toolname::arg::CONTENT).unwrap_or(""),
                &ctx,
            )
            .await
        } else {
            tools::run(&self.tools, ToolName::WriteFile.as_str(), &args, &ctx).await
        };
        let change = out.change.clone().map(|c| *c);
        self.card_finish_as(
            ToolName::WriteFile.as_str(),
            call_id.clone(),
            summary,
            out.status,
            &out.text,
        );
        let Some(c) = change else {
            return false;
        };
        if out.approved {
            st.approved.insert(c.path.clone());
        } else {
            st.approved.remove(&c.path);
        }
        st.mutations += 1;
        st.note_version(&c);
        if !st.written.contains(&c.path) {
            st.written.push(c.path.clone());
        }
        // The file's verdict is the one on what mm wrote.
        match out.check {
            Some(check) => {
                st.baselines
                    .entry(c.path.clone())
                    .or_insert_with(|| check.baseline.clone());
                st.checks.insert(c.path.clone(), *check);
            }
            None => {
                st.checks.remove(&c.path);
            }
        }
        if let Err(e) = self.record_change(&call_id, c) {
            self.notice(Level::Error, e.to_string());
        }
        true
    }

    /// At the end of a turn, a file the turn's tools changed that no
    /// longer parses (Python, JavaScript) goes back to its newest version
    /// of the turn that does, as a write of mm's own: a small model that
    /// could not repair an edit it broke would otherwise leave the project
    /// broken for every later turn. The put-back is an edit like any
    /// other (`/undo` brings the broken contents back); the user and, with
    /// the next message, the model hear of it.
    pub(super) async fn restore_unparsable(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) {
        let mut paths: Vec<String> = st.versions.keys().cloned().collect();
        paths.sort();
        for path in paths {
            // A person approved the file as it is: it stays, and they hear
            // that it does not parse.
            if st.approved.contains(&path) {
                if let Ok(r) = self.tools.sandbox.check_read(&path)
                    && let Ok(bytes) = crate::paths::read_checked(&r.abs, 4 * 1024 * 1024)
                    && let Ok(now) = String::from_utf8(bytes)
                    && tools::syntax::parses(&self.tools, &path, &now, cancel).await == Some(false)
                {
                    self.notice(
                        Level::Warning,
                        format!("{path} does not parse; it stays as you approved it (/undo takes the change back)"),
                    );
                }
                continue;
            }
            let Some(versions) = st.versions.get(&path).cloned() else {
                continue;
            };
            let Ok(r) = self.tools.sandbox.check_read(&path) else {
                continue;
            };
            let Ok(bytes) = crate::paths::read_checked(&r.abs, 4 * 1024 * 1024) else {
                continue;
            };
            let Ok(now) = String::from_utf8(bytes) else {
                continue;
            };
            // Checked clean as the last change left it, and not changed
            // since (by a command): nothing to ask the parser.
            if versions.last().is_some_and(|v| **v == *now)
                && st.checks.get(&path).is_some_and(|c| c.errors == 0)
            {
                continue;
            }
            // The file as it is (a command may have changed it since).
            let Some(false) = tools::syntax::parses(&self.tools, &path, &now, cancel).await else {
                continue;
            };
            let mut good = None;
            for (i, v) in versions.iter().enumerate().rev() {
                if **v == *now || (i == 0 && v.is_empty()) {
                    continue;
                }
                if tools::syntax::parses(&self.tools, &path, v, cancel).await == Some(true) {
                    good = Some((i, v.clone()));
                    break;
                }
            }
            let Some((i, content)) = good else {
                continue;
            };
            let which = if i == 0 {
                "as the turn found it".to_string()
            } else {
                format!("as change {i} of this turn left it")
            };
            let label = format!("put back {path}: it does not parse");
            if !self
                .own_write_with(st, &path, content.to_string(), &label, true, cancel)
                .await
            {
                continue;
            }
            self.notice(
                Level::Warning,
                format!(
                    "{path} did not parse at the end of the turn: mm put it back {which} (/undo brings the broken version back)"
                ),
            );
            self.carry(format!(
                "[mm: at the end of the last turn {path} did not parse, so mm put it back {which}; the edits after that are gone. Read it again before you edit it.]"
            ));
        }
    }

    /// A change after which the request's command, which passed, fails
    /// again: mm puts the file back as it was and runs the checks again.
    /// Returns what to tell the model; None when it could not.
    pub(super) async fn roll_back(
        &mut self,
        st: &mut TurnState,
        change: &crate::protocol::FileChange,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if change.kind != crate::protocol::ChangeKind::Modified {
            return None;
        }
        let command = st.repro.clone()?;
        let label = format!("undo the change to {}", change.path);
        if !self
            .own_write(st, &change.path, change.before.to_string(), &label, cancel)
            .await
        {
            return None;
        }
        self.notice(
            Level::Warning,
            format!(
                "`{command}` passed before the change to {} and fails after it: put the file back",
                change.path
            ),
        );
        let now = match self.run_checks(st, cancel).await {
            None => format!("`{command}` passes again"),
            Some(_) => format!("`{command}` still fails"),
        };
        Some(format!(
            "\n[mm undid this change: `{command}` passed before it and failed after it. {} is as it was before the change and {now}. The request is done unless it asks for more: then answer.]",
            change.path
        ))
    }

    /// Makes the one-line fix a probe found (`st.fix`), as a write of
    /// mm's own (approval, checks and a tool card as for the model's), when
    /// the line is still as the probe saw it, and runs the checks again.
    /// Returns what to tell the model; None when nothing was changed.
    /// The fix `value_trace` found, made (see `make_fix`) or, when the
    /// line has changed since, as a note for the model; or nothing.
    async fn fix_text(&mut self, st: &mut TurnState, cancel: &CancellationToken) -> String {
        match self.make_fix(st, cancel).await {
            Some(made) => made,
            None => st
                .fix
                .as_ref()
                .map(|f| format!("\n{} If that is the fix, make it with edit_file.", f.note))
                .unwrap_or_default(),
        }
    }

    pub(super) async fn make_fix(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fix = st.fix.clone()?;
        let r = self.tools.sandbox.check_read(&fix.file).ok()?;
        let bytes = crate::paths::read_checked(&r.abs, 1024 * 1024).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let mut lines: Vec<&str> = text.split('\n').collect();
        let at = fix.line.checked_sub(1)?;
        if lines.get(at).map(|l| l.trim_end_matches('\r')) != Some(fix.was.as_str()) {
            return None;
        }
        lines[at] = &fix.now;
        let content = lines.join("\n");
        let place = format!("{}:{}", fix.file, fix.line);
        if !self
            .own_write(st, &fix.file, content, &format!("fix {place}"), cancel)
            .await
        {
            return None;
        }
        st.fix = None;
        self.notice(
            Level::Info,
            format!("made the one-line fix found in the fence at {place}"),
        );
        let made = format!(
            "[mm found a fix by trying small changes in the fence, and made it: {place} is now `{}`.",
            fix.now.trim()
        );
        Some(match self.run_checks(st, cancel).await {
            None => match st.tests.as_ref() {
                Some(t) => format!(
                    "\n{made} `{}` passes now ({}). Do not change {place} again: check the change and answer.]",
                    t.command, t.summary
                ),
                None => format!("\n{made}]"),
            },
            Some((command, out)) => {
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!("\n{made} `{command}` still fails:]\n{lines}")
            }
        })
    }

    /// Starts the tool card of something the harness runs, shown as a
    /// command line: the call id and summary to finish it with.
    fn card_start(&self, st: &mut TurnState, command: &str) -> (String, String) {
        let mut card = Map::new();
        card.insert("command".into(), Value::String(command.to_string()));
        let summary = tools::summary(ToolName::Bash.as_str(), &card);
        let arguments = json!({"command": command}).to_string();
        self.card_start_as(st, ToolName::Bash.as_str(), summary, arguments)
    }

    /// Starts the tool card of a call the harness makes itself, under the
    /// tool's name, with `summary` saying why.
    fn card_start_as(
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
    fn card_finish(&self, call_id: String, summary: String, status: ToolStatus, output: &str) {
        self.card_finish_as(ToolName::Bash.as_str(), call_id, summary, status, output);
    }

    fn card_finish_as(
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
            match self.record_command_changes(before).await {
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
        let ask = harness::restate(&st.prompt);
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

    /// What this turn read: the request with its attachments and every
    /// tool result since.
    fn turn_evidence(&self) -> String {
        let start = self.turn_starts.last().map(|i| i + 1).unwrap_or(1);
        // The request, then tool results: not the harness's own messages
        // (a follow-up quoting the number would vouch for it).
        self.messages
            .iter()
            .skip(start)
            .enumerate()
            .filter(|(i, m)| *i == 0 || m.role == crate::llm::Role::Tool)
            .map(|(_, m)| m.text())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Where names this turn removed are still used.
    fn left_references(&self, st: &TurnState) -> Vec<(String, String, Vec<String>)> {
        // Removed as the file is now: a later change (or mm putting an
        // earlier version back) may have brought the definition back.
        let names: Vec<String> = st
            .removed
            .iter()
            .filter(|(n, f)| {
                self.content_now(f)
                    .is_none_or(|now| !tools::guard::definitions(&now).contains(n))
            })
            .map(|(n, _)| n.clone())
            .collect();
        tools::guard::references(self.tools.sandbox.root(), &names, "")
            .into_iter()
            .map(|(name, hits)| {
                let file = st
                    .removed
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, f)| f.clone())
                    .unwrap_or_default();
                (name, file, hits)
            })
            .collect()
    }

    /// Counts a follow-up and says why to the user.
    fn tell(&self, st: &mut TurnState, level: Level, why: impl Into<String>) {
        st.follow_ups += 1;
        self.notice(level, why.into());
    }

    /// The follow-up a finished answer needs, if any: checked against what
    /// the turn did. None ends the turn.
    pub(super) async fn check_ending(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, Stop> {
        let ask = harness::restate(&st.prompt);
        let can_edit = self.specs.iter().any(|s| s.name == ToolName::EditFile);
        if st.follow_ups >= MAX_FOLLOW_UPS {
            return Ok(None);
        }
        let mut f = EndingFacts {
            can_edit,
            unchanged: false,
            idle: false,
            whole_left: false,
        };
        // Each rule says what goes back to the model, or None to go on;
        // the first that has something to say wins.
        macro_rules! rule {
            ($name:ident) => {
                if let Some(text) = self.$name(st, cancel, &ask, &f).await? {
                    return Ok(Some(text));
                }
            };
        }
        rule!(ending_reask);
        rule!(ending_left_references);
        if let Some(text) = self.verify_step(st, cancel, false).await {
            return Ok(Some(text));
        }
        // Nothing changed in this turn: no write succeeded and no command
        // changed a file (the harness's own runs of the failing command
        // are not changes).
        f.unchanged = st.written.is_empty() && st.command_changes.is_empty() && st.mutations == 0;
        // Nothing changed because a person said no (or nobody could be
        // asked): theirs to decide, so nothing presses for the change.
        f.idle = f.unchanged && !st.declined;
        rule!(ending_claimed_change);
        // A function or method the request asks to add that its file does
        // not define (or, in JavaScript, does not export): not done.
        f.whole_left = self.on(crate::config::Behaviour::Stall) && !st.stall_tried;
        rule!(ending_missing_parts);
        rule!(ending_fix_owed);
        rule!(ending_claims);
        rule!(ending_exit_zero);
        rule!(ending_answers);
        Ok(None)
    }

    /// The answer is empty or only echoes an instruction, or the
    /// language server has something to say.
    async fn ending_reask(
        &mut self,
        st: &mut TurnState,
        _cancel: &CancellationToken,
        ask: &str,
        _f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        if st.answer.trim().is_empty() && !st.reasked {
            st.reasked = true;
            self.tell(
                st,
                Level::Info,
                "the model's answer was empty; asking again",
            );
            // mm's own change settled the request: the answer is asked
            // for again without tools, as it was the first time.
            if st.settled {
                st.answer_next = true;
                return Ok(Some(format!(
                    "Your reply was empty.\n{ask}\nThe change is made and checked. Answer in words now: what changed, and how it was checked. No tool calls."
                )));
            }
            return Ok(Some(format!(
                "Your reply was empty.\n{ask}\nAnswer it now, or make the change with a tool call."
            )));
        }
        if !st.reasked && harness::echoes_instruction(&st.answer) {
            st.reasked = true;
            self.tell(
                st,
                Level::Info,
                "the model's answer only repeated mm's instruction; asking again",
            );
            return Ok(Some(format!(
                "Your reply repeated an instruction instead of answering.\n{ask}\nAnswer it now, from what the tools returned."
            )));
        }
        if let Some(text) = self.lsp_follow_up(st) {
            st.follow_ups += 1;
            return Ok(Some(format!("{text}\n{ask}")));
        }
        Ok(None)
    }

    /// A name the turn removed is still used elsewhere.
    async fn ending_left_references(
        &mut self,
        st: &mut TurnState,
        _cancel: &CancellationToken,
        ask: &str,
        _f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        if !st.told_refs && !st.removed.is_empty() {
            let left = self.left_references(st);
            if !left.is_empty() {
                st.told_refs = true;
                st.follow_ups += 1;
                let lines: Vec<String> = left
                    .iter()
                    .map(|(name, file, hits)| {
                        format!(
                            "{file} no longer defines {name}, but it is still used at {}",
                            hits.join(", ")
                        )
                    })
                    .collect();
                self.notice(
                    Level::Warning,
                    format!("{}; asking the model to update them", lines.join("; ")),
                );
                return Ok(Some(format!(
                    "{}.\nUpdate every one of those places (read_file, then edit_file) so nothing uses the old name.\n{ask}",
                    lines.join(".\n")
                )));
            }
        }
        Ok(None)
    }

    /// The model says it changed something, and nothing was written.
    async fn ending_claimed_change(
        &mut self,
        st: &mut TurnState,
        _cancel: &CancellationToken,
        ask: &str,
        f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        if f.can_edit
            && !st.question
            && f.unchanged
            && !st.told_claim
            && batch::claims_a_change(&st.answer)
        {
            st.told_claim = true;
            self.tell(st,
                Level::Warning,
                "the model says it changed something, but no file was written in this turn; asking it to act or correct itself",
            );
            return Ok(Some(format!(
                "You said you changed something, but nothing was written in this turn: no write_file or edit_file call succeeded and no command changed a file.\n{ask}\nMake the change now with a tool call, or say plainly that nothing was changed."
            )));
        }
        Ok(None)
    }

    /// What the request asks to add, or spelled out, is not in any file yet.
    async fn ending_missing_parts(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        ask: &str,
        f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        if f.can_edit && (!st.told_spelled || f.whole_left) && !st.question && !st.declined {
            let sources = self.sources_now();
            let mut missing = Vec::new();
            for (name, file) in harness::asked_definitions(&st.prompt) {
                let Some(file) = file else { continue };
                let Some((_, text)) = sources.iter().find(|(p, _)| *p == file) else {
                    continue;
                };
                if !tools::guard::definitions(text).contains(&name) {
                    missing.push(format!("{file} does not define {name} yet"));
                } else if st.prompt.to_lowercase().contains("export")
                    && let Some(problem) =
                        tools::probe::js_export_problem(&self.tools, &file, &name, cancel).await
                {
                    missing.push(format!("{file} defines {name}, but {problem}"));
                }
            }
            if !missing.is_empty() && st.told_spelled {
                // Told once and still missing: the file asked for whole.
                if let Some(text) = self
                    .deliver_whole(
                        st,
                        &format!("{} after the model was told", missing.join("; ")),
                        cancel,
                    )
                    .await
                {
                    st.follow_ups += 1;
                    return Ok(Some(text));
                }
            } else if !missing.is_empty() {
                st.told_spelled = true;
                let list = missing.join("; ");
                self.tell(st, Level::Warning, format!("{list}; telling the model"));
                return Ok(Some(format!(
                    "The request is not done: {list}.\n{ask}\nMake that change now with edit_file (read_file the file first), then answer."
                )));
            }
        }
        // The request spelled out code (`sep=" | "`) that no file has yet:
        // a part of it is not done.
        if f.can_edit && !st.told_spelled && !st.spelled.is_empty() {
            let sources = self.sources_now();
            // In the file the request named for it, when it named one
            // that exists; anywhere otherwise.
            let missing: Vec<String> = st
                .spelled
                .iter()
                .filter(|(file, c)| {
                    let holds = |p: &str| file.as_deref().is_none_or(|f| f == p);
                    let named = file
                        .as_deref()
                        .is_some_and(|f| sources.iter().any(|(p, _)| p == f));
                    !sources
                        .iter()
                        .any(|(p, t)| (holds(p) || !named) && harness::has_code(t, c))
                })
                .map(|(file, c)| match file {
                    Some(f) => format!("`{c}` in {f}"),
                    None => format!("`{c}`"),
                })
                .collect();
            if !missing.is_empty() {
                st.told_spelled = true;
                let list = missing.join(", ");
                self.tell(
                    st,
                    Level::Warning,
                    format!(
                        "the request asks for {list}, which no file has yet; telling the model"
                    ),
                );
                return Ok(Some(format!(
                    "The request asks for {list}, but no file has it yet: that part of the request is not done.\n{ask}\nMake that change now with edit_file (read_file the file first), then answer."
                )));
            }
        }
        Ok(None)
    }

    /// Asked for a fix, the turn ends with nothing written or still failing.
    async fn ending_fix_owed(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        ask: &str,
        f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        // Asked for a fix, the model stops with nothing written and nothing
        // checked in this turn: the project's tests say whether the fix
        // is still owed; their failure goes back with what mm found.
        if f.can_edit
            && !st.question
            && !st.told_unfinished
            && f.idle
            && st.tests.is_none()
            && harness::asks_for_fix(&st.prompt)
            && let Some((command, out)) = self.run_checks(st, cancel).await
            && out.status == ToolStatus::Error
        {
            st.told_unfinished = true;
            st.told_claim = true;
            let summary = st
                .tests
                .as_ref()
                .map(|t| t.summary.clone())
                .unwrap_or_default();
            self.tell(
                st,
                Level::Warning,
                format!("the model stopped with nothing written and `{command}` fails ({summary}); telling it"),
            );
            let lines = self.failure_lines(&out.text);
            st.last_failure = Some(lines.clone());
            let trace = self.value_trace(st, &command, &out.text, cancel).await;
            // A one-line fix the fence finds is made, as before a turn.
            let made = self.fix_text(st, cancel).await;
            let next = if st.tests.as_ref().is_some_and(|t| t.passed == Some(true)) {
                "Check that change and answer."
            } else {
                "Make the change now with edit_file, or say plainly why you cannot."
            };
            return Ok(Some(format!(
                "Nothing was written in this turn and `{command}` fails:\n{lines}{trace}{made}\n{ask}\n{next}"
            )));
        }
        // Asked for a fix, the model stops with nothing written while what
        // the request says fails still fails: not done, whatever it says.
        if f.can_edit
            && !st.question
            && !st.told_unfinished
            && f.idle
            && let Some(t) = st.tests.as_ref().filter(|t| t.passed == Some(false))
        {
            st.told_unfinished = true;
            st.told_claim = true;
            let facts = format!("`{}` still fails ({})", t.command, t.summary);
            self.tell(
                st,
                Level::Warning,
                format!("the model stopped with nothing written and {facts}; telling it"),
            );
            let hint = st
                .fix
                .as_ref()
                .map(|f| format!("\n{}", f.note))
                .unwrap_or_default();
            return Ok(Some(format!(
                "Nothing was written in this turn and {facts}: the request is not done.{hint}\n{ask}\nMake the change now with edit_file, or say plainly why you cannot."
            )));
        }
        // An edit task that ends with nothing changed, told once already:
        // the file asked for whole, as text, so the turn still delivers.
        if f.can_edit
            && f.idle
            && self.edit_task(st)
            && harness::asks_for_change(&st.prompt)
            && self.on(crate::config::Behaviour::Stall)
            && !st.stall_tried
        {
            if !st.told_claim {
                st.told_claim = true;
                self.tell(
                    st,
                    Level::Warning,
                    "the request asks for a change and nothing was written in this turn; telling the model",
                );
                return Ok(Some(format!(
                    "Nothing was written in this turn: no write_file or edit_file call succeeded, and the request asks for a change.\n{ask}\nMake the change now with edit_file (or write_file for a new file)."
                )));
            }
            if let Some(text) = self
                .deliver_whole(st, "the model ended without writing anything", cancel)
                .await
            {
                st.follow_ups += 1;
                return Ok(Some(text));
            }
        }
        Ok(None)
    }

    /// Claims of passing tests, arithmetic and answers that the tools
    /// do not bear out.
    async fn ending_claims(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        ask: &str,
        _f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        if !st.told_tests_claim
            && harness::claims_tests_pass(&st.answer)
            && let Some(t) = st.tests.as_ref().filter(|t| t.passed == Some(false))
        {
            st.told_tests_claim = true;
            st.follow_ups += 1;
            let facts = format!("`{}` fails ({})", t.command, t.summary);
            self.notice(
                Level::Warning,
                format!("the model says the tests pass, but {facts}; telling it"),
            );
            return Ok(Some(format!(
                "You said the tests pass, but {facts}: they do not pass.\n{ask}\nFix the code with tool calls, or say plainly that the tests still fail."
            )));
        }
        if !st.told_tests_claim
            && harness::claims_tests_pass(&st.answer)
            && st.model_checked.is_none()
            && st.checked_at != Some(st.changes())
        {
            st.told_tests_claim = true;
            if st.verify.is_some() || st.repro.is_some() {
                if let Some(text) = self.verify_step(st, cancel, true).await {
                    return Ok(Some(text));
                }
            } else {
                self.tell(st,
                    Level::Warning,
                    "the model says tests pass, but none ran in this turn; asking it to run them or say so",
                );
                return Ok(Some(format!(
                    "You said the tests pass, but no test ran in this turn. Run them with the bash tool, or say plainly that they were not run.\n{ask}"
                )));
            }
        }
        if !st.told_arithmetic {
            let wrong = harness::wrong_arithmetic(&st.answer);
            if !wrong.is_empty() {
                st.told_arithmetic = true;
                st.computed.push_str(&wrong.join("\n"));
                self.tell(
                    st,
                    Level::Info,
                    format!(
                        "the answer's arithmetic is wrong ({}); asking again",
                        wrong.join("; ")
                    ),
                );
                return Ok(Some(format!(
                    "Check your arithmetic: {}. Correct the answer.\n{ask}",
                    wrong.join("; ")
                )));
            }
        }
        if !st.told_grounding && st.question && st.used_tools {
            let missing = harness::ungrounded_numbers(
                &st.answer,
                &format!("{}\n{}", self.turn_evidence(), st.computed),
            );
            if !missing.is_empty() {
                st.told_grounding = true;
                st.follow_ups += 1;
                let list = missing.join(", ");
                self.notice(
                    Level::Info,
                    format!("the answer gives {list}, found in nothing read this turn; asking the model to check"),
                );
                // Where the values the read code uses come from, when that
                // file was not read: the concrete next step.
                let next = match self.tools.unread_imports().first() {
                    Some((file, by, names)) if !names.is_empty() => format!(
                        " {by} takes {} from {file}, which you have not read: read_file {file}.",
                        names.join(", ")
                    ),
                    Some((file, by, _)) => {
                        format!(
                            " {by} imports from {file}, which you have not read: read_file {file}."
                        )
                    }
                    None => String::new(),
                };
                return Ok(Some(format!(
                    "Your answer gives {list}, but that appears nowhere in what was read in this turn.{next} Check it: find where the value is defined (grep, read_file the file it comes from) and answer again. If you computed it, show how.\n{ask}"
                )));
            }
        }
        if !st.reasked && st.question && harness::non_answer(&st.answer) {
            st.reasked = true;
            self.tell(
                st,
                Level::Info,
                "the answer does not answer the question; asking again",
            );
            return Ok(Some(format!(
                "That does not answer the question.\n{ask}\nAnswer it directly, in text, from what you read."
            )));
        }
        if !st.reasked && st.used_tools {
            let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_ref()).collect();
            if harness::talks_about_tools(&st.answer, &names) {
                st.reasked = true;
                self.tell(
                    st,
                    Level::Info,
                    "the answer describes a tool call instead of answering; asking again",
                );
                return Ok(Some(format!(
                    "That reply describes a tool call; it does not answer.\n{ask}\nAnswer it directly, using what the tools returned."
                )));
            }
        }
        Ok(None)
    }

    /// A failing command now exits 0, and checks written from the request.
    async fn ending_exit_zero(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        ask: &str,
        f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        // The command the request said fails exits 0 now: exit 0 is not
        // the task's success. The model sees what it printed and is asked
        // whether that is what the request expects; a change that only
        // catches, defaults or deletes is asked about the cause.
        if f.can_edit
            && !st.told_exit0
            && !st.question
            && self.on(crate::config::Behaviour::Exit0)
            && let Some(command) = st.repro.clone()
            && (st.first_failure.is_some() || st.repro_before.is_some())
            && st
                .tests
                .as_ref()
                .is_some_and(|t| t.command == command && t.passed == Some(true))
            && !st.written.is_empty()
            && let Some(printed) = st.repro_output.clone()
        {
            let failure = st.first_failure.clone().unwrap_or_default();
            let hiding: Vec<String> = st
                .written
                .iter()
                .filter(|_| !failure.is_empty())
                .filter_map(|p| {
                    let v = st.versions.get(p)?;
                    let how = harness::hides_symptom(v.first()?, v.last()?)?;
                    Some(format!("{p}: the change {how}"))
                })
                .collect();
            // mm's own fix, found by trying small changes: not asked about
            // unless it hides the failure.
            if !(st.settled && hiding.is_empty()) {
                st.told_exit0 = true;
                let error = failure
                    .lines()
                    .rev()
                    .find(|l| {
                        ["Error", "Exception", "panicked", "error"]
                            .iter()
                            .any(|w| l.contains(w))
                    })
                    .unwrap_or("")
                    .trim()
                    .to_string();
                self.tell(
                st,
                Level::Info,
                format!(
                    "`{command}` exits 0 now; asking whether its output is what the request expects{}",
                    if hiding.is_empty() { String::new() } else { format!(" ({})", hiding.join("; ")) }
                ),
            );
                let question = if hiding.is_empty() {
                    String::new()
                } else {
                    format!(
                        "\n{}. That can hide the error instead of fixing what caused it. The error was: {error}. Does the change fix that cause? If the value was wrong or misnamed, fix it where it comes from.",
                        hiding.join("; ")
                    )
                };
                // It exited 0 before the change too: its output is all
                // there is to judge by, before beside after.
                let before = match st.repro_before.as_deref() {
                    Some(b) if b == printed => {
                        "\nThat is exactly what it printed before your change.".to_string()
                    }
                    Some(b) => format!("\nBefore your change it printed:\n```\n{b}\n```"),
                    None => String::new(),
                };
                return Ok(Some(format!(
                    "`{command}` exits 0 now, and exit 0 alone does not mean the task is done. It printed:\n```\n{printed}\n```{before}{question}\nIs that output what the request expects? If it is, give your answer; if not, fix the cause with edit_file.\n{ask}"
                )));
            }
        }
        // A change with no test to run: checks written from the request's
        // own words, run against it.
        if f.can_edit
            && let Some(text) = self.request_checks(st, cancel).await
        {
            st.follow_ups += 1;
            return Ok(Some(text));
        }
        Ok(None)
    }

    /// A question answered with other output, or without the value mm
    /// knows; a step announced and not taken.
    async fn ending_answers(
        &mut self,
        st: &mut TurnState,
        _cancel: &CancellationToken,
        ask: &str,
        _f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        // A question about what a command prints, answered with other
        // output than mm saw it print: back once, with the evidence.
        if !st.told_printed
            && st.question
            && self.on(crate::config::Behaviour::Evidence)
            && let Some((command, printed)) = st.printed.clone()
            && !harness::quotes_output(&st.answer, &printed)
        {
            st.told_printed = true;
            self.tell(
                st,
                Level::Info,
                format!("the answer does not quote what `{command}` printed; asking again with the output"),
            );
            return Ok(Some(format!(
                "mm ran `{command}`; it printed exactly this:\n```\n{printed}\n```\nYour answer does not give that output. Answer again from it, quoting the output exactly.\n{ask}"
            )));
        }
        // A question whose answer mm already knows (it ran the call) or
        // that asks for a number, answered without it.
        if !st.told_value && st.question {
            let missing = match &st.probed {
                Some((call, v)) if !harness::states_value(&st.answer, v) => Some(format!(
                    "mm ran {call} and it returns {v}, but your answer does not say what it returns."
                )),
                None if harness::wants_number(&st.prompt)
                    && !st.answer.chars().any(|c| c.is_ascii_digit()) =>
                {
                    Some("The question asks for a number, and your answer gives none.".to_string())
                }
                // Asked for the number only, a small model tells the story
                // of how it counted, numbers of the code included.
                _ if harness::asks_number_only(&st.prompt)
                    && !harness::is_bare_number(&st.answer) =>
                {
                    Some("The request asks for the number only; reply with that number and nothing else.".to_string())
                }
                _ => None,
            };
            if let Some(why) = missing {
                st.told_value = true;
                self.tell(
                    st,
                    Level::Info,
                    "the answer does not give what the question asks for; asking again",
                );
                return Ok(Some(format!(
                    "{why} Answer the question itself, briefly.\n{ask}"
                )));
            }
        }
        if st.nudges < MAX_NUDGES && batch::announces_next_step(&st.answer) {
            st.nudges += 1;
            self.tell(
                st,
                Level::Info,
                "the model announced a step without taking it; asking it to go on",
            );
            return Ok(Some(format!(
                "Go on: take that step now with a tool call. If the task is already finished, give your final answer.\n{ask}"
            )));
        }
        Ok(None)
    }

    /// However the turn ended, the answer the user reads does not stand
    /// against the facts: output it misquotes gets the output mm saw
    /// after it, a value it leaves out that mm got by running the call
    /// is given, and a claim of files written or tests passing that the
    /// receipt contradicts gets the receipt's words.
    pub(super) fn hold_to_evidence(&self, st: &mut TurnState) {
        if !self.on(crate::config::Behaviour::Evidence) {
            return;
        }
        let mut notes: Vec<String> = Vec::new();
        if st.question
            && let Some((command, printed)) = &st.printed
            && !harness::quotes_output(&st.answer, printed)
        {
            notes.push(format!(
                "mm ran `{command}`; it printed:\n```\n{printed}\n```"
            ));
        }
        // What a call returns, which mm ran and the answer does not say.
        if st.question
            && let Some((call, value)) = &st.probed
            && !harness::states_value(&st.answer, value)
        {
            notes.push(format!("mm ran `{call}`: it returns {value}"));
        }
        if !st.question
            && st.written.is_empty()
            && st.commands == 0
            && batch::claims_a_change(&st.answer)
        {
            notes.push("mm: no file was written in this turn.".to_string());
        } else if harness::claims_tests_pass(&st.answer)
            && let Some(t) = st.tests.as_ref().filter(|t| t.passed == Some(false))
        {
            notes.push(format!("mm: `{}` fails ({}).", t.command, t.summary));
        } else if harness::claims_it_works(&st.answer)
            && let Some((failed, total)) = st.request_checks_failing()
        {
            notes.push(format!(
                "mm: {failed} of the {total} checks mm wrote from the request fail on the code as it is."
            ));
        }
        if notes.is_empty() {
            return;
        }
        if !st.answer.trim().is_empty() {
            st.answer.push_str("\n\n");
        }
        st.answer.push_str(&notes.join("\n"));
    }

    /// Claims the facts contradict, said to the user and kept for the
    /// receipt and `-json`.
    pub(super) fn flag_unbacked(&self, st: &mut TurnState) {
        let mut flags = Vec::new();
        if harness::echoes_instruction(&st.answer) {
            flags.push("the answer only repeats mm's instruction; it answers nothing".to_string());
        }
        if !st.question
            && st.written.is_empty()
            && st.commands == 0
            && batch::claims_a_change(&st.answer)
        {
            flags.push("the answer says files were changed, but none was written".to_string());
        }
        // Files written, but not the one the answer says it changed (and
        // no command ran that could have).
        if !st.written.is_empty() && st.commands == 0 {
            let root = self.tools.sandbox.root();
            for f in harness::claimed_files(&st.answer) {
                let named = |w: &String| *w == f || w.ends_with(&format!("/{f}"));
                if !st.written.iter().any(named) && root.join(&f).is_file() {
                    flags.push(format!(
                        "the answer says {f} was changed, but this turn wrote {} and not it",
                        st.written.join(", ")
                    ));
                }
            }
        }
        if harness::claims_tests_pass(&st.answer) {
            match &st.tests {
                Some(t) if t.passed == Some(false) => flags.push(format!(
                    "the answer says the tests pass, but `{}` fails ({})",
                    t.command, t.summary
                )),
                Some(t) if t.passed.is_none() => flags.push(format!(
                    "the answer says the tests pass, but `{}` ran no test",
                    t.command
                )),
                None if st.model_checked.is_none() => {
                    flags.push("the answer says the tests pass, but no test ran".to_string());
                }
                _ => {}
            }
        }
        if harness::claims_it_works(&st.answer)
            && let Some((failed, total)) = st.request_checks_failing()
        {
            flags.push(format!(
                "the answer says the change works, but {failed} of the {total} checks from the request fail"
            ));
        }
        if let Some((call, v)) = &st.probed
            && st.question
            && !harness::states_value(&st.answer, v)
        {
            flags.push(format!(
                "the answer does not give what {call} returns ({v})"
            ));
        }
        for w in harness::wrong_arithmetic(&st.answer) {
            flags.push(format!("the answer's arithmetic is wrong: {w}"));
        }
        if st.question && st.used_tools {
            let missing = harness::ungrounded_numbers(
                &st.answer,
                &format!("{}\n{}", self.turn_evidence(), st.computed),
            );
            if !missing.is_empty() {
                flags.push(format!(
                    "the answer gives {}, found in nothing read this turn",
                    missing.join(", ")
                ));
            }
        }
        for (name, file, hits) in self.left_references(st) {
            flags.push(format!(
                "{name} was removed from {file} but is still used at {}",
                hits.join(", ")
            ));
        }
        for f in &flags {
            self.notice(Level::Warning, format!("unbacked: {f}"));
        }
        st.unbacked = flags;
    }
}

/// What a command printed, without mm's own lines (the exit code), cut
/// to a few kilobytes.
pub(super) fn printed_output(output: &str) -> String {
    let body: Vec<&str> = output
        .lines()
        .filter(|l| !(l.starts_with("[exit code") && l.ends_with(']')))
        .collect();
    let text = body.join("\n");
    let text = text.trim_end_matches('\n');
    if text.len() <= 4096 {
        return text.to_string();
    }
    let mut cut = 4096;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n[… cut]", &text[..cut])
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
