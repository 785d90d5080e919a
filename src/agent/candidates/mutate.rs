//! The last try when no candidate passed: small changes of the best one,
//! made and judged by execution in memory (`tools::probe::mutation_command`)
//! against the request's own checks, and the one that passes them tried
//! against every check in a fresh scratch copy.

use super::*;
use crate::agent::examples::{self, Lang};
use crate::tools::probe;

/// How long the search may take in its scratch copy (it stops itself
/// after 20 s of trying).
const SEARCH_TIME: Duration = Duration::from_secs(40);
/// How long the winner's run of every check may take.
const CHECK_TIME: Duration = Duration::from_secs(60);

impl Agent {
    /// When no candidate passed the request's checks and the best fails
    /// some of them: the best's functions changed a little at a time until
    /// every request check passes, then tried against every check. The
    /// winner is set in `tries`; returns the changes made.
    pub(super) async fn mutate_best(
        &mut self,
        st: &TurnState,
        plan: &Plan,
        tries: &mut Tries,
        cancel: &CancellationToken,
    ) -> Option<Vec<String>> {
        if tries.winner.is_some() || !self.on(Behaviour::Mutate) || cancel.is_cancelled() {
            return None;
        }
        let (k, base, base_changed, _) = tries.best.clone()?;
        let t = &plan.t;
        if k == 0 {
            return None;
        }
        let (lang, script) = st.request_checks.as_deref().and_then(examples::script_of)?;
        if Lang::of(&t.file) != Some(lang) {
            return None;
        }
        let cmd = probe::mutation_command(&t.file, &t.names, script)?;
        let mut sc = scratch::copy(&self.tools)?;
        if !sc.write(&t.file, &base) {
            return None;
        }
        let f = sc.run(&self.tools, &cmd, SEARCH_TIME, cancel).await?;
        let Some((after, how)) = probe::mutation_found(&f.output) else {
            let tried = f
                .output
                .lines()
                .find_map(|l| l.strip_prefix("MM-MUTATE-NONE tried "))
                .unwrap_or("no");
            self.notice(
                Level::Info,
                format!(
                    "{tried} small changes of the best candidate for {} tried against the request's checks; none passes them all",
                    t.names.join(", ")
                ),
            );
            return None;
        };
        if tries.tried.contains(&after) || after == plan.before {
            return None;
        }
        tries.tried.push(after.clone());
        let mut sc = scratch::copy(&self.tools)?;
        if !sc.write(&t.file, &after) {
            return None;
        }
        let (failed, _) = self
            .failures_in_scratch(
                &sc,
                &plan.checks,
                st.request_checks.as_deref(),
                CHECK_TIME,
                cancel,
            )
            .await?;
        if failed != 0 {
            self.notice(
                Level::Info,
                format!(
                    "small changes of {} pass the request's checks but not every other check; not used",
                    t.names.join(", ")
                ),
            );
            return None;
        }
        let changed = changed_since(&t.names, &base, &after, base_changed);
        tries.winner = Some((after, changed));
        Some(how)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::examples::{Example, Expect};

    fn check(call: &str, want: &str) -> Example {
        Example {
            call: call.to_string(),
            expect: Expect::Value(want.to_string()),
        }
    }

    fn sh(dir: &std::path::Path, cmd: &str) -> (Option<i32>, String) {
        let out = std::process::Command::new("sh")
            .args(["-c", cmd])
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn the_search_finds_the_changes_the_checks_ask_for_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let wrong = "def initials(name):\n    \"\"\"Initials.\"\"\"\n    parts = name.split(\" \")\n    return \".\".join(p[0].upper() for p in parts)\n";
        std::fs::write(dir.path().join("names.py"), wrong).unwrap();
        let checks = [
            check("initials('Ada Lovelace')", "'A.L.'"),
            check("initials('  Alan  Turing ')", "'A.T.'"),
            check("initials('Plato')", "'P.'"),
            check("initials('')", "''"),
        ];
        let names = vec!["initials".to_string()];
        let script = examples::python_script(&["names".to_string()], &names, &checks);
        let cmd = examples::command(Lang::Python, &script);
        assert_eq!(sh(dir.path(), &cmd).0, Some(1), "the code fails first");
        let (lang, script) = examples::script_of(&cmd).unwrap();
        assert_eq!(lang, Lang::Python);
        let search = probe::mutation_command("names.py", &names, script).unwrap();
        let (_, out) = sh(dir.path(), &search);
        let (after, how) = probe::mutation_found(&out).expect(&out);
        // Three changes in a row, each failing fewer checks; the quotes
        // and the docstring as they were.
        assert_eq!(how.len(), 3, "{how:?}");
        assert!(after.contains("name.split()"), "{after}");
        assert!(after.contains("\"\"\"Initials.\"\"\""), "{after}");
        assert!(after.contains("\"\".join(p[0].upper() + \".\""), "{after}");
        // The search changed nothing on disk; the found text passes.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("names.py")).unwrap(),
            wrong
        );
        std::fs::write(dir.path().join("names.py"), &after).unwrap();
        assert_eq!(sh(dir.path(), &cmd).0, Some(0));
    }

    #[test]
    fn javascript_strings_and_conditions_change_by_what_the_checks_give() {
        let dir = tempfile::tempdir().unwrap();
        let wrong = concat!(
            "'use strict';\n",
            "function plural(word, count) {\n",
            "  if (count === 0) {\n",
            "    return count + ' ' + word;\n",
            "  } else if (count === 1) {\n",
            "    return count + ' ' + word;\n",
            "  } else if (word.endsWith('x')) {\n",
            "    return count + ' ' + word + 's';\n",
            "  }\n",
            "  return count + ' ' + word + 's';\n",
            "}\n",
            "module.exports = { plural };\n",
        );
        std::fs::write(dir.path().join("words.js"), wrong).unwrap();
        let checks = [
            check("plural('file', 1)", "'1 file'"),
            check("plural('file', 0)", "'0 files'"),
            check("plural('box', 2)", "'2 boxes'"),
            check("plural('day', 3)", "'3 days'"),
        ];
        let names = vec!["plural".to_string()];
        let script = examples::js_script("words.js", &names, &checks);
        let cmd = examples::command(Lang::JavaScript, &script);
        assert_eq!(sh(dir.path(), &cmd).0, Some(1), "the code fails first");
        let (lang, script) = examples::script_of(&cmd).unwrap();
        assert_eq!(lang, Lang::JavaScript);
        let (_, out) = sh(
            dir.path(),
            &probe::mutation_command("words.js", &names, script).unwrap(),
        );
        let (after, how) = probe::mutation_found(&out).expect(&out);
        assert_eq!(how.len(), 2, "{how:?}");
        // `e` is where `2 boxs` and `2 boxes` part.
        assert!(after.contains("word + 'es'"), "{after}");
        assert!(!after.contains("count === 0"), "{after}");
        std::fs::write(dir.path().join("words.js"), &after).unwrap();
        assert_eq!(sh(dir.path(), &cmd).0, Some(0));
    }

    #[test]
    fn a_placeholder_is_not_made_to_pass_and_a_hang_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["total".to_string(), "spin".to_string()];
        std::fs::write(
            dir.path().join("calc.py"),
            "def total(xs):\n    raise NotImplementedError\n\ndef spin(n):\n    while n > 0:\n        n += 1\n    return n\n",
        )
        .unwrap();
        let checks = [
            check("total([1, 2, 3])", "6"),
            check("total([])", "0"),
            check("spin(-1)", "-1"),
        ];
        let script = examples::python_script(&["calc".to_string()], &names, &checks);
        let search = probe::mutation_command("calc.py", &names, &script).unwrap();
        let started = std::time::Instant::now();
        let (_, out) = sh(dir.path(), &search);
        assert_eq!(probe::mutation_found(&out), None, "{out}");
        assert!(out.contains("MM-MUTATE-NONE tried"), "{out}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
