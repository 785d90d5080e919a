//! Folding a chat-completions SSE stream into one reply. Pure: it takes the
//! `data:` payloads one by one and says what changed, so recorded streams
//! can be fed through it in tests and benchmarks.

use serde::Deserialize;
use serde_json::Value;

use crate::protocol::Usage;

/// What one chunk added, in the order it arrived.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamDelta {
    Content(String),
    Reasoning(String),
    /// A tool call's name became known.
    ToolStart {
        index: usize,
        id: Option<String>,
        name: String,
    },
    /// More of a tool call's arguments.
    ToolArgs {
        index: usize,
        text: String,
    },
}

/// A tool call as it was streamed, before validation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawCall {
    pub index: usize,
    pub id: Option<String>,
    pub name: String,
    pub arguments: String,
}

/// The folded reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub content: String,
    pub reasoning: String,
    pub calls: Vec<RawCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// Completion speed the server measured (llama-server `timings`).
    pub tokens_per_second: Option<f64>,
    /// The stream ended with `data: [DONE]`.
    pub done_marker: bool,
    /// Provider items a later request must send back as they came
    /// (Anthropic's signed thinking blocks, OpenAI's reasoning items).
    pub replay: Vec<Value>,
}

impl Reply {
    /// A reply is complete when the server said how it finished or sent
    /// `[DONE]`; anything else was cut and none of its calls may run.
    pub fn is_complete(&self) -> bool {
        self.finish_reason.is_some() || self.done_marker
    }

    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    timings: Option<Timings>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
    /// An item to replay (from a translated native stream, never a
    /// server's own chunk).
    mm_replay: Option<Value>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Timings {
    cache_n: Option<u64>,
    predicted_per_second: Option<f64>,
}

/// The most tool calls one reply may carry. A hostile server sent 20,000
/// in one reply and mm took 68 s to assemble them (issue 9); models send
/// a handful.
pub const MAX_CALLS: usize = 64;

/// Errors the stream itself reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamError {
    #[error("the server sent a chunk that is not JSON: {0}")]
    BadChunk(String),
    #[error("the server reported an error mid-stream: {0}")]
    Server(String),
    #[error("the reply has more than {MAX_CALLS} tool calls; none of them ran")]
    TooManyCalls,
}

#[derive(Default)]
pub struct Assembler {
    reply: Reply,
    /// Position in `reply.calls` of each streamed index.
    slots: Vec<(usize, usize)>,
    cache_n: Option<u64>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one `data:` payload; returns what it added.
    pub fn push(&mut self, data: &str) -> Result<Vec<StreamDelta>, StreamError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.reply.done_marker = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| StreamError::BadChunk(format!("{} ({e})", short(data))))?;
        if let Some(err) = chunk.error {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(StreamError::Server(msg));
        }
        let mut out = Vec::new();
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, &mut out)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.reply.finish_reason = Some(reason);
            }
        }
        if let Some(t) = chunk.timings {
            if t.cache_n.is_some() {
                self.cache_n = t.cache_n;
            }
            if t.predicted_per_second.is_some() {
                self.reply.tokens_per_second = t.predicted_per_second;
            }
        }
        if let Some(u) = chunk.usage {
            let cached = u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(u.prompt_cache_hit_tokens)
                .unwrap_or(0);
            self.reply.usage = Some(Usage {
                prompt: u.prompt_tokens,
                cached,
                completion: u.completion_tokens,
            });
        }
        Ok(out)
    }

    fn apply_delta(&mut self, delta: Delta, out: &mut Vec<StreamDelta>) -> Result<(), StreamError> {
        if let Some(item) = delta.mm_replay {
            self.reply.replay.push(item);
        }
        let reasoning = delta.reasoning_content.or(delta.reasoning);
        if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
            self.reply.reasoning.push_str(&r);
            out.push(StreamDelta::Reasoning(r));
        }
        if let Some(c) = delta.content.filter(|c| !c.is_empty()) {
            self.reply.content.push_str(&c);
            out.push(StreamDelta::Content(c));
        }
        for (pos, tc) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = tc.index.unwrap_or(pos);
            let slot = self.slot(index)?;
            let call = &mut self.reply.calls[slot];
            if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                call.id = Some(id);
            }
            if let Some(f) = tc.function {
                if let Some(name) = f.name.filter(|n| !n.is_empty()) {
                    let first = call.name.is_empty();
                    call.name.push_str(&name);
                    if first {
                        out.push(StreamDelta::ToolStart {
                            index,
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                }
                let text = match f.arguments {
                    Some(Value::String(s)) => s,
                    // Some servers send the arguments as an object at once.
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                if !text.is_empty() {
                    call.arguments.push_str(&text);
                    out.push(StreamDelta::ToolArgs { index, text });
                }
            }
        }
        Ok(())
    }

    fn slot(&mut self, index: usize) -> Result<usize, StreamError> {
        if let Some(&(_, slot)) = self.slots.iter().find(|(i, _)| *i == index) {
            return Ok(slot);
        }
        if self.reply.calls.len() >= MAX_CALLS {
            return Err(StreamError::TooManyCalls);
        }
        self.reply.calls.push(RawCall {
            index,
            ..Default::default()
        });
        let slot = self.reply.calls.len() - 1;
        self.slots.push((index, slot));
        Ok(slot)
    }

    /// The folded reply, with double-encoded arguments unwrapped.
    pub fn finish(mut self) -> Reply {
        if let (Some(usage), Some(cache_n)) = (self.reply.usage.as_mut(), self.cache_n)
            && usage.cached == 0
        {
            usage.cached = cache_n;
        }
        for call in &mut self.reply.calls {
            call.arguments = unwrap_arguments(&call.arguments);
        }
        self.reply
    }
}

/// A chat-completions chunk with one delta (what the native APIs'
/// translations feed the `Assembler`).
pub fn delta_chunk(delta: Value) -> String {
    serde_json::json!({"choices": [{"index": 0, "delta": delta}]}).to_string()
}

/// The chunks that end a translated stream: its usage, how it finished,
/// and `[DONE]`.
pub fn closing_chunks(prompt: u64, cached: u64, completion: u64, finish: &str) -> Vec<String> {
    vec![
        serde_json::json!({"choices": [], "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }})
        .to_string(),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            .to_string(),
        "[DONE]".into(),
    ]
}

/// The first 200 characters of a chunk, for an error message.
pub fn short(data: &str) -> String {
    data.chars().take(200).collect()
}

/// A whole (not streamed) chat completion, as a server that ignores
/// `stream: true` sends it: None when the text is not one.
pub fn whole_completion(text: &str) -> Option<Reply> {
    #[derive(Deserialize)]
    struct Whole {
        choices: Vec<WholeChoice>,
        usage: Option<WireUsage>,
    }
    #[derive(Deserialize)]
    struct WholeChoice {
        message: Delta,
        finish_reason: Option<String>,
    }
    let whole: Whole = serde_json::from_str(text).ok()?;
    let choice = whole.choices.into_iter().next()?;
    let mut asm = Assembler::new();
    let mut ignored = Vec::new();
    asm.apply_delta(choice.message, &mut ignored).ok()?;
    asm.reply.finish_reason = Some(choice.finish_reason.unwrap_or_else(|| "stop".into()));
    if let Some(u) = whole.usage {
        asm.reply.usage = Some(Usage {
            prompt: u.prompt_tokens,
            cached: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(u.prompt_cache_hit_tokens)
                .unwrap_or(0),
            completion: u.completion_tokens,
        });
    }
    Some(asm.finish())
}

/// Arguments that arrive as a JSON string holding JSON (`"{\"a\":1}"`) are
/// unwrapped; an empty string means no arguments.
pub fn unwrap_arguments(raw: &str) -> String {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return "{}".to_string();
    }
    if let Ok(Value::String(inner)) = serde_json::from_str::<Value>(trimmed)
        && serde_json::from_str::<Value>(&inner).is_ok_and(|v| v.is_object())
    {
        return inner;
    }
    trimmed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> (Reply, Vec<StreamDelta>) {
        let mut a = Assembler::new();
        let mut deltas = Vec::new();
        for l in lines {
            deltas.extend(a.push(l).unwrap());
        }
        (a.finish(), deltas)
    }

    #[test]
    fn content_and_both_reasoning_fields_are_folded() {
        let (r, d) = feed(&[
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":" ok"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(r.content, "Hello");
        assert_eq!(r.reasoning, "hm ok");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert!(r.is_complete());
        assert_eq!(d.len(), 4);
    }

    #[test]
    fn tool_calls_are_assembled_by_index() {
        let (r, d) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"command\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[0].id.as_deref(), Some("a"));
        assert_eq!(r.calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(r.calls[1].name, "bash");
        assert_eq!(r.calls[1].arguments, r#"{"command":"ls"}"#);
        assert!(matches!(&d[0], StreamDelta::ToolStart { name, .. } if name == "read_file"));
        assert!(r.is_complete());
    }

    #[test]
    fn double_encoded_arguments_are_unwrapped() {
        assert_eq!(unwrap_arguments(r#""{\"a\":1}""#), r#"{"a":1}"#);
        assert_eq!(unwrap_arguments(r#"{"a":1}"#), r#"{"a":1}"#);
        assert_eq!(unwrap_arguments(""), "{}");
        // A plain string that is not JSON inside stays as it was.
        assert_eq!(unwrap_arguments(r#""hello""#), r#""hello""#);
    }

    #[test]
    fn usage_from_a_usage_only_chunk_or_the_last_content_chunk() {
        let (r, _) = feed(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":208,"completion_tokens":23,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":180,"predicted_per_second":16.4}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt: 208,
                cached: 180,
                completion: 23
            })
        );
        assert_eq!(r.tokens_per_second, Some(16.4));
        let (r, _) = feed(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":8}}"#,
        ]);
        assert_eq!(r.usage.unwrap().cached, 8);
    }

    #[test]
    fn a_stream_without_finish_or_done_is_incomplete() {
        let (r, _) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"bash","arguments":"{}"}}]}}]}"#,
        ]);
        assert!(!r.is_complete());
    }

    #[test]
    fn a_flood_of_tool_calls_is_refused_quickly() {
        let mut a = Assembler::new();
        let started = std::time::Instant::now();
        let mut err = None;
        for i in 0..20_000 {
            let chunk = format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{i},"id":"c{i}","function":{{"name":"bash","arguments":"{{}}"}}}}]}}}}]}}"#
            );
            if let Err(e) = a.push(&chunk) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(StreamError::TooManyCalls));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_whole_completion_is_a_reply() {
        let r = whole_completion(
            r#"{"choices":[{"message":{"role":"assistant","content":"hi","tool_calls":[{"index":0,"id":"a","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        )
        .unwrap();
        assert_eq!(r.content, "hi");
        assert_eq!(r.calls[0].name, "bash");
        assert!(r.is_complete());
        assert!(whole_completion(r#"{"error":{"message":"x"}}"#).is_none());
    }

    #[test]
    fn errors_in_the_stream_are_reported() {
        let mut a = Assembler::new();
        assert!(matches!(a.push("not json"), Err(StreamError::BadChunk(_))));
        assert!(matches!(
            a.push(r#"{"error":{"message":"context full"}}"#),
            Err(StreamError::Server(m)) if m == "context full"
        ));
    }
}
