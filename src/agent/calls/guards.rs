//! The harness's guards on one tool call: each says whether the call is
//! refused before it runs (a test file changed to pass, an edit made
//! again or undone, a rename or a removal the request did not ask for,
//! text written over a file, a file reread unchanged, a write to a file
//! the request does not name) and with what words.

use super::*;

impl Agent {
    /// What each guard of the harness says of this call (all are asked,
    /// as a reread counts even when another guard refuses the call).
    pub(super) fn guards(
        &mut self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &mut TurnState,
        key: &str,
    ) -> Guards {
        let test_file = self.unasked_test_change(call, args, st);
        // The same edit made a second time changes the file again (its
        // replacement holds its old_string): a small model repeats one
        // and grows the file at each round.
        let edit_again = call.name == ToolName::EditFile
            && st.edits_made.contains(key)
            && matches!(
                (tools::arg_str(args, crate::toolname::arg::OLD_STRING), tools::arg_str(args, crate::toolname::arg::REPLACEMENT)),
                (Some(o), Some(n)) if !o.is_empty() && n.contains(o)
            );
        let undo = self.undoes_an_edit(call, args, st);
        // Asked to change a function it names, a small model renames
        // it (`format_list` to `format_list_with_sep`): the user's code
        // calls it by the name the request used.
        let renames_named = (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                harness::unasked_rename(&st.prompt, old, new)
            })
            .flatten();
        // Asked to add or fix something, a small model takes out a
        // definition the request does not name (`pop` replaced by the
        // `peek` it was asked to add).
        let removes = (call.name == ToolName::EditFile && self.on(crate::config::Behaviour::Keep))
            .then(|| self.unasked_removal(st, args))
            .flatten();
        // Asked to fix a failure, a small model renames a variable
        // (`times` to `times_int` everywhere): a rename changes nothing
        // the code does, and it broke a command-line flag.
        let rename_only = (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                let fail = st.last_failure.as_deref()?;
                let path = tools::arg_str(args, crate::toolname::arg::PATH)?;
                let r = self.tools.sandbox.check_read(path).ok()?;
                let file = crate::paths::read_checked_text(&r.abs).ok()?;
                harness::rename_only_refusal(old, new, &file, fail, &st.prompt)
            })
            .flatten();
        // Asked for a commit message or a summary of piped text, a
        // small model writes the text (or the diff it was given) over
        // a file instead of answering.
        let text_only =
            crate::toolname::edits(call.name.as_str()) && self.harness_on() && st.text_only;
        // A file the model has in view, unchanged since: one line, not
        // the file again (a small model rereads what it was given).
        let reread = (call.name == ToolName::ReadFile)
            .then(|| self.unchanged_read(st, args))
            .flatten();
        st.rereads += u32::from(reread.is_some());
        // The request names a file to create, and the model writes to
        // another one it does not name (tests into the module).
        let elsewhere = crate::toolname::edits(call.name.as_str())
            .then(|| tools::arg_str(args, crate::toolname::arg::PATH))
            .flatten()
            .filter(|_| self.on(crate::config::Behaviour::Named))
            .and_then(|p| self.named_elsewhere(st, p));
        // The user said to leave the file alone.
        let left_alone = crate::toolname::edits(call.name.as_str())
            .then(|| tools::arg_str(args, crate::toolname::arg::PATH))
            .flatten()
            .and_then(|p| self.tools.sandbox.check_read(p).ok())
            .map(|r| r.rel)
            .filter(|rel| st.hands_off.contains(rel));
        let cannot_write = (call.name == ToolName::Task && self.harness_on())
            .then(|| self.task_that_cannot_write(st, args))
            .flatten();
        Guards {
            test_file,
            edit_again,
            undo,
            renames_named,
            removes,
            rename_only,
            text_only,
            reread,
            elsewhere,
            cannot_write,
            left_alone,
        }
    }

    /// An existing test file an edit would change, unasked.
    fn unasked_test_change(
        &self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &TurnState,
    ) -> Option<String> {
        // Asked to make failing tests pass, a small model weakens the
        // test: changing an existing test file is refused unless the
        // request asks for test changes.
        crate::toolname::edits(call.name.as_str())
            .then(|| tools::arg_str(args, crate::toolname::arg::PATH))
            .flatten()
            .map(|p| p.trim_start_matches("./").to_string())
            .filter(|p| {
                self.harness_on()
                    && st.wants_tests
                    && !harness::asks_for_tests(&st.prompt)
                    // The user, rejecting a change, asked for the tests.
                    && !st
                        .user_said
                        .iter()
                        .any(|r| crate::patterns::has_word(r, &["test", "tests"]))
                    && harness::is_test_file(p)
                    && self.tools.sandbox.root().join(p).is_file()
            })
    }

    /// The (old, new) of an edit made this turn that this one reverses.
    fn undoes_an_edit(
        &self,
        call: &ToolCall,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &TurnState,
    ) -> Option<(String, String)> {
        // An edit that reverses one made this turn: a small model
        // swings a change back and forth until the rounds run out.
        (call.name == ToolName::EditFile && self.harness_on())
            .then(|| {
                let path =
                    tools::arg_str(args, crate::toolname::arg::PATH)?.trim_start_matches("./");
                let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
                let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
                // Undoing a change that left errors (a line that no
                // longer parses) is the repair, not going back on it.
                let rel = self.tools.sandbox.check_read(path).ok()?.rel;
                let broke = st
                    .checks
                    .get(&rel)
                    .is_some_and(|c| turn_new_errors(st, &rel, c) > 0);
                if broke {
                    return None;
                }
                st.edit_pairs
                    .iter()
                    .find(|(p, o, n)| p == path && o == new && n == old)
                    .map(|(_, o, n)| (o.clone(), n.clone()))
            })
            .flatten()
    }

    /// The definitions an `edit_file` call would take out of its file
    /// that the request does not name or ask to remove, and the file.
    fn unasked_removal(
        &self,
        st: &TurnState,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<(Vec<String>, String)> {
        let path = tools::arg_str(args, crate::toolname::arg::PATH)?;
        let old = tools::arg_str(args, crate::toolname::arg::OLD_STRING)?;
        let new = tools::arg_str(args, crate::toolname::arg::REPLACEMENT)?;
        let r = self.tools.sandbox.check_read(path).ok()?;
        let file = crate::paths::read_checked_text(&r.abs).ok()?;
        let all = args
            .get(crate::toolname::arg::REPLACE_ALL)
            .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"));
        let after = tools::fs::edit_outcome(&file, old, new, all)?;
        let lost = harness::unasked_removal(&st.prompt, &file, &after);
        (!lost.is_empty()).then_some((lost, r.rel))
    }

    /// The answer of the first guard that stops the call, or None to run it.
    pub(super) fn guarded_output(
        &self,
        g: Guards,
        args: &serde_json::Map<String, serde_json::Value>,
        st: &TurnState,
    ) -> Option<ToolOutput> {
        let refused = |why: String| Some(ToolOutput::refused(why));
        if let Some(rel) = &g.left_alone {
            return refused(format!(
                "refused: the user asked to leave {rel} alone. Nothing was written. Change only what the request asks, in the other files; if that needs {rel} changed, say so in your answer.\n{}",
                self.restated(st)
            ));
        }
        if let Some(p) = &g.test_file {
            return refused(self.test_file_refusal(p, &st.prompt));
        }
        if g.text_only {
            return refused(format!(
                "refused: the request asks for text in your answer, not for a change to a file. Nothing was written. Reply with the text itself{}.\n{}",
                if st.piped {
                    " (what was piped in is context, not a file to write)"
                } else {
                    ""
                },
                self.restated(st)
            ));
        }
        if let Some(why) = g.rename_only {
            return refused(why);
        }
        if let Some((o, n)) = g.undo {
            let short = |t: &str| {
                t.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect::<String>()
            };
            return refused(format!(
                "refused: this edit would undo the change you made earlier in this turn (`{}` became `{}`). Nothing was written. If that change was right, the work may be done: check it and answer.\n{}",
                short(&o),
                short(&n),
                self.restated(st)
            ));
        }
        if let Some((old, new)) = g.renames_named {
            return refused(format!(
                "refused: the request names {old}, and this edit renames it to {new}; the request does not ask for a rename. Nothing was written. Keep the name {old} and change only what the request asks.\n{}",
                self.restated(st)
            ));
        }
        if let Some((names, rel)) = g.removes {
            return refused(format!(
                "refused: this edit would take {} out of {rel}, and the request does not ask to remove {}. Nothing was written. Keep what is there and add beside it: old_string = the last lines before the place for the new code, replacement = those same lines followed by the new code.\n{}",
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" },
                self.restated(st)
            ));
        }
        if let Some(line) = g.reread {
            return Some(ToolOutput::ok(line));
        }
        if let Some(why) = g.elsewhere {
            return refused(why);
        }
        if g.edit_again {
            return refused(format!(
                "refused: this exact edit was already made in this turn; making it again would change the file a second time. Nothing was written. read_file {} to see it as it is now.\n{}",
                tools::arg_str(args, crate::toolname::arg::PATH).unwrap_or_default(),
                self.restated(st)
            ));
        }
        g.cannot_write.map(ToolOutput::refused)
    }
}

/// What the harness's guards say of one tool call.
pub(super) struct Guards {
    /// An existing test file the call would change, unasked.
    pub(super) test_file: Option<String>,
    /// The same edit made a second time.
    pub(super) edit_again: bool,
    /// The edit undoes one made this turn: (old, new) of that one.
    pub(super) undo: Option<(String, String)>,
    /// The edit renames a name the request uses: (old, new).
    pub(super) renames_named: Option<(String, String)>,
    /// Definitions the edit takes out unasked, and the file.
    pub(super) removes: Option<(Vec<String>, String)>,
    /// Why a rename-only edit is refused.
    pub(super) rename_only: Option<String>,
    /// The request asks for text, not a file change.
    pub(super) text_only: bool,
    /// The one line that answers a read of a file unchanged in view.
    pub(super) reread: Option<String>,
    /// Why a write to a file the request does not name is refused.
    pub(super) elsewhere: Option<String>,
    /// Why a change is not handed to a role that cannot write.
    pub(super) cannot_write: Option<String>,
    /// A file the user said to leave alone, which the call would change.
    pub(super) left_alone: Option<String>,
}
