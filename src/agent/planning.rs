//! Plan mode. `/plan REQUEST` (and `-plan`) runs a turn that only looks:
//! the sandbox is read-only for it (writes refused, commands as a
//! read-only sandbox runs them), the harness's checks of a change are off,
//! and it ends in a numbered plan, proposed to the user. An approved plan
//! (as the user left it) is carried out as a turn that offers
//! `update_plan`, whose calls mark the steps' progress; the plan card
//! shows it, and the session log keeps each state. `planTool: true`
//! offers `update_plan` in every turn, as Codex and Claude Code offer
//! their to-do lists.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::llm::ToolSpec;
use crate::protocol::{AgentEvent, Level, Outcome, PlanStep, StepStatus, TurnResult};
use crate::toolname::ToolName;
use crate::tools::ToolOutput;

/// Said after the request in plan mode.
pub const PLAN_NOTE: &str = "(Plan mode: look with the read-only tools and change nothing. End with a numbered plan, one step a line, each naming the file and the function or part it changes.)";

/// Asked, without tools, when the answer holds no numbered plan: the
/// request, the files read, and the answer go with it.
const AS_STEPS: &str = "Write a plan to do the request below: numbered steps, one a line, each saying what to change, in which file and which function. Change nothing yet. Reply with the numbered list only.";

/// The most of the files read that goes with that request.
const FILES_CAP: usize = 6_000;

/// The steps of an answer's plan: its numbered lines (`1.`, `2)`), or
/// failing those its bullets, each with the indented lines under it
/// joined on. At most 20.
pub fn steps_of(answer: &str) -> Vec<String> {
    let steps = read_steps(answer, numbered_head);
    if steps.len() >= 2 {
        return steps;
    }
    let bullets = read_steps(answer, bullet_head);
    if bullets.len() >= 2 { bullets } else { steps }
}

/// A numbered line's text (`1. x`, `12) x`).
fn numbered_head(l: &str) -> Option<&str> {
    let t = l.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    (digits > 0 && digits < 3)
        .then(|| &t[digits..])
        .and_then(|r| r.strip_prefix('.').or_else(|| r.strip_prefix(')')))
        .filter(|r| r.starts_with(' '))
        .map(str::trim)
}

/// A bullet's text (`- x`, `* x`), the bullet at most one space in.
fn bullet_head(l: &str) -> Option<&str> {
    let t = l.trim_start();
    (l.len() - t.len() < 2)
        .then(|| t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")))
        .flatten()
        .map(str::trim)
}

/// The steps `head` finds, each with the indented lines under it and a
/// fenced code block that follows it (kept as it is: "Change the
/// function to:" means nothing without the code).
fn read_steps(answer: &str, head: fn(&str) -> Option<&str>) -> Vec<String> {
    let mut steps: Vec<String> = Vec::new();
    let mut open = false;
    let mut fence: Option<String> = None;
    for line in answer.lines() {
        // A step's number at the margin ends a block a small model never
        // closed.
        if fence.is_some()
            && head(line).is_some()
            && !line.starts_with([' ', '\t'])
            && let (Some(last), Some(done)) = (steps.last_mut(), fence.take())
        {
            last.push('\n');
            last.push_str(&done);
        }
        if let Some(block) = &mut fence {
            block.push('\n');
            block.push_str(line);
            if line.trim_start().starts_with("```")
                && let (Some(last), Some(done)) = (steps.last_mut(), fence.take())
            {
                last.push('\n');
                last.push_str(&done);
                open = false;
            }
            continue;
        }
        if open && line.trim_start().starts_with("```") {
            fence = Some(line.trim_start().to_string());
            continue;
        }
        if open && line.trim().is_empty() {
            // A blank line ends a step's text, not its code block.
            continue;
        }
        if let Some(text) = head(line) {
            steps.push(clean(text));
            open = true;
        } else if open && line.starts_with([' ', '\t']) && !line.trim().is_empty() {
            if let Some(last) = steps.last_mut() {
                last.push(' ');
                last.push_str(&clean(line.trim()));
            }
        } else {
            open = false;
        }
    }
    // A block the answer left open is kept as far as it goes.
    if let (Some(last), Some(done)) = (steps.last_mut(), fence) {
        last.push('\n');
        last.push_str(&done);
    }
    steps.retain(|s| !s.is_empty());
    steps.truncate(20);
    steps
}

/// Words that make a clause say what is not to be touched ("Do not
/// change setup.py", "leave ci.yml as it is").
const NEGATIONS: &[&str] = &[
    "not",
    "don't",
    "dont",
    "never",
    "without",
    "leave",
    "untouched",
    "unchanged",
    "avoid",
    "keep",
];

/// The files a plan names (`calc.py`, `src/a.rs`, `notes.txt`): words
/// with an extension that starts with a letter, each once, in order;
/// not those named only in a clause that says not to touch them (red-team
/// round 35: "Do not change setup.py" let setup.py be written unasked).
pub fn files_named(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for clause in text
        .split(['\n', ';'])
        .flat_map(|l| l.split(". "))
        .flat_map(|l| l.split(", but "))
        .flat_map(|l| l.split(" but "))
    {
        let negated = clause
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .any(|w| NEGATIONS.contains(&w.to_lowercase().as_str()) || w.ends_with("n't"));
        if negated {
            continue;
        }
        for f in words_with_extension(clause) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// The words of `text` with an extension that starts with a letter.
fn words_with_extension(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| {
        c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | ';' | ':')
    }) {
        let w = word
            .trim_end_matches(['.', '!', '?'])
            .trim_start_matches("./");
        let Some((stem, ext)) = w.rsplit_once('.') else {
            continue;
        };
        // `e.g.`, `i.e.` are no files.
        let ok = !stem.is_empty()
            && stem.len() + ext.len() > 2
            && !stem.ends_with('/')
            && ext.len() <= 8
            && ext.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'));
        if ok && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// A step's text without Markdown's emphasis marks.
fn clean(text: &str) -> String {
    text.replace("**", "").trim().to_string()
}

/// The plan's steps numbered, one a line, as the prompt that carries it
/// out and a plain-text front end show them.
pub fn numbered(steps: &[String]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `update_plan` tool as the model sees it.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::UpdatePlan.as_str().into(),
        description: "Mark the plan's steps as you go: pass every step with its status (pending, in_progress or completed); one step in_progress at a time.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "array",
                    "description": "Every step of the plan, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"]
                    }
                },
                "explanation": {"type": "string", "description": "Why the plan changed, if it did"}
            },
            "required": ["plan"]
        }),
    }
}

/// The steps an `update_plan` call gives, or why it gives none. A step
/// given as a bare string is pending.
fn steps_given(args: &Map<String, Value>) -> Result<Vec<PlanStep>, String> {
    let Some(list) = args.get("plan").and_then(Value::as_array) else {
        return Err("update_plan takes `plan`: a list of {step, status}".into());
    };
    let mut out = Vec::new();
    for item in list {
        let (step, status) = match item {
            Value::String(s) => (s.clone(), StepStatus::Pending),
            Value::Object(o) => {
                let step = o
                    .get("step")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let status = match o.get("status").and_then(Value::as_str) {
                    None => StepStatus::Pending,
                    Some(s) => StepStatus::parse(s).ok_or_else(|| {
                        format!("status {s:?} is none of pending, in_progress, completed")
                    })?,
                };
                (step, status)
            }
            _ => return Err("each step of `plan` is {step, status}".into()),
        };
        if step.trim().is_empty() {
            return Err("a step of `plan` has no text".into());
        }
        out.push(PlanStep {
            step: step.trim().to_string(),
            status,
        });
    }
    if out.is_empty() {
        return Err("`plan` is empty".into());
    }
    Ok(out)
}

impl Agent {
    /// A turn in plan mode: read-only, the harness's change checks off,
    /// ending in a numbered plan proposed to the user.
    pub async fn plan_turn(&mut self, request: &str, cancel: &CancellationToken) -> TurnResult {
        let saved = self.settings.clone();
        let mut looking = (*saved).clone();
        looking.harness = false;
        self.settings = Arc::new(looking);
        self.tools.sandbox.set_planning(true);
        self.bus.publish(AgentEvent::PlanMode { on: true });
        let prompt = format!("{}\n\n{PLAN_NOTE}", request.trim());
        let mut report = self.run_turn(&prompt, cancel).await;
        self.tools.sandbox.set_planning(false);
        self.settings = saved;
        self.bus.publish(AgentEvent::PlanMode { on: false });
        // Nothing can be written while planning: an answer that says it
        // changed or fixed something is told for what it is.
        if super::batch::claims_a_change(&report.answer) {
            self.notice(
                Level::Warning,
                "unbacked: the answer says something was changed, but nothing is written while planning",
            );
        }
        // A model that went round in circles looking (the loop guard, the
        // round budget) has looked enough: the plan is asked for.
        let circled = report.outcome == Outcome::Budget;
        if report.outcome != Outcome::Done && !circled {
            return report;
        }
        let mut steps = if circled {
            Vec::new()
        } else {
            steps_of(&report.answer)
        };
        if steps.is_empty() {
            self.notice(
                Level::Info,
                "the answer holds no numbered plan: asking the model for one…",
            );
            let mut files = String::new();
            for (path, text) in self.tools.read_files_now() {
                if files.len() + text.len() > FILES_CAP {
                    continue;
                }
                files.push_str(&format!("\n{path}:\n```\n{text}\n```\n"));
            }
            let ask = format!(
                "{AS_STEPS}\n\nThe request: {}\n{files}\nWhat was found: {}",
                request.trim(),
                report.answer.trim()
            );
            if let Some(reply) = self
                .side_request_cut(
                    "You write short numbered plans for code changes.",
                    &ask,
                    0.2,
                    600,
                    false,
                    cancel,
                )
                .await
            {
                steps = steps_of(&reply);
                // The answer held no plan: the plan is the answer now, and
                // a turn that circled came to one.
                if !steps.is_empty() {
                    self.notice(
                        Level::Info,
                        "the answer held no numbered plan; mm asked the model for one",
                    );
                    report.answer = numbered(&steps);
                    report.outcome = Outcome::Done;
                    report.error = None;
                }
            }
        }
        if steps.is_empty() {
            self.notice(
                Level::Warning,
                "the answer holds no numbered plan; nothing to approve",
            );
            return report;
        }
        let steps: Vec<PlanStep> = steps
            .into_iter()
            .map(|step| PlanStep {
                step,
                status: StepStatus::Pending,
            })
            .collect();
        self.set_plan(steps.clone(), false);
        report.plan = steps;
        report
    }

    /// Carries out an approved plan: a turn whose prompt lists the steps,
    /// with `update_plan` offered for their progress.
    pub async fn run_plan(&mut self, steps: Vec<String>, cancel: &CancellationToken) -> TurnResult {
        let steps: Vec<String> = steps
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let mut plan: Vec<PlanStep> = steps
            .iter()
            .map(|s| PlanStep {
                step: s.clone(),
                status: StepStatus::Pending,
            })
            .collect();
        if let Some(first) = plan.first_mut() {
            first.status = StepStatus::InProgress;
        }
        let prompt = format!(
            "Carry out this plan, one step at a time; after each step, call update_plan with every step and its status.\n{}",
            numbered(&steps)
        );
        // `planGate`: the plan names the files it changes; another asks.
        if self.settings.plan_gate {
            let files = files_named(&numbered(&steps));
            self.notice(
                Level::Info,
                format!(
                    "planGate: writes outside {} ask",
                    if files.is_empty() {
                        "the plan (it names no file)".to_string()
                    } else {
                        files.join(", ")
                    }
                ),
            );
            self.tools.sandbox.set_plan_files(Some(files));
        }
        let offered = self.specs.iter().any(|s| s.name == ToolName::UpdatePlan);
        if !offered {
            self.specs.push(spec());
        }
        // The turn's number is the next one: the card belongs to it.
        self.turn += 1;
        self.set_plan(plan.clone(), true);
        self.turn -= 1;
        self.carrying_plan = true;
        let mut report = self.run_turn(&prompt, cancel).await;
        self.carrying_plan = false;
        self.tools.sandbox.set_plan_files(None);
        if !offered {
            self.specs.retain(|s| s.name != ToolName::UpdatePlan);
        }
        let left = self.plan.clone().unwrap_or_default();
        // Nobody marked a step: the card says what it knows, and so does mm.
        if left == plan && report.outcome == Outcome::Done {
            self.notice(
                Level::Warning,
                "the model did not mark the plan's steps (update_plan); the receipt says what was written",
            );
        }
        // Steps marked done with nothing changed: the card shows the
        // model's marks, mm says what the receipt says.
        let done = left
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count();
        if done > 0 && report.written.is_empty() && report.changed_by_commands.is_empty() {
            self.notice(
                Level::Warning,
                format!(
                    "{done} of {} step(s) are marked done, but this turn wrote no file and no command changed one",
                    left.len()
                ),
            );
        }
        report.plan = left;
        report
    }

    /// An `update_plan` call: the steps as the model marks them, on the
    /// card and in the log.
    pub(super) fn update_plan(&mut self, args: &Map<String, Value>) -> ToolOutput {
        match steps_given(args) {
            Ok(steps) => {
                let left = steps
                    .iter()
                    .filter(|s| s.status != StepStatus::Completed)
                    .count();
                let total = steps.len();
                self.set_plan(steps, true);
                let next = match self.current_step() {
                    Some(step) => format!("; now {step}"),
                    None => "; every step is done: check the work and answer".into(),
                };
                ToolOutput::ok(format!(
                    "plan updated: {} of {total} step(s) completed{next}",
                    total - left
                ))
            }
            Err(e) => ToolOutput::error(e),
        }
    }

    /// The step being worked on (or the first left), when a plan is being
    /// carried out: what `update_plan`'s result restates.
    fn current_step(&self) -> Option<String> {
        let plan = self.plan.as_ref()?;
        let at = plan
            .iter()
            .position(|s| s.status == StepStatus::InProgress)
            .or_else(|| plan.iter().position(|s| s.status == StepStatus::Pending))?;
        Some(format!(
            "Step {} of {}: {}",
            at + 1,
            plan.len(),
            plan[at].step
        ))
    }

    /// What a follow-up restates: while an approved plan is carried out,
    /// the step at hand (a small model keeps to one step better than to a
    /// whole plan read again); otherwise the user's request.
    pub(super) fn restated(&self, st: &super::TurnState) -> String {
        if self.carrying_plan
            && let Some(plan) = &self.plan
        {
            let at = |status| plan.iter().position(|s: &PlanStep| s.status == status);
            if let Some(i) = at(StepStatus::InProgress).or_else(|| at(StepStatus::Pending)) {
                return format!(
                    "The step at hand ({} of {}) of the plan you are carrying out: \"{}\"",
                    i + 1,
                    plan.len(),
                    plan[i].step
                );
            }
        }
        super::harness::restate(&st.prompt)
    }

    fn set_plan(&mut self, steps: Vec<PlanStep>, approved: bool) {
        if let Err(e) = self.log.append(&crate::session::Record::Plan {
            turn: self.turn,
            steps: steps.clone(),
            approved,
        }) {
            self.notice(Level::Error, e.to_string());
        }
        self.bus.publish(AgentEvent::Plan {
            turn: self.turn,
            steps: steps.clone(),
            approved,
        });
        self.plan = Some(steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_steps_are_its_numbered_lines_with_what_is_indented_under_them() {
        let answer = "I looked at the code.\n\n1. In `calc.py`, add **parse_args**.\n   It reads the flags.\n2) Change main() to call it.\n\nThat is all.\n3. not a step? it is numbered";
        assert_eq!(
            steps_of(answer),
            [
                "In `calc.py`, add parse_args. It reads the flags.",
                "Change main() to call it.",
                "not a step? it is numbered"
            ]
        );
        // Bullets when nothing is numbered; a year is no step number.
        assert_eq!(
            steps_of("Plan:\n- edit a.py\n- run the tests\n2024. was a year"),
            ["edit a.py", "run the tests"]
        );
        assert!(steps_of("Nothing to do here.").is_empty());
    }

    #[test]
    fn a_code_block_under_a_step_is_kept_with_it() {
        let answer = "1. Change `total` in cart.py to:\n\n```python\ndef total(items):\n\n    return sum(items)\n```\n2. Run the tests.\n   ```\n   python3 -m unittest\n   ```\nDone.";
        assert_eq!(
            steps_of(answer),
            [
                "Change `total` in cart.py to:\n```python\ndef total(items):\n\n    return sum(items)\n```",
                "Run the tests.\n```\n   python3 -m unittest\n   ```",
            ]
        );
        // Numbered again (the plan editor, the prompt that carries it
        // out), the steps read back the same.
        let steps = steps_of(answer);
        assert_eq!(steps_of(&numbered(&steps)), steps);
        // A block the answer never closed ends at the next step.
        assert_eq!(
            steps_of("1. Add:\n```js\nconst a = 1;\n2. Test it."),
            ["Add:\n```js\nconst a = 1;", "Test it."]
        );
    }

    #[test]
    fn the_files_a_plan_names_are_its_words_with_an_extension() {
        assert_eq!(
            files_named(
                "1. In `calc.py`, fix add.\n2. Write notes.txt and ./src/a.rs (e.g. 1.5 or v2.0)."
            ),
            ["calc.py", "notes.txt", "src/a.rs"]
        );
        // What the plan says not to touch is not on its list.
        assert_eq!(
            files_named(
                "1. Fix add in calc.py. Do not change setup.py.\n2. Update docs.md, but leave ci.yml as it is; don't touch b.py\n3. Keep c.py unchanged."
            ),
            ["calc.py", "docs.md"]
        );
    }

    #[test]
    fn update_plan_reads_every_step_and_refuses_what_it_cannot() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let got = steps_given(&args(json!({"plan": [
            {"step": "read calc.py", "status": "completed"},
            {"step": "add parse_args", "status": "in progress"},
            "run the tests"
        ]})))
        .unwrap();
        assert_eq!(
            got.iter().map(|s| s.status).collect::<Vec<_>>(),
            [
                StepStatus::Completed,
                StepStatus::InProgress,
                StepStatus::Pending
            ]
        );
        assert!(steps_given(&args(json!({"plan": []}))).is_err());
        assert!(steps_given(&args(json!({"steps": ["a"]}))).is_err());
        let e =
            steps_given(&args(json!({"plan": [{"step": "a", "status": "maybe"}]}))).unwrap_err();
        assert!(e.contains("maybe"), "{e}");
    }
}
