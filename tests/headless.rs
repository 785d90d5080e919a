//! The real `mm` binary, headless, against the scripted server: whole tasks
//! in temp workspaces, asserted on disk, exit codes and the JSON result.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::io::Write;

use serde_json::json;
use support::*;

#[test]
fn a_plain_answer_goes_to_stdout_and_nothing_else_does() {
    let server = Server::start(vec![text("Hello there.")]);
    let ws = Workspace::new();
    let out = ws.run(&server, "say hello", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello there.\n");
    let req = &server.requests()[0];
    assert_eq!(req["stream"], true);
    assert_eq!(req["model"], "scripted-model");
    assert_eq!(
        req["max_tokens"], 4096,
        "local servers get a completion cap"
    );
    assert_eq!(
        req["messages"][1]["content"],
        "say hello\n\n[files in the workspace]\n(the workspace is empty)",
        "the first message of a session lists the workspace"
    );
}

#[test]
fn a_whole_task_reads_edits_runs_and_answers() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "calc.py"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a + b"}),
        ),
        call("c3", "bash", json!({"command": "cat calc.py"})),
        text("Fixed add: it subtracted."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "fix the add function", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
    let r = json_result(&out);
    assert_eq!(r["outcome"], "done");
    assert_eq!(r["answer"], "Fixed add: it subtracted.");
    assert_eq!(r["written"], json!(["calc.py"]));
    assert_eq!(r["requests"], 4);
    assert_eq!(r["usage"]["prompt"], 100 + 200 * 3);
    assert!(r["session"].as_str().unwrap().len() > 15);
    let reqs = server.requests();
    let read = &tool_results(&reqs[1])[0];
    assert_eq!(read.0, "c1");
    assert!(read.1.contains("return a - b"), "{}", read.1);
    let bash = &tool_results(&reqs[3])[2];
    assert!(
        bash.1.contains("return a + b") && bash.1.contains("[exit code 0"),
        "{}",
        bash.1
    );
    assert!(
        stderr(&out).contains("mm: wrote calc.py"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn files_named_in_the_prompt_are_attached_and_count_as_read() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "a - b", "replacement": "a + b"}),
        ),
        text("done"),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "fix `calc.py`", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = server.requests()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first.starts_with(
            "fix `calc.py`\n\n[files in the workspace]\ncalc.py\n\n[calc.py as it is now, for context; it counts as read]\n"
        ),
        "{first}"
    );
    assert!(first.contains("     2\t    return a - b"), "{first}");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
}

/// A run that ends before its first request still prints its JSON
/// object, with the reason, for a script reading stdout.
#[test]
fn json_says_why_a_run_ended_before_its_first_request() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "maxTurns: [\n");
    let out = ws.mm().args(["-p", "hi", "-json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["outcome"], "error", "{v}");
    let why = v["error"].as_str().unwrap();
    assert!(
        why.contains("config error") && why.contains("config.yaml"),
        "{why}"
    );
    // Without -json, stdout stays empty.
    let out = ws.mm().args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    // What the reason quotes of the workspace reaches stdout escaped
    // (red-team round 27: C1 controls and bidi marks came through raw).
    std::fs::remove_file(ws.path().join(".mm/config.yaml")).unwrap();
    ws.write(
        ".agent/tools/x.json",
        "{\"name\": \"x\", \"description\": \"d\", \"command\": [\"true\"], \"parameters\": {\"\u{9b}2J\u{202e}\": {\"type\": \"list\"}}}",
    );
    let out = ws.mm().args(["-p", "hi", "-json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let raw = stdout(&out);
    assert!(raw.contains("\"outcome\":\"error\""), "{raw}");
    assert!(
        !raw.contains('\u{9b}') && !raw.contains('\u{202e}'),
        "{raw:?}"
    );
}

#[test]
fn a_cut_stream_runs_no_tool_and_fails() {
    let server = Server::start(vec![cut_calls(&[(
        "c1",
        "write_file",
        json!({"path": "x.txt", "content": "hi"}),
    )])]);
    let ws = Workspace::new();
    let out = ws.run(&server, "write x", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        !ws.dir.path().join("x.txt").exists(),
        "a tool ran from a cut stream"
    );
    assert!(
        stderr(&out).contains("the stream was cut before the reply was complete")
            && stderr(&out).contains("none of its tool calls ran"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_429_is_retried_before_anything_is_shown() {
    let server = Server::start(vec![
        Reply::Status {
            code: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            retry_after: Some(0),
        },
        Reply::Status {
            code: 503,
            body: "busy".into(),
            retry_after: Some(0),
        },
        text("ok"),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "hi", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_result(&out);
    assert_eq!(r["answer"], "ok");
    assert_eq!(r["requests"], 3, "every attempt counts");
    assert!(stderr(&out).contains("slow down"), "{}", stderr(&out));
}

#[test]
fn a_400_is_not_retried_and_names_the_server_message() {
    let server = Server::start(vec![Reply::Status {
        code: 400,
        body: r#"{"error":{"message":"unknown parameter: logit_bias"}}"#.into(),
        retry_after: None,
    }]);
    let ws = Workspace::new();
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown parameter: logit_bias"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 1);
}

/// llama-server's refusal of a request longer than its window.
fn overflow(requested: u64, window: u64) -> Reply {
    Reply::Status {
        code: 400,
        body: format!(
            r#"{{"error":{{"code":400,"message":"request ({requested} tokens) exceeds the available context size ({window} tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":{requested},"n_ctx":{window}}}}}"#
        ),
        retry_after: None,
    }
}

#[test]
fn an_overflow_leaves_old_outputs_out_and_asks_again() {
    // Two big reads, then the server says the request is too long: mm
    // sends it again with the older output left out, the newer one kept.
    let ws = Workspace::new();
    ws.write(
        "a.txt",
        &"alpha line of the first file, a long one to fill\n".repeat(450),
    );
    ws.write("b.txt", &"bravo line of the second file\n".repeat(100));
    // Compaction off: what is left out when it is not there, or refused.
    // The window mm is told of holds each read whole (outputs are cut to
    // a quarter of it); the server then says it is smaller.
    ws.write("agent.yaml", "compactAt: 0\ncontextWindow: 32768\n");
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        call("c2", "read_file", json!({"path": "b.txt"})),
        // About 27 KB of body at 3.6 bytes a token, against a 6k window.
        overflow(7500, 6000),
        text("Both files are lists of lines."),
    ]);
    let out = ws.run(
        &server,
        "what are the two files here? read them",
        &["-json", "agent.yaml"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_result(&out);
    assert_eq!(r["answer"], "Both files are lists of lines.", "{r}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let sent = tool_results(&reqs[3]);
    assert!(
        sent[0]
            .1
            .starts_with("[output left out to fit the context window"),
        "{sent:?}"
    );
    assert!(sent[1].1.contains("bravo line"), "the newest output stays");
    assert!(
        stderr(&out).contains("outgrew the context window (7500 tokens for a window of 6000)"),
        "{}",
        stderr(&out)
    );
    // The log keeps the whole output.
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    assert!(log.contains("alpha line of the first file"));
}

#[test]
fn an_overflow_with_nothing_left_to_drop_stops_the_turn_and_says_what_to_do() {
    let ws = Workspace::new();
    ws.write(
        "a.txt",
        &"alpha line of the first file, a long one to fill\n".repeat(450),
    );
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        overflow(30000, 4096),
        overflow(30000, 4096),
    ]);
    ws.write("agent.yaml", "compactAt: 0\n");
    let out = ws.run(&server, "read the file here", &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("does not fit the model's context window (30000 tokens for a window of 4096)"),
        "{err}"
    );
    assert!(err.contains("/new") && err.contains("/rewind"), "{err}");
    // The first overflow left the one output out; the second had nothing
    // more to leave out, so nothing more was sent.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(tool_results(&reqs[2])[0].1.starts_with("[output left out"));
}

#[test]
fn stalls_end_with_a_clear_error() {
    let ws = Workspace::new();
    ws.write("agent.yaml", "firstTokenTimeout: 1s\nwatchdogTimeout: 1s\n");
    let server = Server::start(vec![Reply::StallAfter(vec![], 5)]);
    let out = ws.run(&server, "hi", &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no first token after 1s"),
        "{}",
        stderr(&out)
    );

    let first = json!({"choices":[{"index":0,"delta":{"content":"Hel"}}]}).to_string();
    let server = Server::start(vec![Reply::StallAfter(vec![first], 5)]);
    let out = ws.run(&server, "hi", &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("stalled"), "{}", stderr(&out));
}

#[test]
fn reasoning_keeps_the_watchdog_alive() {
    let ws = Workspace::new();
    // 3.2 s of reasoning in 400 ms steps against a 2 s watchdog: only the
    // steps keep it alive, with 1.6 s to spare for each on a loaded machine.
    ws.write("agent.yaml", "watchdogTimeout: 2s\n");
    let think =
        |t: &str| json!({"choices":[{"index":0,"delta":{"reasoning_content":t}}]}).to_string();
    let mut events: Vec<(u64, String)> = (0..8)
        .map(|i| (400, think(&format!("step {i} "))))
        .collect();
    events.push((
        0,
        json!({"choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]})
            .to_string(),
    ));
    let server = Server::start(vec![Reply::Sse(events)]);
    let out = ws.run(&server, "think", &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
}

#[test]
fn calls_cut_by_the_token_limit_are_answered_not_executed() {
    let server = Server::start(vec![
        length_calls(&[(
            "c1",
            "write_file",
            json!({"path": "big.txt", "content": "x"}),
        )]),
        text("The file was too big to write in one reply."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "write a big file", &["-harness-off", "stall"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!ws.dir.path().join("big.txt").exists());
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0]
            .1
            .starts_with("not executed: your reply was cut by the token limit"),
        "{results:?}"
    );
}

#[test]
fn a_final_answer_cut_by_the_limit_exits_4() {
    let server = Server::start(vec![length_text("The answer is")]);
    let ws = Workspace::new();
    let out = ws.run(&server, "explain", &["-json"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(json_result(&out)["outcome"], "truncated");
}

#[test]
fn the_round_budget_ends_with_one_tool_less_report_and_exit_3() {
    let server = Server::start(vec![
        call("c1", "list_dir", json!({})),
        call("c2", "glob", json!({"pattern": "*.rs"})),
        text("I listed the folder; nothing else was done."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "explore", &["-max-rounds", "2", "-json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = json_result(&out);
    assert_eq!(r["outcome"], "budget");
    assert_eq!(r["answer"], "I listed the folder; nothing else was done.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[2]["tools"], reqs[1]["tools"],
        "the final report request keeps the cached prefix: the same tools"
    );
    let ask = reqs[2]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("no more tool calls"), "{ask}");
    assert!(ask.contains("The user's request: \"explore\""), "{ask}");
}

/// The README's default: 40 tool rounds a turn, then the tool-less report.
#[test]
fn the_default_round_budget_is_forty() {
    let mut replies: Vec<Reply> = (0..45)
        .map(|i| {
            call(
                &format!("c{i}"),
                "glob",
                json!({"pattern": format!("f{i}*")}),
            )
        })
        .collect();
    replies.insert(40, text("Forty rounds of looking."));
    let server = Server::start(replies);
    let ws = Workspace::new();
    let out = ws.run(&server, "explore", &["-no-harness", "-json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(json_result(&out)["answer"], "Forty rounds of looking.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 41);
    assert!(reqs[40].get("tools").is_none());
}

#[test]
fn without_the_harness_the_final_report_offers_no_tools() {
    let server = Server::start(vec![
        call("c1", "list_dir", json!({})),
        call("c2", "glob", json!({"pattern": "*.rs"})),
        text("I listed the folder."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "explore", &["-max-rounds", "2", "-no-harness"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].get("tools").is_none());
}

#[test]
fn the_request_budget_counts_every_attempt() {
    let server = Server::start(vec![call("c1", "list_dir", json!({})), text("never sent")]);
    let ws = Workspace::new();
    let out = ws.run(&server, "explore", &["-max-requests", "1", "-json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(json_result(&out)["requests"], 1);
}

#[test]
fn a_batch_with_one_bad_call_runs_none_of_it() {
    let server = Server::start(vec![
        calls(&[
            ("c1", "write_file", json!({"path": "a.txt", "content": "a"})),
            ("c2", "write_file", json!({"path": "b.txt"})),
        ]),
        text("ok"),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "write two files", &["-harness-off", "stall"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!ws.dir.path().join("a.txt").exists(), "the valid call ran");
    assert!(
        !ws.dir.path().join("b.txt").exists(),
        "a missing content made an empty file"
    );
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 2, "every call is answered");
    assert!(
        results[0]
            .1
            .starts_with("not executed: another call in this batch was invalid")
    );
    assert!(
        results[1].1.contains("missing required argument `content`"),
        "{}",
        results[1].1
    );
}

#[test]
fn unknown_tools_and_bad_json_are_answered_to_the_model() {
    let server = Server::start(vec![
        Reply::Sse(vec![
            (0, json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"delete_everything","arguments":"{}"}}]}}]}).to_string()),
            (0, json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"read_file","arguments":"{\"path\": "}}]}}]}).to_string()),
            (0, json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string()),
        ]),
        text("sorry"),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "go", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0]
            .1
            .contains("there is no tool named delete_everything"),
        "{results:?}"
    );
    assert!(results[1].1.contains("not valid JSON"), "{results:?}");
}

#[test]
fn a_failing_call_repeated_right_after_is_not_run_again() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "missing.txt"})),
        call("c2", "read_file", json!({"path": "missing.txt"})),
        text("The file does not exist."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "read missing.txt", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[2]);
    assert!(results[0].1.contains("no such file"), "{results:?}");
    assert!(
        results[1]
            .1
            .starts_with("not run again: this exact call failed just before"),
        "{results:?}"
    );
}

#[test]
fn a_model_that_loops_is_stopped_with_a_report() {
    let mut script = Vec::new();
    for i in 0..4 {
        script.push(call(&format!("c{i}"), "list_dir", json!({"path": "."})));
    }
    script.push(text("I kept listing the folder."));
    script.push(text("never asked for"));
    let server = Server::start(script);
    let ws = Workspace::new();
    ws.write("a.txt", "a");
    let out = ws.run(&server, "look around", &["-json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = json_result(&out);
    assert!(
        r["error"].as_str().unwrap().starts_with("stopped a loop"),
        "{r}"
    );
    assert_eq!(r["answer"], "I kept listing the folder.");
    assert_eq!(
        server.remaining(),
        1,
        "mm stopped before the script ran out"
    );
    let warned = server.requests()[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        warned["content"]
            .as_str()
            .unwrap()
            .contains("repeating the same tool calls"),
        "{warned}"
    );
}

#[test]
fn a_claimed_change_without_a_write_is_questioned() {
    let server = Server::start(vec![
        text("I fixed the bug."),
        text("Nothing was changed: I only looked."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "fix it", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Nothing was changed: I only looked.\n");
    let second = &server.requests()[1]["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    let said = last["content"].as_str().unwrap();
    assert!(said.contains("nothing was written in this turn"), "{last}");
    assert!(said.contains("The user's request: \"fix it\""), "{last}");
}

#[test]
fn headless_refuses_commands_that_need_approval_and_says_so_once() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "rm keep.txt"})),
        call("c2", "bash", json!({"command": "touch other.txt"})),
        text("Could not delete it."),
    ]);
    let ws = Workspace::new();
    ws.write("keep.txt", "precious");
    let out = ws.run(&server, "delete keep.txt", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("keep.txt"), "precious");
    assert!(!ws.dir.path().join("other.txt").exists());
    let err = stderr(&out);
    assert_eq!(err.matches("cannot ask for approval").count(), 1, "{err}");
    let results = tool_results(&server.requests()[2]);
    assert!(
        results[0]
            .1
            .starts_with("not run: this call needs the user's approval"),
        "{results:?}"
    );
}

/// The user's `bashTimeout` is a ceiling: a model asking for more time
/// still gets the user's limit.
#[test]
fn a_models_timeout_never_outlasts_the_users_limit() {
    let server = Server::start(vec![
        call(
            "c1",
            "bash",
            json!({"command": "sleep 30; echo late > late.txt", "timeout": 600}),
        ),
        text("done"),
    ]);
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "bashTimeout: 1s\n");
    let started = std::time::Instant::now();
    let out = ws.run(&server, "wait", &["-yolo", "-trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(result.contains("killed after 1s timeout"), "{result}");
    assert!(!ws.dir.path().join("late.txt").exists());
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

#[test]
fn yolo_runs_them() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "rm gone.txt"})),
        text("deleted"),
    ]);
    let ws = Workspace::new();
    ws.write("gone.txt", "x");
    let out = ws.run(&server, "delete gone.txt", &["-yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!ws.dir.path().join("gone.txt").exists());
}

#[test]
fn read_only_mode_refuses_writes() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "new.txt", "content": "x"}),
        ),
        text("could not"),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "write", &["-sandbox", "read-only"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!ws.dir.path().join("new.txt").exists());
    // The write tools are not offered at all.
    let offered: Vec<String> = server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|n| n == "write_file" || n == "edit_file"),
        "{offered:?}"
    );
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .contains("read-only")
    );
}

#[test]
fn a_tool_call_written_as_text_is_recovered() {
    // As Qwen2.5-Coder-1.5B-Instruct writes it with its stock chat template.
    let reply = "I'll read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```";
    let server = Server::start(vec![text(reply), text("It says hello.")]);
    let ws = Workspace::new();
    ws.write("notes.txt", "hello\n");
    let out = ws.run(&server, "what does the notes file say", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It says hello.\n");
    assert!(
        stderr(&out).contains("wrote a read_file call as text"),
        "{}",
        stderr(&out)
    );
    let second = &server.requests()[1];
    let assistant = &second["messages"][2];
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    assert!(tool_results(second)[0].1.contains("hello"));
}

#[test]
fn recorded_streams_from_real_servers_drive_a_turn() {
    let server = Server::start(vec![
        fixture("llama-server-tool-call.sse"),
        fixture("llama-server-text.sse"),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", "remember the milk\n");
    let out = ws.run(&server, "Read the notes file", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_result(&out);
    assert!(r["answer"].as_str().unwrap().contains("mutex"), "{r}");
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .contains("remember the milk")
    );
    assert!(r["usage"]["cached"].as_u64().unwrap() > 0, "{r}");

    let server = Server::start(vec![
        fixture("openrouter-tool-call.sse"),
        fixture("deepseek-reasoning.sse"),
    ]);
    let out = ws.run(&server, "read the notes file", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_result(&out)["answer"], "2 + 2 = 4");
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .contains("remember the milk")
    );

    let server = Server::start(vec![
        fixture("double-encoded-arguments.sse"),
        fixture("openai-chat.sse"),
    ]);
    let out = ws.run(&server, "read the notes file", &["-json"]);
    assert_eq!(json_result(&out)["answer"], "The answer is 4.");
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .contains("remember the milk")
    );

    let server = Server::start(vec![fixture("llama-server-length.sse")]);
    let out = ws.run(&server, "count", &[]);
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn the_first_request_stays_under_4_kib_and_the_prefix_is_byte_stable() {
    let server = Server::start(vec![call("c1", "list_dir", json!({})), text("done")]);
    let ws = Workspace::new();
    let prompt = "list the folder";
    let out = ws.run(&server, prompt, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let first = serde_json::to_vec(&reqs[0]).unwrap();
    // The README's figures: about 4 KiB, and 1.7 KB more when a language
    // server is installed and its four tools are offered.
    let lsp_tools = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "lsp_definition");
    let limit = if lsp_tools { 6 * 1024 } else { 4 * 1024 };
    assert!(
        first.len() - prompt.len() <= limit,
        "first request is {} bytes (language-server tools: {lsp_tools})",
        first.len()
    );
    // Everything the first request sent is sent again, unchanged, first.
    assert_eq!(reqs[0]["tools"], reqs[1]["tools"]);
    let m0 = reqs[0]["messages"].as_array().unwrap();
    let m1 = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(m0[..], m1[..m0.len()]);
}

#[test]
fn the_session_log_is_private_ignored_and_shown_back() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It holds one word."),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "word\n");
    let out = ws.run(&server, "what is in a.txt?", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let logs = ws.sessions();
    assert_eq!(logs.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&logs[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(ws.read(".mm/.gitignore").lines().last(), Some("*"));

    let list = ws.mm().arg("-sessions").output().unwrap();
    assert!(
        stdout(&list).contains("what is in a.txt?"),
        "{}",
        stdout(&list)
    );
    assert!(stdout(&list).contains("4 messages"), "{}", stdout(&list));

    let show = ws.mm().args(["-show", "last"]).output().unwrap();
    let text = stdout(&show);
    assert!(text.contains("› what is in a.txt?"), "{text}");
    assert!(text.contains("▸ read_file a.txt"), "{text}");
    assert!(text.contains("It holds one word."), "{text}");
    assert!(text.contains("mm: no files written"), "{text}");
}

#[test]
fn a_log_that_cannot_be_written_fails_before_the_model_is_called() {
    let server = Server::start(vec![text("never")]);
    let ws = Workspace::new();
    std::fs::write(ws.dir.path().join(".mm"), "not a directory").unwrap();
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        server.requests().is_empty(),
        "the model was called without a log"
    );
    assert!(stderr(&out).contains("session log"), "{}", stderr(&out));
}

#[test]
fn the_jail_holds_against_the_model() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside").unwrap();
    let abs = outside
        .path()
        .join("secret.txt")
        .to_string_lossy()
        .into_owned();
    let server = Server::start(vec![
        calls(&[
            ("c1", "read_file", json!({"path": "../secret.txt"})),
            ("c2", "read_file", json!({"path": abs})),
            ("c3", "read_file", json!({"path": "link/secret.txt"})),
            ("c4", "read_file", json!({"path": ".env"})),
        ]),
        calls(&[
            (
                "c5",
                "write_file",
                json!({"path": "link/new.txt", "content": "x"}),
            ),
            (
                "c6",
                "write_file",
                json!({"path": "../escape.txt", "content": "x"}),
            ),
            (
                "c7",
                "edit_file",
                json!({"path": ".git/config", "old_string": "a", "replacement": "b"}),
            ),
        ]),
        text("I could not reach those files."),
    ]);
    let ws = Workspace::new();
    ws.write(".env", "API_KEY=hunter2\n");
    std::os::unix::fs::symlink(outside.path(), ws.dir.path().join("link")).unwrap();
    let out = ws.run(&server, "read the secrets", &["-yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    for (id, text) in tool_results(&reqs[1])
        .into_iter()
        .chain(tool_results(&reqs[2]))
    {
        assert!(
            !text.contains("outside") || text.contains("outside the workspace"),
            "{id}: {text}"
        );
        assert!(!text.contains("hunter2"), "{id}: {text}");
        assert!(
            text.contains("refused")
                || text.contains("leaves the workspace")
                || text.contains("outside the workspace"),
            "{id}: {text}"
        );
    }
    assert!(!outside.path().join("new.txt").exists());
    assert!(!ws.dir.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn ctrl_c_cancels_a_headless_turn_with_130() {
    let first = json!({"choices":[{"index":0,"delta":{"content":"Working"}}]}).to_string();
    let server = Server::start(vec![Reply::StallAfter(vec![first], 30)]);
    let ws = Workspace::new();
    let child = ws
        .mm()
        .args(["-p", "wait", "-url", &server.url(), "-json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while server.requests().is_empty() {
        assert!(start.elapsed().as_secs() < 20);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    nix_kill(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(json_result(&out)["outcome"], "cancelled");
}

fn nix_kill(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn the_fallback_is_used_when_the_base_url_does_not_answer() {
    let server = Server::start(vec![text("from the fallback")]);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        port
    };
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        &format!(
            "provider: llmman\nmodel: m\nbaseUrl: http://127.0.0.1:{closed}/v1\nfallback: {}\n",
            server.url()
        ),
    );
    let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the fallback\n");
    assert!(
        stderr(&out).contains("using the fallback"),
        "{}",
        stderr(&out)
    );
}

/// A hostile or broken server: none of what follows may panic, hang,
/// grow without bound, or be retried when asking again would get the same.
mod hostile_server {
    use super::*;

    fn response(head: &str, body: &[u8]) -> Reply {
        let mut bytes = format!(
            "HTTP/1.1 {head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(body);
        Reply::Response(bytes)
    }

    #[test]
    fn a_reply_past_16_mib_is_cut_and_runs_nothing() {
        let piece = format!(
            "data: {}\n\n",
            json!({"choices":[{"index":0,"delta":{"content": "x".repeat(64 * 1024)}}]})
        );
        let mut body = String::new();
        while body.len() < 20 * 1024 * 1024 {
            body.push_str(&piece);
        }
        let server = Server::start(vec![Reply::Raw(body)]);
        let ws = Workspace::new();
        let started = std::time::Instant::now();
        // The client's own limit, without the harness's runaway watch
        // (which stops this repeated text sooner: tests/harness.rs).
        let o = ws.run(&server, "hi", &["-no-harness"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("more than 16 MiB"), "{}", stderr(&o));
        // Not a speed target: only that the cut ends the run (a loaded
        // 2-core machine took over 30 s for the 16 MiB).
        assert!(started.elapsed() < std::time::Duration::from_secs(180));
        assert_eq!(server.requests().len(), 1, "not retried");
    }

    #[test]
    fn a_flood_of_tool_calls_runs_none_of_them() {
        let mut body = String::new();
        for i in 0..20_000 {
            body.push_str(&format!(
                "data: {}\n\n",
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("c{i}"),"type":"function","function":{"name":"bash","arguments":"{\"command\":\"touch pwned\"}"}}]}}]})
            ));
        }
        body.push_str("data: [DONE]\n\n");
        let server = Server::start(vec![Reply::Raw(body)]);
        let ws = Workspace::new();
        let started = std::time::Instant::now();
        let o = ws.run(&server, "hi", &["-yolo", "-no-harness"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("more than 64 tool calls"),
            "{}",
            stderr(&o)
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(!ws.dir.path().join("pwned").exists());
    }

    #[test]
    fn a_json_200_is_an_answer_or_an_error_never_a_retry() {
        let whole = json!({"choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}]});
        let server = Server::start(vec![response(
            "200 OK\r\nContent-Type: application/json",
            whole.to_string().as_bytes(),
        )]);
        let ws = Workspace::new();
        let o = ws.run(&server, "hi", &[]);
        assert_eq!(stdout(&o).trim(), "whole answer", "{}", stderr(&o));

        let err = json!({"error":{"message":"model not loaded"}});
        let server = Server::start(vec![response(
            "200 OK\r\nContent-Type: application/json",
            err.to_string().as_bytes(),
        )]);
        let o = ws.run(&server, "hi", &[]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("model not loaded"), "{}", stderr(&o));
        assert_eq!(server.requests().len(), 1, "not retried");
    }

    #[test]
    fn bytes_that_are_not_utf8_fail_once() {
        let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
        body.extend_from_slice(&[0xff, 0xfe, 0xfd]);
        body.extend_from_slice(b"\"}}]}\n\n");
        let server = Server::start(vec![response(
            "200 OK\r\nContent-Type: text/event-stream",
            &body,
        )]);
        let ws = Workspace::new();
        let o = ws.run(&server, "hi", &[]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(server.requests().len(), 1, "not retried");
    }

    #[test]
    fn a_retry_after_of_any_size_is_no_panic() {
        // Too long a wait is given up at once, said; one that is not a
        // number of seconds is a short back-off and a second try.
        for (value, waits) in [
            ("1e30", false),
            ("inf", false),
            ("99999999999999999999999", false),
            ("-5", true),
            ("soon", true),
        ] {
            let server = Server::start(vec![
                response(
                    &format!(
                        "429 Too Many\r\nRetry-After: {value}\r\nContent-Type: application/json"
                    ),
                    b"{\"error\":{\"message\":\"slow down\"}}",
                ),
                text("after the wait"),
            ]);
            let ws = Workspace::new();
            let o = ws.run(&server, "hi", &[]);
            assert!(!stderr(&o).contains("panicked"), "{value}: {}", stderr(&o));
            if waits {
                assert_eq!(o.status.code(), Some(0), "{value}: {}", stderr(&o));
                assert_eq!(server.requests().len(), 2, "{value}");
                assert!(stdout(&o).contains("after the wait"), "{value}");
            } else {
                assert_eq!(o.status.code(), Some(1), "{value}: {}", stderr(&o));
                assert_eq!(server.requests().len(), 1, "{value}");
                assert!(
                    stderr(&o).contains("asks to wait"),
                    "{value}: {}",
                    stderr(&o)
                );
            }
        }
    }

    #[test]
    fn a_huge_watchdog_in_an_agent_file_is_a_config_error() {
        let ws = Workspace::new();
        ws.write("agent.yaml", "watchdogTimeout: 1e30h\n");
        let server = Server::start(vec![]);
        let o = ws.run(&server, "hi", &["agent.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("agent.yaml"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }

    #[test]
    fn planted_names_and_files_print_no_escape_bytes() {
        let ws = Workspace::new();
        ws.write(".mm/sessions/2099\u{1b}]0;T\u{7}.jsonl", "{}\n");
        ws.write("AGENTS.md", "Be nice.\u{1b}]0;PWNED-TITLE\u{7}\u{1b}[2J\n");
        for args in [&["-sessions"][..], &["-show-prompt"][..]] {
            let o = ws.mm().args(args).output().unwrap();
            assert!(
                !o.stdout.contains(&0x1b) && !o.stderr.contains(&0x1b),
                "{args:?}: {}{}",
                stdout(&o),
                stderr(&o)
            );
        }
    }

    #[test]
    fn json_output_carries_no_terminal_controls_but_decodes_to_the_same_text() {
        let hostile = "done\u{9b}2J\u{202e}txt.exe\u{7f}";
        let server = Server::start(vec![text(hostile)]);
        let ws = Workspace::new();
        ws.write("AGENTS.md", "Be nice.\u{9b}31m\u{2066}\n");
        let raw = |b: &[u8]| {
            let t = String::from_utf8_lossy(b);
            t.contains('\u{9b}')
                || t.contains('\u{202e}')
                || t.contains('\u{2066}')
                || t.contains('\u{7f}')
        };
        let o = ws.run(&server, "go", &["-json"]);
        assert!(!raw(&o.stdout), "{}", stdout(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["answer"], hostile);
        let o = ws.mm().args(["-show-prompt", "-json"]).output().unwrap();
        assert!(!raw(&o.stdout), "{}", stdout(&o));
        assert!(stdout(&o).contains("\\u009b31m"), "{}", stdout(&o));
    }
}

#[test]
fn an_overflow_in_a_resumed_session_leaves_whole_early_turns_out() {
    let ws = Workspace::new();
    ws.write(
        "a.txt",
        &"alpha line of the first file, a long one to fill\n".repeat(450),
    );
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("A list of lines."),
        // Far over: the old output alone is not enough to leave out.
        overflow(40000, 8192),
        text("Hi."),
    ]);
    ws.write("agent.yaml", "compactAt: 0\n");
    let first = ws.run(&server, "what is in the file here?", &["agent.yaml"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let out = ws.run(&server, "Say hi.", &["-resume", "last", "agent.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi.\n");
    assert!(
        stderr(&out).contains("left out 1 old tool output and turn 1"),
        "{}",
        stderr(&out)
    );
    let reqs = server.requests();
    let msgs = reqs[3]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "the system prompt and this turn: {msgs:?}");
    assert_eq!(msgs[0]["role"], "system");
    assert!(msgs[1]["content"].as_str().unwrap().starts_with("Say hi."));
}

#[test]
fn a_reply_the_server_generates_but_never_streams_is_stopped_and_asked_again() {
    // The server starts a tool call, then goes quiet while (its /slots
    // says) it generates 800 tokens a second that never reach mm.
    let start = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.txt\""}}]}}]}).to_string();
    let server = Server::start(vec![
        Reply::StallAfter(vec![start], 30),
        text("Nothing to do."),
    ]);
    server.serve_slots(800);
    let ws = Workspace::new();
    let began = std::time::Instant::now();
    let out = ws.run(&server, "look at a.txt", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(began.elapsed().as_secs() < 15, "not stopped early");
    assert_eq!(json_result(&out)["answer"], "Nothing to do.");
    let err = stderr(&out);
    assert!(
        err.contains("the reply ran away (the server generated")
            && err.contains("streamed 2 of them"),
        "{err}"
    );
    // The log says what the stopped request generated.
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    assert!(
        log.contains(r#""type":"request""#) && log.contains(r#""stopped":"the server generated"#),
        "{log}"
    );
}

#[test]
fn tokens_another_client_makes_the_server_generate_are_not_held_against_this_reply() {
    // One slot busy for someone else (its own prompt size and token cap)
    // while this request waits, quiet for 5 s: the runaway guard counts
    // this request's tokens only, and the wait is said as the server's.
    let Reply::Sse(mut events) = text("All fine.") else {
        unreachable!()
    };
    events[0].0 = 5000;
    let server = Server::start(vec![Reply::Sse(events)]);
    server.serve_other_clients_slot(800);
    let ws = Workspace::new();
    let out = ws.run(&server, "say something", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_result(&out)["answer"], "All fine.");
    let err = stderr(&out);
    assert!(!err.contains("ran away"), "{err}");
}

#[test]
fn a_connection_closed_before_any_answer_is_sent_again() {
    // What llama-server does to a kept-alive connection idle for 5 s: the
    // trial read "cannot reach the model server … connection closed".
    let server = Server::start(vec![Reply::Close, text("Hi.")]);
    let ws = Workspace::new();
    let out = ws.run(&server, "say hi", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi.\n");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn the_prompt_from_stdin_with_p_dash() {
    let server = Server::start(vec![text("Seen.")]);
    let ws = Workspace::new();
    let out = output_with_stdin(
        ws.mm()
            .args(["-p", "-", "-url", &server.url(), "-m", "chosen-model"]),
        b"explain this diff:\n+a line\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Seen.\n");
    let req = &server.requests()[0];
    assert_eq!(req["model"], "chosen-model");
    let first = req["messages"][1]["content"].as_str().unwrap();
    assert!(first.starts_with("explain this diff:\n+a line"), "{first}");
    // An empty stdin is a usage error, before any request.
    let empty = Server::start(vec![]);
    let out = ws.run(&empty, "-", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("-p -: stdin held no prompt"),
        "{}",
        stderr(&out)
    );
    assert!(empty.requests().is_empty());
    // Over 1 MiB is refused as a whole, before any request.
    let out = output_with_stdin(
        ws.mm().args(["-p", "-", "-url", &empty.url()]),
        &vec![b'x'; 1024 * 1024 + 1],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the prompt on stdin is over 1 MiB"),
        "{}",
        stderr(&out)
    );
    assert!(empty.requests().is_empty());
}

#[test]
fn a_pipe_that_stays_open_is_said_and_then_read_to_its_end() {
    let server = Server::start(vec![text("Read.")]);
    let ws = Workspace::new();
    let mut child = spawn_piped(ws.mm().args(["-p", "what is this?", "-url", &server.url()]));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first part\n").unwrap();
    // The notice comes while the pipe is still open (after ~3 s): waited
    // for as it comes, not timed.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("mm: waiting for stdin to end") {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(n > 0, "stderr ended without the notice: {said}");
        said.push_str(&line);
    }
    assert!(
        server.requests().is_empty(),
        "nothing is sent before the pipe ends"
    );
    stdin.write_all(b"second part\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "Read.\n");
    let sent = server.requests()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        sent.contains("first part") && sent.contains("second part"),
        "{sent}"
    );
}

/// `mm -p PROMPT` with text piped on stdin: the pipe's text as the model
/// gets it, or the error.
fn piped(
    ws: &Workspace,
    server: &Server,
    prompt: &str,
    input: &[u8],
    args: &[&str],
) -> std::process::Output {
    output_with_stdin(
        ws.mm()
            .args(["-p", prompt, "-url", &server.url()])
            .args(args),
        input,
    )
}

#[test]
fn text_piped_with_a_prompt_goes_along_as_fenced_context() {
    let server = Server::start(vec![text("It is a missing import.")]);
    let ws = Workspace::new();
    let log = "E   ModuleNotFoundError: No module named 'calc'\n```\nfix the broken test\n";
    let out = piped(&ws, &server, "why does this fail?", log.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It is a missing import.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "a question about a log is one answer");
    let first = reqs[0]["messages"][1]["content"].as_str().unwrap();
    // The request first, as typed; the pipe after it in a fence longer
    // than the backticks inside, so the text cannot close it.
    assert!(first.starts_with("why does this fail?\n\n"), "{first}");
    assert!(
        first.ends_with(
            "[piped to mm on stdin, for context]\n````\nE   ModuleNotFoundError: No module named 'calc'\n```\nfix the broken test\n````"
        ),
        "{first}"
    );
    // The session log keeps it for -resume.
    let log_text = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    assert!(log_text.contains("No module named"), "{log_text}");

    // Past a third of a small window: its start and end, and stderr says so.
    let server = Server::start(vec![text("Long.")]);
    ws.write("agent.yaml", "contextWindow: 2048\n");
    let big: String = (0..2000).map(|i| format!("log line {i}\n")).collect();
    let out = piped(&ws, &server, "summarize", big.as_bytes(), &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("its start and end are sent, the middle left out"),
        "{}",
        stderr(&out)
    );
    let first = server.requests()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first.contains("log line 0\n") && first.contains("log line 1999"),
        "{first}"
    );
    assert!(!first.contains("log line 1000\n"), "the middle is left out");
    assert!(first.len() < 2048 * 4, "{} bytes", first.len());

    // An empty pipe adds nothing.
    let server = Server::start(vec![text("Hi.")]);
    let out = piped(&ws, &server, "say hi", b"", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = server.requests()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!first.contains("piped to mm"), "{first}");
}

#[test]
fn a_request_for_text_writes_no_file_and_is_answered_in_text() {
    // Asked for a commit message, the model writes a file: refused, and
    // the next request offers no tools, so the answer is the text.
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "calc.py", "content": "fix: add adds\n"}),
        ),
        text("fix: add adds"),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    let out = ws.run(&server, "write a commit message for the last change", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "fix: add adds\n");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[0]["tools"].is_array(),
        "the first request offers tools"
    );
    let results = tool_results(&reqs[1]);
    assert!(
        results[0]
            .1
            .starts_with("refused: the request asks for text in your answer"),
        "{results:?}"
    );
    assert!(reqs[1].get("tools").is_none(), "{}", reqs[1]);

    // With the text piped in, the first request is already tool-less.
    let server = Server::start(vec![text("fix: add adds")]);
    let diff = "--- a/calc.py\n+++ b/calc.py\n-    return a - b\n+    return a + b\n";
    let out = piped(
        &ws,
        &server,
        "write a one-line commit message for this",
        diff.as_bytes(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "fix: add adds\n");
    assert!(server.requests()[0].get("tools").is_none());

    // A change asked of piped text keeps its tools.
    let server = Server::start(vec![text("ok")]);
    let out = piped(
        &ws,
        &server,
        "fix the bug this log shows",
        b"Traceback: calc.py line 2\n",
        &["-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(server.requests()[0]["tools"].is_array());
}

#[test]
fn json_stream_prints_each_event_as_a_line_then_the_result() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It says hi."),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "hi\n");
    // The file is not named: a named one is attached, and its read comes
    // back as one line.
    let out = ws.run(&server, "what does the text file say?", &["-json-stream"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session_started"), "{types:?}");
    let pos = |t: &str| {
        types
            .iter()
            .position(|x| *x == t)
            .unwrap_or_else(|| panic!("no {t}: {types:?}"))
    };
    assert!(pos("turn_started") < pos("tool_call_running"));
    assert!(pos("tool_call_running") < pos("tool_call_finished"));
    assert!(pos("tool_call_finished") < pos("turn_finished"));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["outcome"], "done");
    assert_eq!(last["answer"], "It says hi.");
    let finished = &lines[pos("tool_call_finished")];
    assert!(
        finished["output"].as_str().unwrap().contains("hi"),
        "{finished}"
    );
}

#[test]
fn quiet_prints_the_answer_and_no_tool_cards() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It says hi."),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "hi\n");
    let out = ws.run(&server, "what does a.txt say?", &["-quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It says hi.\n");
    assert!(!stderr(&out).contains("read_file"), "{}", stderr(&out));
    let loud = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It says hi."),
    ]);
    let out = ws.run(&loud, "what does a.txt say?", &[]);
    assert!(stderr(&out).contains("read_file"), "{}", stderr(&out));
    // Without -p it is a usage error.
    let out = ws.mm().args(["-quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn completions_for_three_shells_and_a_man_page() {
    let ws = Workspace::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = ws.mm().args(["-completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains("json-stream"), "{shell}: {script}");
        assert!(script.contains("completions"), "{shell}");
    }
    // bash reads the script and completes a flag with it.
    let out = ws.mm().args(["-completions", "bash"]).output().unwrap();
    std::fs::write(ws.dir.path().join("mm.bash"), &out.stdout).unwrap();
    // What bash offers for `mm WORDS…` with the cursor after the last.
    let complete = |words: &[&str]| {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let line = format!("mm {}", words.join(" "));
        let script = format!(
            "source ./mm.bash && COMP_WORDS=(mm {}) COMP_CWORD={} COMP_LINE='{line}' COMP_POINT={} && _mm mm '{}' '{}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            quoted.join(" "),
            words.len(),
            line.len(),
            words.last().unwrap(),
            if words.len() > 1 {
                words[words.len() - 2]
            } else {
                "mm"
            },
        );
        let check = std::process::Command::new("bash")
            .args(["-c", &script])
            .current_dir(ws.dir.path())
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        String::from_utf8_lossy(&check.stdout).trim().to_string()
    };
    assert_eq!(complete(&["--json-s"]), "--json-stream");
    // A flag's values, not file names.
    assert_eq!(
        complete(&["--sandbox", ""]),
        "read-only\nworkspace\nauto\nfull"
    );
    let out = ws.mm().args(["-completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let man = ws.mm().args(["-man"]).output().unwrap();
    assert_eq!(man.status.code(), Some(0));
    let page = stdout(&man);
    assert!(page.contains(".TH mm 1"), "{page}");
    assert!(page.contains("json\\-stream"), "{page}");
    assert!(page.contains("mm doctor"), "{page}");
    assert!(
        page.contains(".SH ENVIRONMENT\n.TP\n\\fBMM_BASE_URL\\fR\n")
            && page.contains(".SH FILES\n"),
        "{page}"
    );
}

/// A FIFO named `.gitignore` holds git's walk (it waits for a writer):
/// mm lets it go, says which file it was, and keeps taking checkpoints, so
/// what a later command deletes is still in one. And a command that makes
/// a thousand files is checkpointed with them.
#[test]
fn a_fifo_where_git_looks_turns_no_checkpoint_off() {
    let ws = Workspace::new();
    let p = ws.path();
    ws.write("a.txt", "a\n");
    ws.write("keep.txt", "keep me\n");
    git(&p, &["init", "-q"]);
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-qm", "init"]);
    std::fs::create_dir_all(p.join("sub")).unwrap();
    nix::unistd::mkfifo(&p.join("sub/.gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let make = "mkdir -p gen && for i in $(seq 1 1000); do echo $i > gen/f$i.txt; done";
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": make})),
        call("c2", "bash", json!({"command": "rm keep.txt"})),
        text("done"),
    ]);
    let run = ws.run(&server, "tidy up", &["-yolo"]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(!err.contains("off for this session"), "{err}");
    assert!(err.contains("sub/.gitignore"), "the FIFO is named: {err}");
    assert!(!p.join("keep.txt").exists());
    // A checkpoint holds keep.txt, and one holds the thousand files.
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    let ids: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "checkpoint")
        .filter_map(|v| v["checkpoint"]["id"].as_str().map(str::to_string))
        .collect();
    let holds = |id: &str, path: &str| {
        std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{id}:{path}")])
            .current_dir(&p)
            .status()
            .unwrap()
            .success()
    };
    assert!(ids.iter().any(|id| holds(id, "keep.txt")), "{ids:?}");
    assert!(ids.iter().any(|id| holds(id, "gen/f1000.txt")), "{ids:?}");
}

/// A message that cannot fit the window even alone is refused before it
/// is sent, with its size and the window; one that fits goes.
#[test]
fn a_message_larger_than_the_window_is_refused_before_it_is_sent() {
    let server = Server::start(vec![text("fine")]);
    let ws = Workspace::new();
    ws.write("agent.yaml", "contextWindow: 8192\n");
    let pasted = "log line with some words in it\n".repeat(2000);
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", &pasted, "-url", &server.url()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the message is 61 KB")
            && err.contains("8192-token context window")
            && err.contains("it was not sent"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "{err}");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", &pasted[..4000], "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
}

/// A paste of short dense lines takes more tokens a byte than the
/// requests mm learns its ratio from: a local server counts it
/// (`/tokenize`) before it is sent (a re-trial pasted 44 KB that the
/// ratio took for 11k tokens; it was 23k, over the whole window).
#[test]
fn a_dense_paste_is_counted_by_the_server_before_it_is_sent() {
    let ws = Workspace::new();
    ws.write("agent.yaml", "contextWindow: 8192\n");
    let pasted: String = (1..=700).map(|i| format!("{i}: x={i}\n")).collect();
    let server = Server::start(vec![text("fine")]);
    server.route("/tokenize", json!({"tokens": vec![0; 9000]}));
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", &pasted, "-url", &server.url()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("(~9000 tokens)") && err.contains("it was not sent"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "{err}");
    // Counted small, it goes.
    let server = Server::start(vec![text("fine")]);
    server.route("/tokenize", json!({"tokens": vec![0; 3000]}));
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            &pasted,
            "-url",
            &server.url(),
            "-no-harness",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
}

/// A command's output larger than a quarter of what the window leaves
/// free reaches the model cut to its first and last lines, with the lines
/// left out named; no request goes over the window.
#[test]
fn a_long_output_is_cut_to_the_window_before_the_model_gets_it() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "seq 1 1500"})),
        text("It counts to 1500."),
    ]);
    let ws = Workspace::new();
    ws.write("agent.yaml", "contextWindow: 4096\n");
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-yolo",
            "-p",
            "what does seq 1 1500 print last?",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", stderr(&out));
    let results = tool_results(&reqs[1]);
    let (_, seen) = results.iter().find(|(id, _)| id == "c1").unwrap();
    // The first lines and the last (with the exit code line mm adds).
    assert!(seen.starts_with("1\n2\n"), "{seen}");
    assert!(seen.contains("\n1499\n1500\n[exit code 0"), "{seen}");
    assert!(
        seen.contains("of 1501 left out to fit the 4096-token context window"),
        "{seen}"
    );
    // Under a quarter of the window's bytes (about 3.6 a token).
    assert!(seen.len() < 4096 * 36 / 40, "{}", seen.len());
}

/// `-plan`: the model looks and changes nothing (a write is refused and
/// said to be), and its answer's numbered steps are the plan, in the
/// JSON result and in the session log.
#[test]
fn a_plan_run_writes_nothing_and_its_numbered_answer_is_the_plan() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "calc.py"})),
        call(
            "c2",
            "write_file",
            json!({"path": "calc.py", "content": "oops\n"}),
        ),
        call("c3", "bash", json!({"command": "touch made.txt"})),
        text(
            "Here is the plan:\n\n1. In calc.py, make add return a + b.\n2. Add a test for add in test_calc.py.\n   Check 2 + 2.",
        ),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "fix add", &["-plan", "-json", "-yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a - b\n");
    assert!(
        !ws.path().join("made.txt").exists(),
        "a command wrote in plan mode"
    );
    let reqs = server.requests();
    let asked = reqs[0]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.starts_with("fix add\n\n(Plan mode:"), "{asked}");
    let results = tool_results(&reqs[2]);
    assert!(
        results[1]
            .1
            .contains("plan mode: nothing is written until the user approves a plan"),
        "{results:?}"
    );
    let results = tool_results(&reqs[3]);
    assert!(results[2].1.contains("read-only"), "{results:?}");
    let r = json_result(&out);
    assert_eq!(r["written"], json!([]));
    assert_eq!(
        r["plan"],
        json!([
            {"step": "In calc.py, make add return a + b.", "status": "pending"},
            {"step": "Add a test for add in test_calc.py. Check 2 + 2.", "status": "pending"}
        ])
    );
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    assert!(log.contains(r#""type":"plan""#), "{log}");
    // A replay and an export show the plan as it was proposed.
    let shown = ws.mm().args(["-show", "last"]).output().unwrap();
    let all = format!("{}{}", stdout(&shown), stderr(&shown));
    assert!(all.contains("plan proposed"), "{all}");
    assert!(
        all.contains("[ ] 2. Add a test for add in test_calc.py."),
        "{all}"
    );
    let md = ws
        .mm()
        .args(["-show", "last", "-export", "-"])
        .output()
        .unwrap();
    let md = stdout(&md);
    assert!(
        md.contains("**Plan proposed:**\n\n- [ ] In calc.py, make add return a + b.\n"),
        "{md}"
    );
}

#[test]
fn a_plan_turn_that_claims_a_fix_is_told_nothing_was_written() {
    // A newcomer trial: "fixed_off … is now correct" in plan mode went
    // unchallenged.
    let server = Server::start(vec![
        text("I fixed add in calc.py and the tests pass now."),
        // mm's request for the plan the answer did not hold.
        text("1. In calc.py, make add return a + b."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "fix add", &["-plan", "-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "unbacked: the answer says something was changed, but nothing is written while planning"
        ),
        "{err}"
    );
    assert!(err.contains("asking the model for one"), "{err}");
    let r = json_result(&out);
    assert_eq!(
        r["plan"][0]["step"], "In calc.py, make add return a + b.",
        "{r}"
    );
}

#[test]
fn a_commands_changes_are_told_as_file_changes() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        call(
            "c1",
            "bash",
            json!({"command": "printf 'one\\ntwo\\n' > made.txt && printf 'b\\n' > old.txt"}),
        ),
        text("Made it."),
    ]);
    let ws = Workspace::new();
    ws.write("old.txt", "a\n");
    let out = ws.run(&server, "make the files", &["-auto", "-json-stream"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let changes: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "file_changed")
        .collect();
    assert_eq!(changes.len(), 2, "{lines:?}");
    let of = |p: &str| {
        changes
            .iter()
            .find(|c| c["change"]["path"] == p)
            .unwrap_or_else(|| panic!("no change of {p}: {changes:?}"))
    };
    assert_eq!(of("made.txt")["call_id"], "c1");
    assert_eq!(of("made.txt")["change"]["kind"], "created");
    assert_eq!(of("made.txt")["change"]["after"], "one\ntwo\n");
    assert_eq!(of("made.txt")["change"]["added"], 2);
    assert_eq!(of("old.txt")["change"]["kind"], "modified");
    assert_eq!(of("old.txt")["change"]["before"], "a\n");
    // The line front end says it as it says a file tool's write.
    let out = ws.run(
        &Server::start(vec![
            call("c2", "bash", json!({"command": "printf 'c\\n' >> old.txt"})),
            text("Done."),
        ]),
        "add a line",
        &["-auto"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("✎ old.txt (+1 -0)"),
        "{}",
        stderr(&out)
    );
}
