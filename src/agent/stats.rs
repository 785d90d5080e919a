//! `/stats` and `/cost`: what the session's requests cost, from the
//! session log (so a resumed session counts its earlier runs too).

use super::Agent;
use crate::config::file::Price;
use crate::protocol::{AgentEvent, Level, Usage};
use crate::session::Record;

/// One request's figures, as the log keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Req {
    pub turn: u64,
    pub usage: Usage,
    pub first_token_ms: Option<u64>,
    pub ms: u64,
    /// Estimated prompt tokens as (compact, rebuild).
    pub modes: Option<(u64, u64)>,
}

/// Sums over some requests.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Sum {
    pub requests: u32,
    pub usage: Usage,
    /// Requests with a first-token time, and those times added up.
    timed: u32,
    first_token_ms: u64,
    /// Prompt tokens read (not from the cache) over the time to the
    /// first token, and completion tokens over the time after it.
    read_tokens: u64,
    read_ms: u64,
    gen_tokens: u64,
    gen_ms: u64,
}

impl Sum {
    pub fn of<'a>(reqs: impl IntoIterator<Item = &'a Req>) -> Sum {
        let mut s = Sum::default();
        for r in reqs {
            s.requests += 1;
            s.usage.add(&r.usage);
            if let Some(t) = r.first_token_ms {
                s.timed += 1;
                s.first_token_ms += t;
                s.read_tokens += r.usage.prompt.saturating_sub(r.usage.cached);
                s.read_ms += t;
                s.gen_tokens += r.usage.completion;
                s.gen_ms += r.ms.saturating_sub(t);
            }
        }
        s
    }

    fn rate(tokens: u64, ms: u64) -> Option<f64> {
        (tokens > 0 && ms > 0).then(|| tokens as f64 * 1000.0 / ms as f64)
    }

    /// One line: requests, tokens, cache share, time to first token,
    /// reading and generation speed.
    pub fn words(&self) -> String {
        let u = &self.usage;
        let mut text = format!(
            "{} request{}, {} prompt tokens",
            self.requests,
            if self.requests == 1 { "" } else { "s" },
            u.prompt
        );
        if let Some(p) = (u.cached * 100).checked_div(u.prompt) {
            text.push_str(&format!(" ({p}% from the server's cache)"));
        }
        text.push_str(&format!(", {} generated", u.completion));
        if let Some(avg) = self.first_token_ms.checked_div(u64::from(self.timed)) {
            text.push_str(&format!(
                "; first token after {:.1} s on average",
                avg as f64 / 1000.0
            ));
        }
        if let Some(r) = Self::rate(self.read_tokens, self.read_ms) {
            text.push_str(&format!("; prompt read at {r:.0} tok/s"));
        }
        if let Some(r) = Self::rate(self.gen_tokens, self.gen_ms) {
            text.push_str(&format!(", generated at {r:.1} tok/s"));
        }
        text
    }
}

/// The requests a log recorded.
pub(super) fn requests(records: &[Record]) -> Vec<Req> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Request {
                turn,
                prompt,
                cached,
                completion,
                first_token_ms,
                ms,
                as_compact,
                as_rebuild,
                ..
            } => Some(Req {
                modes: as_compact.zip(*as_rebuild),
                turn: *turn,
                usage: Usage {
                    prompt: *prompt,
                    cached: *cached,
                    completion: *completion,
                },
                first_token_ms: *first_token_ms,
                ms: *ms,
            }),
            _ => None,
        })
        .collect()
}

/// Turns shown in the per-turn comparison of the context modes.
const TURNS_COMPARED: usize = 8;

/// Each mode's estimated prompt tokens, turn by turn (the last few) and
/// over the session, from the requests that recorded them.
pub(super) fn modes_words(reqs: &[Req]) -> Option<String> {
    let mut turns: Vec<(u64, u32, u64, u64, u64)> = Vec::new();
    for r in reqs {
        let Some((c, b)) = r.modes else { continue };
        match turns.last_mut() {
            Some(t) if t.0 == r.turn => {
                t.1 += 1;
                t.2 += r.usage.prompt;
                t.3 += c;
                t.4 += b;
            }
            _ => turns.push((r.turn, 1, r.usage.prompt, c, b)),
        }
    }
    if turns.is_empty() {
        return None;
    }
    let (c, b): (u64, u64) = turns.iter().fold((0, 0), |a, t| (a.0 + t.3, a.1 + t.4));
    let verdict = match c.cmp(&b) {
        std::cmp::Ordering::Greater => format!("rebuild ~{}% fewer", (c - b) * 100 / c.max(1)),
        std::cmp::Ordering::Less => format!("compact ~{}% fewer", (b - c) * 100 / b.max(1)),
        std::cmp::Ordering::Equal => "the same".into(),
    };
    let mut text = format!(
        "prompt tokens per mode (estimated from each request's size): this session ~{c} as compact, ~{b} as rebuild ({verdict})"
    );
    let skip = turns.len().saturating_sub(TURNS_COMPARED);
    for (turn, n, sent, c, b) in &turns[skip..] {
        text.push_str(&format!(
            "\n  turn {turn} ({n} request{}): sent {sent} · as compact ~{c} · as rebuild ~{b}",
            if *n == 1 { "" } else { "s" }
        ));
    }
    Some(text)
}

/// Dollars for `usage` at `price`.
pub(super) fn dollars(usage: &Usage, price: &Price) -> f64 {
    let fresh = usage.prompt.saturating_sub(usage.cached) as f64;
    let cached = usage.cached as f64;
    (fresh * price.input
        + cached * price.cached.unwrap_or(price.input)
        + usage.completion as f64 * price.output)
        / 1_000_000.0
}

/// The next warning level of a budget: the budget itself, then each
/// further half of it.
fn next_level(budget: f64, used: f64) -> f64 {
    if used < budget {
        return budget;
    }
    let halves = ((used - budget) / (budget / 2.0)).floor() + 1.0;
    budget + halves * budget / 2.0
}

/// Session budgets: a warning when one is crossed and at each further 50%;
/// never a stop (the round limit is the hard one).
#[derive(Debug, Default)]
pub(super) struct Budgets {
    /// The level each budget warns at next (0: not set up yet).
    minutes_at: f64,
    tokens_at: f64,
}

impl Agent {
    /// Says when this run's time or tokens crossed `budgetMinutes` /
    /// `budgetKTokens`, or another half of them.
    pub(super) fn check_budgets(&mut self) {
        let minutes = self.started.elapsed().as_secs_f64() / 60.0;
        let tokens = (self.usage.prompt + self.usage.completion) as f64;
        let mut said = Vec::new();
        if let Some(b) = self.settings.budget_minutes.map(|b| b as f64) {
            let at = &mut self.budgets.minutes_at;
            if *at == 0.0 {
                *at = b;
            }
            if minutes >= *at {
                said.push(format!(
                    "{minutes:.0} minutes, past {:.0}% of budgetMinutes ({b:.0})",
                    *at / b * 100.0
                ));
                *at = next_level(b, minutes);
            }
        }
        if let Some(b) = self.settings.budget_k_tokens.map(|b| b as f64 * 1000.0) {
            let at = &mut self.budgets.tokens_at;
            if *at == 0.0 {
                *at = b;
            }
            if tokens >= *at {
                said.push(format!(
                    "{:.0}k tokens, past {:.0}% of budgetKTokens ({:.0}k)",
                    tokens / 1000.0,
                    *at / b * 100.0,
                    b / 1000.0
                ));
                *at = next_level(b, tokens);
            }
        }
        if !said.is_empty() {
            self.notice(
                Level::Warning,
                format!(
                    "budget: this run has used {}; mm goes on (/compact or /new spend less)",
                    said.join(" and ")
                ),
            );
        }
    }

    /// `/stats`: the session's requests, the last turn's and the last
    /// request's, how full the window is, and the cost.
    pub fn stats(&self) {
        self.notice(Level::Info, self.glance().stats());
    }

    /// `/mcp`: the MCP servers and their tools, as a notice.
    pub fn mcp_status(&self) {
        self.notice(Level::Info, self.glance().mcp);
    }

    /// `/skills`: the skills offered, as a notice.
    pub fn skills_list(&self) {
        self.notice(Level::Info, self.glance().skills);
    }

    /// The figures `/stats`, `/cost`, `/ctx`, `/mcp` and `/skills` are
    /// made from, as the agent stands; `next` is the next request's size
    /// when the caller has just measured it (with both modes').
    pub(super) fn glance_with(&self, next: Option<(u64, (u64, u64))>) -> Glance {
        let (next, both) = next.unwrap_or_else(|| (self.next_request_tokens(), self.both_modes()));
        let mcp = match &self.tools.mcp {
            Some(m) => m.describe(),
            None => "no MCP servers (mcpServers in the config or the agent file adds them)".into(),
        };
        let skills = &self.tools.skills;
        let skills = if skills.is_empty() {
            "no skills (.mm/skills/NAME/SKILL.md or NAME.md, ~/.config/mm/skills/, skillsDir)"
                .into()
        } else {
            let mut t = format!(
                "{} skill{}:",
                skills.len(),
                if skills.len() == 1 { "" } else { "s" }
            );
            for s in skills {
                t.push_str(&format!(
                    "\n  {}: {} ({})",
                    s.name,
                    s.description,
                    s.file.display()
                ));
            }
            t
        };
        Glance {
            root: self.tools.sandbox.root().to_path_buf(),
            session: self.log.id().to_string(),
            turn: self.turn,
            next,
            both,
            window: self.context_window,
            compacted: self.compacted(),
            ctx_mode: self.ctx_mode.as_str(),
            model: self.model.clone(),
            local: self.settings.provider_info.local,
            price: self.settings.prices.get(&self.model).copied(),
            mcp,
            skills,
            agents: match &self.tools.task {
                Some(t) => crate::roles::listing(&t.roles, &[]),
                None => "no roles and no task tool: add .mm/agents/NAME.md (or ~/.config/mm/agents/NAME.md), or set taskTool: true\n".into(),
            }
            .trim_end()
            .to_string(),
        }
    }

    pub(super) fn glance(&self) -> Glance {
        self.glance_with(None)
    }

    /// Keeps the shared glance current, for the queries answered while a
    /// turn runs.
    pub(super) fn refresh_glance(&self, next: Option<(u64, (u64, u64))>) {
        let g = self.glance_with(next);
        if let Ok(mut slot) = self.glance_slot.lock() {
            *slot = Some(g);
        }
    }

    /// The slot the queries answered at once read.
    pub fn glance_slot(&self) -> GlanceSlot {
        self.glance_slot.clone()
    }

    /// `/ctx [mode]`: switches the context mode (when given) and says
    /// what the next request and the session's turns come to in each.
    pub fn ctx(&mut self, mode: Option<crate::config::ContextMode>) {
        let mut text = match mode {
            Some(m) if m != self.ctx_mode => {
                let was = self.ctx_mode;
                self.ctx_mode = m;
                self.reset_rebuild();
                self.advance_rebuild();
                self.publish_context();
                format!("context mode: {} (was {})", m.as_str(), was.as_str())
            }
            _ => format!("context mode: {}", self.ctx_mode.as_str()),
        };
        text.push_str(&self.glance().ctx_figures());
        self.notice(Level::Info, text);
    }

    /// `/model [NAME]`: the server's models, the session's marked; with a
    /// name, the session uses it from the next request (a name the server
    /// does not list is refused when it lists any).
    pub async fn switch_model(&mut self, name: Option<String>) {
        let listed = self
            .client
            .list_models(std::time::Duration::from_secs(10))
            .await;
        let Some(name) = name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()) else {
            let text = match listed {
                Ok(ids) if !ids.is_empty() => {
                    let mut lines = vec![format!("models on {}:", self.client.base_url())];
                    for id in &ids {
                        let mark = if *id == self.model { "*" } else { " " };
                        lines.push(format!("  {mark} {id}"));
                    }
                    if !ids.contains(&self.model) {
                        lines.push(format!("(this session uses {})", self.model));
                    }
                    lines.push("/model NAME switches".into());
                    lines.join("\n")
                }
                Ok(_) => format!(
                    "the server lists no models; this session uses {}",
                    self.model
                ),
                Err(e) => format!(
                    "the server's models could not be listed ({e}); this session uses {}",
                    self.model
                ),
            };
            return self.notice(Level::Info, text);
        };
        if let Ok(ids) = &listed
            && !ids.is_empty()
            && !ids.contains(&name)
        {
            return self.notice(
                Level::Warning,
                format!(
                    "the server lists no model {name} (it has: {}); the session keeps {}",
                    ids.join(", "),
                    self.model
                ),
            );
        }
        if name == self.model {
            return self.notice(Level::Info, format!("the session already uses {name}"));
        }
        if let Err(e) = self.log.append(&Record::Model {
            model: name.clone(),
        }) {
            return self.notice(
                Level::Warning,
                format!(
                    "the switch to {name} could not be recorded ({e}); the session keeps {}",
                    self.model
                ),
            );
        }
        let was = std::mem::replace(&mut self.model, name.clone());
        self.bus
            .publish(AgentEvent::SessionStarted { info: self.info() });
        self.notice(
            Level::Info,
            format!("model: {name} from the next request (was {was})"),
        );
    }

    /// `/cost`: the session's tokens and what they cost.
    pub fn cost(&self) {
        self.notice(Level::Info, self.glance().cost());
    }
}

/// Where the agent keeps its latest glance for the router.
pub type GlanceSlot = std::sync::Arc<std::sync::Mutex<Option<Glance>>>;

/// What `/stats`, `/cost`, `/ctx`, `/mcp` and `/skills` say, from the
/// agent's state as of its last request and the session log read when
/// asked: a copy the router keeps, so they answer at once while a turn
/// runs.
#[derive(Clone, Debug)]
pub struct Glance {
    root: std::path::PathBuf,
    session: String,
    pub turn: u64,
    next: u64,
    both: (u64, u64),
    window: Option<u64>,
    compacted: bool,
    ctx_mode: &'static str,
    model: String,
    local: bool,
    price: Option<Price>,
    pub mcp: String,
    pub skills: String,
    pub agents: String,
}

impl Glance {
    fn logged_requests(&self) -> Vec<Req> {
        crate::session::read_records(&self.root, &self.session)
            .map(|(_, r)| requests(&r))
            .unwrap_or_default()
    }

    /// What the session has cost so far, in words.
    fn cost_words(&self, usage: &Usage) -> String {
        if self.local {
            return "cost: $0 (a local server)".into();
        }
        match &self.price {
            Some(p) => format!("cost: ${:.4}", dollars(usage, p)),
            None => format!(
                "cost: unknown: no price for {m} (add prices: {{{m}: {{input: …, cached: …, output: …}}}} in dollars per million tokens to the config)",
                m = self.model
            ),
        }
    }

    /// `/stats`'s text.
    pub fn stats(&self) -> String {
        let reqs = self.logged_requests();
        let all = Sum::of(&reqs);
        let mut text = format!(
            "session {} ({} turn{}): {}",
            self.session,
            self.turn,
            if self.turn == 1 { "" } else { "s" },
            all.words()
        );
        if let Some(last) = reqs.last() {
            let turn = Sum::of(reqs.iter().filter(|r| r.turn == last.turn));
            text.push_str(&format!("\nlast turn: {}", turn.words()));
            text.push_str(&format!(
                "\nlast request: {}",
                Sum::of(std::iter::once(last)).words()
            ));
        }
        let next = self.next;
        match self.window {
            Some(w) => text.push_str(&format!(
                "\ncontext window: {w} tokens; the next request ~{next} ({}%){}",
                next * 100 / w.max(1),
                if self.compacted {
                    ", the conversation compacted"
                } else {
                    ""
                }
            )),
            None => text.push_str(&format!("\nthe next request ~{next} tokens")),
        }
        text.push_str(&format!(
            "\ncontext mode: {} (/ctx compact|rebuild switches)",
            self.ctx_mode
        ));
        if let Some(modes) = modes_words(&reqs) {
            text.push('\n');
            text.push_str(&modes);
        }
        text.push('\n');
        text.push_str(&self.cost_words(&all.usage));
        text
    }

    /// `/cost`'s text.
    pub fn cost(&self) -> String {
        let all = Sum::of(&self.logged_requests());
        let u = &all.usage;
        format!(
            "{} — {} prompt tokens ({} cached), {} generated over {} request{}",
            self.cost_words(u),
            u.prompt,
            u.cached,
            u.completion,
            all.requests,
            if all.requests == 1 { "" } else { "s" }
        )
    }

    /// `/ctx`'s figures after the mode: the next request in each mode,
    /// and the turns so far.
    fn ctx_figures(&self) -> String {
        let (c, b) = self.both;
        let mut text = format!("; the next request ~{c} tokens as compact, ~{b} as rebuild");
        if let Some(modes) = modes_words(&self.logged_requests()) {
            text.push('\n');
            text.push_str(&modes);
        }
        text
    }

    /// `/ctx` with no mode's text.
    pub fn ctx(&self) -> String {
        format!("context mode: {}{}", self.ctx_mode, self.ctx_figures())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_compared_turn_by_turn() {
        let req = |turn, prompt, modes| Req {
            turn,
            usage: Usage {
                prompt,
                ..Usage::default()
            },
            modes,
            ..Req::default()
        };
        let reqs = [
            req(1, 900, Some((1000, 1000))),
            req(2, 2000, Some((2000, 1200))),
            req(2, 2100, Some((2100, 1300))),
            req(2, 50, None),
        ];
        let text = modes_words(&reqs).unwrap_or_default();
        assert!(
            text.contains("~5100 as compact, ~3500 as rebuild (rebuild ~31% fewer)"),
            "{text}"
        );
        assert!(
            text.contains("turn 2 (2 requests): sent 4100 · as compact ~4100 · as rebuild ~2500"),
            "{text}"
        );
        assert_eq!(modes_words(&[req(1, 5, None)]), None);
    }

    #[test]
    fn sums_say_the_cache_share_and_both_speeds() {
        let reqs = [
            Req {
                turn: 1,
                usage: Usage {
                    prompt: 1000,
                    cached: 800,
                    completion: 50,
                },
                first_token_ms: Some(2000),
                ms: 7000,
                modes: Some((1000, 700)),
            },
            Req {
                turn: 1,
                usage: Usage {
                    prompt: 1000,
                    cached: 0,
                    completion: 50,
                },
                first_token_ms: None,
                ms: 1000,
                modes: None,
            },
        ];
        let s = Sum::of(&reqs);
        assert_eq!(
            s.words(),
            "2 requests, 2000 prompt tokens (40% from the server's cache), 100 generated; first token after 2.0 s on average; prompt read at 100 tok/s, generated at 10.0 tok/s"
        );
    }

    #[test]
    fn budgets_warn_at_each_further_half() {
        assert_eq!(next_level(100.0, 50.0), 100.0);
        assert_eq!(next_level(100.0, 100.0), 150.0);
        assert_eq!(next_level(100.0, 149.0), 150.0);
        assert_eq!(next_level(100.0, 230.0), 250.0);
    }

    #[test]
    fn cached_tokens_cost_their_own_price() {
        let u = Usage {
            prompt: 1_000_000,
            cached: 500_000,
            completion: 100_000,
        };
        let p = Price {
            input: 1.0,
            cached: Some(0.1),
            output: 4.0,
        };
        assert!((dollars(&u, &p) - (0.5 + 0.05 + 0.4)).abs() < 1e-9);
        let no_cache_price = Price { cached: None, ..p };
        assert!((dollars(&u, &no_cache_price) - 1.4).abs() < 1e-9);
    }
}
