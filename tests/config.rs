//! Agent files: the Go mm's files load unchanged; mistakes are errors that
//! name the file, line:col and the closest valid key, with exit status 2.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::path::Path;

use serde_json::json;
use support::*;

fn compat(ws: &Workspace) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat");
    for e in std::fs::read_dir(src).unwrap().flatten() {
        std::fs::copy(e.path(), ws.dir.path().join(e.file_name())).unwrap();
    }
}

/// The Go agent's `~/.agent/config.json` is a layer below ours, its keys
/// mapped, the ones mm does not use named.
#[test]
fn the_go_agents_config_json_is_read_below_ours() {
    let ws = Workspace::new();
    let dir = ws.home.path().join(".agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"url": "http://127.0.0.1:1235", "model": "gemma-12b", "command_timeout_sec": 45, "compact_tokens": 9000}"#,
    )
    .unwrap();
    let out = ws.mm().arg("-show-config").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("baseUrl       http://127.0.0.1:1235/v1"),
        "{shown}"
    );
    assert!(shown.contains("model         gemma-12b"), "{shown}");
    assert!(
        stderr(&out).contains("compact_tokens not used by mm"),
        "{}",
        stderr(&out)
    );
    // Ours wins over it.
    ws.write(".mm/config.yaml", "model: qwen\n");
    let out = ws.mm().args(["-show-config", "-trust"]).output().unwrap();
    assert!(
        stdout(&out).contains("model         qwen"),
        "{}",
        stdout(&out)
    );
    // A broken file is named with its line and column.
    std::fs::write(dir.join("config.json"), "{\n  \"url\": ,\n}").unwrap();
    let out = ws.mm().arg("-show-config").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(".agent/config.json:2:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_go_mm_agent_files_load_unchanged() {
    let ws = Workspace::new();
    compat(&ws);
    for file in [
        "agent.coordinator.yaml",
        "agent.countries.yaml",
        "agent.triage.yaml",
    ] {
        let out = ws.mm().args([file, "-show-prompt"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
    }
    let bob = ws
        .mm()
        .args(["agent.coordinator.yaml", "-show-prompt"])
        .output()
        .unwrap();
    assert!(
        stdout(&bob).starts_with("Your name is Bob."),
        "{}",
        stdout(&bob)
    );
    // Every tool the request carries is counted and named, the agents it
    // may ask too.
    assert!(
        stderr(&bob).contains("tools: read_file,") && stderr(&bob).contains(", ask_agent"),
        "{}",
        stderr(&bob)
    );
    let countries = ws
        .mm()
        .args(["-show-prompt", "agent.countries.yaml"])
        .output()
        .unwrap();
    // The declarations reach the prompt, comments and all, and the schema
    // compiled from them is shown.
    let shown = stdout(&countries);
    assert!(
        shown.starts_with(
            "You answer questions about countries. Fill every field from what you know.\n\nAnswer with JSON only"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("the capital CITY (not the country)"),
        "{shown}"
    );
    assert!(
        shown.contains("[response_format: the JSON Schema of every answer, named Countries]"),
        "{shown}"
    );
    assert!(
        stderr(&countries).contains("0 tools"),
        "{}",
        stderr(&countries)
    );
    // Everything the file asks is acted on now (`skillsDir: no-skills`
    // names no folder: no skills, and nothing to say).
    assert!(
        !stderr(&countries).contains("not acted on") && !stderr(&countries).contains("skill"),
        "{}",
        stderr(&countries)
    );
    let plain = ws.mm().args(["-show-prompt"]).output().unwrap();
    assert!(
        !stderr(&plain).contains("not acted on"),
        "{}",
        stderr(&plain)
    );
}

#[test]
fn an_agent_file_drives_the_request() {
    let server = Server::start(vec![text(
        r#"[{"name":"Vietnam","capital":"Hanoi","languages":[]}]"#,
    )]);
    let ws = Workspace::new();
    compat(&ws);
    let out = ws.run(
        &server,
        "capital of Vietnam",
        &["agent.coordinator.yaml", "--ask", "countries"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(answer[0]["capital"], "Hanoi");
    let req = &server.requests()[0];
    assert_eq!(req["model"], "hf.co/unsloth/Qwen3.5-4B-GGUF:Q4_K_M");
    assert_eq!(req["temperature"], 0.0);
    assert_eq!(req["max_tokens"], 4096);
    assert_eq!(
        req["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    assert!(req.get("tools").is_none(), "a JSON agent has no tools");

    let server = Server::start(vec![text("Bob here.")]);
    let out = ws.run(&server, "who are you?", &["agent.coordinator.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let req = &server.requests()[0];
    assert_eq!(req["parallel_tool_calls"], false);
    assert_eq!(req["max_tokens"], 8192);
    let names: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"write_file") && !names.contains(&"bash"),
        "{names:?}"
    );
}

#[test]
fn an_unknown_key_names_file_line_col_and_the_closest_key() {
    let ws = Workspace::new();
    ws.write("agent.yaml", "model: m\nmaxTurn: 3\n");
    let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("agent.yaml:2:1: unknown key \"maxTurn\""),
        "{err}"
    );
    assert!(err.contains("closest valid key is \"maxTurns\""), "{err}");
}

#[test]
fn wrong_types_and_bad_values_are_config_errors() {
    let ws = Workspace::new();
    for (text, expect) in [
        ("maxTurns: many\n", "agent.yaml:1:"),
        ("watchdogTimeout: 30\n", "needs a unit"),
        ("sandbox: open\n", "agent.yaml:1:"),
        ("provider: gpt\n", "unknown provider"),
        ("baseUrl: http://example.com/v1\n", "plain http"),
        ("acp:\n  name: a\n  titel: b\n", "agent.yaml:3:3"),
    ] {
        ws.write("agent.yaml", text);
        let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(stderr(&out).contains(expect), "{text}: {}", stderr(&out));
    }
    let out = ws.mm().args(["missing.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("missing.yaml: cannot read"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_personal_config_is_a_lower_layer() {
    let ws = Workspace::new();
    let cfg = ws.home.path().join(".config/mm");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("config.yaml"),
        "model: from-home\nsampling:\n  top_p: 0.9\n",
    )
    .unwrap();
    ws.write("agent.yaml", "sampling:\n  temperature: 0.7\n");
    let server = Server::start(vec![text("a"), text("b")]);
    let out = ws.run(&server, "hi", &["agent.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let req = &server.requests()[0];
    assert_eq!(req["model"], "from-home");
    assert_eq!(req["top_p"], 0.9);
    assert_eq!(req["temperature"], 0.7);
    let out = ws.run(&server, "hi", &["agent.yaml", "-model", "from-flag"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.requests()[1]["model"], "from-flag");
}

#[test]
fn agents_md_goes_into_the_system_prompt() {
    let ws = Workspace::new();
    ws.write("AGENTS.md", "Run the checks with make verify.\n");
    let out = ws.mm().arg("-show-prompt").output().unwrap();
    assert!(
        stdout(&out).contains("Run the checks with make verify."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn with_no_server_anywhere_mm_says_how_to_start_one() {
    let ws = Workspace::new();
    let closed = |_: ()| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        format!("http://127.0.0.1:{port}/v1")
    };
    let (a, b) = (closed(()), closed(()));
    let out = ws
        .mm()
        .args(["-p", "hi"])
        .env("MM_LOCAL_ENDPOINTS", format!("{a},{b}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    // It names where it looked, as it looked there.
    let host = |u: &str| {
        u.trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_string()
    };
    assert!(
        err.starts_with(&format!(
            "mm: could not reach a model server: nothing answered on {} (llama-server) or on {} (Ollama)",
            host(&a),
            host(&b)
        )),
        "{err}"
    );
    // One screen: what mm looked for, the three ways, nothing else.
    for way in [
        "scripts/setup",
        "ollama pull",
        "OPENAI_API_KEY",
        "mm doctor",
    ] {
        assert!(err.contains(way), "{way}: {err}");
    }
    assert_eq!(err.matches("mm:").count(), 1, "{err}");

    // The second endpoint (Ollama's place) is tried when the first is silent.
    let server = Server::start(vec![text("found you")]);
    let out = ws
        .mm()
        .args(["-p", "hi", "-json"])
        .env(
            "MM_LOCAL_ENDPOINTS",
            format!("{},{}", closed(()), server.url()),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_result(&out)["answer"], "found you");

    // When both answer, the first (llama-server's place) is the one used.
    let (first, second) = (
        Server::start(vec![text("first")]),
        Server::start(vec![text("second")]),
    );
    let out = ws
        .mm()
        .args(["-p", "hi", "-json"])
        .env(
            "MM_LOCAL_ENDPOINTS",
            format!("{},{}", first.url(), second.url()),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_result(&out)["answer"], "first");
    assert!(second.requests().is_empty());

    // A model the found server does not list is said at start.
    let server = Server::start(vec![text("still here")]);
    let out = ws
        .mm()
        .args(["-p", "hi", "-m", "nosuch-model"])
        .env("MM_LOCAL_ENDPOINTS", server.url())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("lists no model nosuch-model (it lists scripted-model)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests()[0]["model"], "nosuch-model");
}

#[test]
fn single_dash_long_flags_and_usage_errors() {
    let ws = Workspace::new();
    let out = ws.mm().arg("-version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("mm "), "{}", stdout(&out));
    let out = ws.mm().arg("-frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = ws.mm().arg("-json").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = ws.mm().arg("-h").output().unwrap();
    assert!(stdout(&out).contains("-max-rounds") || stdout(&out).contains("--max-rounds"));
}

/// The schema the first request of an agent file carries.
fn response_format(ws: &Workspace, file: &str) -> serde_json::Value {
    let out = ws
        .mm()
        .args([file, "-show-prompt", "-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    body["response_format"].clone()
}

#[test]
fn the_go_declarations_of_the_compat_files_compile_to_their_schemas() {
    let ws = Workspace::new();
    compat(&ws);
    let countries = response_format(&ws, "agent.countries.yaml");
    assert_eq!(countries["type"], "json_schema");
    assert_eq!(countries["json_schema"]["name"], "Countries");
    assert_eq!(countries["json_schema"]["strict"], true);
    insta::assert_snapshot!(
        "countries_schema",
        serde_json::to_string_pretty(&countries["json_schema"]["schema"]).unwrap()
    );
    let triage = response_format(&ws, "agent.triage.yaml");
    assert_eq!(triage["json_schema"]["name"], "Answer");
    insta::assert_snapshot!(
        "triage_schema",
        serde_json::to_string_pretty(&triage["json_schema"]["schema"]).unwrap()
    );
    // Properties keep their declaration order.
    let keys: Vec<&String> = triage["json_schema"]["schema"]["$defs"]["Report"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        ["title", "severity", "component", "summary", "duplicate"]
    );
}

#[test]
fn bad_declarations_are_config_errors_at_their_place_in_the_yaml_file() {
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        "bashTool: false\neditTools: false\nstructuredOutput: |\n  type T struct {\n      Name string `json:\"name\"`\n      Any interface{} `json:\"any\"`\n  }\n  var X = T{}\n",
    );
    let out = ws.mm().args(["agent.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agent.yaml:6:11: structuredOutput: interfaces are not supported"),
        "{}",
        stderr(&out)
    );
    // An agent with tools cannot answer in a fixed shape.
    ws.write(
        "tools.yaml",
        "editTools: false\nstructuredOutput: |\n  type T struct{}\n  var X = T{}\n",
    );
    let out = ws.mm().args(["tools.yaml", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("structuredOutput cannot be used with tools — this agent declares: bashTool (set bashTool: false)"),
        "{}",
        stderr(&out)
    );
}

/// A JSON agent in the workspace, as the Go mm's demo writes one.
fn json_agent(ws: &Workspace) {
    ws.write(
        "agent.json.yaml",
        "bashTool: false\neditTools: false\nstructuredOutput: |\n  type C struct {\n      Name    string  `json:\"name\"`    // the country\n      Capital *string `json:\"capital\"` // its capital city\n  }\n  var Countries = []C{}\n",
    );
}

#[test]
fn a_json_agent_prints_only_checked_json_and_fails_cleanly_otherwise() {
    let ws = Workspace::new();
    json_agent(&ws);
    let valid = r#"[{"name":"Vietnam","capital":"Hanoi"}]"#;
    let server = Server::start(vec![
        text(valid),
        text("Vietnam's capital is Hanoi."),
        text(r#"[{"name":"Vietnam"}]"#),
        length_text(r#"[{"name":"Vietnam","capital":"Ha"#),
    ]);
    let run = || {
        ws.mm()
            .args([
                "agent.json.yaml",
                "-p",
                "capital of Vietnam",
                "-url",
                &server.url(),
            ])
            .output()
            .unwrap()
    };
    let ok = run();
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(stdout(&ok), format!("{valid}\n"));
    let req = &server.requests()[0];
    assert_eq!(req["response_format"]["type"], "json_schema");
    assert_eq!(req["response_format"]["json_schema"]["name"], "Countries");
    assert!(req.get("tools").is_none(), "{req}");
    let system = req["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("// its capital city"), "{system}");

    for (what, words) in [
        ("prose", "the answer is not JSON"),
        ("a missing key", "does not have the declared shape: at /0"),
        ("a cut answer", "cut off by max_tokens"),
    ] {
        let out = run();
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{what}: nothing on stdout");
        let err = stderr(&out);
        assert!(
            err.contains("[structured output: ") && err.contains(words),
            "{what}: {err}"
        );
    }
}

#[test]
fn a_server_that_refuses_response_format_is_named() {
    let ws = Workspace::new();
    json_agent(&ws);
    let server = Server::start(vec![Reply::Status {
        code: 400,
        body: r#"{"error":{"message":"response_format is not supported by this model"}}"#.into(),
        retry_after: None,
    }]);
    let out = ws
        .mm()
        .args(["agent.json.yaml", "-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "[structured output: the server at {} does not accept response_format",
            server.url()
        )),
        "{err}"
    );
}

#[test]
fn the_version_names_the_commit() {
    let ws = Workspace::new();
    let out = ws.mm().arg("-version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = stdout(&out);
    assert!(
        v.starts_with(&format!("mm {} (", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let commit = v.split('(').nth(1).unwrap_or("");
    let hex = commit.chars().take_while(char::is_ascii_hexdigit).count();
    assert!(hex == 12 || commit.starts_with("unknown commit"), "{v}");
}

#[test]
fn plain_http_is_used_on_a_private_network_and_refused_to_a_public_host() {
    let ws = Workspace::new();
    ws.write(
        "lan.yaml",
        "baseUrl: http://192.168.77.1:8080/v1\nfallback: http://host.docker.internal:17434/v1\n",
    );
    let out = ws.mm().args(["lan.yaml", "-show-prompt"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the connection to 192.168.77.1 is plain http: not encrypted")
            && err.contains("the connection to host.docker.internal is plain http"),
        "{err}"
    );
    ws.write("public.yaml", "baseUrl: http://models.example.com/v1\n");
    let out = ws
        .mm()
        .args(["public.yaml", "-show-prompt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("allowInsecureHttp"),
        "{}",
        stderr(&out)
    );
    ws.write(
        "allowed.yaml",
        "baseUrl: http://models.example.com/v1\nallowInsecureHttp: true\n",
    );
    let out = ws
        .mm()
        .args(["allowed.yaml", "-show-prompt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Skills from the repository and the personal folder: the catalog in the
/// system prompt, `read_skill` through the model loop, a broken file named
/// at start, `-no-skills`; without skills the prompt has no catalog.
#[test]
fn skills_are_listed_loaded_and_can_be_turned_off() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    ws.write(
        ".mm/skills/release/SKILL.md",
        "---\nname: release\ndescription: How this project cuts a release.\n---\nRun the changelog check first.\n",
    );
    ws.write(".mm/skills/release/steps.txt", "tag, push\n");
    std::fs::create_dir_all(home.path().join("skills")).unwrap();
    std::fs::write(home.path().join("skills/broken.md"), "no front matter\n").unwrap();
    let server = Server::start(vec![
        call("c1", "read_skill", serde_json::json!({"name": "release"})),
        text("Released."),
    ]);
    let out = ws
        .mm()
        .env("MM_CONFIG_DIR", home.path())
        .args(["-p", "cut a release", "-no-harness", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("broken.md left out: no front matter"),
        "{}",
        stderr(&out)
    );
    let reqs = server.requests();
    let system = reqs[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- release: How this project cuts a release."),
        "{system}"
    );
    assert!(
        !system.contains("Run the changelog check"),
        "only the catalog"
    );
    let results = tool_results(&reqs[1]);
    assert!(
        results[0].1.contains("Run the changelog check first.")
            && results[0].1.contains("steps.txt"),
        "{results:?}"
    );
    // -no-skills: no catalog, no tool.
    let server = Server::start(vec![text("ok")]);
    let out = ws
        .mm()
        .env("MM_CONFIG_DIR", home.path())
        .args([
            "-p",
            "hi",
            "-no-harness",
            "-no-skills",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = server.requests()[0].to_string();
    assert!(
        !body.contains("read_skill") && !body.contains("Skills ("),
        "{body}"
    );
}

/// Custom commands from the repository and the personal folder: `-p
/// "/NAME args"` sends the body with the arguments placed, on the
/// command's model and with only its tools; the REPL lists and runs them;
/// a built-in of the same name wins and a broken file is named.
#[test]
fn custom_commands_run_with_their_arguments_model_and_tools() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    ws.write(
        ".mm/commands/review.md",
        "---\ndescription: Review one file\nmodel: reviewer-model\nallowedTools: [read_file, grep]\n---\nReview $1 for $2 and nothing else.\n",
    );
    std::fs::create_dir_all(home.path().join("commands")).unwrap();
    std::fs::write(
        home.path().join("commands/review.md"),
        "Personal, shadowed.\n",
    )
    .unwrap();
    std::fs::write(home.path().join("commands/diff.md"), "Built in wins.\n").unwrap();
    std::fs::write(
        home.path().join("commands/todo.md"),
        "List the TODOs: $ARGUMENTS\n",
    )
    .unwrap();
    let server = Server::start(vec![text("Reviewed.")]);
    let out = ws
        .mm()
        .env("MM_CONFIG_DIR", home.path())
        .args([
            "-p",
            "/review app.py bugs",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("diff.md left out: /diff is built in"),
        "{}",
        stderr(&out)
    );
    let req = &server.requests()[0];
    assert_eq!(req["model"], "reviewer-model");
    let msgs = req["messages"].as_array().unwrap();
    let user = msgs.last().unwrap()["content"].as_str().unwrap();
    assert!(
        user.starts_with("Review app.py for bugs and nothing else."),
        "{user}"
    );
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "grep"]);

    let server = Server::start(vec![text("No TODOs."), text("Plain.")]);
    let mut t = support::term::Term::start_with(
        &ws,
        &["-url", &server.url(), "-no-harness"],
        &[("MM_CONFIG_DIR", home.path().to_str().unwrap())],
    );
    t.expect("context");
    t.send("/help\r");
    t.expect("/todo");
    t.send("/todo in src\r");
    t.expect("No TODOs.");
    t.send("what now?\r");
    t.expect("Plain.");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let reqs = server.requests();
    let sent = reqs[0]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sent.starts_with("List the TODOs: in src"), "{sent}");
    // The next turn is the session's model and every tool again.
    assert_eq!(reqs[1]["model"], "scripted-model");
    assert!(reqs[1]["tools"].as_array().unwrap().len() > 2);
}

/// Command tools: a manifest's program gets the arguments as flags and as
/// JSON on stdin; a read-only one runs at once (and cannot write in the
/// fence), another is refused when nobody can answer; a bad manifest stops
/// mm with its file and field.
#[test]
fn command_tools_get_flags_and_json_and_bad_manifests_stop_mm() {
    let ws = Workspace::new();
    ws.write(
        "show.sh",
        "#!/bin/sh\necho \"argv: $*\"\necho \"stdin: $(cat)\"\necho x > written.txt 2>/dev/null && echo wrote || echo could-not-write\n",
    );
    ws.write(
        ".mm/tools/show.json",
        r#"{"name": "show_args", "description": "Show the arguments.", "command": ["sh", "show.sh"],
            "parameters": {"service": {"type": "string", "description": "A service", "required": true},
                           "count": {"type": "integer"}},
            "readOnly": true, "timeoutSec": 20}"#,
    );
    ws.write(
        ".mm/tools/deploy.json",
        r#"{"name": "deploy", "description": "Deploy.", "command": ["sh", "show.sh"]}"#,
    );
    // A tool that came with the repository is not read-only on its own
    // word: until the user trusts it, it asks (headless: refused).
    let server = Server::start(vec![
        call("c1", "show_args", json!({"service": "web"})),
        text("Not shown."),
    ]);
    let out = ws
        .mm()
        .args(["-p", "show", "-no-harness", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("readOnly is left out until you trust"),
        "{}",
        stderr(&out)
    );
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(refused.contains("needs the user's approval"), "{refused}");
    assert!(!ws.path().join("written.txt").exists());

    let server = Server::start(vec![
        call("c1", "show_args", json!({"service": "web", "count": 2})),
        call("c2", "deploy", json!({})),
        text("Shown."),
    ]);
    let out = ws
        .mm()
        .args(["-p", "show", "-no-harness", "-trust", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let tools = reqs[0]["tools"].to_string();
    assert!(
        tools.contains("show_args") && tools.contains("A service"),
        "{tools}"
    );
    let results = tool_results(&reqs[2]);
    let shown = &results.iter().find(|(id, _)| id == "c1").unwrap().1;
    assert!(shown.contains("argv: --count 2 --service web"), "{shown}");
    assert!(
        shown.contains("stdin: {")
            && shown.contains(r#""service":"web""#)
            && shown.contains(r#""count":2"#),
        "{shown}"
    );
    if fence_works() {
        assert!(
            shown.contains("could-not-write"),
            "read-only in the fence: {shown}"
        );
        assert!(!ws.path().join("written.txt").exists());
    }
    let deploy = &results.iter().find(|(id, _)| id == "c2").unwrap().1;
    assert!(deploy.contains("needs the user's approval"), "{deploy}");

    ws.write(
        ".mm/tools/deploy.json",
        r#"{"name": "deploy", "description": "Deploy.", "command": "sh show.sh"}"#,
    );
    let out = ws
        .mm()
        .args(["-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(".mm/tools/deploy.json:1:") && err.contains("invalid type"),
        "{err}"
    );
}

/// Hooks: `afterEdit` runs after each change (a formatter that passes
/// leaves its work; one that fails is told to the model with the tool's
/// result and to the user), `turnEnd` runs when the turn ends and its
/// failure is said.
#[test]
fn hooks_run_after_edits_and_turns_and_their_failures_are_fed_back() {
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        "hooks:\n  afterEdit: \"sed -i 's/TODO/DONE/' notes.txt && grep -q ok notes.txt\"\n  turnEnd: \"echo turn-end-ran >&2; exit 3\"\n",
    );
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "TODO ok\n"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "notes.txt", "content": "TODO bad\n"}),
        ),
        text("Written."),
        text("Next turn."),
    ]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "write notes",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("the afterEdit hook"), "{err}");
    assert!(
        err.contains("the turnEnd hook") && err.contains("turn-end-ran"),
        "{err}"
    );
    // The hook's own change stays.
    assert_eq!(ws.read("notes.txt"), "DONE bad\n");
    let reqs = server.requests();
    let results = tool_results(&reqs[2]);
    let first = &results.iter().find(|(id, _)| id == "c1").unwrap().1;
    let second = &results.iter().find(|(id, _)| id == "c2").unwrap().1;
    assert!(
        first.contains("the afterEdit hook changed notes.txt"),
        "a formatter's change is said: {first}"
    );
    assert!(
        !first.contains("[mm ran the afterEdit hook"),
        "it passed: {first}"
    );
    assert!(second.contains("[mm ran the afterEdit hook"), "{second}");
}

/// A tiny web server on 127.0.0.1: path → (status, content type, body).
fn web_server(pages: Vec<(&'static str, u16, &'static str, Vec<u8>)>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
            }
            let (status, ctype, body) = pages
                .iter()
                .find(|p| p.0 == path)
                .map(|p| (p.1, p.2, p.3.clone()))
                .unwrap_or((404, "text/plain", b"no".to_vec()));
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(&body);
        }
    });
    port
}

/// `fetch_content` against a local server: a Latin-1 page as Markdown,
/// robots.txt obeyed, a binary refused, a huge page cut; loopback refused
/// without `fetchPrivate`; off unless `fetchContent: true`.
#[test]
fn fetch_content_reads_pages_and_obeys_robots_and_limits() {
    let huge = format!(
        "<html><body>{}</body></html>",
        "<p>lorem ipsum dolor</p>".repeat(200_000)
    );
    let huge: &'static str = Box::leak(huge.into_boxed_str());
    let port = web_server(vec![
        ("/robots.txt", 200, "text/plain", b"User-agent: *\nDisallow: /private\n".to_vec()),
        (
            "/page",
            200,
            "text/html; charset=iso-8859-1",
            b"<html><body><h1>Caf\xe9 menu</h1><script>evil()</script><p>Cr\xe8me br\xfbl\xe9e</p></body></html>".to_vec(),
        ),
        ("/private/notes", 200, "text/plain", b"secret".to_vec()),
        ("/logo.png", 200, "image/png", b"\x89PNG\r\n\x1a\n".to_vec()),
        ("/huge", 200, "text/html", huge.as_bytes().to_vec()),
    ]);
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    let ws = Workspace::new();
    ws.write("agent.yaml", "fetchContent: true\nfetchPrivate: true\n");
    let server = Server::start(vec![
        calls(&[
            ("c1", "fetch_content", json!({"url": url("/page")})),
            ("c2", "fetch_content", json!({"url": url("/private/notes")})),
            ("c3", "fetch_content", json!({"url": url("/logo.png")})),
            ("c4", "fetch_content", json!({"url": url("/huge")})),
        ]),
        text("Fetched."),
    ]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "fetch",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    let get = |id: &str| results.iter().find(|(i, _)| i == id).unwrap().1.clone();
    let page = get("c1");
    assert!(
        page.contains("# Café menu") && page.contains("Crème brûlée"),
        "{page}"
    );
    assert!(!page.contains("evil()"), "{page}");
    assert!(
        get("c2").contains("robots.txt does not allow"),
        "{}",
        get("c2")
    );
    assert!(get("c3").contains("not text (image/png)"), "{}", get("c3"));
    let huge = get("c4");
    assert!(
        huge.contains("the page is longer") && huge.len() < 20_000,
        "{}",
        huge.len()
    );

    // Loopback without fetchPrivate: refused; without fetchContent: no tool.
    ws.write("agent.yaml", "fetchContent: true\n");
    let server = Server::start(vec![
        call("c1", "fetch_content", json!({"url": url("/page")})),
        text("Refused."),
    ]);
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "fetch",
            "-no-harness",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = tool_results(&server.requests()[1])[0].1.clone();
    assert!(refused.contains("loopback or private address"), "{refused}");
    let server = Server::start(vec![text("ok")]);
    let out = ws
        .mm()
        .args(["-p", "hi", "-no-harness", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!server.requests()[0].to_string().contains("fetch_content"));
}

#[test]
fn agents_md_from_the_git_root_down_and_a_subfolder_s_with_its_first_file() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "web/app.js"})),
        call("c2", "read_file", json!({"path": "web/util.js"})),
        text("Read them."),
    ]);
    let ws = Workspace::new();
    ws.write("AGENTS.md", "Root rule: keep functions short.");
    ws.write("web/AGENTS.md", "Web rule: two-space indent.");
    ws.write("web/app.js", "const a = 1;\n");
    ws.write("web/util.js", "const b = 2;\n");
    let out = ws.run(&server, "read web/app.js and web/util.js", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let system = reqs[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Instructions (AGENTS.md):\nRoot rule"),
        "{system}"
    );
    assert!(!system.contains("Web rule"), "{system}");
    let first = &tool_results(&reqs[1])[0].1;
    assert!(
        first.contains(
            "[instructions for web/ and below (web/AGENTS.md):]\nWeb rule: two-space indent."
        ),
        "{first}"
    );
    let second = &tool_results(&reqs[2])[1].1;
    assert!(!second.contains("Web rule"), "{second}");
}

#[test]
fn show_prompt_says_what_it_cut_of_the_instructions() {
    let ws = Workspace::new();
    ws.write("AGENTS.md", &"Keep it short.\n".repeat(1000));
    let out = ws.mm().args(["-show-prompt"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("AGENTS.md is 14999 bytes: only the first 6144"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("[cut: "), "{}", stdout(&out));
}

#[test]
fn claude_md_is_read_where_there_is_no_agents_md() {
    let server = Server::start(vec![text("Hi.")]);
    let ws = Workspace::new();
    ws.write("CLAUDE.md", "Claude rule: say hi.");
    let out = ws.run(&server, "hello", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let system = server.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("Instructions (CLAUDE.md):\nClaude rule: say hi."),
        "{system}"
    );
}

#[test]
fn a_repository_s_links_and_fifos_under_mm_are_not_read() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "FAKEKEYMATERIAL123").unwrap();
    std::fs::create_dir_all(outside.path().join("skill")).unwrap();
    std::fs::write(
        outside.path().join("skill/SKILL.md"),
        "---\nname: away\ndescription: A skill from elsewhere.\n---\nOUTSIDE_SKILL_BODY\n",
    )
    .unwrap();
    for d in [".mm/commands", ".mm/skills"] {
        std::fs::create_dir_all(ws.dir.path().join(d)).unwrap();
    }
    std::os::unix::fs::symlink(
        outside.path().join("id_rsa"),
        ws.dir.path().join(".mm/commands/review.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("skill"),
        ws.dir.path().join(".mm/skills/away"),
    )
    .unwrap();
    nix::unistd::mkfifo(
        &ws.dir.path().join(".mm/commands/hang.md"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    // Red-team round 14: a command linked to git's config (a remote's
    // token) or to `.env`, and a real skill folder whose SKILL.md links
    // out, are left out too.
    let p = ws.dir.path();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(
        p.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://x:ghp_R14TOKEN@github.com/a/b\n",
    )
    .unwrap();
    std::fs::write(p.join(".env"), "KEY=R14ENVSECRET\n").unwrap();
    std::os::unix::fs::symlink("../../.git/config", p.join(".mm/commands/cfg.md")).unwrap();
    std::os::unix::fs::symlink("../../.env", p.join(".mm/commands/envcmd.md")).unwrap();
    std::fs::create_dir_all(p.join(".mm/skills/helper")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("skill/SKILL.md"),
        p.join(".mm/skills/helper/SKILL.md"),
    )
    .unwrap();
    let server = Server::start(vec![text("Hi."), text("Hi.")]);
    let started = std::time::Instant::now();
    let out = ws.run(&server, "/review", &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("review.md left out: it links outside the workspace"),
        "{err}"
    );
    assert!(
        err.contains("away left out: it links outside the workspace"),
        "{err}"
    );
    assert!(err.contains("hang.md left out"), "{err}");
    assert!(err.contains("cfg.md left out"), "{err}");
    assert!(err.contains("envcmd.md left out"), "{err}");
    assert!(err.contains("helper/SKILL.md left out"), "{err}");
    let body = serde_json::to_string(&server.requests()).unwrap();
    assert!(!body.contains("FAKEKEYMATERIAL123"));
    assert!(!body.contains("A skill from elsewhere"));
    assert!(!body.contains("ghp_R14TOKEN") && !body.contains("R14ENVSECRET"));
    // A command tool manifest linked outside stops mm, named.
    std::fs::create_dir_all(ws.dir.path().join(".mm/tools")).unwrap();
    std::fs::write(outside.path().join("t.json"), "{}").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("t.json"),
        ws.dir.path().join(".mm/tools/t.json"),
    )
    .unwrap();
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(".mm/tools/t.json: links outside the workspace"),
        "{}",
        stderr(&out)
    );
}

/// A hook runs the project's code unasked: in the fence it gets what tests
/// get — no network, no `.git` to write — read-only under `-sandbox
/// read-only` (a repository's Makefile behind `turnEnd: make test` sent
/// data out).
#[test]
fn a_hook_in_the_fence_has_no_network_and_cannot_write_git() {
    if !fence_works() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let ws = Workspace::new();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws.dir.path())
        .status()
        .unwrap();
    assert!(init.success());
    ws.write(
        "agent.yaml",
        &format!(
            "hooks:\n  turnEnd: \"python3 -c \\\"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\\\" || echo no-network >&2; echo x > .git/planted || echo no-git >&2; echo hook-wrote > out.txt\"\n"
        ),
    );
    let server = Server::start(vec![text("Hi."), text("Hi.")]);
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(listener.accept().is_err(), "the hook reached the network");
    assert!(!ws.dir.path().join(".git/planted").exists());
    assert_eq!(ws.read("out.txt"), "hook-wrote\n");
    std::fs::remove_file(ws.dir.path().join("out.txt")).unwrap();
    let out = ws
        .mm()
        .args([
            "agent.yaml",
            "-p",
            "hi",
            "-sandbox",
            "read-only",
            "-url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(listener.accept().is_err(), "the hook reached the network");
    assert!(
        !ws.dir.path().join("out.txt").exists(),
        "a read-only hook wrote"
    );
}

/// `.mm/config.yaml` is found on its own, between the user's config and an
/// agent file; its keys that run code or reach other servers apply only
/// once the user trusts the file as it is, and `-show-config` says where
/// each value comes from.
/// Trusting the project config trusts the agent files its mmConfigs
/// name as they are (red-team round 37: the model rewrote one in an
/// `-auto` run, and the next session sent the key to the server it named).
#[test]
fn a_trusted_configs_agent_files_are_trusted_as_they_are() {
    let ws = Workspace::new();
    ws.write(
        ".mm/config.yaml",
        "mmConfigs:\n  helper:\n    path: ../helper.yaml\n    description: helps\n",
    );
    ws.write("helper.yaml", "model: x\n");
    let server = Server::start(vec![text("Hi."); 12]);
    let out = ws.run(&server, "hi", &["-trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("or to the agent files its mmConfigs name asks again"),
        "{}",
        stderr(&out)
    );
    let out = ws.run(&server, "hi", &[]);
    assert!(
        !stderr(&out).contains("left out until you trust"),
        "trusted as it is: {}",
        stderr(&out)
    );
    // The agent file changes: the trust is gone.
    ws.write("helper.yaml", "model: x\nbaseUrl: http://127.0.0.1:9/v1\n");
    let out = ws.run(&server, "hi", &[]);
    assert!(
        stderr(&out).contains(".mm/config.yaml sets mmConfigs: left out until you trust the file"),
        "{}",
        stderr(&out)
    );
    // An agent file the agent file names counts too, however deep (a
    // second red-team round changed only the file two levels down).
    ws.write(
        "helper.yaml",
        "model: x\nmmConfigs:\n  deep:\n    path: deep.yaml\n    description: d\n",
    );
    ws.write("deep.yaml", "model: y\n");
    let out = ws.run(&server, "hi", &["-trust"]);
    assert!(
        stderr(&out).contains("is trusted as it is now"),
        "{}",
        stderr(&out)
    );
    ws.write("deep.yaml", "model: y\nbaseUrl: http://127.0.0.1:9/v1\n");
    let out = ws.run(&server, "hi", &[]);
    assert!(
        stderr(&out).contains(".mm/config.yaml sets mmConfigs: left out until you trust the file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_project_config_is_layered_and_its_risky_keys_wait_for_trust() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home.path().join(".config/mm")).unwrap();
    std::fs::write(
        ws.home.path().join(".config/mm/config.yaml"),
        "model: user-model\ntheme: dark\n",
    )
    .unwrap();
    ws.write(
        ".mm/config.yaml",
        "model: project-model\nhooks:\n  turnEnd: \"echo hook-ran > hook.txt\"\n",
    );
    let server = Server::start(vec![text("Hi."), text("Hi."), text("Hi."), text("Hi.")]);
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(".mm/config.yaml sets hooks: left out until you trust the file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests()[0]["model"], "project-model");
    assert!(
        !ws.dir.path().join("hook.txt").exists(),
        "an untrusted hook ran"
    );
    // An agent file is above it; a flag above all.
    ws.write("agent.yaml", "model: agent-model\n");
    let out = ws
        .mm()
        .args(["agent.yaml", "-p", "hi", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[1]["model"], "agent-model");
    // Trusted as it is: the hook runs.
    let out = ws.run(&server, "hi", &["-trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is trusted as it is now"),
        "{}",
        stderr(&out)
    );
    assert_eq!(ws.read("hook.txt"), "hook-ran\n");
    std::fs::remove_file(ws.dir.path().join("hook.txt")).unwrap();
    // A change to the file takes the trust away.
    ws.write(
        ".mm/config.yaml",
        "model: project-model\nhooks:\n  turnEnd: \"echo changed > hook.txt\"\n",
    );
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !ws.dir.path().join("hook.txt").exists(),
        "a changed file kept the trust"
    );
    // Where each value comes from.
    let out = ws
        .mm()
        .args([
            "-show-config",
            "-model",
            "flag-model",
            "-sandbox",
            "read-only",
            "-max-rounds",
            "7",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("model         flag-model  (flag -model flag-model)"),
        "{shown}"
    );
    assert!(
        shown.contains("sandbox       read-only  (flag -sandbox read-only)"),
        "{shown}"
    );
    assert!(
        shown.contains("maxTurns      7  (flag -max-rounds 7)"),
        "{shown}"
    );
    assert!(
        shown.contains("flags: -model flag-model -sandbox read-only -max-rounds 7\n"),
        "{shown}"
    );
    assert!(
        shown.contains("model: \"project-model\"    # ")
            && shown.contains(".mm/config.yaml (flag -model flag-model wins)\n"),
        "{shown}"
    );
    // An agent file is a layer, not a flag.
    let out = ws
        .mm()
        .args(["agent.yaml", "-show-config"])
        .output()
        .unwrap();
    let shown = stdout(&out);
    assert!(shown.contains("  flags (none)\n"), "{shown}");
    assert!(
        shown.contains("model: \"agent-model\"    # agent.yaml\n"),
        "{shown}"
    );
    assert!(shown.contains("theme: \"dark\"    # "), "{shown}");
    assert!(shown.contains("(left out: not trusted)"), "{shown}");
    // From a subfolder of the repository, the nearest one above is found;
    // outside a repository, only the working folder's counts.
    std::fs::create_dir_all(ws.dir.path().join("sub/deep")).unwrap();
    let from = |dir: &str| {
        let out = ws
            .mm()
            .current_dir(ws.dir.path().join(dir))
            .args(["-show-config"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    assert!(
        !from("sub/deep").contains("project-model"),
        "no repository yet"
    );
    git(ws.dir.path(), &["init", "-q"]);
    let at = |dir: &str| {
        let d = if dir.is_empty() {
            ws.dir.path().to_path_buf()
        } else {
            ws.dir.path().join(dir)
        };
        format!("{}/.mm/config.yaml\n", d.display())
    };
    let shown = from("sub/deep");
    assert!(
        shown.contains(&format!("model: \"project-model\"    # {}", at(""))),
        "{shown}"
    );
    ws.write("sub/.mm/config.yaml", "model: sub-model\n");
    let shown = from("sub/deep");
    assert!(
        shown.contains(&format!("model: \"sub-model\"    # {}", at("sub"))),
        "{shown}"
    );
}

/// `envPassthrough`: a variable the secret filter drops reaches commands
/// the user allowed, and only when the config names it.
#[test]
fn env_passthrough_lets_a_named_secret_through_to_allowed_commands() {
    let ws = Workspace::new();
    ws.write("agent.yaml", "envPassthrough: [MY_AUTH_TOKEN]\n");
    let run = |args: &[&str]| {
        let server = Server::start(vec![
            call("c1", "bash", json!({"command": "echo tok=$MY_AUTH_TOKEN"})),
            text("Done."),
        ]);
        let out = ws
            .mm()
            .args(args)
            .args([
                "-p",
                "show it",
                "-sandbox",
                "full",
                "-no-harness",
                "-url",
                &server.url(),
            ])
            .env("MY_AUTH_TOKEN", "abc123")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        tool_results(&server.requests()[1])[0].1.clone()
    };
    assert!(run(&["agent.yaml"]).contains("tok=abc123"));
    let without = run(&[]);
    assert!(
        without.contains("tok=") && !without.contains("abc123"),
        "{without}"
    );
    // A build run unasked in the fence (the project's own code) never gets it.
    if fence_works() {
        ws.write("Makefile", "all:\n\t@echo tok=$$MY_AUTH_TOKEN\n");
        let server = Server::start(vec![
            call("c1", "bash", json!({"command": "make"})),
            text("Done."),
        ]);
        let out = ws
            .mm()
            .args([
                "agent.yaml",
                "-p",
                "build",
                "-no-harness",
                "-url",
                &server.url(),
            ])
            .env("MY_AUTH_TOKEN", "abc123")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let made = tool_results(&server.requests()[1])[0].1.clone();
        assert!(made.contains("tok=") && !made.contains("abc123"), "{made}");
    }
}
