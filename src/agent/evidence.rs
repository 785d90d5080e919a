//! Answers held to the evidence: exact values in an answer that no tool
//! returned are quoted against what the tools did return, and claims of
//! writes or passing checks that the receipt contradicts are flagged, on
//! every ending path.

use super::{Agent, TurnState, batch, harness};
use crate::protocol::Level;

impl Agent {
    /// However the turn ended, the answer the user reads does not stand
    /// against the facts: output it misquotes gets the output mm saw
    /// after it, a value it leaves out that mm got by running the call
    /// is given, and a claim of files written or tests passing that the
    /// receipt contradicts gets the receipt's words.
    pub(super) fn hold_to_evidence(&self, st: &mut TurnState) {
        if !self.on(crate::config::Behaviour::Evidence) {
            return;
        }
        // An answer that only repeats mm's note under a helper's answer
        // ("The helper wrote no file.", even when it wrote one): the
        // helper's answer is the turn's.
        if let Some(helper) = st.helper_answer.clone().filter(|h| !h.trim().is_empty())
            && (st.answer.trim().is_empty() || harness::echoes_helper_note(&st.answer))
        {
            st.answer = format!(
                "{}\n\nmm: the helper's answer, as it gave it; the model's own only repeated mm's note on it.",
                helper.trim()
            );
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
        if !st.question && self.nothing_changed(st) && batch::claims_a_change(&st.answer) {
            notes.push("mm: no file was written in this turn.".to_string());
        } else if harness::claims_tests_pass(&st.answer)
            && let Some(t) = st.tests.as_ref().filter(|t| t.passed == Some(false))
        {
            notes.push(format!("mm: `{}` fails ({}).", t.command, t.summary));
        } else if harness::claims_tests_pass(&st.answer)
            && crate::patterns::has_word(&st.answer, &["ran", "passed", "executed"])
            && st.tests.is_none()
            && st.model_checked.is_none()
        {
            // "I ran the tests and they passed", where none ran.
            notes.push("mm: no test ran in this turn.".to_string());
        } else if harness::claims_it_works(&st.answer)
            && let Some((failed, total)) = st.request_checks_failing()
        {
            notes.push(format!(
                "mm: {failed} of the {total} checks mm wrote from the request fail on the code as it is."
            ));
        }
        if let Some(n) = self.review_left_out(st) {
            notes.push(n);
        }
        if notes.is_empty() {
            return;
        }
        if !st.answer.trim().is_empty() {
            st.answer.push_str("\n\n");
        }
        st.answer.push_str(&notes.join("\n"));
    }

    /// No file changed in this turn: none written by a tool, and no
    /// command ran, or (with checkpoints to tell) those that ran changed
    /// none (a `git commit` of nothing, a failed build).
    fn nothing_changed(&self, st: &TurnState) -> bool {
        st.written.is_empty()
            && (st.commands == 0 || (self.git.is_some() && st.command_changes.is_empty()))
    }

    /// Claims the facts contradict, said to the user and kept for the
    /// receipt and `-json`.
    pub(super) fn flag_unbacked(&self, st: &mut TurnState) {
        let mut flags = Vec::new();
        if harness::echoes_instruction(&st.answer) {
            flags.push("the answer only repeats mm's instruction; it answers nothing".to_string());
        }
        if !st.question && self.nothing_changed(st) && batch::claims_a_change(&st.answer) {
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
