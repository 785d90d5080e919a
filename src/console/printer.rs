//! Renders bus events as terminal lines: the REPL, the headless `-p` run
//! and `-show` replays all print through this one subscriber.

use std::io::Write;

use anstyle::{AnsiColor, Style};

use crate::protocol::{AgentEvent, ApprovalKind, Level, Outcome, ToolStatus, Usage};
use crate::toolname::ToolName;
use crate::untrusted::displayable;

/// Where things go and what is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintMode {
    /// Everything on stdout (the terminal); notices on stderr.
    Repl,
    /// The answer on stdout, everything else on stderr. `stream`: the
    /// answer is streamed as it arrives (stdout is a terminal) rather than
    /// printed once at the end.
    Headless { stream: bool },
    /// A `-show` replay: like the REPL, with the prompts printed too.
    Replay,
}

struct Styles {
    dim: Style,
    tool: Style,
    ok: Style,
    warn: Style,
    err: Style,
    prompt: Style,
}

impl Styles {
    fn new(color: bool) -> Self {
        if !color {
            let s = Style::new();
            return Self {
                dim: s,
                tool: s,
                ok: s,
                warn: s,
                err: s,
                prompt: s,
            };
        }
        let fg = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
        Self {
            dim: Style::new().dimmed(),
            tool: fg(AnsiColor::Cyan),
            ok: fg(AnsiColor::Green),
            warn: fg(AnsiColor::Yellow),
            err: fg(AnsiColor::Red),
            prompt: Style::new().bold(),
        }
    }
}

pub struct Printer<O: Write, E: Write> {
    out: O,
    err: E,
    mode: PrintMode,
    st: Styles,
    /// The stream that carries tool lines is at the start of a line.
    line_start: bool,
    in_reasoning: bool,
    turn_usage: Usage,
    last_tps: Option<f64>,
    /// Answers are JSON of a declared shape: shown once checked, whole.
    structured: bool,
    /// Draw a spinner on stderr while a request waits for its first token.
    spin: bool,
    /// When the spinner's wait began, and its frame; None when not drawn.
    spinning: Option<(std::time::Instant, usize)>,
    /// Answer text ended mid-line (a spinner there would overwrite it).
    mid_answer: bool,
    /// The steps of the last plan proposed and not yet taken.
    proposed: Option<Vec<String>>,
}

/// What a request that has generated nothing yet is waiting on.
pub(super) fn wait_words(prompt: Option<(u64, u64)>, queued: bool) -> String {
    match prompt {
        Some((done, all)) if done * 20 < all => format!("reading {all} prompt tokens"),
        Some((done, all)) => format!("prompt {done}/{all}"),
        None if queued => "server busy with another request".to_string(),
        None => "waiting for the model".to_string(),
    }
}

pub(super) const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A JSON answer pretty-printed, keys and values in colour (the text as
/// is when it is not JSON).
fn pretty_json(answer: &str, st: &Styles) -> String {
    let t = answer.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|x| x.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    let Ok(value) = serde_json::from_str::<serde_json::Value>(t) else {
        return displayable(t).into_owned();
    };
    let mut out = String::new();
    write_json(&value, 0, st, &mut out);
    out
}

fn write_json(v: &serde_json::Value, depth: usize, st: &Styles, out: &mut String) {
    use serde_json::Value;
    let pad = "  ".repeat(depth + 1);
    let end = "  ".repeat(depth);
    let paint = |s: anstyle::Style, text: &str| format!("{s}{}{s:#}", displayable(text));
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push_str("{\n");
            for (i, (k, val)) in m.iter().enumerate() {
                out.push_str(&pad);
                out.push_str(&paint(st.tool, &Value::String(k.clone()).to_string()));
                out.push_str(": ");
                write_json(val, depth + 1, st, out);
                out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
            }
            out.push_str(&end);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, val) in a.iter().enumerate() {
                out.push_str(&pad);
                write_json(val, depth + 1, st, out);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
            out.push_str(&end);
            out.push(']');
        }
        Value::String(_) => out.push_str(&paint(st.ok, &v.to_string())),
        Value::Number(_) | Value::Bool(_) | Value::Null => {
            out.push_str(&paint(st.warn, &v.to_string()));
        }
        other => out.push_str(&other.to_string()),
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn last_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
}

impl<O: Write, E: Write> Printer<O, E> {
    pub fn new(out: O, err: E, mode: PrintMode, color: bool) -> Self {
        Self {
            out,
            err,
            mode,
            st: Styles::new(color),
            line_start: true,
            in_reasoning: false,
            turn_usage: Usage::default(),
            last_tps: None,
            structured: false,
            spin: false,
            spinning: None,
            mid_answer: false,
            proposed: None,
        }
    }

    /// With a spinner (elapsed time, the prompt's progress) on stderr while
    /// a request waits for its first token: for a terminal only.
    pub fn with_spinner(mut self, on: bool) -> Self {
        self.spin = on;
        self
    }

    /// Draws the spinner for a request that has generated nothing yet;
    /// true when the event was the spinner's.
    fn spinner(&mut self, ev: &AgentEvent) -> bool {
        let AgentEvent::Generating {
            tokens,
            prompt,
            queued,
            ..
        } = ev
        else {
            return false;
        };
        if *tokens > 0 || !self.spin || !self.line_start || self.mid_answer {
            self.clear_spinner();
            return true;
        }
        let (since, frame) = self.spinning.unwrap_or((std::time::Instant::now(), 0));
        self.spinning = Some((since, frame + 1));
        let what = wait_words(*prompt, *queued);
        let dim = self.st.dim;
        let _ = write!(
            self.err,
            "\r\x1b[2K{dim}{} {} s · {what}{dim:#}",
            FRAMES[frame % FRAMES.len()],
            since.elapsed().as_secs()
        );
        let _ = self.err.flush();
        true
    }

    fn clear_spinner(&mut self) {
        if self.spinning.take().is_some() {
            let _ = write!(self.err, "\r\x1b[2K");
        }
    }

    pub fn into_parts(self) -> (O, E) {
        (self.out, self.err)
    }

    fn headless(&self) -> bool {
        matches!(self.mode, PrintMode::Headless { .. })
    }

    /// The writer for tool lines and receipts.
    fn side(&mut self) -> &mut dyn Write {
        if self.headless() {
            &mut self.err
        } else {
            &mut self.out
        }
    }

    fn ensure_line(&mut self) {
        if !self.line_start {
            let _ = writeln!(self.side());
            self.line_start = true;
            if !self.headless() {
                self.mid_answer = false;
            }
        }
        if self.in_reasoning {
            self.in_reasoning = false;
        }
    }

    fn side_line(&mut self, style: Style, text: &str) {
        self.ensure_line();
        let text = displayable(text);
        let _ = writeln!(self.side(), "{style}{text}{style:#}");
    }

    fn note(&mut self, style: Style, text: &str) {
        self.ensure_line();
        let text = displayable(text);
        let _ = writeln!(self.err, "{style}mm: {text}{style:#}");
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// Answers are JSON of a declared shape (`structuredOutput`).
    pub fn set_structured(&mut self, on: bool) {
        self.structured = on;
    }

    /// Streams answer text where the mode wants it.
    fn answer_text(&mut self, text: &str) {
        if self.structured {
            // Shown when the turn ends, checked and whole.
            return;
        }
        let text = displayable(text);
        match self.mode {
            PrintMode::Headless { stream: false } => {}
            PrintMode::Headless { stream: true } => {
                if self.in_reasoning {
                    let _ = writeln!(self.err);
                    self.in_reasoning = false;
                }
                let _ = write!(self.out, "{text}");
                if !text.is_empty() {
                    self.mid_answer = !text.ends_with('\n');
                }
            }
            PrintMode::Repl | PrintMode::Replay => {
                if self.in_reasoning {
                    let _ = writeln!(self.out);
                    self.in_reasoning = false;
                }
                let _ = write!(self.out, "{text}");
                self.line_start = text.ends_with('\n');
                if !text.is_empty() {
                    self.mid_answer = !text.ends_with('\n');
                }
            }
        }
    }

    fn reasoning(&mut self, text: &str) {
        if self.mode == (PrintMode::Headless { stream: false }) {
            return;
        }
        let text = displayable(text);
        let dim = self.st.dim;
        let w: &mut dyn Write = if self.headless() {
            &mut self.err
        } else {
            &mut self.out
        };
        let _ = write!(w, "{dim}{text}{dim:#}");
        self.in_reasoning = true;
        if !self.headless() {
            self.line_start = text.ends_with('\n');
        }
    }

    /// The steps of the plan the last plan-mode turn proposed, once.
    pub fn take_proposed(&mut self) -> Option<Vec<String>> {
        self.proposed.take()
    }

    pub fn print(&mut self, ev: &AgentEvent) {
        if self.spinner(ev) {
            return;
        }
        self.clear_spinner();
        match ev {
            AgentEvent::TurnStarted { prompt, .. } => {
                self.turn_usage = Usage::default();
                self.mid_answer = false;
                self.last_tps = None;
                if self.mode == PrintMode::Replay {
                    let p = self.st.prompt;
                    self.ensure_line();
                    let prompt = displayable(prompt);
                    let _ = writeln!(self.out, "\n{p}› {prompt}{p:#}");
                }
            }
            AgentEvent::Token { text, .. } => self.answer_text(text),
            AgentEvent::Reasoning { text, .. } => self.reasoning(text),
            AgentEvent::ToolCallRunning { name, summary, .. } => {
                let s = self.st.tool;
                self.side_line(s, &format!("  ▸ {name} {summary}"));
            }
            AgentEvent::ToolCallFinished {
                name,
                summary,
                status,
                output,
                ..
            } => self.tool_finished(name, summary, *status, output),
            AgentEvent::ToolProgress { text, .. } => {
                // An asked agent's steps, indented under its card.
                let s = self.st.dim;
                self.side_line(s, &format!("    │ {text}"));
            }
            AgentEvent::ToolChild { session, .. } => {
                // Where the helper's own transcript is, for a look later.
                let s = self.st.dim;
                self.side_line(s, &format!("    │ its session: mm -show {session}"));
            }
            AgentEvent::FileChanged { change, .. } => {
                let s = self.st.ok;
                let line = format!(
                    "    ✎ {} (+{} -{})",
                    change.path, change.added, change.removed
                );
                self.side_line(s, &line);
            }
            AgentEvent::ApprovalRequested { request } => self.approval(request),
            AgentEvent::Notice { level, text, .. } => {
                let s = match level {
                    Level::Info => self.st.dim,
                    Level::Warning => self.st.warn,
                    Level::Error => self.st.err,
                };
                self.note(s, text);
            }
            AgentEvent::Compacted {
                replaced,
                tokens_before,
                tokens_after,
                auto,
                ..
            } => {
                let text = format!(
                    "{} compacted: {replaced} earlier message{} sent as a summary from here on (~{tokens_before} → ~{tokens_after} tokens; the log keeps them)",
                    if *auto {
                        "near the window,"
                    } else {
                        "/compact:"
                    },
                    if *replaced == 1 { "" } else { "s" },
                );
                self.note(self.st.dim, &text);
            }
            AgentEvent::Plan {
                steps, approved, ..
            } => {
                if !approved {
                    self.proposed = Some(steps.iter().map(|s| s.step.clone()).collect());
                }
                let head = if *approved { "plan" } else { "plan proposed" };
                let s = self.st.prompt;
                self.ensure_line();
                let _ = writeln!(self.side(), "{s}mm: {head}{s:#}");
                for (i, step) in steps.iter().enumerate() {
                    let line = format!(
                        "  {} {}. {}",
                        step.status.mark(),
                        i + 1,
                        displayable(step.step.trim())
                    );
                    let _ = writeln!(self.side(), "{line}");
                }
            }
            AgentEvent::PlanMode { on: true } => {
                self.note(
                    self.st.dim,
                    "plan mode: read-only until the plan is approved",
                );
            }
            AgentEvent::Usage { stats, .. } => {
                self.turn_usage.add(&stats.usage);
                if stats.tokens_per_second.is_some() {
                    self.last_tps = stats.tokens_per_second;
                }
            }
            AgentEvent::Receipt {
                written,
                commands,
                notes,
                ..
            } => {
                let text = crate::protocol::receipt_text(written, *commands, notes);
                let text = displayable(&text);
                let s = self.st.prompt;
                self.ensure_line();
                let _ = writeln!(self.side(), "{s}mm: {text}{s:#}");
            }
            AgentEvent::TurnFinished {
                outcome,
                answer,
                error,
                ..
            } => self.turn_finished(*outcome, answer, error.as_deref()),
            _ => {}
        }
    }

    /// An approval question: the command (every line of a multi-line one,
    /// numbered) or the change as a diff, then what answering covers.
    fn approval(&mut self, request: &crate::protocol::ApprovalRequest) {
        let s = self.st.warn;
        let text = match &request.kind {
            ApprovalKind::Exec {
                command,
                reason,
                scope,
                ..
            } if command.contains('\n') => {
                // Every line that runs, numbered, and the question
                // last: blank lines cannot push the first one out of
                // sight (`touch x` + 60 newlines + `git status`).
                let lines: Vec<&str> = command.lines().collect();
                let mut text = String::new();
                for (i, l) in lines.iter().enumerate() {
                    if !l.trim().is_empty() {
                        text.push_str(&format!("    {:>3}│ {l}\n", i + 1));
                    }
                }
                let blank = lines.iter().filter(|l| l.trim().is_empty()).count();
                text.push_str(&format!(
                    "  ? run the {}-line command above{}? ({reason}; always = {scope})",
                    lines.len(),
                    if blank > 0 {
                        format!(" ({blank} blank lines not shown)")
                    } else {
                        String::new()
                    }
                ));
                text
            }
            ApprovalKind::Exec {
                command,
                reason,
                scope,
                ..
            } => {
                format!("  ? run `{command}`? ({reason}; always = {scope})")
            }
            ApprovalKind::Edit { change } => {
                self.print_diff(&change.before, &change.after);
                format!(
                    "  ? change {} (+{} -{})?",
                    change.path, change.added, change.removed
                )
            }
        };
        self.side_line(s, &text);
    }

    /// A coloured unified diff of a change, for approvals.
    fn print_diff(&mut self, before: &str, after: &str) {
        for hunk in crate::diff::hunks(before, after, crate::diff::CONTEXT) {
            let d = self.st.dim;
            self.side_line(d, &format!("    {}", hunk.header()));
            for line in &hunk.lines {
                let (style, mark) = match line.kind {
                    crate::diff::LineKind::Added => (self.st.ok, '+'),
                    crate::diff::LineKind::Removed => (self.st.err, '-'),
                    crate::diff::LineKind::Context => (self.st.dim, ' '),
                };
                self.side_line(style, &format!("    {mark}{}", line.text()));
            }
        }
    }

    fn tool_finished(&mut self, name: &str, summary: &str, status: ToolStatus, output: &str) {
        let (style, line) = match status {
            ToolStatus::Ok if name == ToolName::Bash => {
                (self.st.dim, last_line(output).to_string())
            }
            ToolStatus::Ok => return,
            ToolStatus::Error if name == ToolName::Bash => {
                (self.st.err, last_line(output).to_string())
            }
            ToolStatus::Error => (self.st.err, first_line(output).to_string()),
            ToolStatus::Refused | ToolStatus::NotRun => {
                (self.st.warn, first_line(output).to_string())
            }
        };
        if summary.is_empty() {
            // Answered without running: no "running" line came before.
            let t = self.st.tool;
            self.side_line(t, &format!("  ▸ {name}"));
        }
        let cut: String = line.chars().take(200).collect();
        self.side_line(style, &format!("    {cut}"));
    }

    fn turn_finished(&mut self, outcome: Outcome, answer: &str, error: Option<&str>) {
        if self.structured {
            match self.mode {
                // stdout: the JSON and a newline, or nothing; the front
                // end says the error.
                PrintMode::Headless { .. } => {
                    if outcome == Outcome::Done && !answer.trim().is_empty() {
                        let _ = writeln!(self.out, "{}", displayable(answer.trim()));
                    }
                    return;
                }
                PrintMode::Repl | PrintMode::Replay => {
                    self.ensure_line();
                    if outcome == Outcome::Done {
                        let json = pretty_json(answer, &self.st);
                        let _ = writeln!(self.out, "{json}");
                        self.line_start = true;
                    }
                }
            }
        }
        match self.mode {
            _ if self.structured => {}
            PrintMode::Headless { stream: false } => {
                if !answer.is_empty() {
                    let _ = writeln!(self.out, "{}", displayable(answer.trim_end()));
                }
            }
            PrintMode::Headless { stream: true } => {
                let _ = writeln!(self.out);
            }
            PrintMode::Repl | PrintMode::Replay => self.ensure_line(),
        }
        let e = self.st.err;
        let w = self.st.warn;
        match outcome {
            Outcome::Done => {}
            Outcome::Failed => {
                self.note(e, &format!("error: {}", error.unwrap_or("the turn failed")));
            }
            Outcome::Budget => self.note(w, error.unwrap_or("the round budget is used up")),
            Outcome::Truncated => self.note(
                w,
                "the answer was cut by the completion token limit (max_tokens)",
            ),
            Outcome::Cancelled => self.note(w, "cancelled"),
        }
        if self.mode == PrintMode::Repl {
            let u = self.turn_usage;
            if u.prompt + u.completion > 0 {
                let cached = (u.cached * 100)
                    .checked_div(u.prompt)
                    .map(|pct| format!(" ({pct}% cached)"))
                    .unwrap_or_default();
                let speed = self
                    .last_tps
                    .map(|t| format!(" · {t:.1} tok/s"))
                    .unwrap_or_default();
                let d = self.st.dim;
                let _ = writeln!(
                    self.out,
                    "{d}[{} in{cached} · {} out{speed}]{d:#}",
                    u.prompt, u.completion
                );
            }
        }
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolStatus;
    use std::sync::Arc;

    fn run(mode: PrintMode, events: &[AgentEvent]) -> (String, String) {
        let mut p = Printer::new(Vec::new(), Vec::new(), mode, false);
        for e in events {
            p.print(e);
        }
        let (o, e) = p.into_parts();
        (String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap())
    }

    #[test]
    fn a_spinner_shows_the_wait_for_the_first_token_and_goes_before_output() {
        let waiting = |prompt| AgentEvent::Generating {
            turn: 1,
            tokens: 0,
            tokens_per_second: None,
            prompt,
            queued: false,
        };
        let events = [
            AgentEvent::TurnStarted {
                turn: 1,
                prompt: "hi".into(),
            },
            waiting(None),
            waiting(Some((500, 19000))),
            waiting(Some((12000, 19000))),
            AgentEvent::Token {
                turn: 1,
                text: "Hel".into(),
            },
            // Mid-line: no spinner over the answer.
            waiting(None),
            AgentEvent::Token {
                turn: 1,
                text: "lo.\n".into(),
            },
        ];
        let mut p = Printer::new(Vec::new(), Vec::new(), PrintMode::Repl, false).with_spinner(true);
        for e in &events {
            p.print(e);
        }
        let (o, e) = p.into_parts();
        let (o, e) = (String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap());
        assert_eq!(o, "Hello.\n");
        assert!(e.contains("⠋ 0 s · waiting for the model"), "{e:?}");
        assert!(e.contains("reading 19000 prompt tokens"), "{e:?}");
        assert!(e.contains("prompt 12000/19000"), "{e:?}");
        // Cleared before the answer, and not drawn again mid-line.
        assert!(e.ends_with("prompt 12000/19000\r\x1b[2K"), "{e:?}");
        // Off (not a terminal): nothing.
        let (_, e) = run(PrintMode::Repl, &events);
        assert_eq!(e, "");
    }

    fn turn() -> Vec<AgentEvent> {
        vec![
            AgentEvent::TurnStarted {
                turn: 1,
                prompt: "fix it".into(),
            },
            AgentEvent::Token {
                turn: 1,
                text: "Looking.".into(),
            },
            AgentEvent::ToolCallRunning {
                turn: 1,
                call_id: "a".into(),
                name: "bash".into(),
                summary: "cargo test".into(),
                arguments: "{}".into(),
            },
            AgentEvent::ToolCallFinished {
                turn: 1,
                call_id: "a".into(),
                name: "bash".into(),
                summary: "cargo test".into(),
                status: ToolStatus::Ok,
                output: Arc::from("ok\n[exit code 0, 0.1s]"),
            },
            AgentEvent::Token {
                turn: 1,
                text: "Fixed.".into(),
            },
            AgentEvent::Receipt {
                turn: 1,
                written: vec!["a.rs".into()],
                commands: 0,
                notes: Vec::new(),
            },
            AgentEvent::TurnFinished {
                turn: 1,
                outcome: Outcome::Done,
                answer: "Fixed.".into(),
                error: None,
            },
        ]
    }

    #[test]
    fn headless_keeps_stdout_for_the_answer() {
        let (out, err) = run(PrintMode::Headless { stream: false }, &turn());
        assert_eq!(out, "Fixed.\n");
        assert!(err.contains("▸ bash cargo test"), "{err}");
        assert!(err.contains("mm: wrote a.rs"), "{err}");
    }

    #[test]
    fn the_repl_shows_everything_in_order() {
        let (out, _) = run(PrintMode::Repl, &turn());
        let expected =
            "Looking.\n  ▸ bash cargo test\n    [exit code 0, 0.1s]\nFixed.\nmm: wrote a.rs\n";
        assert_eq!(out, expected);
    }

    #[test]
    fn control_bytes_from_the_model_and_tools_never_reach_the_terminal() {
        let spoof = "\x1b[2K\r  allow? [y]es";
        let events = vec![
            AgentEvent::Token {
                turn: 1,
                text: format!("answer{spoof}"),
            },
            AgentEvent::ToolCallRunning {
                turn: 1,
                call_id: "a".into(),
                name: "bash".into(),
                summary: format!("ls{spoof}"),
                arguments: "{}".into(),
            },
            AgentEvent::ApprovalRequested {
                request: crate::protocol::ApprovalRequest {
                    id: 1,
                    turn: 1,
                    call_id: "a".into(),
                    kind: ApprovalKind::Exec {
                        command: format!("rm x{spoof}"),
                        reason: "r".into(),
                        always_key: "=rm x".into(),
                        scope: "this exact command".into(),
                    },
                },
            },
            AgentEvent::Notice {
                turn: Some(1),
                level: Level::Warning,
                text: format!("n{spoof}"),
            },
        ];
        for mode in [PrintMode::Repl, PrintMode::Headless { stream: true }] {
            let (out, err) = run(mode, &events);
            for text in [&out, &err] {
                assert!(!text.contains('\x1b'), "{text:?}");
                assert!(!text.contains('\r'), "{text:?}");
            }
            assert!(out.contains("^[[2K^M") || err.contains("^[[2K^M"));
        }
    }

    #[test]
    fn replay_prints_the_prompt() {
        let (out, _) = run(PrintMode::Replay, &turn());
        assert!(out.starts_with("\n› fix it\nLooking."), "{out}");
    }
}
