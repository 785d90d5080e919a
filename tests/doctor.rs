//! `mm doctor` against the scripted server: a good one passes every
//! check; a server without tool calls (a failure), one that refuses
//! `response_format` or does not stream (warnings), and none at all are
//! each named with what to fix.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::json;
use support::*;

fn doctor(ws: &Workspace, url: &str) -> std::process::Output {
    ws.mm().args(["doctor", "-url", url]).output().unwrap()
}

fn line<'a>(out: &'a str, check: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(check))
        .unwrap_or_else(|| panic!("no {check} row:\n{out}"))
}

#[test]
fn a_good_server_passes_every_server_check() {
    let server = Server::start(vec![
        text("Hello."),
        call("c1", "add", json!({"a": 2, "b": 3})),
        text("The sum is 5."),
        text("{\"city\": \"Paris\"}"),
        text("ok"),
        text("ok"),
    ]);
    let ws = Workspace::new();
    let out = doctor(&ws, &server.url());
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{}", stderr(&out));
    for check in [
        "server",
        "model",
        "streamed reply",
        "tool call",
        "response_format",
        "prompt cache",
    ] {
        assert!(line(&o, check).contains(" ok "), "{check}:\n{o}");
    }
    assert!(line(&o, "prompt cache").contains("80%"), "{o}");
    assert!(o.contains("verdict: ready"), "{o}");
    let reqs = server.requests();
    // The tool's result went back with its call.
    let results = tool_results(&reqs[2]);
    assert_eq!(results, vec![("c1".to_string(), "5".to_string())]);
    assert_eq!(reqs[3]["response_format"]["type"], "json_schema");
    // The cache check sends the same request twice.
    assert_eq!(reqs[4]["messages"], reqs[5]["messages"]);
}

#[test]
fn a_server_without_tool_calls_fails_with_what_to_do() {
    let server = Server::start(vec![
        text("Hello."),
        text("I would add 2 and 3 to get 5."),
        Reply::Status {
            code: 400,
            body: "{\"error\":{\"message\":\"response_format is not supported\"}}".into(),
            retry_after: None,
        },
        text("ok"),
        text("ok"),
    ]);
    let ws = Workspace::new();
    let out = doctor(&ws, &server.url());
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{o}");
    assert!(line(&o, "tool call").contains("FAIL"), "{o}");
    assert!(o.contains("--jinja"), "{o}");
    assert!(line(&o, "response_format").contains("warn"), "{o}");
    assert!(o.contains("not supported"), "{o}");
    assert!(o.contains("verdict: not ready"), "{o}");
}

#[test]
fn a_server_that_does_not_stream_is_a_warning() {
    let body = json!({"choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}]}).to_string();
    let raw = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // Every request gets the same whole answer.
    let server = Server::start(
        (0..6)
            .map(|_| Reply::Response(raw.clone().into_bytes()))
            .collect(),
    );
    let ws = Workspace::new();
    let out = doctor(&ws, &server.url());
    let o = stdout(&out);
    // mm takes a whole reply (it works, without streaming): a warning.
    assert!(line(&o, "streamed reply").contains("warn"), "{o}");
    assert!(o.contains("not streamed"), "{o}");
}

#[test]
fn no_server_at_all_says_the_three_ways_to_get_one() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ws = Workspace::new();
    let out = doctor(&ws, &format!("http://127.0.0.1:{port}/v1"));
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{o}");
    assert!(line(&o, "server").contains("FAIL"), "{o}");
    for way in ["scripts/setup", "ollama", "API key"] {
        assert!(o.contains(way), "{way}: {o}");
    }
    // The checks that need no server still ran.
    let want = if fence_works() { "ok" } else { "warn" };
    let verdict = line(&o, "fence").split_whitespace().nth(1);
    assert_eq!(verdict, Some(want), "{o}");
    // The row holds one line, the fix the ways: no screen inside the table.
    assert_eq!(o.matches("scripts/setup").count(), 1, "{o}");
}

#[test]
fn a_language_without_a_server_is_named_with_how_to_get_one() {
    let ws = Workspace::new();
    ws.write("main.go", "package main\n");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = ws
        .mm()
        .env("PATH", "/usr/bin:/bin")
        .args(["doctor", "-url", &format!("http://127.0.0.1:{port}/v1")])
        .output()
        .unwrap();
    let o = stdout(&out);
    let row = line(&o, "language servers");
    assert!(
        row.contains("warn") && row.contains("none for go (1 file) here"),
        "{o}"
    );
    assert!(o.contains("fix: go: gopls on PATH"), "{o}");
}

#[test]
fn doctor_is_in_the_help_and_a_near_miss_is_pointed_at_it() {
    let ws = Workspace::new();
    let help = ws.mm().arg("-help").output().unwrap();
    assert!(stdout(&help).contains("mm doctor"), "{}", stdout(&help));
    let out = ws.mm().arg("doctr").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `mm doctor`?"),
        "{}",
        stderr(&out)
    );
    // The config row names the project's file, and what waits for trust.
    ws.write(".mm/config.yaml", "model: m\nhooks:\n  turnEnd: \"true\"\n");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = doctor(&ws, &format!("http://127.0.0.1:{port}/v1"));
    let o = stdout(&out);
    assert!(
        line(&o, "config").contains(".mm/config.yaml (not trusted: hooks left out; mm -trust)"),
        "{o}"
    );
}
