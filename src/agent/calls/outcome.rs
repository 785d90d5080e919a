//! What a call that ran comes to: the turn's bookkeeping, the checks a
//! change meets, the afterEdit hook.

use super::*;

impl Agent {
    /// What a call that ran came to, taken into the turn: the notes
    /// that go with its output (an edit made again, an error pasted as
    /// code, what a command changed, a write that changed nothing), the
    /// files written, removed names, approvals, the language server's
    /// verdicts, the follow-ups a change brings (callers, checks, a
    /// roll-back) and the afterEdit hook.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::agent) async fn take_outcome(
        &mut self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        out: &mut ToolOutput,
        key: String,
        writing_command: Option<String>,
        before: Option<crate::git::CheckpointId>,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        self.note_edit(call, args, st, out, &key);
        if let Some(command) = &writing_command {
            // And one after it, so what it changed is not taken later
            // for a change made outside mm.
            self.checkpoint(crate::git::Kind::Command, &format!("after: {command}"))
                .await;
            // What the command changed is mm's doing, not the user's.
            let changed = self.record_command_changes(&call.id, before).await?;
            if call.name == ToolName::Task || call.name == ToolName::AskAgent {
                st.helper_changed.extend(changed.iter().cloned());
            }
            st.note_command_changes(changed);
        }
        if call.name == ToolName::Task {
            st.helper_answer = Some(harness::without_echo(&out.text));
        }
        self.note_outcome(call, args, st, out, key);
        if self.harness_on()
            && let Some(change) = out.change.clone()
            && let Some(text) = self.follow_rename(st, &change, cancel).await
        {
            out.text.push_str(&text);
        }
        // The turn wrote the project's first test file: its tests are
        // the check from now on.
        if self.harness_on()
            && st.verify.is_none()
            && self.settings.bash_tool
            && self.settings.verify.is_none()
            && out
                .change
                .as_ref()
                .is_some_and(|c| harness::is_test_file(&c.path))
        {
            st.verify = harness::detect_verify(self.tools.sandbox.root());
        }
        self.check_the_change(call, st, out, cancel).await;
        self.after_edit_hook(out, cancel).await;
        Ok(())
    }

    /// An edit made: its pair noted (to tell it made again or undone);
    /// an error message sent as the code to replace is said to be one,
    /// with the line the error points at.
    fn note_edit(
        &self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        out: &mut ToolOutput,
        key: &str,
    ) {
        let key = key.to_string();
        if call.name == ToolName::EditFile && out.change.is_some() {
            st.edits_made.insert(key.clone());
            if let (Some(p), Some(o), Some(n)) = (
                tools::arg_str(args, crate::toolname::arg::PATH),
                tools::arg_str(args, crate::toolname::arg::OLD_STRING),
                tools::arg_str(args, crate::toolname::arg::REPLACEMENT),
            ) {
                st.edit_pairs.push((
                    p.trim_start_matches("./").to_string(),
                    o.to_string(),
                    n.to_string(),
                ));
            }
        }
        // The error message sent as the code to replace: say so, and
        // name the line the error points at.
        if self.harness_on()
            && call.name == ToolName::EditFile
            && out.status == ToolStatus::Error
            && out.text.contains("was not found")
            && let (Some(old), Some(fail)) = (
                tools::arg_str(args, crate::toolname::arg::OLD_STRING),
                st.last_failure.as_deref(),
            )
            && let Some(told) = harness::error_not_code(old, fail)
        {
            out.text = told;
        }
    }

    /// What the call's outcome tells the turn's bookkeeping: the steps
    /// taken, failures, commands and checks run, versions, removed names,
    /// files written, declines and approvals, the language server's
    /// verdicts.
    fn note_outcome(
        &self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        out: &mut ToolOutput,
        key: String,
    ) {
        // The same content written again: the change is made already,
        // which a small model that loops on it needs to hear.
        if self.harness_on()
            && call.name == ToolName::WriteFile
            && out.status == ToolStatus::Ok
            && out
                .text
                .ends_with("already has this content; nothing written")
        {
            out.text.push_str(
                ". That change is made already. If the request is done, give your answer now; if not, change only what is left.",
            );
        }
        st.history.push(batch::step_hash(&key, &out.text));
        // A write refused for want of a read carries the file and counts
        // as the read: sent again as it was, it runs (the trial's model
        // was told "send it again", then "not run again").
        if matches!(out.status, ToolStatus::Error | ToolStatus::Refused)
            && !out.text.contains(crate::tools::fs::SEND_AGAIN)
        {
            st.failures.insert(key, out.text.clone());
        }
        if call.name == ToolName::Bash
            && matches!(out.status, ToolStatus::Ok | ToolStatus::Error)
            && tools::arg_str(args, crate::toolname::arg::COMMAND)
                .is_some_and(|c| !crate::sandbox::Sandbox::is_read_only_command(c))
        {
            st.commands += 1;
            let command = tools::arg_str(args, crate::toolname::arg::COMMAND).unwrap_or_default();
            if st.is_check_command(command) {
                st.model_checked = Some((
                    command.to_string(),
                    out.status == ToolStatus::Ok,
                    st.changes(),
                ));
            } else {
                st.mutations += 1;
            }
        }
        if let Some(change) = &out.change {
            st.mutations += 1;
            st.note_version(change);
            if st.versions.get(&change.path).is_some_and(|v| {
                v.len() > 2 && v[..v.len() - 2].iter().any(|x| **x == *change.after)
            }) {
                st.revisits += 1;
            }
            let removed = tools::guard::removed_names(&change.before, &change.after);
            for name in removed {
                if !st.removed.iter().any(|(n, _)| *n == name) {
                    st.removed.push((name, change.path.clone()));
                }
            }
        }
        if let Some(change) = &out.change
            && !st.written.contains(&change.path)
        {
            st.written.push(change.path.clone());
        }
        st.declined |= out.declined;
        let rejected = out
            .declined
            .then(|| out.text.strip_prefix("the user rejected this change to "))
            .flatten();
        if let Some(rest) = rejected {
            match rest.split_once(": ") {
                Some((path, reason)) => {
                    st.user_said.push(reason.to_string());
                    st.refused.push(path.to_string());
                }
                None => {
                    if let Some((path, _)) = rest.split_once("; the file is unchanged") {
                        st.refused.push(path.to_string());
                    }
                }
            }
        }
        if let Some(change) = &out.change {
            if out.approved {
                st.approved.insert(change.path.clone());
            } else {
                st.approved.remove(&change.path);
            }
        }
        // What the server says of the files that use the changed one
        // counts at the end of the turn like the file's own errors.
        for (user, check) in &out.dependents {
            st.baselines
                .entry(user.clone())
                .or_insert_with(|| check.baseline.clone());
            st.checks.insert(user.clone(), check.clone());
        }
        if let Some(change) = &out.change {
            match &out.check {
                Some(check) => {
                    // Errors are counted against the file as the turn
                    // found it, not as the last write left it.
                    st.baselines
                        .entry(change.path.clone())
                        .or_insert_with(|| check.baseline.clone());
                    st.checks.insert(change.path.clone(), (**check).clone());
                }
                // Nothing to say any more (the server is off): an old
                // verdict would be stale.
                None => {
                    st.checks.remove(&change.path);
                }
            }
        }
    }

    /// A change made where a check judges it (the command the request
    /// says fails, the tests asked for): the check runs, and a change
    /// that broke the reproduction is put back unless a person approved
    /// it.
    async fn check_the_change(
        &mut self,
        call: &ToolCall,
        st: &mut TurnState,
        out: &mut ToolOutput,
        cancel: &CancellationToken,
    ) {
        if out.change.is_some()
            && self.harness_on()
            && (st.repro.is_some() || (st.wants_tests && st.verify.is_some()))
            && let Some(text) = self.check_after_change(st, cancel).await
        {
            let broke = std::mem::take(&mut st.broke);
            // The command the request said fails passed, and this
            // change made it fail: mm puts the file back.
            let repro_broke = broke
                && st
                    .tests
                    .as_ref()
                    .is_some_and(|t| Some(&t.command) == st.repro.as_ref());
            let failure = st.last_failure.clone().unwrap_or_default();
            // A change a person approved stays: mm says what fails.
            let undone = match out.change.clone().map(|c| *c) {
                Some(change) if repro_broke && !out.approved => {
                    self.roll_back(st, &change, cancel).await
                }
                _ => None,
            };
            match undone {
                Some(undone) => {
                    out.text.push_str(&undone);
                    out.text
                        .push_str(&format!("\nThe failure it caused:\n{failure}"));
                }
                None => {
                    out.text.push_str(&text);
                    // An edit that broke a passing check may be undone.
                    if broke && call.name == ToolName::EditFile {
                        st.edit_pairs.pop();
                    }
                }
            }
        }
    }

    /// The afterEdit hook after a change, and a formatter's change said.
    async fn after_edit_hook(&mut self, out: &mut ToolOutput, cancel: &CancellationToken) {
        if let Some(change) = out.change.clone()
            && let Some(hook) = self.settings.hooks.after_edit.clone()
        {
            if let Some(failed) = self.run_hook("afterEdit", &hook, cancel).await {
                out.text.push_str(&format!("\n{failed}"));
            }
            // A formatter's change: the file as it is now counts as
            // read, and the model hears that it differs.
            if self
                .tools
                .reread(&change.path)
                .is_some_and(|now| *now != *change.after)
            {
                out.text.push_str(&format!(
                    "\n[the afterEdit hook changed {} after this edit; read it again before you edit it]",
                    change.path
                ));
            }
        }
    }
}
