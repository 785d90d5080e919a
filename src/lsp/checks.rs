//! A write checked by the language server: the errors it reports on the new
//! text, a preview of a proposed change before its approval, and the files
//! that depend on one changed.

use super::*;

impl Lsp {
    /// After a write: the server's errors in the file, as a note for the
    /// tool result, and an `EditChecked` event for the front ends. None
    /// when no server handles the file.
    pub async fn check_write(
        &self,
        call_id: &str,
        path: &Path,
        content: &str,
        cancel: &CancellationToken,
    ) -> Option<Check> {
        tokio::select! {
            c = self.check_write_inner(call_id, path, content) => c,
            _ = cancel.cancelled() => Some(Check {
                text: "(no diagnostics: cancelled)".into(),
                errors: 0,
                new_errors: None,
                baseline: None,
                now: Vec::new(),
            }),
        }
    }

    pub(super) async fn check_write_inner(
        &self,
        call_id: &str,
        path: &Path,
        content: &str,
    ) -> Option<Check> {
        let no = |text: String| {
            Some(Check {
                text,
                errors: 0,
                new_errors: None,
                baseline: None,
                now: Vec::new(),
            })
        };
        let _one = self.checking.lock().await;
        let (client, lang, fresh) = match self.server_for(path).await {
            Ok(v) => v,
            Err(Unavailable::NoLanguage | Unavailable::NoServer(_) | Unavailable::Off(_)) => {
                return None;
            }
            Err(e) => return no(format!("(no diagnostics: {e})")),
        };
        let since = self.store.get(path).generation;
        let baseline = if client.is_open(path).await {
            self.real.lock().ok().and_then(|r| r.get(path).cloned())
        } else {
            None
        };
        let version = match client.sync(path, lang, content, true).await {
            Ok(v) => v,
            Err(e) => return no(format!("(no diagnostics: {e})")),
        };
        let wait = if fresh { FIRST_CHECK_WAIT } else { CHECK_WAIT };
        let got = self
            .store
            .settle(path, since, version, QUIET, Instant::now() + wait)
            .await;
        self.mark_checked(&client.name).await;
        let rel = text::rel(&self.root, path);
        let Some(now) = got else {
            return no(format!(
                "({} sent no diagnostics for {rel} within {}s)",
                client.name,
                wait.as_secs()
            ));
        };
        let (note, errors, new) = text::error_report(
            &client.name,
            &rel,
            content,
            &now.items,
            baseline.as_deref(),
            8,
        );
        self.bus.publish(AgentEvent::EditChecked {
            call_id: call_id.to_string(),
            path: rel,
            errors: errors as u32,
            new_errors: new.map(|n| n as u32),
            preview: false,
        });
        let messages = |items: &[lsp_types::Diagnostic]| -> Vec<String> {
            items
                .iter()
                .filter(|d| store::is_error(d))
                .map(|d| d.message.clone())
                .collect()
        };
        Some(Check {
            text: note,
            errors,
            new_errors: new,
            baseline: baseline.as_deref().map(messages),
            now: messages(&now.items),
        })
    }

    /// Before a change to a file: the files that use it (`paths`), opened
    /// in their server so it reports on them, with what it says about
    /// them now. Waits for a first report on a file it had to open.
    pub async fn watch_dependents(&self, paths: &[PathBuf]) -> Dependents {
        let mut items = Vec::new();
        for path in paths.iter().take(MAX_DEPENDENTS) {
            let Ok((client, lang, _)) = self.server_for(path).await else {
                continue;
            };
            let Ok(content) = crate::paths::read_checked_text(path) else {
                continue;
            };
            if !client.is_open(path).await {
                let since = self.store.get(path).generation;
                if client.ensure(path, lang, &content).await.is_err() {
                    continue;
                }
                let _ = self
                    .store
                    .settle(path, since, 0, QUIET, Instant::now() + DEPENDENT_WAIT)
                    .await;
            }
            let baseline = self.real.lock().ok().and_then(|r| r.get(path).cloned());
            items.push(Dependent {
                path: path.clone(),
                generation: self.store.get(path).generation,
                baseline,
            });
        }
        Dependents { items }
    }

    /// After the change: what the server now says of each file that uses
    /// it (those it said something new about), errors it did not report
    /// before counted as new.
    pub async fn dependents_after(&self, watched: Dependents) -> Vec<(String, Check)> {
        let waits = watched.items.into_iter().map(|d| async move {
            let now = self
                .store
                .settle(
                    &d.path,
                    d.generation,
                    0,
                    QUIET,
                    Instant::now() + DEPENDENT_WAIT,
                )
                .await?;
            let client = self.server_for(&d.path).await.ok()?.0;
            let content = crate::paths::read_checked_text(&d.path).ok()?;
            let rel = text::rel(&self.root, &d.path);
            let (note, errors, new) = text::error_report(
                &client.name,
                &rel,
                &content,
                &now.items,
                d.baseline.as_deref(),
                6,
            );
            let messages = |items: &[lsp_types::Diagnostic]| -> Vec<String> {
                items
                    .iter()
                    .filter(|x| store::is_error(x))
                    .map(|x| x.message.clone())
                    .collect()
            };
            Some((
                rel,
                Check {
                    text: note,
                    errors,
                    new_errors: new,
                    baseline: d.baseline.as_deref().map(messages),
                    now: messages(&now.items),
                },
            ))
        });
        futures::future::join_all(waits)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Before an approval: what the proposed text would do to the file's
    /// errors, as a preview `EditChecked`. The server is left with the
    /// current text again; its reports on the proposal never reach the
    /// front ends' counts. `answered` ends it early (the user decided).
    pub async fn preview(
        &self,
        call_id: &str,
        path: &Path,
        current: &str,
        proposed: &str,
        answered: &CancellationToken,
    ) {
        let _one = self.checking.lock().await;
        // Answered already, or the file changed: nothing to preview.
        if answered.is_cancelled()
            || crate::paths::read_checked_text(path).ok().as_deref() != Some(current)
        {
            return;
        }
        let Ok((client, lang, fresh)) = self.server_for(path).await else {
            return;
        };
        let wait = if fresh { FIRST_CHECK_WAIT } else { CHECK_WAIT };
        let settle = |since: u64, version: i32| async move {
            tokio::select! {
                got = self.store.settle(path, since, version, QUIET, Instant::now() + wait) => got,
                _ = answered.cancelled() => None,
            }
        };
        if !client.is_open(path).await {
            let since = self.store.get(path).generation;
            let Ok(v) = client.sync(path, lang, current, false).await else {
                return;
            };
            if settle(since, v).await.is_none() {
                return;
            }
        }
        self.mark_checked(&client.name).await;
        let baseline = self.real.lock().ok().and_then(|r| r.get(path).cloned());
        let since = self.store.get(path).generation;
        let v = client.next_version(path).await;
        if let Ok(mut m) = self.muted.lock() {
            m.insert((path.to_path_buf(), v));
        }
        if client.sync(path, lang, proposed, false).await.is_err() {
            return;
        }
        let got = settle(since, v).await;
        // Back to the text on disk (what a later check compares with is
        // kept apart from the proposal's reports, in `real`).
        let _ = client.sync(path, lang, current, false).await;
        let (Some(now), Some(baseline)) = (got, baseline) else {
            return;
        };
        let rel = text::rel(&self.root, path);
        let (_, errors, new) =
            text::error_report(&client.name, &rel, proposed, &now.items, Some(&baseline), 8);
        self.bus.publish(AgentEvent::EditChecked {
            call_id: call_id.to_string(),
            path: rel,
            errors: errors as u32,
            new_errors: new.map(|n| n as u32),
            preview: true,
        });
    }
}
