//! Checks from the user's words. When a request states behaviour (rules,
//! examples, edge cases) and no test covers it, the model's change is
//! held to the request itself: a separate, tool-less request that sees
//! the request and nothing of the code writes a few one-line checks;
//! those whose expected value the request itself states are kept; mm runs
//! them in the fence against the changed code (a script given on stdin,
//! never a file in the workspace) and sends the failures back once.
//! They are also the check candidate changes are tried against.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;

pub const SYSTEM: &str = "You write test checks from a request. Reply with one fenced code block of Python lines and nothing else.";

/// Tokens the checks' reply may take: about a dozen lines.
const CHECKS_CAP: u64 = 400;
/// At most this many checks are kept.
const MAX_CHECKS: usize = 8;

/// The request for checks: the user's request, the functions to call and
/// where from, and the two line shapes.
pub fn request(prompt: &str, calls: &[(String, String)]) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|(name, module)| format!("{name} (from {module})"))
        .collect();
    format!(
        "A developer asked for this:\n\"\"\"\n{}\n\"\"\"\nWrite 4 to 6 checks of the behaviour this request states: its examples, its rules and its edge cases, and nothing it does not state. Call {} by name. One check per line, each in one of these two shapes:\n  assert CALL == EXPECTED\n  raises(ExceptionName, lambda: CALL)\nReply with only those lines in one ```python block.",
        prompt.trim(),
        names.join(", ")
    )
}

static CHECK_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    harness::regex(
        r"^(?:assert\s+(.+?)\s*==\s*(.+?)|raises\(\s*([A-Za-z_]\w*)\s*,\s*lambda\s*:\s*(.+)\))\s*$",
    )
    .ok()
});

/// Literals in `text`: numbers and quoted strings.
fn literals(text: &str) -> Vec<String> {
    static LIT: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r#"-?\d+(?:\.\d+)?|"[^"]*"|'[^']*'"#).ok());
    LIT.as_ref()
        .map(|re| re.find_iter(text).map(|m| m.as_str().to_string()).collect())
        .unwrap_or_default()
}

/// Whether the request states `expected`: every literal in it appears
/// in the request (numbers as numbers: `12.50` is `12.5`), or it is a
/// plain truth value or empty value.
fn stated(prompt: &str, expected: &str) -> bool {
    let e = expected.trim();
    if matches!(
        e,
        "True" | "False" | "None" | "[]" | "{}" | "''" | "\"\"" | "0"
    ) {
        return true;
    }
    let lits = literals(e);
    if lits.is_empty() {
        return false;
    }
    let said = literals(prompt);
    let num = |s: &str| s.parse::<f64>().ok();
    lits.iter().all(|l| {
        let bare = l.trim_matches(['"', '\'']);
        match num(l) {
            Some(v) => said.iter().any(|p| num(p) == Some(v)) || prompt.contains(l.as_str()),
            None => prompt.contains(bare),
        }
    })
}

/// The checks from a reply that the request backs: one per line, of the
/// two shapes, calling one of `names`, its expected value (or the
/// exception) stated in the request.
pub fn grounded_checks(prompt: &str, reply: &str, names: &[String]) -> Vec<String> {
    let Some(re) = CHECK_LINE.as_ref() else {
        return Vec::new();
    };
    // No closed block: a reply cut at its cap, whose last line may be cut.
    let block = super::recover::fenced_blocks(reply)
        .first()
        .map(|(_, _, b)| b.to_string())
        .unwrap_or_else(|| match reply.rfind('\n') {
            Some(end) if !reply.ends_with('\n') => reply[..end].to_string(),
            _ => reply.to_string(),
        });
    let mut out: Vec<String> = Vec::new();
    for line in block.lines().map(str::trim) {
        let Some(c) = re.captures(line) else {
            continue;
        };
        let (call, backed) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
            (Some(call), Some(expected), _, _) => {
                (call.as_str(), stated(prompt, expected.as_str()))
            }
            (_, _, Some(exc), Some(call)) => (call.as_str(), prompt.contains(exc.as_str())),
            _ => continue,
        };
        let calls_one = names.iter().any(|n| call.contains(&format!("{n}(")));
        if backed && calls_one && !out.iter().any(|o| o == line) {
            out.push(line.to_string());
        }
    }
    out.truncate(MAX_CHECKS);
    out
}

/// The script that runs `checks` after `from MODULE import *` for each
/// module, each check on its own, and prints one line a failure.
pub fn script(modules: &[String], checks: &[String]) -> String {
    let mut s =
        String::from("import sys, ast\nsys.path.insert(0, '.')\nsys.dont_write_bytecode = True\n");
    // A module that no longer imports fails every check: say so, as a
    // failure (a traceback with no FAILED line read as "all pass").
    for m in modules {
        s.push_str(&format!(
            "try:\n    exec('from {m} import *')\nexcept BaseException as e:\n    print(f'FAILED: import {m}  (it raises {{type(e).__name__}}: {{e}})')\n    sys.exit(1)\n"
        ));
    }
    s.push_str(
        "def raises(exc, fn):\n    try:\n        fn()\n    except exc:\n        return True\n    except Exception as e:\n        raise AssertionError(f'raised {type(e).__name__}: {e}, not {exc.__name__}')\n    raise AssertionError(f'raised nothing, not {exc.__name__}')\n",
    );
    s.push_str("failed = 0\nfor src in [\n");
    for c in checks {
        s.push_str(&format!("    {c:?},\n"));
    }
    s.push_str(
        "]:\n    try:\n        node = ast.parse(src).body[0]\n        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):\n            got = eval(compile(ast.Expression(node.test.left), '<check>', 'eval'))\n            want = eval(compile(ast.Expression(node.test.comparators[0]), '<check>', 'eval'))\n            if got != want:\n                failed += 1\n                print(f'FAILED: {src}  (it gives {got!r})')\n        else:\n            exec(src)\n    except AssertionError as e:\n        failed += 1\n        print(f'FAILED: {src}  ({e})')\n    except Exception as e:\n        failed += 1\n        print(f'FAILED: {src}  (it raises {type(e).__name__}: {e})')\nsys.exit(1 if failed else 0)\n",
    );
    s
}

/// The shell command that runs the script (a here-document: nothing is
/// written to the workspace).
pub fn command(script: &str) -> String {
    format!("python3 - <<'MM_REQUEST_CHECKS'\n{script}\nMM_REQUEST_CHECKS")
}

impl Agent {
    /// The functions the request names as calls (`shipping_cost(…)`) and
    /// the Python module of the workspace that defines each now.
    fn asked_calls(&self, st: &TurnState) -> Vec<(String, String)> {
        static CALL: LazyLock<Option<Regex>> =
            LazyLock::new(|| harness::regex(r"\b([A-Za-z_]\w*)\s*\(").ok());
        let Some(re) = CALL.as_ref() else {
            return Vec::new();
        };
        let files: Vec<String> = st
            .written
            .iter()
            .chain(harness::named_files(&st.prompt).iter())
            .filter(|f| f.ends_with(".py") && !harness::is_test_file(f) && !f.contains('/'))
            .cloned()
            .collect();
        let mut out: Vec<(String, String)> = Vec::new();
        for c in re.captures_iter(&st.prompt) {
            let Some(name) = c.get(1).map(|m| m.as_str().to_string()) else {
                continue;
            };
            if out.iter().any(|(n, _)| *n == name) {
                continue;
            }
            if let Some(file) = files.iter().find(|f| {
                self.content_now(f)
                    .is_some_and(|t| guard::definitions(&t).contains(&name))
            }) {
                let module = file.trim_end_matches(".py").to_string();
                out.push((name, module));
            }
        }
        out
    }

    /// Checks from the request for a change with no test to run: asked
    /// for once a turn, kept when the request backs them, and run; the
    /// failures as a follow-up (once), or None.
    pub(super) async fn request_checks(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.on(Behaviour::Asserts)
            || st.asserts_tried
            || st.question
            || st.written.is_empty()
            || st.verify.is_some()
            || st.repro.is_some()
            || !self.tools.sandbox.fence().is_on()
        {
            return None;
        }
        st.asserts_tried = true;
        let calls = self.asked_calls(st);
        if calls.is_empty() {
            return None;
        }
        // A small model lists checks on and on: its first lines are the
        // request's own, and a reply cut at the cap still gives them.
        let Some(reply) = self
            .side_request_cut(
                SYSTEM,
                &request(&st.prompt, &calls),
                0.2,
                CHECKS_CAP,
                true,
                cancel,
            )
            .await
        else {
            self.notice(
                Level::Info,
                "no checks came back from the request; none run",
            );
            return None;
        };
        let names: Vec<String> = calls.iter().map(|(n, _)| n.clone()).collect();
        let checks = grounded_checks(&st.prompt, &reply, &names);
        if checks.is_empty() {
            self.notice(
                Level::Info,
                "no check written from the request states a value the request gives; none run",
            );
            return None;
        }
        let mut modules: Vec<String> = calls.iter().map(|(_, m)| m.clone()).collect();
        modules.dedup();
        let cmd = command(&script(&modules, &checks));
        st.request_checks = Some(cmd.clone());
        let out = self.run_request_checks(&cmd, cancel).await?;
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAILED: ")).collect();
        if failed.is_empty() {
            self.notice(
                Level::Info,
                format!("{} check(s) written from the request pass", checks.len()),
            );
            st.candidate_notes
                .push(format!("request checks: {} passed", checks.len()));
            return None;
        }
        self.notice(
            Level::Warning,
            format!(
                "{} of {} check(s) written from the request fail; telling the model",
                failed.len(),
                checks.len()
            ),
        );
        st.candidate_notes.push(format!(
            "request checks: {} of {} failed",
            failed.len(),
            checks.len()
        ));
        let failure = failed.join("\n");
        st.last_failure = Some(failure.clone());
        // Candidates against these checks first, when the turn may.
        let mut made = String::new();
        if self.on(Behaviour::Candidates) && !st.tried_candidates {
            st.tried_candidates = true;
            if let Some(text) = self
                .fix_by_candidates(st, "the request's checks", &failure, cancel)
                .await
            {
                made = text;
            }
        }
        Some(format!(
            "mm checked the change against the request's own words (checks written from the request alone, not from your code):\n{failure}{made}\nIf the request says otherwise and a check is wrong, say which and why. Otherwise fix the code with edit_file.\n{}",
            harness::restate(&st.prompt)
        ))
    }

    /// Runs the request's checks in the fence, read-only, without
    /// network; their output (None: they could not run).
    async fn run_request_checks(&self, cmd: &str, cancel: &CancellationToken) -> Option<String> {
        let plan = crate::sandbox::RunPlan {
            access: Some(crate::sandbox::Access::ReadOnly),
            net: false,
            git_guard: false,
        };
        let root = self.tools.sandbox.root().to_path_buf();
        let run = self.tools.sandbox.command("sh", &["-c", cmd], &root, plan);
        let f = crate::tools::bash::run(run, std::time::Duration::from_secs(30), cancel)
            .await
            .ok()?;
        (!f.timed_out && !f.cancelled).then_some(f.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str = "Add shipping_cost(weight_kg, zone) to shipping.py: zone 'eu' costs 5.0 plus 1.5 per kg over 2; an unknown zone raises ValueError; round to 2 decimals. Example: shipping_cost(4, 'eu') is 8.0.";

    #[test]
    fn only_checks_whose_value_the_request_states_are_kept() {
        let reply = "```python\nassert shipping_cost(4, 'eu') == 8.0\nassert shipping_cost(3, 'eu') == 6.5\nraises(ValueError, lambda: shipping_cost(1, 'mars'))\nraises(KeyError, lambda: shipping_cost(1, 'mars'))\nassert other(1) == 8.0\nprint('hi')\n```";
        let got = grounded_checks(PROMPT, reply, &["shipping_cost".to_string()]);
        assert_eq!(
            got,
            vec![
                "assert shipping_cost(4, 'eu') == 8.0",
                "raises(ValueError, lambda: shipping_cost(1, 'mars'))",
            ]
        );
        assert!(stated("costs 12.50 each", "12.5"));
        assert!(!stated("costs 12.50 each", "13"));
    }

    /// Runs the checks' script in `dir`: whether it passed, and its output.
    fn run_checks_in(dir: &std::path::Path, module: &str, checks: &[String]) -> (bool, String) {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command(&script(&[module.to_string()], checks)))
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn a_reply_cut_at_its_cap_still_gives_its_complete_checks() {
        let cut = "```python\nassert shipping_cost(4, 'eu') == 8.0\nassert shipping_cost(3, 'eu') == 6.5\nassert shipping_cost(4, 'eu') == 8";
        assert_eq!(
            grounded_checks(PROMPT, cut, &["shipping_cost".to_string()]),
            vec!["assert shipping_cost(4, 'eu') == 8.0"]
        );
    }

    #[test]
    fn the_script_runs_each_check_and_names_what_it_gave() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("shipping.py"),
            "def shipping_cost(w, zone):\n    if zone != 'eu':\n        raise KeyError(zone)\n    return 5.0 + 1.5 * max(0, w - 2)\n",
        )
        .unwrap();
        let checks = vec![
            "assert shipping_cost(4, 'eu') == 8.0".to_string(),
            "assert shipping_cost(3, 'eu') == 7.0".to_string(),
            "raises(ValueError, lambda: shipping_cost(1, 'mars'))".to_string(),
        ];
        let (ok, text) = run_checks_in(dir.path(), "shipping", &checks);
        assert!(!ok);
        assert!(
            text.contains("FAILED: assert shipping_cost(3, 'eu') == 7.0  (it gives 6.5)"),
            "{text}"
        );
        assert!(text.contains("raised KeyError"), "{text}");
        assert!(!text.contains("== 8.0"), "{text}");
        assert!(!dir.path().join("__pycache__").exists());
    }

    #[test]
    fn a_module_that_no_longer_imports_fails_the_checks() {
        let dir = tempfile::tempdir().unwrap();
        // Valid syntax, but the annotation runs at import and raises.
        std::fs::write(
            dir.path().join("words.py"),
            "def rev(s) -> ' '.join(s.split())(s):\n    return s\n",
        )
        .unwrap();
        let checks = vec!["assert rev('a b') == 'b a'".to_string()];
        let (ok, text) = run_checks_in(dir.path(), "words", &checks);
        assert!(!ok);
        assert!(
            text.contains("FAILED: import words  (it raises NameError"),
            "{text}"
        );
    }
}
