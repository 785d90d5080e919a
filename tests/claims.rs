//! What the README promises and no other test held mm to, each checked end
//! to end on the real binary: a scripted server on 127.0.0.1, real files,
//! real git, a real pseudo-terminal where the promise is about one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::term::Term;
use support::*;

fn session_records(ws: &Workspace) -> Vec<Value> {
    let mut out = Vec::new();
    for f in ws.sessions() {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                out.push(v);
            }
        }
    }
    out
}

#[test]
fn overwriting_a_file_the_model_never_read_is_refused_with_its_content() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "second line\n"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "notes.txt", "content": "first line\nsecond line\n"}),
        ),
        text("Added the line."),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", "first line\n");
    let out = ws.run(&server, "add a second line to the notes", &["-no-harness"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let first = tool_results(&reqs[1]);
    assert!(
        first[0]
            .1
            .starts_with("refused: notes.txt has not been read, so nothing was changed"),
        "{first:?}"
    );
    assert!(
        first[0].1.contains("first line"),
        "the refusal shows the file: {first:?}"
    );
    // The refusal counts as a read: the write based on it lands.
    assert_eq!(ws.read("notes.txt"), "first line\nsecond line\n");
}

#[test]
fn grep_answers_with_paths_line_numbers_and_lines() {
    let server = Server::start(vec![
        call("g1", "grep", json!({"pattern": "def (add|sub)"})),
        call("g2", "grep", json!({"pattern": "nothing_like_this"})),
        text("Found them."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "import os\n\ndef add(a, b):\n    return a + b\n");
    ws.write("lib/more.py", "def sub(a, b):\n    return a - b\n");
    ws.write(".env", "def add_secret = 1\n");
    let out = ws.run(&server, "where are add and sub defined?", &["-no-harness"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let found = &tool_results(&reqs[1])[0].1;
    assert!(found.contains("calc.py:3: def add(a, b):"), "{found}");
    assert!(found.contains("lib/more.py:1: def sub(a, b):"), "{found}");
    assert!(
        !found.contains(".env"),
        "a credential file is not searched: {found}"
    );
    let none = tool_results(&reqs[2]).last().unwrap().1.clone();
    assert!(
        !none.contains("calc.py") && !none.contains("more.py"),
        "{none}"
    );
}

#[test]
fn the_server_and_the_key_can_come_from_the_environment() {
    let server = Server::start(vec![text("hello")]);
    let ws = Workspace::new();
    let out = ws
        .mm()
        .args(["-p", "hi"])
        .env("MM_BASE_URL", server.url())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
    assert_eq!(server.requests().len(), 1, "MM_BASE_URL chose the server");
    // A hosted provider with no key set is refused before anything is sent.
    let out = ws
        .mm()
        .args(["-p", "hi", "-provider", "openai", "-model", "gpt-4o-mini"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("needs an API key: set OPENAI_API_KEY"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_turn_cancelled_during_a_tool_still_answers_every_call() {
    let server = Server::start(vec![
        calls(&[
            (
                "slow",
                "bash",
                json!({"command": "touch started && sleep 30"}),
            ),
            ("next", "read_file", json!({"path": "a.txt"})),
        ]),
        text("never asked"),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let child = ws
        .mm()
        .args(["-p", "run it", "-url", &server.url(), "-yolo", "-json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ws.dir.path().join("started").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        start.elapsed() < Duration::from_secs(25),
        "the sleep was not waited out"
    );
    // Every call the model made has its answer in the log, so the
    // conversation resumes under a strict chat template.
    let mut owed: HashSet<String> = HashSet::new();
    let mut answered = Vec::new();
    for r in session_records(&ws) {
        for c in r["tool_calls"].as_array().into_iter().flatten() {
            owed.insert(c["id"].as_str().unwrap().to_string());
        }
        if let Some(id) = r["tool_call_id"].as_str() {
            assert!(owed.remove(id), "an answer to no call: {id}");
            answered.push((
                id.to_string(),
                r["content"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    assert!(owed.is_empty(), "calls left without an answer: {owed:?}");
    assert_eq!(answered.len(), 2, "{answered:?}");
    assert_eq!(
        server.requests().len(),
        1,
        "nothing was sent after the cancel"
    );
}

#[test]
fn show_diff_prints_what_a_session_changed() {
    let server = Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "hello.txt", "content": "hello, world\n"}),
        ),
        text("Wrote it."),
    ]);
    let ws = Workspace::new();
    ws.committed(&[("keep.txt", "kept\n")]);
    let out = ws.run(&server, "write hello.txt", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = ws.mm().args(["-show", "last", "-diff"]).output().unwrap();
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(text.contains("hello.txt"), "{text}");
    assert!(text.contains("+hello, world"), "{text}");
    assert!(
        !text.contains("keep.txt"),
        "only the session's changes: {text}"
    );
}

#[test]
fn prune_keeps_only_the_latest_sessions_checkpoints() {
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "a\n")]);
    for answer in ["one", "two"] {
        let server = Server::start(vec![text(answer)]);
        let out = ws.run(&server, "hi", &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // Session ids have a one-second clock.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let sessions = |refs: &str| -> HashSet<String> {
        refs.lines()
            .filter_map(|l| l.split("refs/mm/checkpoints/").nth(1))
            .filter_map(|r| r.split('/').next())
            .map(str::to_string)
            .collect()
    };
    let before = sessions(&git(&p, &["for-each-ref", "refs/mm"]));
    assert_eq!(before.len(), 2, "{before:?}");
    let out = ws.mm().arg("-prune").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("removed"), "{}", stdout(&out));
    let after = sessions(&git(&p, &["for-each-ref", "refs/mm"]));
    let latest = before.iter().max().unwrap();
    assert_eq!(after, HashSet::from([latest.clone()]));
    assert_eq!(
        git(&p, &["status", "--porcelain"]),
        "",
        "the work tree is untouched"
    );
}

#[test]
fn checkpoint_days_drops_older_sessions_refs_at_start() {
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "a\n")]);
    let head = git(&p, &["rev-parse", "HEAD"]).trim().to_string();
    let old = "refs/mm/checkpoints/20200101-000000-aaaaaa/1";
    git(&p, &["update-ref", old, &head]);
    // checkpointDays: 0 keeps everything.
    ws.write("keep.yaml", "checkpointDays: 0\n");
    let server = Server::start(vec![text("kept")]);
    let out = ws.run(&server, "hi", &["keep.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(git(&p, &["for-each-ref", "refs/mm"]).contains(old));
    // The default (30 days) drops a session from 2020 when mm starts.
    let server = Server::start(vec![text("pruned")]);
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refs = git(&p, &["for-each-ref", "refs/mm"]);
    assert!(!refs.contains(old), "{refs}");
    assert!(
        refs.contains("refs/mm/checkpoints/"),
        "this session's stay: {refs}"
    );
}

#[test]
fn cwd_runs_mm_in_another_folder() {
    let server = Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "made.txt", "content": "here\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = ws
        .mm()
        .current_dir(elsewhere.path())
        .args(["-cwd", ws.path().to_str().unwrap()])
        .args(["-p", "make it", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("made.txt"), "here\n");
    assert!(!elsewhere.path().join("made.txt").exists());
    assert!(!ws.sessions().is_empty(), "the session is the workspace's");
    assert!(!elsewhere.path().join(".mm").exists());
}

#[test]
fn headless_streams_the_answer_to_a_terminal_as_it_comes() {
    let chunk = |t: &str| json!({"choices":[{"index":0,"delta":{"content":t}}]}).to_string();
    let server = Server::start(vec![Reply::Sse(vec![
        (0, chunk("first half, ")),
        (3000, chunk("second half.")),
        (
            0,
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string(),
        ),
    ])]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-p", "say it", "-url", &url]);
    t.expect("first half, ");
    assert!(
        !t.screen().contains("second half."),
        "the first half was shown before the rest came"
    );
    t.expect("second half.");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn the_context_window_is_read_from_llama_servers_props() {
    // The scripted server says n_ctx 8192 at /props, as llama-server does.
    let server = Server::start(vec![]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("context 8192");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    // An agent file's contextWindow wins over the server's word.
    ws.write("agent.yaml", "contextWindow: 4096\n");
    let mut t = Term::start(&ws, &["-url", &url, "agent.yaml"]);
    t.expect("context 4096");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_cancelled_answer_keeps_what_was_shown_marked_as_cut() {
    let chunk = |t: &str| json!({"choices":[{"index":0,"delta":{"content":t}}]}).to_string();
    let server = Server::start(vec![Reply::Sse(vec![
        (0, chunk("Half of the answer, ")),
        (30_000, chunk("never sent")),
    ])]);
    let ws = Workspace::new();
    let child = ws
        .mm()
        .args(["-p", "explain", "-url", &server.url(), "-json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while server.requests().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first chunk goes out with the headers; give mm a moment to read it.
    std::thread::sleep(Duration::from_millis(1000));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let kept: Vec<String> = session_records(&ws)
        .iter()
        .filter(|r| r["role"] == "assistant")
        .filter_map(|r| r["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        kept,
        vec!["Half of the answer,\n\n[cancelled by the user]".to_string()],
        "the log keeps what streamed"
    );
}

/// Each kind of server is asked for its window its own way, with
/// answers shaped as each server gives them.
#[test]
fn each_servers_window_is_probed_its_own_way() {
    let window = |provider: &str, routes: Vec<(&str, Value)>| {
        let server = Server::start(vec![text("hi")]);
        for (path, body) in routes {
            server.route(path, body);
        }
        let ws = Workspace::new();
        let out = ws
            .mm()
            .args(["-p", "hi", "-json", "-url", &server.url()])
            .args(["-provider", provider])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        (json_result(&out)["context_window"].as_u64(), stderr(&out))
    };
    // Ollama with the model loaded: /api/ps says what it runs with.
    let (w, err) = window(
        "ollama",
        vec![
            (
                "/api/ps",
                json!({"models":[{"name":"scripted-model:latest","model":"scripted-model:latest","context_length":4096}]}),
            ),
            (
                "/api/show",
                json!({"parameters":"num_ctx 8192","model_info":{"qwen2.context_length":32768}}),
            ),
        ],
    );
    assert_eq!(w, Some(4096));
    assert!(
        err.contains("Ollama serves scripted-model with a 4096-token window")
            && err.contains("OLLAMA_CONTEXT_LENGTH"),
        "a small Ollama window is said with how to grow it: {err}"
    );
    // Not loaded: the model's num_ctx parameter.
    let (w, _) = window(
        "ollama",
        vec![
            ("/api/ps", json!({"models":[]})),
            (
                "/api/show",
                json!({"parameters":"stop \"<|im_end|>\"\nnum_ctx 12288","model_info":{"qwen2.context_length":32768}}),
            ),
        ],
    );
    assert_eq!(w, Some(12288));
    // Neither: Ollama's default, never more than the model's own length.
    let (w, err) = window(
        "ollama",
        vec![
            ("/api/ps", json!({"models":[]})),
            (
                "/api/show",
                json!({"model_info":{"llama.context_length":2048}}),
            ),
        ],
    );
    assert_eq!(w, Some(2048));
    assert!(err.contains("assumed"), "{err}");
    // vLLM: max_model_len in its model list.
    let (w, _) = window(
        "vllm",
        vec![(
            "/models",
            json!({"object":"list","data":[{"id":"scripted-model","object":"model","max_model_len":32768}]}),
        )],
    );
    assert_eq!(w, Some(32768));
    // LM Studio: the loaded context length, else the model's largest.
    let (w, _) = window(
        "lmstudio",
        vec![(
            "/api/v0/models",
            json!({"object":"list","data":[{"id":"scripted-model","state":"loaded","max_context_length":131072,"loaded_context_length":8192}]}),
        )],
    );
    assert_eq!(w, Some(8192));
    let (w, _) = window(
        "lmstudio",
        vec![(
            "/api/v0/models",
            json!({"object":"list","data":[{"id":"scripted-model","state":"not-loaded","max_context_length":131072}]}),
        )],
    );
    assert_eq!(w, Some(131072));
    // llama-server: /props (the scripted server's default says 8192).
    let (w, _) = window(
        "local",
        vec![(
            "/props",
            json!({"default_generation_settings":{"n_ctx":4096}}),
        )],
    );
    assert_eq!(w, Some(4096));
}

/// When the system prompt and the tools take more than a quarter of the
/// window, the user hears it, with the tools that weigh most.
#[test]
fn a_prompt_heavier_than_a_quarter_of_the_window_is_said() {
    let server = Server::start(vec![text("hi")]);
    let ws = Workspace::new();
    ws.write("agent.yaml", "contextWindow: 2048\n");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("more than a quarter of the 2048-token window")
            && err.contains("bash ~")
            && err.contains("(bashTool: false)"),
        "{err}"
    );
    ws.write("agent.yaml", "contextWindow: 65536\n");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("quarter"), "{}", stderr(&out));
}

/// `/stats` counts the requests the log holds, with the cache share and
/// the speeds; `/cost` is zero on a local server and priced from the
/// config on a hosted one; `-json` carries each request's figures.
#[test]
fn stats_and_cost_count_what_the_server_said() {
    let server = Server::start(vec![text("hi"), text("hi again")]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("hello\r");
    t.expect("hi");
    t.send("/stats\r");
    t.expect("1 request, 100 prompt tokens (80% from the server's cache), 10 generated");
    t.expect("last request: 1 request");
    t.expect("context window: 8192 tokens");
    t.expect("cost: $0 (a local server)");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);

    // A hosted provider, priced in the config: 20 fresh prompt tokens at
    // $10/M, 80 cached at $1/M, 10 generated at $100/M = $0.00128.
    let hosted = Server::start(vec![text("priced")]);
    ws.write(
        "agent.yaml",
        "provider: openai\nmodel: gpt-test\nprices:\n  gpt-test: {input: 10, cached: 1, output: 100}\n",
    );
    let mut t = Term::start_with(
        &ws,
        &["agent.yaml", "-url", &hosted.url()],
        &[("MM_API_KEY", "test-key")],
    );
    t.expect("› ");
    t.send("hello\r");
    t.expect("priced");
    t.send("/cost\r");
    t.expect("cost: $0.0013 — 100 prompt tokens (80 cached), 10 generated over 1 request");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);

    let server = Server::start(vec![text("hi")]);
    let out = ws.run(&server, "hello", &["-json"]);
    let r = json_result(&out);
    assert_eq!(r["per_request"][0]["prompt"], 100, "{r}");
    assert_eq!(r["per_request"][0]["cached"], 80, "{r}");
    assert!(r["per_request"][0]["first_token_ms"].is_u64(), "{r}");
}

/// `AGENT_TRACE=1` (or `trace: true`) writes each request and what came
/// back to `.mm/traces/<session>/NNNN.json`, mode 0600, without the key.
#[test]
fn traces_hold_each_request_and_response_but_not_the_key() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        text("It says hello."),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "hello\n");
    ws.write("agent.yaml", "provider: openai\nmodel: gpt-test\n");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "what does the file say?", "-json"])
        .args(["-url", &server.url(), "-no-harness"])
        .env("AGENT_TRACE", "1")
        .env("MM_API_KEY", "sk-secret-test-key")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let session = json_result(&out)["session"].as_str().unwrap().to_string();
    let dir = ws.path().join(".mm").join("traces").join(&session);
    let first = dir.join("0001.json");
    let second = dir.join("0002.json");
    assert!(first.exists() && second.exists(), "{dir:?}");
    let mode = std::fs::metadata(&second).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(doc["n"], 2);
    assert_eq!(doc["response"]["content"], "It says hello.");
    assert!(doc["request"]["messages"].to_string().contains("hello"));
    let first_doc = std::fs::read_to_string(&first).unwrap();
    assert!(first_doc.contains("read_file"));
    for f in [first, second] {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("sk-secret-test-key"),
            "the key is not written"
        );
    }
    // Off by default.
    let server = Server::start(vec![text("hi")]);
    let out = ws.run(&server, "hi", &["-json"]);
    let session = json_result(&out)["session"].as_str().unwrap().to_string();
    assert!(!ws.path().join(".mm/traces").join(session).exists());
}

/// `budgetKTokens` warns when crossed and at each further half, and never
/// stops the turn.
#[test]
fn a_token_budget_warns_and_never_stops() {
    let ws = Workspace::new();
    let mut script = Vec::new();
    for i in 1..=7 {
        ws.write(&format!("f{i}.txt"), &format!("file {i}\n"));
        script.push(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": format!("f{i}.txt")}),
        ));
    }
    script.push(text("Seven files, one line each."));
    let server = Server::start(script);
    // Each call reply says 220 tokens: 1,100 after five, 1,540 after seven.
    ws.write("agent.yaml", "budgetKTokens: 1\n");
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "read all the files",
            "-json",
            "-no-harness",
        ])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("past 100% of budgetKTokens (1k)"), "{err}");
    assert!(err.contains("past 150% of budgetKTokens (1k)"), "{err}");
    assert!(!err.contains("past 200%"), "{err}");
    assert_eq!(json_result(&out)["answer"], "Seven files, one line each.");
}

/// A turn whose commands changed nothing (a `git commit` of nothing, a
/// `touch -c` of a file that is not there) has written nothing: an
/// answer that says "I fixed it" gets the receipt's words after it.
#[test]
fn an_answer_that_claims_a_fix_after_commands_that_changed_nothing_is_corrected() {
    let claim = "I fixed the bug in calc.py.";
    let server = Server::start(vec![
        call("b1", "bash", json!({"command": "touch -c absent.txt"})),
        text(claim),
        text(claim),
        text(claim),
        text(claim),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "Fix the bug in add() in calc.py.", &["-auto"]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains(claim), "{said}\n{}", stderr(&out));
    assert!(
        said.contains("mm: no file was written in this turn."),
        "{said}\n{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("unbacked: the answer says files were changed, but none was written"),
        "{}",
        stderr(&out)
    );
}

/// "Send it again" means it: the write refused for want of a read (its
/// refusal carries the file and counts as the read) runs when sent again
/// as it was. A trial's model was told "send it again", then "not run
/// again: this exact call failed just before", and looped.
#[test]
fn a_write_refused_for_want_of_a_read_runs_when_sent_again_as_it_was() {
    let content = "first line\nsecond line\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": content}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "notes.txt", "content": content}),
        ),
        text("Added the line."),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", "first line\n");
    let out = ws.run(&server, "add a second line to the notes", &["-no-harness"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = tool_results(&server.requests()[2]);
    assert!(!second[0].1.contains("not run again"), "{second:?}");
    assert_eq!(ws.read("notes.txt"), content);
}

/// "I ran the tests and they passed", where no test ran: the answer gets
/// the receipt's words after it.
#[test]
fn an_answer_that_says_tests_ran_and_passed_when_none_ran_is_corrected() {
    let claim = "I ran the tests and they all passed.";
    let server = Server::start(vec![text(claim), text(claim), text(claim), text(claim)]);
    let ws = Workspace::new();
    ws.write("notes.txt", "hello\n");
    let out = ws.run(&server, "Is the project in good shape?", &["-auto"]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains(claim), "{said}\n{}", stderr(&out));
    assert!(
        said.contains("mm: no test ran in this turn."),
        "{said}\n{}",
        stderr(&out)
    );
}
