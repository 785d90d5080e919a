//! The REPL's checkpoint commands: `/rewind` (a numbered list, a preview,
//! what to restore), `/diff` (a coloured unified diff of the session),
//! `/commit` (the model's message, to accept or edit) and `/undo`.

use std::io::IsTerminal;

use anstyle::{AnsiColor, Style};
use rustyline::DefaultEditor;

use crate::bus::{EventReceiver, OpSender};
use crate::diff::{self, LineKind};
use crate::protocol::{AgentEvent, FileChange, Level, Op, RewindMode};
use crate::untrusted::displayable;

fn styles() -> (Style, Style, Style, Style) {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    if !color {
        let s = Style::new();
        return (s, s, s, s);
    }
    let fg = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
    (
        fg(AnsiColor::Green),
        fg(AnsiColor::Red),
        Style::new().dimmed(),
        Style::new().bold(),
    )
}

/// Sends an op and returns the events it caused, up to its `Finished`.
/// While it waits on the model (a commit message, a summary), a line on a
/// terminal's stderr says how long and what for; Ctrl-C cancels it.
pub async fn events_of(ops: &OpSender, events: &mut EventReceiver, op: Op) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let Some(id) = ops.submit(op) else {
        eprintln!("mm: the agent stopped");
        return out;
    };
    let mut wait = WaitLine::new(std::io::stderr().is_terminal());
    loop {
        let ev = tokio::select! {
            ev = events.recv() => ev,
            _ = tokio::signal::ctrl_c() => {
                wait.clear();
                ops.send(Op::Cancel);
                eprintln!("mm: cancelling…");
                continue;
            }
        };
        let Some(ev) = ev else { break };
        if ev.id != id {
            // Not this op's: a language server's own word is still said.
            if let AgentEvent::Notice { level, text, .. } = &ev.msg {
                wait.clear();
                print_notice(*level, text);
            }
            continue;
        }
        match ev.msg {
            AgentEvent::Finished { .. } => break,
            AgentEvent::Generating {
                tokens,
                prompt,
                queued,
                ..
            } => wait.draw(tokens, prompt, queued),
            other => out.push(other),
        }
    }
    wait.clear();
    out
}

/// The REPL's one-line wait for a model request it does not stream.
struct WaitLine {
    on: bool,
    since: Option<(std::time::Instant, usize)>,
}

impl WaitLine {
    fn new(on: bool) -> WaitLine {
        WaitLine { on, since: None }
    }

    fn draw(&mut self, tokens: u64, prompt: Option<(u64, u64)>, queued: bool) {
        use std::io::Write;
        if !self.on {
            return;
        }
        let (since, frame) = self.since.unwrap_or((std::time::Instant::now(), 0));
        self.since = Some((since, frame + 1));
        let what = if tokens > 0 {
            format!("{tokens} tokens")
        } else {
            super::printer::wait_words(prompt, queued)
        };
        let dim = styles().2;
        let frames = super::printer::FRAMES;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r\x1b[2K{dim}{} {} s · {what} · Ctrl-C cancels{dim:#}",
            frames[frame % frames.len()],
            since.elapsed().as_secs()
        );
        let _ = err.flush();
    }

    fn clear(&mut self) {
        use std::io::Write;
        if self.since.take().is_some() {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// Sends an op and returns the events it caused, printing its notices.
pub async fn collect(ops: &OpSender, events: &mut EventReceiver, op: Op) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    for ev in events_of(ops, events, op).await {
        match ev {
            AgentEvent::Notice { level, text, .. } => print_notice(level, &text),
            other => out.push(other),
        }
    }
    out
}

fn print_notice(level: Level, text: &str) {
    let tag = match level {
        Level::Info => "",
        Level::Warning => "warning: ",
        Level::Error => "error: ",
    };
    eprintln!("mm: {tag}{}", displayable(text));
}

/// A coloured unified diff of changes.
pub fn print_changes(changes: &[FileChange]) {
    let (add, del, dim, bold) = styles();
    for c in changes {
        println!(
            "{bold}{} (+{} -{}){bold:#}",
            displayable(&c.path),
            c.added,
            c.removed
        );
        for h in diff::hunks(&c.before, &c.after, diff::CONTEXT) {
            println!("{dim}{}{dim:#}", h.header());
            for l in &h.lines {
                let (s, m) = match l.kind {
                    LineKind::Added => (add, '+'),
                    LineKind::Removed => (del, '-'),
                    LineKind::Context => (dim, ' '),
                };
                println!("{s}{m}{}{s:#}", displayable(&l.text()));
            }
        }
    }
}

async fn ask(editor: DefaultEditor, prompt: &str) -> (DefaultEditor, Option<String>) {
    let prompt = prompt.to_string();
    let res = tokio::task::spawn_blocking(move || {
        let mut ed = editor;
        let line = ed.readline(&prompt).ok();
        (ed, line)
    })
    .await;
    match res {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("mm: the line editor failed: {e}");
            crate::sandbox::procs::kill_all();
            std::process::exit(1)
        }
    }
}

pub async fn diff(ops: &OpSender, events: &mut EventReceiver) {
    for ev in collect(ops, events, Op::SessionDiff { from: None }).await {
        if let AgentEvent::SessionDiff { changes, .. } = ev {
            if changes.is_empty() {
                println!("no changes since the session began");
            } else {
                print_changes(&changes);
            }
        }
    }
}

pub async fn undo(ops: &OpSender, events: &mut EventReceiver) {
    collect(ops, events, Op::Undo).await;
}

pub async fn rewind(
    ops: &OpSender,
    events: &mut EventReceiver,
    editor: DefaultEditor,
) -> DefaultEditor {
    let mut list = Vec::new();
    for ev in collect(ops, events, Op::ListCheckpoints).await {
        if let AgentEvent::Checkpoints { list: l } = ev {
            list = l;
        }
    }
    if list.is_empty() {
        println!("no checkpoints yet: one is taken when each turn starts");
        return editor;
    }
    for (i, c) in list.iter().enumerate() {
        let time = c.info.time.get(11..19).unwrap_or(&c.info.time);
        // A safety row undoes a rewind: the turn it was taken in says
        // nothing about where it goes.
        let which = if c.info.kind == crate::protocol::CheckpointKind::Safety {
            "undo".to_string()
        } else {
            format!("turn {}", c.info.turn)
        };
        println!(
            "{:>3}) {which} · {} · {} · {} · undoes {} file(s) +{} -{}",
            i + 1,
            time,
            c.info.kind.as_str(),
            displayable(&c.info.label),
            c.files.len(),
            c.added,
            c.removed
        );
    }
    let (editor, answer) = ask(editor, "rewind to which? (number, Enter cancels) ").await;
    let Some(n) = answer
        .and_then(|a| a.trim().parse::<usize>().ok())
        .filter(|n| *n >= 1 && *n <= list.len())
    else {
        println!("not rewound");
        return editor;
    };
    let (id, turn) = (list[n - 1].info.id.clone(), Some(list[n - 1].info.turn));
    let mut foreign = Vec::new();
    for ev in collect(
        ops,
        events,
        Op::PreviewRewind {
            id: id.clone(),
            turn,
        },
    )
    .await
    {
        if let AgentEvent::RewindPreview {
            changes,
            foreign: f,
            left,
            ..
        } = ev
        {
            if changes.is_empty() {
                println!("the files are already as they were then");
            } else {
                println!("going back would do this to the files:");
                print_changes(&changes);
            }
            if !left.is_empty() {
                println!(
                    "left as they are (mm did not change them): {}",
                    displayable(&left.join(", "))
                );
            }
            foreign = f;
        }
    }
    let (editor, mode) = ask(
        editor,
        "restore [c]ode, con[v]ersation, [b]oth, or [n]othing? ",
    )
    .await;
    let mode = match mode.as_deref().map(str::trim) {
        Some("c" | "code") => RewindMode::Code,
        Some("v" | "conversation") => RewindMode::Conversation,
        Some("b" | "both") => RewindMode::Both,
        _ => {
            println!("not rewound");
            return editor;
        }
    };
    let mut editor = editor;
    let mut overwrite = false;
    if !foreign.is_empty() && mode != RewindMode::Conversation {
        let (ed, yes) = ask(
            editor,
            &format!(
                "{} changed since mm last left it, not by mm (by you?); overwrite? [y/N] ",
                displayable(&foreign.join(", "))
            ),
        )
        .await;
        editor = ed;
        overwrite = matches!(yes.as_deref().map(str::trim), Some("y" | "yes"));
        if !overwrite {
            println!("not rewound");
            return editor;
        }
    }
    collect(
        ops,
        events,
        Op::Rewind {
            id,
            turn,
            mode,
            overwrite,
        },
    )
    .await;
    editor
}

pub async fn commit(
    ops: &OpSender,
    events: &mut EventReceiver,
    editor: DefaultEditor,
) -> DefaultEditor {
    eprintln!("mm: asking the model for a commit message…");
    let mut proposal = None;
    for ev in collect(ops, events, Op::ProposeCommit).await {
        if let AgentEvent::CommitProposed { message, files } = ev {
            proposal = Some((message, files));
        }
    }
    let Some((mut message, files)) = proposal else {
        return editor;
    };
    println!("files: {}", displayable(&files.join(", ")));
    println!("---\n{}\n---", displayable(&message));
    let (mut editor, answer) =
        ask(editor, "commit with this message? [y]es / [e]dit / [N]o ").await;
    match answer.as_deref().map(str::trim) {
        Some("y" | "yes") => {}
        Some("e" | "edit") => {
            println!("type the message; a line with \"\"\" alone ends it");
            let mut lines = Vec::new();
            loop {
                let (ed, line) = ask(editor, "… ").await;
                editor = ed;
                match line {
                    Some(l) if l.trim() == "\"\"\"" => break,
                    Some(l) => lines.push(l),
                    None => return editor,
                }
            }
            message = lines.join("\n");
        }
        _ => {
            println!("not committed");
            return editor;
        }
    }
    collect(ops, events, Op::Commit { message }).await;
    editor
}
