//! One transcript cell (a prompt, an answer, reasoning, a tool card, a
//! notice, a receipt) and its rendering to lines for a width, cached until
//! the cell or the width changes; and the welcome shown on an empty
//! transcript.

use std::cell::RefCell;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::protocol::{Level, Outcome, ToolStatus, TurnId};
use crate::tui::render::markdown;
use crate::tui::render::wrap::{Logical, wrap_all};
use crate::tui::theme::Theme;

/// Lines of a collapsed tool output, and of reasoning while it streams.
const PREVIEW_LINES: usize = 4;
/// A prompt longer than this many lines is folded in the transcript…
const FOLD_PROMPT_LINES: usize = 12;
/// …to this many, and a line that says how large it is.
const FOLD_PROMPT_SHOWN: usize = 4;
/// And the last lines of it.
const FOLD_PROMPT_TAIL: usize = 2;

/// 1500 as "1,500".
pub(super) fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size in bytes as people read it: "812 bytes", "146 KB", "2.1 MB".
pub(super) fn size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{} KB", (bytes + 500) / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ToolState {
    /// The model is still writing the call.
    Writing,
    Waiting,
    Running(Instant),
    Done(ToolStatus, Option<f64>),
}

#[derive(Clone, Debug)]
pub enum CellKind {
    User(String),
    Answer {
        text: String,
        done: bool,
    },
    Reasoning {
        text: String,
        done: bool,
    },
    Tool {
        call_id: String,
        name: String,
        summary: String,
        state: ToolState,
        output: String,
        /// Bytes of arguments streamed so far (while writing).
        arg_bytes: usize,
        /// The end of the arguments streamed so far, shown while writing.
        args_tail: String,
        /// What an asked agent did, line by line (collapsed to the last).
        steps: Vec<String>,
        /// The helper's own session (`task`, `ask_agent`): its transcript.
        child: Option<String>,
    },
    Notice(Level, String),
    /// The conversation was compacted: the summary shows when expanded.
    Compacted {
        replaced: usize,
        summary: String,
        before: u64,
        after: u64,
        auto: bool,
    },
    Receipt {
        written: Vec<String>,
        commands: u32,
        notes: Vec<String>,
    },
    /// A plan: proposed (waiting for the user) or being carried out.
    Plan {
        steps: Vec<crate::protocol::PlanStep>,
        approved: bool,
    },
    TurnEnd {
        outcome: Outcome,
        error: Option<String>,
    },
}

impl CellKind {
    /// The cell as text to copy: an answer as the model wrote it (markdown),
    /// a tool call as its line and output.
    pub fn plain_text(&self) -> String {
        match self {
            CellKind::User(t) => t.clone(),
            CellKind::Answer { text, .. } | CellKind::Reasoning { text, .. } => text.clone(),
            CellKind::Tool {
                name,
                summary,
                output,
                ..
            } => format!("{name} {summary}\n{output}"),
            CellKind::Notice(_, t) => t.clone(),
            CellKind::Compacted { summary, .. } => summary.clone(),
            CellKind::Receipt {
                written,
                commands,
                notes,
            } => crate::protocol::receipt_text(written, *commands, notes),
            CellKind::Plan { steps, .. } => steps
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{}. {}", i + 1, s.step))
                .collect::<Vec<_>>()
                .join("\n"),
            CellKind::TurnEnd { outcome, error } => match error {
                Some(e) => format!("{outcome:?}: {e}"),
                None => format!("{outcome:?}"),
            },
        }
    }
}

/// A cell's lines for (width, version, selected).
type Rendered = (u16, u64, bool, Vec<Line<'static>>);

pub struct Cell {
    pub turn: TurnId,
    pub kind: CellKind,
    pub expanded: bool,
    version: u64,
    cache: RefCell<Option<Rendered>>,
    /// A streaming answer: (bytes of finished blocks, their lines in the cache).
    stream: RefCell<Option<(usize, usize)>>,
}

impl Cell {
    pub(super) fn new(turn: TurnId, kind: CellKind) -> Self {
        Cell {
            turn,
            kind,
            expanded: false,
            version: 0,
            cache: RefCell::new(None),
            stream: RefCell::new(None),
        }
    }

    pub(super) fn touch(&mut self) {
        self.version += 1;
    }

    /// The cell's lines for `width`, from the cache when nothing changed.
    pub(super) fn lines(
        &self,
        width: u16,
        theme: &Theme,
        selected: bool,
    ) -> std::cell::Ref<'_, Vec<Line<'static>>> {
        let fresh = matches!(&*self.cache.borrow(), Some((w, v, s, _)) if *w == width && *v == self.version && *s == selected);
        if !fresh {
            match &self.kind {
                CellKind::Answer { text, done: false } => {
                    self.stream_into_cache(text, width, theme, selected);
                }
                _ => {
                    let lines = wrap_all(&self.logical(theme, selected), width as usize);
                    *self.cache.borrow_mut() = Some((width, self.version, selected, lines));
                }
            }
        }
        std::cell::Ref::map(self.cache.borrow(), |c| match c {
            Some((_, _, _, l)) => l,
            None => unreachable_empty(),
        })
    }

    /// An answer still streaming: the blocks before the last blank line
    /// outside a code fence are rendered once and kept in the cache; each
    /// frame only renders the new blocks and the tail, so a frame costs the
    /// same for a long answer as for a short one. The finished answer is
    /// rendered whole.
    fn stream_into_cache(&self, text: &str, width: u16, th: &Theme, selected: bool) {
        let mut cache = self.cache.borrow_mut();
        let mut st = self.stream.borrow_mut();
        let reusable =
            matches!(&*cache, Some((w, _, s, _)) if *w == width && *s == selected) && st.is_some();
        if !reusable {
            *cache = Some((width, self.version, selected, Vec::new()));
            *st = Some((0, 0));
        }
        let (Some((_, version, _, lines)), Some((boundary, prefix_len))) =
            (cache.as_mut(), st.as_mut())
        else {
            return;
        };
        *version = self.version;
        lines.truncate(*prefix_len);
        let render = |part: &str, lines: &mut Vec<Line<'static>>| {
            if part.trim().is_empty() {
                return;
            }
            if !lines.is_empty() {
                let marker = if selected {
                    Span::styled("▌", Style::new().fg(th.accent))
                } else {
                    Span::raw(" ")
                };
                lines.push(Line::from(marker));
            }
            let kind = CellKind::Answer {
                text: part.to_string(),
                done: true,
            };
            lines.extend(wrap_all(
                &Cell::new(self.turn, kind).logical(th, selected),
                width as usize,
            ));
        };
        let next = *boundary + stable_boundary(&text[*boundary..]);
        if next > *boundary {
            render(&text[*boundary..next], lines);
            *boundary = next;
            *prefix_len = lines.len();
        }
        render(&text[*boundary..], lines);
    }

    pub(super) fn height(&self, width: u16, theme: &Theme, selected: bool) -> usize {
        self.lines(width, theme, selected).len()
    }

    /// A prompt: folded to its opening, its size and its last lines when
    /// it is a long paste, until the cell is expanded.
    fn user_lines(&self, text: &str, th: &Theme) -> Vec<Logical> {
        let dim = Style::new().fg(th.dim);
        let st = Style::new().fg(th.accent).add_modifier(Modifier::BOLD);
        let mut v = vec![Logical::word(Line::default())];
        // A long paste shows its opening and its size until the
        // cell is expanded (Enter on it).
        let total = text.lines().count();
        let folded = !self.expanded && total > FOLD_PROMPT_LINES;
        // Folded: the opening and the last lines (a question typed
        // after a paste is there), the size between them.
        let (shown, tail) = if folded {
            (FOLD_PROMPT_SHOWN, FOLD_PROMPT_TAIL)
        } else {
            (total, 0)
        };
        let line_of = |i: usize, line: &str| {
            let prefix = if i == 0 { "› " } else { "  " };
            let mut l = Logical::word(Line::from(vec![
                Span::styled(prefix, st),
                Span::styled(
                    line.to_string(),
                    Style::new().fg(th.text).add_modifier(Modifier::BOLD),
                ),
            ]));
            l.hang = vec![Span::raw("  ")];
            l
        };
        for (i, line) in text.lines().take(shown).enumerate() {
            v.push(line_of(i, line));
        }
        if folded {
            v.push(hung(Line::styled(
                format!(
                    "  [pasted {} lines, {}; {} more · Enter on it expands]",
                    group(total),
                    size(text.len()),
                    group(total - shown - tail),
                ),
                dim,
            )));
            for (i, line) in text.lines().enumerate().skip(total - tail) {
                v.push(line_of(i, line));
            }
        }
        v
    }

    /// A model's thinking: its last lines while it streams, one line when
    /// done, all of it expanded.
    fn reasoning_lines(&self, text: &str, done: bool, th: &Theme) -> Vec<Logical> {
        let dim = Style::new().fg(th.dim);
        let st = dim.add_modifier(Modifier::ITALIC);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if self.expanded {
            lines
                .iter()
                .map(|l| Logical::word(Line::styled(format!("┊ {l}"), st)))
                .collect()
        } else if done {
            let first = lines.first().copied().unwrap_or("");
            vec![Logical::chars(Line::styled(
                format!("┊ thought ({} lines): {first}", lines.len()),
                st,
            ))]
        } else {
            let start = lines.len().saturating_sub(PREVIEW_LINES);
            lines[start..]
                .iter()
                .map(|l| Logical::word(Line::styled(format!("┊ {l}"), st)))
                .collect()
        }
    }

    /// A compaction: what it replaced, and the summary when expanded.
    fn compacted_lines(
        &self,
        (replaced, before, after, auto): (usize, u64, u64, bool),
        summary: &str,
        th: &Theme,
    ) -> Vec<Logical> {
        let dim = Style::new().fg(th.dim);
        let head = format!(
            "⇊ {} compacted: {replaced} earlier message{} sent as a summary from here on (~{before} → ~{after} tokens; the log keeps them)",
            if auto {
                "near the window,"
            } else {
                "/compact:"
            },
            if replaced == 1 { "" } else { "s" },
        );
        let mut v = vec![Logical::word(Line::styled(
            head,
            Style::new().fg(th.accent),
        ))];
        if self.expanded {
            v.extend(
                summary
                    .lines()
                    .map(|l| Logical::word(Line::styled(format!("┊ {l}"), dim))),
            );
        } else {
            v.push(Logical::word(Line::styled(
                "┊ the summary: select this cell and expand it",
                dim,
            )));
        }
        v
    }

    fn logical(&self, th: &Theme, selected: bool) -> Vec<Logical> {
        let marker = if selected {
            Span::styled("▌", Style::new().fg(th.accent))
        } else {
            Span::raw(" ")
        };
        let with_marker = |mut lines: Vec<Logical>| {
            for l in &mut lines {
                l.line.spans.insert(0, marker.clone());
                l.hang.insert(0, marker.clone());
            }
            lines
        };
        let out = match &self.kind {
            CellKind::User(text) => self.user_lines(text, th),
            CellKind::Answer { text, .. } => markdown::render(&json_shown(text), th),
            CellKind::Reasoning { text, done } => self.reasoning_lines(text, *done, th),
            CellKind::Tool {
                name,
                summary,
                state,
                output,
                arg_bytes,
                args_tail,
                steps,
                child,
                ..
            } => tool_lines(
                th,
                name,
                summary,
                state,
                output,
                (*arg_bytes, args_tail),
                (steps, child.as_deref(), self.expanded),
            ),
            CellKind::Notice(level, text) => {
                let c = match level {
                    Level::Info => th.dim,
                    Level::Warning => th.warning,
                    Level::Error => th.error,
                };
                // One row a line: a list in a notice keeps its breaks, and
                // a line that wraps goes on under its own start (`/stats`'
                // indented figures), not at the edge.
                text.lines()
                    .enumerate()
                    .map(|(i, l)| {
                        let prefix = if i == 0 { "mm: " } else { "    " };
                        let indent = 4 + (l.len() - l.trim_start().len()).min(20);
                        let mut row =
                            Logical::word(Line::styled(format!("{prefix}{l}"), Style::new().fg(c)));
                        row.hang = vec![Span::raw(" ".repeat(indent))];
                        row
                    })
                    .collect()
            }
            CellKind::Compacted {
                replaced,
                summary,
                before,
                after,
                auto,
            } => self.compacted_lines((*replaced, *before, *after, *auto), summary, th),
            CellKind::Receipt {
                written,
                commands,
                notes,
            } => {
                let text = crate::protocol::receipt_text(written, *commands, notes);
                let c = if written.is_empty() { th.dim } else { th.added };
                vec![Logical::word(Line::styled(
                    format!("■ {text}"),
                    Style::new().fg(c).add_modifier(Modifier::BOLD),
                ))]
            }
            CellKind::Plan { steps, approved } => plan_lines(steps, *approved, th),
            CellKind::TurnEnd { outcome, error } => {
                let (c, text) = match outcome {
                    Outcome::Done => return Vec::new(),
                    Outcome::Failed => (
                        th.error,
                        format!("error: {}", error.as_deref().unwrap_or("the turn failed")),
                    ),
                    Outcome::Budget => (
                        th.warning,
                        error
                            .clone()
                            .unwrap_or_else(|| "the round budget is used up".into()),
                    ),
                    Outcome::Truncated => (
                        th.warning,
                        "the answer was cut by the completion token limit".into(),
                    ),
                    Outcome::Cancelled => (th.warning, "cancelled".into()),
                };
                vec![Logical::word(Line::styled(
                    format!("mm: {text}"),
                    Style::new().fg(c),
                ))]
            }
        };
        with_marker(out)
    }
}

/// A plan: its head (proposed, or how far it is) and its steps.
fn plan_lines(steps: &[crate::protocol::PlanStep], approved: bool, th: &Theme) -> Vec<Logical> {
    let dim = Style::new().fg(th.dim);
    let done = steps
        .iter()
        .filter(|s| s.status == crate::protocol::StepStatus::Completed)
        .count();
    let head = if approved {
        format!("☰ plan · {done} of {} done", steps.len())
    } else {
        "☰ plan proposed · Enter carries it out · e edits it · Esc sets it aside".to_string()
    };
    let mut v = vec![Logical::word(Line::styled(
        head,
        Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
    ))];
    for (i, step) in steps.iter().enumerate() {
        let style = match step.status {
            crate::protocol::StepStatus::Completed => dim,
            crate::protocol::StepStatus::InProgress => Style::new().add_modifier(Modifier::BOLD),
            crate::protocol::StepStatus::Pending => Style::new(),
        };
        let text = crate::untrusted::displayable(step.step.trim());
        v.push(Logical::word(Line::styled(
            format!("{} {}. {text}", step.status.mark(), i + 1),
            style,
        )));
    }
    v
}

/// The end of the last complete block: the last blank line that is not
/// inside a code fence.
fn stable_boundary(text: &str) -> usize {
    let mut in_fence = false;
    let mut boundary = 0;
    let mut pos = 0;
    let mut prev_blank = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let blank = trimmed.is_empty() && line.ends_with('\n');
        pos += line.len();
        if blank && !in_fence && !prev_blank {
            boundary = pos;
        }
        prev_blank = blank;
    }
    boundary
}

/// An answer that is a JSON object or array, whole, shown pretty-printed
/// in a highlighted block; any other text as it is.
fn json_shown(text: &str) -> std::borrow::Cow<'_, str> {
    let t = text.trim();
    if (t.starts_with('{') || t.starts_with('['))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(t)
        && let Ok(pretty) = serde_json::to_string_pretty(&v)
    {
        return std::borrow::Cow::Owned(format!("```json\n{pretty}\n```\n"));
    }
    std::borrow::Cow::Borrowed(text)
}

fn unreachable_empty() -> &'static Vec<Line<'static>> {
    static EMPTY: Vec<Line<'static>> = Vec::new();
    &EMPTY
}

/// A note under a cell, wrapped between words with its indent kept
/// (a session id or "Enter" is never cut in two).
fn hung(line: Line<'static>) -> Logical {
    let mut l = Logical::word(line);
    l.hang = vec![Span::raw("    ")];
    l
}

fn tool_lines(
    th: &Theme,
    name: &str,
    summary: &str,
    state: &ToolState,
    output: &str,
    (arg_bytes, args_tail): (usize, &str),
    (steps, child, expanded): (&[String], Option<&str>, bool),
) -> Vec<Logical> {
    let dim = Style::new().fg(th.dim);
    let (icon, status, colour) = match state {
        ToolState::Writing => ("…", format!("writing the call ({arg_bytes} bytes)"), th.dim),
        ToolState::Waiting => ("?", "waiting for approval".to_string(), th.warning),
        ToolState::Running(start) => (
            "▸",
            format!("running {:.1}s", start.elapsed().as_secs_f64()),
            th.accent,
        ),
        ToolState::Done(ToolStatus::Ok, Some(secs)) => ("✓", format!("{secs:.1}s"), th.added),
        // A replayed call: how long it took is not known.
        ToolState::Done(ToolStatus::Ok, None) => ("✓", String::new(), th.added),
        ToolState::Done(ToolStatus::Error, _) => ("✗", "error".to_string(), th.error),
        ToolState::Done(ToolStatus::Refused, _) => ("⊘", "refused".to_string(), th.warning),
        ToolState::Done(ToolStatus::NotRun, _) => ("⊘", "not run".to_string(), th.warning),
    };
    // Between words: "waiting for approval" and a role's name are never
    // cut in two (a long word without a space still is, at the edge).
    let mut header = Logical::word(Line::from(vec![
        Span::styled(
            format!("{icon} "),
            Style::new().fg(colour).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            name.to_string(),
            Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!(" {summary}"), Style::new().fg(th.text)),
        Span::styled(
            if status.is_empty() {
                String::new()
            } else {
                format!("  {status}")
            },
            Style::new().fg(colour),
        ),
    ]));
    header.hang = vec![Span::raw("  ")];
    let mut v = vec![header];
    if *state == ToolState::Writing && !args_tail.is_empty() {
        // The arguments as they arrive, on one line: a call that takes
        // minutes shows what it is writing.
        let flat: String = args_tail
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let cut = if arg_bytes > args_tail.len() {
            "…"
        } else {
            ""
        };
        v.push(Logical::chars(Line::styled(
            format!("  │ {cut}{flat}"),
            dim,
        )));
    }
    // An asked agent's steps, nested: all of them when expanded, else
    // how many and the latest.
    if let Some(last) = steps.last() {
        if expanded || steps.len() == 1 {
            for s in steps {
                v.push(hung(Line::styled(format!("  ↳ {s}"), dim)));
            }
        } else {
            v.push(hung(Line::styled(
                format!("  ↳ {} steps · {last}", steps.len()),
                dim,
            )));
        }
    }
    if let Some(id) = child {
        v.push(hung(Line::styled(
            format!("  ↳ its own transcript (session {id}): select this card and press o"),
            dim,
        )));
    }
    let lines: Vec<&str> = output.lines().collect();
    if lines.is_empty() {
        return v;
    }
    let shown = if expanded {
        lines.len().min(2000)
    } else {
        lines.len().min(PREVIEW_LINES)
    };
    for l in &lines[..shown] {
        let mut line = Logical::word(Line::styled(format!("  │ {l}"), dim));
        line.hang = vec![Span::styled("  │ ", dim)];
        v.push(line);
    }
    if shown < lines.len() {
        v.push(Logical::chars(Line::styled(
            format!(
                "  └ {} more lines (select and Enter to expand)",
                lines.len() - shown
            ),
            dim,
        )));
    }
    v
}

pub(super) fn welcome(area: Rect, buf: &mut Buffer, th: &Theme, structured: bool) {
    let dim = Style::new().fg(th.dim);
    let text = Style::new().fg(th.text);
    let mut lines = vec![
        Line::styled(
            format!("mm {}", env!("CARGO_PKG_VERSION")),
            Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
        ),
        Line::default(),
    ];
    if structured {
        lines.push(Line::styled(
            "tools: none (structured output: JSON answers)",
            text,
        ));
        lines.push(Line::styled(
            "Every answer is JSON of the shape the agent file declares, checked before it is shown.",
            dim,
        ));
    } else {
        // A sentence a line: wrapped together, "attach it." was left
        // alone on a row in a narrow pane.
        lines.push(Line::styled(
            "Ask for a fix, a change or an explanation.",
            text,
        ));
        lines.push(Line::styled("Name a file to attach it.", text));
        lines.push(Line::styled(
            "Edits stream into the diff pane; you approve each one (y, n, a).",
            dim,
        ));
        lines.push(Line::styled(
            "Tab moves between panes · F1 lists every key · Ctrl-C twice quits",
            dim,
        ));
    }
    centred(lines, area, buf);
}

/// Lines in the middle of the area, wrapped there, so the height counts
/// the rows the text takes, not its lines (a narrow pane clipped the last
/// ones).
fn centred(lines: Vec<Line<'static>>, area: Rect, buf: &mut Buffer) {
    let logical: Vec<Logical> = lines
        .into_iter()
        .map(|l| Logical::word(l.alignment(ratatui::layout::Alignment::Center)))
        .collect();
    let rows = wrap_all(&logical, area.width.max(1) as usize);
    let h = rows.len() as u16;
    let y = area.y + area.height.saturating_sub(h) / 2;
    let rect = Rect {
        y,
        height: h.min(area.height),
        ..area
    };
    Paragraph::new(rows)
        .alignment(ratatui::layout::Alignment::Center)
        .render(rect, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::{ColorDepth, load};

    #[test]
    fn a_streaming_answer_renders_like_the_finished_one() {
        let dir = tempfile::tempdir().unwrap();
        let th = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        let text = "# Plan\n\nFirst paragraph with `code`.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n1. one\n\n2. two\n\nLast words.";
        let streaming = Cell::new(
            1,
            CellKind::Answer {
                text: text.into(),
                done: false,
            },
        );
        let done = Cell::new(
            1,
            CellKind::Answer {
                text: text.into(),
                done: true,
            },
        );
        let plain = |c: &Cell| {
            c.lines(60, &th, false)
                .iter()
                .map(|l| {
                    l.spans
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(plain(&streaming), plain(&done));
        assert_eq!(stable_boundary("a\n\nb"), 3);
        assert_eq!(
            stable_boundary("```\na\n\nb"),
            0,
            "a blank line inside a fence is no boundary"
        );
    }

    #[test]
    fn a_long_paste_is_folded_to_its_opening_and_its_size_until_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let th = load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        let paste: String = (1..=1500)
            .map(|i| format!("line {i} of the log\n"))
            .collect();
        let mut cell = Cell::new(
            1,
            CellKind::User(format!("why does this fail?\n{paste}and what fixes it?")),
        );
        let plain = |c: &Cell| {
            c.lines(80, &th, false)
                .iter()
                .map(|l| {
                    let t: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                    t.trim().to_string()
                })
                .collect::<Vec<_>>()
        };
        let folded = plain(&cell);
        assert_eq!(
            folded.len(),
            1 + FOLD_PROMPT_SHOWN + 1 + FOLD_PROMPT_TAIL,
            "{folded:?}"
        );
        assert_eq!(folded[1], "› why does this fail?");
        assert_eq!(
            folded[1 + FOLD_PROMPT_SHOWN],
            "[pasted 1,502 lines, 30 KB; 1,496 more · Enter on it expands]"
        );
        // What was typed after the paste stays in view.
        assert_eq!(
            folded.last().map(String::as_str),
            Some("and what fixes it?")
        );
        // On a narrow pane the note breaks between words, wherever the
        // edge falls.
        for width in 40..52 {
            cell.touch();
            let narrow: Vec<String> = cell
                .lines(width, &th, false)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect();
            assert!(narrow.iter().any(|l| l.contains("Enter")), "{narrow:?}");
        }
        cell.expanded = true;
        cell.touch();
        let whole = plain(&cell);
        assert_eq!(whole.len(), 1 + 1502, "{:?}", &whole[..3]);
        assert_eq!(whole[1501], "line 1500 of the log");
        // A short prompt is shown whole.
        let short = Cell::new(1, CellKind::User("a\nb\nc".into()));
        assert_eq!(plain(&short).len(), 4);
        assert_eq!(
            (group(999), group(1000), group(1234567)),
            ("999".into(), "1,000".into(), "1,234,567".into())
        );
        assert_eq!(
            (size(812), size(146_300), size(2_100_000)),
            ("812 bytes".into(), "146 KB".into(), "2.1 MB".into())
        );
    }
}
