//! The end of a turn: a sequence of named rules, each of which may send the
//! model back with what the facts say (a reask, references left behind, a
//! claimed change never made, parts missing, a fix owed, claims the tools
//! do not back, an exit 0 that is not the task's success, an answer held to
//! the evidence).

use tokio_util::sync::CancellationToken;

use super::{Agent, MAX_FOLLOW_UPS, MAX_NUDGES, Stop, TurnState, batch, harness};
use crate::protocol::{Level, ToolStatus};
use crate::toolname::ToolName;
use crate::tools;

/// What the ending rules share, worked out as the turn ended.
pub(super) struct EndingFacts {
    /// The model may edit files (edit_file is offered).
    can_edit: bool,
    /// No write succeeded and no command changed a file in this turn.
    unchanged: bool,
    /// Unchanged, and not because a person said no.
    idle: bool,
    /// The whole-file fallback for a stalled edit has not been tried.
    whole_left: bool,
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

impl Agent {
    /// What this turn read: the request with its attachments and every
    /// tool result since.
    pub(super) fn turn_evidence(&self) -> String {
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
    pub(super) fn left_references(&self, st: &TurnState) -> Vec<(String, String, Vec<String>)> {
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
    pub(super) fn tell(&self, st: &mut TurnState, level: Level, why: impl Into<String>) {
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
        let ask = self.restated(st);
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
    pub(super) async fn ending_reask(
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
        // An answer that only sends back mm's instruction, or the request.
        let echoed = if harness::echoes_instruction(&st.answer) {
            Some((
                "mm's instruction",
                "Your reply repeated an instruction instead of answering.",
                "Answer it now, from what the tools returned.",
            ))
        } else if harness::echoes_request(&st.answer, &st.prompt) {
            Some((
                "the request",
                "Your reply repeated the request instead of answering it.",
                "Take the next step now (a change, a command), or answer from what the tools returned.",
            ))
        } else {
            None
        };
        if !st.reasked
            && let Some((what, said, next)) = echoed
        {
            st.reasked = true;
            self.tell(
                st,
                Level::Info,
                format!("the model's answer only repeated {what}; asking again"),
            );
            return Ok(Some(format!("{said}\n{ask}\n{next}")));
        }
        if let Some(text) = self.lsp_follow_up(st) {
            st.follow_ups += 1;
            return Ok(Some(format!("{text}\n{ask}")));
        }
        Ok(None)
    }

    /// A name the turn removed is still used elsewhere.
    pub(super) async fn ending_left_references(
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
    pub(super) async fn ending_claimed_change(
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
    pub(super) async fn ending_missing_parts(
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
                // A few named, the rest counted (a pasted table of values
                // listed 700 of them).
                const NAMED: usize = 6;
                let mut list = missing[..missing.len().min(NAMED)].join(", ");
                if missing.len() > NAMED {
                    list.push_str(&format!(" and {} more", missing.len() - NAMED));
                }
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
    pub(super) async fn ending_fix_owed(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
        ask: &str,
        f: &EndingFacts,
    ) -> Result<Option<String>, Stop> {
        // Asked for tests of the code as it is, the model stops with the
        // tests it wrote failing (and says the code has a bug): what the
        // code gives is what those tests are to expect.
        if f.can_edit
            && !st.told_unfinished
            && harness::asks_for_tests(&st.prompt)
            && !harness::asks_for_fix(&st.prompt)
            && st.written.iter().any(|w| harness::is_test_file(w))
            && let Some(t) = st.tests.as_ref().filter(|t| t.passed == Some(false))
        {
            st.told_unfinished = true;
            let facts = format!("`{}` fails ({})", t.command, t.summary);
            self.tell(
                st,
                Level::Info,
                format!("the tests the model wrote fail: {facts}; telling it"),
            );
            let lines = st.last_failure.clone().unwrap_or_default();
            return Ok(Some(format!(
                "The tests you wrote fail: {facts}.\n{lines}\n{ask}\nThe request asks for tests of the code as it is, not a change to it: change each failing test so it expects what the code gives (the output above shows it), then run the tests again."
            )));
        }
        // Asked for a fix, the model stops with nothing written and nothing
        // checked in this turn: the project's tests say whether the fix
        // is still owed; their failure goes back with what mm found.
        // A review ("review x.py for bugs") asks for words, not a fix.
        if f.can_edit
            && !st.question
            && !st.text_only
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
            && !st.text_only
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
    pub(super) async fn ending_claims(
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
    pub(super) async fn ending_exit_zero(
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
    pub(super) async fn ending_answers(
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
}
