//! The turn: its rounds of request and tool batch, the checks between them,
//! and the report at its end.

mod ending;
mod prompting;

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
        let images = self.prompt_images(prompt);
        let refused = match self.oversized(prompt).await {
            Some(why) => Some(why),
            None if !images.is_empty() && self.learn_vision().await == Some(false) => {
                Some(format!(
                    "{} cannot take images (its server says so), and the prompt brings {}; nothing was sent. Serve a vision model (llama-server with its --mmproj file, an Ollama model with vision) or leave the image out",
                    self.model,
                    images
                        .iter()
                        .map(|i| i.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            None => None,
        };
        if let Some(why) = refused {
            return self.refused_turn(turn, why);
        }
        let mut state = TurnState {
            prompt: prompt.to_string(),
            piped: std::mem::take(&mut self.piped_next),
            ..TurnState::default()
        };
        self.task = prompt.to_string();
        self.note_limits(&mut state);
        self.tool_warnings.clear();
        // A dead MCP server's tools are no longer offered.
        if let Some(m) = self.tools.mcp.clone() {
            self.specs
                .retain(|s| m.find(&s.name).is_none() || m.alive(&s.name));
        }
        let usage_before = self.usage;
        let requests_before = self.budget.used();
        let conversation_before = self.conversation_requests;
        self.checkpoint(crate::git::Kind::Turn, prompt).await;
        for f in harness::named_files(prompt) {
            if focus::has_definitions(&f)
                && let Some(text) = self.content_now(&f)
            {
                state.originals.insert(f, text);
            }
        }
        let (message, attached) = self.first_message(&mut state, prompt, images, cancel).await;
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
            Ok(()) => {
                // A helper the request names by its role runs first.
                let named = self.start_named_role(&mut state, cancel).await;
                match named {
                    Ok(()) => self.rounds(&mut state, cancel).await,
                    Err(stop) => Err(stop),
                }
                .map_or_else(Stop::ending, |outcome| (outcome, None))
            }
        };
        let error = error.or(state.stopped.take());
        self.after_rounds(&mut state, outcome, cancel).await;
        let usage = self.usage.minus(&usage_before);
        let requests = self.budget.used().saturating_sub(requests_before);
        self.last_turn = Some((requests, usage));
        let own = self.conversation_requests - conversation_before;
        self.receipt(turn, &state, (requests, own), usage);
        self.bus.publish(AgentEvent::TurnFinished {
            turn,
            outcome,
            answer: state.answer.clone(),
            error: error.clone(),
        });
        if turn == 1 && outcome != Outcome::Cancelled {
            self.write_title(&state.prompt, cancel).await;
        }
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
            plan: Vec::new(),
        }
    }

    /// A turn refused before anything was sent (a prompt over the window,
    /// pictures for a model that cannot see): said, and its result.
    fn refused_turn(&mut self, turn: TurnId, why: String) -> TurnResult {
        self.bus.publish(AgentEvent::TurnFinished {
            turn,
            outcome: Outcome::Failed,
            answer: String::new(),
            error: Some(why.clone()),
        });
        TurnResult {
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
            plan: Vec::new(),
        }
    }

    /// The turn's first message: what mm found and did before the model's
    /// first look, the files the prompt names (attached as they are then),
    /// the README for a question about the project, notes carried from
    /// before, a nudge to answer from what is attached, the pictures. With
    /// the paths attached.
    async fn first_message(
        &mut self,
        state: &mut TurnState,
        prompt: &str,
        images: Vec<crate::llm::Image>,
        cancel: &CancellationToken,
    ) -> (Message, Vec<String>) {
        // What mm found and did before the model's first look; the files
        // are attached after it, as they are then.
        let found = if self.harness_on() {
            self.before_first_look(state, cancel).await
        } else {
            String::new()
        };
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
        // A question about files that are attached in full, or a review
        // or summary of them: the answer is in front of the model, which
        // otherwise wanders off with tools (a reviewer helper read its one
        // file until its rounds ran out).
        if self.harness_on()
            && (state.question || (state.text_only && !self.mentions_a_role(prompt)))
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
        let mut message = Message::user(text);
        if !images.is_empty() {
            let names: Vec<String> = images
                .iter()
                .map(|i| format!("{} ({})", i.name, i.size()))
                .collect();
            self.notice(Level::Info, format!("image attached: {}", names.join(", ")));
            message.images = images;
        }
        (message, attached)
    }

    /// After the rounds: the turnEnd hook, and (with the harness) a file
    /// left unparsable or worse than its best version put back, the
    /// request's checks settled, errors left said, claims held to what
    /// the tools returned.
    async fn after_rounds(
        &mut self,
        state: &mut TurnState,
        outcome: Outcome,
        cancel: &CancellationToken,
    ) {
        if outcome != Outcome::Cancelled
            && let Some(hook) = self.settings.hooks.turn_end.clone()
            && let Some(failed) = self.run_hook("turnEnd", &hook, cancel).await
        {
            self.carry(failed);
        }
        // A file this turn left unparsable goes back to its last version
        // that parses (the broken one stays in the checkpoints).
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.restore_unparsable(state, cancel).await;
            self.restore_best(state, cancel).await;
            self.settle_request_checks(state, cancel).await;
        }
        self.publish_context();
        // However the turn ended (an answer, a stopped loop, a budget), the
        // user hears of errors it left, whatever the model's answer claims.
        self.warn_left_errors(state);
        if self.harness_on() && outcome != Outcome::Cancelled {
            self.flag_unbacked(state);
            self.hold_to_evidence(state);
            // Asked again and still the request sent back: it is not an
            // answer, and is not given as one.
            if harness::echoes_request(&state.answer, &state.prompt) {
                self.notice(
                    Level::Warning,
                    "the model's answer only repeated the request; it is left out",
                );
                state.answer = "(The model's reply only repeated the request: no answer.)".into();
            }
        }
    }

    /// What the harness finds and does before the model's first look (the
    /// checks to run, a reproduction, a probe, mechanical work, files asked
    /// for whole): what to tell the model with the request.
    async fn before_first_look(
        &mut self,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> String {
        let mut found = String::new();

        self.plan_checks(state);
        state.text_only = harness::asks_for_text(&state.prompt, state.question && state.piped);
        state.answer_in_text = state.text_only && state.piped;
        if let Some(f) = self.reproduce(state, cancel).await {
            found.push_str(&f);
        }
        if let Some(f) = self.probe(state, cancel).await {
            found.push_str(&f);
        }
        if let Some(f) = self.review_by_function(state, cancel).await {
            found.push_str(&f);
        }
        if let Some(f) = self.mechanical_rename(state, cancel).await {
            found.push_str(&f);
        }
        if let Some(f) = self.mechanical_extract(state, cancel).await {
            found.push_str(&f);
        }
        if let Some(f) = self.focused_change(state, cancel).await {
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
            && self.edit_task(state)
            && let Some(f) = self
                .deliver_whole(
                    state,
                    &format!("editFormat is {}", self.settings.edit_format.as_str()),
                    cancel,
                )
                .await
        {
            found.push_str("\n\n");
            found.push_str(&f);
        }

        found
    }

    /// The turn's receipt (what it wrote, ran and checked, what it cost),
    /// published and logged, when it used tools or has something to say.
    fn receipt(
        &mut self,
        turn: TurnId,
        state: &TurnState,
        (requests, own): (u32, u32),
        usage: crate::protocol::Usage,
    ) {
        if !(state.used_tools || state.tests.is_some() || !state.unbacked.is_empty()) {
            return;
        }
        let mut notes = Vec::new();
        if let Some(t) = &state.tests {
            notes.push(t.receipt_words());
        }
        if !state.command_changes.is_empty() {
            let (by_helper, by_commands): (Vec<String>, Vec<String>) = state
                .command_changes
                .iter()
                .cloned()
                .partition(|p| state.helper_changed.contains(p));
            if !by_commands.is_empty() {
                notes.push(changed_words("commands", &by_commands));
            }
            if !by_helper.is_empty() {
                notes.push(changed_words("a helper", &by_helper));
            }
        }
        notes.extend(state.candidate_notes.iter().cloned());
        for u in &state.unbacked {
            notes.push(format!("unbacked claim: {u}"));
        }
        // All the turn cost (mm's checks, candidates and helpers too), and
        // how many of them were the conversation's own, which /stats counts.
        let own = if own < requests {
            format!(" ({own} in the conversation)")
        } else {
            String::new()
        };
        notes.push(format!(
            "{requests} request{}{own}, {} prompt tokens ({} cached), {} generated",
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

    /// A reply that ran away or whose tool call could not be read, while
    /// the turn may still ask again: what went wrong is said to the model
    /// (None: ask again), or the round budget ends the turn. Any other
    /// stop is returned as it is.
    async fn reask(
        &mut self,
        st: &mut TurnState,
        stop: Stop,
        round: u32,
        cancel: &CancellationToken,
    ) -> Result<Option<Outcome>, Stop> {
        let max_rounds = self.settings.max_rounds;
        match stop {
            Stop::Runaway(how) if st.runaways < 2 => {
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
                    again.push_str(&self.restated(st));
                }
                self.push(Message::user(again))?;
                if round >= max_rounds {
                    return self.final_report(st, round, cancel).await.map(Some);
                }
                Ok(None)
            }
            // The model wrote a call the server could not read. The
            // same request would get the same reply: the conversation
            // says what went wrong, and after two such rounds of an
            // edit task the file is asked for whole, as text.
            Stop::BadReply(why) if st.bad_rounds < MAX_BAD_REPLIES => {
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
                    again.push_str(&self.restated(st));
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
                    return self.final_report(st, round, cancel).await.map(Some);
                }
                Ok(None)
            }
            other => Err(other),
        }
    }

    /// A reply without tool calls, pushed: the turn's outcome, or None
    /// when a follow-up (the harness's, a nudge) was pushed and the turn
    /// goes on.
    async fn answered(
        &mut self,
        st: &mut TurnState,
        truncated: bool,
        round: u32,
        cancel: &CancellationToken,
    ) -> Result<Option<Outcome>, Stop> {
        let max_rounds = self.settings.max_rounds;
        if let Some(answers) = &self.structured {
            // Only JSON of the declared shape is an answer.
            return match answers.check(&st.answer, truncated) {
                Ok(()) => Ok(Some(Outcome::Done)),
                Err(why) => {
                    st.answer.clear();
                    Err(Stop::Outcome(Outcome::Failed, Some(why)))
                }
            };
        }
        if truncated {
            return Ok(Some(Outcome::Truncated));
        }
        if self.harness_on() {
            if round < max_rounds
                && let Some(follow_up) = self.check_ending(st, cancel).await?
            {
                self.push(Message::user(follow_up))?;
                return Ok(None);
            }
            return Ok(Some(Outcome::Done));
        }
        // While planning nothing can be acted on: no nudge to act.
        if st.nudges < MAX_NUDGES
            && round < max_rounds
            && !self.tools.sandbox.planning()
            && let Some(nudge) = self.nudge_for(st)
        {
            st.nudges += 1;
            self.push(Message::user(nudge))?;
            return Ok(None);
        }
        Ok(Some(Outcome::Done))
    }

    /// Every language server turned off: its tools are offered no more (a
    /// small model kept calling them for their error).
    async fn drop_dead_lsp_tools(&mut self) {
        if self.specs.iter().any(|s| s.name.starts_with("lsp_"))
            && let Some(lsp) = self.lsp()
            && !lsp.usable().await
        {
            self.specs.retain(|s| !s.name.starts_with("lsp_"));
            tracing::info!("no language server left: the lsp tools are no longer offered");
        }
    }

    /// Reads and rereads with nothing written: the file is asked for
    /// whole, as text; and the rounds since the last change counted.
    async fn unstall(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
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
        Ok(())
    }

    /// Whether the turn is going round in circles, and why: calls that
    /// failed repeated, nothing changed after mm's own tries, or a cycle
    /// of calls (told once; the request's checks run instead where they
    /// can say more).
    async fn looping(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, Stop> {
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
        Ok(looping)
    }

    /// A reply cut by the token limit: its calls are not run, and the
    /// model hears why.
    fn refuse_cut_calls(&mut self, calls: &[ToolCall]) -> Result<(), Stop> {
        let cap = self.settings.max_tokens.unwrap_or(0);
        self.close_batch(
            calls,
            &format!(
                "not executed: your reply was cut by the token limit (max_tokens {cap}) before this call was complete. Write shorter replies: split a big file into several smaller edits."
            ),
        )?;
        self.notice(
            Level::Warning,
            "the reply was cut by the token limit; its tool calls were not run",
        );
        Ok(())
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
            self.drop_dead_lsp_tools().await;
            let reply = match self.request(round, tools_on, cancel).await {
                Err(stop @ (Stop::Runaway(_) | Stop::BadReply(_))) => {
                    match self.reask(st, stop, round, cancel).await? {
                        Some(outcome) => return Ok(outcome),
                        None => continue,
                    }
                }
                other => other?,
            };
            let recover_code = self.harness_on() && !st.question;
            let (msg, truncated) = self.assistant_message(reply, round, recover_code, tools_on);
            let calls = msg.tool_calls.clone();
            st.answer = msg.text().to_string();
            if calls.is_empty() {
                self.push(msg)?;
                match self.answered(st, truncated, round, cancel).await? {
                    Some(outcome) => return Ok(outcome),
                    None => continue,
                }
            }
            self.push(msg)?;
            st.used_tools = true;
            st.answer.clear();
            if truncated {
                self.refuse_cut_calls(&calls)?;
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
            self.unstall(st, cancel).await?;
            let looping = self.looping(st, cancel).await?;
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
}
