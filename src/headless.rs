//! `-p PROMPT` and `-json`: one turn, the answer on stdout, everything else
//! on stderr, and an exit code a script can test.

use std::io::IsTerminal;

use serde_json::json;

use crate::bus::{EventReceiver, OpSender};
use crate::console::printer::{PrintMode, Printer};
use crate::protocol::{AgentEvent, Op, OpResult, Outcome, SessionInfo, TurnResult};

/// What headless prints, besides the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// The answer on stdout; tool cards, notices and progress on stderr.
    #[default]
    Text,
    /// The answer on stdout; on stderr only warnings and errors.
    Quiet,
    /// One JSON object with the result on stdout (`-json`).
    Json,
    /// Every event as one JSON line on stdout as it happens, then the
    /// result as a line of `"type": "result"` (`-json-stream`).
    JsonStream,
}

/// What the prompt asks of the agent: a plan (`-plan`), a custom command
/// (`-p "/NAME args"`), or a message with the pictures it names by path
/// when it was typed (not read from stdin).
fn op_of(prompt: &str, commands: &[(String, String)], plan: bool, typed: bool) -> Op {
    match crate::commands::parse(prompt, commands) {
        _ if plan => Op::Plan {
            text: prompt.to_string(),
        },
        Some((name, args)) => Op::RunCommand {
            name,
            args: args.to_string(),
        },
        None => Op::UserMessage {
            text: prompt.to_string(),
            images: if typed {
                crate::llm::images::typed(prompt, 4)
                    .into_iter()
                    .map(|(_, img)| img)
                    .collect()
            } else {
                Vec::new()
            },
        },
    }
}

/// The `-json` result object: the outcome, the answer, what was written,
/// the session and its sandbox, the usage and each request's figures.
fn json_result(
    result: &TurnResult,
    info: &SessionInfo,
    per_request: &[crate::protocol::RequestStats],
    output: Output,
) -> serde_json::Value {
    let usage = result.usage;
    let mut obj = json!({
        "outcome": result.outcome.as_str(),
        "answer": result.answer,
        "written": result.written,
        "session": info.session,
        "sandbox": info.sandbox_mode,
        "fence": info.fence,
        "network": info.network,
        "context_window": info.context_window,
        "context_mode": info.context_mode,
        "requests": result.requests,
        "usage": {"prompt": usage.prompt, "cached": usage.cached, "completion": usage.completion},
        // Each request: its tokens, the time to its first token and
        // the generation speed.
        "per_request": per_request.iter().map(|s| json!({
            "prompt": s.usage.prompt,
            "cached": s.usage.cached,
            "completion": s.usage.completion,
            "first_token_ms": s.first_token_ms,
            "tokens_per_second": s.tokens_per_second,
            // The prompt as each context mode would have sent it
            // (estimated from its size).
            "as_compact": s.modes.map(|m| m.0),
            "as_rebuild": s.modes.map(|m| m.1),
        })).collect::<Vec<_>>(),
    });
    if let Some(e) = &result.error {
        obj["error"] = json!(e);
    }
    if !result.warnings.is_empty() {
        obj["warnings"] = json!(result.warnings);
    }
    if !result.changed_by_commands.is_empty() {
        obj["changed_by_commands"] = json!(result.changed_by_commands);
    }
    if let Some(t) = &result.tests {
        obj["tests"] = json!({
            "command": t.command,
            "passed": t.passed,
            "summary": t.summary,
            "attempts": t.attempts,
        });
    }
    if !result.unbacked.is_empty() {
        obj["unbacked_claims"] = json!(result.unbacked);
    }
    if !result.plan.is_empty() {
        obj["plan"] = json!(result.plan);
    }
    if output == Output::JsonStream {
        obj["type"] = json!("result");
    }
    obj
}

/// Ctrl-C cancels the turn; a second one does not wait for it to wind
/// down.
fn cancel_on_ctrl_c(ops: OpSender) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ops.send(Op::Cancel);
            if tokio::signal::ctrl_c().await.is_ok() {
                crate::sandbox::procs::kill_all();
                std::process::exit(130);
            }
        }
    })
}

/// With `-quiet`: the answer, and what went wrong.
fn shown_when_quiet(ev: &AgentEvent) -> bool {
    match ev {
        AgentEvent::Token { .. } | AgentEvent::TurnFinished { .. } => true,
        AgentEvent::Notice { level, .. } => {
            matches!(
                level,
                crate::protocol::Level::Warning | crate::protocol::Level::Error
            )
        }
        _ => false,
    }
}

/// What headless is asked.
pub struct Ask<'a> {
    pub prompt: &'a str,
    /// The custom commands (`-p "/NAME args"` runs one).
    pub commands: &'a [(String, String)],
    /// `-plan`: a plan-mode turn.
    pub plan: bool,
    /// The prompt was typed on the command line (not read from stdin):
    /// pictures it names by an absolute path go with it.
    pub typed: bool,
}

/// Sends the prompt as one turn through the agent's service, prints what
/// it streams, and returns the process exit code.
pub async fn run(ops: OpSender, mut events: EventReceiver, ask: Ask<'_>, output: Output) -> i32 {
    let Ask {
        prompt,
        commands,
        plan,
        typed,
    } = ask;
    let json_out = matches!(output, Output::Json | Output::JsonStream);
    let quiet = output == Output::Quiet;
    let stdout_tty = std::io::stdout().is_terminal();
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let stream = stdout_tty && !json_out;
    let op = op_of(prompt, commands, plan, typed);
    let Some(id) = ops.submit(op) else {
        eprintln!("mm: the agent stopped before the turn began");
        return 1;
    };
    let printer = tokio::spawn(async move {
        let out: Box<dyn std::io::Write + Send> = if json_out {
            Box::new(std::io::sink())
        } else {
            Box::new(std::io::stdout())
        };
        let mut p = Printer::new(
            out,
            std::io::stderr(),
            PrintMode::Headless { stream },
            color,
        )
        .with_spinner(stream && !quiet && std::io::stderr().is_terminal());
        let mut info = SessionInfo::default();
        let mut per_request = Vec::new();
        let mut ended: Option<Result<Box<TurnResult>, String>> = None;
        while let Some(ev) = events.recv().await {
            let mut batch = vec![ev];
            while let Ok(more) = events.try_recv() {
                batch.push(more);
            }
            for ev in batch {
                // The service's own op results are not events of the run.
                if output == Output::JsonStream && !matches!(ev.msg, AgentEvent::Finished { .. }) {
                    println!("{}", crate::untrusted::json_line(&ev.msg));
                }
                match ev.msg {
                    AgentEvent::SessionStarted { info: i } => {
                        // Structured output: stdout holds the JSON or
                        // nothing, so nothing streams to it.
                        p.set_structured(i.structured);
                        info = i;
                    }
                    AgentEvent::Finished { result } if ev.id == id => {
                        ended = Some(match result {
                            OpResult::Turn { report } => Ok(report),
                            OpResult::Failed { error } => Err(error),
                            OpResult::Done => Err("the turn ended without a report".into()),
                        });
                    }
                    msg => {
                        if let AgentEvent::Usage { stats, .. } = &msg {
                            per_request.push(*stats);
                        }
                        if !quiet || shown_when_quiet(&msg) {
                            p.print(&msg);
                        }
                    }
                }
            }
            p.flush();
            if ended.is_some() {
                break;
            }
        }
        p.flush();
        (info, ended, per_request)
    });

    let watcher = cancel_on_ctrl_c(ops.clone());
    let (info, ended, per_request) = printer.await.unwrap_or_default();
    watcher.abort();
    ops.send(Op::Shutdown);
    let say = |error: &str| {
        let error = crate::untrusted::displayable(error);
        if info.structured {
            eprintln!("[structured output: {error}]");
        } else {
            eprintln!("mm: {error}");
        }
    };
    let result: TurnResult = match ended {
        Some(Ok(report)) => *report,
        Some(Err(error)) => {
            say(&error);
            return 1;
        }
        None => {
            eprintln!("mm: the agent stopped before the turn ended");
            return 1;
        }
    };

    if json_out {
        let obj = json_result(&result, &info, &per_request, output);
        println!("{}", crate::untrusted::json_line(&obj));
    }
    if info.structured && !json_out && result.outcome != Outcome::Done {
        say(result.error.as_deref().unwrap_or(result.outcome.as_str()));
        return 1;
    }
    match result.outcome {
        Outcome::Done => 0,
        other => other.exit_code(),
    }
}
