//! End to end against a real llama-server and a small GGUF model (the
//! README's default provider): a real streamed answer and a real tool-call
//! round trip. `scripts/test` installs both and sets MM_LLAMA_BIN,
//! MM_LLAMA_MODEL and MM_LLAMA_TEMPLATE; a bare `cargo test` without them
//! skips these tests unless MM_REQUIRE_REAL_MODEL=1, which makes them fail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

struct LlamaServer {
    child: Child,
    url: String,
    /// One real model at a time: five llama-servers on two cores starved
    /// each other past a 180 s first-token timeout.
    _turn: std::sync::MutexGuard<'static, ()>,
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn llama() -> Option<LlamaServer> {
    llama_with_window(16384)
}

/// A llama-server of its own with a context window of `ctx` tokens.
fn llama_with_window(ctx: u32) -> Option<LlamaServer> {
    let (Ok(bin), Ok(model), Ok(template)) = (
        std::env::var("MM_LLAMA_BIN"),
        std::env::var("MM_LLAMA_MODEL"),
        std::env::var("MM_LLAMA_TEMPLATE"),
    ) else {
        assert!(
            std::env::var("MM_REQUIRE_REAL_MODEL").as_deref() != Ok("1"),
            "MM_REQUIRE_REAL_MODEL=1 but MM_LLAMA_BIN / MM_LLAMA_MODEL / MM_LLAMA_TEMPLATE are not set (run scripts/test)"
        );
        skip("no real model (run scripts/test)");
        return None;
    };
    let turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let threads = std::thread::available_parallelism()
        .map(std::num::NonZero::get)
        .unwrap_or(2)
        .to_string();
    let log =
        std::fs::File::create(std::env::temp_dir().join(format!("mm-llama-{port}.log"))).unwrap();
    let child = Command::new(bin)
        .args([
            "-m",
            &model,
            "--alias",
            "qwen2.5-coder-1.5b-instruct-q4_k_m",
        ])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--jinja", "--chat-template-file", &template])
        .args([
            "-c",
            &ctx.to_string(),
            "-t",
            &threads,
            "-np",
            "1",
            "--no-webui",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start llama-server");
    let server = LlamaServer {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
        _turn: turn,
    };
    let start = Instant::now();
    loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", port))
            .ok()
            .and_then(|mut s| {
                use std::io::{Read, Write};
                s.write_all(b"GET /health HTTP/1.0\r\n\r\n").ok()?;
                let mut buf = String::new();
                s.read_to_string(&mut buf).ok()?;
                Some(buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200"))
            })
            .unwrap_or(false);
        if ok {
            return Some(server);
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "llama-server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_real_model_answers_and_fixes_a_bug_through_tools() {
    let Some(server) = llama() else { return };

    // A real streamed answer, found by auto-detection (no flags, no file).
    let ws = Workspace::new();
    ws.write("agent.yaml", "editTools: false\nbashTool: false\nsystem: Answer in one short sentence.\nsampling:\n  seed: 7\n");
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "What is the capital of France?",
            "-json",
        ])
        .env("MM_LOCAL_ENDPOINTS", &server.url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_result(&out);
    assert_eq!(r["outcome"], "done");
    assert!(r["answer"].as_str().unwrap().contains("Paris"), "{r}");
    assert!(r["usage"]["prompt"].as_u64().unwrap() > 0, "{r}");
    assert!(r["usage"]["completion"].as_u64().unwrap() > 0, "{r}");

    // A real tool-call round trip that fixes a bug. Sampling is random, so
    // the fix gets three chances; the round trip must happen every time.
    let mut fixed = false;
    for attempt in 1..=3 {
        let ws = Workspace::new();
        ws.write(
            "calc.py",
            "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        );
        let out = ws
            .mm()
            .args([
                "-p",
                "The add function in calc.py has a bug. Fix it.",
                "-url",
                &server.url,
                "-json",
                "-max-rounds",
                "8",
            ])
            .output()
            .unwrap();
        let r = json_result(&out);
        let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
        assert!(
            log.contains("\"tool_calls\""),
            "attempt {attempt}: no tool call\n{log}"
        );
        assert!(
            log.contains("\"role\":\"tool\""),
            "attempt {attempt}: no tool result\n{log}"
        );
        assert!(
            r["requests"].as_u64().unwrap() >= 2,
            "attempt {attempt}: no request after the tool result: {r}"
        );
        let code = ws.read("calc.py");
        eprintln!(
            "attempt {attempt}: outcome {} written {} stderr:\n{}",
            r["outcome"],
            r["written"],
            stderr(&out)
        );
        if code.contains("return a + b") && code.contains("return a * b") {
            assert_eq!(r["written"], serde_json::json!(["calc.py"]), "{r}");
            assert!(
                stderr(&out).contains("mm: wrote calc.py"),
                "{}",
                stderr(&out)
            );
            fixed = true;
            break;
        }
    }
    assert!(fixed, "the model did not fix the bug in three attempts");
}

/// Two of the shipped eval cases, run by `mm -eval` against the real
/// model: the eval harness works end to end (fresh work trees, the check
/// command, the JSON and JSONL results), the harness ran the tests of the
/// bug-fix case, and each case passes — both passed every run on record
/// with this model; a run is sampled, so a case gets a second run when
/// the first fails.
#[test]
fn the_eval_runs_shipped_cases_against_the_real_model() {
    let Some(server) = llama() else { return };
    let ws = Workspace::new();
    let eval = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    // Two short cases (CI time): a bug fix with tests, and a question.
    for case in ["py-fix-mean", "py-ask-count"] {
        let mut passed = false;
        for attempt in 1..=2 {
            let out = ws
                .mm()
                .args(["-eval"])
                .arg(eval.join(case))
                .args(["-runs", "1", "-json", "-url", &server.url])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let summary = json_result(&out);
            assert_eq!(summary["runs"], 1, "{summary}");
            eprintln!(
                "eval {case} (attempt {attempt}): {} of 1 passed\n{}",
                summary["passed"],
                stderr(&out)
            );
            if summary["passed"] == 1 {
                passed = true;
                break;
            }
        }
        assert!(passed, "{case} failed two runs against the real model");
    }
    let lines = ws.read(".mm/eval-results.jsonl");
    let runs: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!((2..=4).contains(&runs.len()), "{lines}");
    for r in &runs {
        let outcome = r["outcome"].as_str().unwrap();
        assert!(
            ["done", "budget", "truncated"].contains(&outcome),
            "mm did not finish the run: {r}"
        );
        assert!(r["requests"].as_u64().unwrap() >= 1, "{r}");
    }
    if fence_works() {
        assert!(
            runs[0]["tests_passed"].is_boolean(),
            "the harness ran the bug-fix case's tests in the fence: {}",
            runs[0]
        );
    }
}

/// The Go mm's JSON agents, unchanged, against the real model: llama-server
/// constrains the answer with the schema's grammar, and stdout is the JSON.
#[test]
fn the_go_mm_json_agents_answer_in_their_declared_shape() {
    let Some(server) = llama() else { return };
    let ws = Workspace::new();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat");
    for e in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(e.path(), ws.dir.path().join(e.file_name())).unwrap();
    }
    let out = ws
        .mm()
        .args([
            "agent.countries.yaml",
            "-url",
            &server.url,
            "-p",
            "languages spoken in France and Canada",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    let list = v.as_array().expect("an array root");
    assert!(!list.is_empty(), "{v}");
    for c in list {
        assert!(c["name"].is_string(), "{c}");
        assert!(c["capital"].is_string() || c["capital"].is_null(), "{c}");
        for l in c["languages"].as_array().unwrap() {
            assert!(l["name"].is_string() && l["official"].is_boolean(), "{l}");
        }
    }

    let reports = std::fs::read_to_string(ws.dir.path().join("reports.txt")).unwrap();
    let out = ws
        .mm()
        .args(["agent.triage.yaml", "-url", &server.url, "-p", &reports])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    let reports = v["reports"].as_array().expect("an object with reports");
    assert!(!reports.is_empty(), "{v}");
    for r in reports {
        for key in ["title", "severity", "component", "summary"] {
            assert!(r[key].is_string(), "{key}: {r}");
        }
        assert!(r["duplicate"].is_i64() || r["duplicate"].is_null(), "{r}");
    }
}

#[test]
fn the_coordinator_asks_triage_and_writes_its_table() {
    let Some(server) = llama() else { return };
    let ws = Workspace::new();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat");
    for e in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(e.path(), ws.dir.path().join(e.file_name())).unwrap();
    }
    // The demo's files name their own server; MM_BASE_URL (which the
    // child processes inherit) points every agent at this one.
    let out = ws
        .mm()
        .env("MM_BASE_URL", &server.url)
        .args([
            "agent.coordinator.yaml",
            "-max-rounds",
            "5",
            "-p",
            "Read reports.txt, have the reports triaged, then write triage.md: a Markdown table (title, severity, component, duplicate of) sorted by severity, high first.",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("ask_agent triage"), "{err}");
    assert!(err.contains("answered (session"), "triage answered: {err}");
    let table = ws.read("triage.md");
    assert!(!table.trim().is_empty(), "triage.md was written: {err}");
    // Markdown or CSV is sampled too (the 1.5B model wrote a CSV header
    // once the request keys were sorted again): said, not asserted.
    eprintln!("triage.md is a Markdown table: {}", table.contains('|'));
    // Whether the 1.5B coordinator writes the triaged reports or a table
    // of its own is sampled (seen both; the demo asks for a reasoning
    // model): said, not asserted.
    eprintln!(
        "the table uses the reports: {}",
        table.to_lowercase().contains("export")
    );
    // triage's own session is saved beside Bob's, and shows with -show.
    let sessions = ws.sessions();
    assert!(sessions.len() >= 2, "{sessions:?}");
    let shown = ws.mm().args(["-show", "last"]).output().unwrap();
    assert!(shown.status.success());
}

/// A session on a small window (`contextWindow: 4096`, compacting at 60%)
/// compacts on the real model and still finishes its task: the second
/// turn's first request would carry the first turn's large file, so the
/// first turn becomes a summary, and the bug gets fixed with the tests
/// passing. Sampled, so three chances; the compaction must happen in each.
#[test]
fn a_session_on_a_small_window_compacts_and_finishes_its_task() {
    let Some(server) = llama() else { return };
    let mut fixed = false;
    for attempt in 1..=3 {
        let ws = Workspace::new();
        let helpers: String = (0..60)
            .map(|i| format!("def helper_{i}(x):\n    \"\"\"Return x plus {i}.\"\"\"\n    return x + {i}\n\n\n"))
            .collect();
        ws.write("helpers.py", &helpers);
        ws.write(
            "stats.py",
            "def mean(values):\n    \"\"\"Return the arithmetic mean of values.\"\"\"\n    return sum(values) / (len(values) - 1)\n",
        );
        ws.write(
            "test_stats.py",
            "import unittest\nfrom stats import mean\n\n\nclass T(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
        );
        ws.write("agent.yaml", "contextWindow: 4096\ncompactAt: 60\n");
        let turn = |prompt: &str, resume: bool| {
            let mut cmd = ws.mm();
            cmd.args(["agent.yaml", "-p", prompt, "-url", &server.url, "-json"]);
            cmd.args(["-max-rounds", "8"]);
            if resume {
                cmd.args(["-resume", "last"]);
            }
            cmd.output().unwrap()
        };
        let first = turn("What does helpers.py define? One sentence.", false);
        assert!(first.status.code().is_some(), "{}", stderr(&first));
        let out = turn("The mean function in stats.py has a bug. Fix it.", true);
        let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
        eprintln!(
            "attempt {attempt}: {}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            log.contains("\"type\":\"compacted\""),
            "attempt {attempt}: no compaction\n{}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("compacted:"), "{}", stderr(&out));
        let passes = std::process::Command::new("python3")
            .args(["-m", "unittest", "-q"])
            .current_dir(ws.path())
            .output()
            .unwrap()
            .status
            .success();
        if passes {
            fixed = true;
            break;
        }
    }
    assert!(fixed, "the task was not finished in three attempts");
}

/// On a llama-server started with `-c 4096`, a command that prints 1,500
/// lines reaches the model cut to the window, and no request goes over it
/// (mm learns the window from the server itself: no `contextWindow`
/// here). Sampled, so two chances for the model to run the command; every
/// attempt must stay inside the window.
#[test]
fn on_a_4k_window_no_request_goes_over_it() {
    let Some(server) = llama_with_window(4096) else {
        return;
    };
    let mut ran = false;
    for attempt in 1..=2 {
        let ws = Workspace::new();
        ws.write(
            "gen.py",
            "for i in range(1, 1501):\n    print(f'line {i}: ' + 'x' * 40)\n",
        );
        let out = ws
            .mm()
            .args([
                "-p",
                "Run `python3 gen.py` and tell me the last line it prints.",
            ])
            .args(["-url", &server.url, "-json", "-max-rounds", "4"])
            .env("MM_LOG", "info")
            .output()
            .unwrap();
        let err = stderr(&out);
        eprintln!("attempt {attempt}: {}\nstderr:\n{err}", stdout(&out));
        let debug = std::fs::read_to_string(ws.path().join(".mm/debug.log")).unwrap_or_default();
        assert!(
            !debug.contains("overflow") && !err.contains("does not fit the model's context window"),
            "attempt {attempt}: a request went over the window:\n{err}"
        );
        let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
        assert!(
            !log.contains("exceed_context_size"),
            "attempt {attempt}: the server refused a request"
        );
        if log.contains("left out to fit the 4096-token context window") {
            ran = true;
            break;
        }
    }
    assert!(ran, "the model never ran the command in two attempts");
}
