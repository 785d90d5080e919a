//! OpenAI's Responses API, spoken by translation like `anthropic`: a
//! chat-completions body becomes a Responses body (instructions, input
//! items, function tools), stateless (`store: false`) with the reasoning
//! items' encrypted content asked for and sent back on the next turn; the
//! Responses event stream becomes chat-completions chunks.

use serde_json::{Map, Value, json};

use super::stream::{StreamError, closing_chunks, delta_chunk};

/// Chat-completions keys with another name or no place here.
const CHAT_ONLY: &[&str] = &[
    "messages",
    "tools",
    "tool_choice",
    "stream_options",
    "response_format",
    "reasoning_effort",
    "max_tokens",
    "max_completion_tokens",
    "chat_template_kwargs",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "n",
    "logprobs",
    "top_logprobs",
    "stop",
];

/// The Responses body for a chat-completions body.
pub fn body(chat: &Value) -> Value {
    let mut out = Map::new();
    if let Some(obj) = chat.as_object() {
        for (k, v) in obj {
            if !CHAT_ONLY.contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let (instructions, input) = input_of(chat);
    if !instructions.is_empty() {
        out.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    out.insert("input".into(), Value::Array(input));
    let tools: Vec<Value> = chat["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let f = &t["function"];
            json!({
                "type": "function",
                "name": f["name"],
                "description": f["description"],
                "parameters": f["parameters"],
                "strict": false,
            })
        })
        .collect();
    if !tools.is_empty() {
        out.insert("tools".into(), Value::Array(tools));
        let choice = match &chat["tool_choice"] {
            Value::Object(o) => o
                .get("function")
                .and_then(|f| f.get("name"))
                .map(|n| json!({"type": "function", "name": n})),
            Value::String(s) => Some(json!(s)),
            _ => None,
        };
        if let Some(c) = choice {
            out.insert("tool_choice".into(), c);
        }
    }
    if let Some(cap) = chat["max_tokens"]
        .as_u64()
        .or(chat["max_completion_tokens"].as_u64())
    {
        out.insert("max_output_tokens".into(), json!(cap));
    }
    if let Some(effort) = chat["reasoning_effort"].as_str() {
        let effort = if effort == "max" { "high" } else { effort };
        let reasoning = out.entry("reasoning").or_insert_with(|| json!({}));
        if reasoning.get("effort").is_none() {
            reasoning["effort"] = json!(effort);
        }
    }
    let reasoning_model = chat["model"]
        .as_str()
        .is_some_and(crate::config::provider::is_openai_reasoning_model);
    if reasoning_model || out.contains_key("reasoning") {
        // Stateless: nothing is kept on the server, so the reasoning is
        // asked for encrypted and sent back with the next request.
        out.entry("include")
            .or_insert_with(|| json!(["reasoning.encrypted_content"]));
    }
    if let Some(rf) = chat.get("response_format")
        && rf["type"] == "json_schema"
    {
        let js = &rf["json_schema"];
        let mut format = json!({"type": "json_schema", "name": js["name"], "schema": js["schema"]});
        if let Some(strict) = js.get("strict") {
            format["strict"] = strict.clone();
        }
        out.insert("text".into(), json!({"format": format}));
    }
    out.insert("store".into(), json!(false));
    out.insert("stream".into(), json!(true));
    Value::Object(out)
}

/// The system prompt's parts (the instructions) and the conversation as
/// Responses input items: reasoning replayed, calls and their outputs,
/// images inline.
fn input_of(chat: &Value) -> (Vec<&str>, Vec<Value>) {
    let mut instructions: Vec<&str> = Vec::new();
    let mut input: Vec<Value> = Vec::new();
    for m in chat["messages"].as_array().into_iter().flatten() {
        let text = m["content"].as_str().unwrap_or("");
        match m["role"].as_str().unwrap_or("") {
            "system" if input.is_empty() => instructions.push(text),
            "system" => input.push(json!({"role": "developer", "content": text})),
            "assistant" => {
                for item in m["mm_replay"].as_array().into_iter().flatten() {
                    if item["type"] == "reasoning" {
                        input.push(item.clone());
                    }
                }
                if !text.trim().is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }));
                }
            }
            "tool" => input.push(json!({
                "type": "function_call_output",
                "call_id": m["tool_call_id"],
                "output": text,
            })),
            _ if m["content"].is_array() => {
                let parts: Vec<Value> = m["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| {
                        if let Some(t) = p["text"].as_str() {
                            return Some(json!({"type": "input_text", "text": t}));
                        }
                        let url = p["image_url"]["url"].as_str()?;
                        let url = super::images::resolve(url)
                            .map(|img| img.data_url())
                            .unwrap_or_else(|| url.to_string());
                        Some(json!({"type": "input_image", "image_url": url}))
                    })
                    .collect();
                input.push(json!({"role": "user", "content": parts}));
            }
            _ => input.push(json!({"role": "user", "content": text})),
        }
    }
    (instructions, input)
}

/// Folds the Responses event stream into chat-completions chunks.
#[derive(Default)]
pub struct Events {
    /// Tool-call index of each output item that is a function call, and
    /// whether any of its arguments were streamed.
    calls: Vec<(u64, usize, bool)>,
}

impl Events {
    pub fn new() -> Self {
        Self::default()
    }

    fn call(&mut self, output_index: u64) -> Option<&mut (u64, usize, bool)> {
        self.calls.iter_mut().find(|(i, ..)| *i == output_index)
    }

    /// The chunks one event's `data:` gives (`[DONE]` at the end).
    pub fn push(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| StreamError::BadChunk(format!("{e}: {}", super::stream::short(data))))?;
        let at = ev["output_index"].as_u64().unwrap_or(0);
        let mut out = Vec::new();
        match ev["type"].as_str().unwrap_or("") {
            "response.output_item.added" if ev["item"]["type"] == "function_call" => {
                let item = &ev["item"];
                let n = self.calls.len();
                self.calls.push((at, n, false));
                out.push(delta_chunk(json!({"tool_calls": [{
                    "index": n,
                    "id": item["call_id"],
                    "type": "function",
                    "function": {"name": item["name"], "arguments": ""},
                }]})));
            }
            "response.output_text.delta" => {
                out.push(delta_chunk(json!({"content": ev["delta"]})));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(delta_chunk(json!({"reasoning_content": ev["delta"]})));
            }
            "response.reasoning_summary_part.done" => {
                out.push(delta_chunk(json!({"reasoning_content": "\n\n"})));
            }
            "response.function_call_arguments.delta" => {
                if let Some(c) = self.call(at) {
                    c.2 = true;
                    let n = c.1;
                    out.push(delta_chunk(json!({"tool_calls": [{
                        "index": n,
                        "function": {"arguments": ev["delta"]},
                    }]})));
                }
            }
            "response.output_item.done" => {
                let item = &ev["item"];
                match item["type"].as_str().unwrap_or("") {
                    "reasoning" => {
                        // Sent back without its id: with `store: false`
                        // the server holds nothing that id could name.
                        let mut kept = json!({"type": "reasoning", "summary": item["summary"]});
                        if let Some(enc) = item.get("encrypted_content").filter(|e| !e.is_null()) {
                            kept["encrypted_content"] = enc.clone();
                        }
                        if kept["summary"].is_null() {
                            kept["summary"] = json!([]);
                        }
                        out.push(delta_chunk(json!({"mm_replay": kept})));
                    }
                    "function_call" => {
                        // A server that sends the arguments only whole.
                        if let Some(c) = self.call(at)
                            && !c.2
                        {
                            let n = c.1;
                            out.push(delta_chunk(json!({"tool_calls": [{
                                "index": n,
                                "function": {"arguments": item["arguments"]},
                            }]})));
                        }
                    }
                    _ => {}
                }
            }
            kind @ ("response.completed" | "response.incomplete") => {
                let r = &ev["response"];
                let u = &r["usage"];
                let prompt = u["input_tokens"].as_u64().unwrap_or(0);
                let completion = u["output_tokens"].as_u64().unwrap_or(0);
                let finish = if kind == "response.incomplete" {
                    "length"
                } else if self.calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                };
                let cached = u["input_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0);
                out.extend(closing_chunks(prompt, cached, completion, finish));
            }
            "response.failed" => {
                let e = &ev["response"]["error"];
                return Err(StreamError::Server(format!(
                    "{}: {}",
                    e["code"].as_str().unwrap_or("failed"),
                    e["message"].as_str().unwrap_or("")
                )));
            }
            "error" => {
                return Err(StreamError::Server(format!(
                    "{}: {}",
                    ev["code"].as_str().unwrap_or("error"),
                    ev["message"].as_str().unwrap_or("")
                )));
            }
            _ => {}
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::stream::Assembler;

    #[test]
    fn a_chat_body_becomes_a_stateless_responses_body() {
        let chat = json!({
            "model": "o4-mini",
            "max_tokens": 500,
            "reasoning_effort": "high",
            "stream": true,
            "stream_options": {"include_usage": true},
            "parallel_tool_calls": true,
            "messages": [
                {"role": "system", "content": "You are mm."},
                {"role": "user", "content": "add 2 and 3"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2}"}}
                ], "mm_replay": [{"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "5"},
            ],
            "tools": [{"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {"type": "object"}}}],
        });
        let b = body(&chat);
        assert_eq!(b["instructions"], "You are mm.");
        assert_eq!(b["max_output_tokens"], 500);
        assert_eq!(b["reasoning"]["effort"], "high");
        assert_eq!(b["include"][0], "reasoning.encrypted_content");
        assert_eq!(b["store"], false);
        assert_eq!(b["parallel_tool_calls"], true);
        assert!(b.get("stream_options").is_none() && b.get("messages").is_none());
        assert_eq!(b["tools"][0]["name"], "add");
        let input = b["input"].as_array().unwrap();
        assert_eq!(input[0], json!({"role": "user", "content": "add 2 and 3"}));
        assert_eq!(input[1]["type"], "reasoning");
        assert_eq!(input[1]["encrypted_content"], "gAAA");
        assert_eq!(input[2]["type"], "function_call");
        assert_eq!(input[2]["call_id"], "call_1");
        assert_eq!(input[3]["type"], "function_call_output");
        assert_eq!(input[3]["output"], "5");
    }

    const STREAM: &[&str] = &[
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
        r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"Adding."}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Adding."}],"encrypted_content":"gAAA"}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}"#,
        r#"{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"Let me add."}"#,
        r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"add","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_1","delta":"{\"a\":2,"}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_1","delta":"\"b\":3}"}"#,
        r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"add","arguments":"{\"a\":2,\"b\":3}"}}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":800},"output_tokens":70}}}"#,
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
        assert_eq!(r.content, "Let me add.");
        assert_eq!(r.reasoning, "Adding.");
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.calls[0].id.as_deref(), Some("call_9"));
        assert_eq!(r.calls[0].arguments, "{\"a\":2,\"b\":3}");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        let u = r.usage.unwrap();
        assert_eq!((u.prompt, u.cached, u.completion), (900, 800, 70));
        assert_eq!(r.replay.len(), 1);
        assert_eq!(r.replay[0]["encrypted_content"], "gAAA");
        assert!(r.replay[0].get("id").is_none());
    }

    #[test]
    fn an_image_becomes_an_input_image() {
        let img = crate::llm::Image::from_bytes("a.png", b"\x89PNG\r\n\x1a\nxyz").unwrap();
        let msg = crate::llm::Message {
            images: vec![img.clone()],
            ..crate::llm::Message::user("look")
        };
        let b = body(&json!({"model": "gpt-4.1", "messages": [msg.to_wire(false)]}));
        let parts = &b["input"][0]["content"];
        assert_eq!(parts[0], json!({"type": "input_text", "text": "look"}));
        assert_eq!(parts[1]["type"], "input_image");
        assert_eq!(parts[1]["image_url"], img.data_url());
        assert!(b.get("include").is_none(), "not a reasoning model");
    }

    #[test]
    fn a_failed_response_is_the_server_s_error() {
        let e = Events::new()
            .push(r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}"#)
            .unwrap_err();
        assert_eq!(e, StreamError::Server("server_error: boom".into()));
    }
}
