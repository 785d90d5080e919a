//! Writes that wait for a person: a file tool's change shown as a diff,
//! approved or refused, and mm's own writes that go the same way.

use super::*;

/// How a change's result says the user kept only some of its hunks.
pub const HUNKS_REJECTED: &str = "The user REJECTED";

/// A write or an edit worked out (`prepared`): asked about when edits need
/// approval, put on disk, and checked (language server, parser).
pub(super) async fn write_pending(
    env: &ToolEnv,
    prepared: Result<fs::Pending, ToolOutput>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    let pending = match prepared {
        Ok(p) => p,
        Err(out) => return out,
    };
    // The files that use this one, so errors the change brings
    // there (a caller of a renamed function) are seen too.
    let watched = match &env.lsp {
        Some(lsp) if env.guard_writes && pending.before.is_some() => {
            let users = env.dependents(&pending.r.rel);
            if users.is_empty() {
                None
            } else {
                Some(lsp.watch_dependents(&users).await)
            }
        }
        _ => None,
    };
    match approve_change(env, pending, ctx).await {
        Ok((pending, note, approved)) => {
            let abs = pending.r.abs.clone();
            let rel = pending.r.rel.clone();
            let mut out = fs::commit(env, pending, ctx.cancel.is_cancelled(), &note);
            out.approved = approved && out.change.is_some();
            if let (Some(lsp), Some(change)) = (&env.lsp, &out.change)
                && let Some(check) = lsp
                    .check_write(ctx.call_id, &abs, &change.after, ctx.cancel)
                    .await
            {
                out.text.push('\n');
                out.text.push_str(&check.text);
                out.check = Some(Box::new(check));
            }
            if let (Some(lsp), Some(watched), true) = (&env.lsp, watched, out.change.is_some()) {
                for (user, check) in lsp.dependents_after(watched).await {
                    if check.new_errors.unwrap_or(0) > 0 {
                        out.text.push_str(&format!(
                            "\n[{user} uses {rel}; this change brought errors there:]\n{}",
                            check.text
                        ));
                    }
                    out.dependents.push((user, check));
                }
            }
            if out.check.is_none()
                && env.guard_writes
                && let Some(change) = &out.change
                && let Some(check) = syntax::check(env, &change.path, ctx.cancel).await
            {
                if check.errors > 0 {
                    out.text.push('\n');
                    out.text.push_str(&check.text);
                }
                out.check = Some(Box::new(check));
            }
            out
        }
        Err(out) => out,
    }
}

/// A write of mm's own whose content it computed (a rename): approval,
/// disk and checks as for `write_file`, without the guards that read a
/// model's whole-file write as a part to merge in.
pub async fn write_own(env: &ToolEnv, rel: &str, content: &str, ctx: &CallCtx<'_>) -> ToolOutput {
    write_pending(env, fs::prepare_plain(env, rel, content), ctx).await
}

/// Asks the user about a file change when edits need approval. The user
/// may accept only some hunks: the model is told exactly which were
/// rejected, so it does not assume they landed.
pub(super) async fn approve_change(
    env: &ToolEnv,
    mut pending: fs::Pending,
    ctx: &CallCtx<'_>,
) -> Result<(fs::Pending, String, bool), ToolOutput> {
    let key = match env.sandbox.edit_decision(&pending.r.rel) {
        crate::sandbox::EditDecision::Apply => return Ok((pending, String::new(), false)),
        crate::sandbox::EditDecision::Ask { key } => key,
    };
    // Refused already in this turn, to the byte: not asked again.
    let refused_before = env.refused.lock().is_ok_and(|r| {
        r.iter()
            .any(|(t, p, after)| *t == ctx.turn && *p == pending.r.rel && *after == pending.after)
    });
    if refused_before {
        return Err(ToolOutput::declined(format!(
            "the user already rejected this exact change to {} in this turn, so it was not asked again; the file is unchanged. Do not propose it again; say what you would change, or ask the user.",
            pending.r.rel
        )));
    }
    let change = pending.change();
    let answered = CancellationToken::new();
    if let Some(lsp) = env.lsp.clone()
        && let Some(current) = pending.before.clone()
        && crate::lsp::language_of(&pending.r.abs).is_some()
    {
        // The server's verdict joins the approval overlay while the user
        // reads the diff (a new file has nothing to compare with).
        let (call_id, abs) = (ctx.call_id.to_string(), pending.r.abs.clone());
        let proposed = pending.after.clone();
        let answered = answered.clone();
        tokio::spawn(async move {
            lsp.preview(&call_id, &abs, &current, &proposed, &answered)
                .await;
        });
    }
    let _answered = answered.drop_guard();
    let answer = env
        .broker
        .ask(
            ctx.turn,
            ctx.call_id,
            ApprovalKind::Edit { change },
            ctx.cancel,
        )
        .await;
    let decision = match answer {
        Answer::User(d) => d,
        Answer::Unattended => return Err(ToolOutput::declined(HEADLESS_REFUSAL)),
    };
    match decision {
        ApprovalDecision::Yes => Ok((pending, String::new(), true)),
        ApprovalDecision::Always => {
            env.sandbox.remember(&key);
            Ok((pending, String::new(), true))
        }
        ApprovalDecision::No { reason } => {
            if let Ok(mut r) = env.refused.lock() {
                r.push((ctx.turn, pending.r.rel.clone(), pending.after.clone()));
            }
            Err(ToolOutput::declined(match reason {
                Some(r) => format!("the user rejected this change to {}: {r}", pending.r.rel),
                None => format!(
                    "the user rejected this change to {}; the file is unchanged",
                    pending.r.rel
                ),
            }))
        }
        ApprovalDecision::Hunks { accepted } => {
            let before = pending.before.clone().unwrap_or_default();
            let all = crate::diff::hunks(&before, &pending.after, crate::diff::CONTEXT);
            let rejected: Vec<String> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| !accepted.contains(i))
                .map(|(i, h)| format!("hunk {} ({})", i + 1, h.header()))
                .collect();
            if accepted.is_empty() {
                return Err(ToolOutput::declined(format!(
                    "the user rejected every hunk of this change to {}; the file is unchanged",
                    pending.r.rel
                )));
            }
            pending.after = crate::diff::apply_hunks(&before, &pending.after, &accepted);
            let note = if rejected.is_empty() {
                String::new()
            } else {
                format!(
                    ". {HUNKS_REJECTED} {} of {} hunks: {}; those lines were left as they were",
                    rejected.len(),
                    all.len(),
                    rejected.join(", ")
                )
            };
            Ok((pending, note, true))
        }
    }
}
