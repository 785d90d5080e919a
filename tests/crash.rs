//! 100 sessions SIGKILLed at random points (mid-stream, mid-tool, between
//! rounds) and resumed: every log parses, every record written before the
//! kill is still there, every resumed session finishes with a valid
//! conversation (no two user messages in a row, every call answered), and
//! no checkpoint ref the log names is lost.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// The same reply, each event `ms` after the one before.
fn slowly(reply: Reply, ms: u64) -> Reply {
    match reply {
        Reply::Sse(events) => Reply::Sse(events.into_iter().map(|(_, e)| (ms, e)).collect()),
        other => other,
    }
}

/// A tiny deterministic generator, so a failing run can be replayed.
fn next(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn log_lines(ws: &Workspace) -> Vec<String> {
    let Some(path) = ws.sessions().into_iter().last() else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // A torn last line (no newline) was never acknowledged.
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        lines.pop();
    }
    lines
}

/// The conversation a request sends is one a strict chat template takes.
fn check_conversation(req: &Value) -> Result<(), String> {
    let msgs = req["messages"].as_array().ok_or("no messages")?;
    let mut owed: HashSet<String> = HashSet::new();
    let mut last_role = "";
    for m in msgs {
        let role = m["role"].as_str().unwrap_or("");
        if role == "user" && last_role == "user" {
            return Err("two user messages in a row".into());
        }
        if role != "tool" && !owed.is_empty() {
            return Err(format!("tool calls without results: {owed:?}"));
        }
        match role {
            "assistant" => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    owed.insert(c["id"].as_str().unwrap_or("").to_string());
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("");
                if !owed.remove(id) {
                    return Err(format!("a result for no call ({id})"));
                }
            }
            _ => {}
        }
        last_role = role;
    }
    Ok(())
}

fn one_crash(i: u64) -> Result<bool, String> {
    let mut seed = i + 1;
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    git(&ws.path(), &["init", "-q"]);
    git(&ws.path(), &["add", "-A"]);
    git(&ws.path(), &["commit", "-qm", "init"]);
    let server = Server::start(vec![
        slowly(
            call(
                "w1",
                "write_file",
                json!({"path": format!("f{i}.txt"), "content": "x\n"}),
            ),
            15,
        ),
        slowly(
            calls(&[
                ("b1", "bash", json!({"command": "ls"})),
                (
                    "w2",
                    "write_file",
                    json!({"path": "g.txt", "content": "y\n"}),
                ),
            ]),
            15,
        ),
        slowly(text("all done now, really"), 20),
    ]);
    let mut child = ws
        .mm()
        .args(["-p", "write the files", "-url", &server.url()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The kill lands at a random point after the session exists: waited
    // for on disk, not guessed from the clock (a slow start made most
    // kills land before it).
    let start = std::time::Instant::now();
    while log_lines(&ws).is_empty() && start.elapsed() < Duration::from_secs(60) {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(next(&mut seed) % 900));
    let _ = child.kill();
    let _ = child.wait();
    let before = log_lines(&ws);
    if before.is_empty() {
        // Killed before the session existed: nothing to resume.
        return Ok(false);
    }
    let again = Server::start(vec![text("finished"), text("finished")]);
    let o = ws.run(&again, "go on", &["-resume", "last", "-json"]);
    let result: Value = serde_json::from_slice(&o.stdout)
        .map_err(|e| format!("run {i}: resume printed no JSON ({e}): {}", stderr(&o)))?;
    if result["outcome"] != "done" {
        return Err(format!(
            "run {i}: the resumed session did not finish: {result}"
        ));
    }
    let after = log_lines(&ws);
    if after.len() < before.len() || after[..before.len()] != before[..] {
        return Err(format!(
            "run {i}: records written before the kill were lost"
        ));
    }
    for (n, l) in after.iter().enumerate() {
        serde_json::from_str::<Value>(l)
            .map_err(|e| format!("run {i}: log line {} does not parse: {e}", n + 1))?;
    }
    for req in again.requests() {
        check_conversation(&req).map_err(|e| format!("run {i}: {e}"))?;
    }
    let refs = git(
        &ws.path(),
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/mm/checkpoints",
        ],
    );
    let refs: HashSet<&str> = refs.lines().collect();
    for l in &after {
        let v: Value = serde_json::from_str(l).unwrap_or_default();
        if v["type"] == "checkpoint" {
            let id = v["checkpoint"]["id"].as_str().unwrap_or("");
            if !refs.contains(id) {
                return Err(format!("run {i}: checkpoint {id} has no ref any more"));
            }
        }
    }
    Ok(true)
}

#[test]
fn sessions_killed_at_random_points_resume_whole() {
    let runs: Mutex<Vec<u64>> = Mutex::new((0..100).collect());
    let errors = Mutex::new(Vec::new());
    let resumed = Mutex::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let Some(i) = runs.lock().unwrap().pop() else {
                        return;
                    };
                    match one_crash(i) {
                        Ok(true) => *resumed.lock().unwrap() += 1,
                        Ok(false) => {}
                        Err(e) => errors.lock().unwrap().push(e),
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let resumed = resumed.into_inner().unwrap();
    assert_eq!(resumed, 100, "runs that had a session to resume");
}
