//! The line REPL: reads a message (or a `"""` block), sends it to the
//! agent, prints the turn as it streams, and answers approvals with
//! y / N / a. Ctrl-C cancels the running turn; Ctrl-C twice at the prompt,
//! Ctrl-D or /quit leaves.

use std::io::IsTerminal;
use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::printer::{PrintMode, Printer};
use crate::bus::{EventReceiver, OpSender};
use crate::protocol::{AgentEvent, ApprovalDecision, Op, OpId, SessionInfo};
use crate::slash::{Face, Slash};

/// `/help`: the REPL's commands from the one table, then its keys.
fn help() -> String {
    let mut out = String::from("Commands:\n");
    for c in Slash::of(Face::Repl) {
        out.push_str(&format!("  {:<16} {}\n", c.usage(), c.about()));
    }
    out.push_str(
        "Type \"\"\" on a line of its own to start and to end a multi-line message.\n\
         Ctrl-C while the agent works cancels the turn; every tool call still gets an answer;\n\
         Ctrl-C twice at the prompt, Ctrl-D or /quit leaves.",
    );
    out
}

type Printer2 = Printer<std::io::Stdout, std::io::Stderr>;

/// Reads one line on a blocking thread (rustyline owns the terminal while it reads).
async fn read_line(
    editor: DefaultEditor,
    prompt: String,
) -> (DefaultEditor, Result<String, ReadlineError>) {
    let res = tokio::task::spawn_blocking(move || {
        let mut editor = editor;
        let line = editor.readline(&prompt);
        if let Ok(l) = &line
            && !l.trim().is_empty()
        {
            let _ = editor.add_history_entry(l.as_str());
        }
        (editor, line)
    })
    .await;
    match res {
        Ok(pair) => pair,
        Err(e) => {
            // The line editor's thread died; the terminal state is unknown.
            eprintln!("mm: the line editor failed: {e}");
            crate::sandbox::procs::kill_all();
            std::process::exit(1)
        }
    }
}

/// The banner, the keys that matter, and what the session said as it
/// opened (a small window, MCP servers).
fn greet(banner: &SessionInfo, printer: &mut Printer2, events: &mut EventReceiver) {
    let ctx = banner
        .context_window
        .map(|c| format!(" · context {c}"))
        .unwrap_or_default();
    println!(
        "mm {} · {}/{} · sandbox {}{ctx} · session {}",
        env!("CARGO_PKG_VERSION"),
        banner.provider,
        banner.model,
        banner.sandbox,
        banner.session
    );
    if banner.structured {
        println!("tools: none (structured output: JSON answers)");
    }
    println!(
        "/help for commands · \"\"\" for a multi-line message · Ctrl-C cancels · Ctrl-D quits"
    );
    // What the session said as it opened (a small window, MCP servers).
    while let Ok(ev) = events.try_recv() {
        if let AgentEvent::Notice { .. } = &ev.msg {
            printer.print(&ev.msg);
        }
    }
    printer.flush();
}

/// An op that runs as a turn, followed to its end: the editor back, or
/// None when the agent has stopped.
async fn run_op(
    ops: &OpSender,
    events: &mut EventReceiver,
    printer: &mut Printer2,
    editor: DefaultEditor,
    op: Op,
    notify: Option<u64>,
) -> Option<DefaultEditor> {
    let Some(id) = ops.submit(op) else {
        eprintln!("mm: the agent stopped");
        return None;
    };
    follow_turn(ops, events, printer, editor, id, notify).await
}

/// What the prompt read.
enum Next {
    Text(String),
    /// Nothing to send (a first Ctrl-C, an abandoned block).
    Again,
    /// Ctrl-C twice, Ctrl-D, or input that cannot be read.
    Leave,
}

/// A line, or a `"""` block, from the prompt.
async fn next_message(editor: DefaultEditor, interrupted: &mut bool) -> (DefaultEditor, Next) {
    let (editor, line) = read_line(editor, "› ".into()).await;
    let line = match line {
        Ok(l) => {
            *interrupted = false;
            l
        }
        Err(ReadlineError::Interrupted) => {
            if *interrupted {
                return (editor, Next::Leave);
            }
            *interrupted = true;
            println!("(Ctrl-C again, Ctrl-D or /quit to leave)");
            return (editor, Next::Again);
        }
        Err(ReadlineError::Eof) => return (editor, Next::Leave),
        Err(e) => {
            eprintln!("mm: cannot read input: {e}");
            return (editor, Next::Leave);
        }
    };
    if line.trim() != "\"\"\"" {
        return (editor, Next::Text(line));
    }
    let (editor, block) = read_block(editor).await;
    match block {
        Some(b) => (editor, Next::Text(b)),
        None => (editor, Next::Again),
    }
}

pub async fn run(
    ops: OpSender,
    mut events: EventReceiver,
    banner: SessionInfo,
    root: PathBuf,
) -> i32 {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut printer: Printer2 =
        Printer::new(std::io::stdout(), std::io::stderr(), PrintMode::Repl, color)
            .with_spinner(std::io::stdout().is_terminal() && std::io::stderr().is_terminal());
    printer.set_structured(banner.structured);
    let notify = banner.notify_after_ms;
    greet(&banner, &mut printer, &mut events);
    let Ok(mut editor) = DefaultEditor::new() else {
        eprintln!("mm: cannot open the line editor");
        return 1;
    };
    let mut interrupted = false;
    let mut session = banner.session.clone();
    loop {
        let (ed, next) = next_message(editor, &mut interrupted).await;
        editor = ed;
        let text = match next {
            Next::Text(t) => t,
            Next::Again => continue,
            Next::Leave => break,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some((name, args)) = crate::commands::parse(trimmed, &banner.commands)
            .filter(|(n, _)| !Slash::is_built_in(n))
        {
            let op = Op::RunCommand {
                name,
                args: args.to_string(),
            };
            editor = match run_op(&ops, &mut events, &mut printer, editor, op, notify).await {
                Some(ed) => ed,
                None => return 1,
            };
            continue;
        }
        let asked = crate::protocol::parse_ask(trimmed)
            .filter(|(name, _, _)| banner.agents.iter().any(|(n, _)| n == name));
        if let Some((name, with_context, prompt)) = asked {
            if prompt.is_empty() {
                println!("usage: /ask-{name} PROMPT");
                continue;
            }
            let op = Op::AskAgent {
                name,
                prompt,
                with_context,
            };
            editor = match run_op(&ops, &mut events, &mut printer, editor, op, notify).await {
                Some(ed) => ed,
                None => return 1,
            };
            continue;
        }
        if let Some((Slash::Plan, rest)) = Slash::parse(trimmed) {
            if rest.trim().is_empty() {
                println!(
                    "usage: /plan REQUEST (the model looks, read-only, and proposes numbered steps to approve)"
                );
                continue;
            }
            editor = match plan(&ops, &mut events, &mut printer, editor, rest.trim(), notify).await
            {
                Some(ed) => ed,
                None => return 1,
            };
            continue;
        }
        if trimmed.starts_with('/') && !trimmed.contains('\n') {
            let (done, ed) = slash(
                trimmed,
                &ops,
                &mut events,
                &root,
                &mut session,
                &crate::protocol::extra_commands(&banner),
                editor,
            )
            .await;
            editor = ed;
            match done {
                After::Quit => break,
                After::Done => continue,
            }
        }
        // A picture named by its absolute path goes with what was typed.
        let images = crate::llm::images::typed(&text, 4)
            .into_iter()
            .map(|(_, img)| img)
            .collect();
        let op = Op::UserMessage { text, images };
        editor = match run_op(&ops, &mut events, &mut printer, editor, op, notify).await {
            Some(ed) => ed,
            None => return 1,
        };
    }
    ops.send(Op::Shutdown);
    0
}

/// `/plan REQUEST`: a plan-mode turn, then the plan approved (carried
/// out), set aside, or changed by what the user says (planned again).
async fn plan(
    ops: &OpSender,
    events: &mut EventReceiver,
    printer: &mut Printer2,
    mut editor: DefaultEditor,
    request: &str,
    notify: Option<u64>,
) -> Option<DefaultEditor> {
    let mut request = request.to_string();
    loop {
        let id = ops.submit(Op::Plan {
            text: request.clone(),
        })?;
        editor = follow_turn(ops, events, printer, editor, id, notify).await?;
        let Some(steps) = printer.take_proposed() else {
            return Some(editor);
        };
        let (ed, answer) = read_line(
            editor,
            "run this plan? [y]es, [n]o, or say what to change: ".into(),
        )
        .await;
        editor = ed;
        let answer = answer.unwrap_or_else(|_| "n".into());
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => {
                let id = ops.submit(Op::RunPlan { steps })?;
                return follow_turn(ops, events, printer, editor, id, notify).await;
            }
            "" | "n" | "no" => {
                println!("the plan is set aside; it was not carried out");
                return Some(editor);
            }
            _ => {
                request = format!(
                    "Change the plan you proposed: {}\nThe plan was:\n{}",
                    answer.trim(),
                    crate::agent::planning::numbered(&steps)
                );
            }
        }
    }
}

/// Lines until a closing `"""`.
async fn read_block(mut editor: DefaultEditor) -> (DefaultEditor, Option<String>) {
    let mut lines = Vec::new();
    loop {
        let (ed, line) = read_line(editor, "… ".into()).await;
        editor = ed;
        match line {
            Ok(l) if l.trim() == "\"\"\"" => return (editor, Some(lines.join("\n"))),
            Ok(l) => lines.push(l),
            Err(_) => return (editor, None),
        }
    }
}

/// What the REPL does after a command.
enum After {
    Quit,
    Done,
}

async fn slash(
    cmd: &str,
    ops: &OpSender,
    events: &mut EventReceiver,
    root: &std::path::Path,
    session: &mut String,
    extra: &[(String, String)],
    mut editor: DefaultEditor,
) -> (After, DefaultEditor) {
    let name = cmd.split_whitespace().next().unwrap_or("");
    let Some((command, rest)) = Slash::parse(cmd) else {
        println!(
            "unknown command {}; /help lists them",
            crate::untrusted::displayable(name)
        );
        return (After::Done, editor);
    };
    if !command.on(Face::Repl) {
        println!("{name} is a command of the TUI (mm -tui)");
        return (After::Done, editor);
    }
    let arg = Some(rest).filter(|a| !a.is_empty());
    match command {
        Slash::Quit => return (After::Quit, editor),
        Slash::Rewind => editor = super::git_cmds::rewind(ops, events, editor).await,
        Slash::Diff => super::git_cmds::diff(ops, events).await,
        Slash::Commit => editor = super::git_cmds::commit(ops, events, editor).await,
        Slash::Undo => super::git_cmds::undo(ops, events).await,
        Slash::Ctx => match arg
            .filter(|a| !a.is_empty())
            .map(|a| (a, crate::config::ContextMode::parse(a)))
        {
            Some((a, None)) => println!(
                "/ctx takes compact or rebuild, not {}",
                crate::untrusted::displayable(a)
            ),
            parsed => {
                let mode = parsed.and_then(|(_, m)| m);
                for ev in super::git_cmds::events_of(ops, events, Op::Ctx { mode }).await {
                    if let AgentEvent::Notice { text, .. } = ev {
                        println!("{}", crate::untrusted::displayable(&text));
                    }
                }
            }
        },
        Slash::Model => {
            let name = arg
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_string);
            for ev in super::git_cmds::events_of(ops, events, Op::Model { name }).await {
                if let AgentEvent::Notice { text, .. } = ev {
                    println!("{}", crate::untrusted::displayable(&text));
                }
            }
        }
        Slash::Stats | Slash::Cost | Slash::Mcp | Slash::Skills | Slash::Agents | Slash::Init => {
            let op = match command {
                Slash::Cost => Op::Cost,
                Slash::Init => Op::Init,
                Slash::Mcp => Op::Mcp,
                Slash::Skills => Op::Skills,
                Slash::Agents => Op::Agents,
                _ => Op::Stats,
            };
            for ev in super::git_cmds::events_of(ops, events, op).await {
                if let AgentEvent::Notice { text, .. } = ev {
                    println!("{}", crate::untrusted::displayable(&text));
                }
            }
        }
        Slash::Compact => {
            for ev in super::git_cmds::collect(
                ops,
                events,
                Op::Compact {
                    focus: arg.map(str::to_string),
                },
            )
            .await
            {
                if let AgentEvent::Compacted {
                    replaced,
                    summary,
                    tokens_before,
                    tokens_after,
                    ..
                } = ev
                {
                    println!(
                        "compacted: {replaced} earlier messages sent as this summary from here on (~{tokens_before} → ~{tokens_after} tokens; the log keeps them):\n{}",
                        crate::untrusted::displayable(&summary)
                    );
                }
            }
        }
        Slash::Copy => copy(root, session, arg),
        Slash::Export => {
            super::git_cmds::collect(
                ops,
                events,
                Op::Export {
                    path: arg.map(str::to_string),
                },
            )
            .await;
        }
        Slash::Help => {
            println!("{}", help());
            for (c, d) in extra {
                println!(
                    "  {:<11} {}",
                    crate::untrusted::displayable(c),
                    crate::untrusted::displayable(d)
                );
            }
        }
        Slash::Sessions => print_sessions(root),
        Slash::New => {
            for ev in super::git_cmds::collect(ops, events, Op::NewSession).await {
                if let AgentEvent::SessionCleared { session: id } = ev {
                    println!("new session {id}");
                    *session = id;
                }
            }
        }
        // Run by the loop before it gets here.
        Slash::Plan => println!("usage: /plan REQUEST"),
        Slash::Theme | Slash::Keymap | Slash::Mouse | Slash::Tree | Slash::Diagnostics => {
            println!("{name} is a command of the TUI (mm -tui)");
        }
    }
    (After::Done, editor)
}

/// `/copy [N]`: an answer of this session to the clipboard, or wherever
/// it can go, and says where.
fn copy(root: &std::path::Path, session: &str, arg: Option<&str>) {
    let n = match arg.map(str::parse::<usize>) {
        None => 1,
        Some(Ok(n)) if n >= 1 => n,
        _ => {
            println!("usage: /copy [N] (N = 1 is the last answer, 2 the one before)");
            return;
        }
    };
    let answers = match crate::session::read_records(root, session) {
        Ok((_, records)) => crate::session::export::answers(&records),
        Err(e) => {
            eprintln!("mm: {e}");
            return;
        }
    };
    let Some(text) = answers.len().checked_sub(n).and_then(|i| answers.get(i)) else {
        println!(
            "no answer {n} back: this session has {} answer(s)",
            answers.len()
        );
        return;
    };
    let mut out = std::io::stdout();
    let env = crate::clipboard::Env::detect(out.is_terminal());
    let got = crate::clipboard::copy(text, &env, &mut out, &root.join(".mm"));
    let what = if n == 1 {
        "the last answer".to_string()
    } else {
        format!("answer {n} back")
    };
    println!(
        "{}",
        got.describe(&what, text.lines().count().max(1), text.len())
    );
}

pub fn print_sessions(root: &std::path::Path) {
    let list = crate::session::list(root);
    if list.is_empty() {
        println!(
            "no sessions in {}",
            crate::session::sessions_dir(root).display()
        );
        return;
    }
    for s in list {
        let first: String = s.label().chars().take(60).collect();
        let first = crate::untrusted::displayable(&first);
        println!(
            "{}  {:>4} messages  {:>8} bytes  {first}",
            s.id, s.messages, s.bytes
        );
    }
}

/// Prints a turn until it finishes; answers approvals; Ctrl-C cancels.
async fn follow_turn(
    ops: &OpSender,
    events: &mut EventReceiver,
    printer: &mut Printer2,
    mut editor: DefaultEditor,
    turn_op: OpId,
    notify_after_ms: Option<u64>,
) -> Option<DefaultEditor> {
    let started = std::time::Instant::now();
    let long =
        move || notify_after_ms.is_some_and(|limit| started.elapsed().as_millis() as u64 >= limit);
    loop {
        let ev = tokio::select! {
            ev = events.recv() => ev?,
            _ = tokio::signal::ctrl_c() => {
                ops.send(Op::Cancel);
                eprintln!("\nmm: cancelling…");
                continue;
            }
        };
        let mut batch = vec![ev];
        while let Ok(more) = events.try_recv() {
            batch.push(more);
        }
        for ev in batch {
            if let AgentEvent::Finished { .. } = ev.msg
                && ev.id == turn_op
            {
                printer.flush();
                if long() {
                    let secs = started.elapsed().as_secs();
                    notify(&format!("mm: the turn ended after {secs} s"));
                    eprintln!("mm: the turn took {secs} s");
                }
                return Some(editor);
            }
            printer.print(&ev.msg);
            if let AgentEvent::ApprovalRequested { request } = ev.msg {
                printer.flush();
                if long() {
                    notify("mm is waiting for your answer");
                }
                let always = match &request.kind {
                    crate::protocol::ApprovalKind::Exec { scope, .. } => scope.clone(),
                    crate::protocol::ApprovalKind::Edit { change } => {
                        format!("every change to {}", change.path)
                    }
                };
                let (ed, decision) = ask(editor, &always).await;
                editor = ed;
                if decision.is_none() {
                    ops.send(Op::Cancel);
                }
                ops.send(Op::Approval {
                    id: request.id,
                    decision: decision.unwrap_or(ApprovalDecision::No {
                        reason: Some("cancelled".into()),
                    }),
                });
            }
        }
        printer.flush();
    }
}

/// The bell and a desktop notification, on a terminal.
fn notify(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let env = crate::clipboard::Env::detect(true);
        let seq = crate::notify::sequence(text, crate::notify::Osc::detect(), &env);
        let _ = err.write_all(&seq).and_then(|()| err.flush());
    }
}

/// y / N / a, or `n because …` to tell the model why. None: Ctrl-C.
/// `always` says what "always" would allow from now on.
async fn ask(editor: DefaultEditor, always: &str) -> (DefaultEditor, Option<ApprovalDecision>) {
    // What was typed ahead during the turn is not an answer to a question
    // it never saw: drop it, as sudo does.
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let _ = nix::sys::termios::tcflush(&stdin, nix::sys::termios::FlushArg::TCIFLUSH);
    }
    let always = crate::untrusted::displayable(always);
    let (ed, line) = read_line(
        editor,
        format!("  allow? [y]es / [N]o (n <reason>) / [a]lways = {always} this session: "),
    )
    .await;
    let decision = match line {
        Ok(l) => Some(parse_answer(&l)),
        Err(ReadlineError::Interrupted) => None,
        Err(_) => Some(ApprovalDecision::No { reason: None }),
    };
    (ed, decision)
}

pub fn parse_answer(line: &str) -> ApprovalDecision {
    let t = line.trim();
    let lower = t.to_ascii_lowercase();
    match lower.as_str() {
        "y" | "yes" => ApprovalDecision::Yes,
        "a" | "always" => ApprovalDecision::Always,
        _ => {
            let reason = t
                .strip_prefix(['n', 'N'])
                .map(|r| r.trim_start_matches(['o', 'O']).trim())
                .filter(|r| !r.is_empty())
                .map(str::to_string);
            ApprovalDecision::No { reason }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer("y"), ApprovalDecision::Yes);
        assert_eq!(parse_answer(" YES "), ApprovalDecision::Yes);
        assert_eq!(parse_answer("a"), ApprovalDecision::Always);
        assert_eq!(parse_answer(""), ApprovalDecision::No { reason: None });
        assert_eq!(
            parse_answer("n use cargo check instead"),
            ApprovalDecision::No {
                reason: Some("use cargo check instead".into())
            }
        );
    }
}
