//! Anthropic's Messages API, spoken by translation: a chat-completions
//! body becomes a Messages body (system and tools first, each with a cache
//! breakpoint, tool calls and results as blocks, thinking blocks replayed
//! with their signatures), and the Messages event stream becomes
//! chat-completions chunks for the one `Assembler`. Pure: bodies and events
//! in, bodies and chunks out.

use serde_json::{Map, Value, json};

use super::stream::{StreamError, closing_chunks, delta_chunk};

/// The version header every request carries.
pub const VERSION: &str = "2023-06-01";

/// A reply's cap when the request sets none (Messages requires one).
const DEFAULT_MAX_TOKENS: u64 = 8192;

/// Thinking budgets for `-think` levels (sent as `reasoning_effort`).
fn thinking_budget(effort: &str) -> Option<u64> {
    match effort {
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16384),
        "xhigh" | "max" => Some(32000),
        _ => None,
    }
}

/// Chat-completions keys that have no place in a Messages body.
const CHAT_ONLY: &[&str] = &[
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream_options",
    "response_format",
    "reasoning_effort",
    "max_completion_tokens",
    "chat_template_kwargs",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "n",
    "logprobs",
    "top_logprobs",
    "user",
    "stop",
];

/// A tool-use id as the API accepts it (`[A-Za-z0-9_-]+`).
fn tool_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "call".into()
    } else {
        clean
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Appends `blocks` as a turn of `role`, merged into the last turn when
/// it has the same role (the API wants turns to alternate).
fn push_turn(out: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = out.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    out.push(json!({"role": role, "content": blocks}));
}

/// Content parts (text and images) as blocks; an image by its data.
fn parts(content: &Value) -> Vec<Value> {
    let mut blocks = Vec::new();
    for p in content.as_array().into_iter().flatten() {
        if let Some(t) = p["text"].as_str().filter(|t| !t.is_empty()) {
            blocks.push(text_block(t));
        }
        let url = p["image_url"]["url"].as_str().unwrap_or("");
        if let Some(img) = super::images::resolve(url) {
            blocks.push(json!({"type": "image", "source": {
                "type": "base64", "media_type": img.media_type, "data": img.data,
            }}));
        } else if url.starts_with("http") {
            blocks.push(json!({"type": "image", "source": {"type": "url", "url": url}}));
        }
    }
    if blocks.is_empty() {
        blocks.push(text_block("(empty)"));
    }
    blocks
}

/// The blocks of an assistant message: replayed thinking, text, tool uses.
fn assistant_blocks(m: &Value) -> Vec<Value> {
    let mut blocks: Vec<Value> = m["mm_replay"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if let Some(text) = m["content"].as_str().filter(|t| !t.trim().is_empty()) {
        blocks.push(text_block(text));
    }
    for call in m["tool_calls"].as_array().into_iter().flatten() {
        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
        let input = match serde_json::from_str::<Value>(args) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        };
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_id(call["id"].as_str().unwrap_or("")),
            "name": call["function"]["name"],
            "input": input,
        }));
    }
    if blocks.is_empty() {
        blocks.push(text_block("(no answer)"));
    }
    blocks
}

/// The Messages body for a chat-completions body.
pub fn body(chat: &Value) -> Value {
    let mut out = Map::new();
    // What the agent file's `sampling:` added passes through (`thinking`,
    // `top_k`, `metadata`...), less what only chat completions knows.
    if let Some(obj) = chat.as_object() {
        for (k, v) in obj {
            if !CHAT_ONLY.contains(&k.as_str()) && k != "max_tokens" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let (system, mut turns) = turns_of(chat);
    let tools: Vec<Value> = chat["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let f = &t["function"];
            json!({
                "name": f["name"],
                "description": f["description"],
                "input_schema": f["parameters"],
            })
        })
        .collect();
    // Cache breakpoints: the end of the stable prefix (tools, then the
    // system prompt) and the end of the conversation so far, so the next
    // request reads both from the cache.
    let mut system_blocks: Vec<Value> = system
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| text_block(s))
        .collect();
    let mut tools = tools;
    if let Some(last) = system_blocks.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    } else if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    if let Some(block) = turns
        .last_mut()
        .and_then(|t| t["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    if !system_blocks.is_empty() {
        out.insert("system".into(), Value::Array(system_blocks));
    }
    out.insert("messages".into(), Value::Array(turns));
    if !tools.is_empty() {
        out.insert("tools".into(), Value::Array(tools));
        out.insert("tool_choice".into(), tool_choice(chat));
    }
    if let Some(stop) = chat.get("stop") {
        let list = match stop {
            Value::String(s) => json!([s]),
            other => other.clone(),
        };
        out.insert("stop_sequences".into(), list);
    }
    let max_tokens = thinking(chat, &mut out);
    // Structured output: the schema the answer is decoded to
    // (`output_config.format`); the agent checks the answer against the
    // schema as it does on every API.
    if let Some(rf) = chat.get("response_format")
        && rf["type"] == "json_schema"
    {
        let format = json!({"type": "json_schema", "schema": rf["json_schema"]["schema"]});
        let config = out.entry("output_config").or_insert_with(|| json!({}));
        if let Some(c) = config.as_object_mut() {
            c.entry("format").or_insert(format);
        }
    }
    out.insert("max_tokens".into(), json!(max_tokens));
    out.insert("stream".into(), json!(true));
    Value::Object(out)
}

/// The system prompt's parts and the conversation as Messages turns
/// (a tool result opening the user turn after its tool use).
fn turns_of(chat: &Value) -> (Vec<String>, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut turns: Vec<Value> = Vec::new();
    for m in chat["messages"].as_array().into_iter().flatten() {
        let text = m["content"].as_str().unwrap_or("");
        match m["role"].as_str().unwrap_or("") {
            "system" if turns.is_empty() => system.push(text.to_string()),
            "system" => push_turn(
                &mut turns,
                "user",
                vec![text_block(&format!("[system note] {text}"))],
            ),
            "assistant" => push_turn(&mut turns, "assistant", assistant_blocks(m)),
            "tool" => push_turn(
                &mut turns,
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": tool_id(m["tool_call_id"].as_str().unwrap_or("")),
                    "content": if text.is_empty() { "(no output)" } else { text },
                })],
            ),
            _ if m["content"].is_array() => push_turn(&mut turns, "user", parts(&m["content"])),
            _ => push_turn(
                &mut turns,
                "user",
                vec![text_block(if text.is_empty() { "(empty)" } else { text })],
            ),
        }
    }
    // A tool result must open the user turn after the tool use: a note
    // merged in before it moves behind.
    for t in &mut turns {
        if let Some(content) = t["content"].as_array_mut() {
            content.sort_by_key(|b| b["type"] != "tool_result");
        }
    }
    (system, turns)
}

/// Chat completions' `tool_choice` (and `parallel_tool_calls`) as the
/// Messages API says them.
fn tool_choice(chat: &Value) -> Value {
    let choice = match &chat["tool_choice"] {
        Value::String(s) if s == "required" => Some(json!({"type": "any"})),
        Value::String(s) if s == "none" => Some(json!({"type": "none"})),
        Value::Object(o) => o
            .get("function")
            .and_then(|f| f.get("name"))
            .map(|n| json!({"type": "tool", "name": n})),
        _ => None,
    };
    let mut choice = choice.unwrap_or_else(|| json!({"type": "auto"}));
    if chat["parallel_tool_calls"] == json!(false) {
        choice["disable_parallel_tool_use"] = json!(true);
    }
    choice
}

/// Extended thinking from `reasoning_effort` (unless `sampling:` set
/// `thinking` itself), and the reply's cap with its budget in it.
fn thinking(chat: &Value, out: &mut Map<String, Value>) -> u64 {
    let mut max_tokens = chat["max_tokens"]
        .as_u64()
        .or(chat["max_completion_tokens"].as_u64())
        .unwrap_or(DEFAULT_MAX_TOKENS);
    if !out.contains_key("thinking")
        && let Some(budget) = chat["reasoning_effort"].as_str().and_then(thinking_budget)
    {
        out.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    if let Some(budget) = out
        .get("thinking")
        .filter(|t| t["type"] == "enabled")
        .and_then(|t| t["budget_tokens"].as_u64())
    {
        // The budget is part of the cap, and thinking takes no sampling
        // settings but the defaults.
        max_tokens = max_tokens.max(budget + DEFAULT_MAX_TOKENS.min(4096));
        out.remove("temperature");
        out.remove("top_k");
        out.remove("top_p");
    }
    max_tokens
}

/// Folds the Messages event stream into chat-completions chunks.
#[derive(Default)]
pub struct Events {
    /// Tool-call index of each content block that is a tool use.
    tools: Vec<(u64, usize)>,
    /// The thinking block being streamed, by content-block index.
    thinking: Option<(u64, Value)>,
    input_tokens: u64,
    cache_read: u64,
    cache_write: u64,
    output_tokens: u64,
    stop_reason: Option<String>,
}

impl Events {
    pub fn new() -> Self {
        Self::default()
    }

    /// The chunks one event's `data:` gives (`[DONE]` at the end).
    pub fn push(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| StreamError::BadChunk(format!("{e}: {}", super::stream::short(data))))?;
        let index = ev["index"].as_u64().unwrap_or(0);
        let mut out = Vec::new();
        match ev["type"].as_str().unwrap_or("") {
            "message_start" => {
                let u = &ev["message"]["usage"];
                self.input_tokens = u["input_tokens"].as_u64().unwrap_or(0);
                self.cache_read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
                self.cache_write = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
                self.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => self.block_start(index, &ev["content_block"], &mut out),
            "content_block_delta" => {
                let d = &ev["delta"];
                match d["type"].as_str().unwrap_or("") {
                    "text_delta" => out.push(delta_chunk(json!({"content": d["text"]}))),
                    "input_json_delta" => {
                        if let Some(&(_, n)) = self.tools.iter().find(|(i, _)| *i == index) {
                            out.push(delta_chunk(json!({"tool_calls": [{
                                "index": n,
                                "function": {"arguments": d["partial_json"]},
                            }]})));
                        }
                    }
                    "thinking_delta" => {
                        let t = d["thinking"].as_str().unwrap_or("");
                        if let Some((i, block)) = &mut self.thinking
                            && *i == index
                        {
                            let all = format!("{}{t}", block["thinking"].as_str().unwrap_or(""));
                            block["thinking"] = json!(all);
                        }
                        out.push(delta_chunk(json!({"reasoning_content": t})));
                    }
                    "signature_delta" => {
                        if let Some((i, block)) = &mut self.thinking
                            && *i == index
                        {
                            let sig = d["signature"].as_str().unwrap_or("");
                            let all = format!("{}{sig}", block["signature"].as_str().unwrap_or(""));
                            block["signature"] = json!(all);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some((i, _)) = &self.thinking
                    && *i == index
                    && let Some((_, block)) = self.thinking.take()
                {
                    out.push(delta_chunk(json!({"mm_replay": block})));
                }
            }
            "message_delta" => {
                if let Some(r) = ev["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(n) = ev["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = n;
                }
            }
            "message_stop" => {
                let finish = match self.stop_reason.as_deref() {
                    Some("tool_use") => "tool_calls",
                    Some("max_tokens") => "length",
                    _ => "stop",
                };
                out.extend(closing_chunks(
                    self.input_tokens + self.cache_read + self.cache_write,
                    self.cache_read,
                    self.output_tokens,
                    finish,
                ));
            }
            "error" => {
                let e = &ev["error"];
                return Err(StreamError::Server(format!(
                    "{}: {}",
                    e["type"].as_str().unwrap_or("error"),
                    e["message"].as_str().unwrap_or("")
                )));
            }
            // `ping`, and event types added later.
            _ => {}
        }
        Ok(out)
    }

    /// A content block begins: a tool call's first chunk, thinking kept
    /// for its replay, or its first text.
    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<String>) {
        match block["type"].as_str().unwrap_or("") {
            "tool_use" => {
                let n = self.tools.len();
                self.tools.push((index, n));
                out.push(delta_chunk(json!({"tool_calls": [{
                    "index": n,
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": ""},
                }]})));
            }
            "thinking" => {
                self.thinking = Some((index, block.clone()));
                if let Some(t) = block["thinking"].as_str().filter(|t| !t.is_empty()) {
                    out.push(delta_chunk(json!({"reasoning_content": t})));
                }
            }
            "redacted_thinking" => {
                out.push(delta_chunk(json!({"mm_replay": block})));
            }
            _ => {
                if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(delta_chunk(json!({"content": t})));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::stream::Assembler;

    fn chat() -> Value {
        json!({
            "model": "claude-x",
            "max_tokens": 1000,
            "temperature": 0.2,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are mm."},
                {"role": "user", "content": "add 2 and 3"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call.1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}
                ], "mm_replay": [{"type": "thinking", "thinking": "sum", "signature": "sig"}]},
                {"role": "tool", "tool_call_id": "call.1", "content": "5"},
                {"role": "user", "content": "[mm: check it]"},
            ],
            "tools": [{"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {"type": "object"}}}],
            "parallel_tool_calls": false,
        })
    }

    #[test]
    fn a_chat_body_becomes_a_messages_body() {
        let b = body(&chat());
        assert_eq!(b["model"], "claude-x");
        assert_eq!(b["max_tokens"], 1000);
        assert_eq!(b["temperature"], 0.2);
        assert!(b.get("stream_options").is_none());
        assert_eq!(b["system"][0]["text"], "You are mm.");
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(b["tool_choice"]["disable_parallel_tool_use"], true);
        let turns = b["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 3, "{turns:?}");
        assert_eq!(turns[1]["content"][0]["type"], "thinking");
        assert_eq!(turns[1]["content"][0]["signature"], "sig");
        assert_eq!(turns[1]["content"][1]["type"], "tool_use");
        assert_eq!(turns[1]["content"][1]["id"], "call_1");
        assert_eq!(turns[1]["content"][1]["input"]["b"], 3);
        // The tool result opens the next user turn, the note follows it,
        // and the conversation's end is a cache breakpoint.
        assert_eq!(turns[2]["content"][0]["type"], "tool_result");
        assert_eq!(turns[2]["content"][0]["tool_use_id"], "call_1");
        assert_eq!(turns[2]["content"][1]["text"], "[mm: check it]");
        assert_eq!(turns[2]["content"][1]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn an_image_becomes_an_image_block_with_its_data() {
        let img = crate::llm::Image::from_bytes("a.png", b"\x89PNG\r\n\x1a\nxyz").unwrap();
        let msg = crate::llm::Message {
            images: vec![img.clone()],
            ..crate::llm::Message::user("look")
        };
        let chat = json!({"model": "c", "messages": [msg.to_wire(false)]});
        let b = body(&chat);
        let blocks = &b["messages"][0]["content"];
        assert_eq!(blocks[0]["text"], "look");
        assert_eq!(blocks[1]["type"], "image");
        assert_eq!(blocks[1]["source"]["media_type"], "image/png");
        assert_eq!(blocks[1]["source"]["data"], img.data);
    }

    #[test]
    fn a_json_schema_response_format_becomes_the_output_format() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false});
        let mut c = chat();
        c["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "Country", "strict": true, "schema": schema}});
        let b = body(&c);
        assert!(b.get("response_format").is_none());
        assert_eq!(b["output_config"]["format"]["type"], "json_schema");
        assert_eq!(b["output_config"]["format"]["schema"], schema);
        // Without one, no output_config is sent.
        assert!(body(&chat()).get("output_config").is_none());
    }

    #[test]
    fn think_levels_become_a_thinking_budget_without_sampling_settings() {
        let mut c = chat();
        c["reasoning_effort"] = json!("medium");
        let b = body(&c);
        assert_eq!(b["thinking"]["budget_tokens"], 8192);
        assert!(b["max_tokens"].as_u64().unwrap() > 8192);
        assert!(b.get("temperature").is_none());
        assert!(b.get("reasoning_effort").is_none());
    }

    /// A recorded shape of the Messages stream: thinking, text, a tool use.
    const STREAM: &[&str] = &[
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Add them."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Adding."}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"add","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2,"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":" \"b\": 3}"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}"#,
        r#"{"type":"message_stop"}"#,
    ];

    #[test]
    fn the_event_stream_folds_into_one_reply() {
        let mut ev = Events::new();
        let mut asm = Assembler::new();
        for data in STREAM {
            for chunk in ev.push(data).unwrap() {
                asm.push(&chunk).unwrap();
            }
        }
        let r = asm.finish();
        assert_eq!(r.content, "Adding.");
        assert_eq!(r.reasoning, "Add them.");
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.calls[0].id.as_deref(), Some("toolu_01"));
        assert_eq!(r.calls[0].name, "add");
        assert_eq!(r.calls[0].arguments, "{\"a\": 2, \"b\": 3}");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert!(r.done_marker);
        let u = r.usage.unwrap();
        assert_eq!((u.prompt, u.cached, u.completion), (312, 300, 40));
        assert_eq!(
            r.replay,
            vec![json!({"type": "thinking", "thinking": "Add them.", "signature": "EqQB"})]
        );
    }

    #[test]
    fn a_cut_stream_is_not_complete_and_an_error_event_is_the_server_s() {
        let mut ev = Events::new();
        let mut asm = Assembler::new();
        for data in &STREAM[..12] {
            for chunk in ev.push(data).unwrap() {
                asm.push(&chunk).unwrap();
            }
        }
        assert!(!asm.finish().is_complete());
        let e = Events::new()
            .push(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(
            e,
            StreamError::Server("overloaded_error: Overloaded".into())
        );
    }
}
