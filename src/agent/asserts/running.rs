//! The request's checks at work: run again after a change, settled before a
//! turn ends, Rust's through cargo, a function's own failing examples, and
//! the best code seen kept to fall back to.

use super::*;

impl Agent {
    /// The request's checks again, when the written files changed since
    /// they last ran (a correction of the model's, a candidate): the
    /// receipt gives how the change stands at the end, not at the first
    /// write, and the model hears of what still fails (twice a turn at
    /// most), and whether its last change made it worse.
    pub(in crate::agent) async fn recheck_request(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let cmd = st.request_checks.clone()?;
        let now = self.written_now(st);
        let before = match &st.request_checked {
            Some((seen, _)) if *seen == now => return None,
            Some((_, k)) => Some(*k),
            None => None,
        };
        let (code, out) = self.run_request_checks(&cmd, cancel).await?;
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAILED: ")).collect();
        st.request_checked = Some((now, failed.len()));
        let total = st.request_checks_total;
        self.note_best(st, failures(code, &out, total));
        st.candidate_notes
            .retain(|n| !n.starts_with("request checks:"));
        if failed.is_empty() && code == Some(0) {
            self.notice(
                Level::Info,
                format!("{total} check(s) from the request pass after the last change"),
            );
            st.candidate_notes
                .push(format!("request checks: {total} passed"));
            return None;
        }
        st.candidate_notes.push(format!(
            "request checks: {} of {total} failed",
            failed.len()
        ));
        if st.request_rechecks >= 2 {
            return None;
        }
        st.request_rechecks += 1;
        let worse = match before {
            Some(k) if failed.len() > k => format!(
                " The last change made it worse: {} fail now, {k} before it.",
                failed.len()
            ),
            _ => String::new(),
        };
        self.notice(
            Level::Warning,
            format!(
                "{} of {total} check(s) from the request fail after the last change; telling the model",
                failed.len()
            ),
        );
        let failure = failed.join("\n");
        st.last_failure = Some(failure.clone());
        Some(format!(
            "mm ran the request's checks again on the code as it is now: {} of {total} fail.{worse}\n{failure}\nIf the request says otherwise and a check is wrong, say which and why. Otherwise fix the code with edit_file.\n{}",
            failed.len(),
            self.restated(st)
        ))
    }

    /// At the end of a turn, the request's checks on the files as they
    /// are now, when they changed since the checks last ran: the receipt
    /// and the answer's claims are held to the code the turn leaves.
    pub(in crate::agent) async fn settle_request_checks(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) {
        let Some(cmd) = st.request_checks.clone() else {
            return;
        };
        let now = self.written_now(st);
        if st
            .request_checked
            .as_ref()
            .is_some_and(|(seen, _)| *seen == now)
        {
            return;
        }
        let Some((code, out)) = self.run_request_checks(&cmd, cancel).await else {
            return;
        };
        let total = st.request_checks_total;
        let failed = failures(code, &out, total);
        st.request_checked = Some((now, failed));
        note_request_checks(st, failed, total);
    }

    /// The command that runs `checks` on a Rust crate: built once, and
    /// again without the checks and imports its build errors point at
    /// (a wrong argument type, a private function), at most three times.
    pub(in crate::agent) async fn rust_checks(
        &self,
        krate: &rustcheck::Crate,
        checks: &[Example],
        cancel: &CancellationToken,
    ) -> Option<(String, (Option<i32>, String))> {
        let (mut skip_checks, mut skip_uses) = (Vec::new(), Vec::new());
        for tries in 1.. {
            let program = rustcheck::program(krate, checks, &skip_checks, &skip_uses);
            let cmd = rustcheck::command(krate, &program);
            let (code, out) = self.run_request_checks(&cmd, cancel).await?;
            let (bad, uses) = rustcheck::bad_lines(&out, &program);
            if tries == 3 || code != Some(1) || (bad.is_empty() && uses.is_empty()) {
                return Some((cmd, (code, out)));
            }
            skip_checks.extend(bad);
            skip_uses.extend(uses);
        }
        None
    }

    /// The examples a Python function's own documentation gives that
    /// fail on the code now, as `FAILED:` lines (empty when there are
    /// none, or none fail).
    pub(in crate::agent) async fn failing_doc_examples(
        &self,
        file: &str,
        text: &str,
        name: &str,
        cancel: &CancellationToken,
    ) -> String {
        if Lang::of(file) != Some(Lang::Python) {
            return String::new();
        }
        let doc = doc_of(text, name);
        let names = vec![name.to_string()];
        let mut checks = examples::extract(&doc, &names);
        for ex in examples::bare(&doc, name) {
            if !checks.contains(&ex) {
                checks.push(ex);
            }
        }
        checks.truncate(MAX_EXAMPLES);
        if checks.is_empty() {
            return String::new();
        }
        let script = examples::python_script(&[python_module(file)], &names, &checks);
        let cmd = examples::command(Lang::Python, &script);
        match self.run_request_checks(&cmd, cancel).await {
            Some((Some(1), out)) => out
                .lines()
                .filter(|l| l.starts_with("FAILED: "))
                .map(|l| format!("{l}\n"))
                .collect(),
            _ => String::new(),
        }
    }

    /// Runs the request's checks in the fence, read-only, without
    /// network; their output (None: they could not run).
    pub(in crate::agent) async fn run_request_checks(
        &self,
        cmd: &str,
        cancel: &CancellationToken,
    ) -> Option<(Option<i32>, String)> {
        let plan = crate::sandbox::RunPlan {
            access: Some(crate::sandbox::Access::ReadOnly),
            net: false,
            git_guard: false,
        };
        let root = self.tools.sandbox.root().to_path_buf();
        let run = self.tools.sandbox.command("sh", &["-c", cmd], &root, plan);
        // A Rust check program is built first (the crate with it).
        let secs = if cmd.contains("cargo build") { 180 } else { 30 };
        let f = crate::tools::bash::run(run, std::time::Duration::from_secs(secs), cancel)
            .await
            .ok()?;
        (!f.timed_out && !f.cancelled).then_some((f.exit_code, f.output))
    }
}

/// The receipt's line on the request's checks, replacing any before it.
pub(in crate::agent) fn note_request_checks(st: &mut TurnState, failed: usize, total: usize) {
    st.candidate_notes
        .retain(|n| !n.starts_with("request checks:"));
    st.candidate_notes.push(if failed == 0 {
        format!("request checks: {total} passed")
    } else {
        format!("request checks: {failed} of {total} failed")
    });
}

/// How many of `total` request checks a run failed, for telling which
/// version of the code did best: a module that does not load, or a run
/// that ended with no verdict, fails them all.
pub(in crate::agent) fn failures(code: Option<i32>, out: &str, total: usize) -> usize {
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAILED: ")).collect();
    let unloaded = failed
        .iter()
        .any(|l| l.starts_with("FAILED: import ") || l.starts_with("FAILED: require("));
    match (code, failed.len()) {
        _ if unloaded => total,
        (Some(0), 0) => 0,
        (_, 0) => total,
        (_, n) => n,
    }
}

impl Agent {
    /// Notes the written files as the best of the turn when the request's
    /// checks failed fewer of them (`failed`) than ever before.
    pub(in crate::agent) fn note_best(&self, st: &mut TurnState, failed: usize) {
        if st.best_checked.as_ref().is_some_and(|(k, _)| *k <= failed) {
            return;
        }
        let files = st
            .written
            .iter()
            .filter_map(|p| Some((p.clone(), self.content_now(p)?)))
            .collect();
        st.best_checked = Some((failed, files));
    }

    /// At the end of a turn whose files fail more of the request's checks
    /// than they did at some point of it (a correction that made a
    /// candidate worse, a rewrite that lost a rule), the files go back to
    /// that version, as a write of mm's own (`/undo` brings the turn's
    /// last version back) — unless a person approved the change since.
    pub(in crate::agent) async fn restore_best(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) {
        if !self.on(Behaviour::Best) {
            return;
        }
        let (Some(cmd), Some((best, files))) = (st.request_checks.clone(), st.best_checked.clone())
        else {
            return;
        };
        let total = st.request_checks_total;
        let Some((code, out)) = self.run_request_checks(&cmd, cancel).await else {
            return;
        };
        let now = failures(code, &out, total);
        if now <= best {
            return;
        }
        let back: Vec<&(String, String)> = files
            .iter()
            .filter(|(p, c)| self.content_now(p).as_deref() != Some(c.as_str()))
            .collect();
        if back.is_empty() {
            return;
        }
        let names: Vec<&str> = back.iter().map(|(p, _)| p.as_str()).collect();
        if let Some(p) = back.iter().find(|(p, _)| st.approved.contains(p)) {
            self.notice(
                Level::Warning,
                format!(
                    "{now} of {total} check(s) from the request fail as the turn ends, {best} did earlier in it; {} stays as you approved it (/rewind goes back)",
                    p.0
                ),
            );
            return;
        }
        let mut put = Vec::new();
        for (path, content) in back {
            let label =
                format!("put back {path}: it failed {best} of the request's checks, not {now}");
            // A version of this turn's own: written as it was, not held to
            // the guards for a model's whole-file write.
            if self
                .own_write_with(st, path, content.clone(), &label, true, cancel)
                .await
            {
                put.push(path.as_str());
            }
        }
        if put.len() != names.len() {
            return;
        }
        self.notice(
            Level::Warning,
            format!(
                "{now} of {total} check(s) from the request failed as the turn ended; mm put back {} as it was when {best} failed (/undo brings the later version back)",
                put.join(", ")
            ),
        );
        note_request_checks(st, best, total);
        self.carry(format!(
            "[mm: at the end of the last turn {} failed more of the request's checks ({now} of {total}) than earlier in the turn ({best}), so mm put back that earlier version. Read it again before you edit it.]",
            put.join(", ")
        ));
    }
}
