//! The line REPL in a real pseudo-terminal: a turn streams, approvals are
//! answered with y / N / a, Ctrl-C cancels a turn, Ctrl-D leaves.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::json;
use support::term::Term;
use support::*;

#[test]
fn a_conversation_with_approvals_and_multi_line_input() {
    let server = Server::start(vec![
        text("Hi! What shall we do?"),
        call("c1", "bash", json!({"command": "rm one.txt"})),
        text("Removed one.txt."),
        call("c2", "bash", json!({"command": "rm two.txt"})),
        text("two.txt stays."),
        call("c3", "bash", json!({"command": "mkdir -p out/three"})),
        call("c4", "bash", json!({"command": "mkdir -p out/four"})),
        text("Made three and four."),
        text("Two lines received."),
        call("c5", "bash", json!({"command": "mkdir -p out/five"})),
        text("Made five."),
    ]);
    let ws = Workspace::new();
    for f in ["one.txt", "two.txt"] {
        ws.write(f, "x");
    }
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("sandbox workspace");
    t.expect("› ");
    t.send("hello\r");
    t.expect("Hi! What shall we do?");
    t.expect("› ");

    t.send("remove one.txt\r");
    t.expect("run `rm one.txt`?");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Removed one.txt.");
    t.expect("mm: no files written; 1 shell command ran that may have changed files");
    assert!(!ws.dir.path().join("one.txt").exists());

    t.send("remove two.txt\r");
    t.expect("allow?");
    t.send("n keep it\r");
    t.expect("two.txt stays.");
    assert!(ws.dir.path().join("two.txt").exists());
    let results = tool_results(&server.requests()[4]);
    let refused = &results.iter().find(|(id, _)| id == "c2").unwrap().1;
    assert!(
        refused.contains("declined") && refused.contains("keep it"),
        "{refused}"
    );

    t.send("make three and four\r");
    // The question says what "always" would allow.
    t.expect("[a]lways = `mkdir …` commands (options: -p) this session");
    t.send("a\r");
    // "always" covers `mkdir` for the session: the second call does not ask.
    t.expect("Made three and four.");
    assert!(ws.dir.path().join("out/three").is_dir());
    assert!(ws.dir.path().join("out/four").is_dir());
    assert_eq!(t.screen().matches("allow?").count(), 3);

    t.send("\"\"\"\r");
    t.expect("… ");
    t.send("first line\r");
    t.expect("… ");
    t.send("second line\r");
    t.expect("… ");
    t.send("\"\"\"\r");
    t.expect("Two lines received.");
    let last = server.requests().last().unwrap().clone();
    let msgs = last["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], "first line\nsecond line");

    // "Always" holds for the session it was given in: after /new, the
    // same kind of command asks again.
    t.send("/new\r");
    t.expect("new session");
    t.expect("› ");
    t.send("make five\r");
    t.expect("run `mkdir -p out/five`?");
    t.send("y\r");
    t.expect("Made five.");
    assert_eq!(t.screen().matches("allow?").count(), 4);

    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn ctrl_c_cancels_the_turn_and_twice_at_the_prompt_quits() {
    let stalled = json!({"choices":[{"index":0,"delta":{"content":"Thinking"}}]}).to_string();
    let server = Server::start(vec![
        Reply::StallAfter(vec![stalled], 30),
        text("Back again."),
    ]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("take your time\r");
    t.expect("Thinking");
    t.send("\x03");
    t.expect("mm: cancelled");
    t.expect("› ");
    t.send("again\r");
    t.expect("Back again.");
    t.expect("› ");
    t.send("\x03");
    t.expect("Ctrl-C again");
    t.send("\x03");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn slash_commands() {
    let server = Server::start(vec![text("reply one"), text("reply two")]);
    let ws = Workspace::new();
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("/help\r");
    t.expect("/compact [FOCUS]");
    t.send("/theme dark\r");
    t.expect("a command of the TUI");
    t.send("first question\r");
    t.expect("reply one");
    t.send("/new\r");
    t.expect("new session");
    t.send("second question\r");
    t.expect("reply two");
    let msgs = server.requests()[1]["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 2, "/new forgets the conversation");
    t.send("/sessions\r");
    t.expect("first question");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
    assert_eq!(ws.sessions().len(), 2);
}

#[test]
fn edits_wait_for_approval_and_show_their_diff() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "a - b", "replacement": "a + b"}),
        ),
        text("Not changed, as you asked."),
        call(
            "c2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "a - b", "replacement": "a + b"}),
        ),
        text("Changed."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("fix calc.py\r");
    t.expect("-    return a - b");
    t.expect("+    return a + b");
    t.expect("change calc.py (+1 -1)?");
    t.expect("allow?");
    t.send("n\r");
    t.expect("Not changed, as you asked.");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a - b\n");
    t.send("now do it\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Changed.");
    t.expect("mm: wrote calc.py");
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a + b\n");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// The newcomer trial of 2026-12-06: rejecting a change with "fix the
/// test" made the model change the test, and mm refused it (the request
/// was to make the tests pass). The user's words when rejecting count.
#[test]
fn a_rejection_that_asks_for_the_test_lets_the_test_change() {
    let server = Server::start(vec![
        call("c0", "read_file", json!({"path": "calc.py"})),
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a + b", "replacement": "return a + b + 1"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "test_calc.py", "old_string": "== 6", "replacement": "== 5"}),
        ),
        text("The test expected the wrong sum; fixed it."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    ws.write(
        "test_calc.py",
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertTrue(add(2, 3) == 6)\n",
    );
    // No candidates of mm's own: the script is the model's turn alone.
    ws.write(".mm/config.yaml", "candidates: 0\n");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-unfenced"]);
    t.expect("› ");
    t.send("The tests in test_calc.py fail. Make them pass.\r");
    // Unfenced, the test run asks first.
    t.expect("allow?");
    t.send("a\r");
    t.expect("change calc.py");
    t.expect("allow?");
    t.send("n add is right; fix the test\r");
    t.expect("change test_calc.py");
    t.expect("allow?");
    t.send("y\r");
    t.expect("fixed it.");
    assert!(ws.read("test_calc.py").contains("== 5"));
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn typing_ahead_does_not_answer_an_approval() {
    // The call streams slowly: the user types "yes" while it comes, before
    // any question was asked (3 s leave room for a loaded machine).
    let mut slow = vec![(
        3000,
        json!({"choices":[{"index":0,"delta":{"content":"Removing it."}}]}).to_string(),
    )];
    slow.push((
        0,
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"rm one.txt\"}"}}]}}]}).to_string(),
    ));
    slow.push((
        0,
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
    ));
    let server = Server::start(vec![Reply::Sse(slow), text("one.txt stays.")]);
    let ws = Workspace::new();
    ws.write("one.txt", "x");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("remove one.txt\r");
    t.expect("attached one.txt");
    t.send("yes\r");
    t.expect("allow?");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(ws.dir.path().join("one.txt").exists(), "nothing ran yet");
    t.send("n\r");
    t.expect("one.txt stays.");
    assert!(ws.dir.path().join("one.txt").exists());
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn always_for_one_rm_is_not_always_for_every_rm_and_holds_after_a_resume() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "rm -f x.o"})),
        call("c2", "bash", json!({"command": "rm -rf dir"})),
        text("Kept dir."),
    ]);
    let ws = Workspace::new();
    ws.write("x.o", "obj");
    ws.write("dir/keep.txt", "keep");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("clean up\r");
    t.expect("[a]lways = this exact command this session");
    t.send("a\r");
    // The next rm is another command: it asks again.
    t.expect("run `rm -rf dir`?");
    t.send("n\r");
    t.expect("Kept dir.");
    assert!(!ws.dir.path().join("x.o").exists());
    assert!(ws.dir.path().join("dir/keep.txt").exists());
    // Ctrl-D at the prompt, not while the turn winds down (type-ahead
    // is dropped when the prompt comes).
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
    let log = std::fs::read_to_string(ws.sessions().last().unwrap()).unwrap();
    assert!(
        log.contains(r#"{"type":"always","key":"=rm -f x.o"}"#),
        "{log}"
    );

    // Resumed, the same command runs without a question.
    ws.write("x.o", "obj again");
    let again = Server::start(vec![
        call("c3", "bash", json!({"command": "rm -f x.o"})),
        text("Removed."),
    ]);
    let url = again.url();
    let mut t = Term::start(&ws, &["-url", &url, "-resume", "last"]);
    t.expect("still hold: `rm -f x.o`");
    t.expect("› ");
    t.send("again\r");
    t.expect("Removed.");
    assert!(!ws.dir.path().join("x.o").exists());
    assert_eq!(t.screen().matches("allow?").count(), 0);
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_json_agent_says_so_and_prints_its_answers_pretty() {
    let server = Server::start(vec![text(r#"[{"name":"Vietnam","capital":"Hanoi"}]"#)]);
    let ws = Workspace::new();
    ws.write(
        "agent.json.yaml",
        "bashTool: false\neditTools: false\nstructuredOutput: |\n  type C struct {\n      Name    string  `json:\"name\"`\n      Capital *string `json:\"capital\"`\n  }\n  var Countries = []C{}\n",
    );
    let url = server.url();
    let mut t = Term::start(&ws, &["agent.json.yaml", "-url", &url]);
    t.expect("tools: none (structured output: JSON answers)");
    t.expect("› ");
    t.send("capital of Vietnam\r");
    t.expect("\"name\": \"Vietnam\",");
    t.expect("\"capital\": \"Hanoi\"");
    t.expect("› ");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// `/model` lists the server's models with the session's marked, switches
/// to one it lists (the next request carries it), and refuses one it does
/// not.
#[test]
fn slash_model_lists_and_switches() {
    let ws = Workspace::new();
    let server = Server::start(vec![
        text("First."),
        text("Second."),
        text("Third."),
        text("Fourth."),
    ]);
    server.route(
        "/models",
        json!({"object":"list","data":[{"id":"small-model"},{"id":"big-model"}]}),
    );
    let mut t = Term::start(
        &ws,
        &["-url", &server.url(), "-m", "small-model", "-no-harness"],
    );
    t.expect("context");
    t.send("hi\r");
    t.expect("First.");
    t.send("/model\r");
    t.expect("* small-model");
    t.expect("big-model");
    t.send("/model huge-model\r");
    t.expect("the server lists no model huge-model");
    t.send("/model big-model\r");
    t.expect("model: big-model from the next request (was small-model)");
    t.send("again\r");
    t.expect("Second.");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    let reqs = server.requests();
    assert_eq!(reqs[0]["model"], "small-model");
    assert_eq!(reqs[1]["model"], "big-model");

    // The switch holds when the session is resumed, unless the command
    // line names a model.
    let out = ws
        .mm()
        .args(["-url", &server.url(), "-resume", "last", "-no-harness"])
        .args(["-p", "third"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("uses big-model (switched with /model)"),
        "{}",
        stderr(&out)
    );
    let out = ws
        .mm()
        .args(["-url", &server.url(), "-resume", "last", "-no-harness"])
        .args(["-m", "small-model", "-p", "fourth"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("-model small-model holds for this run"),
        "{}",
        stderr(&out)
    );
    let reqs = server.requests();
    assert_eq!(reqs[2]["model"], "big-model");
    assert_eq!(reqs[3]["model"], "small-model");
}

/// `/init` writes a starting AGENTS.md from a look at the repository (its
/// languages, folders and test command), never over one that is there,
/// and `/undo` takes it back.
#[test]
fn slash_init_writes_a_starting_agents_md() {
    let ws = Workspace::new();
    ws.write("app/main.py", "print('hi')\n");
    ws.write("tests/test_main.py", "def test_x():\n    pass\n");
    let server = Server::start(vec![]);
    let mut t = Term::start(&ws, &["-url", &server.url()]);
    t.expect("context");
    t.send("/init\r");
    t.expect("wrote AGENTS.md from a look at the repository");
    let text = ws.read("AGENTS.md");
    assert!(text.contains("- Languages: Python (2 files)"), "{text}");
    assert!(text.contains("`app/`, `tests/`"), "{text}");
    assert!(text.contains("- Test: `python3 -m"), "{text}");
    t.send("/init\r");
    t.expect("AGENTS.md is already there");
    t.send("/undo\r");
    t.expect("AGENTS.md");
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
    assert!(!ws.dir.path().join("AGENTS.md").exists(), "/undo left it");
    assert!(server.requests().is_empty(), "/init asked the model");
}

#[test]
fn steps_marked_done_with_nothing_written_are_said_to_be_so() {
    // A newcomer trial: the card said `9 of 9 done` while nothing was
    // written.
    let server = Server::start(vec![
        text("1. Add fixed_off to calc.py.\n2. Run the tests."),
        call(
            "u1",
            "update_plan",
            json!({"plan": [
                {"step": "Add fixed_off to calc.py.", "status": "completed"},
                {"step": "Run the tests.", "status": "completed"},
            ]}),
        ),
        text("Both steps are done."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url, "-no-harness"]);
    t.expect("› ");
    t.send("/plan add fixed_off to calc.py\r");
    t.expect("run this plan?");
    t.send("y\r");
    t.expect("2 of 2 step(s) are marked done, but this turn wrote no file");
    t.expect("› ");
    t.send("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_follow_up_while_a_plan_is_carried_out_restates_the_step_at_hand() {
    let server = Server::start(vec![
        text("1. Add fixed_off to calc.py.\n2. Run the tests."),
        call(
            "u1",
            "update_plan",
            json!({"plan": [
                {"step": "Add fixed_off to calc.py.", "status": "in_progress"},
                {"step": "Run the tests.", "status": "pending"},
            ]}),
        ),
        text("I added fixed_off."),
        text("I could not add it."),
        text("I could not add it."),
        text("I could not add it."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a + b\n");
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("/plan add fixed_off to calc.py\r");
    t.expect("run this plan?");
    t.send("y\r");
    t.expect("› ");
    t.send("\x04");
    let _ = t.exit_code();
    let reqs = server.requests();
    let follow_up = reqs
        .iter()
        .skip(2)
        .map(|r| r["messages"].as_array().unwrap().last().unwrap()["content"].to_string())
        .find(|c| c.contains("The step at hand"))
        .unwrap_or_else(|| panic!("no follow-up restates the step: {reqs:#?}"));
    assert!(
        follow_up.contains(
            r#"(1 of 2) of the plan you are carrying out: \"Add fixed_off to calc.py.\""#
        ),
        "{follow_up}"
    );
    assert!(!follow_up.contains("The user's request:"), "{follow_up}");
}

/// A newcomer trial of 2026-12-07: a change the user refused came back
/// (the model's, and mm's candidates), and was put to them again. What a
/// person refused stays refused for the turn: the same change is not
/// asked again, and no candidates are sought for a file they refused.
#[test]
fn a_change_the_user_refused_is_not_put_to_them_again_in_that_turn() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "edit_file",
                json!({"path": "greet.py", "old_string": "'Hello ' + name", "replacement": "'Hello, ' + name + '!'"}),
            ),
            text("I left greet.py as it is."),
            text("I left greet.py as it is."),
            text("I left greet.py as it is."),
        ],
        vec![
            text("```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```"),
            text("```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```"),
            text("```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```"),
        ],
    );
    let ws = Workspace::new();
    let greet = "def greet(name):\n    return 'Hello ' + name\n";
    ws.write("greet.py", greet);
    ws.write(
        "test_greet.py",
        "import unittest\n\nfrom greet import greet\n\n\nclass T(unittest.TestCase):\n    def test_greet(self):\n        self.assertEqual(greet('Ann'), 'Hello, Ann!')\n",
    );
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("The test in test_greet.py fails. Fix greet.py.\r");
    t.expect("allow?");
    t.send("n\r");
    t.expect("I left greet.py as it is.");
    t.expect("› ");
    let seen = t.screen();
    assert_eq!(seen.matches("allow?").count(), 1, "{seen}");
    assert!(
        seen.contains("the user already rejected this exact change to greet.py in this turn"),
        "{seen}"
    );
    let after = &seen[seen.find("the user rejected this change").unwrap()..];
    assert!(!after.contains("asking for up to"), "{seen}");
    assert_eq!(ws.read("greet.py"), greet);
    t.send("/quit\r");
    assert_eq!(t.exit_code(), 0);
}

/// `/commit` waits on the model for its message: the wait is shown (time,
/// what it waits for) and Ctrl-C cancels it, leaving the prompt ready and
/// nothing committed. It printed nothing at all and Ctrl-C did nothing.
#[test]
fn a_commit_message_being_written_shows_its_wait_and_ctrl_c_cancels_it() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("Created notes.txt."),
        Reply::StallAfter(vec![], 60),
        text("Still here."),
    ]);
    let ws = Workspace::new();
    let p = ws.committed(&[("a.txt", "alpha\n")]);
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("write the notes file\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Created notes.txt.");
    t.send("/commit\r");
    t.expect("asking the model for a commit message");
    t.expect("waiting for the model · Ctrl-C cancels");
    t.send("\x03");
    t.expect("cancelling");
    t.expect("› ");
    // The prompt takes the next message at once.
    t.send("still there?\r");
    t.expect("Still here.");
    assert_eq!(git(&p, &["rev-list", "--count", "HEAD"]).trim(), "1");
}

/// "Leave shop/prices.py alone" holds for the turns after it, until a
/// message asks for that file: a trial's mm came back to it two turns on.
#[test]
fn a_file_left_alone_stays_so_in_later_turns_until_a_message_asks_for_it() {
    let server = Server::start(vec![
        text("Noted."),
        call(
            "c1",
            "edit_file",
            json!({"path": "prices.py", "old_string": "return price - percent", "replacement": "return price * (100 - percent) / 100"}),
        ),
        text("I left prices.py alone."),
        call(
            "c2",
            "edit_file",
            json!({"path": "prices.py", "old_string": "return price - percent", "replacement": "return price * (100 - percent) / 100"}),
        ),
        text("Fixed discount."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "prices.py",
        "def discount(price, percent):\n    return price - percent\n",
    );
    let url = server.url();
    let mut t = Term::start(&ws, &["-url", &url]);
    t.expect("› ");
    t.send("Leave prices.py alone for now.\r");
    t.expect("Noted.");
    t.send("Tidy up the project a little.\r");
    t.expect("I left prices.py alone.");
    let refusal = &tool_results(&server.requests()[2])[0].1;
    assert!(
        refusal.starts_with("refused: the user asked to leave prices.py alone"),
        "{refusal}"
    );
    assert!(ws.read("prices.py").contains("price - percent"));
    t.send("Now fix discount() in prices.py.\r");
    t.expect("allow?");
    t.send("y\r");
    t.expect("Fixed discount.");
    assert!(ws.read("prices.py").contains("(100 - percent)"));
}
