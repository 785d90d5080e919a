//! The checks asked for: the functions a request is about, the user's
//! words and the examples in them, a tool-less request for checks of what
//! they state, and their first run.

use super::*;

impl Agent {
    /// The functions the request is about, and the source file of the
    /// workspace that defines each now: names the request gives (as a
    /// call, `shipping_cost(…)`, or as a word, "implement from_roman")
    /// that a file it names or the turn wrote defines, then the
    /// placeholders still in the files it names ("fill in the TODO in
    /// versions.py"). Files in one language mm can run checks in (the
    /// first such file's).
    pub(in crate::agent) fn asked_functions(
        &self,
        st: &TurnState,
    ) -> (Option<Lang>, Vec<(String, String)>) {
        static WORD: LazyLock<Option<Regex>> =
            LazyLock::new(|| harness::regex(r"\b([A-Za-z_$][\w$]*)\b").ok());
        let Some(re) = WORD.as_ref() else {
            return (None, Vec::new());
        };
        let named = harness::named_files(&st.prompt);
        let mut files: Vec<String> = Vec::new();
        for f in named.iter().chain(st.written.iter()) {
            if Lang::of(f).is_some() && !harness::is_test_file(f) && !files.contains(f) {
                files.push(f.clone());
            }
        }
        let Some(lang) = files.first().and_then(|f| Lang::of(f)) else {
            return (None, Vec::new());
        };
        files.retain(|f| Lang::of(f) == Some(lang));
        let texts: Vec<(String, String)> = files
            .iter()
            .filter_map(|f| self.content_now(f).map(|t| (f.clone(), t)))
            .collect();
        let mut out: Vec<(String, String)> = Vec::new();
        let mut add = |name: String, file: &str| {
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, file.to_string()));
            }
        };
        for c in re.captures_iter(&st.prompt) {
            let Some(name) = c.get(1).map(|m| m.as_str().to_string()) else {
                continue;
            };
            if let Some((file, _)) = texts
                .iter()
                .find(|(_, t)| guard::definitions(t).contains(&name))
            {
                add(name, file);
            }
        }
        // Placeholders in the files the request names, as they were when
        // the turn began (the model may have written them since).
        for (file, text) in &texts {
            if !named.contains(file) {
                continue;
            }
            let original = st
                .originals
                .get(file)
                .cloned()
                .unwrap_or_else(|| text.clone());
            for name in guard::definitions(&original) {
                if guard::block_of(&original, &name).is_some_and(|b| is_placeholder(&b)) {
                    add(name, file);
                }
            }
        }
        (Some(lang), out)
    }

    /// Nothing written yet, and a function the request is about is still
    /// the placeholder it was when the turn began: its checks fail on it,
    /// and candidates for it can be tried against them (a turn about to
    /// end with nothing written).
    pub(in crate::agent) fn stub_unwritten(&self, st: &TurnState) -> bool {
        if !st.written.is_empty() {
            return false;
        }
        let (_, calls) = self.asked_functions(st);
        calls.iter().any(|(name, file)| {
            st.originals
                .get(file)
                .cloned()
                .or_else(|| self.content_now(file))
                .and_then(|text| guard::block_of(&text, name))
                .is_some_and(|b| is_placeholder(&b))
        })
    }

    /// The user's words: the request, and the documents it names (a
    /// SPEC.md), as much as fits.
    pub(in crate::agent) fn users_words(&self, prompt: &str) -> String {
        let mut words = prompt.to_string();
        for (name, body) in self.named_doc_texts(prompt) {
            words.push_str(&format!("\n\n{name}:\n{body}"));
        }
        words
    }

    /// Checks from the request for a change with no test to run: the
    /// examples the user's words give (read by mm), and, in Python when
    /// those are few, checks a tool-less request writes from them (kept
    /// when the words back their values); run once a turn; the failures
    /// as a follow-up (once), or None.
    pub(in crate::agent) async fn request_checks(
        &mut self,
        st: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.on(Behaviour::Asserts)
            || st.question
            || (st.written.is_empty() && !self.stub_unwritten(st) && st.repro_before.is_none())
            || !self.tools.sandbox.fence().is_on()
        {
            return None;
        }
        if st.asserts_tried {
            return self.recheck_request(st, cancel).await;
        }
        // With a test or a command to judge the change, only the
        // request's own examples run (they cost no request): the tests
        // may not reach what the request adds. A command the request says
        // misbehaves that exited 0 before any change judges nothing: the
        // symptom is in what it prints, and the words say what it should.
        let unreproduced = st.repro_before.is_some();
        let examples_only = st.verify.is_some() || (st.repro.is_some() && !unreproduced);
        st.asserts_tried = true;
        let (lang, calls) = self.asked_functions(st);
        let lang = lang.filter(|_| !calls.is_empty())?;
        let names: Vec<String> = calls.iter().map(|(n, _)| n.clone()).collect();
        let (words, mut checks) = self.words_and_examples(st, &calls, &names, lang);
        let from_examples = checks.len();
        // Words that state no value back no check the model could write,
        // and a function the request does not write as a call has no
        // example in it to start from: no request for those.
        let values_stated = !literals(&words).is_empty();
        let called = names.iter().any(|n| {
            harness::regex(&format!(r"\b{}\(", regex::escape(n)))
                .is_ok_and(|re| re.is_match(&words))
        });
        // With examples enough for the values, the rules that refuse an
        // input are what they leave out: only checks of those are asked
        // for, and kept.
        let errors = named_errors(&words);
        let raises_only = from_examples >= ENOUGH_EXAMPLES;
        // Rust checks come from the examples only: no reply shape is read.
        if (!raises_only || !errors.is_empty())
            && !examples_only
            && (values_stated || raises_only)
            && (called || unreproduced)
            && lang != Lang::Rust
        {
            self.sampled_checks(
                &words,
                (&calls, &names),
                (lang, raises_only, &errors),
                &mut checks,
                cancel,
            )
            .await;
        }
        if checks.is_empty() {
            self.notice(
                Level::Info,
                "no checks from the request: it gives no value to check the code against",
            );
            return None;
        }
        let (cmd, (code, out)) = self
            .first_check_run(lang, &calls, &names, &checks, cancel)
            .await?;
        if code == Some(3) {
            self.notice(
                Level::Info,
                "none of the request's checks reads as code; none run",
            );
            return None;
        }
        self.first_checks_ran(st, (lang, &checks, from_examples), cmd, (code, out), cancel)
            .await
    }

    /// Checks a tool-less request writes from the user's words, added to
    /// `checks` (the examples read from them): those whose values the
    /// words state.
    async fn sampled_checks(
        &mut self,
        words: &str,
        (calls, names): (&[(String, String)], &[String]),
        (lang, raises_only, errors): (Lang, bool, &[String]),
        checks: &mut Vec<Example>,
        cancel: &CancellationToken,
    ) {
        // A small model lists checks on and on: its first lines are
        // the request's own, and a reply cut at the cap still gives
        // them.
        let asked: Vec<(String, String)> = calls
            .iter()
            .map(|(n, f)| match lang {
                Lang::Python => (n.clone(), python_module(f)),
                Lang::JavaScript | Lang::Rust => (n.clone(), f.clone()),
            })
            .collect();
        let ask = if raises_only {
            raises_request(words, &asked, lang, errors)
        } else {
            request(words, &asked, lang)
        };
        // A reply that gives no usable check (a small model that wrote
        // value checks where refusals were asked for) is asked for
        // once more, at a higher temperature.
        let examples: Vec<Example> = checks.clone();
        for temperature in [0.2, 0.8] {
            let Some(reply) = self
                .side_request_cut(system(lang), &ask, temperature, CHECKS_CAP, true, cancel)
                .await
            else {
                self.notice(
                    Level::Info,
                    "no checks came back from the request; only its examples run",
                );
                break;
            };
            // A check of a call the words give an example of says
            // what the example says, or it goes.
            let reply = unqualified(&reply, &asked);
            let grounded = grounded_checks(words, &reply, names);
            // Usable: one check of the shape asked for that the words
            // back (an example restated counts).
            let usable = grounded
                .iter()
                .any(|c| !raises_only || matches!(c.expect, Expect::Raises(_)));
            for c in grounded {
                let raises = matches!(c.expect, Expect::Raises(_));
                let contradicts = examples
                    .iter()
                    .any(|e| same_call(&e.call, &c.call) && e.expect != c.expect);
                if (raises || !raises_only) && !contradicts && !checks.contains(&c) {
                    checks.push(c);
                }
            }
            if usable {
                break;
            }
        }
    }

    /// The user's words for the request's checks (the request, the
    /// documents it names, the functions' documentation as the turn found
    /// it) and the examples mm reads in them (a docstring's `'12.5' ->
    /// 1250` too), at most `MAX_EXAMPLES`.
    pub(in crate::agent) fn words_and_examples(
        &self,
        st: &TurnState,
        calls: &[(String, String)],
        names: &[String],
        lang: Lang,
    ) -> (String, Vec<Example>) {
        let mut words = self.users_words(&st.prompt);
        // The documentation the functions had when the turn began is the
        // user's words too (a stub's docstring with its examples).
        for (name, file) in calls {
            let Some(text) = st
                .originals
                .get(file)
                .cloned()
                .or_else(|| self.content_now(file))
            else {
                continue;
            };
            let doc = doc_of(&text, name);
            if !doc.trim().is_empty() {
                words.push_str(&format!("\n\n{name} in {file}, as documented:\n{doc}"));
            }
        }
        let mut checks = examples::extract(&words, names);
        // A docstring's examples written without the function's name
        // (`'12.5' -> 1250`) are calls of it too.
        if lang != Lang::Rust {
            for (name, file) in calls {
                let doc = st
                    .originals
                    .get(file)
                    .cloned()
                    .or_else(|| self.content_now(file))
                    .map(|text| doc_of(&text, name))
                    .unwrap_or_default();
                for ex in examples::bare(&doc, name) {
                    if !checks.contains(&ex) {
                        checks.push(ex);
                    }
                }
            }
        }
        checks.truncate(MAX_EXAMPLES);
        (words, checks)
    }

    /// The command that runs `checks` on the functions `calls` in `lang`,
    /// and its first run; None when they cannot run (a Rust file outside a
    /// library crate, a run that gave no verdict).
    pub(in crate::agent) async fn first_check_run(
        &mut self,
        lang: Lang,
        calls: &[(String, String)],
        names: &[String],
        checks: &[Example],
        cancel: &CancellationToken,
    ) -> Option<(String, (Option<i32>, String))> {
        let mut first_run = None;
        let cmd = match lang {
            Lang::Python => {
                let mut modules: Vec<String> =
                    calls.iter().map(|(_, f)| python_module(f)).collect();
                modules.dedup();
                examples::command(lang, &examples::python_script(&modules, names, checks))
            }
            Lang::JavaScript => {
                let file = calls.first().map(|(_, f)| f.as_str()).unwrap_or_default();
                examples::command(lang, &examples::js_script(file, names, checks))
            }
            Lang::Rust => {
                let file = calls.first().map(|(_, f)| f.as_str()).unwrap_or_default();
                let Some(krate) = rustcheck::crate_of(self.tools.sandbox.root(), file) else {
                    self.notice(
                        Level::Info,
                        format!(
                            "{file} is not in a library crate; the request's examples are not run"
                        ),
                    );
                    return None;
                };
                let (cmd, ran) = self.rust_checks(&krate, checks, cancel).await?;
                first_run = Some(ran);
                cmd
            }
        };
        let (code, out) = match first_run {
            Some(ran) => ran,
            None => self.run_request_checks(&cmd, cancel).await?,
        };
        Some((cmd, (code, out)))
    }

    /// The request's checks ran for the first time (`checks`, the first
    /// `from_examples` of them the request's own examples): noted for the
    /// receipt and the best version, and on a failure, candidates against
    /// them and what the model is told.
    pub(in crate::agent) async fn first_checks_ran(
        &mut self,
        st: &mut TurnState,
        (lang, checks, from_examples): (Lang, &[Example], usize),
        cmd: String,
        (code, out): (Option<i32>, String),
        cancel: &CancellationToken,
    ) -> Option<String> {
        st.request_checks = Some(cmd.clone());
        st.request_checks_total = checks.len();
        st.written_checks = checks[from_examples.min(checks.len())..]
            .iter()
            .map(|c| c.shown(lang))
            .collect();
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAILED: ")).collect();
        st.request_checked = Some((self.written_now(st), failed.len()));
        self.note_best(st, failures(code, &out, checks.len()));
        let source = if from_examples == checks.len() {
            "the request's examples"
        } else {
            "the request"
        };
        if failed.is_empty() && code == Some(0) {
            self.notice(
                Level::Info,
                format!("{} check(s) from {source} pass", checks.len()),
            );
            st.candidate_notes
                .push(format!("request checks: {} passed", checks.len()));
            return None;
        }
        self.notice(
            Level::Warning,
            format!(
                "{} of {} check(s) from {source} fail; telling the model",
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
                .fix_by_candidates(st, REQUEST_CHECKS, &failure, cancel)
                .await
            {
                made = text;
            }
        }
        // Candidates that wrote a change say what to do next themselves.
        let next = if made.is_empty() {
            "\nIf the request says otherwise and a check is wrong, say which and why. Otherwise fix the code with edit_file."
        } else {
            ""
        };
        let what = if st.written.is_empty() {
            "the code as it is"
        } else {
            "the change"
        };
        Some(format!(
            "mm checked {what} against the request's own words (its examples, and checks written from it alone, not from your code):\n{failure}{made}{next}\n{}",
            self.restated(st)
        ))
    }

    /// The written files' contents as they are now, to tell whether
    /// anything changed since the request's checks last ran.
    pub(in crate::agent) fn written_now(&self, st: &TurnState) -> String {
        st.written
            .iter()
            .map(|p| format!("{p}\0{}\0", self.content_now(p).unwrap_or_default()))
            .collect()
    }
}
