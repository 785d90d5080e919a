//! `ask_agent` and `--ask`: the asked agent runs as a child `mm -acp`
//! against its own scripted server; the asker gets its answer, decides
//! its permission requests by `mmConfigs.NAME.yolo`, stops at the depth
//! limit, and leaves no child behind when one crashes or hangs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::json;
use support::*;

const COUNTRY: &str = "structuredOutput: |\n  // One country.\n  type Country struct {\n      // The capital CITY.\n      Capital string `json:\"capital\"`\n  }\n  var Answer = Country{}\n";

/// A coordinator (`agent.yaml`) on `parent` that may ask `facts`
/// (`facts.yaml`) on `child`.
fn coordinator(ws: &Workspace, parent: &Server, child_yaml: &str, extra: &str) {
    ws.write(
        "agent.yaml",
        &format!(
            "baseUrl: {}\nbashTool: false\nmmConfigs:\n  facts:\n    path: facts.yaml\n    description: Facts about countries. Answers in JSON.\n{extra}",
            parent.url()
        ),
    );
    ws.write("facts.yaml", child_yaml);
}

fn ask_call(prompt: &str) -> Reply {
    call(
        "a1",
        "ask_agent",
        json!({"agent": "facts", "prompt": prompt}),
    )
}

fn asked_result(parent: &Server) -> String {
    let reqs = parent.requests();
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].1.clone()
}

/// The `mm` processes still running whose command line names `file`.
fn running_with(file: &std::path::Path) -> Vec<String> {
    let needle = file.to_string_lossy().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&needle) && cmd.contains("-acp") {
                found.push(cmd);
            }
        }
    }
    found
}

#[test]
fn a_json_child_answers_the_coordinator_through_ask_agent() {
    let child = Server::start(vec![text("{\"capital\": \"Hanoi\"}")]);
    let parent = Server::start(vec![
        ask_call("capital of Vietnam"),
        text("Hanoi, says facts."),
    ]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "capital?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hanoi, says facts.");
    // The tool's schema lists the agent; its result is the child's JSON.
    let tools = &parent.requests()[0]["tools"];
    let ask = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "ask_agent")
        .expect("ask_agent offered");
    assert_eq!(
        ask["function"]["parameters"]["properties"]["agent"]["enum"],
        json!(["facts"])
    );
    assert_eq!(asked_result(&parent).trim(), "{\"capital\": \"Hanoi\"}");
    // The child got the prompt as written, with its schema.
    let creq = &child.requests()[0];
    assert_eq!(creq["response_format"]["type"], "json_schema");
    let last = creq["messages"].as_array().unwrap().last().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("capital of Vietnam")
    );
    // The child's session is saved in the workspace: two sessions.
    assert_eq!(ws.sessions().len(), 2, "{:?}", ws.sessions());
    assert!(
        stderr(&out).contains("answered (session"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ask_prints_only_the_asked_agents_answer() {
    let child = Server::start(vec![text("{\"capital\": \"Hanoi\"}")]);
    let parent = Server::start(vec![]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "--ask", "facts", "-p", "capital of Vietnam"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"capital\": \"Hanoi\"}\n");
    assert!(
        parent.requests().is_empty(),
        "the coordinator's model is not asked"
    );

    // What is piped goes to the asked agent inside its prompt.
    let child = Server::start(vec![text("{\"capital\": \"Hanoi\"}")]);
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    let out = output_with_stdin(
        ws.mm().args([
            "agent.yaml",
            "--ask",
            "facts",
            "-p",
            "the capital of this country",
        ]),
        b"Vietnam\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let asked = serde_json::to_string(&child.requests()[0]["messages"]).unwrap();
    assert!(
        asked.contains("the capital of this country\\n\\n[piped to mm on stdin, for context]\\n```\\nVietnam\\n```"),
        "{asked}"
    );

    let out = ws
        .mm()
        .args(["agent.yaml", "--ask", "nobody", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("declared: facts"), "{}", stderr(&out));
}

/// A child whose model writes `from-child.txt`, then says "done".
fn writing_child() -> Server {
    Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "from-child.txt", "content": "hi\n"}),
        ),
        text("done"),
    ])
}

/// A child that writes a file asks its asker, who answers by `yolo`.
fn child_writes(yolo: bool) -> (Workspace, Server) {
    let child = writing_child();
    let parent = Server::start(vec![ask_call("write the file"), text("ok")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!("baseUrl: {}\nbashTool: false\n", child.url()),
        if yolo { "    yolo: true\n" } else { "" },
    );
    let out = ws.mm().args(["agent.yaml", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(if yolo {
            "granted (yolo)"
        } else {
            "refused (no yolo"
        }),
        "{}",
        stderr(&out)
    );
    let results = tool_results(&child.requests()[1]);
    assert_eq!(results.len(), 1);
    (ws, parent)
}

#[test]
fn the_askers_yolo_grants_the_childs_permission_requests() {
    let (ws, _) = child_writes(true);
    assert_eq!(ws.read("from-child.txt"), "hi\n");
}

#[test]
fn without_yolo_the_childs_permission_requests_are_refused() {
    let (ws, _) = child_writes(false);
    assert!(!ws.path().join("from-child.txt").exists());
}

#[test]
fn a_read_only_asker_caps_its_child() {
    // The child's own file says yolo; the asker is read-only: the child
    // cannot write, whatever the asker's yolo for it.
    let child = writing_child();
    let parent = Server::start(vec![ask_call("write the file"), text("ok")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!("baseUrl: {}\nbashTool: false\nyolo: true\n", child.url()),
        "    yolo: true\nsandbox: read-only\n",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "go", "-unfenced"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.path().join("from-child.txt").exists());
    // The child was told it is read-only: it had no write tool to call.
    let tools = child.requests()[0]["tools"].to_string();
    assert!(!tools.contains("write_file"), "{tools}");
}

#[test]
fn agents_asking_agents_stop_at_the_depth_limit() {
    let parent = Server::start(vec![ask_call("anything"), text("ok")]);
    let ws = Workspace::new();
    coordinator(&ws, &parent, "baseUrl: http://127.0.0.1:9/v1\n", "");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "go"])
        .env("MM_ASK_DEPTH", "3")
        .env("MM_ASK_CHAIN", "a → b → c")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let result = asked_result(&parent);
    assert!(
        result.contains("already 3 deep (a → b → c → facts)") && result.contains("3 is the limit"),
        "{result}"
    );
}

#[test]
fn a_child_that_crashes_is_a_clear_tool_error() {
    let parent = Server::start(vec![ask_call("anything"), text("ok")]);
    let ws = Workspace::new();
    coordinator(&ws, &parent, "baseUrl: [unclosed\n", "");
    let out = ws.mm().args(["agent.yaml", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let result = asked_result(&parent);
    assert!(
        result.contains("agent facts stopped before it answered") && result.contains("facts.yaml"),
        "{result}"
    );
    assert!(running_with(&ws.path().join("facts.yaml")).is_empty());
}

#[test]
fn a_child_that_hangs_is_stopped_and_leaves_no_process() {
    let child = Server::start(vec![Reply::StallAfter(vec![], 60)]);
    let parent = Server::start(vec![ask_call("anything"), text("ok")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\nfirstTokenTimeout: 5m\nwatchdogTimeout: 5m\n",
            child.url()
        ),
        "firstTokenTimeout: 1s\nwatchdogTimeout: 1s\n",
    );
    let start = std::time::Instant::now();
    let out = ws.mm().args(["agent.yaml", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    let result = asked_result(&parent);
    assert!(
        result.contains("agent facts sent nothing for 2 s"),
        "{result}"
    );
    assert!(
        running_with(&ws.path().join("facts.yaml")).is_empty(),
        "an orphan child: {:?}",
        running_with(&ws.path().join("facts.yaml"))
    );
}

#[test]
fn ask_commands_in_the_repl_add_the_pair_to_the_conversation() {
    let child = Server::start(vec![
        text("{\"capital\": \"Hanoi\"}"),
        text("{\"capital\": \"Paris\"}"),
    ]);
    let parent = Server::start(vec![text("Noted: Hanoi.")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    let mut t = support::term::Term::start(&ws, &["agent.yaml"]);
    t.expect("› ");
    t.send("/help\r");
    t.expect("/ask-with-context-facts");
    t.send("/ask-facts capital of Vietnam\r");
    t.expect("{\"capital\": \"Hanoi\"}");
    t.expect("› ");
    t.send("thanks\r");
    t.expect("Noted: Hanoi.");
    t.expect("› ");
    // The coordinator's model saw the question and the answer.
    let msgs = parent.requests()[0]["messages"].to_string();
    assert!(
        msgs.contains("(I asked the agent facts:) capital of Vietnam") && msgs.contains("Hanoi"),
        "{msgs}"
    );
    // With context, the child gets the conversation so far.
    t.send("/ask-with-context-facts and France?\r");
    t.expect("{\"capital\": \"Paris\"}");
    t.expect("› ");
    let sent = child.requests()[1]["messages"].to_string();
    assert!(
        sent.contains("The conversation so far")
            && sent.contains("Noted: Hanoi.")
            && sent.contains("and France?"),
        "{sent}"
    );
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn commands_find_mm_and_the_sessions_ceiling_in_their_environment() {
    let server = Server::start(vec![
        call(
            "b1",
            "bash",
            json!({"command": "echo \"bin=$MM_BIN ceiling=$MM_SANDBOX_CEILING\""}),
        ),
        text("ok"),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "go", &["-yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains(&format!("bin={}", env!("CARGO_BIN_EXE_mm")))
            && result.contains("ceiling=full"),
        "{result}"
    );
}

#[test]
fn an_agent_file_rewritten_since_start_is_not_run() {
    let parent = Server::start(vec![
        call("r1", "read_file", json!({"path": "facts.yaml"})),
        call(
            "w1",
            "write_file",
            json!({"path": "facts.yaml", "content": "baseUrl: http://127.0.0.1:9/v1\napproveEdits: false\n"}),
        ),
        ask_call("anything"),
        text("ok"),
    ]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        "baseUrl: http://127.0.0.1:9/v1\n",
        "editTools: true\n",
    );
    let out = ws.mm().args(["agent.yaml", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&parent.requests()[3]);
    let asked = &results.iter().find(|(id, _)| id == "a1").unwrap().1;
    assert!(
        asked.contains("changed since mm loaded it"),
        "{asked} {results:?}"
    );
}

#[test]
fn an_asker_that_may_not_grant_cannot_let_its_child_grant() {
    // facts has yolo in this file, but this mm was itself asked by an
    // agent that grants nothing (MM_ASK_YOLO=0): the write is refused.
    let child = writing_child();
    let parent = Server::start(vec![ask_call("write the file"), text("ok")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!("baseUrl: {}\nbashTool: false\n", child.url()),
        "    yolo: true\n",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "go"])
        .env("MM_ASK_YOLO", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refused (no yolo"),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("from-child.txt").exists());
}

#[test]
fn a_rewritten_file_further_down_the_chain_is_not_run_either() {
    // facts may ask g. The coordinator's model rewrites g.yaml, then asks
    // facts, whose model asks g: g's file was pinned when the coordinator
    // started, so it is not run.
    let child = Server::start(vec![
        call("g1", "ask_agent", json!({"agent": "g", "prompt": "hello"})),
        text("done"),
    ]);
    let parent = Server::start(vec![
        call("r1", "read_file", json!({"path": "g.yaml"})),
        call(
            "w1",
            "write_file",
            json!({"path": "g.yaml", "content": "baseUrl: http://127.0.0.1:9/v1\napiKeyEnv: SECRET_TOKEN\n"}),
        ),
        ask_call("ask g"),
        text("ok"),
    ]);
    let ws = Workspace::new();
    ws.write("g.yaml", "baseUrl: http://127.0.0.1:9/v1\n");
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\nmmConfigs:\n  g:\n    path: g.yaml\n",
            child.url()
        ),
        "editTools: true\n",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "go"])
        .env("SECRET_TOKEN", "s3cr3t")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let asked_g = &tool_results(&child.requests()[1])[0].1;
    assert!(asked_g.contains("changed since mm loaded it"), "{asked_g}");
}

#[test]
fn what_an_asked_agent_changed_is_in_the_askers_report() {
    let child = Server::start(vec![
        call(
            "w1",
            "write_file",
            json!({"path": "made.txt", "content": "hi\n"}),
        ),
        text("done"),
    ]);
    let parent = Server::start(vec![ask_call("make the file"), text("ok")]);
    let ws = Workspace::new();
    git(&ws.path(), &["init", "-q"]);
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\napproveEdits: false\n",
            child.url()
        ),
        "",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "go", "-json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ws.read("made.txt"), "hi\n");
    let v = json_result(&out);
    assert_eq!(v["changed_by_commands"], json!(["made.txt"]), "{v}");
}

#[test]
fn a_terminated_asker_leaves_none_of_its_childs_commands() {
    let child = Server::start(vec![
        call("b1", "bash", json!({"command": "sleep 1234"})),
        text("done"),
    ]);
    let parent = Server::start(vec![ask_call("wait"), text("ok")]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!("baseUrl: {}\nsandbox: full\n", child.url()),
        "    yolo: true\nyolo: true\n",
    );
    let mut mm = ws
        .mm()
        .args(["agent.yaml", "-p", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == "sleep 1234")
    };
    let start = std::time::Instant::now();
    while !sleeping() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the child's command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(mm.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let _ = mm.wait();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!sleeping(), "the asked agent's command outlived the asker");
}

/// `-max-requests` counts the asked agent's requests too, as its help
/// says: the child may make what is left, and what it made is charged.
#[test]
fn a_childs_requests_count_toward_the_askers_max_requests() {
    let child = Server::start(vec![text("{\"capital\": \"Hanoi\"}")]);
    let parent = Server::start(vec![
        ask_call("capital of Vietnam"),
        text("Hanoi, says facts."),
    ]);
    let ws = Workspace::new();
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    // Three: the ask, the child's answer, the reply with it.
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "capital?", "-max-requests", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hanoi, says facts.");
    // Two: the child's request takes the second, none is left for the reply.
    let child = Server::start(vec![text("{\"capital\": \"Hanoi\"}")]);
    let parent = Server::start(vec![
        ask_call("capital of Vietnam"),
        text("Hanoi, says facts."),
    ]);
    coordinator(
        &ws,
        &parent,
        &format!(
            "baseUrl: {}\nbashTool: false\neditTools: false\n{COUNTRY}",
            child.url()
        ),
        "",
    );
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "capital?", "-max-requests", "2"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert_eq!(child.requests().len(), 1, "{err}");
    assert_eq!(parent.requests().len(), 1, "{err}");
    assert!(
        err.contains("the request budget (-max-requests 2) is used up"),
        "{err}"
    );
}
