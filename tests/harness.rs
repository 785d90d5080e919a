//! The harness around a small model, end to end: the real `mm` binary
//! headless against the scripted server, real commands (python3), the
//! work tree and the requests asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use serde_json::json;
use support::*;

const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
const CALC_TEST: &str = "import unittest\n\nfrom calc import add, mul\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";

fn last_user(req: &serde_json::Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn failing_tests_after_a_change_go_back_with_the_request_until_they_pass() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a * b"}),
        ),
        text("Fixed add."),
        call(
            "c2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a * b\n\n\ndef mul", "replacement": "return a + b\n\n\ndef mul"}),
        ),
        text("Fixed add; the tests pass."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    // Unfenced: no fix is looked for in the fence, the model makes it.
    let out = ws.run(
        &server,
        "fix add in calc.py",
        &["-yolo", "-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    let reqs = server.requests();
    let fed_back = last_user(&reqs[2]);
    assert!(fed_back.contains("fails:"), "{fed_back}");
    assert!(fed_back.contains("test_add"), "{fed_back}");
    assert!(fed_back.contains("AssertionError: 6 != 5"), "{fed_back}");
    assert!(
        fed_back.contains("The user's request: \"fix add in calc.py\""),
        "{fed_back}"
    );
    assert!(!fed_back.contains("unittest/case.py"), "{fed_back}");
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], true, "{r}");
    assert_eq!(r["tests"]["summary"], "2 passed", "{r}");
    assert_eq!(r["tests"]["attempts"], 1, "{r}");
    assert!(r.get("unbacked_claims").is_none(), "{r}");
    assert!(
        stderr(&out).contains("tests: 2 passed"),
        "the receipt says how the tests ended: {}",
        stderr(&out)
    );
    assert!(ws.read("calc.py").contains("return a + b"));
}

#[test]
fn tests_still_failing_after_the_attempts_are_reported_as_such() {
    let mut script = vec![call(
        "c1",
        "edit_file",
        json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return b - a"}),
    )];
    for _ in 0..3 {
        script.push(text("Fixed add; the tests pass."));
    }
    let server = Server::start(script);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    let out = ws.run(
        &server,
        "fix add in calc.py",
        &["-yolo", "-json", "-max-rounds", "10", "-unfenced"],
    );
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], false, "{r}");
    assert_eq!(r["tests"]["attempts"], 1, "{r}");
    let flagged = r["unbacked_claims"].to_string();
    assert!(
        flagged.contains("the answer says the tests pass, but"),
        "{flagged}"
    );
    assert!(stderr(&out).contains("after 1 attempt"), "{}", stderr(&out));
}

#[test]
fn the_command_a_request_names_runs_before_the_model_looks() {
    let server = Server::start(vec![text("It divides by zero on line 2.")]);
    let ws = Workspace::new();
    ws.write(
        "app.py",
        "def ratio(a, b):\n    return a / b\n\nprint(ratio(1, 0))\n",
    );
    let out = ws.run(&server, "`python3 app.py` crashes. Why?", &["-yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[mm ran `python3 app.py` before you start; it fails:]"),
        "{first}"
    );
    assert!(first.contains("ZeroDivisionError"), "{first}");
    assert!(first.contains("File \"./app.py\", line 2"), "{first}");
}

#[test]
fn without_a_fence_or_approval_the_check_is_reported_as_not_run() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a + b"}),
        ),
        text("Fixed add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    let out = ws.run(&server, "fix add in calc.py", &["-unfenced", "-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], serde_json::Value::Null, "{r}");
    assert!(stderr(&out).contains("could not run"), "{}", stderr(&out));
}

#[test]
fn with_the_fence_the_check_runs_without_asking() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a + b"}),
        ),
        text("Fixed add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    let out = ws.run(&server, "fix add in calc.py", &["-json"]);
    let r = json_result(&out);
    assert_eq!(r["tests"]["summary"], "2 passed", "{r} {}", stderr(&out));
}

#[test]
fn a_write_of_only_the_new_function_is_merged_into_the_file() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "text.py", "content": "def reverse(s):\n    return s[::-1]\n"}),
        ),
        text("Added reverse."),
    ]);
    let ws = Workspace::new();
    let before = "def upper(s):\n    return s.upper()\n\n\ndef lower(s):\n    return s.lower()\n";
    ws.write("text.py", before);
    let out = ws.run(&server, "add reverse(s) to text.py", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(said.contains("would have deleted upper, lower"), "{said}");
    assert!(said.contains("added reverse"), "{said}");
    assert_eq!(
        ws.read("text.py"),
        format!("{before}\n\ndef reverse(s):\n    return s[::-1]\n")
    );
}

/// A whole-file write of only the import the change needs (a 1.5B model
/// asked to make a file use a new constant) adds that import; the rest
/// of the file stays.
#[test]
fn a_write_of_only_an_import_adds_it_to_the_file() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "banner.py", "content": "from config import LINE_WIDTH\n"}),
        ),
        text("Added the import."),
    ]);
    let ws = Workspace::new();
    let before = "import textwrap\n\n\ndef rule():\n    return '-' * 72\n\n\ndef banner(t):\n    return t.center(72)\n";
    ws.write("banner.py", before);
    ws.write("config.py", "LINE_WIDTH = 72\n");
    let out = ws.run(
        &server,
        "make banner.py use LINE_WIDTH from config.py",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(said.contains("applied only your part"), "{said}");
    assert_eq!(
        ws.read("banner.py"),
        before.replace(
            "import textwrap\n",
            "import textwrap\nfrom config import LINE_WIDTH\n"
        )
    );
}

/// A tool result copied back as a file's content ("banner.py is unchanged
/// since you saw it…", written into config.py by a 1.5B model) is refused.
#[test]
fn a_write_of_mms_own_message_is_refused() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "config.py", "content": "banner.py is unchanged since you saw it (it is attached to the request above). It is not sent again."}),
        ),
        text("Wrote config.py."),
    ]);
    let ws = Workspace::new();
    ws.write("banner.py", "def rule():\n    return '-' * 72\n");
    let out = ws.run(&server, "add config.py with LINE_WIDTH = 72", &["-json"]);
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(
        said.contains("refused: this content holds mm's own message"),
        "{said}"
    );
    assert!(!ws.path().join("config.py").exists(), "{}", stderr(&out));
}

#[test]
fn a_write_that_would_delete_functions_and_adds_none_is_refused() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "text.py", "content": "print('hi')\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    let before = "def upper(s):\n    return s.upper()\n\n\ndef lower(s):\n    return s.lower()\n";
    ws.write("text.py", before);
    let out = ws.run(&server, "tidy text.py", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(refused.contains("refused"), "{refused}");
    assert!(refused.contains("upper, lower"), "{refused}");
    assert!(refused.contains("edit_file"), "{refused}");
    assert_eq!(ws.read("text.py"), before);
}

#[test]
fn a_new_file_that_copies_the_attached_one_is_refused() {
    let slug = "import re\n\n\ndef slugify(title):\n    return \"-\".join(w.lower() for w in re.findall(r\"\\w+\", title))\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "test_slug.py", "content": slug}),
        ),
        text("I could not write the tests."),
    ]);
    let ws = Workspace::new();
    ws.write("slug.py", slug);
    let out = ws.run(
        &server,
        "write tests for slug.py in test_slug.py",
        &["-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(refused.contains("a copy of slug.py"), "{refused}");
    assert!(!ws.path().join("test_slug.py").exists());
}

#[test]
fn a_fix_printed_as_code_becomes_the_change() {
    let server = Server::start(vec![
        text(
            "The corrected function should look like this:\n\n```python\ndef add(a, b):\n    return a + b\n```\n",
        ),
        text("Fixed add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    let out = ws.run(&server, "fix add in calc.py", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("calc.py"), CALC.replace("a - b", "a + b"));
    let r = json_result(&out);
    assert_eq!(r["written"], json!(["calc.py"]), "{r}");
    assert!(
        stderr(&out).contains("printed a new version of calc.py"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn edit_file_lists_every_match_and_replace_all_changes_them() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "c.py", "old_string": "timeout=30", "replacement": "timeout=60"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "c.py", "old_string": "timeout=30", "replacement": "timeout=60", "replace_all": true}),
        ),
        text("Changed all three."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "c.py",
        "get(u, timeout=30)\npost(u, timeout=30)\nhead(u, timeout=30)\n",
    );
    let out = ws.run(&server, "use a 60 s timeout in c.py", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = &tool_results(&server.requests()[1])[0].1;
    assert!(listed.contains("matches 3 places"), "{listed}");
    assert!(listed.contains("line 2: post(u, timeout=30)"), "{listed}");
    assert!(listed.contains("replace_all: true"), "{listed}");
    assert_eq!(
        ws.read("c.py"),
        "get(u, timeout=60)\npost(u, timeout=60)\nhead(u, timeout=60)\n"
    );
}

#[test]
fn callers_left_with_a_removed_name_are_pointed_out_then_flagged() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "pricing.py", "old_string": "def calc_total(", "replacement": "def compute_total("}),
        ),
        text("Renamed calc_total to compute_total in both files."),
        text("Renamed it in both files."),
    ]);
    let ws = Workspace::new();
    ws.write("pricing.py", "def calc_total(p):\n    return sum(p)\n");
    // Used through the module (`pricing.calc_total`), which mm does not
    // rename for the model: the check at the end of the turn points at it.
    ws.write(
        "cart.py",
        "import pricing\n\nprint(pricing.calc_total([1]))\n",
    );
    // The rename mm makes itself is off: this is the model's own rename.
    let out = ws.run(
        &server,
        "rename calc_total in pricing.py to compute_total",
        &["-json", "-harness-off", "rename"],
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", stderr(&out));
    let told = last_user(&reqs[2]);
    assert!(
        told.contains("pricing.py no longer defines calc_total, but it is still used at cart.py:3"),
        "{told}"
    );
    assert!(told.contains("The user's request:"), "{told}");
    let r = json_result(&out);
    let flagged = r["unbacked_claims"].to_string();
    assert!(
        flagged.contains("calc_total was removed from pricing.py but is still used at cart.py:3"),
        "{flagged}"
    );
}

#[test]
fn an_answer_about_the_tool_call_is_asked_again() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "g.py"})),
        text("The read_file tool was called with the path g.py."),
        text("2"),
    ]);
    let ws = Workspace::new();
    ws.write("g.py", "def a():\n    pass\n\n\ndef b():\n    pass\n");
    let out = ws.run(&server, "How many functions does g.py define?", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2\n");
    let again = last_user(&server.requests()[2]);
    assert!(again.contains("describes a tool call"), "{again}");
    assert!(
        again.contains("How many functions does g.py define?"),
        "{again}"
    );
}

#[test]
fn an_empty_answer_is_asked_for_once() {
    let server = Server::start(vec![text(""), text("Nothing to do.")]);
    let ws = Workspace::new();
    let out = ws.run(&server, "tidy up", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Nothing to do.\n");
    assert!(last_user(&server.requests()[1]).contains("Your reply was empty"));
}

#[test]
fn an_answer_that_sends_the_request_back_is_no_answer() {
    let prompt = "What does the report print on its second line, and why?";
    let ws = Workspace::new();
    ws.write("report.py", "print('a')\nprint('b')\n");
    // Asked again, the model answers.
    let server = Server::start(vec![
        text(&format!("{prompt}\n\n[files in the workspace]\nreport.py")),
        text("It prints b."),
    ]);
    let out = ws.run(&server, prompt, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It prints b.\n");
    assert!(
        last_user(&server.requests()[1]).contains("Your reply repeated the request"),
        "{:?}",
        server.requests()[1]
    );
    // Sent back twice: not given as the answer.
    let server = Server::start(vec![text(prompt), text(&format!("  {prompt} "))]);
    let out = ws.run(&server, prompt, &[]);
    assert!(!stdout(&out).contains("second line"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("only repeated the request"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn without_the_harness_the_first_answer_ends_the_turn() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a * b"}),
        ),
        text("Fixed add; the tests pass."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    let out = ws.run(
        &server,
        "fix add in calc.py",
        &["-yolo", "-json", "-no-harness"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
    let r = json_result(&out);
    assert!(r.get("tests").is_none(), "{r}");
}

#[test]
fn a_number_found_in_nothing_read_is_checked_once() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "server.py"})),
        text("It listens on port 5000."),
        call("c2", "read_file", json!({"path": "settings.py"})),
        text("8125"),
    ]);
    let ws = Workspace::new();
    ws.write("server.py", "from settings import PORT\n\nprint(PORT)\n");
    ws.write("settings.py", "PORT = 8125\n");
    let out = ws.run(
        &server,
        "What port does the server listen on?",
        &["-sandbox", "read-only", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "8125\n");
    let told = last_user(&server.requests()[2]);
    assert!(
        told.contains("Your answer gives 5000, but that appears nowhere"),
        "{told}"
    );
}

#[test]
fn read_file_lists_what_the_file_defines() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "g.py"})),
        text("2"),
    ]);
    let ws = Workspace::new();
    ws.write("g.py", "def a():\n    pass\n\n\ndef b():\n    pass\n");
    let out = ws.run(&server, "How many functions are there?", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = &tool_results(&server.requests()[1])[0].1;
    assert!(read.starts_with("(defines 2 functions: a, b)\n"), "{read}");
}

#[test]
fn a_reply_that_repeats_itself_is_stopped_and_asked_again() {
    let block = "def main():\n    parser = argparse.ArgumentParser()\n    greet(args.name)\n\n\n";
    let server = Server::start(vec![
        text(&block.repeat(30)),
        text("Done: nothing to change."),
    ]);
    let ws = Workspace::new();
    let out = ws.run(&server, "look at the code", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Done: nothing to change.\n");
    assert!(
        stderr(&out).contains("ran away (the same text over and over)"),
        "{}",
        stderr(&out)
    );
    let again = last_user(&server.requests()[1]);
    assert!(
        again.contains("was stopped; nothing from it was used"),
        "{again}"
    );
}

#[test]
fn the_named_command_runs_again_right_after_each_change() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "app.py", "old_string": "ratio(1, 0)", "replacement": "ratio(1, 2)"}),
        ),
        text("Fixed: it divided by zero."),
        text("It prints 0.5, the ratio of 1 to 2."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "app.py",
        "def ratio(a, b):\n    return a / b\n\nprint(ratio(1, 0))\n",
    );
    let out = ws.run(
        &server,
        "`python3 app.py` crashes. Fix app.py.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains("[mm ran `python3 app.py` after this change: it passes"),
        "{result}"
    );
    // Exit 0 is not the task's success: the model sees what it printed.
    let asked = last_user(&server.requests()[2]);
    assert!(
        asked.contains("`python3 app.py` exits 0 now, and exit 0 alone does not mean the task is done. It printed:\n```\n0.5\n```"),
        "{asked}"
    );
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], true, "{r}");
    assert_eq!(r["tests"]["command"], "python3 app.py", "{r}");
    // Nothing changed after that run: it is not run a third time.
    assert_eq!(
        stderr(&out).matches("▸ bash python3 app.py").count(),
        2,
        "{}",
        stderr(&out)
    );
}

/// A command that exits 0 with the wrong output before the change (the
/// symptom is in what it prints): after a change that leaves it exiting
/// 0, the model sees what it printed before beside what it prints now.
#[test]
fn a_command_that_printed_the_wrong_thing_is_shown_before_and_after_the_change() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "avg.py", "old_string": "return out", "replacement": "return out[:-1]"}),
        ),
        text("Fixed: the last window shows now."),
        text("It prints two averages; I will look again."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "avg.py",
        "def windows(xs, n):\n    out = []\n    for i in range(len(xs) - n):\n        out.append(sum(xs[i:i + n]) / n)\n    return out\n\nprint(windows([1, 2, 3, 4, 5], 2))\n",
    );
    let out = ws.run(
        &server,
        "`python3 avg.py` prints one average too few: 5 values in windows of 2 should give 4. Fix windows in avg.py.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let asked = last_user(&server.requests()[2]);
    assert!(
        asked.contains("It printed:\n```\n[1.5, 2.5]\n```\nBefore your change it printed:\n```\n[1.5, 2.5, 3.5]\n```"),
        "{asked}"
    );
    assert!(
        asked.contains("Is that output what the request expects?"),
        "{asked}"
    );
}

#[test]
fn a_javascript_file_that_no_longer_parses_is_reported_and_sent_back() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "s.js", "old_string": "module.exports = { repeat };", "replacement": "function cap(s) { return s[0].toUpperCase( + s.slice(1); }\nmodule.exports = { repeat, cap };"}),
        ),
        text("Added cap."),
        call(
            "c2",
            "edit_file",
            json!({"path": "s.js", "old_string": "toUpperCase( + s", "replacement": "toUpperCase() + s"}),
        ),
        text("Added cap."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "s.js",
        "function repeat(s) {\n  return s + s;\n}\n\nmodule.exports = { repeat };\n",
    );
    let out = ws.run(&server, "add cap(s) to s.js", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let first = &tool_results(&reqs[1])[0].1;
    assert!(first.contains("[s.js does not parse (node):]"), "{first}");
    assert!(first.contains("SyntaxError"), "{first}");
    let told = last_user(&reqs[2]);
    assert!(told.contains("Your changes left errors"), "{told}");
    assert!(ws.read("s.js").contains("toUpperCase() + s"));
}

#[test]
fn looking_for_pytest_never_imports_the_workspace_code() {
    let out_dir = tempfile::tempdir().unwrap();
    let marker = out_dir.path().join("pwned");
    let server = Server::start(vec![text("Hello.")]);
    let ws = Workspace::new();
    ws.write("test_a.py", "def test_a():\n    pass\n");
    ws.write(
        "pytest.py",
        &format!("open({:?}, 'w').write('x')\n", marker.display().to_string()),
    );
    let out = ws.run(&server, "hello", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !marker.exists(),
        "the workspace's pytest.py ran outside the fence"
    );
}

#[test]
fn a_number_still_found_in_nothing_read_is_flagged() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "server.py"})),
        text("Port 5000."),
        text("Port 5000."),
    ]);
    let ws = Workspace::new();
    ws.write("server.py", "from settings import PORT\n\nprint(PORT)\n");
    ws.write("settings.py", "PORT = 8125\n");
    let out = ws.run(
        &server,
        "What port does the server listen on?",
        &["-json", "-sandbox", "read-only", "-unfenced"],
    );
    let r = json_result(&out);
    assert_eq!(
        r["unbacked_claims"],
        json!(["the answer gives 5000, found in nothing read this turn"]),
        "{r}"
    );
}

#[test]
fn the_source_written_over_its_test_file_is_refused_not_merged() {
    let src =
        "def total(v):\n    return sum(v)\n\n\ndef mean(v):\n    return total(v) / (len(v) - 1)\n";
    let test = "import unittest\n\nfrom stats import mean\n\n\nclass T(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([2, 4]), 3)\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "test_stats.py", "content": src.replace("(len(v) - 1)", "len(v)")}),
        ),
        text("Fixed."),
    ]);
    let ws = Workspace::new();
    ws.write("stats.py", src);
    ws.write("test_stats.py", test);
    let out = ws.run(
        &server,
        "The tests in test_stats.py fail. Fix stats.py.",
        &["-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Refused: a test file the request did not ask to change (and the
    // source put over it, which the copy check refuses too).
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(
        refused.contains("refused: test_stats.py is a test file"),
        "{refused}"
    );
    assert_eq!(ws.read("test_stats.py"), test);
}

const SHOP: &str = "RATES = {\"silver\": 0.05, \"gold\": 0.15}\n\n\ndef discount(price, tier):\n    rate = RATES.get(tier, 0)\n    return price - price * rate\n";

#[test]
fn wrong_arithmetic_in_an_answer_is_sent_back_with_the_right_sum() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "shop.py"})),
        text("It computes 200 - 200 * 0.15 = 180."),
        text("170"),
    ]);
    let ws = Workspace::new();
    ws.write("shop.py", SHOP);
    let out = ws.run(
        &server,
        "What does discount(200, 'gold') return?",
        &["-sandbox", "read-only", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "170\n");
    let told = last_user(&server.requests()[2]);
    assert!(
        told.contains("Check your arithmetic: 200 - 200 * 0.15 is 170, not 180"),
        "{told}"
    );
    assert!(told.contains("The user's request: \"What does discount(200, 'gold') return?\""));
}

#[test]
fn a_question_about_a_call_gets_the_call_run_in_the_fence() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        text("It returns the discounted price."),
        text("170.0"),
    ]);
    let ws = Workspace::new();
    ws.write("shop.py", SHOP);
    // Importing the module may not write: the fence is read-only.
    ws.write(
        "other.py",
        "open('planted', 'w').write('x')\n\n\ndef unrelated():\n    pass\n",
    );
    let out = ws.run(
        &server,
        "What does discount(200, 'gold') return? Answer with the number only.",
        &["-sandbox", "read-only"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains(
            "[mm called discount(200, 'gold') (from shop.py) to check: it returns 170.0]\nNo tool call is needed: answer the question with that."
        ),
        "{first}"
    );
    // The answer is known: the first request offers no tools.
    assert!(server.requests()[0].get("tools").is_none());
    // An answer that does not give it is asked again.
    let told = last_user(&server.requests()[1]);
    assert!(
        told.contains(
            "mm ran discount(200, 'gold') and it returns 170.0, but your answer does not say"
        ),
        "{told}"
    );
    assert_eq!(stdout(&out), "170.0\n");
    // Asked again and still not given: mm gives it under the answer.
    let server = Server::start(vec![
        text("It returns the discounted price."),
        text("It applies the gold discount to the price."),
    ]);
    let out = ws.run(
        &server,
        "What does discount(200, 'gold') return?",
        &["-sandbox", "read-only"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "It applies the gold discount to the price.\n\nmm ran `discount(200, 'gold')`: it returns 170.0\n",
        "{}",
        stderr(&out)
    );
    // A call with anything but literals is not run.
    let server = Server::start(vec![text("no idea")]);
    let out = ws.run(
        &server,
        "What does discount(open('x').read(), 'gold') return?",
        &["-sandbox", "read-only"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!last_user(&server.requests()[0]).contains("mm called"));
    assert!(!ws.path().join("planted").exists());
}

#[test]
fn a_rewrite_that_drops_an_import_the_code_uses_keeps_it() {
    let greet = "import argparse\n\n\ndef main():\n    p = argparse.ArgumentParser()\n    p.add_argument(\"--times\", default=1)\n    return p.parse_args()\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "greet.py", "content": "def main():\n    p = argparse.ArgumentParser()\n    p.add_argument('--times', type=int, default=1)\n    return p.parse_args()\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write("greet.py", greet);
    let out = ws.run(
        &server,
        "make --times an int in greet.py",
        &["-yolo", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let now = ws.read("greet.py");
    assert!(now.starts_with("import argparse\n"), "{now}");
    assert!(now.contains("type=int"), "{now}");
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(result.contains("dropped `import argparse`"), "{result}");
}

#[test]
fn a_new_test_file_gets_the_import_of_what_it_calls() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "test_slug.py", "content": "import unittest\n\nclass T(unittest.TestCase):\n    def test_lower(self):\n        self.assertEqual(slugify('A B'), 'a-b')\n\n\nif __name__ == '__main__':\n    unittest.main()\n"}),
        ),
        text("Wrote the tests."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "slug.py",
        "def slugify(text):\n    return text.lower().replace(' ', '-')\n",
    );
    let out = ws.run(
        &server,
        "write tests for slugify in test_slug.py",
        &["-yolo", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        ws.read("test_slug.py")
            .starts_with("import unittest\nfrom slug import slugify\n"),
        "{}",
        ws.read("test_slug.py")
    );
    let ran = std::process::Command::new("python3")
        .args(["-m", "unittest", "-q", "test_slug"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

#[test]
fn copying_an_imported_function_into_the_importing_file_is_refused() {
    let app = "from util import helper\n\n\ndef main():\n    return helper(2)\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "app.py", "content": format!("{app}\n\ndef helper(x):\n    return x\n")}),
        ),
        text("Fixed."),
    ]);
    let ws = Workspace::new();
    ws.write("util.py", "def helper(x):\n    return x * 2\n");
    ws.write("app.py", app);
    let out = ws.run(
        &server,
        "fix main in app.py",
        &["-yolo", "-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(
        refused.contains("app.py imports helper from util.py and this write would define it again"),
        "{refused}"
    );
    assert!(
        refused.contains("app.py calls helper here; to change how it calls it, edit_file these lines:\n  line 5: return helper(2)"),
        "{refused}"
    );
    assert_eq!(ws.read("app.py"), app);
}

#[test]
fn a_module_written_with_an_import_of_itself_loses_it() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "fmt.py", "content": "from fmt import join_all


def join_all(items, sep=', '):
    return sep.join(items)
"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "fmt.py",
        "def join_all(items):
    return ', '.join(items)
",
    );
    let out = ws.run(
        &server,
        "give join_all in fmt.py a sep parameter",
        &["-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("fmt.py"),
        "def join_all(items, sep=', '):\n    return sep.join(items)\n"
    );
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains("fmt.py cannot import itself, so mm left out `from fmt import join_all`"),
        "{result}"
    );
}

#[test]
fn the_code_under_test_copied_into_its_test_file_is_taken_out() {
    let test = "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "test_calc.py", "content": format!("{test}\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")}),
        ),
        text("Fixed."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", test);
    let out = ws.run(
        &server,
        "extend the test of add in test_calc.py",
        &["-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(result.contains("mm took the copy out"), "{result}");
    let now = ws.read("test_calc.py");
    assert!(!now.contains("def add"), "{now}");
    assert!(now.contains("from calc import add"), "{now}");
}

#[test]
fn a_fix_printed_for_a_file_only_the_traceback_showed_becomes_the_change() {
    let temps = "def c_to_f(c):\n    return c * 9 / 5 + 32\n\n\ndef f_to_c(f):\n    return f - 32 * 5 / 9\n";
    let test = "import unittest\n\nfrom temps import f_to_c\n\n\nclass T(unittest.TestCase):\n    def test_f_to_c(self):\n        self.assertAlmostEqual(f_to_c(212), 100)\n";
    let server = Server::start(vec![
        text(
            "Here's the updated code for `f_to_c`:\n\n```python\ndef f_to_c(fahrenheit):\n    return (fahrenheit - 32) * 5 / 9\n```\n",
        ),
        text("Fixed f_to_c."),
    ]);
    let ws = Workspace::new();
    ws.write("temps.py", temps);
    ws.write("test_temps.py", test);
    let out = ws.run(
        &server,
        "Fix the failing test in test_temps.py",
        &["-yolo", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        ws.read("temps.py")
            .contains("return (fahrenheit - 32) * 5 / 9"),
        "{}",
        ws.read("temps.py")
    );
    assert!(ws.read("temps.py").contains("def c_to_f(c):"));
}

#[test]
fn two_module_exports_in_a_javascript_file_become_one() {
    let strings =
        "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nmodule.exports = { repeat };\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "strings.js", "content": "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction capitalize(s) { return s.charAt(0).toUpperCase() + s.slice(1); } module.exports = { capitalize };\n\nmodule.exports = { repeat };\n"}),
        ),
        text("Added capitalize."),
    ]);
    let ws = Workspace::new();
    ws.write("strings.js", strings);
    let out = ws.run(
        &server,
        "add capitalize(s) to strings.js and export it",
        &["-yolo", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let now = ws.read("strings.js");
    assert_eq!(now.matches("module.exports").count(), 1, "{now}");
    assert!(
        now.contains("module.exports = { capitalize, repeat };"),
        "{now}"
    );
}

#[test]
fn a_crash_comes_with_the_values_where_it_happened() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        text("The price is a string."),
        text("Nothing was changed."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "orders.py",
        "def load_orders():\n    return [{\"name\": \"widget\", \"qty\": 2, \"price\": \"6\"}]\n",
    );
    ws.write(
        "report.py",
        "from orders import load_orders\n\n\ndef main():\n    orders = load_orders()\n    total = sum(o[\"qty\"] * o[\"price\"] for o in orders)\n    print(total + 1)\n\n\nmain()\n",
    );
    let out = ws.run(
        &server,
        "Running `python3 report.py` crashes. Fix it.",
        &["-no-net"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(first.contains("it fails:"), "{first}");
    assert!(first.contains("[values in main at report.py:"), "{first}");
    assert!(
        first.contains("orders = [{'name': 'widget', 'qty': 2, 'price': '6'}]"),
        "{first}"
    );
    // An explanation with nothing written, the crash still there: once
    // more, with the facts.
    let again = last_user(&server.requests()[1]);
    assert!(
        again.starts_with("Nothing was written in this turn and `python3 report.py` still fails"),
        "{again}"
    );
}

/// Asked for a fix, the model says it is done without writing anything
/// and nothing was checked: mm runs the project's tests, and their failure
/// sends the model back with the facts; the fix then passes them.
#[test]
fn a_fix_ended_with_nothing_written_is_checked_against_the_tests() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        text("The mean function should now work correctly."),
        call(
            "c1",
            "edit_file",
            json!({"path": "stats.py", "old_string": "(len(values) - 1)", "replacement": "len(values)"}),
        ),
        text("Fixed: mean divided by one less than the count."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "stats.py",
        "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    );
    ws.write(
        "test_stats.py",
        "import unittest\nfrom stats import mean\n\n\nclass T(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
    );
    let out = ws.run(
        &server,
        "The mean function in stats.py has a bug. Fix it.",
        &["-auto"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = last_user(&server.requests()[1]);
    assert!(
        again.starts_with("Nothing was written in this turn and `python3 -m unittest"),
        "{again}"
    );
    assert!(ws.read("stats.py").contains("/ len(values)"));
    assert!(
        stderr(&out).contains("mm: wrote stats.py"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_probe_never_runs_code_from_a_file_name_or_the_question() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let ws = Workspace::new();
    // The only file defining `discount` has a name that is code.
    ws.write(
        "shop import discount\nimport os;os.system('id > /tmp/mm-probe-name')\nfrom shop.py",
        "def discount(p, t):\n    return 0\n",
    );
    ws.write("shop.py", "discount = lambda p, t: p\n");
    let server = Server::start(vec![text("0")]);
    let out = ws.run(
        &server,
        "What does discount(200, 'gold') return?",
        &["-sandbox", "read-only"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!last_user(&server.requests()[0]).contains("mm called"));
    assert!(!std::path::Path::new("/tmp/mm-probe-name").exists());
    // Triple quotes and an f-string in the arguments: not literals.
    ws.write("calc.py", "def f(*a):\n    return a\n");
    let server = Server::start(vec![text("no")]);
    let q = r#"What does f(''' ' ''' F"""{__import__("os").system("id > /tmp/mm-probe-args")}""" """'" """) return?"#;
    let out = ws.run(&server, q, &["-sandbox", "read-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!last_user(&server.requests()[0]).contains("mm called"));
    assert!(!std::path::Path::new("/tmp/mm-probe-args").exists());
}

#[test]
fn a_test_file_is_not_changed_when_the_request_is_to_make_it_pass() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "test_calc.py", "old_string": "self.assertEqual(add(2, 3), 5)", "replacement": "self.assertEqual(add(2, 3), -1)"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "calc.py", "old_string": "return a - b", "replacement": "return a + b"}),
        ),
        text("Fixed add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    ws.write("test_calc.py", CALC_TEST);
    let out = ws.run(
        &server,
        "The tests in test_calc.py fail. Fix the bug in calc.py.",
        &["-unfenced", "-yolo"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(
        refused.contains("refused: test_calc.py is a test file") && refused.contains("fix calc.py"),
        "{refused}"
    );
    assert_eq!(ws.read("test_calc.py"), CALC_TEST);
    assert!(ws.read("calc.py").contains("return a + b"));
}

#[test]
fn the_same_edit_is_not_made_twice_in_a_turn() {
    let edit = json!({"path": "calc.py", "old_string": "def add(a, b):", "replacement": "def add(a, b):\n    # adds"});
    let server = Server::start(vec![
        call("c1", "edit_file", edit.clone()),
        call("c2", "edit_file", edit),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    let out = ws.run(&server, "comment add in calc.py", &["-unfenced"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = &tool_results(&server.requests()[2])
        .last()
        .unwrap()
        .1
        .clone();
    assert!(
        second.contains("this exact edit was already made"),
        "{second}"
    );
    assert_eq!(ws.read("calc.py").matches("# adds").count(), 1);
}

#[test]
fn a_rename_of_a_definition_is_carried_to_the_files_that_import_it() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "pricing.py", "old_string": "def calc_total(prices):", "replacement": "def compute_total(prices):"}),
        ),
        text("Renamed."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "pricing.py",
        "def calc_total(prices):\n    return sum(prices)\n",
    );
    ws.write(
        "cart.py",
        "from pricing import calc_total\n\n\ndef total(p):\n    return calc_total(p)\n",
    );
    // A file with its own calc_total, not imported from pricing, is not
    // touched.
    ws.write("other.py", "def calc_total(x):\n    return x\n");
    let out = ws.run(
        &server,
        "Rename calc_total in pricing.py to compute_total",
        &["-unfenced", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("cart.py"),
        "from pricing import compute_total\n\n\ndef total(p):\n    return compute_total(p)\n"
    );
    assert_eq!(ws.read("other.py"), "def calc_total(x):\n    return x\n");
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(
        result.contains(
            "[mm renamed calc_total to compute_total in the files that import it: cart.py]"
        ),
        "{result}"
    );
    // The receipt counts it as written this turn.
    let r = json_result(&out);
    assert_eq!(r["written"], json!(["pricing.py", "cart.py"]), "{r}");
}

#[test]
fn files_the_named_command_wrote_are_in_the_receipt() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("It divides by zero on line 3.")]);
    let ws = Workspace::new();
    ws.write(
        "app.py",
        "open('report.txt', 'w').write('partial')\ndef ratio(a, b):\n    return a / b\n\nprint(ratio(1, 0))\n",
    );
    let out = ws.run(&server, "`python3 app.py` crashes. Why?", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("report.txt"), "partial");
    let r = json_result(&out);
    assert_eq!(r["written"], json!([]), "{r}");
    assert_eq!(r["changed_by_commands"], json!(["report.txt"]), "{r}");
    assert!(
        stderr(&out).contains("changed by commands: report.txt"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_edit_of_text_from_the_test_file_is_shown_the_code_it_names() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "stats.py", "old_string": "mean([])", "replacement": "mean([0.0])"}),
        ),
        text("I could not fix it."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "stats.py",
        "def total(values):\n    return sum(values)\n\n\ndef mean(values):\n    if not values:\n        return 0.0\n    return total(values) / (len(values) - 1)\n",
    );
    ws.write(
        "test_stats.py",
        "import unittest\n\nfrom stats import mean\n\n\nclass T(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(mean([]), 0.0)\n",
    );
    let out = ws.run(
        &server,
        "Fix mean in stats.py; see test_stats.py",
        &["-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    let (_, text) = results.last().unwrap();
    assert!(text.contains("was not found in stats.py"), "{text}");
    assert!(
        text.contains("`mean([])` is text from test_stats.py (line 8), not from stats.py"),
        "{text}"
    );
    assert!(
        text.contains("mean in stats.py as it is now:\n     5\tdef mean(values):"),
        "{text}"
    );
    assert!(
        text.contains("     8\t    return total(values) / (len(values) - 1)"),
        "{text}"
    );
    assert_eq!(ws.read("stats.py").matches("len(values) - 1").count(), 1);
}

#[test]
fn an_edit_of_a_test_line_only_quoted_in_a_failure_is_placed_too() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "src/lib.rs", "old_string": "assert!(is_leap(2000));", "replacement": "assert!(true);"}),
        ),
        text("I could not fix it."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "src/lib.rs",
        "/// Leap years.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && year % 100 != 0\n}\n",
    );
    ws.write(
        "tests/leap.rs",
        "use leap::is_leap;\n\n#[test]\nfn centuries() {\n    assert!(is_leap(2000));\n}\n",
    );
    let out = ws.run(
        &server,
        "Fix the bug in src/lib.rs",
        &["-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    let (_, text) = results.last().unwrap();
    assert!(
        text.contains("is text from tests/leap.rs (line 5)"),
        "{text}"
    );
    assert!(
        text.contains("     2\tpub fn is_leap(year: u32) -> bool {"),
        "{text}"
    );
}

#[test]
fn a_wrong_value_comes_with_the_call_and_a_one_line_fix_found_in_the_fence() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("The formula subtracts first.")]);
    let ws = Workspace::new();
    ws.write(
        "temps.py",
        "def f_to_c(f):\n    scale = 5 / 9\n    return f - 32 * scale\n",
    );
    ws.write(
        "test_temps.py",
        "import unittest\n\nfrom temps import f_to_c\n\n\nclass T(unittest.TestCase):\n    def test_f_to_c(self):\n        self.assertAlmostEqual(f_to_c(212), 100)\n",
    );
    let out = ws.run(
        &server,
        "The tests in test_temps.py fail. Fix temps.py.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains(
            "[test_temps.py:8 calls f_to_c(f=212) in temps.py returned 194.22222222222223]\n[mm found a fix"
        ),
        "{first}\n{}", stderr(&out)
    );
    // Small changes of that line were tried; the one that makes the
    // tests pass is made, as a write of mm's own, and the tests run again.
    assert!(
        first.contains("[mm found a fix by trying small changes in the fence, and made it: temps.py:3 is now `return (f - 32) * scale`."),
        "{first}"
    );
    assert_eq!(
        ws.read("temps.py"),
        "def f_to_c(f):\n    scale = 5 / 9\n    return (f - 32) * scale\n"
    );
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], true, "{r}");
    assert_eq!(r["written"], json!(["temps.py"]), "{r}");
}

#[test]
fn a_crash_on_text_used_as_a_number_is_fixed_where_the_text_comes_in() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("Done.")]);
    let ws = Workspace::new();
    ws.write(
        "stars.py",
        "import argparse\n\n\ndef stars(n):\n    return \"*\" * n\n\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"label\")\nparser.add_argument(\"--count\", default=2)\nargs = parser.parse_args()\nprint(args.label, stars(args.count + 1))\n",
    );
    let out = ws.run(
        &server,
        "`python3 stars.py --count 4 x` crashes. Fix it.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[mm found a fix by trying small changes in the fence, and made it: stars.py:10 is now `parser.add_argument(\"--count\", default=2, type=int)`. `python3 stars.py --count 4 x` passes now"),
        "{first}"
    );
    // Fixed, with nothing more asked: the first request wants the answer.
    assert!(server.requests()[0].get("tools").is_none());
    assert!(
        first.ends_with(
            "No tool call is needed: answer in a few sentences what was wrong and what changed."
        ),
        "{first}"
    );
    // The label stays text: only the option that crashed got a type.
    assert!(
        ws.read("stars.py")
            .contains("parser.add_argument(\"label\")\n")
    );
    let r = json_result(&out);
    assert_eq!(r["tests"]["passed"], true, "{r}");
}

#[test]
fn a_change_that_breaks_the_fixed_command_again_is_undone() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "app.py", "old_string": "ratio(1, 0)", "replacement": "ratio(1, 2)"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "app.py", "old_string": "return a / b", "replacement": "return a / c"}),
        ),
        text("Fixed."),
        text("It prints 0.5."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "app.py",
        "def ratio(a, b):\n    return a / b\n\nprint(ratio(1, 0))\n",
    );
    let out = ws.run(
        &server,
        "`python3 app.py` crashes. Fix app.py.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("app.py"),
        "def ratio(a, b):\n    return a / b\n\nprint(ratio(1, 2))\n"
    );
    let results = tool_results(&server.requests()[2]);
    let result = &results.last().unwrap().1;
    assert!(
        result.contains("[mm undid this change: `python3 app.py` passed before it and failed after it. app.py is as it was before the change and `python3 app.py` passes again."),
        "{result}"
    );
    assert!(result.contains("NameError"), "{result}");
    assert_eq!(json_result(&out)["tests"]["passed"], true);
}

#[test]
fn renaming_a_variable_to_fix_a_crash_is_refused() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "rep.py", "old_string": "count", "replacement": "count_num", "replace_all": true}),
        ),
        text("Renamed."),
        text("Nothing was changed."),
    ]);
    let ws = Workspace::new();
    let src =
        "def repeat(word, count):\n    return word * count\n\n\nprint(repeat(\"ab\", \"3\"))\n";
    ws.write("rep.py", src);
    let out = ws.run(&server, "`python3 rep.py` crashes. Fix it.", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("rep.py"), src);
    let results = tool_results(&server.requests()[1]);
    let (_, text) = results.last().unwrap();
    assert!(
        text.starts_with("refused: renaming `count` to `count_num` changes nothing the code does"),
        "{text}"
    );
    assert!(text.contains("TypeError"), "{text}");
}

#[test]
fn an_edit_naming_a_definition_replaces_the_whole_definition() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "data.py", "old_string": "load", "replacement": "def load():\n    return [int(x) for x in '123']\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "data.py",
        "def load():\n    return list('123')\n\n\ndef size():\n    return len(load())\n",
    );
    let out = ws.run(&server, "make load in data.py return ints", &["-unfenced"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("data.py"),
        "def load():\n    return [int(x) for x in '123']\n\n\ndef size():\n    return len(load())\n"
    );
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].1.contains("old_string named a definition"),
        "{}",
        results[0].1
    );
}

#[test]
fn a_number_only_question_answered_with_a_story_is_asked_again() {
    let server = Server::start(vec![
        text("I read m.py. It has def a(x): return 2 * x and two more, so 3 in all."),
        text("3"),
    ]);
    let ws = Workspace::new();
    ws.write(
        "m.py",
        "def a(x):\n    return 2 * x\n\n\ndef b():\n    pass\n\n\ndef c():\n    pass\n",
    );
    let out = ws.run(
        &server,
        "How many functions does m.py define? Answer with the number only.",
        &["-json", "-sandbox", "read-only", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", stderr(&out));
    assert!(
        last_user(&reqs[1]).contains("The request asks for the number only"),
        "{}",
        last_user(&reqs[1])
    );
    assert_eq!(json_result(&out)["answer"], "3");
}

#[test]
fn without_a_fix_that_passes_every_test_the_wrong_value_is_traced_to_its_parts() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("I do not know."), text("Still not.")]);
    let ws = Workspace::new();
    ws.write("inc.py", "def inc(x):\n    return x + 2\n");
    ws.write(
        "test_inc.py",
        "import unittest\n\nfrom inc import inc\n\n\nclass T(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(inc(1), 2)\n\n    def test_three(self):\n        self.assertEqual(inc(3), 5)\n",
    );
    let out = ws.run(
        &server,
        "The tests in test_inc.py fail. Fix inc.py.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[test_inc.py:8 calls inc(x=1) in inc.py returned 3]\n  line 2: return x + 2\n  x + 2 = 3"),
        "{first}"
    );
    assert!(!first.contains("mm tried small changes"), "{first}");
}

/// The wrong value comes from a function the called one uses, in another
/// file: what that one got and returned is traced too.
#[test]
fn a_wrong_value_is_traced_one_call_down_into_another_file() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("I do not know."), text("Still not.")]);
    let ws = Workspace::new();
    ws.write(
        "money.py",
        "def cents(text):\n    whole, part = text.split('.')\n    return int(whole) * 100 + int(part)\n",
    );
    ws.write(
        "till.py",
        "from money import cents\n\n\ndef total(prices):\n    return sum(cents(p) for p in prices)\n",
    );
    ws.write(
        "test_till.py",
        "import unittest\n\nfrom till import total\n\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total(['2.5', '1.25']), 375)\n",
    );
    let out = ws.run(
        &server,
        "The tests in test_till.py fail. Fix the cause.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("total(prices=['2.5', '1.25']) in till.py returned 330"),
        "{first}"
    );
    assert!(
        first.contains("  it called cents(text='2.5') in money.py, which returned 205\n  it called cents(text='1.25') in money.py, which returned 125"),
        "{first}"
    );
    // A comprehension's own name has no value at the return line.
    assert!(!first.contains("raises NameError"), "{first}");
}

/// The function one call down is asked for with the examples of its own
/// docstring that fail on it now (written without its name, as
/// docstrings do: `'2.5' -> 250`).
#[test]
fn a_candidate_one_call_down_is_shown_its_own_failing_examples() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![text("cents now reads one decimal as tens of cents.")],
        vec![
            text("```python\ndef total(prices):\n    return sum(cents(p) for p in prices)\n```"),
            text(
                "```python\ndef cents(text):\n    \"\"\"'2.5' -> 250, '1.25' -> 125\"\"\"\n    whole, part = text.split('.')\n    return int(whole) * 100 + int(part.ljust(2, '0'))\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write(
        "money.py",
        "def cents(text):\n    \"\"\"'2.5' -> 250, '1.25' -> 125\"\"\"\n    whole, part = text.split('.')\n    return int(whole) * 100 + int(part)\n",
    );
    ws.write(
        "till.py",
        "from money import cents\n\n\ndef total(prices):\n    return sum(cents(p) for p in prices)\n",
    );
    ws.write(
        "test_till.py",
        "import unittest\n\nfrom till import total\n\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total(['2.5', '1.25']), 375)\n",
    );
    let out = ws.run(
        &server,
        "The tests in test_till.py fail. Fix the cause.",
        &["-json"],
    );
    let err = stderr(&out);
    let side = server.side_requests();
    let asked = side[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("The examples in its own documentation, run on it now, fail:")
            && asked.contains("FAILED: assert cents('2.5') == 250"),
        "{asked}"
    );
    // The one that holds is not shown as failing.
    assert!(!asked.contains("FAILED: assert cents('1.25')"), "{asked}");
    assert!(ws.read("money.py").contains("part.ljust(2, '0')"), "{err}");
}

/// The function the failing call used, in a file the failure never
/// names, is asked for as a candidate too, and written when it passes.
#[test]
fn a_candidate_one_call_down_in_another_file_fixes_the_cause() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![text("cents now reads one decimal as tens of cents.")],
        vec![
            // The function the test calls, handed back as it was.
            text("```python\ndef total(prices):\n    return sum(cents(p) for p in prices)\n```"),
            text(
                "```python\ndef cents(text):\n    whole, part = text.split('.')\n    return int(whole) * 100 + int(part.ljust(2, '0'))\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write(
        "money.py",
        "def cents(text):\n    whole, part = text.split('.')\n    return int(whole) * 100 + int(part)\n",
    );
    ws.write(
        "till.py",
        "from money import cents\n\n\ndef total(prices):\n    return sum(cents(p) for p in prices)\n",
    );
    ws.write(
        "test_till.py",
        "import unittest\n\nfrom till import total\n\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total(['2.5', '1.25']), 375)\n",
    );
    let out = ws.run(
        &server,
        "The tests in test_till.py fail. Fix the cause.",
        &["-yolo", "-json"],
    );
    let err = stderr(&out);
    let side = server.side_requests();
    let asked = side[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("A function it uses, from money.py:") && asked.contains("def cents(text):"),
        "{asked}"
    );
    assert!(
        asked.contains("it called cents(text='2.5') in money.py, which returned 205"),
        "{asked}"
    );
    assert!(ws.read("money.py").contains("part.ljust(2, '0')"), "{err}");
    // The first reply changed nothing: not a candidate.
    assert!(err.contains("1 candidate tried, the 1st passed"), "{err}");
    assert_eq!(json_result(&out)["tests"]["passed"], true, "{err}");
}

#[test]
fn an_edit_that_undoes_one_made_this_turn_is_refused() {
    let forth = json!({"path": "client.py", "old_string": "timeout=30", "replacement": "timeout=60", "replace_all": true});
    let back = json!({"path": "client.py", "old_string": "timeout=60", "replacement": "timeout=30", "replace_all": true});
    let server = Server::start(vec![
        call("c1", "edit_file", forth.clone()),
        call("c2", "edit_file", back),
        call("c3", "edit_file", forth),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "client.py",
        "def get(u):\n    return open_url(u, timeout=30)\n\n\ndef head(u):\n    return open_url(u, timeout=30)\n",
    );
    let out = ws.run(
        &server,
        "change the timeout in client.py from 30 to 60",
        &["-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let undo = &tool_results(&server.requests()[2])
        .last()
        .unwrap()
        .1
        .clone();
    assert!(
        undo.starts_with("refused: this edit would undo the change you made earlier in this turn (`timeout=30` became `timeout=60`)"),
        "{undo}"
    );
    // The same edit again is not refused as a repeat (it cannot apply
    // twice): it finds nothing left to change.
    let again = &tool_results(&server.requests()[3])
        .last()
        .unwrap()
        .1
        .clone();
    assert!(!again.contains("already made"), "{again}");
    assert_eq!(ws.read("client.py").matches("timeout=60").count(), 2);
}

/// An edit that left the file unparsable may be taken back: undoing
/// it is the repair, not going back on the work.
#[test]
fn an_edit_that_undoes_a_change_that_broke_the_parse_is_run() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let forth = json!({"path": "stats.py", "old_string": "def mean(values):", "replacement": "def mean(values) + 1:"});
    let back = json!({"path": "stats.py", "old_string": "def mean(values) + 1:", "replacement": "def mean(values):"});
    let server = Server::start(vec![
        call("c1", "edit_file", forth),
        call("c2", "edit_file", back),
        text("Done."),
        text("Done."),
    ]);
    let ws = Workspace::new();
    let original = "def mean(values):\n    return sum(values) / len(values)\n";
    ws.write("stats.py", original);
    let out = ws.run(&server, "tidy the mean function in stats.py", &[]);
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    let back = tool_results(&server.requests()[2])
        .last()
        .unwrap()
        .1
        .clone();
    assert!(!back.starts_with("refused"), "{back}");
    assert_eq!(ws.read("stats.py"), original);
}

#[test]
fn an_edit_naming_a_definition_with_more_definitions_puts_each_in_place() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "api.py", "old_string": "get", "replacement": "def get(u):\n    return u + '?t=60'\n\n\ndef head(u):\n    return u\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    let src = "def get(u):\n    return u + '?t=30'\n\n\ndef head(u):\n    return u\n";
    ws.write("api.py", src);
    let out = ws.run(&server, "use t=60 in api.py", &["-unfenced"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Each definition takes its namesake's place: head is not there twice.
    assert_eq!(
        ws.read("api.py"),
        "def get(u):\n    return u + '?t=60'\n\n\ndef head(u):\n    return u\n"
    );
}

#[test]
fn code_the_request_spells_out_for_a_file_is_asked_for_until_it_is_there() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "fmt.py", "old_string": "def join(items):\n    return \", \".join(items)", "replacement": "def join(items, sep=\", \"):\n    return sep.join(items)"}),
        ),
        text("Done: join takes sep."),
        call(
            "c2",
            "edit_file",
            json!({"path": "main.py", "old_string": "join(NAMES)", "replacement": "join(NAMES, sep=\" / \")"}),
        ),
        text("Done: main.py passes sep."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "fmt.py",
        "def join(items):\n    return \", \".join(items)\n",
    );
    ws.write(
        "main.py",
        "from fmt import join\n\nNAMES = [\"a\", \"b\"]\nprint(join(NAMES))\n",
    );
    let out = ws.run(
        &server,
        "Give join in fmt.py a parameter sep with the default \", \", and make main.py call it with sep=\" / \".",
        &["-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    let asked = last_user(&server.requests()[2]);
    assert!(
        asked.starts_with("The request asks for `sep=\" / \"` in main.py, but no file has it yet"),
        "{asked}"
    );
    assert!(ws.read("main.py").contains("join(NAMES, sep=\" / \")"));
    // Asked once: the answer after the change ends the turn.
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn renaming_a_function_the_request_names_is_refused_unless_asked() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "fmt.py", "old_string": "join", "replacement": "join_with_sep"}),
        ),
        text("I could not."),
    ]);
    let ws = Workspace::new();
    let src = "def join(items):\n    return \", \".join(items)\n";
    ws.write("fmt.py", src);
    let out = ws.run(
        &server,
        "Give join in fmt.py a parameter sep with the default \", \".",
        &["-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("fmt.py"), src);
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].1.starts_with(
            "refused: the request names join, and this edit renames it to join_with_sep"
        ),
        "{}",
        results[0].1
    );
}

#[test]
fn a_failing_javascript_test_script_gets_the_one_line_fix_found_in_the_fence() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![text("It returned the wrong bound.")]);
    let ws = Workspace::new();
    ws.write(
        "span.js",
        "function widest(a, b) {\n  if (a.length < b.length) return a;\n  return a;\n}\n\nmodule.exports = { widest };\n",
    );
    ws.write(
        "test.js",
        "const assert = require(\"assert\");\nconst { widest } = require(\"./span\");\n\nassert.strictEqual(widest(\"ab\", \"abc\"), \"abc\");\nassert.strictEqual(widest(\"abcd\", \"a\"), \"abcd\");\nconsole.log(\"ok\");\n",
    );
    let out = ws.run(&server, "`node test.js` fails. Fix span.js.", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("span.js"),
        "function widest(a, b) {\n  if (a.length < b.length) return b;\n  return a;\n}\n\nmodule.exports = { widest };\n"
    );
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[mm found a fix by trying small changes in the fence, and made it: span.js:2 is now `if (a.length < b.length) return b;`. `node test.js` passes now"),
        "{first}"
    );
    assert_eq!(json_result(&out)["tests"]["passed"], true);
}

#[test]
fn a_method_the_request_asks_for_that_the_file_lacks_is_asked_for_once_then_whole() {
    let whole = "class Queue:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n        self.items.append(x)\n\n    def peek(self):\n        return self.items[0]\n";
    let server = Server::with_side(
        vec![
            text("Added peek."),
            text("It is not there."),
            text("peek is there now."),
        ],
        vec![text(&format!("```python\n{whole}```"))],
    );
    let ws = Workspace::new();
    ws.write(
        "queue.py",
        "class Queue:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n        self.items.append(x)\n",
    );
    let out = ws.run(
        &server,
        "Add a method peek() to the Queue class in queue.py that returns the first item.",
        &["-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    let asked = last_user(&server.requests()[1]);
    assert!(
        asked.starts_with("The request is not done: queue.py does not define peek yet."),
        "{asked}"
    );
    // Told once and still missing: the file is asked for whole, as text.
    assert_eq!(ws.read("queue.py"), whole, "{}", stderr(&out));
    let told = last_user(&server.requests()[2]);
    assert!(
        told.starts_with("[mm: queue.py does not define peek yet after the model was told, so mm asked for the file in full as text and wrote it:]"),
        "{told}"
    );
}

/// A fix request the model answers with a claim and no write (the
/// harness ran the failing command first): told, then the file asked
/// for whole.
#[test]
fn a_fix_claimed_but_never_written_is_told_then_asked_for_whole() {
    let app = "import sys\n\nPRICES = {'apple': 3}\n\nprint(PRICES[sys.argv[1].upper()])\n";
    let fixed = "import sys\n\nPRICES = {'apple': 3}\n\nprint(PRICES[sys.argv[1].lower()])\n";
    let server = Server::with_side(
        vec![
            text("I changed the lookup so it works now."),
            text("The lookup is fixed."),
            text("app.py now looks the name up in lower case."),
        ],
        vec![text(&format!("```python\n{fixed}```"))],
    );
    let ws = Workspace::new();
    ws.write("app.py", app);
    let out = ws.run(
        &server,
        "`python3 app.py Apple` fails with a KeyError. Fix app.py.",
        &["-json", "-unfenced"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let first = last_user(&server.requests()[1]);
    assert!(
        first.starts_with("You said you changed something, but nothing was written"),
        "{first}"
    );
    assert_eq!(ws.read("app.py"), fixed, "{err}");
    let told = last_user(&server.requests()[2]);
    assert!(
        told.starts_with("[mm: the model ended without writing anything, so mm asked for the file in full as text and wrote it:]"),
        "{told}"
    );
    assert_eq!(json_result(&out)["written"], json!(["app.py"]));
}

#[test]
fn a_javascript_function_added_but_not_exported_is_sent_back() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "words.js", "old_string": "module.exports", "replacement": "function shout(s) {\n  return s.toUpperCase();\n}\n\nmodule.exports"}),
        ),
        text("Added shout and exported it."),
        text("It is not exported."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "words.js",
        "function twice(s) {\n  return s + s;\n}\n\nmodule.exports = { twice };\n",
    );
    let out = ws.run(
        &server,
        "Add a function shout(s) to words.js that upper-cases s, and export it with the others.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    let asked = last_user(&server.requests()[2]);
    assert!(
        asked.starts_with(
            "The request is not done: words.js defines shout, but it does not export shout."
        ),
        "{asked}"
    );
}

const LEAP: &str = "def is_leap(year):\n    \"\"\"Whether year is a leap year in the Gregorian calendar.\"\"\"\n    return year % 4 == 0 and year % 100 != 0\n\n\ndef days_in(year):\n    return 366 if is_leap(year) else 365\n";
const LEAP_TEST: &str = "import unittest\nfrom leap import is_leap, days_in\n\n\nclass T(unittest.TestCase):\n    def test_centuries(self):\n        self.assertFalse(is_leap(1900))\n        self.assertTrue(is_leap(2000))\n\n    def test_days(self):\n        self.assertEqual(days_in(2000), 366)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

#[test]
fn a_failure_no_small_change_fixes_is_asked_for_with_the_function_alone() {
    let server = Server::with_side(
        vec![text("is_leap missed the 400-year rule; it is fixed.")],
        vec![text(
            "```python\ndef is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("leap.py", LEAP);
    ws.write("test_leap.py", LEAP_TEST);
    let out = ws.run(
        &server,
        "`python3 test_leap.py` fails. Fix the bug in leap.py.",
        &["-yolo", "-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let now = ws.read("leap.py");
    assert!(
        now.contains("    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"),
        "{now}"
    );
    // The docstring and the other function are kept.
    assert!(now.contains("\"\"\"Whether year is a leap year"), "{now}");
    assert!(now.contains("def days_in(year):"), "{now}");
    // The focused request had the failure and the functions, not the tests.
    let side = server.side_requests();
    assert_eq!(side.len(), 1);
    let asked = last_user(&side[0]);
    assert!(asked.contains("is_leap(2000)"), "{asked}");
    assert!(asked.contains("def is_leap(year):"), "{asked}");
    assert!(!asked.contains("class T("), "{asked}");
    assert!(side[0].get("tools").is_none());
    // The model is told, with no tools, and asked for the answer.
    let first = last_user(&server.requests()[0]);
    assert!(first.contains("[mm asked for is_leap alone"), "{first}");
    assert!(server.requests()[0].get("tools").is_none());
    assert_eq!(json_result(&out)["tests"]["passed"], true);
}

#[test]
fn a_focused_fix_that_does_not_pass_is_put_back() {
    let wrong = text("```python\ndef is_leap(year):\n    return year % 4 == 0\n```");
    let server = Server::with_side(
        vec![text("I could not fix it."), text("It still fails.")],
        vec![wrong.clone(), wrong],
    );
    let ws = Workspace::new();
    ws.write("leap.py", LEAP);
    ws.write("test_leap.py", LEAP_TEST);
    let out = ws.run(
        &server,
        "`python3 test_leap.py` fails. Fix the bug in leap.py.",
        &["-yolo", "-json", "-unfenced", "-harness-off", "stall"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("leap.py"), LEAP);
    // The same wrong answer twice is tried once.
    assert_eq!(server.side_requests().len(), 2);
    let first = last_user(&server.requests()[0]);
    assert!(!first.contains("[mm asked for"), "{first}");
    assert!(server.requests()[0].get("tools").is_some());
    assert_eq!(json_result(&out)["tests"]["passed"], false);
}

#[test]
fn a_change_across_two_files_is_asked_for_one_file_at_a_time() {
    let server = Server::with_side(
        vec![text(
            "format_list takes sep now, and report.py passes \" | \".",
        )],
        vec![
            text(
                "```python\ndef format_list(items, sep=\", \"):\n    return sep.join(str(i) for i in items)\n```",
            ),
            text(
                "```python\nfrom fmt import format_list\n\nprint(format_list([\"a\", \"b\"], sep=\" | \"))\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write(
        "fmt.py",
        "def format_list(items):\n    return \", \".join(str(i) for i in items)\n\n\ndef format_title(s):\n    return s.title()\n",
    );
    ws.write(
        "report.py",
        "from fmt import format_list\n\nprint(format_list([\"a\", \"b\"]))\n",
    );
    let out = ws.run(
        &server,
        "Give format_list in fmt.py an optional parameter sep with the default \", \", and make report.py call it with sep=\" | \".",
        &["-yolo", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fmt = ws.read("fmt.py");
    assert!(
        fmt.starts_with("def format_list(items, sep=\", \"):\n    return sep.join("),
        "{fmt}"
    );
    assert!(fmt.contains("def format_title(s):"), "{fmt}");
    assert!(ws.read("report.py").contains("sep=\" | \""));
    let side = server.side_requests();
    assert_eq!(side.len(), 2);
    assert!(last_user(&side[0]).contains("fmt.py is now:"));
    assert!(last_user(&side[1]).contains("report.py is now:"));
    // The files attached to the request are as mm left them.
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[mm asked for each file's part of the request alone"),
        "{first}"
    );
    assert!(
        first.contains("+def format_list(items, sep=\", \"):"),
        "{first}"
    );
    assert!(server.requests()[0].get("tools").is_none());
}

#[test]
fn a_change_asked_for_file_by_file_brings_the_files_that_call_what_changed() {
    let server = Server::with_side(
        vec![text("tag takes a level now; both callers pass one.")],
        vec![
            text("```python\ndef tag(level, msg):\n    return f'[{level}] {msg}'\n```"),
            text("```python\nfrom logs import tag\n\nprint(tag('WARN', 'low'))\n```"),
            text("```python\nfrom logs import tag\n\nprint(tag('INFO', 'up'))\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("logs.py", "def tag(msg):\n    return f'[INFO] {msg}'\n");
    ws.write("disk.py", "from logs import tag\n\nprint(tag('low'))\n");
    // Not named in the request: it calls tag too.
    ws.write("net.py", "from logs import tag\n\nprint(tag('up'))\n");
    let out = ws.run(
        &server,
        "Give tag in logs.py a first parameter, level, put in the brackets; disk.py passes 'WARN', every other call 'INFO'.",
        &["-yolo", "-unfenced"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        ws.read("net.py"),
        "from logs import tag\n\nprint(tag('INFO', 'up'))\n",
        "{err}"
    );
    assert!(ws.read("disk.py").contains("tag('WARN', 'low')"), "{err}");
    let side = server.side_requests();
    assert_eq!(side.len(), 3, "{err}");
    // The named file after the change, and the caller, see the new tag.
    for asked in [last_user(&side[1]), last_user(&side[2])] {
        assert!(
            asked.contains("logs.py:\n```python\ndef tag(level, msg)"),
            "{asked}"
        );
    }
    assert!(last_user(&side[2]).contains("net.py is now:"));
    assert!(
        err.contains("net.py calls what changed in logs.py"),
        "{err}"
    );
}

#[test]
fn a_question_about_an_attached_file_is_answered_from_it() {
    let server = Server::start(vec![text("3")]);
    let ws = Workspace::new();
    ws.write(
        "geometry.py",
        "def area(r):\n    return 3.14 * r * r\n\n\ndef perimeter(r):\n    return 2 * 3.14 * r\n\n\ndef volume(r):\n    return 4 / 3 * 3.14 * r ** 3\n",
    );
    let out = ws.run(
        &server,
        "How many functions are defined in geometry.py? Answer with the number only.",
        &["-no-net"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(first.contains("[geometry.py as it is now"), "{first}");
    assert!(
        first.ends_with("No tool call is needed: geometry.py is above; answer from it."),
        "{first}"
    );
    assert!(server.requests()[0].get("tools").is_none());
    // A question about a file that is not there keeps the tools.
    let server = Server::start(vec![text("No such file."), text("There is no shapes.py.")]);
    let out = ws.run(
        &server,
        "How many functions does shapes.py define?",
        &["-no-net"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(server.requests()[0].get("tools").is_some());
}

#[test]
fn an_answer_that_only_repeats_the_templates_instruction_is_asked_again() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text(
            "That call is done; do not repeat it. If the task needs another step, call the next tool; if it is finished, answer the user.",
        ),
        text("The notes list three chores."),
    ]);
    let ws = Workspace::new();
    ws.write("notes.txt", "wash\ncook\nclean\n");
    let out = ws.run(&server, "Summarise the notes file here.", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The notes list three chores.\n");
    let again = last_user(&server.requests()[2]);
    assert!(again.contains("repeated an instruction"), "{again}");
    assert!(again.contains("Summarise the notes file here."), "{again}");
}

/// A read of one line of a short file comes back whole (a 1.5B model read
/// `offset: 1, limit: 1` and answered from the import line); a long
/// file's range is kept.
#[test]
fn a_short_file_is_read_whole_whatever_the_range() {
    let ws = Workspace::new();
    ws.write(
        "settings.py",
        "import os\n\nPORT = int(os.environ.get(\"PORT\", 8125))\n",
    );
    let long: String = (1..=400).map(|i| format!("line {i}\n")).collect();
    ws.write("long.txt", &long);
    let server = Server::start(vec![
        calls(&[
            (
                "c1",
                "read_file",
                json!({"path": "settings.py", "offset": 1, "limit": 1}),
            ),
            (
                "c2",
                "read_file",
                json!({"path": "long.txt", "offset": 10, "limit": 2}),
            ),
        ]),
        text("8125"),
    ]);
    let out = ws
        .mm()
        .args(["-p", "what port?", "-url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    let get = |id: &str| results.iter().find(|(i, _)| i == id).unwrap().1.clone();
    assert!(get("c1").contains("8125"), "{}", get("c1"));
    let long = get("c2");
    assert!(
        long.contains("line 10") && long.contains("line 11") && !long.contains("line 12\n"),
        "{long}"
    );
}

#[test]
fn a_python_file_left_unparsable_goes_back_to_its_last_version_that_parses() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "inv.py", "old_string": "    def add(self, n):\n        self.n += n\n", "replacement": "    def add(self, n):\n        self.n += n\n\n    def count(self):\n        return self.n\n"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "inv.py", "old_string": "        self.n -= n\n", "replacement": "        self.n -= n\n      if self.n < 0:\n            self.n = 0\n"}),
        ),
        text("Added count and a floor at zero."),
        text("Added count and a floor at zero."),
        text("Added count and a floor at zero."),
        text("Added count and a floor at zero."),
    ]);
    let ws = Workspace::new();
    let start = "class Inv:\n    def __init__(self):\n        self.n = 0\n\n    def add(self, n):\n        self.n += n\n\n    def remove(self, n):\n        self.n -= n\n";
    ws.write("inv.py", start);
    let out = ws.run(&server, "add a method count to Inv in inv.py", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    // The model was told and did not repair it: mm put back the version
    // after the first edit, which parsed, not the file as the turn found it.
    assert!(
        err.contains("inv.py did not parse at the end of the turn: mm put it back as change 1 of this turn left it"),
        "{err}"
    );
    let now = ws.read("inv.py");
    assert!(now.contains("def count(self):"), "{now}");
    assert!(!now.contains("if self.n < 0"), "{now}");
    assert!(!err.contains("still reports errors"), "{err}");
    // The next message of the session carries it to the model.
    let again = Server::start(vec![text("Noted.")]);
    let out = ws.run(&again, "what changed?", &["-resume", "last"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let told = last_user(&again.requests()[0]);
    assert!(
        told.contains("[mm: at the end of the last turn inv.py did not parse"),
        "{told}"
    );
}

/// A definition the turn removed, which mm's put-back brought back, is
/// not reported as removed and still used: the receipt says what the
/// files are at the end.
#[test]
fn a_definition_put_back_by_mm_is_not_reported_removed() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "util.py", "old_string": "def helper():\n    return 1\n", "replacement": "def other2(:\n"}),
        ),
        text("Done."),
        text("Done."),
        text("Done."),
    ]);
    let ws = Workspace::new();
    let util = "def helper():\n    return 1\n\n\ndef other():\n    return 2\n";
    ws.write("util.py", util);
    ws.write("main.py", "from util import helper\n\nprint(helper())\n");
    let out = ws.run(&server, "tidy util.py", &["-yolo", "-json"]);
    let err = stderr(&out);
    assert!(
        err.contains("util.py did not parse at the end of the turn"),
        "{err}"
    );
    assert_eq!(ws.read("util.py"), util);
    assert!(!err.contains("helper was removed"), "{err}");
}

#[test]
fn without_the_harness_an_unparsable_file_is_left_as_the_model_wrote_it() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "m.py", "old_string": "    return a\n", "replacement": "    return a\n   x = 1\n"}),
        ),
        text("Done."),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write("m.py", "def f(a):\n    return a\n");
    let out = ws.run(&server, "change f in m.py", &["-no-harness"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.read("m.py").contains("   x = 1"));
    assert!(!stderr(&out).contains("did not parse at the end"));
}

/// A JavaScript file that gets an `export` beside its `module.exports`
/// parses (Node takes it for an ES module) but fails when loaded: the
/// model hears it as an error with the call's result and is asked to fix.
#[test]
fn a_javascript_file_mixing_module_systems_is_sent_back() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "s.js", "old_string": "module.exports = { repeat };", "replacement": "function cap(s) { return s[0].toUpperCase() + s.slice(1); } export { cap };\nmodule.exports = { repeat };"}),
        ),
        text("Added cap."),
        call(
            "c2",
            "edit_file",
            json!({"path": "s.js", "old_string": " export { cap };\nmodule.exports = { repeat };", "replacement": "\nmodule.exports = { repeat, cap };"}),
        ),
        text("Added cap."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "s.js",
        "function repeat(s) {\n  return s + s;\n}\n\nmodule.exports = { repeat };\n",
    );
    let out = ws.run(&server, "add cap(s) to s.js", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let first = &tool_results(&reqs[1])[0].1;
    assert!(first.contains("[s.js mixes module systems:]"), "{first}");
    let told = last_user(&reqs[2]);
    assert!(told.contains("Your changes left errors"), "{told}");
    assert!(
        ws.read("s.js")
            .contains("module.exports = { repeat, cap };")
    );
}

// Issue 30: the behaviours that generalise, each against its class.

#[test]
fn a_reread_of_a_file_the_model_has_unchanged_is_one_line() {
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "calc.py"})),
        text("add subtracts; it should add."),
    ]);
    let ws = Workspace::new();
    ws.write("calc.py", CALC);
    let out = ws.run(&server, "what is wrong with add in calc.py?", &["-yolo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(
        said.starts_with("calc.py is unchanged since you saw it (it is attached to the request above). It is not sent again."),
        "{said}"
    );
    assert!(!said.contains("return a - b"), "{said}");

    // Off, the file comes back whole.
    let server = Server::start(vec![
        call("c1", "read_file", json!({"path": "calc.py"})),
        text("add subtracts."),
    ]);
    let out = ws.run(
        &server,
        "what is wrong with add in calc.py?",
        &["-yolo", "-harness-off", "reread"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(said.contains("return a - b"), "{said}");
}

#[test]
fn an_edit_task_stalled_on_reads_gets_the_file_asked_for_whole() {
    let stub = "def parse(s):\n    raise NotImplementedError\n\n\ndef unit():\n    return 's'\n";
    let spec = "# Durations\n\nparse('90') is 90; parse('2m') is 120.\n";
    let done = "def parse(s):\n    if s.endswith('m'):\n        return int(s[:-1]) * 60\n    return int(s)\n\n\ndef unit():\n    return 's'\n";
    let server = Server::with_side(
        vec![
            call("c1", "read_file", json!({"path": "dur.py"})),
            call("c2", "read_file", json!({"path": "SPEC.md"})),
            text("Implemented parse."),
        ],
        vec![
            text(&format!("```python\n{done}```")),
            // The checks written from the request and the spec it names.
            text("```python\nassert parse('2m') == 120\nassert parse('3m') == 180\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement parse in dur.py as SPEC.md says.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("dur.py"), done, "{}", stderr(&out));
    let side = server.side_requests();
    let fenced = fence_works();
    assert_eq!(side.len(), if fenced { 2 } else { 1 }, "{}", stderr(&out));
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("SPEC.md:\n```\n# Durations"), "{asked}");
    assert!(
        asked.contains("dur.py is now:\n```python\ndef parse(s):\n    raise NotImplementedError"),
        "{asked}"
    );
    assert!(side[0].get("tools").is_none(), "asked without tools");
    let told = last_user(&server.requests()[2]);
    assert!(
        told.starts_with("[mm: the model read without writing for several rounds, so mm asked for the file in full as text and wrote it:]"),
        "{told}"
    );
    if fenced {
        // The checks were asked for from the spec's words, and with them
        // passing the model is asked for its answer, without tools.
        let checks = side[1]["messages"][1]["content"].as_str().unwrap();
        assert!(checks.contains("parse('2m') is 120"), "{checks}");
        assert!(
            told.contains("The 2 check(s) mm wrote from the request's words pass."),
            "{told}"
        );
        assert!(
            server.requests()[2].get("tools").is_none(),
            "answer asked without tools: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        json_result(&out)["written"],
        json!(["dur.py"]),
        "{}",
        stdout(&out)
    );
}

/// After mm's own tries (here the file asked for whole and written), a
/// model whose rounds change nothing (edits that match nothing, each
/// different, so no repeat is seen) is stopped after five such rounds
/// and asked for its report, instead of running to the round budget.
#[test]
fn rounds_that_change_nothing_after_mms_own_tries_end_the_turn() {
    let stub = "def parse(s):\n    raise NotImplementedError\n\n\ndef unit():\n    return 's'\n";
    let spec = "# Durations\n\nparse('90') is 90; parse('2m') is 120.\n";
    let done = "def parse(s):\n    return int(s)\n\n\ndef unit():\n    return 's'\n";
    let mut script = vec![
        call("c1", "read_file", json!({"path": "dur.py"})),
        call("c2", "read_file", json!({"path": "SPEC.md"})),
    ];
    for i in 0..7 {
        script.push(call(
            &format!("e{i}"),
            "edit_file",
            json!({"path": "dur.py", "old_string": format!("no such line {i}"), "replacement": "x = 1"}),
        ));
    }
    script.push(text("parse reads whole numbers."));
    let server = Server::with_side(script, vec![text(&format!("```python\n{done}```"))]);
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement parse in dur.py as SPEC.md says.",
        &["-yolo", "-json"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "a stopped loop: {}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains(
            "the model changed nothing in 5 rounds after mm's own tries: asking for a final report"
        ),
        "{err}"
    );
    let ran: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| tool_results(r).into_iter().map(|(id, _)| id))
        .collect();
    assert!(ran.contains(&"e4".to_string()), "{ran:?}");
    assert!(!ran.contains(&"e5".to_string()), "{ran:?}");
    assert_eq!(ws.read("dur.py"), done);
}

/// A loop that ends a turn with one named file written and another not
/// (a small model repeating a refused write to the second): the files
/// are asked for whole before the report, and the second is written.
#[test]
fn a_loop_with_a_named_file_still_unwritten_asks_for_the_files_whole() {
    let wrap = "def fill(t):\n    return t[:72]\n";
    let banner = "def rule():\n    return '-' * 72\n";
    let mut script = vec![call(
        "w1",
        "write_file",
        json!({"path": "config.py", "content": "LINE_WIDTH = 72\n"}),
    )];
    for i in 0..8 {
        script.push(call(
            &format!("b{i}"),
            "write_file",
            json!({"path": "banner.py", "content": "banner.py is unchanged since you saw it. It is not sent again."}),
        ));
    }
    for _ in 0..3 {
        script.push(text("config.py added; banner.py uses it."));
    }
    let server = Server::with_side(
        script,
        vec![
            text(
                "```python\nfrom config import LINE_WIDTH\n\n\ndef fill(t):\n    return t[:LINE_WIDTH]\n```",
            ),
            text(
                "```python\nfrom config import LINE_WIDTH\n\n\ndef rule():\n    return '-' * LINE_WIDTH\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write("wrap.py", wrap);
    ws.write("banner.py", banner);
    let out = ws.run(
        &server,
        "Add a constant LINE_WIDTH = 72 to config.py and make wrap.py and banner.py use it.",
        &["-yolo", "-json"],
    );
    let err = stderr(&out);
    assert!(err.contains("asking for"), "{err}");
    assert!(ws.read("banner.py").contains("'-' * LINE_WIDTH"), "{err}");
    assert!(ws.read("wrap.py").contains("t[:LINE_WIDTH]"), "{err}");
}

#[test]
fn candidates_are_tried_in_a_scratch_copy_and_only_the_one_that_passes_is_written() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let greet = "def greet(name):\n    return 'Hello ' + name\n\n\ndef bye(name):\n    return 'Bye ' + name\n";
    let test = "import unittest\n\nfrom greet import greet, bye\n\n\nclass T(unittest.TestCase):\n    def test_greet(self):\n        self.assertEqual(greet('Ann'), 'Hello, Ann!')\n\n    def test_bye(self):\n        self.assertEqual(bye('Ann'), 'Bye Ann')\n";
    let server = Server::with_side(
        vec![text("greet now puts a comma and an exclamation mark.")],
        vec![
            text("```python\ndef greet(name):\n    return 'Hi, ' + name + '!'\n```"),
            text("```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("greet.py", greet);
    ws.write("test_greet.py", test);
    let out = ws.run(
        &server,
        "The tests in test_greet.py fail. Fix greet.py.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        ws.read("greet.py")
            .contains("return 'Hello, ' + name + '!'")
    );
    assert!(ws.read("greet.py").contains("def bye(name)"));
    let err = stderr(&out);
    // Said before the wait.
    assert!(
        err.contains("asking for up to 3 candidate fixes of greet")
            && err.contains("in greet.py, each tried in a scratch copy"),
        "{err}"
    );
    assert!(err.contains("2 candidates tried, the 2nd passed"), "{err}");
    // The wrong candidate never reached the workspace: nothing was undone.
    assert!(!err.contains("undo the change"), "{err}");
    assert_eq!(json_result(&out)["tests"]["passed"], true);
}

/// Failing tests of three functions where the one the others call is
/// wrong: the first candidate is asked for that one alone, with the
/// values the tests got from it.
#[test]
fn a_candidate_is_asked_for_the_function_the_others_call_with_its_wrong_values() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let pager = "def page_count(total, per_page):\n    return max(1, total // per_page)\n\n\ndef last_page(items, per_page):\n    return page_count(len(items), per_page)\n\n\ndef label(page, total):\n    return f'Page {page} of {page_count(total, 10)}'\n";
    let test = "import unittest\n\nfrom pager import page_count, last_page, label\n\n\nclass T(unittest.TestCase):\n    def test_count(self):\n        self.assertEqual(page_count(31, 10), 4)\n\n    def test_last(self):\n        self.assertEqual(last_page(list(range(25)), 10), 3)\n\n    def test_label(self):\n        self.assertEqual(label(3, 25), 'Page 3 of 3')\n";
    let server = Server::with_side(
        vec![text("page_count rounds up now.")],
        vec![text(
            "```python\ndef page_count(total, per_page):\n    return max(1, -(-total // per_page))\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("pager.py", pager);
    ws.write("test_pager.py", test);
    let out = ws.run(
        &server,
        "The tests in test_pager.py fail. Fix pager.py.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("page_count(31, 10) gives 3; the test expects 4"),
        "{asked}"
    );
    assert!(!asked.contains("def label"), "{asked}");
    assert!(ws.read("pager.py").contains("-(-total // per_page)"));
    assert!(ws.read("pager.py").contains("def label(page, total)"));
    assert_eq!(json_result(&out)["tests"]["passed"], true);
}

/// A candidate the model hands back twice is tried once and does not use
/// up a place: the next request is another try.
#[test]
fn a_candidate_handed_back_again_does_not_count_as_another() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let greet = "def greet(name):\n    return 'Hello ' + name\n";
    let test = "import unittest\n\nfrom greet import greet\n\n\nclass T(unittest.TestCase):\n    def test_greet(self):\n        self.assertEqual(greet('Ann'), 'Hello, Ann!')\n";
    let wrong = "```python\ndef greet(name):\n    return 'Hi, ' + name + '!'\n```";
    let server = Server::with_side(
        vec![text("greet now puts a comma and an exclamation mark.")],
        vec![
            text(wrong),
            text(wrong),
            text(wrong),
            text("```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("greet.py", greet);
    ws.write("test_greet.py", test);
    let out = ws.run(
        &server,
        "The tests in test_greet.py fail. Fix greet.py.",
        &["-yolo", "-json", "-harness-off", "refine"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        ws.read("greet.py")
            .contains("return 'Hello, ' + name + '!'"),
        "{err}"
    );
    assert!(err.contains("2 candidates tried, the 2nd passed"), "{err}");
    assert_eq!(server.side_requests().len(), 4, "{err}");
}

#[test]
fn a_fix_that_only_catches_the_error_is_asked_about_its_cause() {
    let app = "prices = {'apple': 3, 'pear': 2}\ntotal = 0\nfor item in ['apple', 'pear']:\n    total += prices[item.upper()]\nprint(f'total: {total}')\n";
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "app.py", "old_string": "    total += prices[item.upper()]\n", "replacement": "    try:\n        total += prices[item.upper()]\n    except KeyError:\n        pass\n"}),
        ),
        text("Fixed: it no longer crashes."),
        text("The total should be 5; the keys are lower case."),
    ]);
    let ws = Workspace::new();
    ws.write("app.py", app);
    let out = ws.run(
        &server,
        "`python3 app.py` crashes. Fix it.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let asked = last_user(&server.requests()[2]);
    assert!(asked.contains("exits 0 now"), "{asked}");
    assert!(asked.contains("It printed:\n```\ntotal: 0\n```"), "{asked}");
    assert!(
        asked.contains("app.py: the change catches the error"),
        "{asked}"
    );
    assert!(asked.contains("KeyError"), "{asked}");

    // Off, exit 0 ends the turn.
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "app.py", "old_string": "    total += prices[item.upper()]\n", "replacement": "    try:\n        total += prices[item.upper()]\n    except KeyError:\n        pass\n"}),
        ),
        text("Fixed: it no longer crashes."),
    ]);
    let ws = Workspace::new();
    ws.write("app.py", app);
    let out = ws.run(
        &server,
        "`python3 app.py` crashes. Fix it.",
        &["-yolo", "-json", "-harness-off", "exit0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_answer_that_misquotes_a_commands_output_is_held_to_it() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::start(vec![
        text("It prints a b c."),
        text("It prints a b c, one per word."),
    ]);
    let ws = Workspace::new();
    ws.write("app.py", "print('-'.join(['a', 'b', 'c']))\n");
    let out = ws.run(
        &server,
        "What exactly does `python3 app.py` print?",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let first = last_user(&reqs[0]);
    assert!(
        first.contains(
            "[mm ran `python3 app.py` to check; it printed exactly this:]\n```\na-b-c\n```"
        ),
        "{first}"
    );
    let again = last_user(&reqs[1]);
    assert!(
        again.contains("Your answer does not give that output"),
        "{again}"
    );
    let answer = json_result(&out)["answer"].as_str().unwrap().to_string();
    assert!(
        answer.ends_with("mm ran `python3 app.py`; it printed:\n```\na-b-c\n```"),
        "{answer}"
    );
}

#[test]
fn a_rename_request_is_done_by_mm_in_every_file_that_uses_the_name() {
    let server = Server::start(vec![text("calc_total is compute_total now.")]);
    let ws = Workspace::new();
    ws.write(
        "pricing.py",
        "def calc_total(items):\n    return sum(items)\n",
    );
    ws.write(
        "cart.py",
        "from pricing import calc_total\n\n\ndef checkout(items):\n    return calc_total(items)\n",
    );
    ws.write(
        "notes.py",
        "def f():\n    calc_total = 'a local name in a file that imports nothing'\n    return calc_total\n",
    );
    let out = ws.run(
        &server,
        "Rename calc_total in pricing.py to compute_total and update the callers.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("pricing.py"),
        "def compute_total(items):\n    return sum(items)\n"
    );
    assert_eq!(
        ws.read("cart.py"),
        "from pricing import compute_total\n\n\ndef checkout(items):\n    return compute_total(items)\n"
    );
    assert!(ws.read("notes.py").contains("    calc_total = "));
    let first = &server.requests()[0];
    assert!(
        last_user(first)
            .contains("[mm renamed calc_total to compute_total (every whole-word use) in"),
        "{}",
        last_user(first)
    );
    assert!(
        first.get("tools").is_none(),
        "settled: the answer is asked for without tools"
    );
}

#[test]
fn a_literal_made_a_constant_in_a_new_module_is_done_by_mm() {
    let server = Server::start(vec![text("TIMEOUT is in settings.py now.")]);
    let ws = Workspace::new();
    ws.write(
        "client.py",
        "\"\"\"HTTP client.\"\"\"\nimport time\n\n\ndef wait(tries):\n    # 30 seconds each\n    return [30 * t for t in range(tries)] + ['30']\n",
    );
    ws.write("server.py", "def serve(loop):\n    loop.run(timeout=30)\n");
    ws.write(
        "test_client.py",
        "from client import wait\nassert wait(2) == [0, 30, '30']\n",
    );
    let out = ws.run(
        &server,
        "The timeout 30 is hard-coded in client.py and server.py. Add a settings.py with TIMEOUT = 30 and use it instead of the literal in both.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("settings.py"), "TIMEOUT = 30\n");
    assert_eq!(
        ws.read("client.py"),
        "\"\"\"HTTP client.\"\"\"\nimport time\nfrom settings import TIMEOUT\n\n\ndef wait(tries):\n    # 30 seconds each\n    return [TIMEOUT * t for t in range(tries)] + ['30']\n"
    );
    assert_eq!(
        ws.read("server.py"),
        "from settings import TIMEOUT\n\ndef serve(loop):\n    loop.run(timeout=TIMEOUT)\n"
    );
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("[mm added `TIMEOUT = 30` to settings.py and, in client.py, server.py, replaced every 30"),
        "{first}"
    );
    // Off, the model does it.
    let server = Server::start(vec![text("Not done.")]);
    let ws = Workspace::new();
    ws.write("server.py", "def serve(loop):\n    loop.run(timeout=30)\n");
    ws.run(
        &server,
        "The timeout 30 is hard-coded in server.py. Add a settings.py with TIMEOUT = 30 and use it instead of the literal.",
        &["-yolo", "-json", "-harness-off", "extract"],
    );
    assert!(ws.read("server.py").contains("timeout=30"));
}

#[test]
fn a_write_to_another_file_than_the_one_the_request_creates_is_refused() {
    let slug = "def slugify(s):\n    return s.lower().replace(' ', '-')\n";
    let tests = "import unittest\n\nfrom slug import slugify\n\n\nclass T(unittest.TestCase):\n    def test_spaces(self):\n        self.assertEqual(slugify('A B'), 'a-b')\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "slug.py", "content": format!("{slug}\n\n{tests}")}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "test_slug.py", "content": tests}),
        ),
        text("Wrote test_slug.py."),
    ]);
    let ws = Workspace::new();
    ws.write("slug.py", slug);
    let out = ws.run(
        &server,
        "Write unit tests for slugify in a new file test_slug.py.",
        &["-yolo", "-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[1])[0].1;
    assert!(
        said.starts_with("refused: the request asks for test_slug.py, which does not exist yet, and this call writes slug.py instead."),
        "{said}"
    );
    assert_eq!(ws.read("slug.py"), slug);
    assert_eq!(ws.read("test_slug.py"), tests);
}

#[test]
fn checks_written_from_the_request_catch_a_rule_the_change_left_out() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "nums.py", "content": "def double(x):\n    return 2 * x\n\n\ndef clamp_pct(x):\n    return min(x, 100)\n"}),
            ),
            text("Added clamp_pct."),
            call(
                "c2",
                "edit_file",
                json!({"path": "nums.py", "old_string": "return min(x, 100)", "replacement": "return max(0, min(x, 100))"}),
            ),
            text("Now below 0 gives 0 too."),
        ],
        vec![text(
            "```python\nassert clamp_pct(150) == 100\nassert clamp_pct(-5) == 0\nassert clamp_pct(50) == 51\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("nums.py", "def double(x):\n    return 2 * x\n");
    let out = ws.run(
        &server,
        "Add a function clamp_pct(x) to nums.py: values below 0 give 0 and values above 100 give 100, so clamp_pct(150) is 100 and clamp_pct(-5) is 0.",
        &["-yolo", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("clamp_pct (from nums)"), "{asked}");
    assert!(
        !asked.contains("def clamp_pct"),
        "the checks are written without the code: {asked}"
    );
    let told = last_user(&server.requests()[2]);
    assert!(
        told.contains("FAILED: assert clamp_pct(-5) == 0  (it gives -5)"),
        "{told}"
    );
    // A check whose value the request does not state is not run.
    assert!(!told.contains("== 51"), "{told}");
    assert!(!told.contains("FAILED: assert clamp_pct(150)"), "{told}");
    assert!(ws.read("nums.py").contains("max(0, min(x, 100))"));
    // Nothing of the checks is left in the workspace.
    let left: Vec<String> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(left, ["nums.py"], "{left:?}");
}

/// Examples enough for the values leave out the inputs a rule refuses:
/// the model is asked for checks of those alone, and only those that
/// raise an error the words name are kept.
#[test]
fn with_examples_enough_the_checks_asked_for_are_the_refused_inputs() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "def parse(s):\n    \"\"\"Seconds in a duration; an empty string raises ValueError.\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    parse('1h')  -> 3600\n    \"\"\"\n    raise NotImplementedError\n";
    let lenient = stub.replace(
        "    raise NotImplementedError\n",
        "    if not s:\n        return 0\n    unit = {'m': 60, 'h': 3600}.get(s[-1])\n    return int(s[:-1]) * unit if unit else int(s)\n",
    );
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "dur.py", "content": lenient}),
            ),
            text("Implemented parse."),
            text("Done."),
            text("Done."),
        ],
        vec![
            text(
                "```python\nraises(ValueError, lambda: parse(''))\nassert parse('3m') == 180\nraises(KeyError, lambda: parse('x'))\nraises(ValueError, lambda: parse(\"90\"))\n```",
            ),
            text("no code here"),
            text("no code here"),
            text("no code here"),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    let out = ws.run(&server, "Implement parse in dur.py.", &["-json"]);
    let err = stderr(&out);
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("the inputs this request says are refused with ValueError"),
        "{asked}"
    );
    // Three examples and the one refused input the words name; the
    // value the model made up, the error they do not name, and a raise
    // where an example gives a value are dropped.
    assert!(
        err.contains("1 of 4 check(s) from the request fail"),
        "{err}"
    );
    let told: String = server
        .requests()
        .iter()
        .map(|r| r["messages"].to_string())
        .collect();
    assert!(
        told.contains("FAILED: raises(ValueError, lambda: parse(''))  (it returns 0)"),
        "{told}"
    );
    assert!(!told.contains("parse('3m')"), "{told}");
    assert!(!told.contains("KeyError"), "{told}");
}

/// A model that writes and then goes round in circles never ends the
/// turn, so the checks an ending runs would never run: they run when the
/// circling is noticed, and the model hears their failures instead of
/// "stop repeating".
#[test]
fn a_model_circling_after_a_write_hears_the_request_checks_fail() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let mut script = vec![call(
        "c1",
        "write_file",
        json!({"path": "nums.py", "content": "def double(x):\n    return 2 * x\n\n\ndef clamp_pct(x):\n    return min(x, 100)\n"}),
    )];
    for k in 0..8 {
        script.push(call(
            &format!("r{k}"),
            "read_file",
            json!({"path": "nums.py"}),
        ));
    }
    script.push(text("Added clamp_pct."));
    let server = Server::with_side(
        script,
        vec![text(
            "```python\nassert clamp_pct(150) == 100\nassert clamp_pct(-5) == 0\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("nums.py", "def double(x):\n    return 2 * x\n");
    let out = ws.run(
        &server,
        "Add a function clamp_pct(x) to nums.py: values below 0 give 0 and values above 100 give 100, so clamp_pct(150) is 100 and clamp_pct(-5) is 0.",
        &["-yolo", "-json", "-harness-off", "candidates"],
    );
    let told: Vec<String> = server.requests().iter().map(last_user).collect();
    assert!(
        told.iter()
            .any(|t| t.contains("FAILED: assert clamp_pct(-5) == 0  (it gives -5)")),
        "{told:#?}\n{}",
        stderr(&out)
    );
    assert!(
        !told
            .iter()
            .any(|t| t.contains("You are repeating the same tool calls")),
        "the checks' failures are said instead: {told:#?}"
    );
}

/// The same with tests that fail on the change: candidates are tried
/// against them before the turn is given up, as an ending would.
#[test]
fn a_model_circling_after_a_failing_write_gets_candidates_tried() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let mut script = vec![call(
        "c1",
        "edit_file",
        json!({"path": "greet.py", "old_string": "    raise NotImplementedError", "replacement": "    return 'Hi ' + name"}),
    )];
    for k in 0..8 {
        script.push(call(
            &format!("r{k}"),
            "read_file",
            json!({"path": "greet.py"}),
        ));
    }
    script.push(text("greet is implemented."));
    let server = Server::with_side(
        script,
        vec![text(
            "```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write(
        "greet.py",
        "def greet(name):\n    raise NotImplementedError\n\n\ndef bye(name):\n    return 'Bye ' + name\n",
    );
    ws.write(
        "test_greet.py",
        "import unittest\n\nfrom greet import greet, bye\n\n\nclass T(unittest.TestCase):\n    def test_greet(self):\n        self.assertEqual(greet('Ann'), 'Hello, Ann!')\n\n    def test_bye(self):\n        self.assertEqual(bye('Ann'), 'Bye Ann')\n",
    );
    let out = ws.run(&server, "Implement greet in greet.py.", &["-yolo", "-json"]);
    let err = stderr(&out);
    assert!(
        ws.read("greet.py")
            .contains("return 'Hello, ' + name + '!'"),
        "{err}"
    );
    assert!(err.contains("the 1st passed"), "{err}");
    assert_eq!(json_result(&out)["tests"]["passed"], true, "{err}");
}

/// The newcomer trial of 2026-12-06: the turn wrote util.py and the
/// answer said store.py was edited; nothing caught it.
#[test]
fn an_answer_naming_a_file_the_turn_did_not_write_is_flagged() {
    let mut script = vec![call(
        "c1",
        "write_file",
        json!({"path": "util.py", "content": "def double(x):\n    return 2 * x\n"}),
    )];
    for _ in 0..4 {
        script.push(text("I edited store.py to fix the bug."));
    }
    let server = Server::start(script);
    let ws = Workspace::new();
    ws.write("store.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(
        &server,
        "Add a helper double(x) in util.py.",
        &["-yolo", "-json", "-harness-off", "asserts"],
    );
    let r = json_result(&out);
    let flagged = r["unbacked_claims"].to_string();
    assert!(
        flagged.contains("the answer says store.py was changed, but this turn wrote util.py"),
        "{r}\n{}",
        stderr(&out)
    );
}

/// An answer that says the change works while checks mm wrote from the
/// request still fail gets the count after it, however the turn ends.
#[test]
fn a_claim_that_it_works_against_failing_request_checks_gets_the_count() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let mut script = vec![
        call(
            "c1",
            "write_file",
            json!({"path": "nums.py", "content": "def double(x):\n    return 2 * x\n\n\ndef clamp_pct(x):\n    return min(x, 100)\n"}),
        ),
        text("Added clamp_pct."),
    ];
    for _ in 0..6 {
        script.push(text("clamp_pct works correctly now: the checks pass."));
    }
    let server = Server::with_side(
        script,
        vec![text(
            "```python\nassert clamp_pct(150) == 100\nassert clamp_pct(-5) == 0\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("nums.py", "def double(x):\n    return 2 * x\n");
    let out = ws.run(
        &server,
        "Add a function clamp_pct(x) to nums.py: values below 0 give 0 and values above 100 give 100, so clamp_pct(150) is 100 and clamp_pct(-5) is 0.",
        &["-yolo", "-json", "-max-rounds", "8"],
    );
    let r = json_result(&out);
    let answer = r["answer"].as_str().unwrap_or_default();
    assert!(
        answer.contains("mm: 1 of the 2 checks mm wrote from the request fail"),
        "{r}\n{}",
        stderr(&out)
    );
    let flagged = r["unbacked_claims"].to_string();
    assert!(
        flagged.contains("the answer says the change works, but 1 of the 2 checks"),
        "{flagged}"
    );
}

/// llama-server answers 500 when the model's tool call is not valid JSON
/// ("Failed to parse tool call arguments as JSON"). That is the model's
/// reply, not a server down: not sent again as it was (the same request
/// gets the same reply), the model is told, and after two such rounds
/// the file is asked for whole, as text.
#[test]
fn a_tool_call_the_server_cannot_parse_is_told_and_the_file_asked_for_whole() {
    let bad = || {
        Reply::Status {
        code: 500,
        body: r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 6156: syntax error while parsing value - invalid string: missing closing quote","type":"server_error"}}"#.into(),
        retry_after: None,
    }
    };
    let done = "def area(w, h):\n    return w * h\n";
    let server = Server::with_side(
        vec![bad(), bad(), text("area is implemented.")],
        vec![text(&format!("```python\n{done}```"))],
    );
    let ws = Workspace::new();
    ws.write("geo.py", "def area(w, h):\n    raise NotImplementedError\n");
    let out = ws.run(&server, "Implement area in geo.py.", &["-yolo", "-json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(ws.read("geo.py"), done, "{err}");
    // Each bad reply was asked for once, never retried as it was.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{err}");
    assert_ne!(reqs[0]["messages"], reqs[1]["messages"]);
    assert!(
        last_user(&reqs[1]).contains("arguments were not valid JSON"),
        "{}",
        last_user(&reqs[1])
    );
    assert!(!err.contains("cannot reach"), "{err}");
    assert_eq!(server.side_requests().len(), 1, "{err}");
    assert_eq!(json_result(&out)["written"], json!(["geo.py"]));
}

/// `-edit-format blocks`: before the model's first look, mm asks for the
/// change to the named file as search/replace blocks, without tools, and
/// applies them through the usual write.
#[test]
fn edit_format_blocks_asks_for_search_replace_blocks_and_applies_them() {
    let before =
        "def area(w, h):\n    raise NotImplementedError\n\n\ndef unit():\n    return 'm'\n";
    let server = Server::with_side(
        vec![text("area returns w * h now.")],
        vec![text(
            "<<<<<<< SEARCH\n    raise NotImplementedError\n=======\n    return w * h\n>>>>>>> REPLACE\n",
        )],
    );
    let ws = Workspace::new();
    ws.write("geo.py", before);
    let out = ws.run(
        &server,
        "Implement area in geo.py.",
        &["-yolo", "-json", "-edit-format", "blocks"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        ws.read("geo.py"),
        "def area(w, h):\n    return w * h\n\n\ndef unit():\n    return 'm'\n",
        "{err}"
    );
    let side = server.side_requests();
    assert_eq!(side.len(), 1, "{err}");
    assert!(side[0].get("tools").is_none(), "asked without tools");
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("<<<<<<< SEARCH"), "{asked}");
    assert!(
        asked.contains("geo.py is now:\n```python\ndef area"),
        "{asked}"
    );
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("so mm asked for the change as search/replace blocks and wrote it:]"),
        "{first}"
    );
    // Written before the model's first look, nothing failing: the model
    // is asked for its answer, with no tools to undo the change with.
    assert!(
        server.requests()[0].get("tools").is_none(),
        "the first request offered tools"
    );
    assert!(first.contains("No tool call is needed"), "{first}");
}

#[test]
fn whole_format_updates_the_callers_of_a_definition_whose_parameters_changed() {
    let server = Server::with_side(
        vec![text("line takes a level now; app.py passes INFO.")],
        vec![
            text("```python\ndef line(level, msg):\n    return f'[{level}] {msg}'\n```"),
            text("```python\nfrom logfmt import line\n\nprint(line('INFO', 'start'))\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("logfmt.py", "def line(msg):\n    return f'[INFO] {msg}'\n");
    ws.write(
        "app.py",
        "from logfmt import line\n\nprint(line('start'))\n",
    );
    ws.write("notes.py", "def unrelated():\n    return 1\n");
    let out = ws.run(
        &server,
        "Give line in logfmt.py a new first parameter, level, and put it in the brackets. Every caller passes 'INFO'.",
        &["-yolo", "-json", "-edit-format", "whole"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        ws.read("app.py"),
        "from logfmt import line\n\nprint(line('INFO', 'start'))\n",
        "{err}"
    );
    let side = server.side_requests();
    assert_eq!(side.len(), 2, "{err}");
    let asked = side[1]["messages"][1]["content"].as_str().unwrap();
    // The caller is asked for with the changed file beside it.
    assert!(
        asked.contains("logfmt.py:\n```python\ndef line(level, msg)"),
        "{asked}"
    );
    assert!(asked.contains("app.py is now:"), "{asked}");
    assert!(
        err.contains("app.py calls what changed in logfmt.py"),
        "{err}"
    );
}

/// Red-team round 15: the files a change's callers are looked for in,
/// and the files read earlier that a request is sent with, are read as
/// `read_file` reads them: not a file with a second name outside the
/// workspace, not a credential-shaped one, not through a link made since.
#[test]
fn callers_and_files_read_are_only_what_read_file_would_show() {
    let server = Server::with_side(
        vec![
            call("r1", "read_file", json!({"path": "notes.py"})),
            call(
                "b1",
                "bash",
                json!({"command": "ln -sf ../outside/key.txt notes.py"}),
            ),
            text("line takes a level now; app.py passes INFO."),
        ],
        vec![
            text("```python\ndef line(level, msg):\n    return f'[{level}] {msg}'\n```"),
            text("```python\nfrom logfmt import line\n\nprint(line('INFO', 'start'))\n```"),
            text("```python\nprint(1)\n```"),
            text("```python\nprint(1)\n```"),
        ],
    );
    let ws = Workspace::new();
    let outside = ws.path().parent().unwrap().join(format!(
        "outside-{}",
        ws.path().file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&outside).unwrap();
    let ws_dir = ws.path();
    std::fs::write(
        outside.join("tool.py"),
        "# SECRET-HARDLINK-1\nfrom logfmt import line\nX = line('a')\n",
    )
    .unwrap();
    std::fs::write(outside.join("key.txt"), "SECRET-LINKED-1\n").unwrap();
    ws.write("logfmt.py", "def line(msg):\n    return f'[INFO] {msg}'\n");
    ws.write(
        "app.py",
        "from logfmt import line\n\nprint(line('start'))\n",
    );
    ws.write("notes.py", "def unrelated():\n    return 1\n");
    ws.write(
        ".env.py",
        "TOKEN = 'SECRET-ENVPY-1'\nfrom logfmt import line\nY = line('b')\n",
    );
    std::fs::hard_link(outside.join("tool.py"), ws_dir.join("shared.py")).unwrap();
    let out = ws.run(
        &server,
        "Give line in logfmt.py a new first parameter, level, and put it in the brackets. Every caller passes 'INFO'.",
        &["-yolo", "-json", "-edit-format", "whole"],
    );
    let err = stderr(&out);
    let _ = std::fs::remove_dir_all(&outside);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let all: Vec<String> = server
        .requests()
        .iter()
        .chain(server.side_requests().iter())
        .map(std::string::ToString::to_string)
        .collect();
    for body in &all {
        for secret in ["SECRET-HARDLINK-1", "SECRET-ENVPY-1", "SECRET-LINKED-1"] {
            assert!(!body.contains(secret), "{secret} reached the model: {body}");
        }
    }
    assert_eq!(
        ws.read("app.py"),
        "from logfmt import line\n\nprint(line('INFO', 'start'))\n",
        "{err}"
    );
}

#[test]
fn whole_format_writes_a_new_file_then_the_named_files_that_use_it() {
    let server = Server::with_side(
        vec![text("config.py holds WIDTH; wrap.py uses it.")],
        vec![
            text("```python\nWIDTH = 72\n```"),
            text(
                "```python\nfrom config import WIDTH\n\n\ndef rule():\n    return '-' * WIDTH\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write("wrap.py", "def rule():\n    return '-' * 72\n");
    let out = ws.run(
        &server,
        "Add a config.py with WIDTH = 72 and make wrap.py use it instead of the literal.",
        // mm would do this extraction itself: off, to see the format.
        &[
            "-yolo",
            "-json",
            "-edit-format",
            "whole",
            "-harness-off",
            "extract",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(ws.read("config.py"), "WIDTH = 72\n", "{err}");
    assert!(
        ws.read("wrap.py").contains("from config import WIDTH"),
        "{err}"
    );
    let side = server.side_requests();
    assert_eq!(side.len(), 2, "{err}");
    let asked = side[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("config.py:\n```python\nWIDTH = 72"),
        "{asked}"
    );
    assert!(asked.contains("wrap.py is now:"), "{asked}");
}

#[test]
fn edit_format_auto_asks_for_the_whole_file_when_a_request_adds_code() {
    let server = Server::with_side(
        vec![text("peek returns the top item.")],
        vec![text(
            "```python\nclass Stack:\n    def __init__(self):\n        self.items = []\n\n    def peek(self):\n        return self.items[-1]\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write(
        "stack.py",
        "class Stack:\n    def __init__(self):\n        self.items = []\n",
    );
    let out = ws.run(
        &server,
        "Add a method peek() to the Stack class in stack.py.",
        &["-yolo", "-json", "-edit-format", "auto"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(ws.read("stack.py").contains("def peek(self):"), "{err}");
    // The whole file first (the checks from the request may follow).
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("Write stack.py in full"), "{asked}");
    assert!(
        err.contains("editFormat is auto: asking for stack.py in full"),
        "{err}"
    );
    // Written, nothing failing: the answer is asked for without tools.
    assert!(server.requests()[0].get("tools").is_none());
}

/// A stub's own docstring is the user's words too: its examples judge
/// the change when the request and no document state any.
#[test]
fn a_stubs_docstring_examples_are_checks() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "def parse(s):\n    \"\"\"Seconds in a duration.\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    parse('1h')  -> 3600\n    \"\"\"\n    raise NotImplementedError\n";
    let wrong = stub.replace(
        "    raise NotImplementedError\n",
        "    return int(s.rstrip('mh'))\n",
    );
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "dur.py", "content": wrong}),
            ),
            text("Implemented parse."),
            text("Done."),
            text("Done."),
        ],
        vec![
            text("no code here"),
            text("no code here"),
            text("no code here"),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    let out = ws.run(&server, "Implement parse in dur.py.", &["-json"]);
    let err = stderr(&out);
    assert!(
        err.contains("2 of 3 check(s) from the request's examples fail"),
        "{err}"
    );
    let told: String = server
        .requests()
        .iter()
        .map(|r| r["messages"].to_string())
        .collect();
    assert!(
        told.contains("FAILED: assert parse('2m') == 120  (it gives 2"),
        "{told}"
    );
    // Every request the server answered is in the log, the candidates'
    // too, so `/stats` counts what the receipt counts.
    let served = server.requests().len() + server.side_requests().len();
    assert!(!server.side_requests().is_empty());
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    let logged = log
        .lines()
        .filter(|l| l.contains("\"type\":\"request\""))
        .count();
    assert_eq!(logged, served, "{log}");
    assert!(err.contains(&format!("{served} requests")), "{err}");
}

/// A Rust crate's stub and its specification: the examples run through
/// a program cargo builds outside the workspace, in the fence, and judge
/// the candidates as a Python script's do.
#[test]
fn a_rust_stubs_specification_examples_run_through_cargo() {
    // cargo is here: it runs these tests.
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "//! Sizes.\n\npub fn unit() -> &'static str {\n    \"B\"\n}\n\n/// Bytes in a size; see SPEC.md.\npub fn parse_size(s: &str) -> Option<u64> {\n    todo!()\n}\n";
    let spec = "# Sizes\n\n    parse_size(\"12\")  -> Some(12)\n    parse_size(\"2k\")  -> Some(2048)\n    parse_size(\"k\")   -> None\n    parse_size(\"x1\")  -> None\n";
    let wrong = stub.replace(
        "    todo!()\n",
        "    s.trim_end_matches('k').parse().ok()\n",
    );
    let right = "pub fn parse_size(s: &str) -> Option<u64> {\n    let (n, k) = match s.strip_suffix('k') {\n        Some(n) => (n, 1024),\n        None => (s, 1),\n    };\n    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {\n        return None;\n    }\n    n.parse::<u64>().ok().map(|v| v * k)\n}\n";
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "src/lib.rs", "content": wrong}),
            ),
            text("Implemented parse_size."),
            text("parse_size follows SPEC.md now."),
        ],
        vec![
            text(
                "```rust\npub fn parse_size(s: &str) -> Option<u64> {\n    s.trim_end_matches('k').parse().ok()\n}\n```",
            ),
            text(&format!("```rust\n{right}```")),
        ],
    );
    let ws = Workspace::new();
    ws.write(
        "Cargo.toml",
        "[package]\nname = \"sizes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    ws.write("src/lib.rs", stub);
    ws.write("SPEC.md", spec);
    ws.write(".gitignore", "target/\n");
    // The workspace's HOME is a scratch one: rustup's toolchains are
    // found where this test's cargo has them.
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    let rustup = std::env::var_os("RUSTUP_HOME").unwrap_or_else(|| home.join(".rustup").into());
    let cargo_home = std::env::var_os("CARGO_HOME").unwrap_or_else(|| home.join(".cargo").into());
    let out = ws
        .mm()
        .env("RUSTUP_HOME", rustup)
        .env("CARGO_HOME", cargo_home)
        .args(["-p", "Implement parse_size in src/lib.rs as SPEC.md says."])
        .args(["-url", &server.url(), "-json"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("1 of 4 check(s) from the request's examples fail"),
        "{err}"
    );
    // The first reply was the model's code again: not a candidate.
    assert!(err.contains("1 candidate tried, the 1st passed"), "{err}");
    assert!(err.contains("request checks: 4 passed"), "{err}");
    let now = ws.read("src/lib.rs");
    assert!(
        now.contains("n.parse::<u64>()") && now.contains("pub fn unit()"),
        "{now}"
    );
    // The candidates were asked with the failing check and what it gave.
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("FAILED: assert_eq!(parse_size(\"2k\"), Some(2048))  (it gives Some(2))"),
        "{asked}"
    );
    // Nothing of the check program was left in the workspace.
    assert!(!ws.path().join("src/main.rs").exists());
}

#[test]
fn a_stubs_specification_examples_judge_fresh_candidates() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "\"\"\"Durations.\"\"\"\n\n\ndef parse(s):\n    \"\"\"Seconds in a duration; see SPEC.md.\"\"\"\n    raise NotImplementedError\n\n\ndef unit():\n    return 's'\n";
    let spec = "# Durations\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    parse('1h')  -> 3600\n    parse('x')   -> raises ValueError\n";
    let wrong = stub.replace(
        "    raise NotImplementedError\n",
        "    return int(s.rstrip('mh'))\n",
    );
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "dur.py", "content": wrong}),
            ),
            text("Implemented parse."),
            text("parse follows SPEC.md now."),
        ],
        vec![
            // The checks of what the words say is refused (the examples
            // are enough for the values).
            text("```python\nraises(ValueError, lambda: parse('x'))\n```"),
            // The fix of the model's own code: unchanged.
            text("```python\ndef parse(s):\n    return int(s.rstrip('mh'))\n```"),
            // Fresh, from the placeholder: a near miss, then the right one.
            text(
                "```python\ndef parse(s):\n    if s.endswith('m'):\n        return int(s[:-1]) * 60\n    return int(s)\n```",
            ),
            text(
                "```python\nimport re\n\n\ndef parse(s):\n    m = re.fullmatch(r'(\\d+)([mh]?)', s)\n    if not m:\n        raise ValueError(s)\n    return int(m.group(1)) * {'': 1, 'm': 60, 'h': 3600}[m.group(2)]\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement parse in dur.py as SPEC.md says.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("2 of 4 check(s) from the request's examples fail"),
        "{err}"
    );
    assert!(err.contains("2 candidates tried, the 2nd passed"), "{err}");
    // The request's checks are named, not printed (a 50-line script).
    assert!(
        err.contains("the request's checks pass in a scratch copy"),
        "{err}"
    );
    assert!(!err.contains("MM_REQUEST_CHECKS"), "{err}");
    let now = ws.read("dur.py");
    assert!(now.contains("\"\"\"Durations.\"\"\"\nimport re\n"), "{now}");
    assert!(
        now.contains("raise ValueError(s)") && now.contains("def unit():"),
        "{now}"
    );
    let side = server.side_requests();
    // The second candidate was asked afresh: the placeholder and the
    // specification, not the model's wrong code.
    let fresh = side[2]["messages"][1]["content"].as_str().unwrap();
    assert!(fresh.contains("SPEC.md:\n```\n# Durations"), "{fresh}");
    assert!(fresh.contains("raise NotImplementedError"), "{fresh}");
    assert!(!fresh.contains("rstrip"), "{fresh}");
    assert!(
        fresh.contains("FAILED: assert parse('2m') == 120  (it gives 2)"),
        "{fresh}"
    );
}

/// A check the model wrote from the spec that every candidate fails is
/// set aside as doubtful: the candidate that passes all the others is
/// written, and the model is asked for its answer without tools.
#[test]
fn a_written_check_every_candidate_fails_is_doubted_not_obeyed() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let (server, ws, out) = clamp_settled_by_candidates(vec![
        text("Implemented clamp."),
        text("clamp follows SPEC.md now."),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("each failed the same 1 check(s) mm wrote, set aside as doubtful"),
        "{err}"
    );
    let now = ws.read("clamp.py");
    assert!(
        now.contains("raise ValueError('lo > hi')") && now.contains("def unit():"),
        "{now}"
    );
    let reqs = server.requests();
    let told = last_user(reqs.last().unwrap());
    assert!(told.contains("assert clamp(10, 0, 10) == 0"), "{told}");
    assert!(
        reqs.last().unwrap().get("tools").is_none(),
        "answer asked without tools"
    );
}

/// Asked for its answer without tools once mm's candidate settled the
/// request, the model writes a tool call as text: it is not run (it
/// would write over the change), and the answer is asked for again,
/// still without tools.
#[test]
fn a_call_written_as_text_where_the_answer_was_asked_is_not_run() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let (server, ws, out) = clamp_settled_by_candidates(vec![
        text("Implemented clamp."),
        text(
            "{\"name\": \"write_file\", \"arguments\": {\"path\": \"clamp.py\", \"content\": \"def clamp(x, lo, hi):\\n    return x\\n\"}}",
        ),
        text("clamp raises ValueError when lo > hi and clamps x otherwise."),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "the model wrote a write_file call as text where its answer was asked for; not run"
        ),
        "{err}"
    );
    let now = ws.read("clamp.py");
    assert!(now.contains("raise ValueError('lo > hi')"), "{now}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{err}");
    assert!(reqs[3].get("tools").is_none(), "asked again without tools");
    assert_eq!(
        json_result(&out)["answer"],
        "clamp raises ValueError when lo > hi and clamps x otherwise."
    );
}

/// A clamp stub and its spec; the model writes a wrong clamp, the checks
/// mm has written from the spec (one of them wrong) fail, and the three
/// candidates pass all but the wrong one: the best is written and the
/// turn is settled. `after`: the model's replies from its second on.
fn clamp_settled_by_candidates(after: Vec<Reply>) -> (Server, Workspace, std::process::Output) {
    let stub = "def clamp(x, lo, hi):\n    \"\"\"See SPEC.md.\"\"\"\n    raise NotImplementedError\n\n\ndef unit():\n    return 'm'\n";
    let spec = "# clamp(x, lo, hi)\n\nclamp(5, 0, 10) is 5 and clamp(-3, 0, 10) is 0.\nWhen lo is greater than hi, raise ValueError.\n";
    let wrong = stub.replace(
        "    raise NotImplementedError\n",
        "    return max(lo, min(x, hi))\n",
    );
    let mut script = vec![call(
        "c1",
        "write_file",
        json!({"path": "clamp.py", "content": wrong}),
    )];
    script.extend(after);
    let server = Server::with_side(
        script,
        vec![
            // The checks from the spec's words: the last one is wrong.
            text(
                "```python\nassert clamp(15, 0, 10) == 10\nraises(ValueError, lambda: clamp(1, 5, 0))\nassert clamp(10, 0, 10) == 0\n```",
            ),
            // Three candidates, each right, each written its own way.
            text(
                "```python\ndef clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError('lo > hi')\n    return max(lo, min(x, hi))\n```",
            ),
            text(
                "```python\ndef clamp(x, lo, hi):\n    if hi < lo:\n        raise ValueError(hi)\n    return min(max(x, lo), hi)\n```",
            ),
            text(
                "```python\ndef clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError\n    return lo if x < lo else hi if x > hi else x\n```",
            ),
        ],
    );
    let ws = Workspace::new();
    ws.write("clamp.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement clamp in clamp.py as SPEC.md says.",
        &["-json"],
    );
    (server, ws, out)
}

/// A stub whose rules file gives three examples, for the tests of
/// candidates judged by them.
fn label_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "lab.py",
        "def label(n):\n    \"\"\"See RULES.md.\"\"\"\n    return ''  # TODO\n",
    );
    ws.write(
        "RULES.md",
        "Examples:\n\n- `label(1)` returns `'one'`\n- `label(2)` returns `'two'`\n- `label(3)` returns `'many'`\n",
    );
    ws
}

/// The model's first try at the stub: right for 1 only.
fn label_first_write() -> Reply {
    call(
        "c1",
        "write_file",
        json!({"path": "lab.py", "content": "def label(n):\n    \"\"\"See RULES.md.\"\"\"\n    return 'one'\n"}),
    )
}

/// Three candidates: the 2nd fails one example, the others two.
fn label_candidates() -> Vec<Reply> {
    vec![
        text("```python\ndef label(n):\n    return 'two'\n```"),
        text("```python\ndef label(n):\n    return 'one' if n == 1 else 'two'\n```"),
        text("```python\ndef label(n):\n    return {1: 'one'}.get(n, 'many')\n```"),
    ]
}

#[test]
fn when_no_candidate_passes_the_one_failing_fewest_of_the_requests_examples_is_kept() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![
            label_first_write(),
            text("Done."),
            text("label handles 1 and 2; 3 still fails."),
        ],
        label_candidates(),
    );
    let ws = label_workspace();
    let out = ws.run(
        &server,
        "Implement label in lab.py; RULES.md has the rules.",
        &["-json", "-harness-off", "refine"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("3 candidates tried, none passed every check"),
        "{err}"
    );
    // The 2nd fails one check, the others two: it is kept.
    assert!(
        ws.read("lab.py")
            .contains("return 'one' if n == 1 else 'two'"),
        "{}",
        ws.read("lab.py")
    );
    let told = last_user(&server.requests()[2]);
    assert!(
        told.contains("What still fails:]\nFAILED: assert label(3) == 'many'  (it gives 'two')"),
        "{told}"
    );
}

#[test]
fn the_best_candidate_is_corrected_against_the_checks_it_still_fails() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![
            label_first_write(),
            text("Done."),
            text("label follows RULES.md."),
        ],
        {
            let mut side = label_candidates();
            // Asked for an edit of the best (it fails only label(3)): a
            // search/replace block of its one wrong line.
            side.push(text(
                "<<<<<<< SEARCH\n    return 'one' if n == 1 else 'two'\n=======\n    return {1: 'one', 2: 'two'}.get(n, 'many')\n>>>>>>> REPLACE",
            ));
            side
        },
    );
    let ws = label_workspace();
    let out = ws.run(
        &server,
        "Implement label in lab.py; RULES.md has the rules.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("4 candidates tried, the 4th passed"), "{err}");
    assert!(
        ws.read("lab.py")
            .contains("return {1: 'one', 2: 'two'}.get(n, 'many')"),
        "{}",
        ws.read("lab.py")
    );
    let side = server.side_requests();
    let refine = side[3]["messages"][1]["content"].as_str().unwrap();
    assert!(
        refine.contains("return 'one' if n == 1 else 'two'")
            && refine.contains("This check from the request fails with it")
            && refine.contains("FAILED: assert label(3) == 'many'  (it gives 'two')")
            && refine.contains("<<<<<<< SEARCH"),
        "{refine}"
    );
}

/// A turn whose second change makes the request's checks worse: `label`
/// written failing 1 of 3, then "fixed" to fail 2. The server, the
/// workspace and mm's output.
fn a_turn_made_worse(off: &str) -> (Server, Workspace, std::process::Output) {
    a_turn_made_worse_by(off, "return 'many'")
}

/// `a_turn_made_worse`, the second change replacing label's return line
/// with `worse`.
fn a_turn_made_worse_by(off: &str, worse: &str) -> (Server, Workspace, std::process::Output) {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "lab.py", "content": "def label(n):\n    \"\"\"See RULES.md.\"\"\"\n    return 'one' if n == 1 else 'two'\n"}),
        ),
        text("Done."),
        // Told label(3) fails, the model makes it worse.
        call(
            "c2",
            "edit_file",
            json!({"path": "lab.py", "old_string": "return 'one' if n == 1 else 'two'", "replacement": worse}),
        ),
        text("Fixed label(3)."),
        text("label(3) works now; 1 and 2 do not."),
    ]);
    let ws = label_workspace();
    let out = ws.run(
        &server,
        "Implement label in lab.py; RULES.md has the rules.",
        &["-json", "-harness-off", off],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (server, ws, out)
}

#[test]
fn the_requests_checks_run_again_after_a_later_change_and_the_receipt_gives_the_end() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let (server, _ws, out) = a_turn_made_worse("candidates,best");
    let err = stderr(&out);
    assert!(
        err.contains("1 of 3 check(s) from the request's examples fail"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 5, "{err}");
    let told = last_user(&server.requests()[4]);
    assert!(
        told.contains("mm ran the request's checks again on the code as it is now: 2 of 3 fail. The last change made it worse: 2 fail now, 1 before it.")
            && told.contains("FAILED: assert label(1) == 'one'  (it gives 'many')"),
        "{told}"
    );
    // The receipt gives the checks as the turn left the code.
    assert!(err.contains("request checks: 2 of 3 failed"), "{err}");
    assert!(!err.contains("request checks: 1 of 3 failed"), "{err}");
}

/// The turn ends failing 2 of the request's checks; it had failed 1: that
/// version is back, and the receipt says so. Also when the worse version
/// added a definition, which putting back the better one drops (a
/// model's whole-file write would be refused for that; mm's own version
/// of the turn is put back all the same).
#[test]
fn a_turn_that_ends_worse_than_it_was_by_the_requests_checks_leaves_its_best_version() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    for worse in [
        "return 'many'",
        "return helper(n)\n\n\ndef helper(n):\n    return 'many'",
    ] {
        let (_server, ws, out) = a_turn_made_worse_by("candidates", worse);
        let err = stderr(&out);
        assert_eq!(
            ws.read("lab.py"),
            "def label(n):\n    \"\"\"See RULES.md.\"\"\"\n    return 'one' if n == 1 else 'two'\n",
            "{err}"
        );
        assert!(
            err.contains("mm put back lab.py as it was when 1 failed"),
            "{err}"
        );
        assert!(err.contains("request checks: 1 of 3 failed"), "{err}");
        assert!(!err.contains("request checks: 2 of 3 failed"), "{err}");
    }
}

#[test]
fn a_file_handed_back_unchanged_gets_the_missing_function_asked_for_alone() {
    let blog = "\"\"\"Blog.\"\"\"\n\n\ndef word_count(text):\n    return len(text.split())\n";
    let slug = "def slugify(title, max_length=60):\n    return '-'.join(title.lower().split())[:max_length]\n";
    let server = Server::with_side(
        vec![
            call("c1", "read_file", json!({"path": "blog.py"})),
            call("c2", "read_file", json!({"path": "blog.py"})),
            call("c3", "read_file", json!({"path": "blog.py"})),
            text("Added slugify."),
        ],
        vec![
            text(&format!("```python\n{blog}```")),
            text(&format!("```python\n{blog}```")),
            text(&format!("```python\n{slug}```")),
        ],
    );
    let ws = Workspace::new();
    ws.write("blog.py", blog);
    let out = ws.run(
        &server,
        "For post URLs I need slugify(title, max_length=60) in blog.py: lower case, words joined by hyphens.",
        &["-yolo", "-json", "-harness-off", "asserts"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let now = ws.read("blog.py");
    assert!(
        now.contains("def word_count(text):") && now.contains("def slugify(title, max_length=60):"),
        "{now}"
    );
    let side = server.side_requests();
    assert_eq!(side.len(), 3, "{}", stderr(&out));
    let alone = side[2]["messages"][1]["content"].as_str().unwrap();
    assert!(alone.contains("It does not have slugify yet."), "{alone}");
}

/// Writes that are not the same call but put a file back to what it was
/// (a write undoing an edit, again and again) are a loop too: told once,
/// then the turn ends with a report.
#[test]
fn writes_that_keep_putting_a_file_back_are_a_loop() {
    let write = |id: &str, v: u32| {
        call(
            id,
            "write_file",
            json!({"path": "f.py", "content": format!("x = {v}\n")}),
        )
    };
    let edit = |id: &str, a: u32, b: u32| {
        call(
            id,
            "edit_file",
            json!({"path": "f.py", "old_string": format!("x = {a}"), "replacement": format!("x = {b}")}),
        )
    };
    let server = Server::start(vec![
        write("c1", 1),
        edit("c2", 1, 2),
        edit("c3", 2, 1),
        write("c4", 2),
        write("c5", 1),
        edit("c6", 1, 2),
        edit("c7", 2, 1),
        write("c8", 2),
        text("I set x."),
        text("never asked"),
    ]);
    let ws = Workspace::new();
    ws.write("f.py", "x = 0\n");
    let out = ws.run(&server, "Set x in f.py.", &["-no-harness", "-json"]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "the model is repeating writes that put a file back to contents it already had"
        ),
        "{err}"
    );
    assert!(
        err.contains("stopped a loop: the model kept repeating writes that put a file back"),
        "{err}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 9, "the report closes the turn");
    let warned = last_user(&reqs[5]);
    assert!(warned.contains("keep putting the file back"), "{warned}");
}

/// A request beside the conversation (here a candidate fix) shows the
/// progress a turn's request does: the trial saw minutes of spinner and
/// no figures while candidates, `/commit` and `/compact` waited.
#[test]
fn a_candidates_request_shows_its_progress() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "def parse(s):\n    \"\"\"Seconds in a duration.\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    \"\"\"\n    raise NotImplementedError\n";
    let wrong = stub.replace(
        "    raise NotImplementedError\n",
        "    return int(s.rstrip('mh'))\n",
    );
    let Reply::Sse(mut slow) = text("no code here") else {
        unreachable!()
    };
    slow[0].0 = 3000;
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "dur.py", "content": wrong}),
            ),
            text("Done."),
            text("Done."),
            text("Done."),
        ],
        vec![Reply::Sse(slow), text("no"), text("no")],
    );
    server.serve_slots(50);
    let ws = Workspace::new();
    let out = ws.run(&server, "Implement parse in dur.py.", &["-json-stream"]);
    // The turn's own requests answer at once: a progress event comes
    // from the slow request beside them.
    let lines = stdout(&out);
    assert!(lines.contains("\"generating\""), "{lines}");
}

/// A stub task about to end with nothing written (the model only reads,
/// and the file asked for whole comes back unchanged): the request's
/// examples fail on the placeholder, and candidates for it are tried
/// against them, so the turn still delivers (the outside set's stubs
/// ended with nothing written).
#[test]
fn a_stub_left_unwritten_gets_candidates_judged_by_the_examples() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "def parse(s):\n    \"\"\"Seconds in a duration; see SPEC.md.\"\"\"\n    raise NotImplementedError\n";
    let spec = "# Durations\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    parse('1h')  -> 3600\n";
    let read = || call("r", "read_file", json!({"path": "SPEC.md"}));
    let mut script: Vec<Reply> = (0..12).map(|_| read()).collect();
    script.extend((0..4).map(|_| text("Done.")));
    let server = Server::with_side(
        script,
        vec![
            // The file asked for whole, twice: handed back as it was.
            text(&format!("```python\n{stub}```")),
            text(&format!("```python\n{stub}```")),
            text(
                "```python\ndef parse(s):\n    n, unit = (s[:-1], s[-1]) if s[-1] in 'mh' else (s, '')\n    return int(n) * {'': 1, 'm': 60, 'h': 3600}[unit]\n```",
            ),
            text("no"),
            text("no"),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement parse in dur.py as SPEC.md says.",
        &["-json"],
    );
    let err = stderr(&out);
    assert!(
        err.contains("3 of 3 check(s) from the request's examples fail"),
        "{err}"
    );
    assert!(err.contains("the 1st passed"), "{err}");
    let now = ws.read("dur.py");
    assert!(now.contains("'m': 60"), "{now}\n{err}");
}

/// A bug report whose command exits 0 (the symptom is in what it
/// prints): the command judges nothing, so checks written from the
/// request's words run on the code before the model's first look, and
/// candidates are tried against them (a dev trace: the model, told only
/// "it passed", went off to run git and wrote nothing).
#[test]
fn a_command_that_exits_0_on_the_bug_gets_checks_from_the_words_before_the_first_look() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![text("Done."), text("Done."), text("Done.")],
        vec![
            // The checks, written from the words alone.
            text("```python\nassert total([5, 10, 20]) == 35\n```"),
            // A candidate fix, tried in a scratch copy.
            text(
                "```python\ndef total(prices):\n    s = 0\n    for p in prices:\n        s += p\n    return s\n```",
            ),
            text("no"),
            text("no"),
        ],
    );
    let ws = Workspace::new();
    ws.write(
        "calc.py",
        "def total(prices):\n    s = 0\n    for p in prices[1:]:\n        s += p\n    return s\n",
    );
    ws.write(
        "report.py",
        "from calc import total\n\nprint(\"total:\", total([5, 10, 20]))\n",
    );
    let out = ws.run(
        &server,
        "`python3 report.py` prints the wrong total: for prices 5, 10 and 20 the total should be 35. Fix total in calc.py.",
        &["-json"],
    );
    let err = stderr(&out);
    assert!(
        err.contains("1 of 1 check(s) from the request fail"),
        "{err}"
    );
    assert!(err.contains("the 1st passed"), "{err}");
    let now = ws.read("calc.py");
    assert!(now.contains("for p in prices:"), "{now}\n{err}");
    // The model's first request already says what fails.
    let first = last_user(&server.requests()[0]);
    assert!(
        first.contains("FAILED: assert total([5, 10, 20]) == 35"),
        "{first}"
    );
}

/// A stub whose file the model broke (another language's code in it):
/// the candidates are asked for afresh and go into the file as it was,
/// not into the one that does not parse (a dev trace: a correct
/// JavaScript candidate failed every check, put beside the model's
/// Python `def`).
#[test]
fn a_stub_in_a_file_that_no_longer_parses_gets_candidates_on_the_file_as_it_was() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let original = "function shout(s) {\n  return s.toUpperCase() + '!';\n}\n\nfunction twice(n) {\n  // TODO: see README.md\n  throw new Error('TODO');\n}\n\nmodule.exports = { shout, twice };\n";
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "text.js", "content": "function shout(s) {\n  return s.toUpperCase() + '!';\n}\n\ndef twice(n):\n    return n * 2\n\nmodule.exports = { shout, twice };\n"}),
            ),
            text("Done."),
            text("twice doubles its number."),
            text("twice doubles its number."),
        ],
        vec![text(
            "```javascript\nfunction twice(n) {\n  return n * 2;\n}\n```",
        )],
    );
    let ws = Workspace::new();
    ws.write("text.js", original);
    ws.write(
        "README.md",
        "# text.js\n\n`twice(2)` gives `4`, `twice(5)` gives `10` and `twice(0)` gives `0`.\n",
    );
    let out = ws.run(
        &server,
        "twice in text.js is a stub. Write it as README.md says.",
        &["-json"],
    );
    let err = stderr(&out);
    let now = ws.read("text.js");
    assert!(
        now.contains("function twice(n) {\n  return n * 2;\n}") && !now.contains("def twice"),
        "{now}\n{err}"
    );
    assert!(now.contains("function shout(s)"), "{now}");
    assert!(err.contains("the 1st passed"), "{err}");
    // The candidate was asked for from the file as it was.
    let side = server.side_requests();
    let asked = side[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("text.js before the change") && asked.contains("throw new Error('TODO')"),
        "{asked}"
    );
}

/// A candidate reply cut at its limit (a small model rambling on about
/// the bug instead of writing code) is one try spent, not the end of
/// the candidates: the next one is asked for (a dev trace: the first
/// reply ran to 1,024 tokens of prose and no candidate was tried).
#[test]
fn a_candidate_reply_cut_at_its_limit_does_not_end_the_candidates() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let server = Server::with_side(
        vec![
            label_first_write(),
            text("Done."),
            text("label follows RULES.md."),
        ],
        vec![
            length_text("The bug is that label does not use the rules. The rules say"),
            text("```python\ndef label(n):\n    return {1: 'one', 2: 'two'}.get(n, 'many')\n```"),
        ],
    );
    let ws = label_workspace();
    let out = ws.run(
        &server,
        "Implement label in lab.py; RULES.md has the rules.",
        &["-json"],
    );
    let err = stderr(&out);
    assert!(err.contains("1 candidate tried, the 1st passed"), "{err}");
    assert!(
        ws.read("lab.py")
            .contains("return {1: 'one', 2: 'two'}.get(n, 'many')"),
        "{}",
        ws.read("lab.py")
    );
    assert_eq!(server.side_requests().len(), 2);
}

#[test]
fn a_checks_reply_with_no_usable_check_is_asked_for_again_hotter() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let stub = "def parse(s):\n    raise NotImplementedError\n";
    let spec = "# Durations\n\n    parse('90')  -> 90\n    parse('2m')  -> 120\n    parse('3m')  -> 180\n\nA negative number raises ValueError.\n";
    let done = "def parse(s):\n    if s.endswith('m'):\n        return int(s[:-1]) * 60\n    return int(s)\n";
    let server = Server::with_side(
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "dur.py", "content": done}),
            ),
            text("Implemented parse."),
            text("Implemented parse."),
        ],
        vec![
            // Values where refusals were asked for: nothing usable.
            text("```python\nassert parse('90') == 90\n```"),
            // Asked again: the refusal the words state.
            text("```python\nraises(ValueError, lambda: parse('-5'))\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("dur.py", stub);
    ws.write("SPEC.md", spec);
    let out = ws.run(
        &server,
        "Implement parse in dur.py as SPEC.md says.",
        &["-json", "-harness-off", "candidates"],
    );
    let err = stderr(&out);
    let side = server.side_requests();
    assert!(side.len() >= 2, "{err}");
    assert_eq!(side[0]["temperature"], 0.2, "{err}");
    assert_eq!(side[1]["temperature"], 0.8, "{err}");
    assert!(
        err.contains("1 of 4 check(s) from the request fail"),
        "{err}"
    );
}

#[test]
fn a_file_named_by_its_name_alone_is_the_one_in_its_folder() {
    // A newcomer trial: a plan said "the `discount.py` file in the `shop`
    // directory"; the write to shop/discount.py was refused and the model
    // sent to create a stray discount.py at the root.
    let before = "def percent_off(price, pct):\n    return price * (100 - pct) / 100\n";
    let after =
        format!("{before}\n\ndef fixed_off(price, amount):\n    return max(price - amount, 0)\n");
    let server = Server::start(vec![
        call("c0", "read_file", json!({"path": "shop/discount.py"})),
        call(
            "c1",
            "write_file",
            json!({"path": "shop/discount.py", "content": after}),
        ),
        text("Added fixed_off."),
    ]);
    let ws = Workspace::new();
    ws.write("shop/discount.py", before);
    let out = ws.run(
        &server,
        "Add a function fixed_off(price, amount) to the discount.py file in the shop directory; create it if needed.",
        &["-yolo", "-json", "-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(&server.requests()[2])[0].1;
    assert!(!said.starts_with("refused"), "{said}");
    assert_eq!(ws.read("shop/discount.py"), after);
    assert!(!ws.path().join("discount.py").exists());
}

/// A review of a file that is attached is answered from it: a reviewer
/// helper of a trial read its one file again and again until its rounds
/// ran out, and reported nothing.
#[test]
fn a_review_of_an_attached_file_is_answered_from_it() {
    let server = Server::start(vec![text("add() subtracts: line 2 should be a + b.")]);
    let ws = Workspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let out = ws.run(&server, "review calc.py", &["-no-net"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = last_user(&server.requests()[0]);
    assert!(
        first.ends_with("No tool call is needed: calc.py is above; answer from it."),
        "{first}"
    );
    assert!(server.requests()[0].get("tools").is_none());
    assert_eq!(ws.read("calc.py"), "def add(a, b):\n    return a - b\n");
}

/// Asked to add a method, a small model turned the existing `pop` into
/// the `peek` it was asked for (`old_string: "pop"`, every place): the
/// edit is refused once with what it would take out, the model's next
/// edit adds beside it, and the file keeps both.
#[test]
fn an_edit_that_takes_out_a_definition_the_request_did_not_name_is_refused() {
    const STACK: &str = "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def pop(self):\n        return self._items.pop()\n";
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "stack.py", "old_string": "pop", "replacement": "peek", "replace_all": true}),
        ),
        call(
            "c1b",
            "edit_file",
            json!({"path": "stack.py", "old_string": "pop", "replacement": "peek", "replace_all": true}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "stack.py", "old_string": "        return self._items.pop()\n", "replacement": "        return self._items.pop()\n\n    def peek(self):\n        return self._items[-1]\n"}),
        ),
        text("Added peek."),
        text("Added peek."),
    ]);
    let ws = Workspace::new();
    ws.write("stack.py", STACK);
    let out = ws.run(
        &server,
        "Add a method peek() to the Stack class in stack.py: it returns the top item without removing it.",
        &["-unfenced", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refusal = &tool_results(&server.requests()[1])[0].1;
    assert!(
        refusal.starts_with("refused: this edit would take pop out of stack.py"),
        "{refusal}"
    );
    let now = ws.read("stack.py");
    assert!(
        now.contains("def pop(self):") && now.contains("def peek(self):"),
        "{now}"
    );
}

/// Asked to take a definition out, the edit that does it runs; sent
/// again after a refusal, an unasked removal is still refused (a 1.5B
/// model resent it when the refusal said it could).
#[test]
fn a_request_to_take_a_definition_out_lets_the_edit_run() {
    let edit = json!({"path": "util.py", "old_string": "def old_helper():\n    return 1\n\n\n", "replacement": ""});
    let server = Server::start(vec![
        call("c1", "edit_file", edit),
        text("Done."),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "util.py",
        "def old_helper():\n    return 1\n\n\ndef main():\n    return 2\n",
    );
    let out = ws.run(
        &server,
        "The helper at the top of util.py is no longer needed, take it out.",
        &["-unfenced", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ws.read("util.py"), "def main():\n    return 2\n");
}

/// "How do I run the tests?" in a read-only session: the model reached
/// for the command itself, and the refusal tells it that the command is
/// the answer to give, not something to run.
#[test]
fn a_how_to_question_turns_a_refused_command_into_the_answer_to_give() {
    let server = Server::start(vec![
        call("c1", "bash", json!({"command": "./scripts/check.sh --all"})),
        text("Run ./scripts/check.sh --all."),
        text("Run ./scripts/check.sh --all."),
    ]);
    let ws = Workspace::new();
    ws.write("scripts/check.sh", "#!/bin/sh\necho ok\n");
    let out = ws.run(
        &server,
        "How do I run the project's tests?",
        &["-json", "-sandbox", "read-only"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refusal = &tool_results(&server.requests()[1])[0].1;
    assert!(refusal.starts_with("refused:"), "{refusal}");
    assert!(
        refusal.contains("The user asked how to do this"),
        "{refusal}"
    );
}

/// "Leave shop/prices.py alone": the model's write to it is refused, and
/// mm seeks no fix of its own there although its test still fails (a
/// trial's mm asked for candidate fixes of `discount` and put a prices.py
/// change to the user after they said so).
#[test]
fn a_file_the_user_said_to_leave_alone_gets_no_change_from_the_model_or_mm() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "shop/prices.py", "old_string": "return price - percent", "replacement": "return price * (100 - percent) / 100"}),
        ),
        call(
            "c2",
            "edit_file",
            json!({"path": "shop/cart.py", "old_string": "return sum(p for p, q in items)", "replacement": "return sum(p * q for p, q in items)"}),
        ),
        text("Fixed total()."),
        text("Fixed total()."),
        text("Fixed total()."),
    ]);
    let ws = Workspace::new();
    ws.write("shop/__init__.py", "");
    ws.write(
        "shop/cart.py",
        "def total(items):\n    return sum(p for p, q in items)\n",
    );
    ws.write(
        "shop/prices.py",
        "def discount(price, percent):\n    return price - percent\n",
    );
    ws.write(
        "test_shop.py",
        "import unittest\n\nfrom shop.cart import total\nfrom shop.prices import discount\n\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([(2, 3)]), 6)\n\n    def test_discount(self):\n        self.assertEqual(discount(200, 10), 180)\n",
    );
    let out = ws.run(
        &server,
        "Fix total() in shop/cart.py so test_total passes. Leave shop/prices.py alone.",
        &["-unfenced", "-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refusal = &tool_results(&server.requests()[1])[0].1;
    assert!(
        refusal.starts_with("refused: the user asked to leave shop/prices.py alone"),
        "{refusal}"
    );
    assert_eq!(
        ws.read("shop/prices.py"),
        "def discount(price, percent):\n    return price - percent\n"
    );
    assert!(ws.read("shop/cart.py").contains("p * q"));
    // No request of mm's own was about prices.py.
    for r in server.side_requests() {
        assert!(!r.to_string().contains("def discount"), "{r}");
    }
}

/// "Review shop/prices.py for bugs": checks are written from each
/// documented function's documentation alone (its code hidden) and run
/// against the code; the results go with the request, and an answer that
/// leaves out a function whose checks failed gets them under it. No fix
/// is pushed: the request asks for words.
#[test]
fn a_review_runs_checks_written_from_each_functions_documentation() {
    if !fence_works() {
        return skip("the review's checks run in the fence");
    }
    let server = Server::with_side(
        vec![text(
            "The file is already in the correct state. No changes are needed.",
        )],
        vec![
            text("```python\nassert discount(50, 10) == 45\nassert discount(100, 0) == 100\n```"),
            text("```python\nassert with_tax(10) == 12.0\n```"),
        ],
    );
    let ws = Workspace::new();
    ws.write("shop/__init__.py", "");
    ws.write(
        "shop/prices.py",
        "\"\"\"Price helpers.\"\"\"\n\n\ndef discount(price, percent):\n    \"\"\"Return price reduced by percent (0-100).\"\"\"\n    return price - percent\n\n\ndef with_tax(price, rate=0.2):\n    \"\"\"Return price with tax added.\"\"\"\n    return round(price * (1 + rate), 2)\n\n\ndef plain(x):\n    return x\n",
    );
    ws.write("tests/__init__.py", "");
    ws.write(
        "tests/test_prices.py",
        "import unittest\n\nfrom shop.prices import discount\n\n\nclass T(unittest.TestCase):\n    def test_discount(self):\n        self.assertEqual(discount(50, 10), 45)\n",
    );
    let out = ws.run(&server, "review shop/prices.py for bugs", &["-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "one answer, no fix pushed\n{}", stderr(&out));
    let side = server.side_requests();
    assert_eq!(side.len(), 2, "a request for checks a function");
    // The documentation, not the code.
    let q1 = last_user(&side[0]);
    assert!(
        q1.contains("Return price reduced by percent (0-100)."),
        "{q1}"
    );
    assert!(!q1.contains("price - percent"), "{q1}");
    assert!(!q1.contains("with_tax"), "{q1}");
    assert!(last_user(&side[1]).contains("def with_tax(price, rate=0.2):"));
    let first = last_user(&reqs[0]);
    assert!(
        first.contains("- discount (shop/prices.py:4): 1 of 2 check(s) fail: assert discount(50, 10) == 45  (it gives 40)"),
        "{first}"
    );
    assert!(
        first.contains("- with_tax (shop/prices.py:9): 1 check(s) pass"),
        "{first}"
    );
    assert!(
        !first.contains("plain ("),
        "undocumented: not checked\n{first}"
    );
    let answer = json_result(&out)["answer"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        answer.contains("mm: checks written from the documentation alone fail for:\n- discount (shop/prices.py:4): assert discount(50, 10) == 45  (it gives 40)"),
        "{answer}"
    );
    assert!(ws.read("shop/prices.py").contains("return price - percent"));
}

/// `-harness-off review`: the file is reviewed by the model alone.
#[test]
fn a_review_with_the_behaviour_off_asks_no_questions() {
    let server = Server::start(vec![text("discount subtracts the percent as an amount.")]);
    let ws = Workspace::new();
    ws.write(
        "prices.py",
        "def discount(price, percent):\n    \"\"\"Return price reduced by percent.\"\"\"\n    return price - percent\n",
    );
    let out = ws.run(
        &server,
        "review prices.py",
        &["-json", "-harness-off", "review"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
    assert!(server.side_requests().is_empty(), "no checks asked for");
}

/// A rename in one file while another file's test fails from before:
/// mm seeks no fix of its own in the file the turn did not change and
/// the request does not name, even without "change nothing else" (a
/// trial's helper, given the model's paraphrase of the request, brought a
/// candidate fix of `discount` in prices.py to the user).
#[test]
fn a_test_that_fails_elsewhere_brings_no_candidate_fixes_to_a_rename() {
    let server = Server::start(vec![
        call(
            "c1",
            "edit_file",
            json!({"path": "catalog.py", "old_string": "tmp", "replacement": "result", "replace_all": true}),
        ),
        text("Renamed tmp to result in catalog.py."),
        text("Renamed tmp to result in catalog.py."),
        text("Renamed tmp to result in catalog.py."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "catalog.py",
        "def price_of(p):\n    tmp = p * 2\n    return tmp\n",
    );
    ws.write(
        "prices.py",
        "def discount(price, percent):\n    \"\"\"Price reduced by percent.\"\"\"\n    return price - percent\n",
    );
    ws.write(
        "test_prices.py",
        "import unittest\n\nfrom prices import discount\n\n\nclass T(unittest.TestCase):\n    def test_discount(self):\n        self.assertEqual(discount(50, 10), 45)\n",
    );
    let out = ws.run(
        &server,
        "In catalog.py rename the variable tmp to result.",
        &["-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.read("catalog.py").contains("result = p * 2"));
    let fixes: Vec<String> = server
        .side_requests()
        .iter()
        .map(|r| {
            r["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .filter(|s| s.starts_with("You fix bugs") || s.starts_with("You write code"))
        .collect();
    assert!(fixes.is_empty(), "{fixes:?}\n{}", stderr(&out));
    assert!(ws.read("prices.py").contains("return price - percent"));
}

/// read_file's numbered view sent back as a file's content (a 1.5B model
/// did): the file gets the text, not the numbers; a table whose first
/// column counts is written as it is.
#[test]
fn a_write_of_the_numbered_view_writes_the_text() {
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "greet.js", "content": "     1\t'use strict';\n     2\t\n     3\tfunction greet(name) {\n     4\t  return `hi ${name}`;\n     5\t}\n     6\tmodule.exports = { greet };\n"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "ids.tsv", "content": "1\tann\n2\tbob\n"}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "greet.js",
        "'use strict';\n\nfunction greet(name) {\n  return 'hi';\n}\nmodule.exports = { greet };\n",
    );
    let out = ws.run(
        &server,
        "make greet in greet.js say the name, and write ids.tsv",
        &["-unfenced"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ws.read("greet.js"),
        "'use strict';\n\nfunction greet(name) {\n  return `hi ${name}`;\n}\nmodule.exports = { greet };\n"
    );
    assert_eq!(ws.read("ids.tsv"), "1\tann\n2\tbob\n");
    let result = &tool_results(&server.requests()[1])[0].1;
    assert!(result.contains("without the line numbers"), "{result}");
}

/// A part written into a file, then sent again: it is said to be there
/// already, not that the write "would delete" the rest.
#[test]
fn a_part_sent_again_after_it_landed_is_said_to_be_there() {
    let part =
        "def initials(name):\n    return ''.join(w[0].upper() + '.' for w in name.split())\n";
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "names.py", "content": part}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "names.py", "content": part}),
        ),
        text("Done."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "names.py",
        "def full_name(first, last):\n    return f'{first} {last}'\n\n\ndef initials(name):\n    raise NotImplementedError\n",
    );
    let out = ws.run(&server, "implement initials in names.py", &["-unfenced"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.read("names.py").contains("def full_name"));
    assert!(ws.read("names.py").contains("w[0].upper()"));
    let results = tool_results(&server.requests()[2]);
    let result = &results.last().unwrap().1;
    assert!(
        result.contains("already has initials exactly as in your content"),
        "{result}"
    );
}

/// A file asked for whole comes back with the named function fixed and
/// another one changed too: only the named one's change is written.
#[test]
fn a_file_asked_for_whole_keeps_only_the_change_the_request_names() {
    let stats = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef count(xs, limit):\n    return len([x for x in xs if x > limit])\n";
    let reply = "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n\n\ndef count(xs, limit):\n    return len([x for x in xs if x >= limit])\n";
    let server = Server::with_side(
        vec![
            text("I changed mean so it works now."),
            text("mean is fixed."),
            text("mean now returns 0.0 for an empty list."),
        ],
        vec![text(&format!("```python\n{reply}```"))],
    );
    let ws = Workspace::new();
    ws.write("stats.py", stats);
    let out = ws.run(
        &server,
        "mean in stats.py raises ZeroDivisionError for an empty list. Fix mean.",
        &["-unfenced"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        ws.read("stats.py"),
        "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n\n\ndef count(xs, limit):\n    return len([x for x in xs if x > limit])\n",
        "{err}"
    );
    assert!(
        err.contains("left out the reply's changes to count in stats.py"),
        "{err}"
    );
}

/// Asked for tests of code as it is, the model stops with its own test
/// failing and blames the code: it is told to make the test expect what
/// the code gives.
#[test]
fn tests_asked_for_that_fail_are_sent_back_to_expect_what_the_code_gives() {
    if !fence_works() {
        skip("no working fence here");
        return;
    }
    let wrong = "import unittest\nfrom slug import slugify\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(slugify('Python 3.8'), 'python-38')\n";
    let right = wrong.replace("'python-38'", "'python-3-8'");
    let server = Server::start(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "test_slug.py", "content": wrong}),
        ),
        call("c2", "bash", json!({"command": "python3 -m unittest -q"})),
        text("slugify has a bug: it gives python-3-8. Fix it in slug.py."),
        call(
            "c3",
            "write_file",
            json!({"path": "test_slug.py", "content": right}),
        ),
        call("c4", "bash", json!({"command": "python3 -m unittest -q"})),
        text("I wrote test_slug.py; its test passes."),
    ]);
    let ws = Workspace::new();
    ws.write(
        "slug.py",
        "import re\n\n\ndef slugify(title):\n    return '-'.join(w.lower() for w in re.findall(r'[A-Za-z0-9]+', title))\n",
    );
    let out = ws.run(
        &server,
        "Write unit tests for slugify in slug.py, in a new file test_slug.py, using unittest. Then run them.",
        &["-auto"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let told = last_user(&server.requests()[3]);
    assert!(told.starts_with("The tests you wrote fail"), "{told}");
    assert!(told.contains("expects what the code gives"), "{told}");
    assert_eq!(ws.read("test_slug.py"), right);
    assert_eq!(stdout(&out), "I wrote test_slug.py; its test passes.\n");
}
