//! Language servers for real: pyright (installed by `scripts/lsp install`)
//! on small Python projects in temp dirs. Diagnostics of an edit reach the
//! model in that edit's tool result; definitions and references resolve to
//! the right file and line; a killed server is restarted with a notice.
//! Skipped when pyright is missing, unless MM_REQUIRE_LSP=1 (scripts/test).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mm::bus::EventBus;
use mm::lsp::{Lsp, defaults, find_program};
use mm::protocol::AgentEvent;
use serde_json::json;
use support::*;

fn pyright() -> Option<PathBuf> {
    let found = find_program("pyright-langserver");
    if found.is_none() {
        assert!(
            std::env::var_os("MM_REQUIRE_LSP").is_none(),
            "pyright-langserver is not installed: run scripts/lsp install"
        );
        skip("pyright-langserver is not installed (scripts/lsp install)");
    }
    found
}

/// The built-in servers with pyright given by its path: no change to this
/// process's PATH, which tests running beside it read.
fn pyright_by_path(program: &std::path::Path) -> Vec<mm::config::servers::ServerSpec> {
    defaults()
        .into_iter()
        .map(|mut s| {
            if s.name == "pyright" {
                s.command = program.display().to_string();
            }
            s
        })
        .collect()
}

/// PATH for a child mm: pyright's folder first.
fn path_with(program: &std::path::Path) -> String {
    format!(
        "{}:{}",
        program.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `mm -p PROMPT` against the scripted server, with pyright on PATH.
fn run_with(
    ws: &Workspace,
    program: &std::path::Path,
    server: &Server,
    prompt: &str,
) -> std::process::Output {
    ws.mm()
        .env("PATH", path_with(program))
        .args(["-p", prompt, "-url", &server.url()])
        .output()
        .unwrap()
}

#[test]
fn an_edit_that_breaks_the_code_is_reported_to_the_model_in_its_result() {
    let Some(program) = pyright() else { return };
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "calc.py"})),
        call(
            "e1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "math.pi * r * r", "replacement": "math.tau_squared(r)"}),
        ),
        text("Done."),
        call(
            "e2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "math.tau_squared(r)", "replacement": "math.tau * r * r / 2"}),
        ),
        text("Fixed: area uses math.tau now."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "calc.py",
        "import math\n\n\ndef area(r):\n    return math.pi * r * r\n",
    );
    let out = run_with(&ws, &program, &server, "use tau in area");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let result = &tool_results(&reqs[2]).last().unwrap().1.clone();
    assert!(result.starts_with("edited calc.py"), "{result}");
    assert!(
        result.contains("pyright: 1 error(s) in calc.py")
            && result.contains("calc.py:5:")
            && result.contains("tau_squared"),
        "{result}"
    );
    // The model said "Done." over the error: it is told once, and fixes it.
    let nudge = reqs[3]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        nudge.starts_with("Your changes left errors (from the language server or the parser):")
            && nudge.contains("tau_squared")
            && nudge.contains("The user's request:"),
        "{nudge}"
    );
    let fixed = &tool_results(&reqs[4]).last().unwrap().1.clone();
    assert!(fixed.ends_with("pyright: no errors in calc.py"), "{fixed}");
    assert_eq!(reqs.len(), 5, "no second nudge after the fix");
    assert!(stdout(&out).contains("Fixed: area uses math.tau now."));
    assert_eq!(
        ws.read("calc.py"),
        "import math\n\n\ndef area(r):\n    return math.tau * r * r / 2\n"
    );
    // The lsp tools are offered when a server is installed.
    let tools: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"lsp_definition"), "{tools:?}");
    let first = serde_json::to_vec(&reqs[0]).unwrap().len();
    assert!(first <= 8 * 1024, "first request is {first} bytes");
}

#[test]
fn definitions_and_references_point_at_the_right_lines() {
    let Some(program) = pyright() else { return };
    let server = Server::start(vec![
        call(
            "d1",
            "lsp_definition",
            json!({"path": "main.py", "symbol": "area", "line": 3}),
        ),
        call(
            "f1",
            "lsp_references",
            json!({"path": "geo.py", "symbol": "area"}),
        ),
        call(
            "h1",
            "lsp_hover",
            json!({"path": "geo.py", "line": 4, "col": 5}),
        ),
        text("Found it."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "geo.py",
        "import math\n\n\ndef area(r: float) -> float:\n    return math.pi * r * r\n",
    );
    ws.write("main.py", "from geo import area\n\nprint(area(2))\n");
    let out = run_with(&ws, &program, &server, "where is area");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let def = &tool_results(&reqs[1]).last().unwrap().1.clone();
    assert!(
        def.contains("geo.py:4:5: def area(r: float) -> float:"),
        "{def}"
    );
    let refs = &tool_results(&reqs[2]).last().unwrap().1.clone();
    for want in ["geo.py:4:5:", "main.py:1:17:", "main.py:3:7:"] {
        assert!(refs.contains(want), "{want} missing in {refs}");
    }
    let hover = &tool_results(&reqs[3]).last().unwrap().1.clone();
    assert!(hover.contains("(r: float) -> float"), "{hover}");
}

#[tokio::test]
async fn a_killed_server_is_restarted_with_a_notice_not_a_hang() {
    let Some(program) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let file = root.join("a.py");
    std::fs::write(&file, "x: int = 1\n").unwrap();
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let specs = pyright_by_path(&program);
    let lsp = Lsp::new(&root, specs, bus, None);
    assert!(lsp.available());
    let never = tokio_util::sync::CancellationToken::new();
    let report = lsp
        .check_write("c1", &file, "x: int = 'one'\n", &never)
        .await
        .unwrap()
        .text;
    assert!(report.contains("1 error(s) in a.py"), "{report}");

    let pids = lsp.pids().await;
    assert_eq!(pids.len(), 1, "{pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0].1 as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Gone (or a zombie nobody reaped yet) before the next check.
    let dead = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "))
    };
    let waited = Instant::now();
    while !dead(pids[0].1) {
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "SIGKILL did not kill it"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let started = Instant::now();
    let report = lsp
        .check_write("c2", &file, "x: int = 2\n", &never)
        .await
        .unwrap()
        .text;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(report, "pyright: no errors in a.py");
    let new_pids = lsp.pids().await;
    assert_eq!(new_pids.len(), 1);
    assert_ne!(new_pids[0].1, pids[0].1, "a new process");

    let mut notices = Vec::new();
    let mut counts = Vec::new();
    while let Ok(ev) = events.try_recv() {
        match ev.msg {
            AgentEvent::Notice { text, .. } => notices.push(text),
            AgentEvent::Diagnostics { path, errors, .. } => counts.push((path, errors)),
            _ => {}
        }
    }
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("pyright stopped") && n.ends_with("restarting it")),
        "{notices:?}"
    );
    assert_eq!(counts.first(), Some(&("a.py".to_string(), 1)), "{counts:?}");
    assert_eq!(counts.last(), Some(&("a.py".to_string(), 0)), "{counts:?}");
    let last = lsp.pids().await;
    lsp.shutdown().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let alive = std::path::Path::new(&format!("/proc/{}", last[0].1)).exists()
        && !std::fs::read_to_string(format!("/proc/{}/stat", last[0].1))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "the server was stopped on shutdown");
}

#[test]
fn errors_the_model_leaves_are_told_to_the_user() {
    let Some(program) = pyright() else { return };
    let server = Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "new.py", "content": "import math\n\nprint(math.sphere_volume(2))\n"}),
        ),
        text("Done."),
        text("It is fine, trust me."),
    ]);
    let ws = Workspace::new();
    let out = run_with(&ws, &program, &server, "write new.py");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("asking the model to fix them")
            && err.contains(
                "the language server still reports errors this turn brought: new.py (1 error(s))"
            ),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3, "one follow-up, not a loop");
}

#[test]
fn an_error_from_an_earlier_edit_of_the_turn_is_not_forgotten() {
    let Some(program) = pyright() else { return };
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "calc.py"})),
        call(
            "e1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a + b", "replacement": "return a.plus(b) + undefined_thing"}),
        ),
        // A second edit elsewhere: its own baseline already has the error.
        call(
            "e2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "def add(a, b):", "replacement": "def add(a: int, b: int):"}),
        ),
        text("Done."),
        text("The error is intended."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    let out = run_with(&ws, &program, &server, "change add");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "the model was asked about the errors");
    let nudge = reqs[4]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(nudge.contains("undefined_thing"), "{nudge}");
    assert!(stderr(&out).contains("still reports errors this turn brought: calc.py"));
}

#[test]
fn a_turn_stopped_in_a_loop_still_tells_of_the_errors_it_left() {
    let Some(program) = pyright() else { return };
    let mut script = vec![call(
        "w1",
        "write_file",
        json!({"path": "new.py", "content": "print(undefined_name)\n"}),
    )];
    for i in 0..8 {
        script.push(call(
            &format!("r{i}"),
            "read_file",
            json!({"path": "new.py"}),
        ));
    }
    script.push(text("All done, no errors."));
    let server = Server::start(script);
    let ws = Workspace::new();
    let out = run_with(&ws, &program, &server, "write new.py");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "a stopped loop: {err}");
    assert!(err.contains("asking for a final report"), "{err}");
    assert!(
        err.contains(
            "the language server still reports errors this turn brought: new.py (1 error(s))"
        ),
        "{err}"
    );
    let last = server.requests().last().unwrap().clone();
    let ask = last["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        ask.starts_with("This turn is over") && ask.contains("undefined_name"),
        "{ask}"
    );
}

#[test]
fn a_server_in_the_fence_outlives_its_check_on_mm() {
    // pyright checks every few seconds that the pid it was given is alive;
    // in the fence's pid namespace mm's pid is not there.
    let Some(program) = pyright() else { return };
    let mut later = match call(
        "e1",
        "edit_file",
        json!({"path": "calc.py", "old_string": "return 1", "replacement": "return undefined_name"}),
    ) {
        Reply::Sse(events) => events,
        other => panic!("{other:?}"),
    };
    later[0].0 = 7000;
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "calc.py"})),
        Reply::Sse(later),
        text("Done."),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def one():\n    return 1\n");
    let out = run_with(&ws, &program, &server, "break it");
    let err = stderr(&out);
    assert!(!err.contains("pyright stopped"), "{err}");
    let reqs = server.requests();
    let result = &tool_results(&reqs[2]).last().unwrap().1.clone();
    assert!(
        result.contains("undefined_name"),
        "no diagnostics: {result}"
    );
}

#[test]
fn errors_an_edit_brings_into_the_files_that_use_it_reach_the_model() {
    let Some(program) = pyright() else { return };
    let server = Server::start(vec![
        call(
            "e1",
            "edit_file",
            json!({"path": "fmt.py", "old_string": "def format_list(items):", "replacement": "def format_items(items):"}),
        ),
        text("Renamed it."),
        text("report.py still uses the old name; left as is."),
        text("report.py still uses the old name; left as is."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "fmt.py",
        "def format_list(items):\n    return \", \".join(items)\n",
    );
    ws.write(
        "report.py",
        "from fmt import format_list\n\nprint(format_list([\"a\", \"b\"]))\n",
    );
    let out = run_with(
        &ws,
        &program,
        &server,
        // Not put as a rename: mm would do that one itself, in both files.
        "in fmt.py, make the def line read def format_items(items):",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains("[report.py uses fmt.py; this change brought errors there:]"),
        "{result}"
    );
    assert!(result.contains("format_list"), "{result}");
    // The end of the turn counts them like the file's own.
    assert!(
        stderr(&out).contains("report.py"),
        "the user hears of the errors left in report.py: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_server_that_crashes_three_times_is_off_for_the_session() {
    let Some(program) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let file = root.join("a.py");
    std::fs::write(&file, "x: int = 1\n").unwrap();
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let specs = pyright_by_path(&program);
    let lsp = Lsp::new(&root, specs, bus, None);
    let never = tokio_util::sync::CancellationToken::new();
    let dead = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "))
    };
    for crash in 1..=3 {
        // A check that gets an answer: the server runs (after a restart's
        // wait, on the second round).
        let waited = Instant::now();
        loop {
            let text = format!("x: int = {crash}\n");
            let check = lsp
                .check_write(&format!("c{crash}"), &file, &text, &never)
                .await;
            if check.is_some_and(|c| c.text.starts_with("pyright:")) {
                break;
            }
            assert!(
                waited.elapsed() < Duration::from_secs(40),
                "round {crash}: the server never answered"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let pids = lsp.pids().await;
        assert_eq!(pids.len(), 1, "{pids:?}");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pids[0].1 as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let killed = Instant::now();
        while !dead(pids[0].1) {
            assert!(killed.elapsed() < Duration::from_secs(20));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // The next use finds the third crash: off, and it stays off.
    let c9 = lsp.check_write("c9", &file, "x: int = 9\n", &never).await;
    assert!(c9.is_none(), "{:?}", c9.map(|c| c.text));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        lsp.check_write("c10", &file, "x: int = 10\n", &never)
            .await
            .is_none()
    );
    assert!(lsp.pids().await.is_empty(), "nothing was started again");
    let mut notices = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let AgentEvent::Notice { text, .. } = ev.msg {
            notices.push(text);
        }
    }
    let restarts = notices
        .iter()
        .filter(|n| n.ends_with("restarting it"))
        .count();
    let off: Vec<&String> = notices
        .iter()
        .filter(|n| n.contains("stopped 3 times") && n.contains("off for this session"))
        .collect();
    assert_eq!(restarts, 2, "{notices:?}");
    assert_eq!(off.len(), 1, "one notice: {notices:?}");
    lsp.shutdown().await;
}

#[tokio::test]
async fn a_file_put_back_is_told_to_the_server_and_its_errors_go() {
    let Some(program) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (a, b) = (root.join("a.py"), root.join("b.py"));
    std::fs::write(&a, "x: int = 1\n").unwrap();
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let lsp = Lsp::new(&root, pyright_by_path(&program), bus, None);
    let never = tokio_util::sync::CancellationToken::new();
    for (file, text) in [(&a, "x: int = 'one'\n"), (&b, "y: str = 2\n")] {
        std::fs::write(file, text).unwrap();
        let report = lsp.check_write("c", file, text, &never).await.unwrap().text;
        assert!(report.contains("1 error(s)"), "{report}");
    }
    // A rewind puts a.py back and removes b.py.
    std::fs::write(&a, "x: int = 1\n").unwrap();
    lsp.restored(&a, Some("x: int = 1\n")).await;
    std::fs::remove_file(&b).unwrap();
    lsp.restored(&b, None).await;
    let mut last = std::collections::HashMap::new();
    let waited = Instant::now();
    loop {
        while let Ok(ev) = events.try_recv() {
            if let AgentEvent::Diagnostics { path, errors, .. } = ev.msg {
                last.insert(path, errors);
            }
        }
        if last.get("a.py") == Some(&0) && last.get("b.py") == Some(&0) {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the errors stayed: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lsp.shutdown().await;
}

/// A language server that cannot start (a rustup proxy with no component
/// behind it) is turned off for the session, and its tools are offered
/// no more: a small model kept calling them for their error.
#[test]
fn the_lsp_tools_leave_the_request_once_no_server_can_answer() {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("pyright-langserver");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'error: Unknown binary' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let server = Server::start(vec![
        call(
            "c1",
            "lsp_hover",
            json!({"path": "calc.py", "symbol": "add"}),
        ),
        call(
            "c2",
            "lsp_hover",
            json!({"path": "calc.py", "symbol": "add"}),
        ),
        text("add adds."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    let out = ws
        .mm()
        .env("PATH", path_with(&fake))
        .args([
            "-p",
            "What does add in calc.py do?",
            "-url",
            &server.url(),
            "-no-harness",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let offered = |req: &serde_json::Value| -> bool {
        req["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "lsp_hover"))
    };
    // The first call starts the server (or the attached file did); its
    // failure takes the tools out of every request after it.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", stderr(&out));
    let shown: Vec<bool> = reqs.iter().map(offered).collect();
    assert_eq!(&shown[1..], [false, false], "{}", stderr(&out));
    assert!(reqs[1]["tools"].as_array().is_some_and(|t| t.len() > 3));
}
