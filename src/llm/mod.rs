//! The model client: the only module that speaks HTTP. OpenAI-compatible
//! chat completions over SSE, tool-call assembly, reasoning, usage; and
//! Anthropic Messages and OpenAI Responses by translation to and from it.

pub mod anthropic;
pub mod client;
pub mod images;
pub mod responses;
pub mod stream;
pub mod types;

use serde_json::{Value, json};

pub use client::{ClientEvent, ClientOptions, LlmClient, LlmError, RequestBudget, Streamed};
pub use images::Image;
pub use stream::{RawCall, Reply, StreamDelta};
pub use types::{Message, Role, ToolCall, ToolSpec};

/// Everything one request needs besides the transport.
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// Passed through from the agent file's `sampling:`.
    pub sampling: &'a serde_json::Map<String, Value>,
    /// Completion cap, unless `sampling` sets `max_tokens` itself.
    pub max_tokens: Option<u64>,
    pub replay_reasoning: bool,
    /// `response_format` (structured output), sent as is.
    pub response_format: Option<&'a Value>,
}

/// The JSON body of a streaming chat-completions request. Serialisation is
/// deterministic (keys in the order they are inserted here), so the same conversation gives the same
/// bytes and a local server's prefix cache keeps matching.
pub fn build_body(req: &ChatRequest<'_>) -> Value {
    let mut body = serde_json::Map::new();
    for (k, v) in req.sampling {
        body.insert(k.clone(), v.clone());
    }
    body.insert("model".into(), json!(req.model));
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    // Images a tool returned go in a user message after the run of tool
    // results (a tool message carries text only).
    let mut shown: Vec<&Image> = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        messages.push(m.to_wire(req.replay_reasoning));
        if m.role == Role::Tool {
            shown.extend(&m.images);
            let run_ends = req.messages.get(i + 1).is_none_or(|n| n.role != Role::Tool);
            if run_ends && !shown.is_empty() {
                let names: Vec<&str> = shown.iter().map(|i| i.name.as_str()).collect();
                let owned: Vec<Image> = shown.drain(..).cloned().collect();
                messages.push(json!({
                    "role": "user",
                    "content": types::image_parts(&format!("[the image a tool returned: {}]", names.join(", ")), &owned),
                }));
            }
        }
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req.tools.iter().map(ToolSpec::to_wire).collect();
        body.insert("tools".into(), Value::Array(tools));
    } else {
        // A tool-less request (the final report) must not carry tool settings.
        body.remove("parallel_tool_calls");
        body.remove("tool_choice");
    }
    if let Some(rf) = req.response_format {
        body.insert("response_format".into(), rf.clone());
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(cap) = req.max_tokens
        && !body.contains_key("max_tokens")
        && !body.contains_key("max_completion_tokens")
    {
        body.insert("max_tokens".into(), json!(cap));
    }
    // Keys in sorted order, as serde_json wrote them before it kept
    // insertion order (for structured answers): the chat template prints
    // the tool schemas as given, and the 1.5B model did measurably worse
    // with them in declaration order (py-add-function 3/3 → 0/3: it wrote
    // to the workspace's parent folder). `response_format` keeps its order:
    // a grammar built from it writes the fields in that order.
    let rf = body.remove("response_format");
    let mut sorted: serde_json::Map<String, Value> = serde_json::Map::new();
    let mut keys: Vec<String> = body.keys().cloned().collect();
    keys.sort();
    for k in keys {
        if let Some(v) = body.remove(&k) {
            sorted.insert(k, sort_keys(v));
        }
    }
    if let Some(rf) = rf {
        sorted.insert("response_format".into(), rf);
    }
    Value::Object(sorted)
}

/// A chat-completions body as it goes out in `api`: as built for chat
/// completions, translated for the native APIs.
pub fn native_body(api: crate::config::Api, chat: &Value) -> Value {
    match api {
        crate::config::Api::Chat => chat.clone(),
        crate::config::Api::Messages => anthropic::body(chat),
        crate::config::Api::Responses => responses::body(chat),
    }
}

/// `v` with every object's keys in sorted order, all the way down.
fn sort_keys(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_s_keys_are_sorted_but_response_format_keeps_its_order() {
        let msgs = [Message::user("hi")];
        let tools = [ToolSpec {
            name: "read_file".into(),
            description: "Read.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}),
        }];
        let rf = json!({"type": "json_schema", "json_schema": {"schema": {"properties": {"zeta": {}, "alpha": {}}}}});
        let sampling = serde_json::Map::new();
        let req = ChatRequest {
            model: "m",
            messages: &msgs,
            tools: &tools,
            sampling: &sampling,
            max_tokens: Some(10),
            replay_reasoning: false,
            response_format: Some(&rf),
        };
        let text = build_body(&req).to_string();
        assert!(
            text.starts_with(
                r#"{"max_tokens":10,"messages":[{"content":"hi","role":"user"}],"model":"m""#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"{"function":{"description":"Read.","name":"read_file","parameters":{"properties":{"limit":{"type":"integer"},"path":{"type":"string"}},"type":"object"}},"type":"function"}"#),
            "{text}"
        );
        assert!(
            text.contains(r#""properties":{"zeta":{},"alpha":{}}"#),
            "{text}"
        );
    }

    #[test]
    fn sampling_passes_through_and_the_cap_yields_to_it() {
        let mut sampling = serde_json::Map::new();
        sampling.insert("temperature".into(), json!(0.0));
        sampling.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": false}),
        );
        let msgs = [Message::user("hi")];
        let req = ChatRequest {
            model: "m",
            messages: &msgs,
            tools: &[],
            sampling: &sampling,
            max_tokens: Some(4096),
            replay_reasoning: false,
            response_format: None,
        };
        let body = build_body(&req);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["stream"], true);
        assert!(body.get("tools").is_none());

        let mut capped = sampling.clone();
        capped.insert("max_tokens".into(), json!(100));
        let req = ChatRequest {
            sampling: &capped,
            ..req
        };
        assert_eq!(build_body(&req)["max_tokens"], 100);
    }

    #[test]
    fn a_tool_s_image_follows_the_run_of_results_in_a_user_message() {
        let img = Image::from_bytes("a.png", b"\x89PNG\r\n\x1a\nxyz").unwrap();
        let mut seen = Message::tool_result("c1", "a.png is an image");
        seen.images.push(img);
        let msgs = [
            Message::user("look"),
            seen,
            Message::tool_result("c2", "other"),
            Message::user("next"),
        ];
        let sampling = serde_json::Map::new();
        let req = ChatRequest {
            model: "m",
            messages: &msgs,
            tools: &[],
            sampling: &sampling,
            max_tokens: None,
            replay_reasoning: false,
            response_format: None,
        };
        let body = build_body(&req);
        let wire = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = wire.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "tool", "tool", "user", "user"]);
        assert!(
            wire[3]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("a.png")
        );
        assert!(
            wire[3]["content"][1]["image_url"]["url"]
                .as_str()
                .unwrap()
                .starts_with(images::SCHEME)
        );
    }

    #[test]
    fn the_same_conversation_gives_the_same_bytes() {
        let msgs = [Message::system("s"), Message::user("u")];
        let sampling = serde_json::Map::new();
        let req = ChatRequest {
            model: "m",
            messages: &msgs,
            tools: &[],
            sampling: &sampling,
            max_tokens: None,
            replay_reasoning: false,
            response_format: None,
        };
        let a = serde_json::to_vec(&build_body(&req)).unwrap();
        let b = serde_json::to_vec(&build_body(&req)).unwrap();
        assert_eq!(a, b);
    }
}
