//! The HTTP side of the model client: one streaming request with retries,
//! fallback, timeouts and the process-wide request budget; plus the small
//! probes (`/v1/models`, `/props`) used at start-up.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::stream::{Assembler, Reply, StreamDelta, StreamError};
use crate::config::provider;

mod requests;

/// The window Ollama gives a model nobody configured, when the model has
/// not been loaded yet to say (Ollama's documented default).
const OLLAMA_DEFAULT_CTX: u64 = 4096;

/// A context window a server reported, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowProbe {
    pub tokens: u64,
    pub source: &'static str,
    /// A default assumed, not a figure the server gave for this model.
    pub assumed: bool,
}

impl WindowProbe {
    fn new(tokens: u64, source: &'static str) -> Self {
        WindowProbe {
            tokens,
            source,
            assumed: false,
        }
    }
}

/// Attempts per request, the first included, for connect errors, 429 and 5xx.
const MAX_ATTEMPTS: u32 = 4;
/// The longest wait a `Retry-After` header may impose before mm gives up.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// The most a reply may stream before mm stops reading it. A hostile
/// server streamed 734 MB and mm's memory grew to 1.8 GB (issue 9); a
/// real reply is tokens × a few bytes (32k tokens ≈ 150 KB).
pub const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the model server at {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("the server answered {status}: {body}")]
    Http { status: u16, body: String },
    #[error(
        "no first token after {0:?} (firstTokenTimeout); the server may be overloaded or the prompt too long for it"
    )]
    FirstToken(Duration),
    #[error("the stream stalled: nothing for {0:?} (watchdogTimeout)")]
    Stalled(Duration),
    #[error("the stream was cut before the reply was complete ({0}); none of its tool calls ran")]
    Cut(String),
    #[error("{0}")]
    Stream(#[from] StreamError),
    #[error("the request budget (-max-requests {0}) is used up")]
    Budget(u32),
    #[error(
        "the server sent more than {} MiB for one reply; mm stopped reading and none of it ran",
        MAX_REPLY_BYTES / (1024 * 1024)
    )]
    TooBig,
    #[error("cancelled")]
    Cancelled,
    /// The server could not read the model's own reply (llama-server's
    /// "Failed to parse tool call arguments as JSON"): the model wrote a
    /// call that is not valid. Sending the same request again gets the
    /// same reply, so it is not retried.
    #[error("the model's reply could not be read as a tool call: {0}")]
    BadReply(String),
    /// The server refused the request because it does not fit the
    /// model's context window. The figures are the server's, when it
    /// gives them.
    #[error("the request does not fit the model's context window: {message}")]
    Overflow {
        requested: Option<u64>,
        window: Option<u64>,
        message: String,
    },
}

/// Counts every HTTP attempt by every agent in the process.
#[derive(Debug)]
pub struct RequestBudget {
    limit: Option<u32>,
    used: AtomicU32,
    /// The asking mm's tally (a sub-agent's requests count toward its
    /// asker's budget): one byte appended a request.
    tally: Option<std::sync::Mutex<std::fs::File>>,
}

/// The variable naming the tally file a sub-agent's requests go to.
pub const TALLY_VAR: &str = "MM_REQUEST_TALLY";

impl RequestBudget {
    pub fn new(limit: Option<u32>) -> Self {
        Self {
            limit,
            used: AtomicU32::new(0),
            tally: None,
        }
    }

    /// The budget of a session in this process: when an asker started
    /// it, each request is also told to the asker's tally.
    pub fn for_session(limit: Option<u32>) -> Self {
        let tally = std::env::var_os(TALLY_VAR)
            .filter(|p| !p.is_empty())
            .and_then(|p| {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(std::path::PathBuf::from(p))
                    .ok()
            })
            .map(std::sync::Mutex::new);
        Self {
            tally,
            ..Self::new(limit)
        }
    }

    fn take(&self) -> Result<(), LlmError> {
        let used = self.used.fetch_add(1, Ordering::SeqCst);
        match self.limit {
            Some(limit) if used >= limit => {
                self.used.fetch_sub(1, Ordering::SeqCst);
                Err(LlmError::Budget(limit))
            }
            _ => {
                self.tell(1);
                Ok(())
            }
        }
    }

    fn tell(&self, n: u32) {
        use std::io::Write;
        if let Some(t) = &self.tally
            && let Ok(mut f) = t.lock()
        {
            let _ = f.write_all(&vec![b'.'; n as usize]);
        }
    }

    /// Requests made elsewhere on this budget's account (a sub-agent's).
    pub fn charge(&self, n: u32) {
        self.used.fetch_add(n, Ordering::SeqCst);
        self.tell(n);
    }

    pub fn used(&self) -> u32 {
        self.used.load(Ordering::SeqCst)
    }

    /// Requests left, when there is a limit.
    pub fn remaining(&self) -> Option<u32> {
        self.limit.map(|l| l.saturating_sub(self.used()))
    }
}

/// What happens while a request runs, for the agent to publish.
#[derive(Debug)]
pub enum ClientEvent {
    /// An attempt is being sent (1-based).
    Attempt(u32),
    Delta(StreamDelta),
    Retrying {
        wait: Duration,
        reason: String,
    },
    FellBack {
        url: String,
    },
    Notice(String),
}

/// A finished request.
#[derive(Debug)]
pub struct Streamed {
    pub reply: Reply,
    pub first_token_ms: Option<u64>,
    /// From sending the request to the end of the stream.
    pub elapsed_ms: u64,
    /// False when the server sent the reply whole (it ignored `stream`).
    pub streamed: bool,
}

impl Streamed {
    /// Completion speed: the server's own figure, else completion tokens
    /// over the time after the first token.
    pub fn tokens_per_second(&self) -> Option<f64> {
        if self.reply.tokens_per_second.is_some() {
            return self.reply.tokens_per_second;
        }
        let completion = self.reply.usage?.completion;
        let generating = self.elapsed_ms.saturating_sub(self.first_token_ms?);
        (completion > 0 && generating > 0).then(|| completion as f64 * 1000.0 / generating as f64)
    }
}

pub struct ClientOptions {
    pub base_url: String,
    /// The wire format requests go out in.
    pub api: provider::Api,
    pub fallback: Option<String>,
    pub api_key: Option<String>,
    pub first_token_timeout: Duration,
    pub watchdog: Duration,
}

pub struct LlmClient {
    http: reqwest::Client,
    api: provider::Api,
    base_url: Mutex<String>,
    fallback: Mutex<Option<String>>,
    api_key: Option<String>,
    first_token_timeout: Duration,
    watchdog: Duration,
    /// Whether the server may be asked how a request in flight is going
    /// (`/slots`): a server on this machine that has not said no.
    slots: std::sync::atomic::AtomicBool,
    /// Whether the model takes images, once asked (see `vision`).
    vision: tokio::sync::OnceCell<Option<bool>>,
}

/// How the request a llama-server is working on is going, from `/slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotProgress {
    pub prompt_tokens: u64,
    pub prompt_done: u64,
    /// Tokens generated so far, streamed or not.
    pub decoded: u64,
}

/// What tells this request's slot from another client's.
#[derive(Clone, Debug, Default)]
pub struct SlotKey {
    /// The request's prompt tokens as mm estimates them.
    pub prompt_estimate: u64,
    /// `max_tokens` as sent, if it was.
    pub max_tokens: Option<u64>,
    /// `temperature` as sent, if it was.
    pub temperature: Option<f64>,
}

/// What a llama-server's `/slots` says about this request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotView {
    Ours(SlotProgress),
    /// The server is busy, and not with this request (it waits its turn).
    Another,
    Unknown,
}

impl SlotKey {
    /// The key of a request body as `build_body` makes it.
    pub fn of(body: &Value, prompt_estimate: u64) -> SlotKey {
        SlotKey {
            prompt_estimate,
            max_tokens: body.get("max_tokens").and_then(Value::as_u64),
            temperature: body.get("temperature").and_then(Value::as_f64),
        }
    }

    /// Whether a slot could be working on this request.
    fn fits(&self, slot: &Value) -> bool {
        let figure = |p: &str| slot.pointer(p).and_then(Value::as_u64);
        let prompt = figure("/n_prompt_tokens").unwrap_or(0);
        // The estimate counts bytes, the server tokens of the templated
        // prompt: the same request is within a factor of three (dense
        // text, code and JSON, takes two bytes a token or fewer: a
        // compaction's prompt was taken for another client's at two).
        let est = self.prompt_estimate.max(1);
        // While the server reads a prompt, its count is of the tokens read
        // so far (a batch of 2,048 at a time: 2,053, 4,101, …), not of the
        // prompt: only too large a count says it is another request. A
        // 10k-token prompt read uncached was taken for another client's,
        // and the bar said "server busy with another request" for its
        // first batches.
        let reading = slot
            .get("next_token")
            .and_then(|n| n.get(0).or(Some(n)))
            .and_then(|n| n.get("n_decoded"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
            == 0;
        // No estimate (a helper's requests, whose prompts mm does not
        // see): any size.
        let size = self.prompt_estimate == 0
            || (prompt > 0 && prompt <= est * 3 && (reading || prompt * 3 >= est));
        let cap = self.max_tokens.is_none_or(|m| {
            figure("/params/n_predict").or(figure("/params/max_tokens")) == Some(m)
        });
        let temp = self.temperature.is_none_or(|t| {
            slot.pointer("/params/temperature")
                .and_then(Value::as_f64)
                .is_some_and(|s| (s - t).abs() < 1e-3)
        });
        size && cap && temp
    }

    /// This request's slot among `slots`; `task` keeps the task id of the
    /// slot once found, so another request is never taken for it later.
    pub fn find(&self, slots: &[Value], task: &mut Option<u64>) -> SlotView {
        let busy: Vec<&Value> = slots
            .iter()
            .filter(|s| s.get("is_processing").and_then(Value::as_bool) == Some(true))
            .collect();
        let id = |s: &Value| s.get("id_task").and_then(Value::as_u64);
        let ours: Vec<&Value> = match *task {
            Some(t) => busy.iter().copied().filter(|s| id(s) == Some(t)).collect(),
            None => busy.iter().copied().filter(|s| self.fits(s)).collect(),
        };
        let slot = match ours.as_slice() {
            [slot] => *slot,
            [] if !busy.is_empty() && task.is_none() => return SlotView::Another,
            _ => return SlotView::Unknown,
        };
        if task.is_none() {
            *task = id(slot);
        }
        let figure = |p: &str| slot.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        SlotView::Ours(SlotProgress {
            prompt_tokens: figure("/n_prompt_tokens"),
            // Read from the cache counts as read.
            prompt_done: figure("/n_prompt_tokens_processed") + figure("/n_prompt_tokens_cache"),
            decoded: slot
                .get("next_token")
                .and_then(|n| n.get(0).or(Some(n)))
                .and_then(|n| n.get("n_decoded"))
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    }
}

enum Attempt {
    Done(Streamed),
    Retry(String, Option<Duration>),
}

enum SendError {
    Retry(String),
    Fatal(LlmError),
}

/// A body read to its end, but never more than `MAX_REPLY_BYTES`.
async fn read_capped(resp: reqwest::Response) -> Result<Vec<u8>, LlmError> {
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| LlmError::Cut(root_cause(&e)))?;
        if out.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(LlmError::TooBig);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// An error body as text (capped; empty when it cannot be read).
async fn body_text(resp: reqwest::Response) -> String {
    read_capped(resp)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// `Retry-After` in seconds. Any number a server sends is taken without
/// a panic: too big for a Duration is "longer than mm waits".
fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let value = resp.headers().get("retry-after")?.to_str().ok()?;
    parse_retry_after(value)
}

fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs = value.trim().parse::<f64>().ok()?;
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

fn short_body(text: &str) -> String {
    let msg = error_message(text);
    if msg.is_empty() {
        String::new()
    } else {
        format!(": {msg}")
    }
}

/// The server's own error message when the body is an OpenAI-style error
/// object, else the start of the body.
fn error_message(text: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(text)
        && let Some(m) = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    {
        return m.to_string();
    }
    let t = text.trim();
    let cut: String = t.chars().take(300).collect();
    if cut.len() < t.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A refusal because the prompt is longer than the window, as llama-server
/// (`exceed_context_size_error`), OpenAI (`context_length_exceeded`), vLLM
/// and LM Studio word it; with the token figures when the server gives them.
/// A server's error that says the model's reply did not parse as a tool
/// call (llama-server: "Failed to parse tool call arguments as JSON",
/// "Failed to parse input at pos …"), not that the server failed.
fn bad_reply_of(text: &str) -> Option<LlmError> {
    let message = error_message(text);
    let lower = message.to_lowercase();
    let said = lower.contains("failed to parse tool call")
        || lower.contains("failed to parse input at pos");
    said.then(|| LlmError::BadReply(message.chars().take(300).collect()))
}

fn overflow_of(text: &str) -> Option<LlmError> {
    let v: Option<Value> = serde_json::from_str(text).ok();
    let err = v.as_ref().and_then(|v| v.get("error"));
    let kind = err
        .and_then(|e| e.get("type").or_else(|| e.get("code")))
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = error_message(text);
    let lower = message.to_lowercase();
    let worded = lower.contains("context")
        && (lower.contains("exceed")
            || lower.contains("maximum context length")
            || lower.contains("greater than the context length")
            || lower.contains("too long"))
        // Anthropic's and Gemini's words.
        || lower.starts_with("prompt is too long")
        || lower.contains("exceeds the maximum number of tokens");
    if !(kind == "exceed_context_size_error" || kind == "context_length_exceeded" || worded) {
        return None;
    }
    let figure = |key: &str| err.and_then(|e| e.get(key)).and_then(Value::as_u64);
    let requested = figure("n_prompt_tokens").or_else(|| {
        [
            "request (",
            "requested ",
            "resulted in ",
            "prompt is too long: ",
            "input token count (",
        ]
        .iter()
        .find_map(|k| number_after(&lower, k))
    });
    let window = figure("n_ctx").or_else(|| {
        [
            "context size (",
            "context length is ",
            "context length of ",
            " > ",
            "tokens allowed (",
        ]
        .iter()
        .find_map(|k| number_after(&lower, k))
    });
    Some(LlmError::Overflow {
        requested,
        window,
        message,
    })
}

/// The whole number right after `key` in `text`, if there is one.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A request that failed because the connection it went out on was
/// closed before any answer (hyper's "connection closed before message
/// completed" on a reused connection).
fn closed_early(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The innermost error message: reqwest's outer text only says "error
/// sending request".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A received chunk cut after each line feed (no copy): the event-stream
/// parser copies what follows each line it takes out of its buffer, so a
/// whole reply arriving in one chunk (an instant server, a buffering
/// proxy) cost time in the square of its size.
fn by_lines<E>(chunk: Result<bytes::Bytes, E>) -> Vec<Result<bytes::Bytes, E>> {
    let Ok(bytes) = chunk else {
        return vec![chunk];
    };
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push(Ok(bytes.slice(start..i + 1)));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push(Ok(bytes.slice(start..)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(task: u64, prompt: u64, cap: i64, temp: f64, decoded: u64) -> Value {
        serde_json::json!({"id": 0, "id_task": task, "is_processing": true,
            "n_prompt_tokens": prompt, "n_prompt_tokens_processed": prompt / 2,
            "n_prompt_tokens_cache": 0, "params": {"n_predict": cap, "temperature": temp},
            "next_token": [{"n_decoded": decoded}]})
    }

    /// A llama-server counts a prompt it is reading by the batches read
    /// so far (seen on this machine: 2,053, then 4,101, then 6,149 of a
    /// ~8k prompt): the first batch of a large uncached prompt is ours,
    /// not another client's.
    #[test]
    fn a_large_prompt_being_read_is_ours_from_its_first_batch() {
        let key = SlotKey {
            prompt_estimate: 10_000,
            max_tokens: Some(4096),
            temperature: Some(0.2),
        };
        for read in [2053, 4101, 6149] {
            let mut task = None;
            assert!(
                matches!(
                    key.find(&[slot(11, read, 4096, 0.2, 0)], &mut task),
                    SlotView::Ours(_)
                ),
                "{read}"
            );
        }
        // Once it generates, the count is the whole prompt's: a small one
        // is another request.
        assert_eq!(
            key.find(&[slot(12, 2053, 4096, 0.2, 40)], &mut None),
            SlotView::Another
        );
    }

    #[test]
    fn another_clients_slot_is_not_taken_for_this_request() {
        let key = SlotKey {
            prompt_estimate: 2000,
            max_tokens: Some(4096),
            temperature: Some(0.2),
        };
        let mut task = None;
        // A dense prompt the server counts at 2.6 times the estimate is
        // still this request's size.
        assert!(key.fits(&slot(9, 5200, 4096, 0.2, 0)));
        // The server works for someone else: a 50k prompt, or the same
        // size with another token cap or temperature.
        for other in [
            slot(3, 50_000, 4096, 0.2, 900),
            slot(3, 2100, 512, 0.2, 900),
            slot(3, 2100, 4096, 0.7, 900),
        ] {
            assert_eq!(key.find(&[other], &mut task), SlotView::Another);
            assert_eq!(task, None);
        }
        // Then ours, whose prompt the server counts a little differently.
        let ours = slot(4, 2300, 4096, 0.2000000029, 12);
        let SlotView::Ours(p) = key.find(std::slice::from_ref(&ours), &mut task) else {
            panic!("not found")
        };
        assert_eq!(
            (p.prompt_tokens, p.prompt_done, p.decoded),
            (2300, 1150, 12)
        );
        assert_eq!(task, Some(4));
        // Once found, it is known by its task: a lookalike is not it.
        let lookalike = slot(5, 2300, 4096, 0.2, 3000);
        assert_eq!(
            key.find(std::slice::from_ref(&lookalike), &mut task),
            SlotView::Unknown
        );
        assert!(matches!(
            key.find(&[lookalike, ours], &mut task),
            SlotView::Ours(p) if p.decoded == 12
        ));
        // Two slots that could both be ours: neither is said to be.
        let mut fresh = None;
        let twins = [slot(6, 2000, 4096, 0.2, 1), slot(7, 1900, 4096, 0.2, 1)];
        assert_eq!(key.find(&twins, &mut fresh), SlotView::Unknown);
        // Nothing busy: nothing known.
        assert_eq!(key.find(&[], &mut fresh), SlotView::Unknown);
        // A helper's key has no size: any prompt with its temperature is
        // its request; another temperature is another client's.
        let helper = SlotKey {
            prompt_estimate: 0,
            max_tokens: None,
            temperature: Some(0.2),
        };
        for prompt in [300, 50_000] {
            assert!(matches!(
                helper.find(&[slot(8, prompt, 777, 0.2, 5)], &mut None),
                SlotView::Ours(p) if p.prompt_tokens == prompt
            ));
        }
        assert_eq!(
            helper.find(&[slot(9, 300, 777, 0.9, 5)], &mut None),
            SlotView::Another
        );
    }

    #[test]
    fn a_chunk_is_cut_after_each_line_and_nothing_is_lost() {
        let whole = bytes::Bytes::from_static(b"data: a\n\ndata: b\npart");
        let parts: Vec<bytes::Bytes> = by_lines::<()>(Ok(whole.clone()))
            .into_iter()
            .map(|p| p.unwrap())
            .collect();
        let texts: Vec<&[u8]> = parts.iter().map(std::convert::AsRef::as_ref).collect();
        assert_eq!(texts, vec![&b"data: a\n"[..], b"\n", b"data: b\n", b"part"]);
        assert_eq!(parts.concat(), whole.to_vec());
        assert!(by_lines::<&str>(Err("cut")).pop().unwrap().is_err());
    }

    #[test]
    fn the_budget_counts_across_callers() {
        let b = RequestBudget::new(Some(2));
        assert!(b.take().is_ok());
        assert!(b.take().is_ok());
        assert!(matches!(b.take(), Err(LlmError::Budget(2))));
        assert_eq!(b.used(), 2);
        let unlimited = RequestBudget::new(None);
        for _ in 0..100 {
            assert!(unlimited.take().is_ok());
        }
    }

    #[test]
    fn any_retry_after_is_taken_without_a_panic() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("1e30"), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf"), Some(Duration::MAX));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn context_overflows_are_told_apart_with_their_figures() {
        let figures = |text: &str| match overflow_of(text) {
            Some(LlmError::Overflow {
                requested, window, ..
            }) => Some((requested, window)),
            _ => None,
        };
        // llama-server, as it answers today.
        assert_eq!(
            figures(
                r#"{"error":{"code":400,"message":"request (20030 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":20030,"n_ctx":16384}}"#
            ),
            Some((Some(20030), Some(16384)))
        );
        // vLLM and OpenAI word it in the message.
        assert_eq!(
            figures(
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5,000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","code":400}"#
            ),
            Some((Some(5000), Some(4096)))
        );
        assert_eq!(
            figures(
                r#"{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
            ),
            Some((None, None))
        );
        // Anthropic and Gemini.
        assert_eq!(
            figures(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#
            ),
            Some((Some(208310), Some(200000)))
        );
        assert_eq!(
            figures(
                r#"[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#
            ),
            Some((Some(1200000), Some(1048576)))
        );
        // Other refusals are not overflows.
        assert_eq!(figures(r#"{"error":{"message":"model not found"}}"#), None);
        assert_eq!(figures("Bad Request"), None);
    }

    #[test]
    fn server_error_messages_are_extracted() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(error_message("plain text"), "plain text");
    }
}
