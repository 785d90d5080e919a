//! Compaction: the older part of the conversation becomes one summary
//! message, so a long session keeps working inside a small window.
//!
//! It is a transaction. The summary is asked for first (from `auxModel`
//! when set) and refused when it is cut, empty, or no smaller than what it
//! would replace; then one `Compacted` record is written and synced; only
//! then does the conversation switch. A crash before the record leaves
//! the conversation whole; the records before it stay in the log (a
//! replay or an export shows them), and a rewind to a summarized turn
//! takes its messages from there. What a small model loses first is
//! carried over word for word: the running task's request, the files the
//! session changed, and the newest messages (an unanswered one among them).

use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::llm::{self, ChatRequest, LlmError, Message, Role};
use crate::protocol::{AgentEvent, Level};
use crate::session::Record;
use crate::session::SUMMARY_HEAD as STAND_IN_HEAD;

/// The newest messages kept word for word, as a share of the window.
const KEEP_SHARE: f64 = 0.25;
/// Without a known window: the share of the conversation kept.
const KEEP_SHARE_UNKNOWN: f64 = 0.3;
/// Characters of one message shown to the summarizer (head and tail).
const MESSAGE_CAP: usize = 2_000;
/// The summary's completion cap, in tokens.
const SUMMARY_TOKENS: u64 = 1_024;
/// The least completion cap a summary gets, however small its part.
const MIN_SUMMARY_TOKENS: u64 = 160;
/// Times the summary request is retried on its newer half after an overflow.
const MAX_HALVINGS: u32 = 3;
/// After a refused summary, automatic compaction waits for this many new
/// messages before it tries again (each try costs a request).
const RETRY_AFTER: usize = 6;

const SUMMARY_SYSTEM: &str = "You summarize a coding session for the assistant that will continue it without seeing it. Keep: what the user asked for, in their words where short; decisions made; files read and files changed, and how; commands run and what they showed (short errors word for word); what is done and what is left to do. Plain text, at most 300 words. No greeting, no tool calls.";

/// Why compaction ran.
pub(super) enum Trigger {
    /// The next request would fill `compactAt` of the window.
    Auto,
    /// `/compact [focus]`.
    Asked(Option<String>),
}

impl Agent {
    /// The conversation begins with a compaction's summary.
    pub(super) fn compacted(&self) -> bool {
        self.messages
            .get(1)
            .is_some_and(|m| m.role == Role::User && m.text().starts_with(STAND_IN_HEAD))
    }

    /// `/compact [focus]`: the error is said as a notice too.
    pub async fn compact_now(
        &mut self,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let focus = focus.filter(|f| !f.trim().is_empty());
        match self.compact(Trigger::Asked(focus), cancel).await {
            Ok(_) => Ok(()),
            Err(why) => {
                let text = format!("not compacted: {why}");
                self.notice(Level::Warning, text.clone());
                Err(text)
            }
        }
    }

    /// Whether the next request would fill `compactAt` of the window and
    /// compaction may be tried.
    pub(super) fn wants_compaction(&self) -> bool {
        let (Some(window), at) = (self.context_window, self.settings.compact_at) else {
            return false;
        };
        at > 0
            && self.messages.len() >= self.compact_retry_at
            && self.next_request_tokens() * 100 > window * u64::from(at)
    }

    /// Compacts near the window, before a request; a refusal is said and
    /// the request goes on (what does not fit is then left out).
    pub(super) async fn auto_compact(&mut self, cancel: &CancellationToken) {
        if let Err(why) = self.compact(Trigger::Auto, cancel).await {
            self.compact_retry_at = self.messages.len() + RETRY_AFTER;
            if !cancel.is_cancelled() {
                // Not on over the window: the oldest outputs go instead.
                let words = match self.shed_instead_of_summary() {
                    Some(parts) => {
                        self.publish_context();
                        format!(
                            "left out {parts} from what the model sees instead (the log keeps them)"
                        )
                    }
                    None => "going on without".to_string(),
                };
                self.notice(
                    Level::Warning,
                    format!("could not compact the conversation: {why}; {words}"),
                );
            }
        }
    }

    /// Replaces the older part of the conversation with a summary.
    pub(super) async fn compact(
        &mut self,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let conv = &self.messages[1..];
        // Asked for between turns: every turn but the last one.
        let split = match (&trigger, self.turn_starts.last()) {
            (Trigger::Asked(_), Some(&s)) if s > 0 => s,
            _ => self.split_point(),
        };
        if split == 0 {
            return Err("there is nothing old enough to summarize yet".into());
        }
        let focus = match &trigger {
            Trigger::Asked(f) => f.clone(),
            Trigger::Auto => None,
        };
        let tokens_before = self.next_request_tokens();
        let replaced_bytes: usize = conv[..split].iter().map(wire_len).sum();
        self.notice(
            Level::Info,
            format!(
                "compacting the conversation: summarizing {split} earlier message{} (~{tokens_before} tokens in the next request)…",
                if split == 1 { "" } else { "s" }
            ),
        );
        let summary = self
            .summarize(conv[..split].to_vec(), focus.as_deref(), cancel)
            .await?;
        let message = Message::user(self.stand_in(&summary, split));
        if wire_len(&message) >= replaced_bytes {
            return Err(format!(
                "the summary ({} bytes) is not smaller than the {split} messages it would replace ({replaced_bytes} bytes)",
                wire_len(&message)
            ));
        }
        let mut next = Vec::with_capacity(self.messages.len() - split + 1);
        next.push(self.messages[0].clone());
        next.push(message.clone());
        next.extend_from_slice(&self.messages[1 + split..]);
        let tokens_after = self.tokens_of(&next);
        // The record first: until it is on disk, nothing has changed.
        self.log
            .append(&Record::Compacted {
                turn: self.turn,
                replaced: split,
                summary: summary.clone(),
                message,
                tokens_before,
                tokens_after,
                focus: focus.clone(),
                asked: matches!(trigger, Trigger::Asked(_)),
            })
            .map_err(|e| e.to_string())?;
        self.messages = next;
        for s in &mut self.turn_starts {
            *s = if *s < split { 0 } else { *s - split + 1 };
        }
        self.reset_shed();
        // Still near the window (the newest messages alone are large): no
        // new summary before the conversation has moved on.
        let still_full = self
            .context_window
            .is_some_and(|w| tokens_after * 100 > w * u64::from(self.settings.compact_at.max(1)));
        self.compact_retry_at = if still_full {
            self.messages.len() + RETRY_AFTER
        } else {
            0
        };
        tracing::info!(split, tokens_before, tokens_after, "compacted");
        self.bus.publish(AgentEvent::Compacted {
            turn: self.turn,
            replaced: split,
            summary,
            tokens_before,
            tokens_after,
            auto: matches!(trigger, Trigger::Auto),
        });
        self.publish_context();
        Ok(())
    }

    /// Where the kept part begins (an index into the conversation, the
    /// system prompt aside): the earliest message boundary whose tail fits
    /// the share kept word for word, never inside a batch of tool results,
    /// and never past the newest boundary. 0: nothing to summarize.
    fn split_point(&self) -> usize {
        let conv = &self.messages[1..];
        let boundaries: Vec<usize> = (1..conv.len())
            .filter(|&i| conv[i].role != Role::Tool)
            .collect();
        let Some(&last) = boundaries.last() else {
            return 0;
        };
        let total: usize = conv.iter().map(wire_len).sum();
        let keep = match self.context_window {
            Some(w) => (w as f64 * KEEP_SHARE * self.bytes_per_token) as usize,
            None => (total as f64 * KEEP_SHARE_UNKNOWN) as usize,
        };
        let mut tail = total;
        let mut from = 0;
        for &b in &boundaries {
            tail -= conv[from..b].iter().map(wire_len).sum::<usize>();
            from = b;
            if tail <= keep {
                return b;
            }
        }
        last
    }

    /// Asks the model (or `auxModel`) for the summary of `part`; on an
    /// overflow, again on its newer half.
    async fn summarize(
        &mut self,
        mut part: Vec<Message>,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let model = self.aux_model();
        // A summary longer than half of what it replaces saves little, and
        // a small model running on costs seconds a token: a tiny
        // conversation's failed summary took 40 s to reach 1,024 tokens.
        let part_tokens =
            (part.iter().map(wire_len).sum::<usize>() as f64 / self.bytes_per_token) as u64;
        let cap = self
            .settings
            .max_tokens
            .map_or(SUMMARY_TOKENS, |m| m.min(SUMMARY_TOKENS))
            .min((part_tokens / 2).max(MIN_SUMMARY_TOKENS));
        let mut left_out = false;
        for _ in 0..=MAX_HALVINGS {
            let mut ask = String::from("The conversation so far:\n\n");
            if left_out {
                ask.push_str("[its oldest part was left out to fit the window]\n\n");
            }
            ask.push_str(&transcript(&part));
            ask.push_str("\n\nWrite the summary now.");
            if let Some(f) = focus {
                ask.push_str(&format!(" Keep above all: {f}"));
            }
            let messages = [Message::system(SUMMARY_SYSTEM), Message::user(ask)];
            let body = llm::build_body(&ChatRequest {
                model: &model,
                messages: &messages,
                tools: &[],
                sampling: &self.settings.sampling,
                max_tokens: Some(cap),
                replay_reasoning: false,
                response_format: None,
            });
            let started = std::time::Instant::now();
            let result = self.stream_aux(&body, cancel).await;
            self.trace(&body, &result, started.elapsed().as_millis() as u64);
            match result {
                Ok(streamed) => {
                    self.append_side_request(&streamed, started)
                        .map_err(|e| e.to_string())?;
                    self.record_usage(&streamed, None);
                    if streamed.reply.truncated() {
                        return Err(format!(
                            "the summary was cut by the token limit ({cap} tokens)"
                        ));
                    }
                    let text = streamed.reply.content.trim().to_string();
                    if text.is_empty() {
                        return Err("the summary came back empty".into());
                    }
                    return Ok(text);
                }
                Err(LlmError::Overflow { .. }) if part.len() > 1 => {
                    let half = part.len() / 2;
                    part.drain(..half);
                    left_out = true;
                    self.notice(
                        Level::Info,
                        "the summary request itself overflowed the window: asking again with the newer half",
                    );
                }
                Err(LlmError::Cancelled) => return Err("cancelled".into()),
                Err(e) => return Err(format!("the summary request failed: {e}")),
            }
        }
        Err("the summary request did not fit the window even in part".into())
    }

    /// The message that stands for the summarized part: the summary, and
    /// what is carried word for word.
    fn stand_in(&self, summary: &str, split: usize) -> String {
        let mut text = format!("{STAND_IN_HEAD}\n{summary}");
        let mut changed: Vec<String> = self
            .made
            .iter()
            .map(|(path, blob)| {
                if blob.is_empty() {
                    format!("{path} (deleted)")
                } else {
                    path.clone()
                }
            })
            .collect();
        changed.sort();
        if !changed.is_empty() {
            const SHOWN: usize = 40;
            let more = changed.len().saturating_sub(SHOWN);
            changed.truncate(SHOWN);
            text.push_str(&format!(
                "\n\n[Files this session changed]\n{}",
                changed.join("\n")
            ));
            if more > 0 {
                text.push_str(&format!("\nand {more} more"));
            }
        }
        // The earlier requests the summary covers, in the user's words: a
        // small model's summary of a fix and "leave prices.py alone" was
        // one sentence saying that nothing needed changing.
        let task_start = self.turn_starts.last().copied();
        let earlier = earlier_requests(&self.messages, &self.turn_starts, split, task_start);
        if !earlier.is_empty() {
            text.push_str(&format!("\n\n{EARLIER_HEAD}\n{}", earlier.join("\n")));
        }
        // The running task's request, when the summary covers it.
        if task_start.is_some_and(|s| s < split) && !self.task.trim().is_empty() {
            text.push_str(&format!(
                "\n\n[The task in progress, in the user's words]\n{}",
                self.task
            ));
        }
        text
    }

    /// Tokens a request with these messages (and the tools) would send.
    pub(super) fn tokens_of(&self, messages: &[Message]) -> u64 {
        let body = llm::build_body(&self.chat_request(messages, true));
        (body.to_string().len() as f64 / self.bytes_per_token).round() as u64
    }
}

/// Where a stand-in lists the requests it covers.
const EARLIER_HEAD: &str = "[Earlier requests, in the user's words]";
/// At most this many of them are listed, the newest.
const EARLIER_SHOWN: usize = 12;

/// The requests of the turns that start before `split` (not the running
/// task's), each its first words before mm's attachments, with those an
/// earlier stand-in in that part listed.
fn earlier_requests(
    messages: &[Message],
    starts: &[usize],
    split: usize,
    task: Option<usize>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(m) = messages
        .get(1)
        .filter(|m| 1 < split && m.role == Role::User)
        && let Some(at) = m.text().find(EARLIER_HEAD)
    {
        let rest = &m.text()[at + EARLIER_HEAD.len()..];
        let list = rest.split("\n\n[").next().unwrap_or("");
        out.extend(
            list.lines()
                .filter(|l| l.starts_with("- "))
                .map(str::to_string),
        );
    }
    for &s in starts {
        if s >= split || Some(s) == task {
            continue;
        }
        let Some(m) = messages.get(s) else { continue };
        let text = m.text();
        let head = text.split("\n\n[").next().unwrap_or(text);
        let head: String = head.split_whitespace().collect::<Vec<_>>().join(" ");
        if head.is_empty() || head.starts_with(STAND_IN_HEAD) {
            continue;
        }
        let cut: String = head.chars().take(160).collect();
        out.push(format!(
            "- {cut}{}",
            if cut.len() < head.len() { "…" } else { "" }
        ));
    }
    let drop = out.len().saturating_sub(EARLIER_SHOWN);
    out.drain(..drop);
    out
}

fn wire_len(m: &Message) -> usize {
    m.to_wire(false).to_string().len()
}

/// Head and tail of a long text.
pub(super) fn capped(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut head = cap * 2 / 3;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - cap / 3;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The part to summarize as plain text, each message capped.
fn transcript(part: &[Message]) -> String {
    let mut out = Vec::new();
    for m in part {
        let text = capped(m.text().trim(), MESSAGE_CAP);
        match m.role {
            Role::User => out.push(format!("User: {text}")),
            Role::Assistant => {
                if !text.is_empty() {
                    out.push(format!("Assistant: {text}"));
                }
                for c in &m.tool_calls {
                    out.push(format!(
                        "Assistant called {}({})",
                        c.name,
                        capped(&c.arguments, 300)
                    ));
                }
            }
            Role::Tool => out.push(format!("Result: {text}")),
            Role::System => {}
        }
    }
    out.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_keeps_the_earlier_requests_in_the_users_words() {
        let m = |role: Role, text: &str| match role {
            Role::System => Message::system(text),
            Role::Assistant => Message::assistant(text),
            _ => Message::user(text),
        };
        let messages = vec![
            m(Role::System, "system"),
            m(
                Role::User,
                &format!(
                    "{STAND_IN_HEAD}\nolder summary\n\n{EARLIER_HEAD}\n- fix total() in cart.py"
                ),
            ),
            m(
                Role::User,
                "Leave shop/prices.py alone.\n\n[shop/prices.py as it is now, for context]\ndef x(): pass",
            ),
            m(Role::Assistant, "ok"),
            m(Role::User, "review cart.py"),
            m(Role::Assistant, "fine"),
            m(Role::User, "the task now"),
        ];
        let got = earlier_requests(&messages, &[1, 2, 4, 6], 6, Some(6));
        assert_eq!(
            got,
            vec![
                "- fix total() in cart.py",
                "- Leave shop/prices.py alone.",
                "- review cart.py"
            ]
        );
        // Only the turns the summary covers.
        assert_eq!(
            earlier_requests(&messages, &[1, 2, 4, 6], 3, Some(6)).len(),
            2
        );
    }

    #[test]
    fn long_texts_keep_their_head_and_tail() {
        let text = format!("{}{}", "a".repeat(3000), "z".repeat(3000));
        let c = capped(&text, 1000);
        assert!(c.starts_with("aaa") && c.ends_with("zzz") && c.len() < 1200);
        assert_eq!(capped("short", 1000), "short");
    }

    #[test]
    fn the_transcript_names_calls_and_results() {
        let mut call = Message::assistant("Reading it.");
        call.tool_calls.push(crate::llm::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.py"}"#.into(),
        });
        let t = transcript(&[
            Message::user("fix a.py"),
            call,
            Message::tool_result("c1", "1: x = 1"),
        ]);
        assert!(t.contains("User: fix a.py"));
        assert!(t.contains(r#"Assistant called read_file({"path":"a.py"})"#));
        assert!(t.contains("Result: 1: x = 1"));
    }
}
