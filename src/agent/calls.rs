//! A batch of tool calls: each judged, run in order, its output shaped and
//! recorded; what a repeated or misplaced call is told.

use super::*;

mod guards;
mod outcome;

impl Agent {
    /// The file's content as it is now, when it is a small regular file.
    pub(super) fn content_now(&self, rel: &str) -> Option<String> {
        let r = self.tools.sandbox.check_read(rel).ok()?;
        let bytes = crate::paths::read_checked(&r.abs, 256 * 1024).ok()?;
        String::from_utf8(bytes).ok()
    }

    /// Notes that the newest message shows `rel` whole, as it is now.
    pub(super) fn note_shown(&self, st: &mut TurnState, rel: &str, round: u32) {
        let (Some(content), Some(message)) =
            (self.content_now(rel), self.messages.len().checked_sub(1))
        else {
            return;
        };
        // A read shows this many lines at most: a longer file is not whole.
        if content.lines().count() > tools::fs::DEFAULT_READ_LINES {
            return;
        }
        st.shown.insert(
            rel.to_string(),
            Shown {
                content: text_hash(&content),
                message,
                message_hash: text_hash(self.messages[message].text()),
                round,
            },
        );
    }

    /// A whole read of a file the model has in view this turn, unchanged
    /// since: the one line to send instead of the file again.
    pub(super) fn unchanged_read(
        &self,
        st: &TurnState,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<String> {
        if !self.on(crate::config::Behaviour::Reread)
            || tools::arg_u64(args, crate::toolname::arg::OFFSET).is_some_and(|o| o > 1)
            || tools::arg_u64(args, crate::toolname::arg::LIMIT).is_some()
        {
            return None;
        }
        let r = self
            .tools
            .sandbox
            .check_read(tools::arg_str(args, crate::toolname::arg::PATH)?)
            .ok()?;
        let seen = st.shown.get(&r.rel)?;
        let still_sent = self
            .messages
            .get(seen.message)
            .is_some_and(|m| text_hash(m.text()) == seen.message_hash)
            && self.shed.sends(seen.message);
        if !still_sent || text_hash(&self.content_now(&r.rel)?) != seen.content {
            return None;
        }
        let when = match seen.round {
            0 => "it is attached to the request above".to_string(),
            n => format!("you read it in round {n}; it is above"),
        };
        let next = if st.question {
            "Answer from it."
        } else {
            "Take the next step of the request now (a change, a command, another tool), or answer."
        };
        // The folder's own instructions still come with its first file,
        // whichever way the file reached the model.
        let rules = self
            .tools
            .nested
            .for_file(self.tools.sandbox.root(), &r.abs);
        Some(format!(
            "{} is unchanged since you saw it ({when}). It is not sent again. {next}{rules}",
            r.rel
        ))
    }

    /// A write to `path`, an existing file the request does not name,
    /// while the request names a file to create that does not exist yet:
    /// the refusal that names the file asked for.
    pub(super) fn named_elsewhere(&self, st: &TurnState, path: &str) -> Option<String> {
        let r = self.tools.sandbox.check_read(path).ok()?;
        if !r.abs.is_file() {
            return None;
        }
        let named = harness::named_files(&st.prompt);
        // The document the code is to follow (a SPEC.md) is not the code.
        if let Some(code) = named.first()
            && stall::named_docs(&st.prompt).contains(&r.rel)
            && !harness::asks_to_edit(&st.prompt, &r.rel)
        {
            return Some(format!(
                "refused: {} is what the request gives to follow; it asks for no change to it. Nothing was written. Write the code the request asks for in {code}.\n{}",
                r.rel,
                self.restated(st)
            ));
        }
        if !harness::asks_to_create(&st.prompt) {
            return None;
        }
        let missing: Vec<&String> = named
            .iter()
            .filter(|f| {
                self.tools
                    .sandbox
                    .check_read(f)
                    .is_ok_and(|n| !n.abs.exists())
            })
            .collect();
        let wanted = missing.first()?;
        // A file the request names may change, but for tests asked into a
        // new test file: the code under test stays as it is.
        let tests_into_code = harness::asks_for_tests(&st.prompt)
            && harness::is_test_file(wanted)
            && !harness::is_test_file(&r.rel);
        // A file named by its name alone is the one in a folder the call
        // writes (`discount.py` for `shop/discount.py`).
        let same_name = |n: &String| !n.contains('/') && r.rel.ends_with(&format!("/{n}"));
        if (named.contains(&r.rel) || named.iter().any(same_name)) && !tests_into_code {
            return None;
        }
        Some(format!(
            "refused: the request asks for {wanted}, which does not exist yet, and this call writes {} instead. Nothing was written. Create {wanted} with write_file (path \"{wanted}\", the whole content); change {} only if the request needs it, after that.\n{}",
            r.rel,
            r.rel,
            self.restated(st)
        ))
    }

    /// A change the request asks for, handed to a helper in a role that
    /// cannot write (a reviewer: read-only, or no file tool), when the
    /// request does not ask for that role: the refusal (a trial's 1.5B
    /// model gave a fix to three reviewers, and one claimed it was made).
    fn task_that_cannot_write(
        &self,
        st: &TurnState,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<String> {
        let name = tools::arg_str(args, crate::toolname::arg::ROLE)?;
        let role = self
            .tools
            .task
            .as_ref()?
            .roles
            .iter()
            .find(|r| r.name == name)?;
        let writes = role.sandbox != Some(crate::config::SandboxMode::ReadOnly)
            && role.tools.as_ref().is_none_or(|t| {
                t.iter()
                    .any(|n| ToolName::parse(n).is_some_and(|t| crate::toolname::edits(t.as_str())))
            });
        if writes
            || !self.edit_task(st)
            || !harness::asks_for_change(&st.prompt)
            || crate::patterns::has_word(&st.prompt, &[name])
        {
            return None;
        }
        Some(format!(
            "refused: the request asks for a change, and a helper in the {name} role cannot write files, so it would not make it. Nothing was started. Make the change yourself (read_file, then edit_file); a review can come after.\n{}",
            self.restated(st)
        ))
    }

    /// Why a change to an existing test file is refused, naming the code
    /// the test imports when mm can tell.
    pub(super) fn test_file_refusal(&self, path: &str, prompt: &str) -> String {
        let root = self.tools.sandbox.root();
        let code = self
            .tools
            .sandbox
            .check_read(path)
            .ok()
            .and_then(|r| crate::paths::read_checked_text(&r.abs).ok())
            .unwrap_or_default();
        let sources: Vec<String> = tools::guard::local_imports(root, path, &code)
            .into_iter()
            .map(|(f, _)| f)
            .filter(|f| !harness::is_test_file(f))
            .collect();
        let there = if sources.is_empty() {
            "the code it tests".to_string()
        } else {
            sources.join(", ")
        };
        format!(
            "refused: {path} is a test file, and the request is to make the code pass its tests, not to change them. Nothing was written. The failing assertion says what the code must do: fix {there} with edit_file.\n{}",
            harness::restate(prompt)
        )
    }

    /// Answers every call of a batch without running it.
    pub(super) fn close_batch(
        &mut self,
        calls: &[ToolCall],
        why: &str,
    ) -> Result<(), SessionError> {
        for c in calls {
            self.finish_call(c, "", ToolOutput::not_run(why))?;
        }
        Ok(())
    }

    /// A file change made this turn: recorded as mm's doing, kept for the
    /// session's edits, and told to the front ends.
    pub(super) fn record_change(
        &mut self,
        call_id: &str,
        change: crate::protocol::FileChange,
    ) -> Result<(), SessionError> {
        self.record_made(&change.path, crate::git::blob_id(change.after.as_bytes()))?;
        self.edits.push(change.clone());
        self.bus.publish(AgentEvent::FileChanged {
            turn: self.turn,
            call_id: call_id.to_string(),
            change: Arc::new(change),
        });
        Ok(())
    }

    pub(super) fn finish_call(
        &mut self,
        call: &ToolCall,
        summary: &str,
        out: ToolOutput,
    ) -> Result<(), SessionError> {
        let turn = self.turn;
        if let Some(change) = out.change.clone().map(|c| *c) {
            self.record_change(&call.id, change)?;
        }
        for key in self.tools.sandbox.take_unlogged() {
            self.log.append(&Record::Always { key })?;
        }
        if let Some(w) = &out.warning {
            self.notice(Level::Warning, w.clone());
            self.tool_warnings.push(w.clone());
        }
        let text: Arc<str> = Arc::from(out.text.as_str());
        self.bus.publish(AgentEvent::ToolCallFinished {
            turn,
            call_id: call.id.clone(),
            name: call.name.clone(),
            summary: summary.to_string(),
            status: out.status,
            output: text,
        });
        // The front ends show the whole output; the model gets what fits.
        let sent = self.fit_output(&out.text).unwrap_or(out.text);
        let mut message = Message::tool_result(&call.id, sent);
        message.images.extend(out.image.map(|i| *i));
        self.push_with(message, Some(out.status))
    }

    /// Asks the server whether the model takes images (once; a local
    /// server says, a hosted one is taken at its word when it refuses).
    pub(super) async fn learn_vision(&mut self) -> Option<bool> {
        if let Some(v) = self.tools.vision.get() {
            return Some(*v);
        }
        let v = self.client.vision(&self.model).await;
        if let Some(v) = v {
            let _ = self.tools.vision.set(v);
        }
        v
    }

    pub(super) async fn run_batch(
        &mut self,
        calls: &[ToolCall],
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        let raw: Vec<llm::RawCall> = calls
            .iter()
            .map(|c| llm::RawCall {
                index: 0,
                id: Some(c.id.clone()).filter(|s| !s.is_empty()),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        if let Some(err) = batch::structural_error(&raw) {
            // Without ids the calls cannot be answered: drop them from the
            // conversation so the next request stays valid.
            if let Some(last) = self.messages.last_mut() {
                last.tool_calls.clear();
            }
            return Err(Stop::Outcome(
                Outcome::Failed,
                Some(format!("{err}; none of the batch ran")),
            ));
        }
        // A picture about to be read: whether the model can see it is
        // asked of the server once, first.
        if self.tools.vision.get().is_none()
            && calls.iter().any(|c| {
                c.name == ToolName::ReadFile.as_str()
                    && serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok_and(|a| {
                        a[crate::toolname::arg::PATH]
                            .as_str()
                            .is_some_and(crate::llm::images::is_image_name)
                    })
            })
        {
            self.learn_vision().await;
        }
        let checked = batch::check_calls(calls, &self.specs);
        if checked.iter().any(|c| matches!(c, Checked::Invalid(_))) {
            for (call, check) in calls.iter().zip(checked) {
                let out = match check {
                    Checked::Invalid(e) => ToolOutput::error(e),
                    Checked::Ready(_) => ToolOutput::not_run(
                        "not executed: another call in this batch was invalid, so none of it ran; fix that call and send the batch again",
                    ),
                };
                self.finish_call(call, "", out)?;
            }
            st.repeat_rounds = 0;
            st.bad_rounds += 1;
            return Ok(());
        }
        let reads_only = calls.iter().all(|c| stall::is_read_call(&c.name));
        st.read_rounds = if reads_only { st.read_rounds + 1 } else { 0 };
        let previous = std::mem::take(&mut st.failures);
        let mut all_repeats = true;
        for (call, check) in calls.iter().zip(checked) {
            let Checked::Ready(args) = check else {
                continue;
            };
            self.run_call(call, args, st, cancel, &previous, &mut all_repeats)
                .await?;
        }
        st.repeat_rounds = if all_repeats { st.repeat_rounds + 1 } else { 0 };
        Ok(())
    }

    /// A call that failed in the last batch, sent again as it was: not
    /// run, with the failure's telling line and what to do instead.
    fn not_again(
        &self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        err: &str,
        key: &str,
    ) -> ToolOutput {
        // The line that says what failed, else the first that says
        // something (not a rule of `=`, not a build's "Finished").
        let first = err
            .lines()
            .find(|l| {
                let t = l.trim_start();
                ["Error", "error", "FAIL", "panicked", "assert", "Assert"]
                    .iter()
                    .any(|w| t.contains(w))
                    && !t.starts_with("test result: ok")
            })
            .or_else(|| err.lines().find(|l| l.chars().any(char::is_alphanumeric)))
            .unwrap_or("")
            .trim()
            .to_string();
        let check = call.name == ToolName::Bash
            && self.harness_on()
            && st.is_check_command(
                tools::arg_str(args, crate::toolname::arg::COMMAND).unwrap_or_default(),
            );
        let out = ToolOutput::not_run(if check {
            format!(
                "not run again: nothing has changed since it failed just before ({first}), so it would fail the same way. Change the code first with edit_file, then run it again.\n{}",
                self.restated(st)
            )
        } else {
            format!(
                "not run again: this exact call failed just before ({first}). Change the approach: different arguments, another tool, or explain the problem in your answer."
            )
        });
        st.failures.insert(key.to_string(), err.to_string());
        st.history.push(batch::step_hash(key, &out.text));
        out
    }

    /// One call of a batch: checked against the turn, run, and what it
    /// did taken into the turn's state. `previous` holds the last batch's
    /// failures; `all_repeats` turns false when this call is not a repeat.
    pub(super) async fn run_call(
        &mut self,
        call: &ToolCall,
        args: serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        cancel: &CancellationToken,
        previous: &HashMap<String, String>,
        all_repeats: &mut bool,
    ) -> Result<(), Stop> {
        let summary = tools::summary(&call.name, &args);
        if cancel.is_cancelled() {
            self.finish_call(
                call,
                &summary,
                ToolOutput::not_run("not executed: cancelled"),
            )?;
            return Ok(());
        }
        let key = batch::call_key(&call.name, &args);
        if let Some(err) = previous.get(&key) {
            let out = self.not_again(call, &args, st, err, &key);
            self.finish_call(call, &summary, out)?;
            return Ok(());
        }
        *all_repeats = false;
        let writing_command = (call.name == ToolName::Bash)
            .then(|| tools::arg_str(&args, crate::toolname::arg::COMMAND))
            .flatten()
            .filter(|c| !crate::sandbox::Sandbox::is_read_only_command(c))
            .map(str::to_string)
            // An asked agent may change files too: what it changed
            // is found like a command's.
            .or_else(|| {
                (call.name == ToolName::AskAgent).then(|| {
                    format!(
                        "ask_agent {}",
                        tools::arg_str(&args, crate::toolname::arg::AGENT).unwrap_or("")
                    )
                })
            })
            // So may a sub-task.
            .or_else(|| {
                (call.name == ToolName::Task).then(|| {
                    format!(
                        "task {}",
                        tools::arg_str(&args, crate::toolname::arg::ROLE).unwrap_or("")
                    )
                    .trim_end()
                    .to_string()
                })
            });
        let mut before = None;
        if let Some(command) = &writing_command {
            // A command may change files the receipt cannot see: a
            // checkpoint before it lets /rewind undo it.
            self.checkpoint(crate::git::Kind::Command, command).await;
            before = self.last_checkpoint().await;
        }
        self.bus.publish(AgentEvent::ToolCallRunning {
            turn: self.turn,
            call_id: call.id.clone(),
            name: call.name.clone(),
            summary: summary.clone(),
            arguments: call.arguments.clone(),
        });
        let ctx = CallCtx {
            turn: self.turn,
            call_id: &call.id,
            cancel,
        };
        // A helper's requests are not this session's: their progress is
        // read from the server while it works.
        let helper = (call.name == ToolName::Task || call.name == ToolName::AskAgent)
            .then(|| self.watch_helper());
        let (mut out, reread) = self.guarded_run(call, &args, st, &ctx, &key).await;
        // Asked how to do something, in a sandbox that may not do it:
        // the command the model reached for is the answer to give.
        if call.name == ToolName::Bash
            && out.status == ToolStatus::Refused
            && self.harness_on()
            && st.question
            && harness::asks_how(&st.prompt)
        {
            out.text.push_str("\nThe user asked how to do this: they will run it themselves, so it need not run here. If this command is the way, answer with it, and with what the project's files say about it.");
        }
        if let Some(h) = helper {
            h.abort();
        }
        self.take_outcome(
            call,
            &args,
            st,
            &mut out,
            key,
            writing_command,
            before,
            cancel,
        )
        .await?;
        let full_read = call.name == ToolName::ReadFile
            && !reread
            && out.status == ToolStatus::Ok
            && tools::arg_u64(&args, crate::toolname::arg::OFFSET).is_none_or(|o| o <= 1)
            && tools::arg_u64(&args, crate::toolname::arg::LIMIT).is_none();
        self.finish_call(call, &summary, out)?;
        if full_read
            && let Some(path) = tools::arg_str(&args, crate::toolname::arg::PATH)
            && let Ok(r) = self.tools.sandbox.check_read(path)
        {
            self.note_shown(st, &r.rel, st.round);
        }
        Ok(())
    }

    /// The call run, unless a guard of the harness refuses it (a test
    /// file changed to pass, an edit made again or undone, a rename the
    /// request did not ask for, text written over a file, a file reread
    /// unchanged, a write to a file the request does not name). Returns
    /// what it came to, and whether it was a reread answered from view.
    pub(super) async fn guarded_run(
        &mut self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        ctx: &CallCtx<'_>,
        key: &str,
    ) -> (ToolOutput, bool) {
        let g = self.guards(call, args, st, key);
        st.answer_in_text |= g.text_only;
        let reread = g.reread.is_some();
        let out = match self.guarded_output(g, args, st) {
            Some(out) => out,
            None if call.name == ToolName::UpdatePlan => self.update_plan(args),
            None => tools::run(&self.tools, &call.name, args, ctx).await,
        };
        (out, reread)
    }
}
