//! The end of a round and of a turn: the checks run now, the loop of checks
//! and fixes, and the final report held to what the receipt says.

use super::*;

impl Agent {
    /// What an ending would have checked, on a change the model made and
    /// has not ended on (for an edit task with files written): candidates
    /// against the failing tests, or the request's checks, each once a
    /// turn.
    pub(in crate::agent) async fn checks_now(
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
                    self.restated(st)
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
    pub(in crate::agent) fn check_cycle(
        &mut self,
        st: &mut TurnState,
    ) -> Result<Option<String>, Stop> {
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
            text.push_str(&self.restated(st));
        }
        Ok(Some(text))
    }

    /// One tool-less request for a final report when the rounds run out.
    pub(in crate::agent) async fn final_report(
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
            ask.push_str(&self.restated(st));
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
                self.restated(st)
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
