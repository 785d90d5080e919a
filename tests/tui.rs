//! The real `mm -tui` in a real pseudo-terminal, read back through a vt100
//! screen parser, against the scripted server: type a prompt, see the
//! streamed text, approve an edit with `y`, see the diff pane, check the
//! file on disk, quit, and check the terminal was restored.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;
use support::*;

struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Screen {
    fn start(ws: &Workspace, args: &[&str], rows: u16, cols: u16) -> Screen {
        Self::start_program(ws, env!("CARGO_BIN_EXE_mm"), args, &[], rows, cols)
    }

    /// `program args` in the pty, with `env` besides PATH, HOME and TERM.
    fn start_program(
        ws: &Workspace,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        rows: u16,
        cols: u16,
    ) -> Screen {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(ws.dir.path());
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap());
        cmd.env("HOME", ws.home.path());
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        std::mem::forget(pty.master);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            NonZeroU16::new(rows).unwrap(),
            NonZeroU16::new(cols).unwrap(),
            500,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r, w) = (parser.clone(), raw.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                // Answer the terminal queries a real terminal would (device
                // attributes, cursor position), or crossterm waits for them.
                if chunk.windows(3).any(|x| x == b"\x1b[c") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[?62;22c");
                }
                if chunk.windows(4).any(|x| x == b"\x1b[6n") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[1;1R");
                }
                p.lock().unwrap().process(chunk);
                r.lock().unwrap().extend_from_slice(chunk);
            }
        });
        Screen {
            parser,
            raw,
            writer,
            child,
        }
    }

    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str) {
        let start = Instant::now();
        while !self.text().contains(what) {
            if start.elapsed() > Duration::from_secs(20) {
                panic!("never saw {what:?} on the screen:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Waits until `what` is no longer on the screen.
    fn wait_gone(&self, what: &str) {
        let start = Instant::now();
        while self.text().contains(what) {
            if start.elapsed() > Duration::from_secs(20) {
                panic!("{what:?} stayed on the screen:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn keys(&self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    fn exit_code(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.exit_code();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "mm -tui did not exit"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

#[test]
fn a_user_watches_an_edit_stream_in_approves_it_and_quits_to_an_intact_terminal() {
    let slow = |t: &str| {
        (
            40,
            json!({"choices":[{"index":0,"delta":{"content":t}}]}).to_string(),
        )
    };
    let mut first = vec![slow("Looking "), slow("at calc.py.")];
    first.push((0, json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"e1","type":"function","function":{"name":"edit_file","arguments":""}}]}}]}).to_string()));
    let args =
        json!({"old_string": "return a - b", "path": "calc.py", "replacement": "return a + b"})
            .to_string();
    for piece in args.as_bytes().chunks(8) {
        let piece = String::from_utf8_lossy(piece).into_owned();
        first.push((30, json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":piece}}]}}]}).to_string()));
    }
    first.push((
        0,
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
    ));
    first.push((0, "[DONE]".to_string()));
    let server = Server::start(vec![Reply::Sse(first), text("Fixed: add now adds.")]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.wait_for("calc.py");
    s.keys("fix the add function in calc.py\r");
    s.wait_for("Looking at calc.py.");
    s.wait_for("change calc.py?");
    let screen = s.text();
    assert!(screen.contains("-     return a - b"), "{screen}");
    assert!(screen.contains("+     return a + b"), "{screen}");
    assert_eq!(
        ws.read("calc.py"),
        "def add(a, b):\n    return a - b\n",
        "changed before approval"
    );
    s.keys("y");
    s.wait_for("Fixed: add now adds.");
    s.wait_for("M calc.py +1 -1");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
    // The receipt comes once the turn's end checks are done.
    s.wait_for("wrote calc.py");
    // Quit: Ctrl-C twice.
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
    std::thread::sleep(Duration::from_millis(200));
    let p = s.parser.lock().unwrap();
    let screen = p.screen();
    assert!(!screen.alternate_screen(), "still on the alternate screen");
    assert_eq!(
        screen.mouse_protocol_mode(),
        vt100::MouseProtocolMode::None,
        "mouse still captured"
    );
    assert!(!screen.bracketed_paste(), "bracketed paste still on");
    assert!(!screen.hide_cursor(), "cursor still hidden");
    // The session is printed into the normal scrollback.
    let after = screen.contents();
    assert!(
        after.contains("› fix the add function in calc.py"),
        "{after}"
    );
    assert!(after.contains("mm: wrote calc.py"), "{after}");
    drop(p);
    let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
    assert!(
        raw.contains("\x1b[?1049h") && raw.contains("\x1b[?1049l"),
        "alternate screen not entered and left"
    );
}

#[test]
fn a_broken_theme_file_is_an_error_with_line_and_col() {
    let ws = Workspace::new();
    ws.write(".mm/themes/dark.toml", "[colors]\ntext = \"blue-ish\"\n");
    let server = Server::start(vec![]);
    let out = ws
        .mm()
        .args(["-tui", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("dark.toml:2:8"), "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_rejected_hunk_stays_out_and_the_model_is_told() {
    let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line twenty-five\n");
    let server = Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "notes.txt", "content": after}),
        ),
        text("Applied what you accepted."),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", &before);
    let url = server.url();
    // "notes.txt" in the prompt attaches it, which also counts as reading it.
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 40, 120);
    s.wait_for("Ask mm to do something");
    s.keys("rewrite notes.txt\r");
    s.wait_for("change notes.txt?");
    s.wait_for("hunk 2/2");
    s.keys("\x1b[B"); // down: the second hunk
    s.keys(" "); // reject it
    s.wait_for("[ ]");
    s.keys("y");
    s.wait_for("Applied what you accepted.");
    let text = ws.read("notes.txt");
    assert!(text.contains("line two\n"), "{text}");
    assert!(
        text.contains("line 25\n") && !text.contains("twenty-five"),
        "{text}"
    );
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains("REJECTED 1 of 2 hunks: hunk 2 (@@ -22,7 +22,7 @@)"),
        "{result}"
    );
    s.keys("\x11"); // ctrl-q
    assert_eq!(s.exit_code(), 0);
}

/// mm's own rename, accepted in part: the model is told which uses kept
/// the old name, not that every use was renamed (a trial's model heard
/// "renamed … (every whole-word use)" after a hunk was rejected).
#[test]
fn a_rename_by_mm_accepted_in_part_is_told_to_the_model_as_such() {
    let mut src = String::from("def helper(item):\n    return item * 2\n");
    src.push_str(
        &(1..=20)
            .map(|i| format!("# note {i}\n"))
            .collect::<String>(),
    );
    src.push_str("def most_expensive(items):\n    return helper(max(items))\n");
    let server = Server::start(vec![text("Done."), text("Done.")]);
    let ws = Workspace::new();
    ws.write("catalog.py", &src);
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 40, 120);
    s.wait_for("Ask mm to do something");
    s.keys("Rename helper to double in catalog.py\r");
    s.wait_for("hunk 2/2");
    s.keys("\x1b[B"); // down: the second hunk
    s.keys(" "); // reject it
    s.wait_for("[ ]");
    s.keys("y");
    s.wait_for("Done.");
    let text = ws.read("catalog.py");
    assert!(
        text.contains("def double(item)") && text.contains("return helper(max(items))"),
        "{text}"
    );
    let told = server.requests()[0].to_string();
    assert!(told.contains("the uses the user accepted"), "{told}");
    assert!(told.contains("REJECTED 1 of 2 hunks"), "{told}");
    assert!(!told.contains("every whole-word use"), "{told}");
    s.keys("\x11"); // ctrl-q
    assert_eq!(s.exit_code(), 0);
}

fn eventually(what: &str, ok: impl Fn() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[test]
fn three_turns_then_diff_rewind_rewind_back_and_commit_in_the_tui() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("Created notes.txt."),
        call(
            "c2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "replacement": "alpha, edited"}),
        ),
        text("Edited a.txt."),
        call(
            "c3",
            "write_file",
            json!({"path": "src/c.txt", "content": "gamma\n"}),
        ),
        text("Created src/c.txt."),
        text("feat: add notes and c, edit a\n\nThree small changes."),
    ]);
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "alpha\n")]);
    git(&p, &["stash", "list"]);
    let refs_before = git(
        &p,
        &["for-each-ref", "refs/heads", "refs/tags", "refs/stash"],
    );
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-yolo"], 40, 140);
    s.wait_for("Ask mm to do something");
    s.keys("write the notes file\r");
    s.wait_for("Created notes.txt.");
    s.keys("read a.txt and edit it\r");
    s.wait_for("Edited a.txt.");
    s.keys("add src/c.txt\r");
    s.wait_for("Created src/c.txt.");

    s.keys("/diff\r");
    s.wait_for("session changes");
    s.wait_for("3 files");
    s.wait_for("alpha, edited");
    s.keys("\x1b"); // Esc: the review closes, the live diff is back
    // Only then the next keys: an Esc and a `/` read together are Alt-/.
    s.wait_gone("session changes");

    s.keys("/rewind\r");
    s.wait_for("enter rewind");
    s.wait_for("add src/c.txt");
    // Each row counts what going back there adds and removes, as its
    // preview does: back before turn 3 deletes src/c.txt's one line.
    s.wait_for("+0 -1");
    // Most recent first: turn 3, turn 2, turn 1.
    s.keys("\x1b[B");
    std::thread::sleep(Duration::from_millis(100));
    s.keys("\x1b[B");
    s.wait_for("going back does this");
    s.wait_for("diff · 3 files");
    s.keys("\r");
    s.wait_for("c code");
    s.keys("c");
    s.wait_for("rewound to turn 1: deleted notes.txt, src/c.txt;");
    s.wait_for("restored a.txt");
    eventually("the new files are gone", || {
        !p.join("notes.txt").exists() && !p.join("src/c.txt").exists()
    });
    assert_eq!(ws.read("a.txt"), "alpha\n");
    assert_eq!(git(&p, &["status", "--porcelain"]), "");

    // Changed my mind: the safety checkpoint is on top.
    std::thread::sleep(Duration::from_millis(200));
    s.keys("/rewind\r");
    s.wait_for("enter rewind");
    s.wait_for("before rewinding to turn 1");
    s.keys("\r");
    s.wait_for("c code");
    s.keys("c");
    eventually("the rewind is undone", || p.join("src/c.txt").exists());
    assert_eq!(ws.read("notes.txt"), "new notes\n");
    assert_eq!(ws.read("a.txt"), "alpha, edited\n");

    std::thread::sleep(Duration::from_millis(200));
    s.keys("/commit\r");
    s.wait_for("feat: add notes and c, edit a");
    s.keys("\x13"); // ctrl-s
    s.wait_for("committed");
    eventually("the commit is made", || {
        git(&p, &["log", "-1", "--format=%s"]).trim() == "feat: add notes and c, edit a"
    });
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    assert_eq!(git(&p, &["stash", "list"]), "");
    let refs_after = git(
        &p,
        &["for-each-ref", "refs/heads", "refs/tags", "refs/stash"],
    );
    assert_eq!(
        refs_before
            .lines()
            .map(|l| l.split('\t').nth(1))
            .collect::<Vec<_>>(),
        refs_after
            .lines()
            .map(|l| l.split('\t').nth(1))
            .collect::<Vec<_>>(),
        "no branch, tag or stash appeared"
    );
    s.keys("\x11"); // ctrl-q
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn escape_sequences_from_the_model_and_tools_never_reach_the_terminal() {
    let evil = "\u{1b}]0;PWNED-TITLE\u{7}\u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}";
    let server = Server::start(vec![
        call(
            "p",
            "bash",
            json!({"command": "printf '\\033]0;PWNED-OUT\\007 listed'"}),
        ),
        text(&format!("Here{evil} it is.")),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.keys("show me\r");
    s.wait_for("it is.");
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
    std::thread::sleep(Duration::from_millis(200));
    let raw = s.raw.lock().unwrap().clone();
    for bad in [&b"\x1b]0;PWNED"[..], b"\x1b]52;c;cHduZWQ"] {
        assert!(
            !raw.windows(bad.len()).any(|w| w == bad),
            "{:?} reached the terminal",
            String::from_utf8_lossy(bad)
        );
    }
    // The replay printed into the scrollback shows them escaped.
    assert!(s.text().contains("^[]0;PWNED-TITLE^G"), "{}", s.text());
}

/// The `ctx N/W` figure of the status bar, in tokens.
fn ctx_figure(screen: &str) -> f64 {
    let at = screen.find("ctx ").expect("no ctx figure on the screen");
    let figure: String = screen[at + 4..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == 'k')
        .collect();
    match figure.strip_suffix('k') {
        Some(k) => k.parse::<f64>().unwrap() * 1000.0,
        None => figure.parse().unwrap(),
    }
}

#[test]
fn an_overflow_does_not_kill_the_session_and_the_bar_counts_the_next_request() {
    let overflow = Reply::Status {
        code: 400,
        body: r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#.into(),
        retry_after: None,
    };
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It is a list of lines."),
        overflow,
        text("Hi."),
        text("Hi again."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "a.txt",
        &"alpha line of the first file, a long one to fill\n".repeat(450),
    );
    // Compaction off: what happens when it is not there, or refused. The
    // window mm is told of holds the read whole (outputs are cut to a
    // quarter of it); the server then says it is smaller.
    ws.write("agent.yaml", "compactAt: 0\ncontextWindow: 32768\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "agent.yaml"], 30, 140);
    s.wait_for("Ask mm to do something");
    s.keys("what is in the file here?\r");
    s.wait_for("It is a list of lines.");
    // The replies said 110 tokens, but the next request carries the 22 KB
    // the tool read: the bar counts that.
    eventually("the bar counts the output the next request carries", || {
        ctx_figure(&s.text()) > 5000.0
    });
    s.keys("Say hi.\r");
    s.wait_for("Hi.");
    s.wait_for("left out 1 old tool output");
    eventually("the bar drops with the output left out", || {
        ctx_figure(&s.text()) < 2000.0
    });
    // The session lives on, and what was left out stays out.
    s.keys("Again.\r");
    s.wait_for("Hi again.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs[3..] {
        assert!(
            tool_results(r)[0].1.starts_with("[output left out"),
            "{:?}",
            tool_results(r)
        );
    }
    s.keys("\x03\x03");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn a_rewind_of_the_conversation_is_undone_like_one_of_files() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "first\n"}),
        ),
        text("Wrote the first notes."),
        call(
            "c2",
            "write_file",
            json!({"path": "notes.txt", "content": "second\n"}),
        ),
        // A command after the write: its checkpoint holds the same tree as
        // the one a rewind takes before it starts.
        call("c3", "bash", json!({"command": "echo listed > listed.txt"})),
        text("Wrote the second notes."),
        text("Both turns are here."),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "alpha\n")]);
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-yolo"], 40, 140);
    s.wait_for("Ask mm to do something");
    s.keys("write the first notes\r");
    s.wait_for("Wrote the first notes.");
    s.keys("write the second notes\r");
    s.wait_for("Wrote the second notes.");

    // Back to before turn 2, files and conversation.
    s.keys("/rewind\r");
    s.wait_for("enter rewind");
    s.wait_for("write the second notes");
    s.wait_for("undoes");
    // Most recent first: the checkpoints after and before the command,
    // then turn 2's.
    for _ in 0..2 {
        s.keys("\x1b[B");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.keys("\r");
    s.wait_for("b both");
    s.keys("b");
    s.wait_for("the conversation is back to before turn 2");
    // What happened to the files is said in the rewound transcript too.
    s.wait_for("mm: rewound to turn 2: deleted listed.txt; restored");
    s.wait_gone("Wrote the second notes.");
    assert_eq!(ws.read("notes.txt"), "first\n");

    // Changed my mind: the checkpoint before the rewind brings both back.
    std::thread::sleep(Duration::from_millis(200));
    s.keys("/rewind\r");
    s.wait_for("before rewinding to turn 2");
    s.keys("\r");
    s.wait_for("b both");
    s.keys("b");
    s.wait_for("back as it was before the rewind");
    s.wait_for("Wrote the second notes.");
    eventually("the file is back", || ws.read("notes.txt") == "second\n");

    // The model sees both turns again.
    s.keys("what did we do?\r");
    s.wait_for("Both turns are here.");
    let reqs = server.requests();
    let last = reqs.last().unwrap().to_string();
    assert!(
        last.contains("write the first notes") && last.contains("write the second notes"),
        "{last}"
    );
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
    // The session the rewinds left tells its prompts as they were typed,
    // not as the model got them (with mm's attachments under them).
    let show = ws.mm().args(["-show", "last"]).output().unwrap();
    let shown = String::from_utf8_lossy(&show.stdout).to_string();
    assert!(shown.contains("› write the first notes"), "{shown}");
    assert!(!shown.contains("[files in the workspace"), "{shown}");
}

#[test]
fn files_made_or_removed_outside_mm_show_in_the_tree_at_once() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    ws.write("src/b.txt", "bravo\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.wait_for("a.txt");
    // Made by an editor or a shell beside mm: no turn runs.
    ws.write("made_outside.txt", "x\n");
    s.wait_for("made_outside.txt");
    std::fs::remove_file(ws.path().join("a.txt")).unwrap();
    s.wait_gone("a.txt");
    assert!(server.requests().is_empty());
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn the_tree_marks_what_the_session_changed_commands_too_across_a_resume_until_a_commit() {
    let server = Server::start(vec![
        calls(&[
            ("c1", "bash", json!({"command": "echo made > by_cmd.txt"})),
            (
                "c2",
                "edit_file",
                json!({"path": "a.txt", "old_string": "alpha", "replacement": "alpha, edited"}),
            ),
        ]),
        text("Done."),
        text("chore: two changes"),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("a.txt", "alpha\n")]);
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-yolo"], 30, 140);
    s.wait_for("Ask mm to do something");
    // The first request's weight is counted before it is sent (the bar
    // may be drawn a frame after the composer: waited for, not assumed).
    s.wait_for("ctx ");
    assert!(ctx_figure(&s.text()) > 0.0, "{}", s.text());
    // A file the user makes beside mm is not the session's change.
    ws.write("mine.txt", "mine\n");
    s.keys("read a.txt, edit it and make a file\r");
    s.wait_for("Done.");
    // The command's file is marked added, the edited one modified.
    s.wait_for("2 changed");
    assert!(!s.text().contains("A   mine.txt"), "{}", s.text());
    s.wait_for("A   by_cmd.txt");
    s.wait_for("M   a.txt");
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);

    // Resumed: the marks are back.
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-resume", "last"], 30, 140);
    s.wait_for("Done.");
    s.wait_for("A   by_cmd.txt");
    s.wait_for("M   a.txt");
    // Committed: nothing is the session's change any more.
    s.keys("/commit\r");
    s.wait_for("chore: two changes");
    s.keys("\x13");
    s.wait_for("committed");
    s.wait_gone("2 changed");
    // The diff pane starts over too.
    s.wait_for("no changes yet");
    assert!(!s.text().contains("A   by_cmd.txt"), "{}", s.text());
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);

    // Resumed after the commit: still nothing marked.
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-resume", "last"], 30, 140);
    s.wait_for("Done.");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!s.text().contains("changed ·"), "{}", s.text());
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn the_sessions_picker_takes_up_an_older_session_with_enter() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "echo tool-card-marker"})),
        text("One."),
        text("Two."),
        text("Back in the first."),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 140);
    s.wait_for("Ask mm to do something");
    s.keys("the first session\r");
    s.wait_for("One.");
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
    std::thread::sleep(Duration::from_millis(1100));

    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 140);
    s.wait_for("Ask mm to do something");
    s.keys("the second session\r");
    s.wait_for("Two.");
    s.keys("/sessions\r");
    s.wait_for("sessions (2)");
    s.wait_for("(this one)");
    s.wait_for("Enter resume it here");
    // Most recent first: the older one is second.
    s.keys("\x1b[B");
    std::thread::sleep(Duration::from_millis(100));
    s.keys("\r");
    s.wait_for("took up session");
    s.wait_for("One.");
    s.wait_gone("Two.");
    // The session comes back with its tool calls, not only its words.
    s.wait_for("tool-card-marker");
    s.keys("go on\r");
    s.wait_for("Back in the first.");
    let reqs = server.requests();
    let last = reqs.last().unwrap().to_string();
    assert!(last.contains("the first session"), "{last}");
    assert!(!last.contains("the second session"), "{last}");
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}

/// `ui: tui` in the user's config opens the TUI without `-tui`; `-repl`
/// opens the REPL whatever it says.
#[test]
fn ui_tui_in_the_config_opens_the_tui() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home.path().join(".config/mm")).unwrap();
    std::fs::write(ws.home.path().join(".config/mm/config.yaml"), "ui: tui\n").unwrap();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
    let mut t = support::term::Term::start(&ws, &["-url", &url, "-repl"]);
    t.expect("context");
    // The REPL's own help (the TUI's is an overlay without this line).
    t.send("/help\r");
    t.expect("on a line of its own to start and to end a multi-line message");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// The keys the README names: Ctrl-T and Ctrl-G hide and show the file
/// tree and the diff, F2 turns mouse capture off and on, Alt-Enter starts
/// a new line of the message without sending it.
#[test]
fn ctrl_t_ctrl_g_f2_and_alt_enter_do_what_the_readme_says() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    ws.write("calc.py", "x = 1\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.wait_for("calc.py");
    s.wait_for("┌ files ");
    s.wait_for("┌ diff ");
    s.keys("\x14");
    s.wait_gone("┌ files ");
    assert!(!s.text().contains("calc.py"), "{}", s.text());
    s.keys("\x14");
    s.wait_for("┌ files ");
    s.keys("\x07");
    s.wait_gone("┌ diff ");
    s.keys("\x07");
    s.wait_for("┌ diff ");
    let mouse = |s: &Screen| s.parser.lock().unwrap().screen().mouse_protocol_mode();
    assert_ne!(
        mouse(&s),
        vt100::MouseProtocolMode::None,
        "mouse capture is on at start"
    );
    s.keys("\x1bOQ");
    eventually("F2 turns mouse capture off", || {
        mouse(&s) == vt100::MouseProtocolMode::None
    });
    // Said once, whole, at 120 columns: the status bar's "mouse off" and
    // a short line beside it.
    s.wait_for("select with the terminal; F2: back");
    s.wait_for("mouse off");
    s.keys("\x1bOQ");
    eventually("F2 turns it on again", || {
        mouse(&s) != vt100::MouseProtocolMode::None
    });
    s.keys("first line");
    s.keys("\x1b\r");
    s.keys("second line");
    s.wait_for("second line");
    let screen = s.text();
    let row = |w: &str| screen.lines().position(|l| l.contains(w)).unwrap();
    assert_eq!(row("second line"), row("first line") + 1, "{screen}");
    assert!(server.requests().is_empty(), "Alt-Enter sent the message");
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
}

/// Ctrl-Z in a shell with job control: the terminal is given back as it
/// was (the shell says the job stopped), and `fg` brings the screen back.
#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_redraws() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start_program(
        &ws,
        "bash",
        &["--norc", "--noprofile", "-i"],
        &[("PS1", "shell-ready$ ")],
        30,
        120,
    );
    s.wait_for("shell-ready$ ");
    s.keys(&format!("{} -tui -url {url}\r", env!("CARGO_BIN_EXE_mm")));
    s.wait_for("Ask mm to do something");
    s.keys("\x1a");
    s.wait_for("Stopped");
    {
        let p = s.parser.lock().unwrap();
        assert!(
            !p.screen().alternate_screen(),
            "still on the alternate screen"
        );
        assert_eq!(
            p.screen().mouse_protocol_mode(),
            vt100::MouseProtocolMode::None
        );
    }
    s.keys("fg\r");
    s.wait_for("Ask mm to do something");
    assert!(s.parser.lock().unwrap().screen().alternate_screen());
    s.keys("\x03");
    s.keys("\x03");
    eventually("mm left and the shell is back", || {
        !s.parser.lock().unwrap().screen().alternate_screen()
    });
    s.keys("exit\r");
    assert_eq!(s.exit_code(), 0);
}

/// `/copy` puts the last answer on the clipboard through the
/// terminal (OSC 52, no display here) and say so in the status bar.
#[test]
fn a_copy_is_confirmed_in_the_status_bar() {
    let server = Server::start(vec![text("The answer is forty-two.")]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.keys("what is the answer?\r");
    s.wait_for("The answer is forty-two.");
    s.keys("/copy\r");
    s.wait_for("OSC 52: sent");
    let screen = s.text();
    assert!(
        screen.contains("OSC 52: sent 1 line (24 bytes) of the last answer"),
        "{screen}"
    );
    let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
    use base64::Engine;
    let sent = base64::engine::general_purpose::STANDARD.encode("The answer is forty-two.");
    assert!(
        raw.contains(&format!("\x1b]52;c;{sent}")),
        "no OSC 52 with the answer"
    );
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
}

/// A query typed while a turn runs answers at once; a command the agent
/// runs after the turn says that it waits, and then runs.
#[test]
fn a_command_typed_during_a_turn_says_it_is_queued() {
    let mut slow: Vec<(u64, String)> = (0..40)
        .map(|i| {
            (
                100,
                json!({"choices":[{"index":0,"delta":{"content":format!("w{i} ")}}]}).to_string(),
            )
        })
        .collect();
    slow.push((
        0,
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string(),
    ));
    slow.push((0, "[DONE]".to_string()));
    let server = Server::start(vec![Reply::Sse(slow)]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.keys("say many words\r");
    s.wait_for("w2 ");
    s.keys("/stats\r");
    s.wait_for("(1 turn):");
    assert!(!s.text().contains("w39"), "{}", s.text());
    s.keys("/model\r");
    s.wait_for("queued until the turn ends: /model");
    s.wait_for("w39");
    s.wait_for("/model NAME switches");
    s.keys("\x03");
    s.keys("\x03");
    assert_eq!(s.exit_code(), 0);
}

/// `/compact` whose summary the token limit cuts: the wait shows, and
/// what failed changes nothing, the context gauge included (the summary
/// request's own size is not the conversation's).
#[test]
fn a_compaction_that_fails_leaves_the_gauge_where_it_was() {
    let cut: Vec<(u64, String)> = vec![
        (
            1500,
            json!({"choices":[{"index":0,"delta":{"content":"SUMMARY: the user said"},"finish_reason":"length"}]}).to_string(),
        ),
        (
            0,
            json!({"choices":[],"usage":{"prompt_tokens":7000,"completion_tokens":400,"total_tokens":7400}}).to_string(),
        ),
        (0, "[DONE]".to_string()),
    ];
    let server = Server::start(vec![
        text("Noted."),
        text("You are welcome."),
        Reply::Sse(cut),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url, "-no-harness"], 30, 140);
    s.wait_for("Ask mm to do something");
    s.keys("Remember the number 41.\r");
    s.wait_for("Noted.");
    s.keys("Thanks.\r");
    s.wait_for("You are welcome.");
    let before = ctx_figure(&s.text());
    assert!(before < 2000.0, "{before}");
    s.keys("/compact\r");
    s.wait_for("compacting the conversation…");
    s.wait_for("Ctrl-C cancels");
    s.wait_for("not compacted");
    s.wait_gone("Ctrl-C cancels");
    assert_eq!(ctx_figure(&s.text()), before, "{}", s.text());
    s.keys("\x03\x03");
    assert_eq!(s.exit_code(), 0);
}

/// `/plan`: the model looks (a write is refused), proposes numbered
/// steps; the plan shows over the panes; `e` edits a step in place and
/// Ctrl-S carries out the plan as edited; the model marks the steps with
/// `update_plan` and the card in the transcript shows them done.
#[test]
fn a_plan_is_proposed_edited_carried_out_and_its_card_follows_the_steps() {
    let server = Server::start(vec![
        call(
            "p1",
            "write_file",
            json!({"path": "calc.py", "content": "too soon\n"}),
        ),
        text("1. Make add in calc.py return a + b.\n2. Say done."),
        call(
            "u1",
            "update_plan",
            json!({"plan": [
                {"step": "Make add in calc.py return a + b.", "status": "completed"},
                {"step": "Say it is fixed.", "status": "completed"}
            ]}),
        ),
        call(
            "e1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a + b"}),
        ),
        text("Fixed add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-yolo", "-url", &url], 40, 120);
    s.wait_for("Ask mm to do something");
    s.keys("/plan fix add in calc.py\r");
    s.wait_for("the plan");
    s.wait_for("2. Say done.");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a - b\n");
    s.keys("e");
    s.wait_for("stops editing");
    // The end of the last line: its last word goes, another comes.
    s.keys("\x1b[B\x1b[F"); // down, end
    for _ in 0.."done.".len() {
        s.keys("\x7f");
    }
    s.keys("it is fixed.");
    s.keys("\x13"); // ctrl-s
    s.wait_for("Fixed add.");
    s.wait_for("plan · 2 of 2 done");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
    let reqs = server.requests();
    let carried = reqs[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        carried.contains("1. Make add in calc.py return a + b.\n2. Say it is fixed."),
        "{carried}"
    );
    let tools: Vec<&str> = reqs[2]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"update_plan"), "{tools:?}");
    assert!(
        !reqs[0]["tools"].to_string().contains("update_plan"),
        "only the run of a plan offers update_plan"
    );
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}

/// A newcomer's first Tab goes to the pane on the left, the file tree,
/// where typing filters (it went to the transcript, and the letters
/// spilled into the composer); Ctrl-C closes an overlay as Esc does, and
/// is not taken for the first press of a quit.
#[test]
fn the_first_tab_reaches_the_tree_and_ctrl_c_closes_an_overlay() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    ws.write("shop/cart.py", "x = 1\n");
    ws.write("tests/test_cart.py", "y = 2\n");
    ws.write("zebra.txt", "z\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("Ask mm to do something");
    s.wait_for("zebra.txt");
    s.keys("\t");
    s.keys("car");
    s.wait_for("filter: car");
    s.wait_gone("zebra.txt");
    assert!(s.text().contains("cart.py"), "{}", s.text());
    // Back to the composer: nothing was typed there.
    s.keys("\x1b");
    s.keys("\x1b[Z"); // shift-tab: from the tree to the composer
    s.keys("hello");
    s.wait_for("hello");
    assert!(!s.text().contains("carhello"), "{}", s.text());
    // F1's help closes with Ctrl-C, and mm keeps running.
    s.keys("\x1bOP");
    s.wait_for("keymap:");
    s.keys("\x03");
    s.wait_gone("keymap:");
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.child.try_wait().unwrap().is_none(), "mm quit");
    assert!(!s.text().contains("Ctrl-C again"), "{}", s.text());
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}

/// A trial's tree showed `filter: car` and no file at all after a write
/// until the filter was typed again: the filter follows the workspace.
#[test]
fn a_typed_filter_follows_files_made_while_it_shows() {
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    ws.write("shop/cart.py", "x = 1\n");
    ws.write("zebra.txt", "z\n");
    let url = server.url();
    let mut s = Screen::start(&ws, &["-tui", "-url", &url], 30, 120);
    s.wait_for("zebra.txt");
    s.keys("\t");
    s.keys("car");
    s.wait_for("filter: car");
    s.wait_for("shop/cart.py");
    ws.write("cards.txt", "new\n");
    s.wait_for("cards.txt");
    assert!(s.text().contains("shop/cart.py"), "{}", s.text());
    s.keys("\x11");
    assert_eq!(s.exit_code(), 0);
}
