//! The TUI driven without a terminal: scripted agent events and key
//! presses go into an `App`, the ops it sends come out of the channel, and
//! every view is drawn into a buffer and compared with its snapshot.
//! Changed spans are marked «» (removed) and ‹› (added) in the snapshots,
//! so the intra-line highlight is visible in plain text.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

use super::app::{App, Focus};
use super::component::Effect;
use crate::bus::OpSender;
use crate::protocol::*;
use crate::tui::keymap;
use crate::tui::theme::{self, ColorDepth};

struct Rig {
    app: App,
    ops: tokio::sync::mpsc::UnboundedReceiver<Submission>,
    jobs: tokio::sync::mpsc::UnboundedReceiver<super::jobs::JobDone>,
    _dir: tempfile::TempDir,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn one() -> u32 { 1 }\n").unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let theme = theme::load("dark", &root, ColorDepth::TrueColor).unwrap();
    let keys = keymap::load("default").unwrap();
    let (tx, rx) = OpSender::channel();
    let info = SessionInfo {
        provider: "local".into(),
        model: "qwen2.5-coder".into(),
        sandbox: "workspace".into(),
        session: "20261130-120000-abcdef".into(),
        context_window: Some(16384),
        ..Default::default()
    };
    let mut app = App::new(theme, keys, tx, root, info);
    let jobs = app.jobs.take_receiver().unwrap();
    Rig {
        app,
        ops: rx,
        jobs,
        _dir: dir,
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

fn ops(r: &mut Rig) -> Vec<Op> {
    submissions(r).into_iter().map(|s| s.op).collect()
}

fn submissions(r: &mut Rig) -> Vec<Submission> {
    let mut v = Vec::new();
    while let Ok(sub) = r.ops.try_recv() {
        v.push(sub);
    }
    v
}

/// What the effects put on the clipboard, if anything.
fn copied(fx: Vec<Effect>) -> Option<(String, String)> {
    fx.into_iter().find_map(|e| match e {
        Effect::Copy { what, text } => Some((what, text)),
        _ => None,
    })
}

/// The background jobs' answers (file reads, walks), once they are in.
fn settle(r: &mut Rig) {
    while r.app.jobs.busy() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    while let Ok(done) = r.jobs.try_recv() {
        r.app.on_job(done);
    }
}

/// The screen as text, changed spans marked, once the jobs are in.
fn screen(r: &mut Rig, w: u16, h: u16) -> String {
    settle(r);
    let app = &mut r.app;
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    app.draw(area, &mut buf);
    let th = &app.theme;
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        let mut open: Option<&str> = None;
        for x in 0..w {
            let cell = &buf[(x, y)];
            let mark = if cell.bg == th.removed_span {
                Some("«")
            } else if cell.bg == th.added_span {
                Some("‹")
            } else {
                None
            };
            if mark != open {
                if let Some(o) = open {
                    line.push_str(if o == "«" { "»" } else { "›" });
                }
                if let Some(m) = mark {
                    line.push_str(m);
                }
                open = mark;
            }
            line.push_str(cell.symbol());
        }
        if let Some(o) = open {
            line.push_str(if o == "«" { "»" } else { "›" });
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn turn_events() -> Vec<AgentEvent> {
    vec![
        AgentEvent::TurnStarted {
            turn: 1,
            prompt: "fix the add function".into(),
        },
        AgentEvent::Reasoning {
            turn: 1,
            text: "The function subtracts.\nIt should add.".into(),
        },
        AgentEvent::ToolCallRunning {
            turn: 1,
            call_id: "c1".into(),
            name: "read_file".into(),
            summary: "calc.py".into(),
            arguments: "{}".into(),
        },
        AgentEvent::ToolCallFinished {
            turn: 1,
            call_id: "c1".into(),
            name: "read_file".into(),
            summary: "calc.py".into(),
            status: ToolStatus::Ok,
            output: Arc::from("     1\tdef add(a, b):\n     2\t    return a - b\n"),
        },
        AgentEvent::Token {
            turn: 1,
            text: "## Fixed\n\nThe `add` function **subtracted**:\n\n```python\nreturn a + b\n```\n\n- checked the tests\n".into(),
        },
        AgentEvent::Receipt {
            turn: 1,
            written: vec!["calc.py".into()],
            commands: 0,
            notes: Vec::new(),
        },
        AgentEvent::TurnFinished {
            turn: 1,
            outcome: Outcome::Done,
            answer: String::new(),
            error: None,
        },
    ]
}

fn change(before: &str, after: &str) -> FileChange {
    let (added, removed) = crate::diff::line_counts(before, after);
    FileChange {
        path: "calc.py".into(),
        kind: ChangeKind::Modified,
        before: Arc::from(before),
        after: Arc::from(after),
        added,
        removed,
    }
}

#[test]
fn the_first_screen_welcomes() {
    let mut r = rig();
    insta::assert_snapshot!("welcome_120x24", screen(&mut r, 120, 24));
}

#[test]
fn a_turn_renders_markdown_tools_and_the_receipt() {
    let mut r = rig();
    for ev in turn_events() {
        r.app.on_agent(ev);
    }
    insta::assert_snapshot!("turn_120x30", screen(&mut r, 120, 30));
    insta::assert_snapshot!("turn_narrow_70x24", screen(&mut r, 70, 24));
}

#[test]
fn the_diff_pane_follows_a_write_as_it_streams() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "fix".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallStarted {
        turn: 1,
        call_id: "c1".into(),
        name: "edit_file".into(),
    });
    let args =
        json!({"old_string": "return a - b", "path": "calc.py", "replacement": "return a + b"})
            .to_string();
    let (first, rest) = args.split_at(args.len() - 6);
    r.app.on_agent(AgentEvent::ToolCallDelta {
        turn: 1,
        call_id: "c1".into(),
        delta: first.to_string(),
    });
    // The spinner and the elapsed time depend on the clock.
    r.app.status.working_since = None;
    insta::assert_snapshot!("live_diff_streaming", screen(&mut r, 120, 16));
    r.app.on_agent(AgentEvent::ToolCallDelta {
        turn: 1,
        call_id: "c1".into(),
        delta: rest.to_string(),
    });
    let text = screen(&mut r, 120, 16);
    assert!(text.contains("return a «-» b"), "{text}");
    assert!(text.contains("return a ‹+› b"), "{text}");
    // Done without a change of its own (a re-trial: `streaming…` stayed
    // for the rest of the session): the preview goes.
    r.app.on_agent(AgentEvent::ToolCallFinished {
        turn: 1,
        call_id: "c1".into(),
        name: "edit_file".into(),
        summary: "calc.py".into(),
        status: ToolStatus::Ok,
        output: "calc.py already has this content; nothing written".into(),
    });
    let text = screen(&mut r, 120, 16);
    assert!(!text.contains("streaming"), "{text}");
    assert!(!text.contains("return a ‹+› b"), "{text}");
}

/// Ctrl-C while the model was still writing a call left a card saying
/// "writing the call (1 bytes)" for good (trial of 2026-12-06): the call
/// never ran, and its card says so when the turn ends.
#[test]
fn a_call_cut_off_by_the_turns_end_says_it_did_not_run() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "fix".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallStarted {
        turn: 1,
        call_id: "c1".into(),
        name: "write_file".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallDelta {
        turn: 1,
        call_id: "c1".into(),
        delta: "{".into(),
    });
    assert!(screen(&mut r, 120, 16).contains("writing the call"));
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Cancelled,
        answer: String::new(),
        error: None,
    });
    let text = screen(&mut r, 120, 16);
    assert!(!text.contains("writing the call"), "{text}");
    assert!(text.contains("did not run"), "{text}");
    assert!(!text.contains("streaming"), "its preview is gone: {text}");
}

#[test]
fn an_exec_approval_is_answered_with_y() {
    let mut r = rig();
    let fx = r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 7,
            turn: 1,
            call_id: "c1".into(),
            kind: ApprovalKind::Exec {
                command: "cargo test --lib".into(),
                reason: "`cargo` other than check, tree or metadata".into(),
                always_key: "cargo test".into(),
                scope: "`cargo test …` commands".into(),
            },
        },
    });
    assert!(
        fx.contains(&Effect::Bell),
        "the bell rings when a request waits"
    );
    insta::assert_snapshot!("approval_exec", screen(&mut r, 100, 20));
    r.app.on_key(key(KeyCode::Char('y')));
    let sent = ops(&mut r);
    assert!(
        matches!(
            &sent[..],
            [Op::Approval {
                id: 7,
                decision: ApprovalDecision::Yes
            }]
        ),
        "{sent:?}"
    );
    assert!(!r.app.approvals.visible());
}

#[test]
fn no_with_a_reason_and_always() {
    let mut r = rig();
    for id in [1, 2] {
        r.app.on_agent(AgentEvent::ApprovalRequested {
            request: ApprovalRequest {
                id,
                turn: 1,
                call_id: format!("c{id}"),
                kind: ApprovalKind::Exec {
                    command: "rm -rf target".into(),
                    reason: "`rm` is not on the read-only list".into(),
                    always_key: "rm".into(),
                    scope: "`rm …` commands".into(),
                },
            },
        });
    }
    let text = screen(&mut r, 100, 20);
    assert!(text.contains("(1 more waiting)"), "{text}");
    r.app.on_key(key(KeyCode::Char('n')));
    typed(&mut r.app, "keep the build");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_key(key(KeyCode::Char('a')));
    let sent = ops(&mut r);
    assert_eq!(sent.len(), 2);
    assert!(
        matches!(&sent[0], Op::Approval { id: 1, decision: ApprovalDecision::No { reason: Some(r) } } if r == "keep the build")
    );
    assert!(matches!(
        &sent[1],
        Op::Approval {
            id: 2,
            decision: ApprovalDecision::Always
        }
    ));
}

#[test]
fn hunks_can_be_rejected_one_by_one() {
    let mut r = rig();
    let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line 25 changed\n");
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 3,
            turn: 1,
            call_id: "c1".into(),
            kind: ApprovalKind::Edit {
                change: change(&before, &after),
            },
        },
    });
    // The second hunk is rejected: down, space, then y.
    r.app.on_key(key(KeyCode::Down));
    r.app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(
        r.app.status.flash.as_deref(),
        Some("hunk 2/2 rejected · y applies 1/2")
    );
    insta::assert_snapshot!("approval_edit_hunks", screen(&mut r, 100, 30));
    r.app.on_key(key(KeyCode::Char('y')));
    // The picker's words go with the answer (a trial's bar kept them).
    assert_eq!(r.app.status.flash, None);
    let sent = ops(&mut r);
    assert!(
        matches!(&sent[..], [Op::Approval { id: 3, decision: ApprovalDecision::Hunks { accepted } }] if accepted == &vec![0]),
        "{sent:?}"
    );
}

/// An edit of one hunk has nothing to pick: Space says so and changes
/// nothing (it used to reject the hunk silently, so `y` applied nothing).
#[test]
fn space_on_a_single_hunk_says_y_or_n_and_changes_nothing() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 4,
            turn: 1,
            call_id: "c1".into(),
            kind: ApprovalKind::Edit {
                change: change("one\ntwo\n", "one\n2\n"),
            },
        },
    });
    r.app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(
        r.app.status.flash.as_deref(),
        Some("one hunk: y applies it, n refuses it")
    );
    r.app.on_key(key(KeyCode::Char('y')));
    let sent = ops(&mut r);
    assert!(
        matches!(
            &sent[..],
            [Op::Approval {
                id: 4,
                decision: ApprovalDecision::Yes
            }]
        ),
        "{sent:?}"
    );
}

#[test]
fn esc_defers_an_approval_and_brings_it_back() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 1,
            turn: 1,
            call_id: "c1".into(),
            kind: ApprovalKind::Exec {
                command: "make".into(),
                reason: "r".into(),
                always_key: "make".into(),
                scope: "`make …` commands".into(),
            },
        },
    });
    r.app.on_key(key(KeyCode::Esc));
    assert!(!r.app.approvals.visible());
    assert!(screen(&mut r, 100, 20).contains("1 approval waiting (Esc)"));
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.approvals.visible());
    assert!(ops(&mut r).is_empty(), "deferring answers nothing");
}

#[test]
fn enter_sends_and_typing_while_working_queues() {
    let mut r = rig();
    typed(&mut r.app, "first");
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(&ops(&mut r)[..], [Op::UserMessage { text, .. }] if text == "first"));
    assert!(r.app.working);
    typed(&mut r.app, "second");
    r.app.on_key(key(KeyCode::Enter));
    assert!(ops(&mut r).is_empty(), "queued while the agent works");
    assert!(screen(&mut r, 100, 20).contains("1 queued"));
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        error: None,
    });
    assert!(matches!(&ops(&mut r)[..], [Op::UserMessage { text, .. }] if text == "second"));
}

/// Commands and messages typed during a turn wait in the TUI's queue, in
/// order; ↑ with nothing typed takes the last one out (a message back into
/// the composer); queries that change nothing are sent at once.
#[test]
fn what_waits_for_the_turn_can_be_taken_out_of_the_queue() {
    let mut r = rig();
    typed(&mut r.app, "first");
    r.app.on_key(key(KeyCode::Enter));
    let _ = ops(&mut r);
    typed(&mut r.app, "/stats");
    r.app.on_key(key(KeyCode::Enter));
    assert!(
        matches!(&ops(&mut r)[..], [Op::Stats]),
        "a query goes at once"
    );
    typed(&mut r.app, "/model");
    r.app.on_key(key(KeyCode::Enter));
    typed(&mut r.app, "/diff");
    r.app.on_key(key(KeyCode::Enter));
    typed(&mut r.app, "second");
    r.app.on_key(key(KeyCode::Enter));
    typed(&mut r.app, "third");
    r.app.on_key(key(KeyCode::Enter));
    assert!(ops(&mut r).is_empty(), "all of them wait");
    assert!(screen(&mut r, 100, 20).contains("4 queued"));
    // ↑: "third" comes back to be edited; again: the one before.
    r.app.on_key(key(KeyCode::Up));
    assert_eq!(r.app.composer.text(), "third");
    r.app.composer.set_text("");
    r.app.on_key(key(KeyCode::Up));
    assert_eq!(r.app.composer.text(), "second");
    r.app.composer.set_text("");
    r.app.on_key(key(KeyCode::Up));
    assert!(screen(&mut r, 100, 20).contains("/diff taken out of the queue"));
    assert!(screen(&mut r, 100, 20).contains("1 queued"));
    typed(&mut r.app, "again");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        error: None,
    });
    // The command runs, then the message starts the next turn.
    assert!(
        matches!(&ops(&mut r)[..], [Op::Model { .. }, Op::UserMessage { text, .. }] if text == "again"),
        "{:?}",
        ops(&mut r)
    );
}

/// F1's PgDn moves a page (what shows), and no paging goes past the last
/// line into blank rows (issue 33, item 10).
#[test]
fn help_pages_by_what_shows_and_stops_at_its_end() {
    let mut r = rig();
    r.app.on_key(key(KeyCode::F(1)));
    let first = screen(&mut r, 100, 20);
    r.app.on_key(key(KeyCode::PageDown));
    let second = screen(&mut r, 100, 20);
    assert_ne!(first, second);
    // The box's own lines with text.
    let shown = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| {
                l.trim_matches(|c: char| c == '│' || c.is_whitespace())
                    .to_string()
            })
            .filter(|l| !l.is_empty())
            .collect()
    };
    // No line of the first page shows on the second: it moved a page,
    // not ten lines.
    let (a, b) = (shown(&first), shown(&second));
    assert!(a.len() > 12, "{first}");
    assert!(
        b.iter().filter(|l| a.contains(l)).count() <= 2,
        "{first}\n{second}"
    );
    for _ in 0..50 {
        r.app.on_key(key(KeyCode::PageDown));
    }
    let end = screen(&mut r, 100, 20);
    assert!(shown(&end).len() > 10, "paged into blank rows:\n{end}");
}

#[test]
fn shift_enter_makes_a_new_line_and_up_recalls_history() {
    let mut r = rig();
    typed(&mut r.app, "one");
    r.app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    r.app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    typed(&mut r.app, "two");
    assert_eq!(r.app.composer.text(), "one\n\ntwo");
    r.app.on_key(key(KeyCode::Enter));
    let _ = ops(&mut r);
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        error: None,
    });
    r.app.on_key(key(KeyCode::Up));
    assert_eq!(r.app.composer.text(), "one\n\ntwo");
    r.app.on_paste("pasted\r\ntext");
    assert!(r.app.composer.text().ends_with("pasted\ntext"));
}

#[test]
fn esc_with_nothing_typed_cancels_a_running_turn_and_never_quits() {
    let mut r = rig();
    typed(&mut r.app, "work");
    r.app.on_key(key(KeyCode::Enter));
    let _ = ops(&mut r);
    let fx = r.app.on_key(key(KeyCode::Esc));
    assert!(matches!(&ops(&mut r)[..], [Op::Cancel]));
    assert!(!fx.contains(&Effect::Quit));
    let fx = r.app.on_key(key(KeyCode::Esc));
    assert!(!fx.contains(&Effect::Quit));
}

#[test]
fn ctrl_c_cancels_then_quits() {
    let mut r = rig();
    typed(&mut r.app, "work");
    r.app.on_key(key(KeyCode::Enter));
    let _ = ops(&mut r);
    let fx = r.app.on_key(ctrl('c'));
    assert!(matches!(&ops(&mut r)[..], [Op::Cancel]));
    assert!(!fx.contains(&Effect::Quit));
    let fx = r.app.on_key(ctrl('c'));
    assert!(fx.contains(&Effect::Quit));
}

#[test]
fn slash_commands_and_the_palette() {
    let mut r = rig();
    r.app.on_key(key(KeyCode::Char('/')));
    typed(&mut r.app, "th");
    insta::assert_snapshot!("palette", screen(&mut r, 100, 20));
    r.app.on_key(key(KeyCode::Tab));
    typed(&mut r.app, "light");
    r.app.on_key(key(KeyCode::Enter));
    assert_eq!(r.app.theme.name, "light");
    typed(&mut r.app, "/keymap vim");
    r.app.on_key(key(KeyCode::Enter));
    assert_eq!(r.app.keymap.name, "vim");
    typed(&mut r.app, "/new");
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(&ops(&mut r)[..], [Op::NewSession]));
    typed(&mut r.app, "/quit");
    let fx = r.app.on_key(key(KeyCode::Enter));
    assert!(fx.contains(&Effect::Quit));
}

#[test]
fn help_lists_every_key_of_the_active_keymap() {
    let mut r = rig();
    r.app.on_key(key(KeyCode::F(1)));
    let text = r.app.help_text().join("\n");
    for scope in keymap::Scope::ALL {
        for (action, desc) in scope.actions() {
            let keys = r.app.keymap.describe(*scope, action);
            assert!(text.contains(&keys) && text.contains(desc), "{action}");
        }
    }
    // The marks the tree and the status bar show are explained too.
    for mark in [
        "⟲N",
        "✗N",
        "A  M  D",
        "ctx N/M",
        "N queued",
        "(asked alone)",
    ] {
        assert!(text.contains(mark), "{mark} is not explained");
    }
    // On a narrow screen a long line is folded, not cut (a re-trial: the
    // marks' words ran off the right edge at 120 columns).
    let tall = screen(&mut r, 80, 200);
    assert!(tall.contains("same checks as write_file"), "{tall}");
    insta::assert_snapshot!("help", screen(&mut r, 100, 24));
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.overlay().is_none());
}

#[test]
fn tab_moves_focus_and_narrow_screens_show_tabs() {
    let mut r = rig();
    // On a wide screen Tab goes the way the panes are seen, left to
    // right: files, transcript, diff, and back to the composer.
    let _ = screen(&mut r, 120, 20);
    assert_eq!(r.app.focus, Focus::Composer);
    for want in [Focus::Tree, Focus::Transcript, Focus::Diff, Focus::Composer] {
        r.app.on_key(key(KeyCode::Tab));
        assert_eq!(r.app.focus, want);
    }
    r.app.on_key(key(KeyCode::BackTab));
    assert_eq!(r.app.focus, Focus::Diff);
    r.app.on_key(key(KeyCode::Tab));
    // On a narrow one, the tabs' order: transcript, diff, files.
    let _ = screen(&mut r, 70, 20);
    r.app.on_key(key(KeyCode::Tab));
    assert_eq!(r.app.focus, Focus::Transcript);
    r.app.on_key(key(KeyCode::Tab));
    assert_eq!(r.app.focus, Focus::Diff);
    let text = screen(&mut r, 70, 20);
    assert!(text.contains(" diff "), "{text}");
    r.app.on_key(key(KeyCode::Tab));
    assert_eq!(r.app.focus, Focus::Tree);
    insta::assert_snapshot!("narrow_files_tab", screen(&mut r, 70, 16));
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_key(key(KeyCode::Down));
    r.app.on_key(key(KeyCode::Enter));
    assert!(
        screen(&mut r, 100, 20).contains("pub fn one() -> u32"),
        "the viewer opens a file"
    );
}

#[test]
fn scrolling_up_does_not_yank_the_view() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "count".into(),
    });
    let many: String = (1..=80).map(|i| format!("line {i}\n\n")).collect();
    r.app.on_agent(AgentEvent::Token {
        turn: 1,
        text: many,
    });
    let _ = screen(&mut r, 100, 20);
    r.app.focus = Focus::Transcript;
    r.app.on_key(key(KeyCode::PageUp));
    let before = screen(&mut r, 100, 20);
    r.app.on_agent(AgentEvent::Token {
        turn: 1,
        text: "line 81\n".into(),
    });
    let after = screen(&mut r, 100, 20);
    assert!(after.contains("↓ new output"), "{after}");
    let strip = |s: &str| s.lines().take(8).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&before), strip(&after), "the view moved");
    r.app.on_key(key(KeyCode::End));
    assert!(screen(&mut r, 100, 20).contains("line 81"));
}

#[test]
fn every_shipped_theme_and_keymap_draws() {
    let mut r = rig();
    for ev in turn_events() {
        r.app.on_agent(ev);
    }
    for name in ["dark", "light", "high-contrast"] {
        for depth in [
            ColorDepth::TrueColor,
            ColorDepth::Ansi256,
            ColorDepth::Ansi16,
        ] {
            r.app.theme = theme::load(name, &r.app.root, depth).unwrap();
            assert!(screen(&mut r, 90, 20).contains("fix the add function"));
        }
    }
    for (name, _) in keymap::SHIPPED {
        r.app.keymap = keymap::load(name).unwrap();
        r.app.on_key(key(KeyCode::F(1)));
        let text = screen(&mut r, 100, 30);
        assert!(text.contains(&format!("keymap: {name}")), "{text}");
        r.app.on_key(key(KeyCode::Esc));
        assert!(r.app.overlay().is_none(), "{name}: Esc closes the help");
        assert!(screen(&mut r, 90, 20).contains("fix the add function"));
    }
}

mod review;

/// A rig whose transcript holds `n` finished turns, "question 1" on.
fn rig_with_questions(n: u64) -> Rig {
    let mut r = rig();
    for turn in 1..=n {
        r.app.on_agent(AgentEvent::TurnStarted {
            turn,
            prompt: format!("question {turn}"),
        });
        r.app.on_agent(AgentEvent::TurnFinished {
            turn,
            outcome: Outcome::Done,
            answer: String::new(),
            error: None,
        });
    }
    r
}

/// Issue 33: after Home, `j` took the last cell and scrolled it to the
/// top, with blank rows under it. It takes the cell at the top of the
/// view; the last cell is shown with the end under it.
#[test]
fn after_home_j_selects_the_top_cell_and_the_last_cell_fills_the_view() {
    let mut r = rig_with_questions(40);
    r.app.focus = Focus::Transcript;
    r.app.on_key(key(KeyCode::Home));
    r.app.on_key(key(KeyCode::Char('j')));
    assert_eq!(r.app.transcript.selected, Some(0));
    assert!(screen(&mut r, 100, 20).contains("question 1"));
    r.app.on_key(key(KeyCode::End));
    for _ in 0..60 {
        r.app.on_key(key(KeyCode::Char('j')));
    }
    let last = r.app.transcript.cells.len() - 1;
    assert_eq!(r.app.transcript.selected, Some(last));
    let text = screen(&mut r, 100, 20);
    assert!(text.contains("question 39"), "the view is full: {text}");
    // With the last cell selected, Home and `j` take the top cell too (a
    // re-trial: `j` took the cell after the old selection, at the end).
    r.app.on_key(key(KeyCode::Home));
    r.app.on_key(key(KeyCode::Char('j')));
    assert_eq!(r.app.transcript.selected, Some(0));
    assert!(screen(&mut r, 100, 20).contains("question 1"));
}

#[test]
fn page_keys_scroll_the_transcript_while_the_composer_has_the_focus() {
    let mut r = rig_with_questions(40);
    assert!(screen(&mut r, 100, 20).contains("question 40"));
    assert_eq!(r.app.focus, Focus::Composer);
    r.app.on_key(key(KeyCode::Home));
    let text = screen(&mut r, 100, 20);
    assert!(
        text.contains("question 1\n") || text.contains("question 1 "),
        "{text}"
    );
    r.app.on_key(key(KeyCode::End));
    assert!(screen(&mut r, 100, 20).contains("question 40"));
    r.app.on_key(key(KeyCode::PageUp));
    r.app.on_key(key(KeyCode::PageUp));
    assert!(!screen(&mut r, 100, 20).contains("question 40"));
    // With text typed, Home is the composer's own.
    typed(&mut r.app, "abc");
    r.app.on_key(key(KeyCode::Home));
    typed(&mut r.app, "x");
    assert_eq!(r.app.composer.text(), "xabc");
    assert_eq!(r.app.focus, Focus::Composer);
}

#[test]
fn status_messages_go_after_a_while_and_never_hide_the_figures() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Usage {
        turn: 1,
        stats: RequestStats::default(),
        context_used: 3000,
    });
    r.app.command("/mouse");
    r.app.status.flash = Some(
        "a very long message about something that happened a moment ago, far too long for the bar"
            .into(),
    );
    let text = screen(&mut r, 80, 12);
    let bar = text.lines().last().unwrap().to_string();
    assert!(bar.contains("ctx 3.0k/16k"), "{bar}");
    assert!(bar.contains("a very"), "{bar}");
    // Six seconds on, the message is gone.
    r.app.flash_at = Some(std::time::Instant::now() - std::time::Duration::from_secs(7));
    r.app.tick();
    assert!(r.app.status.flash.is_none());
    // A command's waiting word stays while its op runs.
    typed(&mut r.app, "/commit");
    r.app.on_key(key(KeyCode::Enter));
    r.app.flash_at = Some(std::time::Instant::now() - std::time::Duration::from_secs(60));
    r.app.tick();
    assert_eq!(
        r.app.status.flash.as_deref(),
        Some("asking the model for a commit message…")
    );
}

#[test]
fn a_tree_filter_takes_every_letter_in_the_vim_keymap() {
    let mut r = rig();
    r.app.keymap = keymap::load("vim").unwrap();
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Char('c')));
    typed(&mut r.app, "alc");
    assert_eq!(r.app.tree.filter, "calc");
    r.app.on_key(key(KeyCode::Char('.')));
    typed(&mut r.app, "pyjk");
    assert_eq!(r.app.tree.filter, "calc.pyjk");
}

#[test]
fn a_tree_filter_starts_with_the_first_letter_typed() {
    // Default keymap: any letter starts the filter, `k` included.
    let mut r = rig();
    r.app.focus = Focus::Tree;
    assert!(screen(&mut r, 100, 20).contains("type to filter"));
    typed(&mut r.app, "kel");
    assert_eq!(r.app.tree.filter, "kel");
    // Vim keymap: `j` moves, `/` starts a filter in which `h` is a letter.
    let mut r = rig();
    r.app.keymap = keymap::load("vim").unwrap();
    r.app.focus = Focus::Tree;
    // The tree says how a filter starts here (a trial's vim user read
    // "type to filter" and got moves).
    assert!(screen(&mut r, 100, 20).contains("/ to filter"));
    let at = r.app.tree.selected;
    r.app.on_key(key(KeyCode::Char('j')));
    assert_eq!(r.app.tree.selected, at + 1);
    assert!(r.app.tree.filter.is_empty());
    r.app.on_key(key(KeyCode::Char('/')));
    assert_eq!(r.app.focus, Focus::Tree);
    assert!(screen(&mut r, 100, 20).contains("filter: ▏"));
    typed(&mut r.app, "help");
    assert_eq!(r.app.tree.filter, "help");
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.tree.filter.is_empty() && !r.app.tree.typing());
}

/// The trial's newcomer typed `/keymap default` with the tree focused in
/// the vim keymap: the `/` started a filter and the command was lost in
/// it. A filter that names no file but a command says so, and Enter runs
/// the command.
#[test]
fn a_command_typed_into_the_vim_tree_filter_runs_on_enter() {
    let mut r = rig();
    r.app.keymap = keymap::load("vim").unwrap();
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Char('/')));
    typed(&mut r.app, "keymap default");
    let s = screen(&mut r, 120, 20);
    assert!(
        s.contains("no file; Enter runs") && s.contains("/keymap default"),
        "{s}"
    );
    r.app.on_key(key(KeyCode::Enter));
    assert_eq!(r.app.keymap.name, "default");
    assert!(!r.app.tree.typing());
    // A filter that is no command stays a filter.
    r.app.focus = Focus::Tree;
    typed(&mut r.app, "zzz");
    r.app.on_key(key(KeyCode::Enter));
    assert_eq!(r.app.tree.filter, "zzz");
}

#[test]
fn the_composer_kills_lines_as_readline_does_and_esc_twice_clears() {
    let mut r = rig();
    typed(&mut r.app, "fix the parser");
    r.app.on_key(ctrl('j'));
    typed(&mut r.app, "and the tests");
    // Ctrl-U: the line so far, not one character.
    r.app.on_key(ctrl('u'));
    assert_eq!(r.app.composer.text(), "fix the parser\n");
    r.app.on_key(ctrl('y'));
    assert_eq!(r.app.composer.text(), "fix the parser\nand the tests");
    // One Esc says what a second does; the second clears; Ctrl-Y undoes it.
    r.app.on_key(key(KeyCode::Esc));
    assert_eq!(r.app.composer.text(), "fix the parser\nand the tests");
    assert!(screen(&mut r, 100, 20).contains("esc again clears"));
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.composer.is_empty());
    assert!(screen(&mut r, 100, 20).contains("cleared"));
    r.app.on_key(ctrl('y'));
    assert_eq!(r.app.composer.text(), "fix the parser\nand the tests");
}

#[test]
fn an_approval_for_a_new_file_says_create() {
    let mut r = rig();
    let mut new_file = change("", "print('hi')\n");
    new_file.path = "hello.py".into();
    new_file.kind = ChangeKind::Created;
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 1,
            turn: 1,
            call_id: "w1".into(),
            kind: ApprovalKind::Edit { change: new_file },
        },
    });
    let text = screen(&mut r, 120, 24);
    assert!(text.contains("create hello.py?"), "{text}");
    assert!(!text.contains("change hello.py?"), "{text}");
}

#[test]
fn a_notice_of_several_lines_keeps_its_breaks_and_a_cancel_word_goes_with_its_turn() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Notice {
        turn: None,
        level: Level::Info,
        text: "sessions:\n20261201-1  4 messages  fix it\n20261201-2  2 messages  hi".into(),
    });
    let text = screen(&mut r, 100, 20);
    assert!(
        text.lines().any(|l| l.contains("mm: sessions:"))
            && text
                .lines()
                .any(|l| l.contains("20261201-1  4 messages  fix it"))
            && text
                .lines()
                .any(|l| l.contains("20261201-2  2 messages  hi")),
        "{text}"
    );
    // A message queued behind a cancelled turn starts without "cancelling…".
    typed(&mut r.app, "first");
    r.app.on_key(key(KeyCode::Enter));
    typed(&mut r.app, "second");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_key(ctrl('c'));
    assert!(screen(&mut r, 100, 20).contains("cancelling…"));
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Cancelled,
        answer: String::new(),
        error: None,
    });
    assert!(!screen(&mut r, 100, 20).contains("cancelling…"));
}

#[test]
fn a_long_reason_for_a_no_wraps_in_the_approval() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 7,
            turn: 1,
            call_id: "c1".into(),
            kind: ApprovalKind::Exec {
                command: "rm -rf build".into(),
                reason: "`rm` deletes files".into(),
                always_key: "=rm -rf build".into(),
                scope: "this exact command".into(),
            },
        },
    });
    r.app.on_key(key(KeyCode::Char('n')));
    typed(
        &mut r.app,
        "keep the build folder because the release script reads it and the end of this sentence must stay visible",
    );
    let text = screen(&mut r, 80, 24);
    // The end, where the cursor is, is in sight, wrapped over rows.
    assert!(text.contains("must stay visible▏"), "{text}");
    assert!(text.contains("Esc goes back"), "{text}");
}

#[test]
fn a_request_in_flight_shows_its_tokens_rate_and_the_call_as_it_is_written() {
    let mut r = rig();
    typed(&mut r.app, "read it");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "read it".into(),
    });
    r.app.on_agent(AgentEvent::Generating {
        turn: 1,
        tokens: 0,
        tokens_per_second: None,
        prompt: Some((3000, 19000)),
        queued: false,
    });
    let bar = |r: &mut Rig| screen(r, 120, 20).lines().last().unwrap().to_string();
    assert!(bar(&mut r).contains("prompt 3.0k/19k"), "{}", bar(&mut r));
    r.app.on_agent(AgentEvent::ToolCallStarted {
        turn: 1,
        call_id: "c1".into(),
        name: "write_file".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallDelta {
        turn: 1,
        call_id: "c1".into(),
        delta: format!(
            "{{\"path\": \"notes.txt\", \"content\": \"{}the end so far",
            "padding ".repeat(30)
        ),
    });
    r.app.on_agent(AgentEvent::Generating {
        turn: 1,
        tokens: 2792,
        tokens_per_second: Some(11.5),
        prompt: None,
        queued: false,
    });
    let text = screen(&mut r, 120, 20);
    assert!(bar(&mut r).contains("2.8k tok · 11.5 tok/s"), "{text}");
    // The end of the arguments, not their start, is what is shown.
    assert!(text.contains("│ …dding padding"), "{text}");
    assert!(text.contains("the end so far"), "{text}");
    // The file is named as soon as its path is written.
    assert!(text.contains("write_file notes.txt"), "{text}");
    // A finished request leaves the live figures.
    r.app.on_agent(AgentEvent::Usage {
        turn: 1,
        stats: RequestStats::default(),
        context_used: 100,
    });
    assert!(!bar(&mut r).contains("tok/s"));
}

#[test]
fn the_bar_s_live_figures_are_ones_a_person_can_trust() {
    let mut r = rig();
    typed(&mut r.app, "explain it");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "explain it".into(),
    });
    let bar = |r: &mut Rig| screen(r, 120, 20).lines().last().unwrap().to_string();
    let generating = |tokens, tps, prompt| AgentEvent::Generating {
        turn: 1,
        tokens,
        tokens_per_second: tps,
        prompt,
        queued: false,
    };
    // The first tokens get no rate (it was `3 tok · 0.0 tok/s`).
    r.app.on_agent(generating(3, Some(0.0), None));
    assert!(bar(&mut r).contains("3 tok"), "{}", bar(&mut r));
    assert!(!bar(&mut r).contains("tok/s"), "{}", bar(&mut r));
    // The count never goes back within a request (it went 6 → 2).
    r.app.on_agent(generating(2, None, None));
    assert!(bar(&mut r).contains("3 tok"), "{}", bar(&mut r));
    r.app.on_agent(generating(40, Some(9.5), None));
    assert!(
        bar(&mut r).contains("40 tok · 9.5 tok/s"),
        "{}",
        bar(&mut r)
    );
    // A request that read 2,000 uncached tokens in 20 s: the next long
    // prompt's wait is estimated by that speed.
    r.app.on_agent(AgentEvent::Usage {
        turn: 1,
        stats: RequestStats {
            usage: Usage {
                prompt: 2100,
                cached: 100,
                completion: 40,
            },
            first_token_ms: Some(20_000),
            ..RequestStats::default()
        },
        context_used: 2140,
    });
    r.app.on_agent(AgentEvent::RequestStarted {
        turn: 1,
        round: 2,
        attempt: 1,
    });
    r.app.on_agent(generating(0, None, Some((0, 1900))));
    assert!(
        bar(&mut r).contains("reading 1.9k prompt tokens, ~19s"),
        "{}",
        bar(&mut r)
    );
}

#[test]
fn a_plan_turn_stays_busy_while_the_plan_is_asked_for_after_it() {
    let mut r = rig();
    typed(&mut r.app, "/plan tidy the parser");
    r.app.on_key(key(KeyCode::Enter));
    let subs = submissions(&mut r);
    let plan = subs
        .iter()
        .find(|s| matches!(s.op, Op::Plan { .. }))
        .expect("a plan op");
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "tidy the parser".into(),
    });
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: "It reads lines.".into(),
        error: None,
    });
    // The answer held no plan and mm asks for one: still working, and
    // Ctrl-C still cancels (the spinner went away here before).
    assert!(r.app.status.working_since.is_some());
    assert!(r.app.working);
    r.app.on_event(Event {
        id: plan.id,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    assert!(r.app.status.working_since.is_none());
    assert!(!r.app.working);
}

#[test]
fn tool_output_wraps_between_words() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "run it".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallFinished {
        turn: 1,
        call_id: "c1".into(),
        name: "bash".into(),
        summary: "pytest".into(),
        status: ToolStatus::Ok,
        output: Arc::from(
            "collected 3 items: test_addition test_subtraction test_multiplication test_division_by_zero passed\n",
        ),
    });
    let text = screen(&mut r, 100, 16);
    for word in [
        "test_subtraction",
        "test_multiplication",
        "test_division_by_zero",
    ] {
        assert!(text.contains(word), "{word} was split:\n{text}");
    }
}

#[test]
fn the_diff_pane_shows_the_sessions_net_change_per_file() {
    let mut r = rig();
    let landed =
        |r: &mut Rig, id: &str, path: &str, kind: ChangeKind, before: &str, after: &str| {
            let (added, removed) = crate::diff::line_counts(before, after);
            r.app.on_agent(AgentEvent::FileChanged {
                turn: 1,
                call_id: id.into(),
                change: Arc::new(FileChange {
                    path: path.into(),
                    kind,
                    before: Arc::from(before),
                    after: Arc::from(after),
                    added,
                    removed,
                }),
            });
        };
    // A file made, changed twice; another changed.
    landed(&mut r, "c1", "util.py", ChangeKind::Created, "", "a = 1\n");
    landed(
        &mut r,
        "c2",
        "util.py",
        ChangeKind::Modified,
        "a = 1\n",
        "a = 2\n",
    );
    landed(
        &mut r,
        "c3",
        "calc.py",
        ChangeKind::Modified,
        "x = 1\n",
        "x = 2\n",
    );
    landed(
        &mut r,
        "c4",
        "util.py",
        ChangeKind::Modified,
        "a = 2\n",
        "a = 3\nb = 4\n",
    );
    let text = screen(&mut r, 140, 24);
    assert!(text.contains("diff · 2 files"), "{text}");
    assert!(text.contains("A util.py +2 -0"), "{text}");
    assert!(text.contains("M calc.py +1 -1"), "{text}");
    assert!(!text.contains("M util.py"), "{text}");
    // A rewind puts calc.py back and deletes util.py: nothing is left.
    landed(
        &mut r,
        "rewind-1",
        "calc.py",
        ChangeKind::Modified,
        "x = 2\n",
        "x = 1\n",
    );
    landed(
        &mut r,
        "rewind-1",
        "util.py",
        ChangeKind::Deleted,
        "a = 3\nb = 4\n",
        "",
    );
    assert!(r.app.diff.entries.is_empty(), "{}", screen(&mut r, 140, 24));
    // A change the user turns down does not stay.
    r.app.on_agent(AgentEvent::ToolCallStarted {
        turn: 2,
        call_id: "c5".into(),
        name: "write_file".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallFinished {
        turn: 2,
        call_id: "c5".into(),
        name: "write_file".into(),
        summary: "calc.py".into(),
        status: ToolStatus::Refused,
        output: Arc::from("declined"),
    });
    assert!(r.app.diff.entries.is_empty());
}

#[test]
fn on_a_narrow_screen_a_message_sent_brings_the_transcript_tab_forward() {
    let mut r = rig();
    // The files tab, chosen earlier with Tab.
    let _ = screen(&mut r, 70, 20);
    for _ in 0..3 {
        r.app.on_key(key(KeyCode::Tab));
    }
    assert_eq!(r.app.tab, Focus::Tree);
    r.app.on_key(key(KeyCode::Tab));
    assert_eq!(r.app.focus, Focus::Composer);
    typed(&mut r.app, "fix it");
    r.app.on_key(key(KeyCode::Enter));
    assert_eq!(r.app.tab, Focus::Transcript);
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "fix it".into(),
    });
    r.app.on_agent(AgentEvent::Token {
        turn: 1,
        text: "Looking at it now.".into(),
    });
    let text = screen(&mut r, 80, 20);
    assert!(text.contains("Looking at it now."), "{text}");
}

#[test]
fn a_narrow_status_bar_drops_whole_figures_least_needed_first() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Usage {
        turn: 1,
        stats: RequestStats {
            modes: None,
            usage: crate::protocol::Usage {
                prompt: 3300,
                cached: 1000,
                completion: 73,
            },
            first_token_ms: Some(1200),
            tokens_per_second: Some(13.5),
        },
        context_used: 3000,
    });
    r.app.status.checkpoints = 2;
    r.app.status.errors = 1;
    for width in 40u16..=160 {
        let text = screen(&mut r, width, 12);
        let bar = text.lines().last().unwrap().to_string();
        // The context figure is whole, or the bar is too narrow for it.
        assert!(
            bar.contains("ctx 3.0k/16k (18%)") || width < 60,
            "{width}: {bar}"
        );
        assert!(bar.contains("✗1"), "{width}: {bar}");
        // A figure is there whole or not at all.
        assert!(
            bar.contains("13.5 tok/s") || !bar.contains("tok/"),
            "{width}: {bar}"
        );
        assert!(
            bar.contains("ttft 1.2s") || !bar.contains("ttf"),
            "{width}: {bar}"
        );
        if width == 90 {
            assert!(!bar.contains("ttft"), "the least needed goes first: {bar}");
            assert!(bar.contains("in 3.3k (30% cached) out 73"), "{bar}");
        }
    }
}

#[test]
fn a_json_agent_is_said_on_the_first_screen_and_its_answer_shown_pretty() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::SessionStarted {
        info: SessionInfo {
            structured: true,
            ..Default::default()
        },
    });
    let text = screen(&mut r, 120, 24);
    assert!(
        text.contains("tools: none (structured output: JSON answers)"),
        "{text}"
    );
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "capital of Vietnam".into(),
    });
    r.app.on_agent(AgentEvent::Token {
        turn: 1,
        text: r#"[{"name":"Vietnam","capital":"Hanoi"}]"#.into(),
    });
    let text = screen(&mut r, 120, 24);
    assert!(text.contains("\"capital\": \"Hanoi\""), "{text}");
}

#[test]
fn an_asked_agents_steps_nest_collapsed_under_its_card_and_ask_commands_join_the_palette() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::SessionStarted {
        info: crate::protocol::SessionInfo {
            agents: vec![(
                "triage".into(),
                "Triages bug reports. Answers in JSON.".into(),
            )],
            ..Default::default()
        },
    });
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "triage the reports".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallRunning {
        turn: 1,
        call_id: "a1".into(),
        name: "ask_agent".into(),
        summary: "triage — Triage these reports".into(),
        arguments: "{}".into(),
    });
    for step in ["✓ read_file reports.txt", "✓ grep crash"] {
        r.app.on_agent(AgentEvent::ToolProgress {
            turn: 1,
            call_id: "a1".into(),
            text: step.into(),
        });
    }
    let text = screen(&mut r, 160, 20);
    assert!(
        text.contains("ask_agent triage — Triage these reports"),
        "{text}"
    );
    assert!(text.contains("↳ 2 steps · ✓ grep crash"), "{text}");
    assert!(!text.contains("read_file reports.txt"), "collapsed: {text}");

    // `/ask-…` completes from the agents the session declared.
    for c in "/ask-t".chars() {
        r.app.on_key(key(KeyCode::Char(c)));
    }
    let text = screen(&mut r, 160, 20);
    assert!(
        text.contains("/ask-triage") && text.contains("ask triage: Triages bug reports"),
        "{text}"
    );
    assert!(
        r.app
            .help_text()
            .iter()
            .any(|l| l.contains("/ask-with-context-triage"))
    );
}

#[test]
fn a_helpers_card_opens_its_own_transcript_with_o() {
    let mut r = rig();
    // The helper's session, as the child wrote it in the same workspace.
    let mut log = crate::session::SessionLog::create(&r.app.root, "local", "m").unwrap();
    log.append_prompt(
        &crate::llm::Message::user("review calc.py"),
        "review calc.py",
    )
    .unwrap();
    log.append_message(
        &crate::llm::Message::assistant("add() subtracts: line 2 should be a + b."),
        None,
    )
    .unwrap();
    let child = log.id().to_string();
    drop(log);
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "review it with a helper".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallRunning {
        turn: 1,
        call_id: "t1".into(),
        name: "task".into(),
        summary: "reviewer — review calc.py".into(),
        arguments: "{}".into(),
    });
    // `o` with nothing selected says what to do.
    r.app.focus = Focus::Transcript;
    r.app.on_key(key(KeyCode::Char('o')));
    assert!(screen(&mut r, 160, 24).contains("select a helper's card first"));
    r.app.on_agent(AgentEvent::ToolChild {
        turn: 1,
        call_id: "t1".into(),
        session: child.clone(),
    });
    let text = screen(&mut r, 160, 24);
    assert!(
        text.contains(&format!("its own transcript (session {child})")),
        "{text}"
    );
    r.app.on_key(key(KeyCode::Char('k')));
    r.app.on_key(key(KeyCode::Char('o')));
    let text = screen(&mut r, 160, 24);
    assert!(text.contains("line 2 should be a + b"), "{text}");
    assert!(text.contains("review calc.py"), "{text}");
}

#[test]
fn a_long_turn_ends_with_a_notification_and_a_short_one_without() {
    use crate::protocol::Outcome;
    let mut r = rig();
    let turn = |r: &mut Rig| {
        r.app.on_agent(AgentEvent::TurnStarted {
            turn: 1,
            prompt: "go".into(),
        });
        r.app.on_agent(AgentEvent::TurnFinished {
            turn: 1,
            outcome: Outcome::Done,
            answer: "ok".into(),
            error: None,
        })
    };
    // notifyAfter unset in the info: never.
    assert!(!turn(&mut r).iter().any(|e| matches!(e, Effect::Notify(_))));
    // notifyAfter 0 ms: every turn is long enough.
    r.app.status.info.notify_after_ms = Some(0);
    let fx = turn(&mut r);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Notify(t) if t.contains("the turn ended (done)"))),
        "{fx:?}"
    );
    // A long wait: the turn would have to last an hour.
    r.app.status.info.notify_after_ms = Some(3_600_000);
    assert!(!turn(&mut r).iter().any(|e| matches!(e, Effect::Notify(_))));
}

#[test]
fn a_compaction_is_a_cell_that_expands_to_its_summary() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Compacted {
        turn: 1,
        replaced: 12,
        summary: "The user wants mean fixed.\nstats.py was read.".into(),
        tokens_before: 13000,
        tokens_after: 3100,
        auto: true,
    });
    let text = screen(&mut r, 160, 24);
    assert!(
        text.contains("near the window, compacted: 12 earlier messages"),
        "{text}"
    );
    assert!(text.contains("~13000 → ~3100 tokens"), "{text}");
    assert!(!text.contains("stats.py was read."), "collapsed: {text}");
    let last = r.app.transcript.cells.len() - 1;
    r.app.transcript.selected = Some(last);
    r.app.transcript.toggle_selected();
    let text = screen(&mut r, 160, 24);
    assert!(text.contains("┊ stats.py was read."), "expanded: {text}");
}

#[test]
fn slash_in_the_tree_starts_a_command_unless_a_filter_is_typed() {
    let mut r = rig();
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Char('/')));
    assert_eq!(r.app.focus, Focus::Composer);
    assert_eq!(r.app.composer.text(), "/");
    // With a filter typed, `/` is part of it (a path).
    let mut r = rig();
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Char('s')));
    r.app.on_key(key(KeyCode::Char('/')));
    assert_eq!(r.app.focus, Focus::Tree);
    assert_eq!(r.app.tree.filter, "s/");
}

#[test]
fn a_second_plan_waits_under_the_one_open_and_nothing_runs_unseen() {
    // A newcomer trial: a plan opened over the one being edited, and
    // Ctrl-S carried out steps never read.
    let mut r = rig();
    let plan = |steps: &[&str]| AgentEvent::Plan {
        turn: 1,
        steps: steps
            .iter()
            .map(|s| PlanStep {
                step: (*s).into(),
                status: StepStatus::Pending,
            })
            .collect(),
        approved: false,
    };
    r.app.on_agent(plan(&["edit calc.py"]));
    r.app.on_key(key(KeyCode::Char('e')));
    typed(&mut r.app, " carefully");
    r.app
        .on_agent(plan(&["rewrite everything", "delete the tests"]));
    let shown = screen(&mut r, 100, 30);
    assert!(shown.contains("carefully"), "{shown}");
    assert!(!shown.contains("rewrite everything"), "{shown}");
    r.app.on_key(ctrl('s'));
    let sent = ops(&mut r);
    assert!(
        sent.iter().any(|o| matches!(o, Op::RunPlan { steps } if steps.len() == 1 && steps[0].contains("carefully"))),
        "{sent:?}"
    );
    // The other plan is next, and runs only when it is carried out.
    let shown = screen(&mut r, 100, 30);
    assert!(shown.contains("rewrite everything"), "{shown}");
}

/// A running card's time moves with the clock, not only when a step of
/// it arrives.
#[test]
fn a_running_tool_cards_time_moves_without_new_events() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "check".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallRunning {
        turn: 1,
        call_id: "b1".into(),
        name: "bash".into(),
        summary: "sleep 5".into(),
        arguments: "{}".into(),
    });
    assert!(screen(&mut r, 120, 20).contains("running 0.0s"));
    std::thread::sleep(std::time::Duration::from_millis(250));
    assert!(r.app.tick());
    let text = screen(&mut r, 120, 20);
    assert!(!text.contains("running 0.0s"), "{text}");
    assert!(text.contains("running "), "{text}");
}

#[test]
fn an_indented_notice_line_wraps_under_its_own_start() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Notice {
        turn: None,
        level: Level::Info,
        text: "session 1 (3 turns): 38 requests\n    last turn: 6 requests, 34869 prompt tokens (96% from the server's cache), 542 generated, first token after 8.4 s on average".into(),
    });
    let text = screen(&mut r, 100, 16);
    // Under "last turn:" (its own indent, after "mm: "), not at the edge.
    assert!(
        text.contains("│         prompt tokens"),
        "the wrapped part does not start under its line:\n{text}"
    );
}

/// A call replayed from a session log never said when it started: its
/// card gives no time (trial e: helper cards said "0.0s" after a resume).
#[test]
fn a_replayed_call_gives_no_time() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "review it".into(),
    });
    r.app.on_agent(AgentEvent::ToolCallFinished {
        turn: 1,
        call_id: "t1".into(),
        name: "task".into(),
        summary: "helper — review calc.py".into(),
        status: ToolStatus::Ok,
        output: "No bugs.".into(),
    });
    let text = screen(&mut r, 100, 12);
    let card = text
        .lines()
        .find(|l| l.contains("helper — review calc.py"))
        .unwrap_or_default()
        .to_string();
    assert!(card.contains('✓'), "{text}");
    assert!(!card.contains("0.0s"), "{card}");
}

/// A helper's edit refused: its call goes on (and may ask again), but the
/// refused change leaves the diff pane at once (trial: two refused edits
/// stayed "waiting for approval" there till the turn's end); approved, it
/// stays as landed (no change event of the session's tells of it).
#[test]
fn a_helpers_edit_refused_leaves_the_diff_pane_and_approved_stays() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "hand it to a helper".into(),
    });
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 3,
            turn: 1,
            call_id: "t1".into(),
            kind: ApprovalKind::Edit {
                change: change(
                    "def add(a, b):\n    return a - b\n",
                    "def add(a, b):\n    return a + b\n",
                ),
            },
        },
    });
    assert_eq!(r.app.diff.entries.len(), 1);
    r.app.on_agent(AgentEvent::ApprovalResolved {
        id: 3,
        decision: ApprovalDecision::No {
            reason: Some("not that".into()),
        },
    });
    assert!(
        r.app.diff.entries.is_empty(),
        "{:?}",
        r.app.diff.entries.len()
    );
    // Asked again and approved: the helper makes it, and it stays after
    // the turn as the session's change.
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 4,
            turn: 1,
            call_id: "t1".into(),
            kind: ApprovalKind::Edit {
                change: change(
                    "def add(a, b):\n    return a - b\n",
                    "def add(a, b):\n    return a + b\n",
                ),
            },
        },
    });
    r.app.on_agent(AgentEvent::ApprovalResolved {
        id: 4,
        decision: ApprovalDecision::Yes,
    });
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        error: None,
    });
    let text = screen(&mut r, 120, 16);
    assert!(text.contains("M calc.py +1 -1"), "{text}");
    assert!(!text.contains("waiting for ap"), "{text}");
}
