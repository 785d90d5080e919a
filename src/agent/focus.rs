//! A focused request: when a check fails and its failure names functions
//! of the workspace's own code, mm asks the model, in a request of its
//! own with no tools and nothing else in it, for the function with the
//! bug corrected. A small model that is lost in a long conversation with
//! tools writes a correct function when it is shown only that function
//! and the failure. mm puts the function it gets in place of its
//! namesake, runs the checks, and keeps the change only when they pass.
//!
//! A change the request asks for across two or three short files is
//! asked for the same way, one file at a time: each file as it is, the
//! request, and "write this file with its part of the request done".
//! What comes back is kept when it loses no definition, renames nothing
//! the request did not ask to rename, and holds the code the request
//! spells out for that file.

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnState, harness, recover};
use crate::llm::{self, ChatRequest, Message};
use crate::protocol::Level;
use crate::tools::guard;

mod targets;
pub use targets::*;

mod edits;
pub use edits::*;

mod requests;
pub use requests::*;

impl Agent {
    /// A request of mm's own, apart from the conversation and with no
    /// tools: its reply's text. Counted in the turn's usage.
    pub(super) async fn side_request(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.side_request_capped(system, user, temperature, 1024, cancel)
            .await
    }

    /// `side_request` for one try of several: Some(None) when the reply
    /// was cut at its cap (a small model that rambles on; the next try
    /// may not), None when no reply came (an error, a cancel).
    pub(super) async fn side_try(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cancel: &CancellationToken,
    ) -> Option<Option<String>> {
        let (content, truncated) = self
            .side_reply(system, user, temperature, 1024, cancel)
            .await?;
        Some((!truncated).then_some(content))
    }

    /// `side_request` with a reply of up to `cap` tokens (a whole file).
    pub(super) async fn side_request_capped(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.side_request_cut(system, user, temperature, cap, false, cancel)
            .await
    }

    /// `side_request_capped`; `partial`: a reply cut at `cap` is still
    /// returned (a list of lines whose complete ones are usable).
    pub(super) async fn side_request_cut(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        partial: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let (content, truncated) = self
            .side_reply(system, user, temperature, cap, cancel)
            .await?;
        (partial || !truncated).then_some(content)
    }

    /// A side request's reply and whether it was cut at `cap`.
    async fn side_reply(
        &mut self,
        system: &str,
        user: &str,
        temperature: f64,
        cap: u64,
        cancel: &CancellationToken,
    ) -> Option<(String, bool)> {
        let messages = [Message::system(system), Message::user(user)];
        let mut sampling = self.settings.sampling.clone();
        sampling.insert("temperature".into(), serde_json::json!(temperature));
        let body = llm::build_body(&ChatRequest {
            model: &self.model,
            messages: &messages,
            tools: &[],
            sampling: &sampling,
            max_tokens: Some(self.settings.max_tokens.unwrap_or(cap).min(cap)),
            replay_reasoning: false,
            response_format: None,
        });
        let started = std::time::Instant::now();
        let result = self.stream_watched(&body, cancel).await;
        self.trace(&body, &result, started.elapsed().as_millis() as u64);
        let streamed = result.ok()?;
        self.log_side_request(&streamed, started);
        self.record_usage(&streamed, None);
        let truncated = streamed.reply.truncated();
        Some((streamed.reply.content, truncated))
    }

    /// A change across two or three short files (see `change_files`):
    /// each file asked for alone, kept as the module doc says, and made
    /// as mm's own write. Returns what to tell the model, or None when
    /// nothing was changed.
    pub(super) async fn focused_change(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if st.question || st.settled || harness::asks_for_tests(&st.prompt) || st.mutations > 0 {
            return None;
        }
        let mut files = change_files(&st.prompt, &self.sources_now());
        files.retain(|(f, _)| st.off_limits(f).is_none());
        if files.is_empty() {
            return None;
        }
        let mut diffs = Vec::new();
        let mut all = true;
        let mut written: Vec<String> = Vec::new();
        let mut callers_added = 0;
        // Each named file, then the files that call a definition whose
        // parameters changed, each with the changed file beside it.
        let mut queue: std::collections::VecDeque<Part> = (files.into_iter())
            .map(|(file, before)| Part {
                file,
                before,
                context: Vec::new(),
                caller: None,
            })
            .collect();
        while let Some(Part {
            file,
            before,
            context,
            caller,
        }) = queue.pop_front()
        {
            let ask = if context.is_empty() {
                change_request(&st.prompt, &file, &before)
            } else {
                whole_request(&st.prompt, &file, Some(&before), &context)
            };
            let mut made = None;
            for temperature in [0.2, 0.7] {
                let Some(reply) = self
                    .side_request(CHANGE_SYSTEM, &ask, temperature, cancel)
                    .await
                else {
                    break;
                };
                let kept =
                    change_of(&st.prompt, &file, &before, &reply, &st.spelled).map(|after| {
                        match &caller {
                            Some(names) => only_the_calls(&before, &after, names),
                            None => after,
                        }
                    });
                match kept {
                    Ok(after) if after == before => break,
                    Ok(after) => {
                        made = Some(after);
                        break;
                    }
                    Err("no change") => break,
                    Err(_) => {}
                }
            }
            let Some(after) = made else {
                // A caller left as it was is not a failed part of the
                // request: the checks say whether it still works.
                all &= caller.is_some();
                continue;
            };
            let label = format!("change {file} (asked alone)");
            if !self
                .own_write(st, &file, after.clone(), &label, cancel)
                .await
            {
                all = false;
                continue;
            }
            // What landed: the user may have kept only some hunks.
            let after = self.content_now(&file).unwrap_or(after);
            diffs.push(crate::diff::unified(&file, &before, &after, 1, 40));
            diffs.extend(st.rejected_note(&file));
            written.push(file.clone());
            if !self.on(crate::config::Behaviour::Callers) {
                continue;
            }
            // A named file still to come that calls what changed sees it.
            let changed = guard::signature_changes(&before, &after);
            for part in &mut queue {
                if changed.iter().any(|n| calls_in(&part.before, n)) {
                    part.context.push((file.clone(), after.clone()));
                }
            }
            let pending: Vec<String> = queue.iter().map(|p| p.file.clone()).collect();
            for (caller, text) in self.callers_of(&before, &after, &file, &written, &pending) {
                if callers_added == MAX_CALLERS {
                    break;
                }
                if st.off_limits(&caller).is_some() {
                    continue;
                }
                callers_added += 1;
                self.notice(
                    Level::Info,
                    format!("{caller} calls what changed in {file}: asking for it too"),
                );
                queue.push_back(Part {
                    file: caller,
                    before: text,
                    context: vec![(file.clone(), after.clone())],
                    caller: Some(changed.clone()),
                });
            }
        }
        if diffs.is_empty() {
            return None;
        }
        self.notice(
            Level::Info,
            format!(
                "asked for each file's part of the request alone; changed {} of them",
                diffs.len()
            ),
        );
        let checks = match self.run_checks(st, cancel).await {
            None => st
                .tests
                .as_ref()
                .map(|t| format!(" `{}` passes ({}).", t.command, t.summary))
                .unwrap_or_default(),
            Some((command, out)) => {
                all = false;
                let lines = self.failure_lines(&out.text);
                st.last_failure = Some(lines.clone());
                format!(" `{command}` fails now:\n{lines}\n")
            }
        };
        let spelled_in = |code: &str| {
            self.sources_now()
                .iter()
                .any(|(_, t)| harness::has_code(t, code))
        };
        if all && st.spelled.iter().all(|(_, c)| spelled_in(c)) {
            st.settled = true;
        }
        let end = if st.settled {
            "No tool call is needed: check the change against the request and say in a few sentences what changed."
        } else {
            "Check the change against the request and finish what it does not do yet."
        };
        Some(format!(
            "\n\n[mm asked for each file's part of the request alone and made these changes:]\n```diff\n{}```\n{checks}{end}",
            diffs.concat()
        ))
    }

    /// The checks fail and the failure points at the workspace's own
    /// functions: ask for the function corrected (see the module doc), up
    /// to twice, and keep a change only when every check passes with it.
    /// Returns what to tell the model, or None when nothing was kept.
    pub(super) async fn focused_fix(
        &mut self,
        st: &mut TurnState,
        command: &str,
        failure: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.harness_on() || st.question {
            return None;
        }
        let sources = self.sources_now();
        let t = target(failure, &st.prompt, &sources)?;
        if st.off_limits(&t.file).is_some() {
            return None;
        }
        let docs = self.named_doc_texts(&st.prompt);
        let ask = request(&st.prompt, command, failure, &t, &docs);
        let mut tried: Vec<String> = Vec::new();
        for temperature in [0.2, 0.7] {
            let before = sources.iter().find(|(p, _)| *p == t.file)?.1.clone();
            let reply = self.side_request(SYSTEM, &ask, temperature, cancel).await?;
            let Some((after, changed)) = apply(&before, &reply, &t.names) else {
                continue;
            };
            if tried.contains(&after) {
                continue;
            }
            tried.push(after.clone());
            let label = format!("fix {} in {} (asked alone)", changed.join(", "), t.file);
            // What the turn was before this try, for when it is put back.
            let saved = (
                st.tests.clone(),
                st.last_failure.clone(),
                st.mutations,
                st.written.clone(),
                st.checked_at,
            );
            if !self.own_write(st, &t.file, after, &label, cancel).await {
                return None;
            }
            match self.run_checks(st, cancel).await {
                None => {
                    self.notice(
                        Level::Info,
                        format!(
                            "asked for {} alone with the failure; the change it gave makes the checks pass",
                            changed.join(", ")
                        ),
                    );
                    let summary = st
                        .tests
                        .as_ref()
                        .map(|r| format!(" ({})", r.summary))
                        .unwrap_or_default();
                    let file = self
                        .tools
                        .sandbox
                        .check_read(&t.file)
                        .ok()
                        .and_then(|r| crate::paths::read_checked(&r.abs, 1024 * 1024).ok());
                    let body = String::from_utf8_lossy(file.as_deref().unwrap_or_default());
                    let now: Vec<String> = changed
                        .iter()
                        .filter_map(|n| guard::block_of(&body, n))
                        .collect();
                    return Some(format!(
                        "\n[mm asked for {} alone, with this failure, and changed {} to what came back; `{command}` passes now{summary}. It is now:]\n```\n{}```\nDo not change it again: check the change and answer.",
                        changed.join(", "),
                        t.file,
                        now.join("\n")
                    ));
                }
                // A person approved it: it stays, and the model hears
                // what still fails.
                Some((c, _)) if st.approved.contains(&t.file) => {
                    self.notice(
                        Level::Warning,
                        format!(
                            "`{c}` still fails with the change to {}; it stays as you approved it",
                            t.file
                        ),
                    );
                    return None;
                }
                Some(_) => {
                    let label = format!("undo the change to {} (the checks still fail)", t.file);
                    if !self.own_write(st, &t.file, before, &label, cancel).await {
                        self.notice(
                            Level::Warning,
                            format!(
                                "could not put {} back after a change with which the checks still fail; /rewind undoes it",
                                t.file
                            ),
                        );
                        return None;
                    }
                    // Nothing of this try is left: the turn has not
                    // changed the file.
                    (
                        st.tests,
                        st.last_failure,
                        st.mutations,
                        st.written,
                        st.checked_at,
                    ) = saved;
                }
            }
        }
        None
    }
}

impl Agent {
    /// The short source files, other than `file`, not written this turn
    /// nor about to be, that call a definition whose parameters changed
    /// from `before` to `after` (test files are left as they are).
    pub(super) fn callers_of(
        &self,
        before: &str,
        after: &str,
        file: &str,
        written: &[String],
        pending: &[String],
    ) -> Vec<(String, String)> {
        let changed = crate::tools::guard::signature_changes(before, after);
        if changed.is_empty() {
            return Vec::new();
        }
        self.sources_now()
            .into_iter()
            .filter(|(p, t)| {
                p != file
                    && !written.contains(p)
                    && !pending.contains(p)
                    && !harness::is_test_file(p)
                    && t.lines().count() <= MAX_FILE_LINES * 2
                    && changed.iter().any(|n| calls_in(t, n))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_function_one_call_down_is_the_first_another_file_defines() {
        let sources = vec![
            ("till.py".to_string(), "def total(p):\n    return sum(cents(x) for x in p)\n\n\ndef fee():\n    return 1\n".to_string()),
            ("money.py".to_string(), "def cents(t):\n    return int(t)\n".to_string()),
            ("test_money.py".to_string(), "def helper(t):\n    return t\n".to_string()),
        ];
        let trace = "total(p=['1']) in till.py returned 1\n  it called fee() in till.py, which returned 1\n  it called helper(t='1') in test_money.py, which returned '1'\n  it called gone(t='1') in money.py, which returned 1\n  it called cents(t='1') in money.py, which returned 1\n";
        let d = down_target(trace, "till.py", &sources).unwrap();
        assert_eq!(d.file, "money.py");
        assert_eq!(d.names, ["cents"]);
        assert!(d.code.contains("def cents(t):"), "{}", d.code);
        assert!(
            down_target(
                "it called fee() in till.py, which returned 1",
                "till.py",
                &sources
            )
            .is_none()
        );
    }

    #[test]
    fn the_function_the_others_call_is_narrowed_to_with_its_wrong_values() {
        let text = "def count(total, per):\n    return max(1, total // per)\n\n\ndef pages(items, per):\n    return count(len(items), per)\n\n\ndef label(p, total):\n    return f'{p} of {count(total, 10)}'\n";
        let failure = "FAIL: test_last (t.T.test_last)\nTraceback (most recent call last):\n  File \"./t.py\", line 9, in test_last\n    self.assertEqual(count(31, 10), 4)\nAssertionError: 3 != 4\nFAIL: test_label\n    self.assertEqual(label(3, 25), \"3 of 3\")\nAssertionError: '3 of 2' != '3 of 3'\n";
        let t = super::Target {
            file: "pager.py".into(),
            names: vec!["count".into(), "pages".into(), "label".into()],
            code: text.into(),
            consts: Vec::new(),
        };
        let n = narrow(&t, text, failure).unwrap();
        assert_eq!(n.names, ["count"]);
        assert!(n.code.starts_with("def count"), "{}", n.code);
        assert_eq!(
            wrong_values(failure, "count"),
            ["count(31, 10) gives 3; the test expects 4"]
        );
        assert_eq!(
            wrong_values(
                "    assert count(31, 10) == 4\nE       assert 3 == 4\n",
                "count"
            ),
            ["count(31, 10) gives 3; the test expects 4"]
        );
        // A failure that calls none of the called ones, or a set with no
        // single callee: nothing to narrow to.
        assert!(narrow(&t, text, "AssertionError: pages").is_none());
        let apart = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
        let t2 = super::Target {
            file: "x.py".into(),
            names: vec!["a".into(), "b".into()],
            code: apart.into(),
            consts: Vec::new(),
        };
        assert!(narrow(&t2, apart, "a() b()").is_none());
    }

    #[test]
    fn constants_the_functions_use_are_shown_and_may_change() {
        let text = "from datetime import datetime\n\nDATE_FORMAT = \"%Y-%d-%m\"\nUNUSED = 3\n\n\ndef parse(text):\n    return datetime.strptime(text, DATE_FORMAT).date()\n\n\ndef main():\n    print(parse('2024-12-25'))\n";
        let failure = "Traceback (most recent call last):\n  File \"./c.py\", line 12, in main\n    print(parse('2024-12-25'))\n  File \"./c.py\", line 8, in parse\n    return datetime.strptime(text, DATE_FORMAT).date()\nValueError: unconverted data remains: 5\n";
        let sources = vec![("c.py".to_string(), text.to_string())];
        let t = target(failure, "fix c.py", &sources).unwrap();
        assert_eq!(t.consts, ["DATE_FORMAT"]);
        assert!(
            t.code.starts_with("DATE_FORMAT = \"%Y-%d-%m\"\n\n"),
            "{}",
            t.code
        );
        assert!(!t.code.contains("UNUSED"), "{}", t.code);
        let allowed: Vec<String> = t.names.iter().chain(&t.consts).cloned().collect();
        let reply = "```python\nDATE_FORMAT = \"%Y-%m-%d\"\n```";
        let (after, changed) = apply(text, reply, &allowed).unwrap();
        assert!(after.contains("DATE_FORMAT = \"%Y-%m-%d\"\n"), "{after}");
        assert_eq!(changed, ["DATE_FORMAT"]);
        // Without the constant allowed, the same reply is not applied.
        assert!(apply(text, reply, &t.names).is_none());
    }

    #[test]
    fn the_request_copied_into_a_file_is_no_change() {
        let prompt = "test_checkout.py has failures: some receipts come out wrong.";
        let before = "def f():\n    return 1\n";
        let after = format!("{before}\n# The request: {prompt}\n");
        assert_eq!(
            vet(prompt, "c.py", before, after, "", &[]),
            Err("no change")
        );
        let after = format!("def f():\n    return 2\n# The request: {prompt}\n");
        assert_eq!(
            vet(prompt, "c.py", before, after, "", &[]).as_deref(),
            Ok("def f():\n    return 2\n")
        );
    }

    #[test]
    fn a_corrected_function_may_bring_the_import_it_needs() {
        let before = "\"\"\"Blog.\"\"\"\nfrom datetime import date\n\n\ndef slug(t):\n    raise NotImplementedError\n\n\ndef other():\n    return 1\n";
        let reply = "```python\nimport re\n\ndef slug(t):\n    return re.sub(r'[^a-z0-9]+', '-', t.lower()).strip('-')\n```";
        let (after, changed) = apply(before, reply, &["slug".to_string()]).unwrap();
        assert_eq!(changed, vec!["slug"]);
        assert!(
            after.contains("from datetime import date\nimport re\n"),
            "{after}"
        );
        assert!(after.contains("def other():"), "{after}");
        // Anything else than an import still makes the reply unusable.
        let extra = "```python\nLIMIT = 3\n\ndef slug(t):\n    return t\n\ndef helper():\n    return 2\n```";
        assert_eq!(apply(before, extra, &["slug".to_string()]), None);
    }

    use super::*;

    #[test]
    fn a_caller_keeps_only_the_changes_to_its_calls() {
        let names = vec!["make_line".to_string()];
        let before = "def run():\n    out = [make_line('start')]\n    out.append(check(x) + ' (/)')\n    out.append(make_line('done'))\n    return out\n";
        let after = "def run():\n    out = [make_line('INFO', 'start')]\n    out.append(make_line('INFO', check(x) + ' (/)'))\n    out.append(make_line('INFO', 'done'))\n    return out\n";
        assert_eq!(
            only_the_calls(before, after, &names),
            "def run():\n    out = [make_line('INFO', 'start')]\n    out.append(check(x) + ' (/)')\n    out.append(make_line('INFO', 'done'))\n    return out\n"
        );
        // A call laid over two lines is taken; a line with no call that
        // was dropped comes back.
        let before = "x = make_line('a')\ny = 2\nz = 3\n";
        let after = "x = make_line(\n    'INFO', 'a')\ny = 2\n";
        assert_eq!(
            only_the_calls(before, after, &names),
            "x = make_line(\n    'INFO', 'a')\ny = 2\nz = 3\n"
        );
    }

    #[test]
    fn search_replace_blocks_are_applied_in_order_and_held_to_the_checks() {
        let before =
            "def area(w, h):\n    raise NotImplementedError\n\n\ndef unit():\n    return 'm'\n";
        let reply = "Here:\n```python\n<<<<<<< SEARCH\ndef area(w, h):\n    raise NotImplementedError\n=======\ndef area(w, h):\n    return w * h\n>>>>>>> REPLACE\n```\n<<<<<<< SEARCH\n=======\ndef perimeter(w, h):\n    return 2 * (w + h)\n>>>>>>> REPLACE\n";
        assert_eq!(search_replace_blocks(reply).len(), 2);
        let after =
            blocks_change("Implement area in geo.py", "geo.py", before, reply, &[]).unwrap();
        assert_eq!(
            after,
            "def area(w, h):\n    return w * h\n\n\ndef unit():\n    return 'm'\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
        );
        // Indentation copied wrong still finds its place, as edit_file does.
        let loose = "<<<<<<< SEARCH\n  raise NotImplementedError\n=======\n    return w * h\n>>>>>>> REPLACE\n";
        let after = blocks_change("Implement area", "geo.py", before, loose, &[]).unwrap();
        assert!(after.contains("    return w * h\n"), "{after}");
        // A SEARCH that is not in the file, no block, or no change: nothing.
        let missing =
            "<<<<<<< SEARCH\ndef volume():\n=======\ndef volume(): pass\n>>>>>>> REPLACE\n";
        assert!(blocks_change("x", "geo.py", before, missing, &[]).is_err());
        assert!(blocks_change("x", "geo.py", before, "```python\nx = 1\n```", &[]).is_err());
        let same = "<<<<<<< SEARCH\n    return 'm'\n=======\n    return 'm'\n>>>>>>> REPLACE\n";
        assert_eq!(
            blocks_change("x", "geo.py", before, same, &[]),
            Err("no change")
        );
        // An unclosed block is not a block.
        assert!(search_replace_blocks("<<<<<<< SEARCH\na\n=======\nb\n").is_empty());
        // The template's parentheses copied around the lines (a dev trace:
        // `(masked_local_part = "*")`).
        let wrapped =
            "<<<<<<< SEARCH\n(    return 'm')\n=======\n(    return 'cm')\n>>>>>>> REPLACE\n";
        let after = blocks_change("x", "geo.py", before, wrapped, &[]).unwrap();
        assert!(after.contains("    return 'cm'\n"), "{after}");
        assert_eq!(unwrap_parens("print(x)"), "print(x)");
        assert_eq!(unwrap_parens("(f(x))"), "f(x)");
        assert_eq!(unwrap_parens("(y = 1"), "y = 1");
    }

    const LIB: &str = "/// Whether `year` is a leap year.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && year % 100 != 0\n}\n\n/// Days in `year`.\npub fn days_in(year: u32) -> u32 {\n    if is_leap(year) {\n        366\n    } else {\n        365\n    }\n}\n\npub fn unrelated() -> u32 {\n    1\n}\n";
    const TEST: &str =
        "use leap::*;\n#[test]\nfn days() {\n    assert_eq!(days_in(2000), 366);\n}\n";

    fn sources() -> Vec<(String, String)> {
        vec![
            ("src/lib.rs".to_string(), LIB.to_string()),
            ("tests/leap.rs".to_string(), TEST.to_string()),
        ]
    }

    #[test]
    fn the_target_is_the_called_function_and_what_it_calls() {
        let failure = "thread 'days' panicked at tests/leap.rs:4:5:\nassertion `left == right` failed\ntests/leap.rs:4: assert_eq!(days_in(2000), 366);";
        let t = target(failure, "fix it", &sources()).unwrap();
        assert_eq!(t.file, "src/lib.rs");
        assert_eq!(t.names, ["is_leap", "days_in"]);
        assert!(
            t.code
                .starts_with("/// Whether `year` is a leap year.\npub fn is_leap")
        );
        assert!(!t.code.contains("unrelated"));
    }

    #[test]
    fn a_python_frame_names_the_function() {
        let src =
            "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n\n\ndef other():\n    return 2\n";
        let failure = "  File \"stats.py\", line 2, in mean\nZeroDivisionError: division by zero";
        let s = vec![("stats.py".to_string(), src.to_string())];
        let t = target(failure, "fix the crash", &s).unwrap();
        assert_eq!(t.names, ["mean"]);
        assert!(!t.code.contains("other"));
    }

    #[test]
    fn without_a_name_the_file_the_request_names() {
        let t = target(
            "FAILED (1 failure)",
            "Fix the bug in src/lib.rs.",
            &sources(),
        )
        .unwrap();
        assert_eq!(t.names, ["is_leap", "days_in", "unrelated"]);
        assert_eq!(target("FAILED", "fix it", &sources()), None);
    }

    #[test]
    fn a_compile_error_names_the_function_around_its_line() {
        // A file over the short-file limit, as a stub's file often is.
        let mut src = String::from("pub fn first() -> u32 {\n    1\n}\n\n");
        for i in 0..30 {
            src.push_str(&format!("pub fn filler{i}() -> u32 {{\n    {i}\n}}\n\n"));
        }
        let at = src.lines().count() + 2;
        src.push_str("pub fn from_roman(s: &str) -> Option<u32> {\n    let n = 0;\n    if s[0] == 'I' {}\n    Some(n)\n}\n");
        assert!(src.lines().count() > MAX_LINES);
        let s = vec![("src/lib.rs".to_string(), src)];
        let failure = format!(
            "error[E0277]: the type `str` cannot be indexed by `usize`\n  --> src/lib.rs:{at}:8\n   |\n{at} |     if s[0] == 'I' {{}}\nerror: could not compile `roman` (lib) due to 1 previous error"
        );
        let t = target(&failure, "make it compile", &s).unwrap();
        assert_eq!(
            (t.file.as_str(), t.names.clone()),
            ("src/lib.rs", vec!["from_roman".to_string()])
        );
        // No place either: the function the request names in the file it names.
        let t = target(
            "error: could not compile",
            "Implement from_roman in src/lib.rs.",
            &s,
        )
        .unwrap();
        assert_eq!(t.names, ["from_roman"]);
        assert_eq!(
            target("error: could not compile", "Fix src/lib.rs.", &s),
            None
        );
    }

    #[test]
    fn a_rewritten_rust_function_keeps_its_pub() {
        let before = "pub fn to(n: u32) -> u32 {\n    n\n}\n\npub(crate) fn from(s: &str) -> Option<u32> {\n    todo!()\n}\n";
        let reply = "```rust\nfn from(s: &str) -> Option<u32> {\n    s.parse().ok()\n}\n```";
        let (after, changed) = apply(before, reply, &["from".to_string()]).unwrap();
        assert_eq!(changed, ["from"]);
        assert!(
            after.contains("pub(crate) fn from(s: &str) -> Option<u32> {\n    s.parse().ok()"),
            "{after}"
        );
        assert!(after.starts_with("pub fn to("), "{after}");
    }

    #[test]
    fn a_reply_replaces_only_the_functions_shown() {
        let names = vec!["is_leap".to_string(), "days_in".to_string()];
        let reply = "Here:\n```rust\n/// Whether `year` is a leap year.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)\n}\n\npub fn days_in(year: u32) -> u32 {\n    if is_leap(year) {\n        366\n    } else {\n        365\n    }\n}\n```\n";
        let (after, changed) = apply(LIB, reply, &names).unwrap();
        assert_eq!(changed, ["is_leap"]);
        assert!(after.contains("(year % 100 != 0 || year % 400 == 0)"));
        assert!(after.contains("pub fn unrelated"));
        assert_eq!(after.matches("/// Whether").count(), 1);
        // Unchanged, another function, or no code: nothing to apply.
        assert_eq!(
            apply(
                LIB,
                "```rust\npub fn unrelated() -> u32 {\n    2\n}\n```",
                &names
            ),
            None
        );
        assert_eq!(apply(LIB, "The bug is in is_leap.", &names), None);
        let same = format!("```rust\n{}```", guard::block_of(LIB, "is_leap").unwrap());
        assert_eq!(apply(LIB, &same, &names), None);
    }

    #[test]
    fn a_change_across_two_short_files_is_asked_for_file_by_file() {
        let s = vec![
            (
                "fmt.py".to_string(),
                "def f(items):\n    return 1\n".to_string(),
            ),
            (
                "report.py".to_string(),
                "from fmt import f\nprint(f([]))\n".to_string(),
            ),
            ("test_fmt.py".to_string(), "from fmt import f\n".to_string()),
        ];
        let files = change_files(
            "Give f in fmt.py a parameter, and make report.py use it.",
            &s,
        );
        assert_eq!(
            files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            ["fmt.py", "report.py"]
        );
        assert!(change_files("Change f in fmt.py.", &s).is_empty());
        assert!(change_files("Change fmt.py and new.py.", &s).is_empty());
        assert!(change_files("Change fmt.py and test_fmt.py.", &s).is_empty());
        assert!(change_files("Move f from fmt.py to report.py.", &s).is_empty());
    }

    #[test]
    fn a_focused_change_is_kept_only_whole_and_as_asked() {
        let prompt = "Give format_list in fmt.py a parameter sep, and make report.py call it with sep=\" | \".";
        let spelled = harness::spelled_code(prompt);
        let fmt = "def format_list(items):\n    return \", \".join(items)\n\n\ndef format_title(s):\n    return s.title()\n";
        let good = "```python\ndef format_list(items, sep=\", \"):\n    return sep.join(items)\n\n\ndef format_title(s):\n    return s.title()\n```";
        let after = change_of(prompt, "fmt.py", fmt, good, &spelled).unwrap();
        assert!(after.starts_with("def format_list(items, sep=\", \"):"));
        // Only the changed function: merged into the file.
        let part =
            "```python\ndef format_list(items, sep=\", \"):\n    return sep.join(items)\n```";
        let merged = change_of(prompt, "fmt.py", fmt, part, &spelled).unwrap();
        assert!(merged.contains("def format_title"));
        let renamed = "```python\ndef format_list_with_sep(items, sep=\", \"):\n    return sep.join(items)\n\n\ndef format_title(s):\n    return s.title()\n```";
        assert!(change_of(prompt, "fmt.py", fmt, renamed, &spelled).is_err());
        let report = "from fmt import format_list\nprint(format_list([]))\n";
        let unspelled =
            "```python\nfrom fmt import format_list\nprint(format_list([], sep=\"-\"))\n```";
        assert!(change_of(prompt, "report.py", report, unspelled, &spelled).is_err());
        let spelt =
            "```python\nfrom fmt import format_list\nprint(format_list([], sep=' | '))\n```";
        assert!(change_of(prompt, "report.py", report, spelt, &spelled).is_ok());
        // A fragment of a short file with no definitions is not the file.
        let fragment = "```python\nprint(format_list([], sep=' | '))\n```";
        assert!(change_of(prompt, "report.py", report, fragment, &spelled).is_err());
        assert_eq!(
            change_of(
                prompt,
                "report.py",
                report,
                &format!("```\n{report}```"),
                &spelled
            ),
            Err("no change")
        );
    }
}
