//! How candidates end: the best kept when none passed, the winner written as
//! mm's own change with its approval and the checks run again, and a
//! candidate's failures counted in a scratch copy.

use super::*;

impl Agent {
    /// No candidate passed every check: the best, when it fails fewer of
    /// the request's checks than the code does now, is kept as a step
    /// forward; else nothing is written. `n` candidates were tried.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::agent) async fn keep_best(
        &mut self,
        st: &mut TurnState,
        t: &focus::Target,
        n: usize,
        best: Option<Best>,
        command: &str,
        now: usize,
        cancel: &CancellationToken,
    ) -> Option<String> {
        // None passes every check; one that fails fewer of the
        // request's checks than the code does now is a step forward.
        if let Some((k, after, changed, _)) = best
            && command == REQUEST_CHECKS
            && now > 0
            && k < now
        {
            let words = format!(
                "{}, none passed every check",
                tally(n, None).trim_end_matches(", none passed")
            );
            let label = format!(
                "{} in {} ({words}; {k} of the request's checks fail instead of {now})",
                changed.join(", "),
                t.file
            );
            if self.own_write(st, &t.file, after, &label, cancel).await {
                st.candidate_notes.push(format!("{words}; the best kept"));
                self.notice(
                        Level::Info,
                        format!("{words}: the one that fails {k} of the request's checks (not {now}) is in {} now", t.file),
                    );
                let still = match st.request_checks.clone() {
                    Some(cmd) => self
                        .run_request_checks(&cmd, cancel)
                        .await
                        .map(|(_, out)| {
                            out.lines()
                                .filter(|l| l.starts_with("FAILED: "))
                                .collect::<Vec<_>>()
                                .join("\n")
                        })
                        .unwrap_or_default(),
                    None => String::new(),
                };
                if !still.is_empty() {
                    st.last_failure = Some(still.clone());
                }
                st.request_checked = Some((self.written_now(st), still.lines().count()));
                let total = st.request_checks_total;
                let count = if still
                    .lines()
                    .any(|l| l.starts_with("FAILED: import ") || l.starts_with("FAILED: require("))
                {
                    total
                } else {
                    still.lines().count()
                };
                self.note_best(st, count);
                st.candidate_notes
                    .retain(|n| !n.starts_with("request checks:"));
                st.candidate_notes.push(format!(
                    "request checks: {} of {} failed",
                    still.lines().count(),
                    st.request_checks_total
                ));
                return Some(format!(
                    "\n[mm asked for {} {n} time(s) and tried each in a scratch copy: none passes every check; the one that fails fewest ({k}, not {now}) is in {} now. What still fails:]\n{still}\nFix that with edit_file, or say why a check is wrong.",
                    changed.join(", "),
                    t.file
                ));
            }
        }
        self.notice(
            Level::Info,
            format!(
                "{} for {} in {} (scratch copies; nothing written)",
                tally(n, None),
                t.names.join(", "),
                t.file
            ),
        );
        st.candidate_notes.push(tally(n, None));
        None
    }

    /// A candidate passed (or failed only checks mm wrote that every
    /// candidate failed, `doubted`): it goes into the workspace, whose
    /// checks judge it again, and the model is told what was done.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn adopt_winner(
        &mut self,
        st: &mut TurnState,
        t: &focus::Target,
        n: usize,
        (after, changed): (String, Vec<String>),
        why: Won,
        command: &str,
        checks: &[String],
        cancel: &CancellationToken,
    ) -> Option<String> {
        let doubted = match &why {
            Won::Doubted(d) => d.clone(),
            _ => Vec::new(),
        };
        let words = why.words(n);
        let label = format!("fix {} in {} ({words})", changed.join(", "), t.file);
        if !self.own_write(st, &t.file, after, &label, cancel).await {
            return None;
        }
        st.candidate_notes.push(words.clone());
        if command == REQUEST_CHECKS {
            st.request_checked = Some((self.written_now(st), doubted.len()));
            self.note_best(st, doubted.len());
            st.candidate_notes
                .retain(|n| !n.starts_with("request checks:"));
            st.candidate_notes.push(if doubted.is_empty() {
                format!("request checks: {} passed", st.request_checks_total)
            } else {
                format!(
                    "request checks: {} of {} failed (doubted: every candidate failed them)",
                    doubted.len(),
                    st.request_checks_total
                )
            });
        }
        // The request's checks are a script mm wrote: named, not shown.
        let named: Vec<String> = checks
            .iter()
            .map(|c| {
                if st.request_checks.as_deref() == Some(c.as_str()) {
                    "the request's checks".to_string()
                } else {
                    format!("`{c}`")
                }
            })
            .collect();
        self.notice(
            Level::Info,
            format!(
                "{words}: {} in {} changed; {} {} in a scratch copy",
                changed.join(", "),
                t.file,
                named.join(", "),
                if named.len() == 1 && named[0].starts_with('`') {
                    "passes"
                } else {
                    "pass"
                }
            ),
        );
        // The workspace is the judge: run the checks there too.
        let mut passes = false;
        let verdict = match self.run_checks(st, cancel).await {
            None => {
                passes = true;
                let summary = st
                    .tests
                    .as_ref()
                    .map(|r| format!(" ({})", r.summary))
                    .unwrap_or_default();
                format!("`{command}` passes now{summary}")
            }
            Some((c, out)) => {
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!("but in the workspace `{c}` fails:\n{lines}\n")
            }
        };
        let body = self
            .content_now(&t.file)
            .map(|b| {
                changed
                    .iter()
                    .filter_map(|n| guard::block_of(&b, n))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        // Made to pass the request's own checks: the answer is next,
        // without tools (a small model's later edits undid such changes).
        if passes && command == REQUEST_CHECKS {
            st.settled = true;
            st.answer_next = true;
        }
        Some(why.told(&changed, n, &t.file, &verdict, &body))
    }

    /// How the checks go in the scratch copy: None when one could not
    /// run or the time ran out; else the number of the request's checks
    /// that fail (0: every check passes), or `usize::MAX` when another
    /// check (the tests, the command) fails, with the request's checks'
    /// failure lines.
    pub(in crate::agent) async fn failures_in_scratch(
        &self,
        sc: &scratch::Scratch,
        checks: &[String],
        request_checks: Option<&str>,
        left: Duration,
        cancel: &CancellationToken,
    ) -> Option<(usize, String)> {
        let started = Instant::now();
        let mut failed = 0;
        let mut judged = 0;
        let mut lines = String::new();
        for command in checks {
            let left = left.saturating_sub(started.elapsed());
            if left.is_zero() {
                return None;
            }
            let f = sc
                .run(
                    &self.tools,
                    command,
                    left.min(self.tools.bash_timeout),
                    cancel,
                )
                .await?;
            if f.timed_out || f.cancelled {
                return None;
            }
            if f.exit_code == Some(0) {
                // A run that found no test judges nothing either way.
                if !harness::ran_no_tests(&f.output) {
                    judged += 1;
                }
                continue;
            }
            judged += 1;
            let counted = f
                .output
                .lines()
                .filter(|l| l.starts_with("FAILED: "))
                .count();
            if Some(command.as_str()) == request_checks && f.exit_code == Some(1) && counted > 0 {
                failed += counted;
                for l in f.output.lines().filter(|l| l.starts_with("FAILED: ")) {
                    lines.push_str(l);
                    lines.push('\n');
                }
            } else {
                return Some((usize::MAX, String::new()));
            }
        }
        if judged == 0 {
            return Some((usize::MAX, String::new()));
        }
        Some((failed, lines))
    }
}

impl Won {
    /// What the receipt and the user hear of the candidates, `n` tried.
    fn words(&self, n: usize) -> String {
        match self {
            Won::Passed => tally(n, Some(n)),
            Won::Doubted(d) => format!(
                "{n} candidates tried, each failed the same {} check(s) mm wrote, set aside as doubtful",
                d.len()
            ),
            Won::Mutated(how) => format!(
                "{}; {} small change(s) of the best pass",
                tally(n, None),
                how.len()
            ),
        }
    }

    /// What the model is told: the functions `changed` in `file` after `n`
    /// candidates, how the workspace's checks went (`verdict`), and the
    /// functions as they are now (`body`).
    fn told(&self, changed: &[String], n: usize, file: &str, verdict: &str, body: &str) -> String {
        let names = changed.join(", ");
        match self {
            Won::Doubted(doubted) => format!(
                "\n[mm asked for {names} alone with this failure {n} time(s) and tried each answer in a scratch copy. Every one failed the same check(s) mm wrote from the request, which may be wrong:\n{}\nThe one that passes all the others is in {file} now; {verdict}. It is now:]\n```\n{body}```\nDo not change it again unless the request says what a doubtful check expects: check the change against the request and answer.",
                doubted.join("\n"),
            ),
            Won::Mutated(how) => format!(
                "\n[mm asked for {names} alone with this failure {n} time(s) and tried each answer in a scratch copy; none passed. mm then tried small changes of the best one against the request's checks, and with these every check passes:\n{}\nmm changed {file} to it; {verdict}. It is now:]\n```\n{body}```\nDo not change it again: check the change against the request and answer.",
                how.join("\n"),
            ),
            Won::Passed => format!(
                "\n[mm asked for {names} alone with this failure {n} time(s) and tried each answer in a scratch copy: the {} passes, and mm changed {file} to it; {verdict}. It is now:]\n```\n{body}```\nDo not change it again: check the change against the request and answer.",
                ordinal(n),
            ),
        }
    }
}
