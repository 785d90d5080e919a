//! Copying answers and exporting sessions: `/copy` in the REPL writes the
//! exact OSC 52 sequence to the terminal when there is no display; `/export`
//! and `mm -show ID -export` write Markdown or JSONL.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use base64::Engine;
use support::term::Term;
use support::*;

const ANSWER: &str = "Set it like this:\n\n```python\nx = 1\n```";

#[test]
fn copy_goes_through_the_terminal_and_export_writes_the_session() {
    let server = Server::start(vec![text("First answer."), text(ANSWER)]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("first question\r");
    t.expect("First answer.");
    t.send("how do I set x?\r");
    t.expect("x = 1");
    t.send("/copy\r");
    let b64 = base64::engine::general_purpose::STANDARD.encode(ANSWER);
    t.expect(&format!("\x1b]52;c;{b64}\x07"));
    let n = ANSWER.lines().count();
    t.expect(&format!(
        "OSC 52: sent {n} line{} ({} bytes) of the last answer",
        if n == 1 { "" } else { "s" },
        ANSWER.len()
    ));
    t.send("/copy 2\r");
    let b64 = base64::engine::general_purpose::STANDARD.encode("First answer.");
    t.expect(&format!("\x1b]52;c;{b64}\x07"));
    t.send("/copy 3\r");
    t.expect("no answer 3 back: this session has 2 answer(s)");

    // Outside the workspace, so that the exports are not changes in it.
    let out_dir = ws.home.path().to_path_buf();
    t.send(&format!("/export {}\r", out_dir.join("notes.md").display()));
    t.expect("exported the session to");
    let md = std::fs::read_to_string(out_dir.join("notes.md")).unwrap();
    assert!(md.starts_with("# mm session "), "{md}");
    assert!(
        md.contains("## 2. how do I set x?\n\n> how do I set x?\n\nSet it like this:"),
        "{md}"
    );
    // With no path, into .mm/exports/: not where the model lists files.
    t.send("/export\r");
    t.expect("exported the session to");
    let exports: Vec<_> = std::fs::read_dir(ws.dir.path().join(".mm/exports"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        exports.len() == 1 && exports[0].starts_with("mm-") && exports[0].ends_with(".md"),
        "{exports:?}"
    );
    assert!(
        !std::fs::read_dir(ws.dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("mm-")),
        "nothing in the workspace's own files"
    );
    t.send(&format!(
        "/export {}\r",
        out_dir.join("events.jsonl").display()
    ));
    t.expect("exported the session to");
    let jsonl = std::fs::read_to_string(out_dir.join("events.jsonl")).unwrap();
    let types: Vec<String> = jsonl
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "turn_started",
            "token",
            "turn_finished",
            "turn_started",
            "token",
            "turn_finished"
        ]
    );
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);

    // The same from the command line, after the fact.
    let out = ws
        .mm()
        .args(["-show", "last", "-export"])
        .arg(out_dir.join("again.md"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("again.md")).unwrap(),
        md
    );
    // An export into the workspace is not a change of its own diff.
    t_free_export(&ws);
    let out = ws
        .mm()
        .args(["-show", "last", "-export", "-", "-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), jsonl);
}

fn t_free_export(ws: &Workspace) {
    let out = ws
        .mm()
        .args(["-show", "last", "-export", "in-tree.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = ws.read("in-tree.md");
    let out = ws
        .mm()
        .args(["-show", "last", "-export", "in-tree.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("in-tree.md"), first);
    assert!(!first.contains("### in-tree.md"), "{first}");
    // With -cwd, a relative path is the current directory's, as in a shell.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = ws
        .mm()
        .current_dir(elsewhere.path())
        .arg("-cwd")
        .arg(ws.path())
        .args(["-show", "last", "-export", "out.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(elsewhere.path().join("out.md").is_file());
    assert!(!ws.path().join("out.md").exists());
}

/// With a display, `/copy` uses the system clipboard: checked under Xvfb
/// with xclip (skipped when they are missing, unless MM_REQUIRE_X11=1).
#[test]
fn with_a_display_copy_uses_the_system_clipboard() {
    let have = |p: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have("Xvfb") || !have("xclip") {
        assert!(
            std::env::var_os("MM_REQUIRE_X11").is_none(),
            "Xvfb and xclip are needed (apt-get install xvfb xclip)"
        );
        skip("Xvfb or xclip is missing");
        return;
    }
    let display = format!(":{}", 90 + std::process::id() % 500);
    let mut xvfb = std::process::Command::new("Xvfb")
        .args([
            display.as_str(),
            "-screen",
            "0",
            "640x480x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ready when its socket is there.
    let socket = format!("/tmp/.X11-unix/X{}", &display[1..]);
    let start = std::time::Instant::now();
    while !std::path::Path::new(&socket).exists() {
        assert!(start.elapsed().as_secs() < 20, "Xvfb never made {socket}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = Server::start(vec![text("Copied from mm.")]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start_with(&ws, &["-url", &url], &[("DISPLAY", &display)]);
    t.expect("› ");
    t.send("say it\r");
    t.expect("Copied from mm.");
    t.send("/copy\r");
    t.expect("copied 1 line (15 bytes) of the last answer");
    let got = std::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard"])
        .env("DISPLAY", &display)
        .output()
        .unwrap();
    let _ = xvfb.kill();
    let _ = xvfb.wait();
    assert_eq!(String::from_utf8_lossy(&got.stdout), "Copied from mm.");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// A display nobody answers on: `/copy` goes through the terminal (OSC 52)
/// at once instead of waiting on X.
#[test]
fn a_display_that_does_not_answer_falls_back_to_the_terminal_at_once() {
    let server = Server::start(vec![text("Copied from mm.")]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start_with(&ws, &["-url", &url], &[("DISPLAY", ":4242")]);
    t.expect("› ");
    t.send("say it\r");
    t.expect("Copied from mm.");
    let start = std::time::Instant::now();
    t.send("/copy\r");
    t.expect("OSC 52: sent 1 line (15 bytes)");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// What mm said to the model inside a turn is not a prompt of the user's,
/// and the commands mm ran itself are in the export with their output,
/// under the prompt (the trial's export showed nudges as numbered prompts
/// and no test run).
#[test]
fn an_export_shows_mms_own_runs_and_its_words_to_the_model_as_its_own() {
    let server = Server::with_side(
        vec![
            text("sub is added."),
            call(
                "c1",
                "edit_file",
                serde_json::json!({"path": "calc.py", "old_string": "    return a + b\n", "replacement": "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}),
            ),
            text("I added sub to calc.py."),
            text("I added sub to calc.py."),
        ],
        vec![text("no"), text("no"), text("no")],
    );
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    ws.write(
        "test_calc.py",
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    let out = ws.run(
        &server,
        "Add a function sub(a, b) to calc.py that returns a - b.",
        &["-yolo"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.read("calc.py").contains("def sub(a, b):"));
    let out = ws
        .mm()
        .args(["-show", "last", "-export", "s.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = ws.read("s.md");
    let prompt = md.find("## 1. Add a function sub").expect(&md);
    assert!(!md.contains("## 2."), "{md}");
    let nudge = md.find("<summary>mm, to the model</summary>").expect(&md);
    let ran = md.find("✓ mm ran <code>").expect(&md);
    assert!(prompt < nudge && nudge < ran, "{md}");
    // The replay, too, starts one turn, not one a message.
    let out = ws.mm().args(["-show", "last"]).output().unwrap();
    let shown = stdout(&out);
    assert_eq!(shown.matches("Add a function sub").count(), 1, "{shown}");
}
