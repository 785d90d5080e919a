//! mm's own writes to the workspace: a fix it found or a candidate it kept
//! goes through the usual write and its approval; a file left unparsable is
//! restored, and a change that broke what passed is rolled back.

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState};
use crate::protocol::Level;
use crate::toolname::ToolName;
use crate::tools::{self, CallCtx};

impl Agent {
    /// Writes `content` to `rel` as a write of mm's own (approval, checks
    /// and a tool card labelled `label` as for the model's); true when the
    /// file changed.
    pub(super) async fn own_write(
        &mut self,
        st: &mut TurnState,
        rel: &str,
        content: String,
        label: &str,
        cancel: &CancellationToken,
    ) -> bool {
        self.own_write_with(st, rel, content, label, false, cancel)
            .await
    }

    /// `own_write`; `plain`: content mm computed itself (a rename), written
    /// as it is, without the guards for a model's whole-file write.
    pub(super) async fn own_write_with(
        &mut self,
        st: &mut TurnState,
        rel: &str,
        content: String,
        label: &str,
        plain: bool,
        cancel: &CancellationToken,
    ) -> bool {
        // A turn whose tools cannot write (a command's `allowedTools`, a
        // read-only agent) gets no write of mm's either.
        if !self
            .specs
            .iter()
            .any(|s| crate::toolname::edits(s.name.as_ref()))
        {
            return false;
        }
        // The user's words keep mm off this file.
        if let Some(why) = st.off_limits(rel) {
            self.notice(
                Level::Info,
                format!("mm does not change {rel} itself: {why}"),
            );
            return false;
        }
        self.tools.note_read(rel);
        let (call_id, summary) = self.card_start_as(
            st,
            ToolName::WriteFile.as_str(),
            label.to_string(),
            json!({ (crate::toolname::arg::PATH): rel }).to_string(),
        );
        let mut args = Map::new();
        args.insert(
            crate::toolname::arg::PATH.into(),
            Value::String(rel.to_string()),
        );
        args.insert(crate::toolname::arg::CONTENT.into(), Value::String(content));
        let ctx = CallCtx {
            turn: self.turn,
            call_id: &call_id,
            cancel,
        };
        let out = if plain {
            tools::write_own(
                &self.tools,
                rel,
                tools::arg_str(&args, crate::toolname::arg::CONTENT).unwrap_or(""),
                &ctx,
            )
            .await
        } else {
            tools::run(&self.tools, ToolName::WriteFile.as_str(), &args, &ctx).await
        };
        let change = out.change.clone().map(|c| *c);
        self.card_finish_as(
            ToolName::WriteFile.as_str(),
            call_id.clone(),
            summary,
            out.status,
            &out.text,
        );
        let Some(c) = change else {
            return false;
        };
        if let Some(at) = out.text.find(crate::tools::HUNKS_REJECTED) {
            let said = out.text[at..].lines().next().unwrap_or("").to_string();
            st.own_rejected.push((c.path.clone(), said));
        }
        if out.approved {
            st.approved.insert(c.path.clone());
        } else {
            st.approved.remove(&c.path);
        }
        st.mutations += 1;
        st.note_version(&c);
        if !st.written.contains(&c.path) {
            st.written.push(c.path.clone());
        }
        // The file's verdict is the one on what mm wrote.
        match out.check {
            Some(check) => {
                st.baselines
                    .entry(c.path.clone())
                    .or_insert_with(|| check.baseline.clone());
                st.checks.insert(c.path.clone(), *check);
            }
            None => {
                st.checks.remove(&c.path);
            }
        }
        if let Err(e) = self.record_change(&call_id, c) {
            self.notice(Level::Error, e.to_string());
        }
        true
    }

    /// At the end of a turn, a file the turn's tools changed that no
    /// longer parses (Python, JavaScript) goes back to its newest version
    /// of the turn that does, as a write of mm's own: a small model that
    /// could not repair an edit it broke would otherwise leave the project
    /// broken for every later turn. The put-back is an edit like any
    /// other (`/undo` brings the broken contents back); the user and, with
    /// the next message, the model hear of it.
    pub(super) async fn restore_unparsable(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) {
        let mut paths: Vec<String> = st.versions.keys().cloned().collect();
        paths.sort();
        for path in paths {
            // A person approved the file as it is: it stays, and they hear
            // that it does not parse.
            if st.approved.contains(&path) {
                if let Ok(r) = self.tools.sandbox.check_read(&path)
                    && let Ok(bytes) = crate::paths::read_checked(&r.abs, 4 * 1024 * 1024)
                    && let Ok(now) = String::from_utf8(bytes)
                    && tools::syntax::parses(&self.tools, &path, &now, cancel).await == Some(false)
                {
                    self.notice(
                        Level::Warning,
                        format!("{path} does not parse; it stays as you approved it (/undo takes the change back)"),
                    );
                }
                continue;
            }
            let Some(versions) = st.versions.get(&path).cloned() else {
                continue;
            };
            let Ok(r) = self.tools.sandbox.check_read(&path) else {
                continue;
            };
            let Ok(bytes) = crate::paths::read_checked(&r.abs, 4 * 1024 * 1024) else {
                continue;
            };
            let Ok(now) = String::from_utf8(bytes) else {
                continue;
            };
            // Checked clean as the last change left it, and not changed
            // since (by a command): nothing to ask the parser.
            if versions.last().is_some_and(|v| **v == *now)
                && st.checks.get(&path).is_some_and(|c| c.errors == 0)
            {
                continue;
            }
            // The file as it is (a command may have changed it since).
            let Some(false) = tools::syntax::parses(&self.tools, &path, &now, cancel).await else {
                continue;
            };
            let mut good = None;
            for (i, v) in versions.iter().enumerate().rev() {
                if **v == *now || (i == 0 && v.is_empty()) {
                    continue;
                }
                if tools::syntax::parses(&self.tools, &path, v, cancel).await == Some(true) {
                    good = Some((i, v.clone()));
                    break;
                }
            }
            let Some((i, content)) = good else {
                continue;
            };
            let which = if i == 0 {
                "as the turn found it".to_string()
            } else {
                format!("as change {i} of this turn left it")
            };
            let label = format!("put back {path}: it does not parse");
            if !self
                .own_write_with(st, &path, content.to_string(), &label, true, cancel)
                .await
            {
                continue;
            }
            self.notice(
                Level::Warning,
                format!(
                    "{path} did not parse at the end of the turn: mm put it back {which} (/undo brings the broken version back)"
                ),
            );
            self.carry(format!(
                "[mm: at the end of the last turn {path} did not parse, so mm put it back {which}; the edits after that are gone. Read it again before you edit it.]"
            ));
        }
    }

    /// A change after which the request's command, which passed, fails
    /// again: mm puts the file back as it was and runs the checks again.
    /// Returns what to tell the model; None when it could not.
    pub(super) async fn roll_back(
        &mut self,
        st: &mut TurnState,
        change: &crate::protocol::FileChange,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if change.kind != crate::protocol::ChangeKind::Modified {
            return None;
        }
        let command = st.repro.clone()?;
        let label = format!("undo the change to {}", change.path);
        if !self
            .own_write(st, &change.path, change.before.to_string(), &label, cancel)
            .await
        {
            return None;
        }
        self.notice(
            Level::Warning,
            format!(
                "`{command}` passed before the change to {} and fails after it: put the file back",
                change.path
            ),
        );
        let now = match self.run_checks(st, cancel).await {
            None => format!("`{command}` passes again"),
            Some(_) => format!("`{command}` still fails"),
        };
        Some(format!(
            "\n[mm undid this change: `{command}` passed before it and failed after it. {} is as it was before the change and {now}. The request is done unless it asks for more: then answer.]",
            change.path
        ))
    }

    /// Makes the one-line fix a probe found (`st.fix`), as a write of
    /// mm's own (approval, checks and a tool card as for the model's), when
    /// the line is still as the probe saw it, and runs the checks again.
    /// Returns what to tell the model; None when nothing was changed.
    /// The fix `value_trace` found, made (see `make_fix`) or, when the
    /// line has changed since, as a note for the model; or nothing.
    pub(super) async fn fix_text(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> String {
        match self.make_fix(st, cancel).await {
            Some(made) => made,
            None => st
                .fix
                .as_ref()
                .map(|f| format!("\n{} If that is the fix, make it with edit_file.", f.note))
                .unwrap_or_default(),
        }
    }

    pub(super) async fn make_fix(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fix = st.fix.clone()?;
        let r = self.tools.sandbox.check_read(&fix.file).ok()?;
        let bytes = crate::paths::read_checked(&r.abs, 1024 * 1024).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let mut lines: Vec<&str> = text.split('\n').collect();
        let at = fix.line.checked_sub(1)?;
        if lines.get(at).map(|l| l.trim_end_matches('\r')) != Some(fix.was.as_str()) {
            return None;
        }
        lines[at] = &fix.now;
        let content = lines.join("\n");
        let place = format!("{}:{}", fix.file, fix.line);
        if !self
            .own_write(st, &fix.file, content, &format!("fix {place}"), cancel)
            .await
        {
            return None;
        }
        st.fix = None;
        self.notice(
            Level::Info,
            format!("made the one-line fix found in the fence at {place}"),
        );
        let made = format!(
            "[mm found a fix by trying small changes in the fence, and made it: {place} is now `{}`.",
            fix.now.trim()
        );
        Some(match self.run_checks(st, cancel).await {
            None => match st.tests.as_ref() {
                Some(t) => format!(
                    "\n{made} `{}` passes now ({}). Do not change {place} again: check the change and answer.]",
                    t.command, t.summary
                ),
                None => format!("\n{made}]"),
            },
            Some((command, out)) => {
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!("\n{made} `{command}` still fails:]\n{lines}")
            }
        })
    }
}
