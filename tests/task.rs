//! `task` and roles: the model hands a sub-task to a child `mm -acp` on
//! the session's own server, in a role from `.mm/agents/`; the child's
//! answer comes back as the result, its requests count toward the
//! session's budget, and a role narrows what the child may do. `-role`
//! puts a whole session in a role.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::{Value, json};
use support::*;

const REVIEWER: &str = "---\ndescription: Reviews a change and reports\ntools: [read_file, grep]\nsandbox: read-only\n---\nYou are the reviewer. Say REVIEWED-BY-ROLE first. Change nothing.\n";

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn system_of(req: &Value) -> String {
    req["messages"][0]["content"].as_str().unwrap().to_string()
}

#[test]
fn a_task_runs_in_a_child_in_its_role_and_its_answer_comes_back() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let server = Server::start(vec![
        call(
            "t1",
            "task",
            json!({"role": "reviewer", "prompt": "Check whether add in calc.py adds, and report what you find."}),
        ),
        text("REVIEWED-BY-ROLE: add subtracts; it should return a + b."),
        text("The reviewer found that add subtracts."),
    ]);
    let out = ws.run(&server, "review calc.py with the reviewer", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "The reviewer found that add subtracts."
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "parent, child, parent");
    // The session offers task, with the role to pick.
    let task = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .expect("task offered")
        .clone();
    assert_eq!(
        task["function"]["parameters"]["properties"]["role"]["enum"],
        json!(["reviewer"])
    );
    // The child: a fresh context with the role's words and only its tools,
    // read-only (no write tool even if the role named one).
    let child = &reqs[1];
    assert!(
        system_of(child).contains("You are the reviewer."),
        "{}",
        system_of(child)
    );
    assert!(!system_of(&reqs[0]).contains("You are the reviewer."));
    assert_eq!(tool_names(child), ["read_file", "grep"], "{child}");
    let msgs = child["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "system and the sub-task only: {msgs:?}");
    assert!(
        msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("Check whether add in calc.py adds")
    );
    // Its answer, and what it wrote (nothing), are the tool's result.
    let results = tool_results(&reqs[2]);
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains("add subtracts"), "{results:?}");
    assert!(
        results[0].1.contains("[the helper wrote no file]"),
        "{results:?}"
    );
    // Two sessions: the parent's and the child's.
    assert_eq!(ws.sessions().len(), 2, "{:?}", ws.sessions());
}

#[test]
fn a_childs_requests_count_toward_the_sessions_budget() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "taskTool: true\n");
    let server = Server::start(vec![
        call("t1", "task", json!({"prompt": "List the files."})),
        text("There are no files."),
        text("never sent"),
    ]);
    let out = ws.run(&server, "go", &["-max-requests", "2"]);
    // The parent's second request would be the third: it is not made.
    assert_eq!(server.requests().len(), 2, "{}", stderr(&out));
    assert_eq!(server.remaining(), 1);
    // The receipt counts the helper's request, and says how many were the
    // conversation's own (what /stats counts).
    assert!(
        stderr(&out).contains("2 requests (1 in the conversation)"),
        "{}",
        stderr(&out)
    );
    // Without roles, task takes no role.
    let reqs = server.requests();
    let task = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .expect("taskTool: true offers task")
        .clone();
    assert!(
        task["function"]["parameters"]["properties"]
            .get("role")
            .is_none()
    );
}

#[test]
fn without_roles_or_task_tool_there_is_no_task() {
    let ws = Workspace::new();
    let server = Server::start(vec![text("hi")]);
    let out = ws.run(&server, "hi", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!tool_names(&server.requests()[0]).contains(&"task".to_string()));
}

#[test]
fn a_session_in_a_role_gets_its_words_tools_and_mode() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    // The Go agent's spelling: a header line, a blank line, the words.
    ws.write(
        ".agent/agents/scout.md",
        "model: scout-model\n\nYou search and report SCOUT-WORDS.\n",
    );
    let server = Server::start(vec![text("ok"), text("ok")]);
    let out = ws.run(&server, "hi", &["-role", "reviewer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = ws.run(&server, "hi", &["-role", "scout"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = server.requests();
    assert!(system_of(&reqs[0]).contains("You are the reviewer."));
    assert_eq!(tool_names(&reqs[0]), ["read_file", "grep"]);
    assert!(system_of(&reqs[1]).contains("SCOUT-WORDS"));
    assert_eq!(reqs[1]["model"], "scout-model");
    // A role that is not there is a usage error that names the roles.
    let out = ws.run(&server, "hi", &["-role", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no role named \"nosuch\"") && err.contains("reviewer, scout"),
        "{err}"
    );
}

/// A role's tools hold for the sub-tasks it starts (red-team round 37:
/// a role without bash started a role-less helper that ran commands).
#[test]
fn a_roles_tools_are_its_sub_tasks_tools_at_most() {
    let ws = Workspace::new();
    ws.write(
        ".mm/agents/looker.md",
        // A name with a comma in it is no tool, here or in the helper.
        "---\ndescription: Looks\ntools: [read_file, task, \"grep, bash\"]\n---\nYou look.\n",
    );
    let server = Server::start(vec![
        call("t1", "task", json!({"prompt": "Run ls."})),
        text("I cannot run commands."),
        text("The helper could not."),
    ]);
    let out = ws.run(&server, "hi", &["-role", "looker", "-auto"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(tool_names(&reqs[0]), ["read_file", "task"]);
    // The helper's request: no tool its asker could not offer.
    let child = reqs
        .iter()
        .find(|r| {
            r["messages"][1]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Run ls."))
        })
        .unwrap_or_else(|| panic!("no helper request: {reqs:?}"));
    let tools = tool_names(child);
    assert!(
        tools.iter().all(|t| t == "read_file" || t == "task"),
        "{tools:?}"
    );
}

/// A fix handed to a reviewer that cannot write is refused (a newcomer
/// re-trial: the 1.5B model gave the fix to three reviewers, and one
/// claimed it was made).
#[test]
fn a_change_is_not_handed_to_a_role_that_cannot_write() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let server = Server::start(vec![
        call(
            "t1",
            "task",
            json!({"prompt": "Fix add in calc.py.", "role": "reviewer"}),
        ),
        text("I could not fix it."),
        text("I could not fix it."),
        text("I could not fix it."),
        text("I could not fix it."),
    ]);
    let out = ws.run(&server, "Fix the bug in add() in calc.py.", &[]);
    let reqs = server.requests();
    let results = tool_results(&reqs[1]);
    assert!(
        results
            .iter()
            .any(|(id, r)| id == "t1" && r.contains("cannot write files")),
        "{results:?}\n{}",
        stderr(&out)
    );
    // No helper started: no request carries the reviewer's words.
    assert!(
        !reqs
            .iter()
            .any(|r| r.to_string().contains("REVIEWED-BY-ROLE")),
        "a reviewer ran"
    );
}

#[test]
fn agents_lists_the_roles_in_the_repl() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    let server = Server::start(vec![]);
    let url = server.url();
    let mut t = support::term::Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("/agents\r");
    t.expect("reviewer  Reviews a change and reports");
    t.expect("tools read_file, grep; sandbox read-only");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn what_a_child_writes_is_in_the_result_and_what_it_must_ask_is_refused() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "taskTool: true\n");
    let server = Server::start(vec![
        call(
            "t1",
            "task",
            json!({"prompt": "Create notes.txt saying hi."}),
        ),
        call(
            "w1",
            "write_file",
            json!({"path": "notes.txt", "content": "hi\n"}),
        ),
        call(
            "b1",
            "bash",
            json!({"command": "curl http://127.0.0.1:9/x"}),
        ),
        text("Created notes.txt."),
        text("The helper created notes.txt."),
    ]);
    let out = ws.run(&server, "make the notes", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ws.read("notes.txt"), "hi\n");
    let reqs = server.requests();
    let results = tool_results(&reqs[4]);
    assert!(
        results[0].1.contains("[the helper wrote: notes.txt]"),
        "{results:?}"
    );
    // The command needed a yes; nobody answers a sub-task's questions.
    let child_results = tool_results(&reqs[3]);
    assert!(
        child_results
            .iter()
            .any(|(id, r)| id == "b1" && r.contains("declined")),
        "{child_results:?}"
    );
    assert!(
        stderr(&out).contains("refused (nobody can answer a sub-task's question in this run)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_childs_question_is_put_to_the_sessions_user() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "taskTool: true\n");
    ws.write("one.txt", "x");
    let server = Server::start(vec![
        call("t1", "task", json!({"prompt": "Remove one.txt with rm."})),
        call("b1", "bash", json!({"command": "rm one.txt"})),
        text("Removed one.txt."),
        text("The helper removed one.txt."),
    ]);
    let url = server.url();
    let mut t = support::term::Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("clean up\r");
    // The child's request, with what it wants to run, asked here.
    t.expect("rm one.txt");
    t.expect("allow?");
    t.send("y\r");
    t.expect("The helper removed one.txt.");
    assert!(!ws.dir.path().join("one.txt").exists());
    // Keys typed during a turn are dropped when the prompt comes.
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
    let results = tool_results(&server.requests()[2]);
    assert!(
        results
            .iter()
            .any(|(id, r)| id == "b1" && !r.contains("declined")),
        "{results:?}"
    );
}

/// A child's question shows all it would do: a command's hidden second
/// line (red-team round 37: `ls   # list …` approved ran a `cat` of a
/// secret on the next line).
#[test]
fn a_childs_question_shows_every_line_it_would_run() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "taskTool: true\n");
    let outside = ws.home.path().join("outside.txt");
    std::fs::write(&outside, "SECRET-OUT-1\n").unwrap();
    let server = Server::start(vec![
        call("t1", "task", json!({"prompt": "List the files."})),
        call(
            "b1",
            "bash",
            json!({"command": format!("ls   # list the files\ncat {}", outside.display())}),
        ),
        text("Done."),
        text("The helper is done."),
    ]);
    let url = server.url();
    let mut t = support::term::Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("list them\r");
    t.expect(&format!("cat {}", outside.display()));
    t.expect("allow?");
    t.send("n\r");
    t.expect("The helper is done.");
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.to_string().contains("SECRET-OUT-1")),
        "the refused command ran"
    );
}

/// A helper that wrote its findings and then ran out of rounds: what it
/// wrote is the result (said to be cut), not an error the session may
/// not ask again (a real 1.5B reviewer found both bugs, then read the
/// file until its rounds ran out, and the session never answered).
#[test]
fn a_helper_that_ran_out_of_rounds_after_writing_gives_what_it_wrote() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write(".mm/config.yaml", "maxTurns: 2\n");
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let with_text = |text: &str, id: &str| {
        let Reply::Sse(mut ev) = call(id, "read_file", json!({"path": "calc.py"})) else {
            unreachable!()
        };
        ev.insert(
            0,
            (
                0,
                json!({"choices":[{"index":0,"delta":{"content":text}}]}).to_string(),
            ),
        );
        Reply::Sse(ev)
    };
    let server = Server::start(vec![
        call(
            "t1",
            "task",
            json!({"role": "reviewer", "prompt": "Check add in calc.py."}),
        ),
        with_text("REVIEWED-BY-ROLE: add subtracts. ", "r1"),
        with_text("Reading again. ", "r2"),
        // The child's report when its rounds are spent.
        text("So: add subtracts."),
        text("The reviewer found that add subtracts."),
    ]);
    let out = ws.run(
        &server,
        "review calc.py with the reviewer",
        &["-no-harness"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = server.requests();
    let back = tool_results(reqs.last().unwrap());
    let (_, result) = back.last().unwrap();
    assert!(result.contains("ran out of rounds"), "{result}");
    // The findings come first, as an answer does (before, the result was
    // the error "agent …: ran out of rounds before it answered; …").
    assert!(result.starts_with("So: add subtracts."), "{result}");
}

/// The same sub-task asked again is answered from the first answer, not
/// run again (a real 1.5B model asked the same review 17 times).
#[test]
fn the_same_sub_task_asked_again_is_answered_from_the_first() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let args = json!({"role": "reviewer", "prompt": "Check add in calc.py."});
    let server = Server::start(vec![
        call("t1", "task", args.clone()),
        text("REVIEWED-BY-ROLE: add subtracts."),
        call("t2", "task", args),
        text("The reviewer found that add subtracts."),
    ]);
    let out = ws.run(
        &server,
        "review calc.py with the reviewer",
        &["-no-harness"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        4,
        "parent, child, parent, parent: one child only"
    );
    let back = tool_results(&reqs[3]);
    let (_, again) = back.last().unwrap();
    assert!(again.contains("done already"), "{again}");
    assert!(
        again.contains("REVIEWED-BY-ROLE: add subtracts."),
        "{again}"
    );
}

/// "Use the reviewer role" starts a helper in it before the model's first
/// look, whatever the model would have done; the model answers with its
/// result in front of it.
#[test]
fn a_request_that_names_a_role_starts_a_helper_in_it() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let server = Server::start(vec![
        // The helper's one reply, then the session's.
        text("REVIEWED-BY-ROLE: add() subtracts; it should add."),
        text("The reviewer found that add() subtracts instead of adding."),
    ]);
    let out = ws.run(
        &server,
        "Use the reviewer role to review calc.py and tell me what it finds.",
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", stderr(&out));
    // The first request is the helper's, in its role.
    assert!(
        reqs[0].to_string().contains("You are the reviewer"),
        "{}",
        reqs[0]
    );
    // It is asked the task, not to take the role.
    let helper = reqs[0].to_string();
    assert!(
        helper.contains("review calc.py and tell me what it finds.")
            && !helper.contains("Use the reviewer role"),
        "{helper}"
    );
    // The session's first request already has the helper's answer, and
    // the model passes it on: no tools to make a change of its own.
    assert!(
        tool_names(&reqs[1]).is_empty(),
        "{:?}",
        tool_names(&reqs[1])
    );
    let results = tool_results(&reqs[1]);
    assert!(
        results
            .iter()
            .any(|(_, r)| r.contains("add() subtracts; it should add")),
        "{results:?}"
    );
    assert!(
        stderr(&out).contains("names the reviewer role"),
        "{}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("The reviewer found"));
}

/// A model that answers a helper's work with mm's note on it ("The
/// helper wrote no file.", whatever the helper did) gives the turn the
/// helper's answer instead (a trial's every answer after a helper).
#[test]
fn an_answer_that_only_repeats_the_helper_note_becomes_the_helpers_answer() {
    let ws = Workspace::new();
    ws.write(".mm/agents/reviewer.md", REVIEWER);
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let server = Server::start(vec![
        call(
            "t1",
            "task",
            json!({"role": "reviewer", "prompt": "Report what add in calc.py does."}),
        ),
        text("REVIEWED-BY-ROLE: add subtracts; it should return a + b."),
        text("The helper wrote no file."),
    ]);
    let out = ws.run(&server, "use the reviewer on calc.py", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with("REVIEWED-BY-ROLE: add subtracts; it should return a + b."),
        "{said}"
    );
    assert!(
        said.contains("mm: the helper's answer, as it gave it"),
        "{said}"
    );
    assert!(!said.contains("The helper wrote no file."), "{said}");
}

/// A helper's edit is asked as the session's own are (the file, its
/// "always" for the file), and a no's reason reaches the helper's model
/// (trial e: "Do not edit the test" arrived as "the user rejected it").
#[test]
fn a_helpers_edit_is_asked_as_an_edit_and_the_reason_reaches_it() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "taskTool: true\n");
    ws.write("a.py", "x = 1\n");
    let server = Server::start(vec![
        call("t1", "task", json!({"prompt": "Change x to 2 in a.py."})),
        call(
            "e1",
            "edit_file",
            json!({"path": "a.py", "old_string": "x = 1", "replacement": "x = 2"}),
        ),
        text("I left a.py as it was."),
        text("The helper left a.py as it was."),
    ]);
    let url = server.url();
    let mut t = support::term::Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("set x to 2\r");
    t.expect("every change to a.py");
    t.send("n keep x as it is\r");
    t.expect("The helper left a.py as it was.");
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
    assert_eq!(ws.read("a.py"), "x = 1\n");
    let results = tool_results(&server.requests()[2]);
    assert!(
        results
            .iter()
            .any(|(id, r)| id == "e1" && r.contains("keep x as it is")),
        "{results:?}"
    );
}
