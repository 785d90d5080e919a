//! The status bar: provider and model, sandbox, context used, tokens,
//! cached share, speed and time to first token of the last request, the
//! session, and a spinner with the elapsed time while the agent works.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::protocol::{AgentEvent, RequestStats, SessionInfo, Usage};
use crate::tui::theme::Theme;

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Default)]
pub struct Status {
    /// The session as the agent described it (`SessionStarted`).
    pub info: SessionInfo,
    pub context_used: u64,
    pub total: Usage,
    pub last: Option<RequestStats>,
    pub working_since: Option<Instant>,
    pub queued: usize,
    pub approvals_waiting: usize,
    pub mouse_off: bool,
    /// Checkpoints taken this session (`/rewind` lists them).
    pub checkpoints: usize,
    /// A short message (what a command did), shown until the next one.
    pub flash: Option<String>,
    /// Language-server totals over the workspace.
    pub errors: u32,
    pub warnings: u32,
    /// The request in flight: tokens so far, their rate, the prompt read.
    pub generating: Option<Generating>,
    /// Prompt tokens the server reads a second, as the last request that
    /// read a long prompt showed: what a wait for the first token is
    /// estimated by.
    pub prompt_speed: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Generating {
    pub tokens: u64,
    pub tokens_per_second: Option<f64>,
    pub prompt: Option<(u64, u64)>,
    /// The server works for another client; this request waits.
    pub queued: bool,
    /// Prompt tokens read a second (see `Status::prompt_speed`).
    pub prompt_speed: Option<f64>,
}

/// Tokens before a rate is shown: over the first few, the time between
/// them says nothing (`3 tok · 0.0 tok/s`).
const RATE_AFTER: u64 = 8;

impl Generating {
    /// `1.2k tok · 14.2 tok/s`, or `prompt 3.0k/19k` before the first
    /// (`reading 19k prompt tokens` while the server has not said how far
    /// it is: llama-server counts them only at the end of a batch).
    pub fn words(&self) -> String {
        match (self.tokens, self.prompt) {
            (0, None) if self.queued => "server busy with another request".into(),
            (0, Some((done, all))) if done * 20 < all => {
                // The server counts only at the end of a batch: what the
                // last long prompt's speed says this one takes.
                let eta = self
                    .prompt_speed
                    .filter(|s| *s > 0.0)
                    .map(|s| ((all - done) as f64 / s).round() as u64)
                    .filter(|secs| *secs >= 3)
                    .map(|secs| format!(", ~{secs}s"))
                    .unwrap_or_default();
                format!("reading {} prompt tokens{eta}", human(all))
            }
            (0, Some((done, all))) => format!("prompt {}/{}", human(done), human(all)),
            (0, None) => "waiting for the first token".into(),
            (n, _) => match self.tokens_per_second {
                Some(tps) if n >= RATE_AFTER && tps >= 0.05 => {
                    format!("{} tok · {tps:.1} tok/s", human(n))
                }
                _ => format!("{} tok", human(n)),
            },
        }
    }
}

pub fn human(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.0}k", n as f64 / 1000.0)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

impl Status {
    pub fn new(info: SessionInfo) -> Status {
        Status {
            info,
            ..Default::default()
        }
    }

    /// Takes its part of an agent event: the session, its figures.
    pub fn on_event(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::SessionStarted { info } => self.info = info.clone(),
            AgentEvent::SessionCleared { session } => {
                self.info.session.clone_from(session);
                self.total = Usage::default();
                self.context_used = 0;
            }
            AgentEvent::ConversationTrimmed { session, .. } => {
                self.info.session.clone_from(session);
            }
            AgentEvent::Usage {
                stats,
                context_used,
                ..
            } => {
                self.total.add(&stats.usage);
                self.last = Some(*stats);
                // A prompt long enough to time: its uncached part over the
                // wait for the first token.
                let read = stats.usage.prompt.saturating_sub(stats.usage.cached);
                if let Some(ms) = stats.first_token_ms.filter(|ms| *ms >= 1000)
                    && read >= 200
                {
                    self.prompt_speed = Some(read as f64 * 1000.0 / ms as f64);
                }
                self.generating = None;
                if *context_used > 0 {
                    self.context_used = *context_used;
                }
            }
            AgentEvent::Context { tokens } => self.context_used = *tokens,
            AgentEvent::Generating {
                tokens,
                tokens_per_second,
                prompt,
                queued,
                ..
            } => {
                // The count never goes back within a request (the server's
                // count and the streamed one take turns).
                // (A prompt being read is a new request's: a helper's
                // next one starts from nothing.)
                let tokens = match self.generating {
                    Some(g) if prompt.is_none() => (*tokens).max(g.tokens),
                    _ => *tokens,
                };
                self.generating = Some(Generating {
                    tokens,
                    tokens_per_second: *tokens_per_second,
                    prompt: *prompt,
                    queued: *queued,
                    prompt_speed: self.prompt_speed,
                });
            }
            AgentEvent::RequestStarted { .. }
            | AgentEvent::TurnFinished { .. }
            | AgentEvent::ToolCallFinished { .. } => {
                // (a helper's progress ends with its call)
                self.generating = None;
            }
            AgentEvent::CheckpointCreated { .. } => self.checkpoints += 1,
            AgentEvent::Committed { id, summary, .. } => {
                self.flash = Some(format!(
                    "committed {}: {summary}",
                    id.get(..8).unwrap_or(id)
                ));
            }
            _ => {}
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, th: &Theme) {
        // Each figure is a segment with a rank: on a narrow bar the lowest
        // ranked go whole, never cut in the middle of a word.
        let mut left = self.left_figures(th);
        let mut right = self.right_figures(th);
        self.lay_out(area, buf, th, (&mut left, &mut right));
    }

    /// The model, the sandbox, the context, the tokens and the last
    /// request's speed, each with its rank.
    fn left_figures(&self, th: &Theme) -> Figures {
        let dim = Style::new().fg(th.dim);
        let mut left: Vec<(u8, Span<'static>)> = vec![
            (
                6,
                Span::styled(
                    format!("{}/{}", self.info.provider, self.info.model),
                    Style::new().fg(th.accent).add_modifier(Modifier::BOLD),
                ),
            ),
            (4, Span::styled(self.info.sandbox.clone(), dim)),
        ];
        if self.context_used > 0 || self.info.context_window.is_some() {
            let ctx = match self.info.context_window {
                Some(w) if w > 0 => format!(
                    "ctx {}/{} ({}%)",
                    human(self.context_used),
                    human(w),
                    self.context_used * 100 / w
                ),
                _ => format!("ctx {}", human(self.context_used)),
            };
            left.push((10, Span::styled(ctx, dim)));
        }
        if self.total.prompt + self.total.completion > 0 {
            let cached = (self.total.cached * 100)
                .checked_div(self.total.prompt)
                .map(|p| format!(" ({p}% cached)"))
                .unwrap_or_default();
            left.push((
                8,
                Span::styled(
                    format!(
                        "in {}{cached} out {}",
                        human(self.total.prompt),
                        human(self.total.completion)
                    ),
                    dim,
                ),
            ));
        }
        if let Some(s) = &self.last {
            if let Some(tps) = s.tokens_per_second {
                left.push((3, Span::styled(format!("{tps:.1} tok/s"), dim)));
            }
            if let Some(ms) = s.first_token_ms {
                left.push((
                    2,
                    Span::styled(format!("ttft {:.1}s", ms as f64 / 1000.0), dim),
                ));
            }
        }
        left
    }

    /// What waits (approvals, queued messages), the work in progress, the
    /// workspace's problems, the checkpoints and the session, ranked.
    fn right_figures(&self, th: &Theme) -> Figures {
        let dim = Style::new().fg(th.dim);
        let mut right: Vec<(u8, Span<'static>)> = Vec::new();
        if self.approvals_waiting > 0 {
            right.push((
                10,
                Span::styled(
                    format!("{} approval waiting (Esc)", self.approvals_waiting),
                    Style::new().fg(th.warning).add_modifier(Modifier::BOLD),
                ),
            ));
        }
        if self.queued > 0 {
            right.push((
                7,
                Span::styled(
                    format!("{} queued", self.queued),
                    Style::new().fg(th.warning),
                ),
            ));
        }
        if self.mouse_off {
            right.push((5, Span::styled("mouse off", Style::new().fg(th.warning))));
        }
        if let Some(since) = self.working_since {
            let secs = since.elapsed().as_secs_f64();
            let frame = SPINNER[(since.elapsed().as_millis() / 100) as usize % SPINNER.len()];
            right.push((
                10,
                Span::styled(format!("{frame} {secs:.0}s"), Style::new().fg(th.accent)),
            ));
            if let Some(g) = self.generating {
                // Ranked with the context: a waiting word (the /commit
                // request's) is cut before the request's progress is.
                right.push((8, Span::styled(g.words(), Style::new().fg(th.accent))));
            }
        }
        if self.errors > 0 {
            right.push((
                9,
                Span::styled(
                    format!("✗{}", self.errors),
                    Style::new().fg(th.removed).add_modifier(Modifier::BOLD),
                ),
            ));
        }
        if self.warnings > 0 {
            right.push((
                6,
                Span::styled(format!("⚠{}", self.warnings), Style::new().fg(th.warning)),
            ));
        }
        if self.checkpoints > 0 {
            right.push((1, Span::styled(format!("⟲{}", self.checkpoints), dim)));
        }
        let short: String = self
            .info
            .session
            .chars()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        right.push((0, Span::styled(short, dim)));
        right
    }

    /// The figures that fit, and the flash in the room they leave.
    fn lay_out(
        &self,
        area: Rect,
        buf: &mut Buffer,
        th: &Theme,
        (left, right): (&mut Figures, &mut Figures),
    ) {
        let w = |s: &Span<'static>| crate::tui::render::wrap::text_width(&s.content);
        // " a · b · c " on the left, "x y z " on the right.
        let total = |l: &[(u8, Span<'static>)], r: &[(u8, Span<'static>)]| -> usize {
            1 + l.iter().map(|(_, s)| w(s) + 3).sum::<usize>() - 3 * usize::from(!l.is_empty())
                + r.iter().map(|(_, s)| w(s) + 1).sum::<usize>()
        };
        // The left part ends a column before the right one starts.
        while total(left, right) + 1 > area.width as usize {
            if !drop_lowest(left, right, u8::MAX) {
                break;
            }
        }
        // A message (a copy said, a notice) makes its room from the least
        // needed figures while it shows; the context and the tokens stay.
        if let Some(f) = &self.flash {
            let want = (crate::tui::render::wrap::text_width(f) + 1).min(48);
            while (area.width as usize).saturating_sub(total(left, right) + 2) < want {
                if !drop_lowest(left, right, 8) {
                    break;
                }
            }
        }
        let sep = Span::styled(" · ", Style::new().fg(th.border));
        let mut left_spans = vec![Span::raw(" ")];
        for (i, (_, s)) in left.iter().enumerate() {
            if i > 0 {
                left_spans.push(sep.clone());
            }
            left_spans.push(s.clone());
        }
        let mut right_spans: Vec<Span<'static>> = Vec::new();
        for (_, s) in right.iter() {
            right_spans.push(s.clone());
            right_spans.push(Span::raw(" "));
        }
        // A message takes the room the figures leave, cut to fit: it never
        // hides the context or the tokens.
        let room = (area.width as usize).saturating_sub(total(left, right) + 2);
        if let Some(f) = &self.flash
            && room >= 8
        {
            let text = if crate::tui::render::wrap::text_width(f) < room {
                format!("{f} ")
            } else {
                let cut: String = f.chars().take(room.saturating_sub(2)).collect();
                format!("{cut}… ")
            };
            right_spans.insert(0, Span::styled(text, Style::new().fg(th.text)));
        }
        let right_w: usize = right_spans.iter().map(w).sum();
        let style = Style::new().bg(th.selection);
        let left_area = Rect {
            width: area.width.saturating_sub(right_w as u16 + 1),
            ..area
        };
        Paragraph::new("").style(style).render(area, buf);
        Paragraph::new(Line::from(left_spans))
            .style(style)
            .render(left_area, buf);
        if (right_w as u16) < area.width {
            let r = Rect {
                x: area.x + area.width - right_w as u16,
                width: right_w as u16,
                ..area
            };
            Paragraph::new(Line::from(right_spans))
                .style(style)
                .render(r, buf);
        }
    }
}

/// A side of the bar: its figures, each with its rank (the lowest go
/// first on a narrow bar).
type Figures = Vec<(u8, Span<'static>)>;

/// Takes the least needed figure of rank below `below` off the bar (of
/// either side); false when there is none.
fn drop_lowest(
    left: &mut Vec<(u8, Span<'static>)>,
    right: &mut Vec<(u8, Span<'static>)>,
    below: u8,
) -> bool {
    let lowest = left
        .iter()
        .enumerate()
        .map(|(i, (r, _))| (*r, false, i))
        .chain(right.iter().enumerate().map(|(i, (r, _))| (*r, true, i)))
        .filter(|(r, _, _)| *r < below)
        .min_by_key(|(r, _, _)| *r);
    match lowest {
        Some((_, false, i)) => {
            left.remove(i);
            true
        }
        Some((_, true, i)) => {
            right.remove(i);
            true
        }
        None => false,
    }
}
