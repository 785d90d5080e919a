//! A stalled model still delivers. A small model given an edit task
//! sometimes reads and rereads the files it was given and never writes,
//! or its tool calls keep failing to parse. The same model, asked in a
//! request of its own for the whole file as text, writes it. So when an
//! edit task has gone `STALL_ROUNDS` rounds with reads only (fewer when it
//! reread a file it had in view), or two rounds of calls that did not
//! parse, mm asks, without tools, for each file the request is about in
//! full, and writes what comes back through the same checks as a
//! `write_file` (no definition lost, no unasked rename, the code the
//! request spells out present), then runs the checks. The model goes on
//! from there.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::focus::{
    BLOCKS_SYSTEM, CHANGE_SYSTEM, MAX_CALLERS, MAX_FILE_LINES, blocks_change, change_of,
    whole_request,
};
use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::toolname::ToolName;

/// Rounds of reads only before mm asks for the file itself.
const STALL_ROUNDS: u32 = 3;
/// As many, when the model reread a file it had in view.
const STALL_ROUNDS_REREAD: u32 = 2;
/// Rounds in a row that changed no file (reads, and commands that only
/// look or fail), before mm asks for the file.
const IDLE_ROUNDS: u32 = 5;
/// Rounds whose calls did not parse before mm asks for the file.
const BAD_ROUNDS: u32 = 2;
/// Context files (a specification, notes) sent with the request, at most.
const MAX_CONTEXT_BYTES: usize = 12 * 1024;
/// Tokens a whole-file reply may take.
const WHOLE_CAP: u64 = 3072;

/// Tokens a whole-file reply for a file of `before` may take: twice the
/// file and room for what is added (about 3 bytes a token), at most
/// `WHOLE_CAP`. A small model that loops on a 14-line file went on for
/// 3,072 tokens (12 minutes on 2 cores) before the cap cut it.
fn whole_cap(before: &str) -> u64 {
    (2 * before.len() as u64 / 3 + 768).min(WHOLE_CAP)
}

/// A file to write whole: its path and content (None: to be created).
type Target = (String, Option<String>);

/// A call that only looks: it changes nothing.
pub fn is_read_call(name: &str) -> bool {
    ToolName::parse(name).is_some_and(ToolName::only_looks)
}

static DOC_FILE: LazyLock<Option<Regex>> =
    LazyLock::new(|| harness::regex(r"[A-Za-z0-9_./-]+\.(?:md|txt|rst|adoc)(?-u:\b)").ok());

/// The documents (a specification, notes) the request names.
pub fn named_docs(prompt: &str) -> Vec<String> {
    let Some(re) = DOC_FILE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(prompt) {
        let f = m.as_str().trim_start_matches("./").to_string();
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The request for one existing file's change as search/replace blocks:
/// the request, the context files, the file as it is, and the format.
pub fn blocks_request(
    prompt: &str,
    file: &str,
    before: &str,
    context: &[(String, String)],
) -> String {
    let mut text = whole_request(prompt, file, Some(before), context);
    if let Some(cut) = text.rfind(&format!("\nWrite {file} in full")) {
        text.truncate(cut);
    }
    text.push_str(&format!(
        "\nReply with the change to {file} as search/replace blocks, one for each place that changes:\n```\n<<<<<<< SEARCH\n(lines copied exactly from {file})\n=======\n(the lines to put in their place)\n>>>>>>> REPLACE\n```\nTo add new code, SEARCH a line next to where it goes and repeat that line in the REPLACE part with the new code. Change only what the request asks."
    ));
    text
}

impl Agent {
    /// The documents the request names (a SPEC.md) with their text, as
    /// many as fit in `MAX_CONTEXT_BYTES`.
    pub(super) fn named_doc_texts(&self, prompt: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut used = 0;
        for doc in named_docs(prompt) {
            if let Some(body) = self.content_now(&doc)
                && used + body.len() <= MAX_CONTEXT_BYTES
            {
                used += body.len();
                out.push((doc, body));
            }
        }
        out
    }

    /// An edit task: not a question, not a request for text, and the
    /// tools can write.
    pub(super) fn edit_task(&self, st: &TurnState) -> bool {
        !st.question
            && !st.text_only
            && !st.answer_in_text
            && self.specs.iter().any(|s| s.name == ToolName::WriteFile)
    }

    /// A source file the request names (to change or to create) that the
    /// turn has not written.
    pub(super) fn named_unwritten(&self, st: &TurnState) -> bool {
        let tests_asked = harness::asks_for_tests(&st.prompt);
        harness::named_files(&st.prompt)
            .iter()
            .filter(|f| super::focus::has_definitions(f))
            .filter(|f| tests_asked || !harness::is_test_file(f))
            .filter(|f| !harness::only_in_quoted_command(&st.prompt, f))
            .any(|f| !st.written.contains(f))
    }

    /// The turn has stalled: an edit task with nothing written after
    /// rounds of reads only, or of calls that did not parse.
    pub(super) fn stalled(&self, st: &TurnState) -> bool {
        if !self.on(Behaviour::Stall) || st.stall_tried || st.declined || !st.written.is_empty() {
            return false;
        }
        if !self.edit_task(st) || !harness::asks_for_change(&st.prompt) {
            return false;
        }
        let needed = if st.rereads > 0 {
            STALL_ROUNDS_REREAD
        } else {
            STALL_ROUNDS
        };
        st.read_rounds >= needed || st.bad_rounds >= BAD_ROUNDS || st.idle_rounds >= IDLE_ROUNDS
    }

    /// The files the request is about, each with its content (None: to
    /// be created), and the documents to send with them.
    fn whole_targets(&self, st: &TurnState) -> (Vec<Target>, Vec<(String, String)>) {
        let mut named = harness::named_files(&st.prompt);
        // The program a quoted command runs is how the user shows the
        // problem; with another file named, that one is what to change.
        if named
            .iter()
            .any(|f| !harness::only_in_quoted_command(&st.prompt, f))
        {
            named.retain(|f| !harness::only_in_quoted_command(&st.prompt, f));
        }
        let tests_asked = harness::asks_for_tests(&st.prompt);
        let exists = |f: &str| {
            self.tools
                .sandbox
                .check_read(f)
                .is_ok_and(|r| r.abs.is_file())
        };
        // A file the request names that does not exist yet is the one to
        // write; the others it names are what it is written from.
        let new: Vec<String> = named
            .iter()
            .filter(|f| !exists(f) && self.tools.sandbox.check_write(f).is_ok())
            .filter(|f| tests_asked || !harness::is_test_file(f))
            .cloned()
            .collect();
        let mut context: Vec<(String, String)> = Vec::new();
        let add_context = |context: &mut Vec<(String, String)>, f: &str| {
            let used: usize = context.iter().map(|(_, b)| b.len()).sum();
            if let Some(body) = self.content_now(f)
                && used + body.len() <= MAX_CONTEXT_BYTES
                && !context.iter().any(|(p, _)| p == f)
            {
                context.push((f.to_string(), body));
            }
        };
        for doc in named_docs(&st.prompt) {
            add_context(&mut context, &doc);
        }
        if !new.is_empty() {
            // The new files first; then, unless the request asks for
            // tests, the short source files it names beside them, which
            // the new ones are usually for ("add config.py and make
            // wrap.py use it"): those get the new files as context.
            let mut targets: Vec<Target> = new.into_iter().take(2).map(|f| (f, None)).collect();
            for f in named.iter().filter(|f| exists(f)) {
                let body = self.content_now(f);
                match body {
                    Some(b)
                        if !tests_asked
                            && !st.written.contains(f)
                            && targets.len() < 3
                            && super::focus::has_definitions(f)
                            && !harness::is_test_file(f)
                            && b.lines().count() <= MAX_FILE_LINES * 2 =>
                    {
                        targets.push((f.clone(), Some(b)));
                    }
                    _ => add_context(&mut context, f),
                }
            }
            return (targets, context);
        }
        // A file this turn already wrote is what the others are to fit:
        // context, not asked for again (one file of a two-file change
        // done, the other not).
        for f in named.iter().filter(|f| st.written.contains(*f)) {
            add_context(&mut context, f);
        }
        let mut targets: Vec<Target> = named
            .iter()
            .filter(|f| exists(f) && (tests_asked || !harness::is_test_file(f)))
            .filter(|f| !st.written.contains(*f))
            .filter_map(|f| {
                let body = self.content_now(f)?;
                (body.lines().count() <= MAX_FILE_LINES * 2).then(|| (f.clone(), Some(body)))
            })
            .take(2)
            .collect();
        if targets.is_empty() {
            // Named nothing: the one source file the turn looked at.
            let read: Vec<&String> = st
                .shown
                .keys()
                .filter(|f| !harness::is_test_file(f) && !named_docs(f).contains(f))
                .filter(|f| harness::named_files(f).first() == Some(*f))
                .collect();
            if let [one] = read.as_slice()
                && let Some(body) = self.content_now(one)
                && body.lines().count() <= MAX_FILE_LINES * 2
            {
                targets.push(((*one).clone(), Some(body)));
            }
        }
        (targets, context)
    }

    /// Asks for each target file whole, without tools, and writes what
    /// comes back when it passes the write checks; runs the checks after.
    /// Returns what to tell the model, or None when nothing was written.
    pub(super) async fn deliver_whole(
        &mut self,
        st: &mut TurnState,
        why: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        st.stall_tried = true;
        let first_look = st.round == 0;
        let (mut targets, context) = self.whole_targets(st);
        targets.retain(|(f, _)| st.off_limits(f).is_none());
        if targets.is_empty() {
            return None;
        }
        let blocks = self.settings.edit_format == crate::config::EditFormat::Blocks;
        let names: Vec<&str> = targets.iter().map(|(f, _)| f.as_str()).collect();
        let names = names.join(" and ");
        self.notice(
            Level::Info,
            if blocks {
                format!("{why}: asking for search/replace blocks for {names}")
            } else {
                format!("{why}: asking for {names} in full, as text")
            },
        );
        let mut diffs = Vec::new();
        let mut refused: Vec<String> = Vec::new();
        let mut wanted = targets.len();
        let mut queue: std::collections::VecDeque<(Target, Vec<(String, String)>)> =
            targets.into_iter().map(|t| (t, context.clone())).collect();
        let mut callers_added = 0;
        let mut first = true;
        while let Some(((file, before), context)) = queue.pop_front() {
            let companion = !std::mem::take(&mut first);
            let (mut made, as_is) = self
                .ask_whole(
                    st,
                    (&file, before.as_deref()),
                    &context,
                    companion,
                    &mut refused,
                    cancel,
                )
                .await;
            if as_is {
                wanted = wanted.saturating_sub(1);
            }
            // The file came back as it was (a small model shown a file
            // whole hands it back): the functions the request adds to it
            // and it lacks are asked for alone.
            if made.is_none()
                && !companion
                && let Some(b) = &before
                && refused.last().is_some_and(|r| r.ends_with(": no change"))
            {
                made = self
                    .missing_alone(st, &file, b, &context, &mut refused, cancel)
                    .await;
            }
            let Some(after) = made else {
                continue;
            };
            let after = match &before {
                Some(b) => self.scoped_to_request(st, &file, b, after),
                None => after,
            };
            let how = if blocks && before.is_some() {
                "as search/replace blocks"
            } else {
                "whole"
            };
            let label = format!("write {file} (asked for {how}: {why})");
            if !self
                .own_write(st, &file, after.clone(), &label, cancel)
                .await
            {
                continue;
            }
            // What landed: the user may have kept only some hunks.
            let after = self.content_now(&file).unwrap_or(after);
            diffs.push(crate::diff::unified(
                &file,
                before.as_deref().unwrap_or(""),
                &after,
                1,
                60,
            ));
            diffs.extend(st.rejected_note(&file));
            // A new file is what the files after it are to use.
            if before.is_none() {
                for (_, ctx) in &mut queue {
                    ctx.push((file.clone(), after.clone()));
                }
            }
            if let Some(b) = &before {
                let added = self.queue_callers(st, &file, b, &after, &mut queue, callers_added);
                callers_added += added;
                wanted += added;
            }
        }
        if diffs.is_empty() {
            refused.dedup();
            self.notice(
                Level::Info,
                if refused.is_empty() {
                    "no usable reply came back; nothing written".to_string()
                } else {
                    format!(
                        "no usable reply came back ({}); nothing written",
                        refused.join("; ")
                    )
                },
            );
            return None;
        }
        self.whole_written(st, why, &diffs, wanted, first_look, cancel)
            .await
    }

    /// A definition whose parameters changed: the files that call it are
    /// queued to be asked for the same way, with this file beside them
    /// (up to `MAX_CALLERS` in all, `so_far` of them already). Returns
    /// how many were queued.
    fn queue_callers(
        &self,
        st: &TurnState,
        file: &str,
        before: &str,
        after: &str,
        queue: &mut std::collections::VecDeque<(Target, Vec<(String, String)>)>,
        so_far: usize,
    ) -> usize {
        let pending: Vec<String> = queue.iter().map(|((f, _), _)| f.clone()).collect();
        let mut added = 0;
        for (caller, text) in self.callers_of(before, after, file, &st.written, &pending) {
            if so_far + added == MAX_CALLERS {
                break;
            }
            added += 1;
            self.notice(
                Level::Info,
                format!("{caller} calls what changed in {file}: asking for it too"),
            );
            queue.push_back((
                (caller, Some(text)),
                vec![(file.to_string(), after.to_string())],
            ));
        }
        added
    }

    /// A file asked for whole, with its changes to functions the request
    /// does not name (beside one it does) taken back: not put to the user
    /// as hunks nobody asked for.
    fn scoped_to_request(&self, st: &TurnState, file: &str, before: &str, after: String) -> String {
        let Some((scoped, back)) =
            crate::tools::guard::unasked_taken_back(before, &after, &st.prompt)
        else {
            return after;
        };
        self.notice(
            Level::Info,
            format!(
                "left out the reply's changes to {} in {file}: the request does not name {}",
                back.join(", "),
                if back.len() == 1 { "it" } else { "them" }
            ),
        );
        scoped
    }

    /// One file asked for whole (or as search/replace blocks) without
    /// tools, at two temperatures: the new text when a reply passes the
    /// write checks, and whether a file after the first came back as it
    /// was (it already does its part). Refusals are added to `refused`.
    async fn ask_whole(
        &mut self,
        st: &TurnState,
        (file, before): (&str, Option<&str>),
        context: &[(String, String)],
        companion: bool,
        refused: &mut Vec<String>,
        cancel: &CancellationToken,
    ) -> (Option<String>, bool) {
        let blocks = self.settings.edit_format == crate::config::EditFormat::Blocks;
        let ask = match before {
            Some(b) if blocks => blocks_request(&st.prompt, file, b, context),
            _ => whole_request(&st.prompt, file, before, context),
        };
        for temperature in [0.2, 0.7] {
            let Some(reply) = self
                .side_request_capped(
                    if blocks && before.is_some() {
                        BLOCKS_SYSTEM
                    } else {
                        CHANGE_SYSTEM
                    },
                    &ask,
                    temperature,
                    before.map_or(WHOLE_CAP, whole_cap),
                    cancel,
                )
                .await
            else {
                break;
            };
            let judged = match before {
                Some(b) if blocks => Some(blocks_change(&st.prompt, file, b, &reply, &st.spelled)),
                Some(b) => Some(change_of(&st.prompt, file, b, &reply, &st.spelled)),
                None => None,
            };
            // A file after the first, as it is, already does its part
            // (the first is the one the request is about: asked again).
            if companion && let Some(Err("no change")) = &judged {
                return (None, true);
            }
            if let Some(Err(e)) = &judged {
                refused.push(format!("{file}: {e}"));
            }
            let after = match judged {
                Some(j) => j.ok(),
                None => super::recover::fenced_blocks(&reply)
                    .first()
                    .map(|(_, _, b)| b.to_string())
                    .filter(|b| !b.trim().is_empty())
                    .map(|mut b| {
                        if !b.ends_with('\n') {
                            b.push('\n');
                        }
                        b
                    }),
            };
            if after.is_some() {
                return (after, false);
            }
        }
        (None, false)
    }

    /// The functions the request adds to `file` (text `b`) and it lacks,
    /// asked for alone: the file with them, when that passes the write
    /// checks.
    async fn missing_alone(
        &mut self,
        st: &TurnState,
        file: &str,
        b: &str,
        context: &[(String, String)],
        refused: &mut Vec<String>,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let mut missing: Vec<String> = harness::asked_definitions(&st.prompt)
            .into_iter()
            .filter(|(n, f)| {
                f.as_deref() == Some(file) && !crate::tools::guard::definitions(b).contains(n)
            })
            .map(|(n, _)| n)
            .collect();
        // Calls no file defines, when this is the one source file
        // the request names.
        let sources: Vec<String> = harness::named_files(&st.prompt)
            .into_iter()
            .filter(|f| super::focus::has_definitions(f))
            .collect();
        if sources == [file] {
            for n in harness::undefined_calls(&st.prompt, &self.sources_now()) {
                if !missing.contains(&n) {
                    missing.push(n);
                }
            }
        }
        if missing.is_empty() {
            return None;
        }
        let ask = super::focus::new_functions_request(&st.prompt, context, file, b, &missing);
        let reply = self
            .side_request(super::focus::IMPLEMENT_SYSTEM, &ask, 0.2, cancel)
            .await?;
        match change_of(&st.prompt, file, b, &reply, &st.spelled) {
            Ok(after) => Some(after),
            Err(e) => {
                refused.push(format!(
                    "{file}, asked for {} alone: {e}",
                    missing.join(", ")
                ));
                None
            }
        }
    }

    /// After files asked for whole were written (`diffs`, of `wanted`):
    /// the checks run, the request's checks too, and what the model is
    /// told; a change done before the model's first look (or whose request
    /// checks all pass) is settled.
    async fn whole_written(
        &mut self,
        st: &mut TurnState,
        why: &str,
        diffs: &[String],
        wanted: usize,
        first_look: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let blocks = self.settings.edit_format == crate::config::EditFormat::Blocks;
        let mut passing = true;
        let checks = match self.run_checks(st, cancel).await {
            None => st
                .tests
                .as_ref()
                .map(|t| format!("\n`{}` passes ({}).", t.command, t.summary))
                .unwrap_or_default(),
            Some((command, out)) => {
                passing = false;
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!("\n`{command}` fails now:\n{lines}")
            }
        };
        // No test to run: the checks written from the request's words,
        // now, before the model is asked anything more.
        let asked_for = if blocks {
            "the change as search/replace blocks"
        } else {
            "the file in full as text"
        };
        if passing && let Some(failed) = self.request_checks(st, cancel).await {
            return Some(format!(
                "[mm: {why}, so mm asked for {asked_for} and wrote it:]\n{}\n{failed}",
                diffs.concat()
            ));
        }
        // Before the model's first look, with every file written, every
        // check passing and the code the request spells out in place, the
        // change is done: the model is asked for its answer, without
        // tools (a small model's "review" edits broke such changes).
        let spelled_in = |code: &str| {
            self.sources_now()
                .iter()
                .any(|(_, t)| harness::has_code(t, code))
        };
        // So is one whose request checks (its examples, checks written from
        // its words) ran and all pass, whenever it came: the rounds a small
        // model spends "checking" such a change rewrite it or loop.
        let checked = st.request_checks_total > 0
            && st
                .request_checked
                .as_ref()
                .is_some_and(|(_, failed)| *failed == 0);
        if (first_look || checked)
            && passing
            && diffs.len() == wanted
            && st.spelled.iter().all(|(_, c)| spelled_in(c))
        {
            st.settled = true;
            st.answer_next = !first_look;
        }
        let checks = if checked {
            format!(
                "{checks}\nThe {} check(s) mm wrote from the request's words pass.",
                st.request_checks_total
            )
        } else {
            checks
        };
        let end = if st.settled {
            "No tool call is needed: check the change against the request and say in a few sentences what changed."
        } else {
            "Check the change against the request: fix what is missing or wrong with edit_file, or give your answer."
        };
        Some(format!(
            "[mm: {why}, so mm asked for {asked_for} and wrote it:]\n{}{checks}\n{}\n{end}",
            diffs.concat(),
            self.restated(st)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_file_reply_may_take_what_the_file_needs_and_no_more() {
        // A 14-line stub: room for twice it and a body, not 3,072 tokens.
        let stub = "function last(items) {\n  return items[items.length - 1];\n}\n".repeat(4);
        let cap = whole_cap(&stub);
        assert!((768..1024).contains(&cap), "{cap}");
        assert_eq!(whole_cap(&"x".repeat(20_000)), WHOLE_CAP);
    }

    #[test]
    fn documents_a_request_names_are_found() {
        assert_eq!(
            named_docs("Implement parse in dur.py as SPEC.md and docs/rules.txt say"),
            vec!["SPEC.md", "docs/rules.txt"]
        );
        assert!(named_docs("fix app.py").is_empty());
    }

    #[test]
    fn reads_are_told_from_changes() {
        for r in ["read_file", "grep", "glob", "list_dir", "lsp_references"] {
            assert!(is_read_call(r), "{r}");
        }
        for w in ["write_file", "edit_file", "bash", "lsp_rename"] {
            assert!(!is_read_call(w), "{w}");
        }
    }

    #[test]
    fn the_whole_file_request_carries_the_spec_and_the_file() {
        let ask = whole_request(
            "Implement parse_duration in durations.py following SPEC.md",
            "durations.py",
            Some("def parse_duration(s):\n    raise NotImplementedError\n"),
            &[(
                "SPEC.md".into(),
                "# Durations\n1h30m is 5400 seconds.\n".into(),
            )],
        );
        assert!(ask.contains("SPEC.md:\n```\n# Durations"));
        assert!(ask.contains("durations.py is now:\n```python\ndef parse_duration"));
        assert!(ask.ends_with("Keep everything else in it as it is."));
        let new = whole_request("Create test_x.py", "test_x.py", None, &[]);
        assert!(new.contains("test_x.py does not exist yet"));
    }
}
