//! Compaction against the scripted server with a 4096-token window: the
//! automatic trigger, the refusals (a cut summary, one not smaller: the
//! oldest output is left out instead), a
//! summary request that overflows retried on its newer half, a kill in
//! the middle leaving a session that resumes whole, and `/compact` with a
//! focus.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::{Value, json};
use support::term::Term;
use support::*;

const TASK: &str = "Read both notes files, then tell me which one mentions zebras.";

/// Two notes of about 5 KB, each cut to a quarter of what the tools leave
/// of a 4096-token window when read: reading both fills more than the 60%
/// the workspace sets for compaction (a quarter each cannot fill 80%).
fn workspace() -> Workspace {
    let ws = Workspace::new();
    let lines = |tag: &str| {
        (0..70)
            .map(|i| format!("{tag} line {i}: the quick brown fox jumps over the lazy dog\n"))
            .collect::<String>()
    };
    ws.write("notes1.txt", &format!("{}zebras live here\n", lines("one")));
    ws.write("notes2.txt", &lines("two"));
    ws.write("agent.yaml", "contextWindow: 4096\ncompactAt: 60\n");
    ws
}

/// The two reads, then what follows.
fn script(rest: Vec<Reply>) -> Vec<Reply> {
    let mut v = vec![
        call("c1", "read_file", json!({"path": "notes1.txt"})),
        call("c2", "read_file", json!({"path": "notes2.txt"})),
    ];
    v.extend(rest);
    v
}

fn run(ws: &Workspace, server: &Server, args: &[&str]) -> std::process::Output {
    ws.mm()
        .args([
            "agent.yaml",
            "-p",
            TASK,
            "-json",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .args(args)
        .output()
        .unwrap()
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .starts_with("You summarize a coding session")
}

fn sent_text(body: &Value) -> String {
    body["messages"].to_string()
}

fn log_records(ws: &Workspace) -> Vec<Value> {
    let path = ws.sessions().pop().expect("a session log");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn near_the_window_the_older_part_becomes_a_summary_and_the_task_stays_word_for_word() {
    let ws = workspace();
    let server = Server::start(script(vec![
        text("SUMMARY: notes1.txt was read; it mentions zebras."),
        text("notes1.txt mentions zebras."),
    ]));
    let out = run(&ws, &server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        4,
        "two reads, the summary, the answer: {}",
        stderr(&out)
    );
    assert!(is_summary_request(&reqs[2]), "{}", reqs[2]);
    let asked = sent_text(&reqs[2]);
    assert!(
        asked.contains("zebras live here"),
        "the summarizer sees the first read"
    );
    // The request after it: the summary in place of the first read, the
    // task word for word, the newest read kept whole.
    let after = sent_text(&reqs[3]);
    assert!(after.contains("SUMMARY: notes1.txt was read"));
    assert!(after.contains(&format!(
        "[The task in progress, in the user's words]\\n{TASK}"
    )));
    assert!(
        !after.contains("one line 5:"),
        "the first read is summarized"
    );
    assert!(after.contains("two line 5:"), "the newest read is kept");
    // Smaller than the conversation it stands for (the first request,
    // and the second read beside it).
    let second: usize = tool_results(&reqs[3])
        .iter()
        .filter(|(id, _)| id == "c2")
        .map(|(_, t)| t.len())
        .sum();
    assert!(second > 1000, "{after}");
    assert!(
        after.len() + 300 < sent_text(&reqs[1]).len() + second,
        "the request shrank"
    );
    assert!(
        stderr(&out).contains("compacted: 3 earlier messages"),
        "{}",
        stderr(&out)
    );
    assert_eq!(json_result(&out)["answer"], "notes1.txt mentions zebras.");
    // The log keeps every message, and the compaction as one record.
    let recs = log_records(&ws);
    let compacted: Vec<&Value> = recs.iter().filter(|r| r["type"] == "compacted").collect();
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0]["replaced"], 3);
    assert!(
        recs.iter().any(|r| r["type"] == "message"
            && r["content"]
                .as_str()
                .unwrap_or("")
                .contains("zebras live here")),
        "the summarized read stays in the log"
    );
    // A resumed session goes on from the summary.
    let server2 = Server::start(vec![text("Still zebras.")]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-resume",
            "last",
            "-p",
            "and now?",
            "-no-harness",
        ])
        .args(["-url", &server2.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let resumed = sent_text(&server2.requests()[0]);
    assert!(resumed.contains("SUMMARY: notes1.txt was read"));
    assert!(!resumed.contains("one line 5:"));
    // -show tells the whole story, the compaction marked.
    let id = ws.sessions()[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let show = ws.mm().args(["-show", &id]).output().unwrap();
    let shown = stdout(&show) + &stderr(&show);
    assert!(shown.contains("compacted: 3 earlier messages"), "{shown}");
}

#[test]
fn a_summary_cut_by_the_token_limit_is_refused_and_the_oldest_output_goes_instead() {
    let ws = workspace();
    let server = Server::start(script(vec![
        length_text("SUMMARY that goes on and"),
        text("notes1.txt mentions zebras."),
    ]));
    let out = run(&ws, &server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("could not compact the conversation: the summary was cut by the token limit")
            && err.contains("; left out 1 old tool output from what the model sees instead"),
        "{err}"
    );
    // Not on over the window: the oldest output is left out of the next
    // request (the newest kept), and the log keeps it; no compaction.
    let reqs = server.requests();
    let next = sent_text(&reqs[3]);
    assert!(
        !next.contains("one line 5:") && next.contains("two line 5:"),
        "{next}"
    );
    let recs = log_records(&ws);
    assert!(!recs.iter().any(|r| r["type"] == "compacted"));
    assert!(
        recs.iter().any(|r| r["type"] == "message"
            && r["content"].as_str().unwrap_or("").contains("one line 5:"))
    );
}

#[test]
fn a_summary_no_smaller_than_what_it_replaces_is_refused() {
    let ws = workspace();
    let long = "This summary repeats everything at length. ".repeat(200);
    let server = Server::start(script(vec![text(&long), text("notes1.txt.")]));
    let out = run(&ws, &server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not smaller than the 3 messages"),
        "{}",
        stderr(&out)
    );
    assert!(sent_text(&server.requests()[3]).contains("two line 5:"));
    assert!(!log_records(&ws).iter().any(|r| r["type"] == "compacted"));
}

#[test]
fn a_summary_request_that_overflows_is_asked_again_on_its_newer_half() {
    let ws = workspace();
    let overflow = r#"{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
    let server = Server::start(script(vec![
        Reply::Status {
            code: 400,
            body: overflow.into(),
            retry_after: None,
        },
        text("SUMMARY: the first read."),
        text("notes1.txt."),
    ]));
    let out = run(&ws, &server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert!(is_summary_request(&reqs[2]) && is_summary_request(&reqs[3]));
    let (first, second) = (sent_text(&reqs[2]), sent_text(&reqs[3]));
    assert!(first.contains("Read both notes files"));
    assert!(
        !second.contains("User: Read both notes") && second.contains("oldest part was left out"),
        "the oldest half is left out: {second}"
    );
    assert!(second.len() < first.len());
    assert!(sent_text(&reqs[4]).contains("SUMMARY: the first read."));
}

#[test]
fn a_kill_during_compaction_leaves_a_session_that_resumes_whole() {
    let ws = workspace();
    // The summary request gets headers and then silence.
    let server = Server::start(script(vec![Reply::StallAfter(vec![], 60)]));
    let mut child = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            TASK,
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while server.requests().len() < 3 {
        assert!(start.elapsed().as_secs() < 30, "no summary request");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(is_summary_request(&server.requests()[2]));
    child.kill().unwrap();
    child.wait().unwrap();
    // Resumed, the whole conversation is there (and, still near the
    // window, compacted first, from all of it).
    let server2 = Server::start(vec![text("SUMMARY: both read."), text("notes1.txt.")]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-resume",
            "last",
            "-p",
            "go on",
            "-no-harness",
        ])
        .args(["-url", &server2.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server2.requests();
    assert!(is_summary_request(&reqs[0]));
    let sent = sent_text(&reqs[0]);
    // The first read is summarized; the second, summarized or kept as
    // the newest part, is in what the model gets.
    let all: String = reqs.iter().map(sent_text).collect();
    assert!(
        sent.contains("one line 5:") && all.contains("two line 5:"),
        "nothing lost"
    );
    assert!(sent.contains("Read both notes files"));
}

/// A REPL session of two turns, the first a long message, and a server
/// whose next reply is a summary: ready for `/compact`.
fn two_turns_in_the_repl(ws: &Workspace) -> (Server, Term) {
    let server = Server::start(vec![
        text("Noted."),
        text("You are welcome."),
        text("SUMMARY: the user listed numbers 1 to 300."),
    ]);
    let numbers: Vec<String> = (1..=300).map(|n| n.to_string()).collect();
    let mut t = Term::start(ws, &["-url", &server.url(), "-no-harness"]);
    t.expect("context");
    t.send(&format!("Remember these numbers: {}\r", numbers.join(" ")));
    t.expect("Noted.");
    t.send("Thanks.\r");
    t.expect("You are welcome.");
    (server, t)
}

#[test]
fn slash_compact_takes_a_focus_and_shows_the_summary() {
    let ws = Workspace::new();
    let (server, mut t) = two_turns_in_the_repl(&ws);
    t.send("/compact keep the numbers\r");
    t.expect("compacted: 2 earlier messages");
    t.expect("SUMMARY: the user listed numbers");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let reqs = server.requests();
    assert!(is_summary_request(&reqs[2]));
    assert!(sent_text(&reqs[2]).contains("Keep above all: keep the numbers"));
}

/// The part of a raw request body a server's prompt cache can reuse: all
/// up to the end of its messages.
fn through_messages(raw: &str) -> &str {
    // Keys are sorted: `max_tokens`, `messages`, then `model`.
    let end = raw.find("],\"model\"").expect("a messages array");
    &raw[..end]
}

/// The tools, the body's last key (sorted order).
fn tools_part(raw: &str) -> Option<&str> {
    let start = raw.find("\"tools\"")?;
    Some(&raw[start..])
}

/// Ten rounds with tool calls, a failing test run fed back and a
/// follow-up on an unbacked claim: every request starts with the bytes of
/// the one before, so a local server's prompt cache keeps matching.
#[test]
fn the_request_prefix_stays_byte_identical_over_ten_rounds() {
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    ws.write(
        "test_calc.py",
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\nif __name__ == '__main__':\n    unittest.main()\n",
    );
    let edit = |id: &str, path: &str, old: &str, new: &str| {
        call(
            id,
            "edit_file",
            json!({"path": path, "old_string": old, "replacement": new}),
        )
    };
    let mut script = vec![
        call("c1", "list_dir", json!({})),
        call("c2", "read_file", json!({"path": "calc.py"})),
        call("c3", "read_file", json!({"path": "test_calc.py"})),
        call("c4", "grep", json!({"pattern": "def "})),
        edit(
            "c5",
            "calc.py",
            "    return a + b\n",
            "    return a + b\n\n\ndef mul(a, b):\n    return a + b\n",
        ),
        edit(
            "c6",
            "test_calc.py",
            "from calc import add\n",
            "from calc import add, mul\n",
        ),
        edit(
            "c7",
            "test_calc.py",
            "        self.assertEqual(add(1, 2), 3)\n",
            "        self.assertEqual(add(1, 2), 3)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
        ),
        // A claim the failing test run contradicts.
        text("Done: mul is added and its test passes."),
        call("c9", "read_file", json!({"path": "calc.py"})),
        edit(
            "c10",
            "calc.py",
            "def mul(a, b):\n    return a + b",
            "def mul(a, b):\n    return a * b",
        ),
        text("mul now multiplies; both tests pass."),
    ];
    // Whatever else the harness asks, it gets an answer.
    for _ in 0..6 {
        script.push(text("mul multiplies and both tests pass."));
    }
    let server = Server::start(script);
    let out = ws
        .mm()
        .args([
            "-p",
            "Add mul(a, b) to calc.py, with a test.",
            "-url",
            &server.url(),
        ])
        .args(["-json", "-yolo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        ws.read("calc.py").contains("return a * b"),
        "{}",
        stderr(&out)
    );
    let raw = server.raw_requests();
    assert!(
        raw.len() >= 10,
        "ten rounds or more: {}\n{}",
        raw.len(),
        stderr(&out)
    );
    let all = server.requests();
    let fed_back: Vec<String> = all
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        fed_back
            .iter()
            .any(|t| t.contains("FAIL") || t.contains("fail")),
        "a failing test run was fed back: {fed_back:#?}"
    );
    for (i, pair) in raw.windows(2).enumerate() {
        let (before, after) = (through_messages(&pair[0]), &pair[1]);
        assert!(
            after.starts_with(before),
            "request {} does not start with request {}'s bytes",
            i + 2,
            i + 1
        );
        if let (Some(a), Some(b)) = (tools_part(&pair[0]), tools_part(&pair[1])) {
            assert_eq!(
                a,
                b,
                "the tools changed between requests {} and {}",
                i + 1,
                i + 2
            );
        }
    }
}

/// `-ctx rebuild`: a read that a later write made stale is left out, and
/// the session state (files changed) rides on the newest message; the
/// same conversation in the compact mode sends the read whole. Both
/// modes send the same first request.
#[test]
fn a_rebuilt_request_leaves_out_a_stale_read_and_says_what_changed() {
    let run_mode = |mode: &str| {
        let ws = Workspace::new();
        let more: String = (0..30)
            .map(|i| format!("def times_{i}(x):\n    return x * {i}\n\n"))
            .collect();
        ws.write(
            "calc.py",
            &format!("def add(a, b):\n    return a - b  # ORIGINAL\n\n{more}"),
        );
        let server = Server::start(vec![
            call("c1", "read_file", json!({"path": "calc.py"})),
            call(
                "c2",
                "write_file",
                json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
            ),
            text("Fixed add."),
        ]);
        let out = ws
            .mm()
            .args(["-p", "fix add in calc.py", "-json", "-no-harness"])
            .args(["-url", &server.url(), "-ctx", mode])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let root = ws.path().display().to_string();
        let first = server.raw_requests()[0].replace(&root, "WORKSPACE");
        (first, server.requests(), json_result(&out))
    };
    let (first_r, reqs_r, json_r) = run_mode("rebuild");
    let (first_c, reqs_c, json_c) = run_mode("compact");
    assert_eq!(
        first_r, first_c,
        "the first request is the same in both modes"
    );
    let last_r = sent_text(&reqs_r[2]);
    let last_c = sent_text(&reqs_c[2]);
    assert!(last_c.contains("ORIGINAL"), "compact sends the read whole");
    assert!(
        !last_r.contains("ORIGINAL"),
        "rebuild leaves the stale read out"
    );
    assert!(last_r.contains("file contents left out: the file changed"));
    let newest = reqs_r[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(newest["role"], "tool");
    let newest = newest["content"].as_str().unwrap_or("");
    assert!(
        newest.contains("[mm: session state]")
            && newest.contains("files changed this session: calc.py"),
        "{newest}"
    );
    assert!(!last_c.contains("[mm: session state]"));
    // -json says the mode and what each request came to in both.
    assert_eq!(json_r["context_mode"], "rebuild");
    assert_eq!(json_c["context_mode"], "compact");
    let per = json_r["per_request"].as_array().unwrap();
    assert_eq!(per.len(), 3);
    let (c, b) = (
        per[2]["as_compact"].as_u64().unwrap(),
        per[2]["as_rebuild"].as_u64().unwrap(),
    );
    assert!(b < c, "the rebuilt third request is smaller: {b} vs {c}");
    assert_eq!(per[0]["as_compact"], per[0]["as_rebuild"]);
}

/// Rebuilt requests over a few turns on a small window: once the
/// dialogue passes half the window the older turns are left out, the
/// state block names the session's first request, and nothing is
/// summarized.
#[test]
fn rebuilt_requests_leave_older_turns_out_and_keep_the_first_request() {
    let ws = workspace();
    let turn = |prompt: &str, replies: Vec<Reply>| {
        let server = Server::start(replies);
        let mut cmd = ws.mm();
        cmd.args([
            "agent.yaml",
            "-p",
            prompt,
            "-json",
            "-no-harness",
            "-ctx",
            "rebuild",
        ]);
        if !ws.sessions().is_empty() {
            cmd.args(["-resume", "last"]);
        }
        let out = cmd.args(["-url", &server.url()]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        server.requests()
    };
    turn(
        "Does the first notes file mention zebras?",
        vec![
            call("c1", "read_file", json!({"path": "notes1.txt"})),
            text("Yes, zebras."),
        ],
    );
    let reqs = turn(
        "And the second one?",
        vec![
            call("c2", "read_file", json!({"path": "notes2.txt"})),
            text("No zebras there."),
        ],
    );
    assert!(
        reqs.iter().all(|r| !is_summary_request(r)),
        "nothing summarized"
    );
    let last = sent_text(reqs.last().unwrap());
    assert!(!last.contains("one line 5:"), "the first turn is left out");
    assert!(last.contains("two line 5:"), "the running turn is whole");
    assert!(
        last.contains(
            "the session began with this request: Does the first notes file mention zebras?"
        ),
        "{last}"
    );
    assert!(!log_records(&ws).iter().any(|r| r["type"] == "compacted"));
}

/// `/ctx` in the REPL: says the mode and both modes' figures, switches,
/// and refuses a mode it does not know; `/stats` compares them.
#[test]
fn slash_ctx_says_and_switches_the_mode() {
    let ws = Workspace::new();
    let server = Server::start(vec![text("Noted."), text("Again.")]);
    let mut t = Term::start(&ws, &["-url", &server.url(), "-no-harness"]);
    t.expect("context");
    t.send("Remember the number 42.\r");
    t.expect("Noted.");
    t.send("/ctx\r");
    t.expect("context mode: compact; the next request ~");
    t.expect("as rebuild");
    t.send("/ctx rebuild\r");
    t.expect("context mode: rebuild (was compact)");
    t.send("/ctx sideways\r");
    t.expect("/ctx takes compact or rebuild, not sideways");
    t.send("And again.\r");
    t.expect("Again.");
    t.send("/stats\r");
    t.expect("context mode: rebuild");
    t.expect("turn 2 (1 request): sent");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// A `/compact` typed without a focus is told as asked for, in the live
/// run and in `-show` (a trial's exit transcript said "near the window").
#[test]
fn a_slash_compact_without_a_focus_is_told_as_asked_for_in_the_replay() {
    let ws = Workspace::new();
    let (server, mut t) = two_turns_in_the_repl(&ws);
    t.send("/compact\r");
    t.expect("compacted: 2 earlier messages");
    // A summary of a short part is held to half of it: the trial's tiny
    // conversation spent 40 s on a summary cut at 1,024 tokens.
    let summary = server
        .requests()
        .into_iter()
        .find(is_summary_request)
        .unwrap();
    let cap = summary["max_tokens"].as_u64().unwrap();
    assert!((160..1024).contains(&cap), "{cap}");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let show = ws.mm().args(["-show", "last"]).output().unwrap();
    let shown = stdout(&show) + &stderr(&show);
    assert!(
        shown.contains("/compact: compacted: 2 earlier messages"),
        "{shown}"
    );
    assert!(!shown.contains("near the window"), "{shown}");
}
