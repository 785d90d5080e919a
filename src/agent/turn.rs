//! The turn: its rounds of request and tool batch, the checks between them,
//! and the report at its end.

use super::*;

impl Agent {
    /// Runs one user turn to its end.
    pub async fn run_turn(&mut self, prompt: &str, cancel: &CancellationToken) -> TurnResult {
        self.turn += 1;
        let turn = self.turn;
        self.bus.publish(AgentEvent::TurnStarted {
            turn,
            prompt: prompt.to_string(),
        });
        if let Some(why) = self.oversized(prompt) {
            self.bus.publish(AgentEvent::TurnFinished {
                turn,
                outcome: Outcome::Failed,
                answer: String::new(),
                error: Some(why.clone()),
            });
            return TurnResult {
                turn,
                outcome: Outcome::Failed,
                answer: String::new(),
                written: Vec::new(),
                changed_by_commands: Vec::new(),
                warnings: Vec::new(),
                error: Some(why),
                tests: None,
                unbacked: Vec::new(),
                requests: 0,
                usage: Default::default(),
            };
        }
        let mut state = TurnState {
            prompt: prompt.to_string(),
            piped: std::mem::take(&mut self.piped_next),
            ..TurnState::default()
        };
        self.task = prompt.to_string();
        self.tool_warnings.clear();
        // A dead MCP server's tools are no longer offered.
        if let Some(m) = self.tools.mcp.clone() {
            self.specs
                .retain(|s| m.find(&s.name).is_none() || m.alive(&s.name));
        }
        let usage_before = self.usage;
        let requests_before = self.budget.used();
        self.checkpoint(crate::git::Kind::Turn, prompt).await;
        for f in harness::named_files(prompt) {
            if focus::has_definitions(&f)
                && let Some(text) = self.content_now(&f)
            {
                state.originals.insert(f, text);
            }
        }
        // What mm found and did before the model's first look; the files
        // are attached after it, as they are then.
        let mut found = String::new();
        if self.harness_on() {
            self.plan_checks(&mut state);
            state.text_only = harness::asks_for_text(&state.prompt, state.question && state.piped);
            state.answer_in_text = state.text_only && state.piped;
            if let Some(f) = self.reproduce(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.probe(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.mechanical_rename(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.mechanical_extract(&mut state, cancel).await {
                found.push_str(&f);
            }
            if let Some(f) = self.focused_change(&mut state, cancel).await {
                found.push_str(&f);
            }
            // `editFormat: whole`: the files the request is about, asked
            // for in full as text before the model's first look.
            let up_front = match self.settings.edit_format {
                crate::config::EditFormat::Tools => false,
                crate::config::EditFormat::Auto => {
                    harness::adds_code(&state.prompt) && state.repro.is_none()
                }
                _ => true,
            };
            if up_front
                && state.mutations == 0
                && !state.settled
                && self.edit_task(&state)
                && let Some(f) = self
                    .deliver_whole(
                        &mut state,
                        &format!("editFormat is {}", self.settings.edit_format.as_str()),
                        cancel,
                    )
                    .await
            {
                found.push_str("\n\n");
                found.push_str(&f);
            }
        }
        let (mut text, mut attached) = self.with_attachments(prompt);
        // A question about the project that names no file: the README is
        // where a newcomer looks first, and where the answer usually is.
        if self.harness_on()
            && state.question
            && attached.is_empty()
            && let Some((name, body)) = self.readme_head()
        {
            self.notice(Level::Info, format!("attached {name}"));
            text.push_str(&format!(
                "\n\n[{name} as it is now, for context; it counts as read]\n{body}"
            ));
            self.tools.note_read(&name);
            attached.push(name);
        }
        text.push_str(&found);
        for note in std::mem::take(&mut self.carried) {
            // (logged with this message; the Turn record ends them)
            text.push_str(&format!("\n\n{note}"));
        }
        // A question about files that are attached in full: the answer is
        // in front of the model, which otherwise wanders off with tools.
        if self.harness_on()
            && state.question
            && !state.settled
            && !attached.is_empty()
            && !harness::named_files(prompt).is_empty()
            && harness::named_files(prompt)
                .iter()
                .all(|f| attached.contains(f))
        {
            state.settled = true;
            let (verb, them) = if attached.len() == 1 {
                ("is", "it")
            } else {
                ("are", "them")
            };
            text.push_str(&format!(
                "\n\nNo tool call is needed: {} {verb} above; answer from {them}.",
                attached.join(", ")
            ));
        }
        let message = Message::user(text);
        let logged = self
            .log
            .append(&Record::Turn { turn })
            .and_then(|()| self.log.append_prompt(&message, prompt));
        if logged.is_ok() {
            self.turn_starts.push(self.messages.len() - 1);
            self.messages.push(message);
            for path in &attached {
                self.note_shown(&mut state, path, 0);
            }
        }
        let (outcome, error) = match logged {
            Err(e) => (Outcome::Failed, Some(e.to_string())),
            Ok(()) => match self.rounds(&mut state, cancel).await {
                Ok(outcome) => (outcome, None),
                Err(Stop::Outcome(o, e)) => (o, e),
                Err(Stop::Log(e)) => (Outcome::Failed, Some(e.to_string())),
                Err(Stop::Loop(why)) => (Outcome::Budget, Some(why)),
                Err(Stop::Runaway(how)) => (
                    Outcome::Failed,
                    Some(format!("the model's replies kept running away ({how})")),
                ),
                Err(Stop::BadReply(why)) => (
                    Outcome::Failed,
                    Some(format!(
                        "the model's tool calls kept failing to parse ({why})"
                    )),
                ),
            },
        };
        let error = error.or(state.stopped.take());
        if outcome != Outcome::Cancelled
            && let Some(hook) = self.settings.hooks.turn_end.clone()
            && let Some(failed) = self.run_hook("turnEnd", &hook, cancel).await
        {
            self.carry(failed);
        }
        // A file this turn left unparsable goes back to its last version
        // that parses (the broken one stays in the checkpoints).
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.restore_unparsable(&mut state, cancel).await;
            self.restore_best(&mut state, cancel).await;
            self.settle_request_checks(&mut state, cancel).await;
        }
        self.publish_context();
        // However the turn ended (an answer, a stopped loop, a budget), the
        // user hears of errors it left, whatever the model's answer claims.
        self.warn_left_errors(&state);
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.flag_unbacked(&mut state);
            self.hold_to_evidence(&mut state);
        }
        let usage = self.usage.minus(&usage_before);
        let requests = self.budget.used().saturating_sub(requests_before);
        self.last_turn = Some((requests, usage));
        if state.used_tools || state.tests.is_some() || !state.unbacked.is_empty() {
            let mut notes = Vec::new();
            if let Some(t) = &state.tests {
                notes.push(t.receipt_words());
            }
            if !state.command_changes.is_empty() {
                notes.push(changed_words(&state.command_changes));
            }
            notes.extend(state.candidate_notes.iter().cloned());
            for u in &state.unbacked {
                notes.push(format!("unbacked claim: {u}"));
            }
            notes.push(format!(
                "{requests} request{}, {} prompt tokens ({} cached), {} generated",
                if requests == 1 { "" } else { "s" },
                usage.prompt,
                usage.cached,
                usage.completion
            ));
            self.bus.publish(AgentEvent::Receipt {
                turn,
                written: state.written.clone(),
                commands: state.commands,
                notes: notes.clone(),
            });
            if let Err(e) = self.log.append(&Record::Receipt {
                turn,
                written: state.written.clone(),
                commands: state.commands,
                notes,
            }) {
                self.notice(Level::Error, e.to_string());
            }
        }
        self.bus.publish(AgentEvent::TurnFinished {
            turn,
            outcome,
            answer: state.answer.clone(),
            error: error.clone(),
        });
        TurnResult {
            turn,
            outcome,
            answer: state.answer,
            written: state.written,
            changed_by_commands: state.command_changes,
            warnings: std::mem::take(&mut self.tool_warnings),
            error,
            tests: state.tests,
            unbacked: state.unbacked,
            requests,
            usage,
        }
    }

    pub(super) async fn rounds(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<Outcome, Stop> {
        let max_rounds = self.settings.max_rounds;
        let mut round = 0;
        loop {
            round += 1;
            st.round = round;
            // Fixed by mm before the model's first look, with nothing more
            // asked: the first reply is the answer, not more tool calls.
            let tools_on = !(st.answer_in_text
                || (st.settled && round == 1)
                || std::mem::take(&mut st.answer_next));
            // Every language server turned off: its tools are offered no
            // more (a small model kept calling them for their error).
            if self.specs.iter().any(|s| s.name.starts_with("lsp_"))
                && let Some(lsp) = self.lsp()
                && !lsp.usable().await
            {
                self.specs.retain(|s| !s.name.starts_with("lsp_"));
                tracing::info!("no language server left: the lsp tools are no longer offered");
            }
            let reply = match self.request(round, tools_on, cancel).await {
                Err(Stop::Runaway(how)) if st.runaways < 2 => {
                    st.runaways += 1;
                    self.notice(
                        Level::Warning,
                        format!("the reply ran away ({how}); stopped it and asking again"),
                    );
                    let mut again = format!(
                        "Your last reply ran away ({how}) and was stopped; nothing from it was used. Reply again, briefly: one tool call, or your answer.",
                    );
                    if self.harness_on() {
                        again.push('\n');
                        again.push_str(&harness::restate(&st.prompt));
                    }
                    self.push(Message::user(again))?;
                    if round >= max_rounds {
                        return self.final_report(st, round, cancel).await;
                    }
                    continue;
                }
                // The model wrote a call the server could not read. The
                // same request would get the same reply: the conversation
                // says what went wrong, and after two such rounds of an
                // edit task the file is asked for whole, as text.
                Err(Stop::BadReply(why)) if st.bad_rounds < MAX_BAD_REPLIES => {
                    st.bad_rounds += 1;
                    self.notice(
                        Level::Warning,
                        format!("the model's tool call could not be read ({why}); asking again"),
                    );
                    let mut again = String::from(
                        "Your last reply had a tool call whose arguments were not valid JSON (cut short or malformed), so nothing from it ran. Send one call with short, valid JSON arguments; to change a big file, make one small edit_file at a time.",
                    );
                    if self.harness_on() {
                        again.push('\n');
                        again.push_str(&harness::restate(&st.prompt));
                    }
                    self.push(Message::user(again))?;
                    if self.stalled(st)
                        && let Some(text) = self
                            .deliver_whole(st, "the tool calls kept failing to parse", cancel)
                            .await
                    {
                        self.push(Message::user(text))?;
                        st.read_rounds = 0;
                        st.history.clear();
                    }
                    if round >= max_rounds {
                        return self.final_report(st, round, cancel).await;
                    }
                    continue;
                }
                other => other?,
            };
            let recover_code = self.harness_on() && !st.question;
            let (msg, truncated) = self.assistant_message(reply, round, recover_code, tools_on);
            let calls = msg.tool_calls.clone();
            st.answer = msg.text().to_string();
            if calls.is_empty() {
                self.push(msg)?;
                if let Some(answers) = &self.structured {
                    // Only JSON of the declared shape is an answer.
                    return match answers.check(&st.answer, truncated) {
                        Ok(()) => Ok(Outcome::Done),
                        Err(why) => {
                            st.answer.clear();
                            Err(Stop::Outcome(Outcome::Failed, Some(why)))
                        }
                    };
                }
                if truncated {
                    return Ok(Outcome::Truncated);
                }
                if self.harness_on() {
                    if round < max_rounds
                        && let Some(follow_up) = self.check_ending(st, cancel).await?
                    {
                        self.push(Message::user(follow_up))?;
                        continue;
                    }
                    return Ok(Outcome::Done);
                }
                if st.nudges < MAX_NUDGES
                    && round < max_rounds
                    && let Some(nudge) = self.nudge_for(st)
                {
                    st.nudges += 1;
                    self.push(Message::user(nudge))?;
                    continue;
                }
                return Ok(Outcome::Done);
            }
            self.push(msg)?;
            st.used_tools = true;
            st.answer.clear();
            if truncated {
                let cap = self.settings.max_tokens.unwrap_or(0);
                self.close_batch(
                    &calls,
                    &format!(
                        "not executed: your reply was cut by the token limit (max_tokens {cap}) before this call was complete. Write shorter replies: split a big file into several smaller edits."
                    ),
                )?;
                self.notice(
                    Level::Warning,
                    "the reply was cut by the token limit; its tool calls were not run",
                );
                st.bad_rounds += 1;
            } else if round >= max_rounds {
                self.close_batch(
                    &calls,
                    &format!("not executed: this turn's round budget ({max_rounds}) is used up"),
                )?;
                self.notice(
                    Level::Warning,
                    format!("round budget ({max_rounds}) used up: asking for a final report"),
                );
                return self.final_report(st, round, cancel).await;
            } else {
                let before = (st.written.len(), st.command_changes.len());
                self.run_batch(&calls, st, cancel).await?;
                // A round that changed no file: reads, and commands that
                // only look or fail (git commit, the test run again).
                st.idle_rounds = if before == (st.written.len(), st.command_changes.len()) {
                    st.idle_rounds + 1
                } else {
                    0
                };
            }
            if cancel.is_cancelled() {
                return Ok(Outcome::Cancelled);
            }
            // Reads and rereads with nothing written: the file is asked
            // for whole, as text.
            if self.stalled(st) {
                let why = if st.bad_rounds >= 2 {
                    "the tool calls kept failing to parse"
                } else if st.read_rounds >= 2 {
                    "the model read without writing for several rounds"
                } else {
                    "the model went several rounds without changing a file"
                };
                if let Some(text) = self.deliver_whole(st, why, cancel).await {
                    self.push(Message::user(text))?;
                    st.read_rounds = 0;
                    st.history.clear();
                }
            }
            // Rounds since the last change, the model's or mm's own.
            if st.mutations == st.seen_mutations {
                st.unchanged_rounds += 1;
            } else {
                st.unchanged_rounds = 0;
                st.seen_mutations = st.mutations;
            }
            let looping = if st.repeat_rounds >= MAX_REPEAT_ROUNDS {
                Some("the model kept repeating calls that had already failed".to_string())
            } else if self.harness_on()
                && (st.stall_tried || st.tried_candidates)
                && st.unchanged_rounds >= MAX_UNCHANGED_ROUNDS
            {
                // mm's own tries (the file asked for whole, candidates
                // run against the checks) are behind it, and the model's
                // rounds since change nothing: refused writes, edits that
                // do not match, the same files read again.
                Some(format!(
                    "the model changed nothing in {} rounds after mm's own tries",
                    st.unchanged_rounds
                ))
            } else {
                match self.check_cycle(st) {
                    Err(Stop::Loop(why)) => Some(why),
                    Ok(Some(told)) => {
                        // A model going round in circles after a write
                        // never ends the turn, so the checks an ending
                        // runs never would: they run now, and their
                        // failures (with candidates tried) are what it
                        // hears instead of "stop repeating".
                        let text = match self.checks_now(st, cancel).await {
                            Some(checks) => checks,
                            None => told,
                        };
                        self.push(Message::user(text))?;
                        None
                    }
                    Ok(None) => None,
                    Err(e) => return Err(e),
                }
            };
            if let Some(why) = looping {
                // A change the request's checks never ran on: they run
                // before the turn is given up, and the model hears their
                // failures (candidates tried) once.
                if let Some(text) = self.checks_now(st, cancel).await {
                    self.notice(
                        Level::Warning,
                        format!("{why}: running the request's checks on the change first"),
                    );
                    self.push(Message::user(text))?;
                    st.history.clear();
                    st.repeat_rounds = 0;
                    st.unchanged_rounds = 0;
                    st.cycle_warned = false;
                    continue;
                }
                st.stopped = Some(format!("stopped a loop: {why}"));
                self.notice(Level::Warning, format!("{why}: asking for a final report"));
                // An edit task about to end with nothing written, or with
                // a source file the request names still unwritten (one
                // file of a two-file change done): the files asked for
                // whole first, so the turn still delivers.
                if self.on(crate::config::Behaviour::Stall)
                    && !st.stall_tried
                    && (st.written.is_empty() || self.named_unwritten(st))
                    && self.edit_task(st)
                    && let Some(text) = self
                        .deliver_whole(st, "the model was going round in circles", cancel)
                        .await
                {
                    self.push(Message::user(text))?;
                }
                return self.final_report(st, round, cancel).await;
            }
            if round >= max_rounds {
                self.notice(
                    Level::Warning,
                    format!("round budget ({max_rounds}) used up: asking for a final report"),
                );
                return self.final_report(st, round, cancel).await;
            }
        }
    }

    /// The prompt with the files it names attached: a small model that
    /// sees the file first edits what is there instead of guessing.
    /// The request with the workspace overview (first turn) and the files
    /// it names attached; and those files' paths.
    pub(super) fn with_attachments(&self, prompt: &str) -> (String, Vec<String>) {
        let mut text = prompt.to_string();
        let first_of_session = !self.messages.iter().any(|m| m.role == Role::User);
        if first_of_session
            && !self.specs.is_empty()
            && let Some(files) = tools::fs::workspace_overview(&self.tools.sandbox)
        {
            text.push_str(&format!("\n\n[files in the workspace]\n{files}"));
        }
        let attached = tools::fs::attach_mentioned(&self.tools, prompt);
        if attached.is_empty() {
            return (text, Vec::new());
        }
        let names: Vec<&str> = attached.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(Level::Info, format!("attached {}", names.join(", ")));
        if let Some(lsp) = &self.tools.lsp {
            // Attached counts as read: the server learns the file as it is,
            // so errors an edit brings can be told from old ones.
            for (rel, _) in &attached {
                let abs = self.tools.sandbox.root().join(rel);
                if crate::lsp::language_of(&abs).is_some()
                    && let Ok(content) = crate::paths::read_checked_text(&abs)
                {
                    let lsp = lsp.clone();
                    tokio::spawn(async move { lsp.opened(&abs, &content).await });
                }
            }
        }
        for (path, body) in &attached {
            text.push_str(&format!(
                "\n\n[{path} as it is now, for context; it counts as read]\n{body}"
            ));
        }
        (text, attached.into_iter().map(|(p, _)| p).collect())
    }

    /// The workspace's README (its first 4 KiB, the cut said), for a
    /// question about the project.
    pub(super) fn readme_head(&self) -> Option<(String, String)> {
        const HEAD: usize = 4096;
        let name = [
            "README.md",
            "README",
            "README.rst",
            "README.txt",
            "readme.md",
        ]
        .into_iter()
        .find(|n| self.content_now(n).is_some())?;
        let body = self.content_now(name)?;
        if body.len() <= HEAD {
            return Some((name.to_string(), body));
        }
        let mut cut = HEAD;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = &body[..cut];
        let head = &head[..head.rfind('\n').unwrap_or(head.len())];
        let lines = head.lines().count();
        Some((
            name.to_string(),
            format!(
                "{head}\n[… the first {lines} lines; read_file {name} offset={} for the rest]",
                lines + 1
            ),
        ))
    }

    /// The turn ends with errors its edits brought: the user hears it,
    /// whatever the model's answer says.
    pub(super) fn warn_left_errors(&self, st: &TurnState) {
        let mut left: Vec<String> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .map(|(p, c)| format!("{p} ({} error(s))", c.errors))
            .collect();
        if left.is_empty() {
            return;
        }
        left.sort();
        self.notice(
            Level::Warning,
            format!(
                "the language server still reports errors this turn brought: {}",
                left.join(", ")
            ),
        );
    }

    /// What to tell a model that stopped on a promise, or claimed a change
    /// this turn never made.
    pub(super) fn nudge_for(&self, st: &mut TurnState) -> Option<String> {
        let can_edit = self.specs.iter().any(|s| s.name == ToolName::EditFile);
        if let Some(text) = self.lsp_follow_up(st) {
            return Some(text);
        }
        if can_edit && st.written.is_empty() && batch::claims_a_change(&st.answer) {
            self.notice(
                Level::Warning,
                "the model says it changed something, but no file was written in this turn; asking it to act or correct itself",
            );
            return Some(
                "You said you changed something, but no file was written in this turn: no write_file or edit_file call succeeded. Make the change now with a tool call, or say plainly that nothing was changed.".into(),
            );
        }
        if batch::announces_next_step(&st.answer) {
            self.notice(
                Level::Info,
                "the model announced a step without taking it; asking it to go on",
            );
            return Some(
                "Go on: take that step now with a tool call. If the task is already finished, give your final answer.".into(),
            );
        }
        None
    }

    /// Errors the language server reports that this turn's edits brought,
    /// said once a turn.
    pub(super) fn lsp_follow_up(&self, st: &mut TurnState) -> Option<String> {
        if st.told_errors {
            return None;
        }
        let mut broken: Vec<(&String, &crate::lsp::Check)> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .collect();
        if broken.is_empty() {
            return None;
        }
        broken.sort_by_key(|(p, _)| p.as_str());
        let names: Vec<&str> = broken.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(
            Level::Warning,
            format!(
                "errors this turn brought into {} (language server or parser); asking the model to fix them",
                names.join(", ")
            ),
        );
        let reports: Vec<&str> = broken.iter().map(|(_, c)| c.text.as_str()).collect();
        let text = format!(
            "Your changes left errors (from the language server or the parser):\n{}\nFix them now with edit_file, or explain why they are not real problems.",
            reports.join("\n")
        );
        st.told_errors = true;
        Some(text)
    }

    /// What an ending would have checked, on a change the model made and
    /// has not ended on (for an edit task with files written): candidates
    /// against the failing tests, or the request's checks, each once a
    /// turn.
    pub(super) async fn checks_now(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.harness_on()
            || (st.written.is_empty() && !self.stub_unwritten(st))
            || !self.specs.iter().any(|s| s.name == ToolName::EditFile)
            || !self.edit_task(st)
        {
            return None;
        }
        // The tests on the change, as an ending runs them (candidates
        // tried when they fail).
        if let Some(text) = self.verify_step(st, cancel, false).await {
            st.follow_ups += 1;
            return Some(text);
        }
        // Tests that failed on it already: candidates tried against them.
        if self.on(crate::config::Behaviour::Candidates)
            && !st.tried_candidates
            && let Some(command) = st
                .tests
                .as_ref()
                .filter(|t| t.passed == Some(false))
                .map(|t| t.command.clone())
            && let Some(failure) = st.last_failure.clone()
        {
            st.tried_candidates = true;
            if let Some(made) = self.fix_by_candidates(st, &command, &failure, cancel).await {
                st.follow_ups += 1;
                return Some(format!(
                    "`{command}` fails on your change:\n{failure}{made}\n\n{}",
                    harness::restate(&st.prompt)
                ));
            }
        }
        if st.asserts_tried {
            return None;
        }
        let text = self.request_checks(st, cancel).await?;
        st.follow_ups += 1;
        Some(text)
    }

    /// Calls repeated with the same results change nothing: say so once
    /// (the words to say, for the caller to send), then stop the turn if
    /// it goes on.
    pub(super) fn check_cycle(&mut self, st: &mut TurnState) -> Result<Option<String>, Stop> {
        // The same calls again, or other calls that write a file back to
        // what it already was (a write undoing an edit, and again).
        let (what, told) = match batch::repeating_cycle(&st.history, MAX_CYCLE) {
            Some(k) => (
                format!("the same {k} call(s) with the same results"),
                "You are repeating the same tool calls and getting the same results: this changes nothing.",
            ),
            None if st.revisits >= MAX_REVISITS => (
                "writes that put a file back to contents it already had".to_string(),
                "Your writes keep putting the file back to versions it already had this turn: this changes nothing.",
            ),
            None => return Ok(None),
        };
        if st.cycle_warned {
            return Err(Stop::Loop(format!("the model kept repeating {what}")));
        }
        st.cycle_warned = true;
        st.history.clear();
        st.revisits = 0;
        self.notice(
            Level::Warning,
            format!("the model is repeating {what}; telling it to change course"),
        );
        let mut text = format!(
            "{told} Stop repeating them. Try a different approach, or give your final answer with what you found.",
        );
        if self.harness_on() {
            text.push('\n');
            text.push_str(&harness::restate(&st.prompt));
        }
        Ok(Some(text))
    }

    /// One tool-less request for a final report when the rounds run out.
    pub(super) async fn final_report(
        &mut self,
        st: &mut TurnState,
        round: u32,
        cancel: &CancellationToken,
    ) -> Result<Outcome, Stop> {
        let mut ask = String::from(
            "This turn is over: no more tool calls. Report briefly what you did, what you checked, and what is left to do.",
        );
        if self.harness_on() {
            ask.push('\n');
            ask.push_str(&harness::restate(&st.prompt));
            let mut notes: Vec<String> = st.tests.iter().map(TestReport::receipt_words).collect();
            notes.extend(st.candidate_notes.iter().cloned());
            ask.push_str(&format!(
                "\nFacts: {}.",
                crate::protocol::receipt_text(&st.written, st.commands, &notes)
            ));
        }
        // The report must not claim a clean build the server contradicts.
        let mut left: Vec<&crate::lsp::Check> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .map(|(_, c)| c)
            .collect();
        left.sort_by(|a, b| a.text.cmp(&b.text));
        if !left.is_empty() {
            ask.push_str(
                "\nYour changes left errors (language server or parser); say so in the report:\n",
            );
            ask.push_str(
                &left
                    .iter()
                    .map(|c| c.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        self.push(Message::user(ask))?;
        // With the tools still offered the request shares the server's
        // cached prefix (a tool-less one is read again from the start,
        // a minute on a CPU); a reply that is only a call is asked again
        // without them.
        let mut reply = self.request(round + 1, self.harness_on(), cancel).await?;
        if self.harness_on() && reply.reply.content.trim().is_empty() {
            reply = self.request(round + 1, false, cancel).await?;
        }
        let (mut msg, _) = self.assistant_message(reply, round + 1, false, true);
        msg.tool_calls.clear();
        st.answer = msg.text().to_string();
        self.push(msg)?;
        // A report that gets its own sum wrong is asked once more.
        let wrong = harness::wrong_arithmetic(&st.answer);
        if self.harness_on() && !wrong.is_empty() && !st.told_arithmetic {
            st.told_arithmetic = true;
            st.computed.push_str(&wrong.join("\n"));
            self.notice(
                Level::Info,
                format!(
                    "the answer's arithmetic is wrong ({}); asking again",
                    wrong.join("; ")
                ),
            );
            self.push(Message::user(format!(
                "Check your arithmetic: {}. Correct the answer; no tool calls.\n{}",
                wrong.join("; "),
                harness::restate(&st.prompt)
            )))?;
            let reply = self.request(round + 2, false, cancel).await?;
            let (mut msg, _) = self.assistant_message(reply, round + 2, false, true);
            msg.tool_calls.clear();
            if !msg.text().trim().is_empty() {
                st.answer = msg.text().to_string();
            }
            self.push(msg)?;
        }
        Ok(Outcome::Budget)
    }
}
