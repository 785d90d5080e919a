//! Keeping the conversation inside the model's context window.
//!
//! When the server refuses a request as too long, the turn does not die
//! and neither does the session: mm leaves the oldest tool outputs out of
//! what the model sees, then whole early turns, then the newest outputs,
//! until the request is back under a share of the window, and asks again.
//! Nothing is deleted: the log keeps every message, and a rewind or a new
//! session starts from the whole conversation again. When even the current
//! turn alone does not fit, the turn stops with what the user can do.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::llm::{Message, Role};

/// What a request is cut back to after an overflow, as a share of the
/// window: room for the reply and for the next few tool outputs, so the
/// following rounds do not overflow again at once.
const TARGET_SHARE: f64 = 0.6;
/// Tool outputs shorter than this are not worth leaving out.
const SMALL_OUTPUT: usize = 400;
/// Bytes of request body per prompt token before a reply has measured it:
/// English and code run at about four characters a token, and the JSON
/// around each message adds a little.
pub(super) const DEFAULT_BYTES_PER_TOKEN: f64 = 3.6;

/// What is left out of requests.
#[derive(Debug, Default)]
pub(super) struct Shed {
    /// Tool results (by index in the conversation) sent as a placeholder.
    elided: BTreeSet<usize>,
    /// Messages before this index, the system prompt aside, are not sent
    /// (0: none are skipped). Always the start of a turn.
    from: usize,
}

impl Shed {
    pub(super) fn is_empty(&self) -> bool {
        self.elided.is_empty() && self.from == 0
    }

    /// Whether the message at `index` goes out whole with each request.
    pub(super) fn sends(&self, index: usize) -> bool {
        index >= self.from && !self.elided.contains(&index)
    }
}

/// The first and last lines of `text` within about `cap` bytes (a third
/// for the start, the rest for the end), and a line in between that says
/// which lines were left out and how to see them.
fn head_and_tail_lines(text: &str, cap: usize, window: u64) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let n = lines.len();
    let mut head = 0;
    let mut used = 0;
    while head < n && used + lines[head].len() <= cap / 3 {
        used += lines[head].len();
        head += 1;
    }
    let mut tail = n;
    let mut used = 0;
    while tail > head && used + lines[tail - 1].len() <= cap - cap / 3 {
        used += lines[tail - 1].len();
        tail -= 1;
    }
    if tail <= head || (head == 0 && tail == n) {
        // A few very long lines: bytes, not lines.
        return super::compact::capped(text, cap);
    }
    let mut out: String = lines[..head].concat();
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!(
        "[lines {}–{} of {n} left out to fit the {window}-token context window; to see them, narrow the output: read_file with offset and limit, or the command again with `| sed -n '{},{}p'` or `| grep …`]\n",
        head + 1,
        tail,
        head + 1,
        tail
    ));
    out.push_str(&lines[tail..].concat());
    out
}

/// What the model sees in place of an output that was left out.
fn placeholder(bytes: usize) -> String {
    format!(
        "[output left out to fit the context window ({bytes} bytes); call the tool again if you still need it, for a smaller part if it was large]"
    )
}

/// The config key that turns a tool off.
fn off_key(tool: &str) -> &'static str {
    use crate::toolname::ToolName;
    match ToolName::parse(tool) {
        Some(ToolName::Bash) => "bashTool: false",
        Some(ToolName::AskAgent) => "no mmConfigs",
        Some(
            ToolName::LspDefinition
            | ToolName::LspReferences
            | ToolName::LspHover
            | ToolName::LspWorkspaceSymbols,
        ) => "enabled: false under lsp:",
        _ => "editTools: false",
    }
}

/// A message's size on the wire.
fn wire_len(m: &Message) -> usize {
    m.to_wire(false).to_string().len()
}

/// What an overflow report says, for the notice and the stop message.
fn figures(requested: Option<u64>, window: Option<u64>) -> String {
    match (requested, window) {
        (Some(r), Some(w)) => format!(" ({r} tokens for a window of {w})"),
        (None, Some(w)) => format!(" (a window of {w} tokens)"),
        (Some(r), None) => format!(" ({r} tokens)"),
        (None, None) => String::new(),
    }
}

/// The stop message when nothing more can be left out.
pub(super) fn advice(requested: Option<u64>, window: Option<u64>, said: &str) -> String {
    format!(
        "the conversation does not fit the model's context window{}, even with old tool outputs and turns left out (the server said: {said}). /new starts a fresh session, /rewind goes back to an earlier turn; a shorter request, or a server started with a larger context, also helps",
        figures(requested, window)
    )
}

impl super::Agent {
    /// The conversation as the next request sends it.
    pub(super) fn view(&self) -> Cow<'_, [Message]> {
        match self.ctx_mode {
            crate::config::ContextMode::Rebuild => Cow::Owned(self.rebuilt()),
            crate::config::ContextMode::Compact => self.plain_view(),
        }
    }

    /// Where requests begin after overflows left turns out (0: nowhere).
    pub(super) fn shed_from(&self) -> usize {
        self.shed.from
    }

    /// What the message at `i` is sent as when an overflow left it out.
    pub(super) fn shed_placeholder(&self, i: usize) -> Option<String> {
        self.shed
            .elided
            .contains(&i)
            .then(|| placeholder(self.messages[i].text().len()))
    }

    /// The whole conversation, less what overflows left out.
    pub(super) fn plain_view(&self) -> Cow<'_, [Message]> {
        if self.shed.is_empty() {
            return Cow::Borrowed(&self.messages);
        }
        let mut out = Vec::with_capacity(self.messages.len());
        out.extend(self.messages.first().cloned());
        for (i, m) in self.messages.iter().enumerate().skip(1) {
            if i < self.shed.from {
                continue;
            }
            if self.shed.elided.contains(&i) {
                let mut m = m.clone();
                m.content = Some(placeholder(m.text().len()));
                out.push(m);
            } else {
                out.push(m.clone());
            }
        }
        Cow::Owned(out)
    }

    /// How many tokens the next request will send, by the body's size and
    /// the bytes per token the last reply measured.
    pub(super) fn next_request_tokens(&self) -> u64 {
        let view = self.view();
        let body = crate::llm::build_body(&self.chat_request(&view, true));
        (body.to_string().len() as f64 / self.bytes_per_token).round() as u64
    }

    /// Tells the front ends how full the next request will be.
    pub(super) fn publish_context(&self) {
        self.bus.publish(crate::protocol::AgentEvent::Context {
            tokens: self.next_request_tokens(),
        });
    }

    /// When the system prompt and the tool descriptions, sent with every
    /// request, take more than a quarter of the window: how much, and
    /// which tools weigh most, with the key that turns each off.
    pub(super) fn fixed_weight_warning(&self) -> Option<String> {
        let window = self.context_window?;
        let system = &self.messages[..1];
        let body = crate::llm::build_body(&self.chat_request(system, true));
        let tokens = |bytes: usize| (bytes as f64 / self.bytes_per_token).round() as u64;
        let fixed = tokens(body.to_string().len());
        if fixed * 4 <= window {
            return None;
        }
        let mut tools: Vec<(u64, &str)> = self
            .specs
            .iter()
            .map(|s| (tokens(s.to_wire().to_string().len()), s.name.as_ref()))
            .collect();
        tools.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let heaviest: Vec<String> = tools
            .iter()
            .take(4)
            .map(|(t, name)| format!("{name} ~{t} ({})", off_key(name)))
            .collect();
        let mut text = format!(
            "the system prompt and tool descriptions take ~{fixed} tokens of every request, more than a quarter of the {window}-token window"
        );
        if !heaviest.is_empty() {
            text.push_str(&format!("; the heaviest tools: {}", heaviest.join(", ")));
        }
        Some(text)
    }

    /// Tokens the system prompt and the tools take in every request.
    fn fixed_tokens(&self) -> u64 {
        let system = &self.messages[..1.min(self.messages.len())];
        let bytes = crate::llm::build_body(&self.chat_request(system, true))
            .to_string()
            .len();
        (bytes as f64 / self.bytes_per_token).round() as u64
    }

    /// A tool output sized to the window before the model gets it: at most
    /// a quarter of what the system prompt and the tools leave free, its
    /// first and last lines kept (the end, where errors and summaries
    /// are, gets two thirds), and which lines were left out said in their
    /// place. None when it fits (or the window is not known).
    pub(super) fn fit_output(&self, text: &str) -> Option<String> {
        let window = self.context_window?;
        let free = window.saturating_sub(self.fixed_tokens());
        let cap = ((free / 4) as f64 * self.bytes_per_token) as usize;
        if text.len() <= cap.max(SMALL_OUTPUT) {
            return None;
        }
        Some(head_and_tail_lines(text, cap, window))
    }

    /// A message that cannot fit the window even with nothing else of the
    /// conversation beside it (the system prompt, the tools and room for
    /// a reply): what to tell the user instead of sending it. The server
    /// would refuse it after reading it, seconds later.
    pub(super) async fn oversized(&self, text: &str) -> Option<String> {
        let window = self.context_window?;
        let tokens = |bytes: usize| (bytes as f64 / self.bytes_per_token).round() as u64;
        let fixed = self.fixed_tokens();
        let reply = window / 8;
        let free = window.saturating_sub(fixed + reply);
        // The bytes a token is learnt from whole requests (prose and
        // schemas); a paste of short lines, numbers and symbols takes more
        // tokens a byte. A message near the room left is counted by the
        // server where it can (llama.cpp's /tokenize), else by the larger
        // of the two guesses.
        let mut message = tokens(text.len());
        if message > free / 4 {
            message = match self.client.count_tokens(text).await {
                Some(n) => n,
                None => message.max(dense_tokens(text)),
            };
        }
        if message <= free {
            return None;
        }
        Some(format!(
            "the message is {} KB (~{message} tokens) and the {window}-token context window has room for ~{free} (the system prompt and tools take ~{fixed}, and the reply needs room): it was not sent. Send a smaller part, or name the file instead of pasting it (the model reads it in pieces)",
            text.len().div_ceil(1024)
        ))
    }

    /// Learns the bytes per token from a request the server measured.
    pub(super) fn calibrate(&mut self, body_bytes: usize, prompt_tokens: u64) {
        if prompt_tokens >= 100 {
            let ratio = body_bytes as f64 / prompt_tokens as f64;
            if (1.0..=10.0).contains(&ratio) {
                self.bytes_per_token = ratio;
            }
        }
    }

    /// After an overflow of a request of `body_bytes`: leaves out enough to
    /// get back under the target. Returns what was left out, or None when
    /// nothing more can be.
    pub(super) fn shed(
        &mut self,
        requested: Option<u64>,
        window: Option<u64>,
        body_bytes: usize,
    ) -> Option<String> {
        let parts = self.leave_out(requested, window, body_bytes)?;
        Some(format!(
            "the request outgrew the context window{}: left out {parts} from what the model sees (the log keeps them) and asked again",
            figures(requested, window.or(self.context_window)),
        ))
    }

    /// When a summary could not be made near the window: the oldest
    /// outputs (then turns) left out before the request goes over, as
    /// after an overflow. What was left out, or None.
    pub(super) fn shed_instead_of_summary(&mut self) -> Option<String> {
        let window = self.context_window?;
        let next = self.next_request_tokens();
        let at = u64::from(self.settings.compact_at.max(1));
        if next * 100 <= window * at {
            return None;
        }
        let bytes = (next as f64 * self.bytes_per_token) as usize;
        self.leave_out(None, Some(window), bytes)
    }

    /// Leaves out of what the model sees enough to get back under the
    /// target: old outputs, then early turns, then the newest outputs.
    /// What was left out, in words, or None when nothing could be.
    fn leave_out(
        &mut self,
        requested: Option<u64>,
        window: Option<u64>,
        body_bytes: usize,
    ) -> Option<String> {
        if let Some(r) = requested {
            self.calibrate(body_bytes, r);
        }
        let ratio = self.bytes_per_token;
        let size = requested.unwrap_or((body_bytes as f64 / ratio) as u64) as f64;
        let target = window.or(self.context_window).map_or(size, |w| w as f64) * TARGET_SHARE;
        let mut excess = ((size - target).max(0.0) * ratio) as i64 + 1;
        let n = self.messages.len();
        // The newest tool outputs: what the model is working from now.
        let tail = (1..n)
            .rev()
            .take_while(|&i| self.messages[i].role == Role::Tool)
            .last()
            .unwrap_or(n);
        let current = self.turn_starts.last().map_or(1, |s| s + 1);
        let (mut outputs, mut turns) = (0, Vec::new());
        // 1. Old tool outputs, oldest first.
        let start = self.shed.from.max(1);
        for i in start..tail {
            if excess <= 0 {
                break;
            }
            excess -= self.elide(i);
            outputs += usize::from(self.shed.elided.contains(&i));
        }
        // 2. Whole turns before this one, oldest first.
        while excess > 0 {
            let from = self.shed.from.max(1);
            let Some(next) = self
                .turn_starts
                .iter()
                .map(|s| s + 1)
                .find(|&s| s > from && s <= current)
            else {
                break;
            };
            let view_bytes: usize = (from..next)
                .map(|i| {
                    if self.shed.elided.contains(&i) {
                        placeholder(self.messages[i].text().len()).len() + 40
                    } else {
                        wire_len(&self.messages[i])
                    }
                })
                .sum();
            excess -= view_bytes as i64;
            turns.push(self.turn_of(from));
            self.shed.from = next;
        }
        // 3. The newest outputs too: one too big to fit is read again in
        // parts, as the placeholder says.
        let mut newest = 0;
        for i in tail..n {
            if excess <= 0 {
                break;
            }
            let freed = self.elide(i);
            excess -= freed;
            newest += usize::from(freed > 0);
        }
        if outputs + newest == 0 && turns.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if outputs > 0 {
            parts.push(format!(
                "{outputs} old tool output{}",
                if outputs == 1 { "" } else { "s" }
            ));
        }
        if let (Some(first), Some(last)) = (turns.first(), turns.last()) {
            parts.push(if first == last {
                format!("turn {first}")
            } else {
                format!("turns {first}–{last}")
            });
        }
        if newest > 0 {
            parts.push(format!(
                "{newest} newest tool output{}",
                if newest == 1 { "" } else { "s" }
            ));
        }
        Some(parts.join(" and "))
    }

    /// Leaves one tool output out; the bytes that saves.
    fn elide(&mut self, i: usize) -> i64 {
        let m = &self.messages[i];
        if m.role != Role::Tool || self.shed.elided.contains(&i) || m.text().len() < SMALL_OUTPUT {
            return 0;
        }
        let saved = m.text().len() as i64 - placeholder(m.text().len()).len() as i64;
        self.shed.elided.insert(i);
        saved
    }

    /// The turn the message at `i` belongs to (1-based).
    fn turn_of(&self, i: usize) -> usize {
        self.turn_starts
            .iter()
            .take_while(|&&s| s < i)
            .count()
            .max(1)
    }

    /// Forgets what was left out: the conversation changed under it.
    pub(super) fn reset_shed(&mut self) {
        self.shed = Shed::default();
        self.reset_rebuild();
    }
}

/// A guess at the tokens of text a tokenizer splits finely (code, tables,
/// numbered lines): a token for each word, each digit, each other mark and
/// each line. Above most tokenizers' count for such text, and near it.
fn dense_tokens(text: &str) -> u64 {
    let mut n = 0u64;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_alphabetic() || c == '_' {
            if !in_word {
                n += 1;
            }
            in_word = true;
            continue;
        }
        in_word = false;
        if c.is_ascii_digit() || c == '\n' || !(c.is_whitespace() || c.is_alphanumeric()) {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_first_and_last_lines_and_says_which_went() {
        let text: String = (1..=1500).map(|i| format!("line {i}\n")).collect();
        let out = head_and_tail_lines(&text, 3000, 4096);
        assert!(out.starts_with("line 1\nline 2\n"), "{out}");
        assert!(out.ends_with("line 1499\nline 1500\n"), "{out}");
        assert!(out.len() < 3300, "{}", out.len());
        let said = out.lines().find(|l| l.starts_with("[lines ")).unwrap();
        let kept_head = out.lines().take_while(|l| !l.starts_with('[')).count();
        assert!(
            said.starts_with(&format!("[lines {}–", kept_head + 1))
                && said.contains("of 1500 left out to fit the 4096-token context window"),
            "{said}"
        );
        // Every line is either kept or named as left out.
        let kept = out.lines().filter(|l| l.starts_with("line ")).count();
        let (a, b) = said
            .trim_start_matches("[lines ")
            .split_once(" of")
            .unwrap()
            .0
            .split_once('–')
            .unwrap();
        let gone = b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1;
        assert_eq!(kept + gone, 1500);
    }

    #[test]
    fn figures_read_as_the_server_gave_them() {
        assert_eq!(
            figures(Some(19297), Some(16384)),
            " (19297 tokens for a window of 16384)"
        );
        assert_eq!(figures(None, None), "");
        assert!(advice(None, Some(4096), "too long").contains("/new"));
    }
}
