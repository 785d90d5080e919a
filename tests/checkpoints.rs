//! Checkpoints end to end, in the REPL, on a real git repository: three
//! turns change three files (a new one, an edit, a deletion by a shell
//! command); /diff shows them; /rewind to turn 1 puts the tree back (new
//! file gone); /rewind again undoes the rewind; /commit commits with the
//! model's message. The user's stash, branches and tags show no trace.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::json;
use support::term::Term;
use support::*;

/// The number /rewind lists turn 1 under (its prompt begins `prompt`).
fn listed_number(t: &Term, prompt: &str) -> String {
    let screen = t.screen();
    screen
        .lines()
        .rev()
        .find(|l| l.contains("turn 1 ·") && l.contains(prompt))
        .and_then(|l| l.trim().split(')').next().map(str::to_string))
        .expect("turn 1 is listed")
}

#[test]
fn three_turns_a_diff_a_rewind_a_rewind_of_the_rewind_and_a_commit() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("Created notes.txt."),
        call(
            "c2",
            "write_file",
            json!({"path": "a.txt", "content": "alpha, edited\n"}),
        ),
        text("Edited a.txt."),
        call("c3", "bash", json!({"command": "rm b.txt"})),
        text("Removed b.txt."),
        text("feat: add notes, edit a, drop b\n\nThree small changes made in one session."),
    ]);
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    git(&p, &["tag", "v0"]);
    let branches = git(&p, &["for-each-ref", "refs/heads", "refs/tags"]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");

    t.send("write the notes file\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Created notes.txt.");
    t.send("rewrite a.txt\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Edited a.txt.");
    t.send("remove b.txt\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Removed b.txt.");
    assert!(!p.join("b.txt").exists());

    t.send("/diff\r");
    t.expect("a.txt (+1 -1)");
    t.expect("+alpha, edited");
    t.send("/rewind\r");
    t.expect("rewind to which?");
    // Most recent first: the command checkpoint, then turns 3, 2, 1.
    let turn1 = listed_number(&t, "write the notes file");
    t.send(&format!("{turn1}\r"));
    t.expect("going back would do this to the files:");
    t.expect("restore [c]ode");
    t.send("c\r");
    t.expect("rewound to turn 1");
    assert!(!p.join("notes.txt").exists(), "the new file is gone");
    assert_eq!(ws.read("a.txt"), "alpha\n");
    assert_eq!(ws.read("b.txt"), "beta\n");
    assert_eq!(
        git(&p, &["status", "--porcelain"]),
        "",
        "the tree is as it was"
    );

    // Changed my mind: the safety checkpoint is on top of the list.
    t.send("/rewind\r");
    t.expect("rewind to which?");
    t.send("1\r");
    t.expect("restore [c]ode");
    t.send("c\r");
    t.expect("went back to the checkpoint");
    assert_eq!(ws.read("notes.txt"), "new notes\n");
    assert_eq!(ws.read("a.txt"), "alpha, edited\n");
    assert!(!p.join("b.txt").exists());

    t.send("/commit\r");
    t.expect("feat: add notes, edit a, drop b");
    t.expect("commit with this message?");
    t.send("y\r");
    t.expect("committed 3 file(s)");
    assert_eq!(
        git(&p, &["log", "-1", "--format=%s"]).trim(),
        "feat: add notes, edit a, drop b"
    );
    assert_eq!(
        git(&p, &["status", "--porcelain"]),
        "",
        "everything is committed"
    );
    let committed = git(&p, &["show", "--name-status", "--format=", "HEAD"]);
    assert!(
        committed.contains("A\tnotes.txt")
            && committed.contains("M\ta.txt")
            && committed.contains("D\tb.txt"),
        "{committed}"
    );
    assert_eq!(git(&p, &["stash", "list"]), "");
    let after = git(&p, &["for-each-ref", "refs/heads", "refs/tags"]);
    assert_eq!(
        after.lines().count(),
        branches.lines().count(),
        "a branch or tag appeared: {after}"
    );
    assert!(after.contains("refs/tags/v0"));
    assert!(
        git(&p, &["for-each-ref", "refs/mm"]).contains("refs/mm/checkpoints/"),
        "checkpoints are kept by refs under refs/mm"
    );

    // Everything is committed: /undo has nothing of this session's to undo.
    t.send("/undo\r");
    t.expect("nothing to undo: no edit of this session since its last commit");
    assert_eq!(ws.read("a.txt"), "alpha, edited\n");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn undo_reverts_the_last_edit_only() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "one.txt", "content": "1\n"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "two.txt", "content": "2\n"}),
        ),
        text("Wrote two files."),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    t.send("write two files\r");
    t.expect("Wrote two files.");
    t.send("/undo\r");
    t.expect("undid the last edit to two.txt");
    assert!(!ws.dir.path().join("two.txt").exists());
    assert_eq!(ws.read("one.txt"), "1\n");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// Red-team round 17: an empty file mm wrote, which the user then filled
/// with bytes that are not text, was deleted by /undo (the failed read
/// counted as empty, so as the edit left it).
#[test]
fn undo_leaves_a_file_the_user_filled_with_binary_bytes() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "data.bin", "content": ""}),
        ),
        text("Made data.bin."),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    t.send("make data.bin\r");
    t.expect("Made data.bin.");
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8 | 0x80).collect();
    std::fs::write(ws.path().join("data.bin"), &bytes).unwrap();
    t.send("/undo\r");
    t.expect("not undone: data.bin changed since that edit");
    assert_eq!(std::fs::read(ws.path().join("data.bin")).unwrap(), bytes);
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_file_mm_wrote_and_the_user_changed_between_sessions_is_confirmed_before_a_rewind() {
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "alpha\n")]);
    // Session 1, headless: mm writes notes.txt.
    let first = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "by mm\n"}),
        ),
        text("Wrote notes."),
    ]);
    let o = ws.run(&first, "write notes", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Between sessions, the user edits the file mm wrote.
    ws.write("notes.txt", "by mm, then my own lines\n");
    // Resumed: going back to turn 1 would delete notes.txt.
    let second = Server::start(vec![]);
    let url = second.url();
    let mut t = Term::start(&ws, &["-url", &url, "-resume", "last"]);
    t.expect("› ");
    t.send("/rewind\r");
    t.expect("rewind to which?");
    let turn1 = listed_number(&t, "write notes");
    t.send(&format!("{turn1}\r"));
    t.expect("restore [c]ode");
    t.send("c\r");
    t.expect("notes.txt changed since mm last left it");
    t.send("n\r");
    t.expect("not rewound");
    assert_eq!(ws.read("notes.txt"), "by mm, then my own lines\n");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn commit_takes_only_the_sessions_files_from_a_dirty_tree() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "mm's notes\n"}),
        ),
        text("Created notes.txt."),
        // The session's title, from the auxiliary model after the turn.
        text("Writing the notes file"),
        text("docs: add notes"),
    ]);
    let ws = Workspace::new();
    let p = ws.path();
    git(&p, &["init", "-q", "-b", "main"]);
    ws.write("mine.txt", "mine\n");
    ws.write("staged.txt", "staged\n");
    // The commit message comes from the auxiliary model.
    ws.write(".mm/config.yaml", "auxModel: small-helper\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-qm", "init"]);
    // The user's own work in progress: one change staged, one not.
    ws.write("mine.txt", "mine, edited by hand\n");
    ws.write("staged.txt", "staged, edited\n");
    git(&p, &["add", "staged.txt"]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    t.send("write the notes file\r");
    t.expect("Created notes.txt.");
    // A file the user makes while the session runs is theirs too.
    ws.write("later.txt", "made by hand during the session\n");
    t.send("/commit\r");
    t.expect("files: notes.txt");
    t.expect("commit with this message?");
    t.send("y\r");
    t.expect("committed");
    let committed = git(&p, &["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(committed.trim(), "A\tnotes.txt", "{committed}");
    assert_eq!(
        git(&p, &["log", "-1", "--format=%s"]).trim(),
        "docs: add notes"
    );
    let reqs = server.requests();
    // The title and the commit message both come from the aux model.
    assert_eq!(reqs[2]["model"], "small-helper");
    assert!(
        reqs[2]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("You name coding sessions")
    );
    assert_eq!(reqs[3]["model"], "small-helper");
    assert_ne!(reqs[0]["model"], "small-helper");
    // The user's changes are where they were: one staged, one not.
    let status = git(&p, &["status", "--porcelain"]);
    assert!(status.contains(" M mine.txt"), "{status}");
    assert!(status.contains("M  staged.txt"), "{status}");
    assert!(status.contains("?? later.txt"), "{status}");
    assert_eq!(ws.read("mine.txt"), "mine, edited by hand\n");
    // A committed edit is not the session's to undo any more.
    t.send("/undo\r");
    t.expect("nothing to undo: no edit of this session since its last commit");
    assert_eq!(ws.read("notes.txt"), "mm's notes\n");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_rewind_over_a_file_changed_outside_mm_asks_first() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "mm's notes\n"}),
        ),
        text("Created notes.txt."),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "a\n")]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    t.send("write the notes file\r");
    t.expect("Created notes.txt.");
    // The user edits what mm wrote.
    ws.write("notes.txt", "mm's notes\nand mine\n");
    t.send("/rewind\r");
    t.expect("rewind to which?");
    let n = listed_number(&t, "write the notes file");
    t.send(&format!("{n}\r"));
    t.expect("restore [c]ode");
    t.send("c\r");
    t.expect("notes.txt changed since mm last left it, not by mm (by you?); overwrite? [y/N]");
    t.send("n\r");
    t.expect("not rewound");
    assert_eq!(ws.read("notes.txt"), "mm's notes\nand mine\n", "kept on no");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_rewind_and_the_diff_leave_the_users_own_files_and_edits_alone() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "alpha, by mm\n"}),
        ),
        text("Edited a.txt."),
        call(
            "c2",
            "write_file",
            json!({"path": "catalog.txt", "content": "result = 1\n"}),
        ),
        text("Renamed in catalog.txt."),
    ]);
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "alpha\n")]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    t.send("rewrite a.txt\r");
    t.expect("Edited a.txt.");
    // Between turns the user makes two files of their own; mm changes
    // one of them in the next turn.
    ws.write("catalog.txt", "tmp = 1\n");
    ws.write("mine.txt", "only mine\n");
    t.send("rename tmp to result in catalog.txt\r");
    t.expect("Renamed in catalog.txt.");

    // The session's changes: mm's rename, not the user's new file.
    t.send("/diff\r");
    t.expect("not in the session's diff, changed beside mm: mine.txt");
    let screen = t.screen();
    assert!(screen.contains("-tmp = 1"), "{screen}");
    assert!(screen.contains("+result = 1"), "{screen}");

    t.send("/rewind\r");
    t.expect("rewind to which?");
    let turn1 = listed_number(&t, "rewrite a.txt");
    t.send(&format!("{turn1}\r"));
    t.expect("left as they are (mm did not change them): mine.txt");
    t.expect("restore [c]ode");
    t.send("c\r");
    t.expect("rewound to turn 1");
    t.expect("left as they are (mm did not change them): mine.txt");
    assert_eq!(ws.read("a.txt"), "alpha\n", "mm's edit is undone");
    assert_eq!(
        ws.read("catalog.txt"),
        "tmp = 1\n",
        "the user's file is back as the user made it, not deleted"
    );
    assert_eq!(
        ws.read("mine.txt"),
        "only mine\n",
        "the user's own file stays"
    );
    assert!(p.join("mine.txt").exists());
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// Turns that change no file share one checkpoint id: the turn chosen is
/// the one rewound to, not the latest of that id (a trial chose turn 1
/// and got "rewound to turn 3").
#[test]
fn a_rewind_goes_to_the_turn_chosen_when_turns_share_a_checkpoint() {
    let server = Server::start(vec![
        text("First answer."),
        text("Second answer."),
        text("Third answer."),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "a\n")]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    for (ask, answer) in [
        ("question one", "First answer."),
        ("question two", "Second answer."),
        ("question three", "Third answer."),
    ] {
        t.send(&format!("{ask}\r"));
        t.expect(answer);
        t.expect("› ");
    }
    t.send("/rewind\r");
    t.expect("rewind to which?");
    let turn1 = listed_number(&t, "question one");
    t.send(&format!("{turn1}\r"));
    t.expect("restore [c]ode");
    t.send("v\r");
    t.expect("the conversation is back to before turn 1");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// A conversation cut back by a rewind keeps its turns as they happened:
/// the prompts as typed, the calls with their results, the receipts
/// (trial e: the replay and the printed transcript showed the message
/// the model got and no write).
#[test]
fn a_rewound_conversation_keeps_its_turns_as_they_happened() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "b.txt", "content": "bee\n"}),
        ),
        text("Wrote b.txt."),
        text("Second answer."),
        text("Third answer."),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "a\n")]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-yolo"]);
    t.expect("› ");
    for (ask, answer) in [
        ("write @a.txt into b", "Wrote b.txt."),
        ("question two", "Second answer."),
        ("question three", "Third answer."),
    ] {
        t.send(&format!("{ask}\r"));
        t.expect(answer);
        t.expect("› ");
    }
    t.send("/rewind\r");
    t.expect("rewind to which?");
    let row = t
        .screen()
        .lines()
        .rev()
        .find(|l| l.contains("turn 3 ·"))
        .and_then(|l| l.trim().split(')').next().map(str::to_string))
        .expect("turn 3 is listed");
    t.send(&format!("{row}\r"));
    t.expect("restore [c]ode");
    t.send("v\r");
    t.expect("the conversation is back to before turn 3");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let show = ws.mm().args(["-show", "last"]).output().unwrap();
    let shown = stdout(&show);
    assert!(shown.contains("write @a.txt into b"), "{shown}");
    assert!(
        !shown.contains("counts as read"),
        "the prompt as typed, not as the model got it: {shown}"
    );
    assert!(shown.contains("b.txt"), "{shown}");
    assert!(shown.contains("wrote b.txt"), "the receipt: {shown}");
    assert!(shown.contains("Second answer."), "{shown}");
    assert!(!shown.contains("question three"), "{shown}");
}
