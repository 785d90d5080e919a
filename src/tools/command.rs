//! The bash tool run: the gate's verdict, the approval it needs, the fence,
//! and what comes back to the model.

use super::*;

pub(super) async fn run_bash(
    env: &ToolEnv,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    let command = arg_str(args, crate::toolname::arg::COMMAND).unwrap_or_default();
    if command.trim().is_empty() {
        return ToolOutput::error("empty command");
    }
    let plan = match env.sandbox.check_exec(command) {
        ExecDecision::Run(plan) => plan,
        ExecDecision::Deny { reason } => return ToolOutput::refused(format!("refused: {reason}")),
        ExecDecision::Ask { reason, key } => {
            let kind = ApprovalKind::Exec {
                command: command.to_string(),
                reason,
                scope: crate::sandbox::always::describe(&key),
                always_key: key.clone(),
            };
            match env
                .broker
                .ask(ctx.turn, ctx.call_id, kind, ctx.cancel)
                .await
            {
                Answer::Unattended => return ToolOutput::declined(HEADLESS_REFUSAL),
                // Hunks only mean something for edits.
                Answer::User(ApprovalDecision::Yes | ApprovalDecision::Hunks { .. }) => {}
                Answer::User(ApprovalDecision::Always) => env.sandbox.remember(&key),
                Answer::User(ApprovalDecision::No { reason }) => {
                    let why = match reason {
                        Some(r) => format!("the user declined to run this command: {r}"),
                        None => "the user declined to run this command".into(),
                    };
                    return ToolOutput::declined(why);
                }
            }
            env.sandbox.approved_plan()
        }
    };
    if ctx.cancel.is_cancelled() {
        return ToolOutput::not_run("not executed: cancelled");
    }
    // The user's limit (`bashTimeout`) is a ceiling: a model may ask for
    // less time, never more.
    let timeout = arg_u64(args, "timeout")
        .map(Duration::from_secs)
        .unwrap_or(env.bash_timeout)
        .min(env.bash_timeout)
        .min(bash::MAX_TIMEOUT);
    let root = env.sandbox.root();
    // A command that may write could leave a git repository in the
    // workspace whose settings git honours later (a planted fsmonitor or
    // hook): look before and after, and tell the user.
    let repos_before = match plan.git_guard {
        true => None,
        false => git_repositories(env).await,
    };
    let cmd = env.sandbox.command("/bin/sh", &["-c", command], root, plan);
    let f = match bash::run(cmd, timeout, ctx.cancel).await {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("cannot start /bin/sh: {e}")),
    };
    let mut out = bash_result(f, timeout, plan);
    if let (Some(before), Some(after)) = (repos_before, git_repositories(env).await) {
        let mut planted: Vec<&String> = after
            .iter()
            .filter(|(p, v)| before.get(*p) != Some(*v))
            .map(|(p, _)| p)
            .collect();
        planted.sort();
        if !planted.is_empty() {
            let names: Vec<&str> = planted.iter().map(|p| p.as_str()).collect();
            let w = format!(
                "this command created or changed a git repository at {}: git honours its settings (hooks, fsmonitor) when you run git there; delete it if you did not expect it",
                names.join(", ")
            );
            out.text.push_str(&format!("\n[{w}]"));
            out.warning = Some(w);
        }
    }
    out
}

/// The workspace's git repositories and their fingerprints, off the
/// runtime thread.
pub(super) async fn git_repositories(
    env: &ToolEnv,
) -> Option<std::collections::BTreeMap<String, u64>> {
    let sandbox = env.sandbox.clone();
    tokio::task::spawn_blocking(move || sandbox.git_repositories())
        .await
        .ok()
        .flatten()
}

/// A finished command as the model reads it.
pub(super) fn bash_result(
    f: bash::Finished,
    timeout: Duration,
    plan: crate::sandbox::RunPlan,
) -> ToolOutput {
    let mut text = f.output;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if plan.access.is_some() && f.exit_code == Some(1) && text.starts_with("bwrap: ") {
        // The fence itself failed, not the command: say so plainly.
        text.push_str("[the OS fence (bubblewrap) could not start this command; it did not run]\n");
    }
    let secs = f.elapsed.as_secs_f64();
    if f.timed_out {
        text.push_str(&format!(
            "[killed after {}s timeout, with everything it started]",
            timeout.as_secs()
        ));
        return ToolOutput::error(text);
    }
    if f.cancelled {
        text.push_str("[cancelled by the user; the command was killed]");
        return ToolOutput::not_run(text);
    }
    match f.exit_code {
        Some(0) => {
            text.push_str(&format!("[exit code 0, {secs:.1}s]"));
            ToolOutput::ok(text)
        }
        Some(code) => {
            text.push_str(&format!("[exit code {code}, {secs:.1}s]"));
            ToolOutput::error(text)
        }
        None => {
            text.push_str("[killed by a signal]");
            ToolOutput::error(text)
        }
    }
}
