//! MCP servers against the real reference server from the npm registry
//! (`@modelcontextprotocol/server-everything`, installed by `scripts/mcp
//! install`; `scripts/test` sets MM_MCP_EVERYTHING), with the scripted
//! model server: tools listed and called through the model loop, `ask`
//! approved and refused, `deny`, a server that does not start, and one
//! killed mid-session.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::{Value, json};
use support::term::Term;
use support::*;

/// The server's program, or None (the test is skipped) when it is not
/// installed and not required.
fn everything() -> Option<String> {
    match std::env::var("MM_MCP_EVERYTHING") {
        Ok(p) if std::path::Path::new(&p).is_file() => Some(p),
        _ => {
            assert!(
                std::env::var("MM_REQUIRE_MCP").as_deref() != Ok("1"),
                "MM_REQUIRE_MCP=1 but MM_MCP_EVERYTHING does not name the server (scripts/mcp install)"
            );
            skip("no MCP test server (scripts/mcp install; MM_MCP_EVERYTHING)");
            None
        }
    }
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn agent(ws: &Workspace, server_yaml: &str) {
    ws.write("agent.yaml", &format!("mcpServers:\n{server_yaml}"));
}

#[test]
fn a_server_s_tools_are_offered_and_called_through_the_model_loop() {
    let Some(bin) = everything() else { return };
    let ws = Workspace::new();
    agent(
        &ws,
        &format!(
            "  everything:\n    command: {bin}\n    args: [stdio]\n    permission: allow\n    tools: {{get-env: deny}}\n"
        ),
    );
    let server = Server::start(vec![
        call(
            "c1",
            "everything__echo",
            json!({"message": "hello over MCP"}),
        ),
        text("It echoed."),
    ]);
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "echo something", "-json", "-no-harness"])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MCP server everything:"),
        "{}",
        stderr(&out)
    );
    // What the server wrote to stderr is in its log inside the workspace.
    let log = std::fs::read_to_string(ws.dir.path().join(".mm/mcp-everything.log")).unwrap();
    assert!(!log.is_empty());
    let reqs = server.requests();
    let names = tool_names(&reqs[0]);
    assert!(names.contains(&"everything__echo".to_string()), "{names:?}");
    assert!(names.contains(&"read_file".to_string()));
    assert!(
        !names.contains(&"everything__get-env".to_string()),
        "a denied tool is not offered: {names:?}"
    );
    let results = tool_results(&reqs[1]);
    assert!(
        results[0].1.contains("hello over MCP"),
        "the server's answer reaches the model: {results:?}"
    );
    assert_eq!(json_result(&out)["answer"], "It echoed.");
    // The server ran inside the workspace; its stderr went to a log there.
    assert!(ws.path().join(".mm/mcp-everything.log").exists());
}

#[test]
fn an_ask_tool_is_refused_headless_and_said_once() {
    let Some(bin) = everything() else { return };
    let ws = Workspace::new();
    agent(
        &ws,
        &format!("  everything:\n    command: {bin}\n    args: [stdio]\n"),
    );
    let server = Server::start(vec![
        call("c1", "everything__echo", json!({"message": "one"})),
        call("c2", "everything__echo", json!({"message": "two"})),
        text("Refused twice."),
    ]);
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "echo", "-no-harness"])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("was refused: it asks first").count(),
        1,
        "said once: {err}"
    );
    let reqs = server.requests();
    let results = tool_results(&reqs[2]);
    assert_eq!(results.len(), 2);
    for (_, r) in &results {
        assert!(r.contains("needs the user's approval"), "{r}");
        assert!(!r.contains("Echo:"), "{r}");
    }
}

#[test]
fn an_ask_tool_is_approved_and_refused_in_the_repl() {
    let Some(bin) = everything() else { return };
    let ws = Workspace::new();
    agent(
        &ws,
        &format!("  everything:\n    command: {bin}\n    args: [stdio]\n"),
    );
    let server = Server::start(vec![
        call("c1", "everything__echo", json!({"message": "first"})),
        text("Done one."),
        call("c2", "everything__echo", json!({"message": "second"})),
        text("Done two."),
    ]);
    let mut t = Term::start(&ws, &["agent.yaml", "-url", &server.url(), "-no-harness"]);
    t.expect("MCP server everything:");
    t.send("/mcp\r");
    t.expect("everything__echo [ask]");
    t.send("echo first\r");
    t.expect("everything__echo");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Done one.");
    t.send("echo second\r");
    t.expect("allow?");
    t.send("n not now\r");
    t.expect("Done two.");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let reqs = server.requests();
    let first = tool_results(&reqs[1]);
    assert!(first[0].1.contains("first"), "{first:?}");
    let second = tool_results(&reqs[3]);
    let refused = &second.iter().find(|(id, _)| id == "c2").unwrap().1;
    assert!(
        refused.contains("not now") && !refused.contains("Echo"),
        "{refused}"
    );
}

#[test]
fn a_server_that_does_not_start_is_said_and_mm_goes_on() {
    let ws = Workspace::new();
    agent(
        &ws,
        "  broken:\n    command: /nonexistent/mcp-server\n    permission: allow\n",
    );
    let server = Server::start(vec![text("Hello anyway.")]);
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "hi", "-json", "-no-harness"])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MCP server broken did not start"),
        "{}",
        stderr(&out)
    );
    let names = tool_names(&server.requests()[0]);
    assert!(
        !names.iter().any(|n| n.starts_with("broken__")),
        "{names:?}"
    );
    assert_eq!(json_result(&out)["answer"], "Hello anyway.");
}

#[test]
fn a_bad_server_entry_is_a_config_error() {
    let ws = Workspace::new();
    agent(
        &ws,
        "  both:\n    command: x\n    url: http://127.0.0.1:1/mcp\n",
    );
    let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("mcpServers.both: give either command"));
    agent(&ws, "  x:\n    command: y\n    permision: allow\n");
    let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("agent.yaml") && err.contains("permision"),
        "{err}"
    );
}

#[test]
fn a_server_killed_mid_session_loses_its_tools_and_mm_goes_on() {
    let Some(bin) = everything() else { return };
    let ws = Workspace::new();
    agent(
        &ws,
        &format!("  everything:\n    command: {bin}\n    args: [stdio]\n    permission: allow\n"),
    );
    let server = Server::start(vec![
        call("c1", "everything__echo", json!({"message": "alive"})),
        text("First done."),
        call(
            "c2",
            "everything__echo",
            json!({"message": "after the kill"}),
        ),
        text("Second done."),
        text("Third done."),
    ]);
    let mut t = Term::start(&ws, &["agent.yaml", "-url", &server.url(), "-no-harness"]);
    t.expect("MCP server everything:");
    t.send("echo once\r");
    t.expect("First done.");
    // The server: the node process working in this workspace.
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains("mcp-server-everything")
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .ok()
                    .as_deref()
                    == Some(&root)
        })
        .collect();
    assert!(!pids.is_empty(), "the server runs in the workspace");
    for pid in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    t.send("echo again\r");
    t.expect("the MCP server everything stopped:");
    t.expect("its tools are gone for this session");
    t.expect("Second done.");
    t.send("anything else?\r");
    t.expect("Third done.");
    t.send("/mcp\r");
    t.expect("stopped:");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let reqs = server.requests();
    let second = tool_results(&reqs[3]);
    let gone = &second.iter().find(|(id, _)| id == "c2").unwrap().1;
    assert!(gone.contains("gone for this session"), "{gone}");
    assert!(
        !tool_names(&reqs[4]).contains(&"everything__echo".to_string()),
        "the dead server's tools are no longer offered"
    );
}

/// The same server over streamable HTTP on 127.0.0.1, with a header whose
/// value comes from the environment.
#[test]
fn a_server_over_streamable_http_is_called_too() {
    let Some(bin) = everything() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = std::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed().as_secs() < 30,
            "the HTTP server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // mm talks to it through a pass-through on another port that keeps
    // what mm sends: the header must arrive with its value filled in.
    let (front, sent) = recording_proxy(port);
    let ws = Workspace::new();
    agent(
        &ws,
        &format!(
            "  web:\n    url: http://127.0.0.1:{front}/mcp\n    headers: {{Authorization: \"Bearer ${{MM_TEST_MCP_TOKEN}}\"}}\n    permission: allow\n    noPrefix: true\n"
        ),
    );
    let server = Server::start(vec![
        call("c1", "echo", json!({"message": "over HTTP"})),
        text("Echoed over HTTP."),
    ]);
    let out = ws
        .mm()
        .env("MM_TEST_MCP_TOKEN", "t0ken")
        .args(["agent.yaml", "-p", "echo", "-json", "-no-harness"])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    let _ = http.kill();
    let _ = http.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert!(tool_names(&reqs[0]).contains(&"echo".to_string()));
    let results = tool_results(&reqs[1]);
    assert!(results[0].1.contains("over HTTP"), "{results:?}");
    let sent = String::from_utf8_lossy(&sent.lock().unwrap()).to_ascii_lowercase();
    assert!(sent.contains("post /mcp"), "{sent}");
    assert!(sent.contains("authorization: bearer t0ken\r\n"), "{sent}");
    assert!(!sent.contains("mm_test_mcp_token"), "{sent}");
}

/// A TCP pass-through from a new port on 127.0.0.1 to `port` that keeps
/// every byte its clients send.
fn recording_proxy(port: u16) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let front = listener.local_addr().unwrap().port();
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = sent.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(upstream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            let (mut back_from, mut back_to) =
                (upstream.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut back_from, &mut back_to);
                let _ = back_to.shutdown(std::net::Shutdown::Write);
            });
            let keep = keep.clone();
            std::thread::spawn(move || {
                let (mut from, mut to) = (client, upstream);
                let mut buf = [0u8; 8192];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 || to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    keep.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = to.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (front, sent)
}

#[test]
fn a_planted_link_for_the_server_log_is_not_written_through() {
    let Some(bin) = everything() else { return };
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim_rc");
    std::fs::write(&victim, "mine\n").unwrap();
    std::fs::create_dir_all(ws.dir.path().join(".mm")).unwrap();
    std::os::unix::fs::symlink(&victim, ws.dir.path().join(".mm/mcp-everything.log")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("new"),
        ws.dir.path().join(".mm/mcp-other.log"),
    )
    .unwrap();
    agent(
        &ws,
        &format!(
            "  everything:\n    command: {bin}\n    args: [stdio]\n  other:\n    command: {bin}\n    args: [stdio]\n"
        ),
    );
    let server = Server::start(vec![text("Hi.")]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "hi",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    assert!(!outside.path().join("new").exists());
    // The servers still started.
    let names = tool_names(&server.requests()[0]);
    assert!(names.contains(&"everything__echo".to_string()), "{names:?}");
}
