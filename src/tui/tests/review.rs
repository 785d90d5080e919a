//! The TUI's review flows driven without a terminal: checkpoints and
//! rewinds, the session diff and commit, diagnostics, the viewer and its
//! navigation, copying.

use std::sync::Arc;

use crossterm::event::KeyCode;

use super::*;

fn summary(id: &str, turn: u64, label: &str, files: &[&str]) -> CheckpointSummary {
    CheckpointSummary {
        info: CheckpointInfo {
            conversation: None,
            id: id.into(),
            turn,
            kind: CheckpointKind::Turn,
            time: "2026-11-30T10:42:07Z".into(),
            label: label.into(),
        },
        files: files.iter().map(std::string::ToString::to_string).collect(),
        added: 2,
        removed: 3,
    }
}

#[test]
fn the_rewind_overlay_previews_and_asks_what_to_restore() {
    let mut r = rig();
    typed(&mut r.app, "/rewind");
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(&ops(&mut r)[..], [Op::ListCheckpoints]));
    r.app.on_agent(AgentEvent::Checkpoints {
        list: vec![
            summary("c3", 3, "remove the old helper", &["calc.py"]),
            summary("c1", 1, "fix the add function", &["calc.py", "notes.txt"]),
        ],
    });
    assert!(matches!(&ops(&mut r)[..], [Op::PreviewRewind { id, .. }] if id == "c3"));
    r.app.on_key(key(KeyCode::Down));
    assert!(matches!(&ops(&mut r)[..], [Op::PreviewRewind { id, .. }] if id == "c1"));
    r.app.on_agent(AgentEvent::RewindPreview {
        id: "c1".into(),
        changes: vec![change(
            "def add(a, b):\n    return a + b\n",
            "def add(a, b):\n    return a - b\n",
        )],
        foreign: vec!["notes.txt".into()],
        left: vec![],
    });
    insta::assert_snapshot!("rewind_overlay", screen(&mut r, 120, 24));
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_key(key(KeyCode::Char('b')));
    // notes.txt changed outside mm: the overwrite is asked first.
    assert!(ops(&mut r).is_empty());
    let text = screen(&mut r, 120, 24);
    assert!(
        text.contains("notes.txt changed since mm last left it")
            && text.contains("overwrite? y / n"),
        "{text}"
    );
    r.app.on_key(key(KeyCode::Char('y')));
    let sent = ops(&mut r);
    assert!(
        matches!(&sent[..], [Op::Rewind { id, mode: RewindMode::Both, overwrite: true, .. }] if id == "c1"),
        "{sent:?}"
    );
    assert!(r.app.overlay().is_none());
}

#[test]
fn after_a_rewind_the_tree_marks_only_what_still_differs() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::FileChanged {
        turn: 1,
        call_id: "w1".into(),
        change: Arc::new(change("a\n", "b\n")),
    });
    assert!(r.app.tree.marks.contains_key("calc.py"));
    ops(&mut r);
    typed(&mut r.app, "/undo");
    r.app.on_key(key(KeyCode::Enter));
    let sent = submissions(&mut r);
    assert!(
        matches!(&sent[..], [Submission { op: Op::Undo, .. }]),
        "{sent:?}"
    );
    // Another op's end is not the undo's.
    r.app.on_event(Event {
        id: sent[0].id + 100,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    assert!(ops(&mut r).is_empty());
    r.app.on_event(Event {
        id: sent[0].id,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    let asked = submissions(&mut r);
    assert!(
        matches!(
            &asked[..],
            [Submission {
                op: Op::UncommittedDiff,
                ..
            }]
        ),
        "{asked:?}"
    );
    r.app.on_event(Event {
        id: asked[0].id,
        msg: AgentEvent::SessionDiff {
            from: "c1".into(),
            changes: vec![],
            left: vec![],
        },
    });
    assert!(r.app.tree.marks.is_empty());
    assert!(
        r.app.diff.review.is_none(),
        "the diff pane is not taken over"
    );
    // A session diff the user asked for is shown.
    r.app.on_event(Event {
        id: asked[0].id + 1,
        msg: AgentEvent::SessionDiff {
            from: "c1".into(),
            changes: vec![change("a\n", "b\n")],
            left: vec![],
        },
    });
    assert!(r.app.diff.review.is_some());
}

#[test]
fn a_trimmed_conversation_leaves_the_transcript() {
    let mut r = rig();
    for ev in turn_events() {
        r.app.on_agent(ev);
    }
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 2,
        prompt: "second turn".into(),
    });
    r.app.on_agent(AgentEvent::ConversationTrimmed {
        turn: 2,
        session: "20261130-999999-000000".into(),
    });
    let text = screen(&mut r, 120, 30);
    assert!(
        text.contains("fix the add function") && !text.contains("second turn"),
        "{text}"
    );
}

#[test]
fn diff_review_and_commit_from_the_tui() {
    let mut r = rig();
    typed(&mut r.app, "/diff");
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(&ops(&mut r)[..], [Op::SessionDiff { from: None }]));
    r.app.on_agent(AgentEvent::SessionDiff {
        from: "c1".into(),
        changes: vec![change("a\nb\n", "a\nB\n")],
        left: vec![],
    });
    assert_eq!(r.app.focus, Focus::Diff);
    let text = screen(&mut r, 120, 20);
    assert!(text.contains("session changes"), "{text}");
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.diff.review.is_none());

    r.app.focus = Focus::Composer;
    typed(&mut r.app, "/commit");
    r.app.on_key(key(KeyCode::Enter));
    let sent = submissions(&mut r);
    assert!(
        matches!(
            &sent[..],
            [Submission {
                op: Op::ProposeCommit,
                ..
            }]
        ),
        "{sent:?}"
    );
    r.app.on_agent(AgentEvent::CommitProposed {
        message: "fix(calc): add adds\n\nIt subtracted.".into(),
        files: vec!["calc.py".into()],
    });
    r.app.on_event(Event {
        id: sent[0].id,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    insta::assert_snapshot!("commit_overlay", screen(&mut r, 100, 20));
    // The cursor is at the end of the message.
    typed(&mut r.app, " Tested.");
    r.app.on_key(ctrl('s'));
    let sent = ops(&mut r);
    assert!(
        matches!(&sent[..], [Op::Commit { message }] if message == "fix(calc): add adds\n\nIt subtracted. Tested."),
        "{sent:?}"
    );
    // Ctrl-C closes the message unsent, as Esc does.
    r.app.on_agent(AgentEvent::CommitProposed {
        message: "fix: again".into(),
        files: vec!["calc.py".into()],
    });
    assert!(screen(&mut r, 100, 20).contains("fix: again"));
    r.app.on_key(ctrl('c'));
    let text = screen(&mut r, 100, 20);
    assert!(
        !text.contains("fix: again") && text.contains("not committed"),
        "{text}"
    );
    assert!(ops(&mut r).is_empty());
}

fn diag(line: u32, col: u32, level: DiagLevel, message: &str) -> DiagItem {
    DiagItem {
        line,
        col,
        level,
        message: message.into(),
        source: Some("Pyright".into()),
    }
}

#[test]
fn diagnostics_reach_the_tree_the_status_the_approval_and_the_diff_pane() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 4,
            turn: 1,
            call_id: "e1".into(),
            kind: ApprovalKind::Edit {
                change: change(
                    "def add(a, b):\n    return a - b\n",
                    "def add(a, b):\n    return a.plus(b)\n",
                ),
            },
        },
    });
    r.app.on_agent(AgentEvent::EditChecked {
        call_id: "e1".into(),
        path: "calc.py".into(),
        errors: 1,
        new_errors: Some(1),
        preview: true,
    });
    let text = screen(&mut r, 120, 30);
    assert!(
        text.contains("language server: this edit would add 1 error(s)"),
        "{text}"
    );
    r.app.on_key(key(KeyCode::Char('y')));
    r.app.on_agent(AgentEvent::FileChanged {
        turn: 1,
        call_id: "e1".into(),
        change: Arc::new(change(
            "def add(a, b):\n    return a - b\n",
            "def add(a, b):\n    return a.plus(b)\n",
        )),
    });
    r.app.on_agent(AgentEvent::EditChecked {
        call_id: "e1".into(),
        path: "calc.py".into(),
        errors: 1,
        new_errors: Some(1),
        preview: false,
    });
    r.app.on_agent(AgentEvent::Diagnostics {
        path: "calc.py".into(),
        errors: 1,
        warnings: 1,
        items: vec![
            diag(2, 12, DiagLevel::Error, "Cannot access attribute \"plus\""),
            diag(1, 9, DiagLevel::Warning, "\"b\" is not accessed"),
        ],
    });
    r.app.on_agent(AgentEvent::Diagnostics {
        path: "src/lib.rs".into(),
        errors: 2,
        warnings: 0,
        items: vec![
            diag(1, 1, DiagLevel::Error, "one"),
            diag(1, 2, DiagLevel::Error, "two"),
        ],
    });
    insta::assert_snapshot!("diagnostics_tree_status_diff", screen(&mut r, 120, 24));
    assert_eq!((r.app.status.errors, r.app.status.warnings), (3, 1));
    // A file with nothing left to say leaves the counts.
    r.app.on_agent(AgentEvent::Diagnostics {
        path: "src/lib.rs".into(),
        errors: 0,
        warnings: 0,
        items: vec![],
    });
    assert_eq!((r.app.status.errors, r.app.status.warnings), (1, 1));
}

#[test]
fn the_diagnostics_list_opens_the_viewer_where_definition_and_back_work() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::Diagnostics {
        path: "calc.py".into(),
        errors: 1,
        warnings: 0,
        items: vec![diag(2, 12, DiagLevel::Error, "\"b\" is possibly unbound")],
    });
    r.app.on_key(key(KeyCode::F(8)));
    let text = screen(&mut r, 100, 12);
    assert!(
        text.contains("diagnostics (1)") && text.contains("calc.py:2:12"),
        "{text}"
    );
    r.app.on_key(key(KeyCode::Enter));
    // Opening a file starts its language server.
    assert!(matches!(&ops(&mut r)[..], [Op::OpenFile { path }] if path == "calc.py"));
    settle(&mut r);
    insta::assert_snapshot!("viewer_with_diagnostic", screen(&mut r, 100, 12));
    // F12 asks about the place under the cursor.
    r.app.on_key(key(KeyCode::F(12)));
    let sent = ops(&mut r);
    assert!(
        matches!(&sent[..], [Op::Navigate { kind: NavKind::Definition, path, line: 2, col: 12 }] if path == "calc.py"),
        "{sent:?}"
    );
    r.app.on_agent(AgentEvent::Locations {
        kind: NavKind::Definition,
        query: "calc.py:2:12".into(),
        items: vec![LocItem {
            path: "src/lib.rs".into(),
            line: 1,
            col: 8,
            text: "pub fn one() -> u32 { 1 }".into(),
        }],
        error: None,
    });
    let text = screen(&mut r, 100, 12);
    assert!(
        text.contains("src/lib.rs (1 lines") && text.contains("1:8 ·"),
        "{text}"
    );
    r.app.on_key(key(KeyCode::Char('r')));
    assert!(matches!(
        &ops(&mut r)[..],
        [
            Op::OpenFile { .. },
            Op::Navigate {
                kind: NavKind::References,
                ..
            }
        ]
    ));
    r.app.on_agent(AgentEvent::Locations {
        kind: NavKind::References,
        query: "src/lib.rs:1:8".into(),
        items: vec![
            LocItem {
                path: "src/lib.rs".into(),
                line: 1,
                col: 8,
                text: "pub fn one() -> u32 { 1 }".into(),
            },
            LocItem {
                path: "calc.py".into(),
                line: 2,
                col: 5,
                text: "return a - b".into(),
            },
        ],
        error: None,
    });
    let text = screen(&mut r, 100, 12);
    assert!(text.contains("references of src/lib.rs:1:8 (2)"), "{text}");
    insta::assert_snapshot!("references_list", text);
    // Back: the definition's viewer, then the first viewer, then the list.
    r.app.on_key(key(KeyCode::Esc));
    assert!(screen(&mut r, 100, 12).contains("src/lib.rs (1 lines"));
    r.app.on_key(key(KeyCode::Backspace));
    assert!(screen(&mut r, 100, 12).contains("calc.py (2 lines"));
    r.app.on_key(key(KeyCode::Backspace));
    assert!(screen(&mut r, 100, 12).contains("diagnostics (1)"));
    r.app.on_key(key(KeyCode::Esc));
    assert!(r.app.overlay().is_none());
}

#[test]
fn copy_takes_the_last_answer_a_cell_or_its_code_blocks() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "show me".into(),
    });
    r.app.on_agent(AgentEvent::Token {
        turn: 1,
        text: "First:\n\n```sh\nls -l\n```\n\nThen:\n\n```sh\nwc -l\n```\n".into(),
    });
    r.app.on_agent(AgentEvent::TurnFinished {
        turn: 1,
        outcome: Outcome::Done,
        answer: String::new(),
        error: None,
    });
    typed(&mut r.app, "/copy");
    let (what, text) = copied(r.app.on_key(key(KeyCode::Enter))).unwrap();
    assert_eq!(what, "the last answer");
    assert!(text.starts_with("First:\n\n```sh\nls -l"), "{text}");
    typed(&mut r.app, "/copy 2");
    assert!(copied(r.app.on_key(key(KeyCode::Enter))).is_none());
    assert!(screen(&mut r, 120, 20).contains("no answer 2 back: the transcript has 1 answer(s)"));

    // In the transcript: select the answer, `c` copies its code blocks in
    // turn, `y` the whole cell.
    r.app.focus = Focus::Transcript;
    r.app.on_key(key(KeyCode::Char('k')));
    assert_eq!(
        copied(r.app.on_key(key(KeyCode::Char('c')))),
        Some(("code block 1/2".into(), "ls -l\n".into()))
    );
    assert_eq!(
        copied(r.app.on_key(key(KeyCode::Char('c')))),
        Some(("code block 2/2".into(), "wc -l\n".into()))
    );
    let (what, text) = copied(r.app.on_key(key(KeyCode::Char('y')))).unwrap();
    assert_eq!(what, "the selected cell");
    assert!(text.contains("Then:"), "{text}");
    let got = crate::clipboard::Copied::Terminal {
        mux: crate::clipboard::Mux::None,
        cut: false,
    };
    r.app.copied(&what, &got, &text);
    let n = text.lines().count();
    assert!(
        screen(&mut r, 120, 20).contains(&format!("sent {n} lines (")),
        "{}",
        screen(&mut r, 120, 20)
    );
    assert!(screen(&mut r, 120, 20).contains("of the selected cell"));
}

#[test]
fn vim_gd_gr_and_gg_work_in_the_viewer() {
    let mut r = rig();
    r.app.focus = Focus::Tree;
    // calc.py is the second row (after the src folder).
    r.app.on_key(key(KeyCode::Down));
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(&ops(&mut r)[..], [Op::OpenFile { path }] if path == "calc.py"));
    settle(&mut r);
    r.app.on_key(key(KeyCode::Down));
    r.app.on_key(key(KeyCode::Char('w')));
    r.app.on_key(key(KeyCode::Char('g')));
    assert!(ops(&mut r).is_empty(), "g alone waits for the next key");
    r.app.on_key(key(KeyCode::Char('d')));
    let sent = ops(&mut r);
    assert!(
        matches!(
            &sent[..],
            [Op::Navigate {
                kind: NavKind::Definition,
                line: 2,
                col: 5,
                ..
            }]
        ),
        "{sent:?}"
    );
    r.app.on_key(key(KeyCode::Char('g')));
    r.app.on_key(key(KeyCode::Char('r')));
    assert!(matches!(
        &ops(&mut r)[..],
        [Op::Navigate {
            kind: NavKind::References,
            ..
        }]
    ));
    r.app.on_key(key(KeyCode::Char('g')));
    r.app.on_key(key(KeyCode::Char('g')));
    let text = screen(&mut r, 100, 12);
    assert!(text.contains("1:1 ·"), "{text}");
}

#[test]
fn an_approval_that_opens_while_you_type_is_not_answered_by_your_typing() {
    let mut r = rig();
    // Typing a message ahead, "/copy" has a y in it…
    typed(&mut r.app, "/cop");
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 9,
            turn: 1,
            call_id: "x1".into(),
            kind: ApprovalKind::Exec {
                command: "rm -rf build".into(),
                reason: "not on the read-only list".into(),
                always_key: "rm".into(),
                scope: "`rm …` commands".into(),
            },
        },
    });
    r.app.on_key(key(KeyCode::Char('y')));
    assert!(ops(&mut r).is_empty(), "the y answered nothing");
    assert!(screen(&mut r, 120, 30).contains("typing: the approval waits"));
    // After a pause, keys answer.
    std::thread::sleep(std::time::Duration::from_millis(1600));
    r.app.on_key(key(KeyCode::Char('n')));
    r.app.on_key(key(KeyCode::Enter));
    assert!(matches!(
        &ops(&mut r)[..],
        [Op::Approval {
            id: 9,
            decision: ApprovalDecision::No { .. }
        }]
    ));
}

/// The newcomer trial of 2026-12-06: with an approval on screen for a
/// while, typing `/stats` and Enter took its `a` for "always". A key that
/// answers nothing starts a message, and the keys after it go there.
#[test]
fn typing_a_command_while_an_approval_waits_does_not_answer_it() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 4,
            turn: 1,
            call_id: "x1".into(),
            kind: ApprovalKind::Exec {
                command: "rm -rf build".into(),
                reason: "not on the read-only list".into(),
                always_key: "rm".into(),
                scope: "`rm …` commands".into(),
            },
        },
    });
    typed(&mut r.app, "/stats");
    r.app.on_key(key(KeyCode::Enter));
    let sent = ops(&mut r);
    assert!(
        !sent.iter().any(|o| matches!(o, Op::Approval { .. })),
        "{sent:?}"
    );
    assert!(sent.iter().any(|o| matches!(o, Op::Stats)), "{sent:?}");
    // The approval still waits for its answer.
    assert_eq!(r.app.approvals.queue.len(), 1);
}

#[test]
fn after_an_undo_the_tree_filter_walks_the_workspace_again() {
    let mut r = rig();
    r.app.focus = Focus::Tree;
    typed(&mut r.app, "calc");
    assert!(screen(&mut r, 100, 12).contains("calc.py"));
    r.app.on_key(key(KeyCode::Esc));
    // Something new on disk; an undo ends: the list is read again.
    std::fs::write(r.app.root.join("zeta.txt"), "z\n").unwrap();
    r.app.focus = Focus::Composer;
    typed(&mut r.app, "/undo");
    r.app.on_key(key(KeyCode::Enter));
    let sent = submissions(&mut r);
    r.app.on_event(Event {
        id: sent[0].id,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    r.app.focus = Focus::Tree;
    typed(&mut r.app, "zeta");
    let text = screen(&mut r, 100, 12);
    assert!(text.contains("zeta.txt"), "{text}");
}

#[test]
fn an_op_that_fails_says_why_in_place_of_its_waiting_word() {
    let mut r = rig();
    typed(&mut r.app, "/commit");
    r.app.on_key(key(KeyCode::Enter));
    assert!(screen(&mut r, 120, 20).contains("asking the model for a commit message…"));
    let sent = submissions(&mut r);
    r.app.on_event(Event {
        id: sent[0].id,
        msg: AgentEvent::Finished {
            result: OpResult::Failed {
                error: "nothing to commit: the session changed no file".into(),
            },
        },
    });
    let text = screen(&mut r, 120, 20);
    assert!(
        text.contains("failed: nothing to commit") && !text.contains("asking the model"),
        "{text}"
    );
    // One that ends well takes its word away.
    typed(&mut r.app, "/export");
    r.app.on_key(key(KeyCode::Enter));
    let sent = submissions(&mut r);
    r.app.on_event(Event {
        id: sent[0].id,
        msg: AgentEvent::Finished {
            result: OpResult::Done,
        },
    });
    assert!(!screen(&mut r, 120, 20).contains("exporting the session…"));
}

/// The UI task does no file I/O of its own: right after the key, the
/// viewer waits for a job's read and the filter for a job's walk; only
/// the jobs' answers fill them.
#[test]
fn opening_a_file_and_filtering_leave_the_disk_to_jobs() {
    let mut r = rig();
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Down));
    r.app.on_key(key(KeyCode::Enter));
    match r.app.overlay() {
        Some(super::super::panes::overlays::Overlay::Viewer(v)) => {
            assert!(v.loading, "read on the UI task");
            assert_eq!(v.text, "(reading…)");
        }
        _ => panic!("no viewer"),
    }
    let text = screen(&mut r, 100, 12);
    assert!(text.contains("return a - b"), "{text}");
    r.app.on_key(key(KeyCode::Esc));
    r.app.focus = Focus::Tree;
    r.app.on_key(key(KeyCode::Char('x')));
    assert!(r.app.tree.needs_index(), "walked on the UI task");
    settle(&mut r);
    assert!(!r.app.tree.needs_index());
}

#[test]
fn the_viewer_shows_a_short_file_from_line_1_and_scrolls_long_lines_sideways() {
    let mut r = rig();
    let root = r.app.root.clone();
    let short: String = (1..=11).map(|i| format!("line_{i} = {i}\n")).collect();
    std::fs::write(root.join("short.py"), short).unwrap();
    // A reference on line 9: the whole file fits, so line 1 shows too.
    r.app.open_place("short.py", 9, 1);
    let text = screen(&mut r, 100, 30);
    assert!(text.contains("line_1 = 1"), "{text}");
    assert!(text.contains("line_11 = 11"), "{text}");
    r.app.on_key(key(KeyCode::Esc));
    // A 315-column line: the cursor's part is in sight.
    let long = format!("x = \"{}END\"\n", "a".repeat(300));
    std::fs::write(root.join("long.py"), long).unwrap();
    r.app.open_place("long.py", 1, 1);
    assert!(!screen(&mut r, 100, 12).contains("END"));
    // `$` goes to the end of the line, which comes into sight.
    r.app.on_key(key(KeyCode::Char('$')));
    let text = screen(&mut r, 100, 12);
    assert!(text.contains("END"), "{text}");
    // F1 works over the viewer too.
    r.app.on_key(key(KeyCode::F(1)));
    assert!(screen(&mut r, 100, 12).contains("keymap:"));
}

#[test]
fn a_model_request_between_turns_shows_its_wait_and_ctrl_c_cancels_it() {
    for (command, says) in [
        ("/commit", "asking the model for a commit message"),
        ("/compact", "compacting the conversation"),
    ] {
        let mut r = rig();
        typed(&mut r.app, command);
        r.app.on_key(key(KeyCode::Enter));
        let sent = submissions(&mut r);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let text = screen(&mut r, 140, 20);
        let bar = text.lines().last().unwrap();
        // The wait is said, timed, and its way out shown.
        assert!(
            bar.contains(says) && bar.contains(" 0s"),
            "{command}: {bar}"
        );
        assert!(text.contains("Ctrl-C cancels"), "{command}: {text}");
        // A message typed meanwhile waits for it.
        typed(&mut r.app, "next one");
        r.app.on_key(key(KeyCode::Enter));
        assert!(ops(&mut r).is_empty(), "{command}");
        r.app.on_key(ctrl('c'));
        assert!(matches!(&ops(&mut r)[..], [Op::Cancel]), "{command}");
        assert!(screen(&mut r, 140, 20).contains("cancelling…"), "{command}");
        r.app.on_event(Event {
            id: sent[0].id,
            msg: AgentEvent::Finished {
                result: OpResult::Done,
            },
        });
        // Over: the queued message goes, and the bar no longer waits.
        let next = ops(&mut r);
        assert!(
            matches!(&next[..], [Op::UserMessage { text, .. }] if text == "next one"),
            "{command}: {next:?}"
        );
        assert!(
            !screen(&mut r, 140, 20).contains("cancelling…"),
            "{command}"
        );
    }
}

#[test]
fn a_request_that_waits_behind_another_client_says_so() {
    let mut r = rig();
    typed(&mut r.app, "hi");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "hi".into(),
    });
    r.app.on_agent(AgentEvent::Generating {
        turn: 1,
        tokens: 0,
        tokens_per_second: None,
        prompt: None,
        queued: true,
    });
    let text = screen(&mut r, 120, 20);
    let bar = text.lines().last().unwrap();
    assert!(bar.contains("server busy with another request"), "{bar}");
    assert!(!bar.contains("tok"), "{bar}");
}

/// While a helper works, the server's progress on its requests shows in
/// the bar; its next request starts from nothing, and the call's end
/// clears it.
#[test]
fn a_helpers_requests_show_in_the_bar_each_from_its_start() {
    let mut r = rig();
    r.app.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "use the reviewer role".into(),
    });
    let generating = |tokens, prompt| AgentEvent::Generating {
        turn: 1,
        tokens,
        tokens_per_second: None,
        prompt,
        queued: false,
    };
    let bar = |r: &mut Rig| screen(r, 120, 20).lines().last().unwrap().to_string();
    r.app.on_agent(generating(120, None));
    assert!(bar(&mut r).contains("120 tok"), "{}", bar(&mut r));
    // The helper's second request reads its prompt.
    r.app.on_agent(generating(0, Some((600, 2000))));
    let b = bar(&mut r);
    assert!(
        b.contains("prompt 600/2.0k") && !b.contains("120 tok"),
        "{b}"
    );
    r.app.on_agent(AgentEvent::ToolCallFinished {
        turn: 1,
        call_id: "t1".into(),
        name: "task".into(),
        summary: "reviewer".into(),
        status: ToolStatus::Ok,
        output: Arc::from("done"),
    });
    assert!(!bar(&mut r).contains("prompt 600"), "{}", bar(&mut r));
}

/// A trial's `/commit` under another client's request showed only
/// "asking the model for a commit message… 10s": the waiting words took
/// the room of "server busy". The request's progress stays; the words are
/// cut instead.
#[test]
fn a_commit_message_request_behind_another_client_says_the_server_is_busy() {
    let mut r = rig();
    // The bar as the trial had it: a long model name, the figures of a
    // few turns.
    r.app.status.info.provider = "local".into();
    r.app.status.info.model = "qwen2.5-coder-1.5b-instruct-q4_k_m".into();
    r.app.status.info.sandbox = "workspace · bwrap".into();
    r.app.status.info.context_window = Some(16384);
    r.app.status.context_used = 5700;
    r.app.status.total.prompt = 72_000;
    r.app.status.total.cached = 60_000;
    r.app.status.total.completion = 1_400;
    r.app.status.checkpoints = 4;
    typed(&mut r.app, "/commit");
    r.app.on_key(key(KeyCode::Enter));
    r.app.on_agent(AgentEvent::Generating {
        turn: 0,
        tokens: 0,
        tokens_per_second: None,
        prompt: None,
        queued: true,
    });
    for width in [120, 100] {
        let text = screen(&mut r, width, 20);
        let bar = text.lines().last().unwrap();
        assert!(
            bar.contains("server busy with another request"),
            "{width}: {bar}"
        );
        assert!(bar.contains("asking"), "{width}: {bar}");
    }
}
