//! `-p PROMPT` and `-json`: one turn, the answer on stdout, everything else
//! on stderr, and an exit code a script can test.

use std::io::IsTerminal;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::bus::EventReceiver;
use crate::console::printer::{PrintMode, Printer};
use crate::protocol::{AgentEvent, Outcome};

/// Runs the turn and returns the process exit code.
pub async fn run(
    agent: &mut Agent,
    mut events: EventReceiver,
    prompt: &str,
    json_out: bool,
) -> i32 {
    let stdout_tty = std::io::stdout().is_terminal();
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let stream = stdout_tty && !json_out;
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
        );
        while let Some(ev) = events.recv().await {
            let finished = matches!(ev, AgentEvent::TurnFinished { .. });
            p.print(&ev);
            if finished {
                break;
            }
            while let Ok(more) = events.try_recv() {
                let finished = matches!(more, AgentEvent::TurnFinished { .. });
                p.print(&more);
                if finished {
                    p.flush();
                    return;
                }
            }
            p.flush();
        }
        p.flush();
    });

    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
                // A second Ctrl-C does not wait for the turn to wind down.
                if tokio::signal::ctrl_c().await.is_ok() {
                    crate::sandbox::procs::kill_all();
                    std::process::exit(130);
                }
            }
        })
    };
    let result = agent.run_turn(prompt, &cancel).await;
    watcher.abort();
    let _ = printer.await;

    if json_out {
        let usage = agent.usage();
        let mut obj = json!({
            "outcome": result.outcome.as_str(),
            "answer": result.answer,
            "written": result.written,
            "session": agent.session_id(),
            "sandbox": agent.sandbox().mode().as_str(),
            "fence": agent.sandbox().fence().name(),
            "network": !agent.sandbox().no_net(),
            "requests": agent.requests(),
            "usage": {"prompt": usage.prompt, "cached": usage.cached, "completion": usage.completion},
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
        println!("{}", crate::untrusted::json_line(&obj));
    }
    match result.outcome {
        Outcome::Done => 0,
        other => other.exit_code(),
    }
}
