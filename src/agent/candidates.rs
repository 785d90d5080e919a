//! Candidates tried by execution. When a check exists (the request's
//! command, the tests, the request's own assertions) and the code fails
//! it, mm asks for the function the failure points at, corrected, in a
//! small request of its own (see `focus`), several times at rising
//! temperatures. Each answer is tried in a scratch copy of the workspace
//! (`tools::scratch`, in the fence); the first with which every check
//! passes is written, through the usual write and its approval. A
//! candidate that fails is never written, so nothing is undone.

mod finish;
mod mutate;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::asserts::REQUEST_CHECKS;
use super::focus::{self, SYSTEM};
use super::{Agent, TurnState, harness};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::{guard, scratch};

/// The temperatures the candidates are asked at, in order: the first is
/// the model's best guess, the others spread out.
const TEMPERATURES: [f64; 8] = [0.2, 0.7, 0.9, 1.0, 1.1, 1.2, 1.2, 1.2];

/// "1st", "2nd", "3rd", "4th"...
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What the receipt and the user hear of a set of candidates.
pub fn tally(tried: usize, passed: Option<usize>) -> String {
    let head = format!(
        "{tried} candidate{} tried",
        if tried == 1 { "" } else { "s" }
    );
    match passed {
        Some(k) => format!("{head}, the {} passed", ordinal(k)),
        None => format!("{head}, none passed"),
    }
}

impl Agent {
    /// How many candidates a failing check gets: `candidates` with the
    /// behaviour on; two (asked and tried in place, as before it) without.
    fn candidate_count(&self) -> usize {
        if self.on(Behaviour::Candidates) {
            self.settings.candidates as usize
        } else {
            2
        }
    }

    /// The checks a candidate must pass, in the order `run_checks` runs
    /// them.
    pub(super) fn check_commands(&self, st: &TurnState) -> Vec<String> {
        let mut commands: Vec<String> = Vec::new();
        for c in [
            st.repro.clone(),
            st.verify.clone(),
            st.request_checks.clone(),
        ]
        .into_iter()
        .flatten()
        {
            if !commands.contains(&c) {
                commands.push(c);
            }
        }
        commands
    }

    /// The checks fail with `failure` (from `command`): candidates for the
    /// functions it points at, tried in scratch copies; the first that
    /// passes is written. Returns what to tell the model, or None when
    /// nothing was written. Without a fence, the old way: asked twice and
    /// tried in place (`focused_fix`).
    pub(super) async fn fix_by_candidates(
        &mut self,
        st: &mut TurnState,
        command: &str,
        failure: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.harness_on() || st.question {
            return None;
        }
        let count = self.candidate_count();
        if count == 0 {
            return None;
        }
        if !self.tools.sandbox.fence().is_on() {
            return self.focused_fix(st, command, failure, cancel).await;
        }
        let plan = self.candidate_plan(st, command, failure, cancel).await?;
        let t = &plan.t;
        // A person said no to a change of this file in this turn: mm does
        // not come back with changes of its own to it.
        if let Some(why) = st.off_limits(&t.file) {
            self.notice(
                Level::Info,
                format!("no candidate fixes of {}: {why}", t.file),
            );
            return None;
        }
        // A failure in a file this turn did not change and the request
        // neither names nor asks to fix (a test that failed before the
        // turn: a trial's rename brought a candidate fix of another
        // file's `discount` to the user): the model hears of it, and mm
        // seeks no fix of its own there.
        if !harness::asks_for_fix(&st.prompt)
            && !harness::mentions_tests(&st.prompt)
            && st.repro.is_none()
            && !st.written.contains(&t.file)
            && !harness::named_files(&st.prompt).contains(&t.file)
        {
            self.notice(
                Level::Info,
                format!(
                    "no candidate fixes of {}: this turn did not change it, and the request asks for no fix there",
                    t.file
                ),
            );
            return None;
        }
        // Each try is a request of its own and a run of the checks: say so
        // before the wait (a person saw minutes of spinner and no word).
        self.notice(
            Level::Info,
            format!(
                "asking for up to {count} candidate fixes of {} in {}, each tried in a scratch copy",
                t.names.join(", "),
                t.file
            ),
        );
        let started = Instant::now();
        let mut tries = self.sample(st, &plan, count, started, cancel).await;
        if let Some((d, after, changed)) = tries.winner_down.take() {
            let n = tries.tried.len();
            return self
                .adopt_winner(
                    st,
                    &d,
                    n,
                    (after, changed),
                    Won::Passed,
                    command,
                    &plan.checks,
                    cancel,
                )
                .await;
        }
        let doubted = doubt(st, command, &mut tries);
        // None passed: the best is corrected against what it still fails,
        // one step at a time, each kept only when it fails fewer checks.
        // The code as it is counts as a candidate when it fails fewest.
        let failing_now: String = failure
            .lines()
            .filter(|l| l.starts_with("FAILED: "))
            .map(|l| format!("{l}\n"))
            .collect();
        // Code that does not load fails every check.
        let now = if failing_now
            .lines()
            .any(|l| l.starts_with("FAILED: import ") || l.starts_with("FAILED: require("))
        {
            st.request_checks_total.max(1)
        } else {
            failing_now.lines().count()
        };
        if tries.winner.is_none()
            && command == REQUEST_CHECKS
            && now > 0
            && tries.best.as_ref().is_none_or(|(k, ..)| *k >= now)
            && tries.copied
            && !plan.broken
        {
            tries.best = Some((now, plan.before.clone(), Vec::new(), failing_now));
        }
        self.refine(st, &plan, &mut tries, count, started, cancel)
            .await;
        let mutated = self.mutate_best(st, &plan, &mut tries, cancel).await;
        let n = tries.tried.len();
        if n == 0 {
            self.notice(
                Level::Info,
                format!(
                    "no candidate for {} came back as code that could be tried (replies cut at their limit, unchanged or not code)",
                    t.names.join(", ")
                ),
            );
            st.candidate_notes
                .push("no candidate came back as code".to_string());
            return None;
        }
        let Some(won) = tries.winner else {
            return self
                .keep_best(st, t, n, tries.best, command, now, cancel)
                .await;
        };
        let why = match mutated {
            Some(how) => Won::Mutated(how),
            None if doubted.is_empty() => Won::Passed,
            None => Won::Doubted(doubted),
        };
        self.adopt_winner(st, t, n, won, why, command, &plan.checks, cancel)
            .await
    }

    /// What the candidates for a failure are asked for and tried
    /// against; None when the failure points at no function or there is
    /// no check to try them by.
    async fn candidate_plan(
        &self,
        st: &TurnState,
        command: &str,
        failure: &str,
        cancel: &CancellationToken,
    ) -> Option<Plan> {
        let sources = self.sources_now();
        let t = focus::target(failure, &st.prompt, &sources)?;
        let before = sources.iter().find(|(p, _)| *p == t.file)?.1.clone();
        let docs = self.named_doc_texts(&st.prompt);
        let ask = focus::request(&st.prompt, command, failure, &t, &docs);
        // Functions that were placeholders when the turn began are asked
        // for afresh after the first candidate: shown its own wrong code,
        // a small model hands it back unchanged.
        let fresh = st
            .originals
            .get(&t.file)
            .filter(|o| {
                t.names.iter().any(|n| {
                    guard::block_of(o, n).is_some_and(|b| super::asserts::is_placeholder(&b))
                })
            })
            .filter(|o| o.lines().count() <= focus::MAX_FILE_LINES)
            .map(|o| focus::implement_request(&st.prompt, &docs, &t.file, o, &t.names, failure));
        let checks = self.check_commands(st);
        if checks.is_empty() {
            return None;
        }
        // A placeholder whose file no longer parses (the model wrote
        // another language's code into it): every candidate is asked for
        // afresh and put into the file as it was, not into the broken one.
        let original = st.originals.get(&t.file).cloned().unwrap_or_default();
        let broken = fresh.is_some()
            && crate::tools::syntax::parses(&self.tools, &t.file, &before, cancel).await
                == Some(false);
        // The one function the others call, alone with its wrong values,
        // asked for every other time (from the first).
        let narrow = focus::narrow(&t, &before, failure).map(|n| {
            let values = focus::wrong_values(failure, &n.names[0]);
            let ask = if values.is_empty() {
                focus::request(&st.prompt, command, failure, &n, &docs)
            } else {
                focus::values_request(&st.prompt, command, &n, &values)
            };
            (n.names, ask)
        });
        // A function in another file that the failing call used (from
        // the value trace): asked for on odd tries, when no placeholder
        // is being written afresh.
        let down = st
            .last_trace
            .as_deref()
            .filter(|_| fresh.is_none())
            .and_then(|trace| {
                let d = focus::down_target(trace, &t.file, &sources)?;
                let text = sources.iter().find(|(p, _)| *p == d.file)?.1.clone();
                Some((trace, d, text))
            });
        let down = match down {
            Some((trace, d, text)) => {
                // Its own documentation's examples, run: a wrong value
                // there is plainer than one seen through its caller.
                let own = match d.names.first() {
                    Some(name) => {
                        self.failing_doc_examples(&d.file, &text, name, cancel)
                            .await
                    }
                    None => String::new(),
                };
                let ask = focus::down_request(&st.prompt, command, failure, trace, &d, &docs, &own);
                Some((d, text, ask))
            }
            None => None,
        };
        Some(Plan {
            t,
            before,
            docs,
            ask,
            fresh,
            checks,
            original,
            broken,
            narrow,
            down,
        })
    }

    /// Up to `count` candidates asked for and each tried in a fresh
    /// scratch copy, until one passes every check.
    async fn sample(
        &mut self,
        st: &TurnState,
        plan: &Plan,
        count: usize,
        started: Instant,
        cancel: &CancellationToken,
    ) -> Tries {
        let t = &plan.t;
        let budget = self.settings.candidate_time;
        let mut tries = Tries::default();
        // A small model at a higher temperature still often hands back a
        // candidate already tried: those do not count, up to twice as
        // many requests as candidates.
        let temperatures = TEMPERATURES
            .iter()
            .chain(std::iter::repeat(&TEMPERATURES[7]));
        for (i, temperature) in temperatures.take(2 * count).enumerate() {
            if tries.tried.len() >= count || started.elapsed() >= budget || cancel.is_cancelled() {
                break;
            }
            let (system, user, names, target, base) = match (&plan.fresh, &plan.narrow, &plan.down)
            {
                (Some(f), ..) if i > 0 || plan.broken => (
                    focus::IMPLEMENT_SYSTEM,
                    f.as_str(),
                    &t.names,
                    t,
                    if plan.broken {
                        &plan.original
                    } else {
                        &plan.before
                    },
                ),
                (_, _, Some((d, text, a))) if i % 2 == 1 => (SYSTEM, a.as_str(), &d.names, d, text),
                (_, Some((names, a)), _) if i % 2 == 0 => {
                    (SYSTEM, a.as_str(), names, t, &plan.before)
                }
                _ => (SYSTEM, plan.ask.as_str(), &t.names, t, &plan.before),
            };
            let Some(reply) = self.side_try(system, user, *temperature, cancel).await else {
                break;
            };
            // A reply cut at its cap (a small model rambling on) is one
            // try spent; the next may not ramble.
            let Some(reply) = reply else {
                continue;
            };
            let allowed: Vec<String> = names.iter().chain(&target.consts).cloned().collect();
            let Some((after, changed)) = focus::apply(base, &reply, &allowed) else {
                continue;
            };
            if tries.tried.contains(&after) {
                continue;
            }
            tries.tried.push(after.clone());
            // A fresh copy for each candidate: a check may have changed
            // the last one (a link put where a file was, which mm's write
            // would follow; a folder renamed from under its mask).
            let copy = scratch::copy(&self.tools);
            tries.copied = copy.is_some();
            let Some(mut sc) = copy else {
                break;
            };
            if !sc.write(&target.file, &after) {
                break;
            }
            let left = budget.saturating_sub(started.elapsed());
            let result = self
                .failures_in_scratch(
                    &sc,
                    &plan.checks,
                    st.request_checks.as_deref(),
                    left,
                    cancel,
                )
                .await;
            if target.file != t.file {
                // One step down: kept only when it passes.
                if let Some((0, _)) = result {
                    tries.winner_down = Some((target.clone(), after, changed));
                    break;
                }
                continue;
            }
            match result {
                Some((0, _)) => {
                    tries.winner = Some((after, changed));
                    break;
                }
                Some((k, lines)) if k < usize::MAX => {
                    tries.every_fails.push(failed_checks(&lines));
                    if tries.best.as_ref().is_none_or(|(b, ..)| k < *b) {
                        tries.best = Some((k, after, changed, lines));
                    }
                }
                _ => {}
            }
        }
        tries
    }

    /// No candidate passed: the best is corrected one failing check at a
    /// time with a search/replace block (the next failing check at each
    /// step, the temperature raised after the first round of them), each
    /// kept only when it fails fewer checks; three that do not help end
    /// it.
    async fn refine(
        &mut self,
        st: &TurnState,
        plan: &Plan,
        tries: &mut Tries,
        count: usize,
        started: Instant,
        cancel: &CancellationToken,
    ) {
        let t = &plan.t;
        let budget = self.settings.candidate_time;
        let mut stale = 0;
        let mut step = 0usize;
        while tries.winner.is_none()
            && self.on(Behaviour::Refine)
            && stale < 3
            && tries.tried.len() < 2 * count
            && started.elapsed() < budget
            && !cancel.is_cancelled()
        {
            let Some((k, base, base_changed, lines)) = tries.best.clone() else {
                break;
            };
            if k == 0 || lines.trim().is_empty() {
                break;
            }
            let current: String = t
                .names
                .iter()
                .filter_map(|n| guard::block_of(&base, n))
                .collect::<Vec<_>>()
                .join("\n");
            let failing: Vec<&str> = lines
                .lines()
                .filter(|l| l.starts_with("FAILED: "))
                .collect();
            let one = match failing.get(step % failing.len().max(1)) {
                Some(l) => (*l).to_string(),
                None => lines.clone(),
            };
            let temperature = if step < failing.len().max(1) {
                0.2
            } else {
                0.7
            };
            step += 1;
            let ask =
                focus::edit_request(&st.prompt, &plan.docs, &t.file, &current, &t.names, &one);
            let Some(reply) = self
                .side_try(focus::BLOCKS_SYSTEM, &ask, temperature, cancel)
                .await
            else {
                break;
            };
            let Some(reply) = reply else {
                stale += 1;
                continue;
            };
            let Ok(after) = focus::blocks_change(&st.prompt, &t.file, &base, &reply, &st.spelled)
            else {
                stale += 1;
                continue;
            };
            if tries.tried.contains(&after) {
                stale += 1;
                continue;
            }
            tries.tried.push(after.clone());
            let Some(mut sc) = scratch::copy(&self.tools) else {
                break;
            };
            if !sc.write(&t.file, &after) {
                break;
            }
            let changed = changed_since(&t.names, &base, &after, base_changed);
            let left = budget.saturating_sub(started.elapsed());
            match self
                .failures_in_scratch(
                    &sc,
                    &plan.checks,
                    st.request_checks.as_deref(),
                    left,
                    cancel,
                )
                .await
            {
                Some((0, _)) => tries.winner = Some((after, changed)),
                Some((k2, lines2)) if k2 < k => {
                    tries.best = Some((k2, after, changed, lines2));
                    stale = 0;
                    step = 0;
                }
                Some(_) => stale += 1,
                None => break,
            }
        }
    }
}

/// The best candidate so far: how many of the request's checks it
/// fails, its file's text, the functions it changed, and its failure
/// lines.
type Best = (usize, String, Vec<String>, String);

/// What the candidates for one failure are asked for and tried against.
struct Plan {
    /// The functions the failure points at, and their file.
    t: focus::Target,
    /// That file now.
    before: String,
    /// The documents the request names.
    docs: Vec<(String, String)>,
    /// The request for the functions, corrected.
    ask: String,
    /// The request for placeholders written afresh, when they were.
    fresh: Option<String>,
    /// The commands a candidate must pass.
    checks: Vec<String>,
    /// The file as the turn found it, and whether it no longer parses.
    original: String,
    broken: bool,
    /// The one function the others call, and the request for it.
    narrow: Option<(Vec<String>, String)>,
    /// A function in another file the failing call used, that file, and
    /// the request for it.
    down: Option<(focus::Target, String, String)>,
}

/// Why the winner won.
enum Won {
    /// It passed every check.
    Passed,
    /// It failed only these checks mm wrote, which every candidate failed.
    Doubted(Vec<String>),
    /// The best candidate with these small changes (`mutate`) passed.
    Mutated(Vec<String>),
}

/// What the tries gave.
#[derive(Default)]
struct Tries {
    /// Every candidate tried, as its file's text.
    tried: Vec<String>,
    /// The one that passed every check, and the functions it changed.
    winner: Option<(String, Vec<String>)>,
    /// One in another file that passed.
    winner_down: Option<(focus::Target, String, Vec<String>)>,
    /// Which of the request's checks each tried candidate failed.
    every_fails: Vec<Vec<String>>,
    best: Option<Best>,
    /// The last scratch copy could be made.
    copied: bool,
}

/// Checks the model wrote that every candidate fails, each written apart
/// from the others: more likely a wrong check than a task no try can meet
/// (the request's own examples are never doubted). The best candidate
/// failing only those is the winner; returns the doubted checks.
fn doubt(st: &TurnState, command: &str, tries: &mut Tries) -> Vec<String> {
    if tries.winner.is_some() || command != REQUEST_CHECKS || tries.every_fails.len() < 2 {
        return Vec::new();
    }
    let Some((_, after, changed, lines)) = &tries.best else {
        return Vec::new();
    };
    let fails = failed_checks(lines);
    let all_fail = |c: &String| tries.every_fails.iter().all(|f| f.contains(c));
    if fails.is_empty()
        || !fails
            .iter()
            .all(|c| st.written_checks.contains(c) && all_fail(c))
    {
        return Vec::new();
    }
    tries.winner = Some((after.clone(), changed.clone()));
    fails
}

/// The functions of `names` whose code differs between `base` and
/// `after`, then those `base` had changed already.
fn changed_since(
    names: &[String],
    base: &str,
    after: &str,
    base_changed: Vec<String>,
) -> Vec<String> {
    let mut changed: Vec<String> = names
        .iter()
        .filter(|n| guard::block_of(after, n) != guard::block_of(base, n))
        .cloned()
        .collect();
    for n in base_changed {
        if !changed.contains(&n) {
            changed.push(n);
        }
    }
    changed
}

/// The checks a run's FAILED lines name, without what the code gave.
fn failed_checks(lines: &str) -> Vec<String> {
    lines
        .lines()
        .filter_map(|l| l.strip_prefix("FAILED: "))
        .map(|l| l.find("  (").map_or(l, |i| &l[..i]).trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_says_which_passed() {
        assert_eq!(tally(3, Some(2)), "3 candidates tried, the 2nd passed");
        assert_eq!(tally(1, Some(1)), "1 candidate tried, the 1st passed");
        assert_eq!(tally(4, None), "4 candidates tried, none passed");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(23), "23rd");
    }
}
