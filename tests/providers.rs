//! The native provider APIs end to end: the real `mm -p` against local
//! servers that speak Anthropic's Messages and OpenAI's Responses wire
//! formats (event streams as the real services send them), and Gemini's
//! OpenAI-compatible endpoint with its native models API for the window.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};
use support::{Workspace, stderr, stdout};

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A server that answers each POST with the next event stream of its
/// script and each GET by the end of its path.
struct Native {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Native {
    fn start(streams: Vec<String>, gets: Vec<(&'static str, Value)>) -> Native {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(streams.into_iter().rev().collect::<Vec<_>>()));
        let log = seen.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let path = parts.next().unwrap_or("").to_string();
                let mut headers = Vec::new();
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 {
                        break;
                    }
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let mut body = vec![0u8; len];
                let _ = reader.read_exact(&mut body);
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                log.lock().unwrap().push(Seen {
                    method: method.clone(),
                    path: path.clone(),
                    headers,
                    body,
                });
                if method == "GET" {
                    let found = gets.iter().find(|(end, _)| path.ends_with(end));
                    let (code, v) = match found {
                        Some((_, v)) => (200, v.clone()),
                        None => (404, json!({"error": {"message": "not found"}})),
                    };
                    let text = v.to_string();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                        text.len()
                    );
                    continue;
                }
                let next = script.lock().unwrap().pop();
                match next {
                    Some(sse) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{sse}"
                        );
                    }
                    None => {
                        let text = r#"{"error":{"message":"no more replies"}}"#;
                        let _ = write!(
                            stream,
                            "HTTP/1.1 500 X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                            text.len()
                        );
                    }
                }
            }
        });
        Native { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn posts(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.method == "POST")
            .cloned()
            .collect()
    }
}

/// An event stream: `event:` and `data:` lines as the services send them.
fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

fn anthropic_tool_use() -> String {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"usage":{"input_tokens":800,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I should read it."}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG-1"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"ping"}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"read_file","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"notes.txt\"}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}),
        json!({"type":"message_stop"}),
    ])
}

fn anthropic_text(text: &str) -> String {
    anthropic_text_cached(text, 790)
}

fn anthropic_text_cached(text: &str, cache_read: u64) -> String {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":cache_read,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}),
        json!({"type":"message_stop"}),
    ])
}

#[test]
fn anthropic_messages_carry_tools_thinking_and_cache_breakpoints() {
    let ws = Workspace::new();
    ws.write("notes.txt", "the launch code is 4417\n");
    let server = Native::start(
        vec![
            anthropic_tool_use(),
            anthropic_text("The file says the launch code is 4417."),
        ],
        vec![],
    );
    let out = ws
        .mm()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args([
            "-p",
            "What is the code in my notes?",
            "-provider",
            "anthropic",
            "-model",
            "claude-test",
            "-url",
            &server.url(),
            "-json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(
        result["answer"].as_str().unwrap_or("").contains("4417"),
        "{result}"
    );
    // Usage: cached reads count as prompt tokens, and as cached.
    assert_eq!(result["usage"]["cached"], 790, "{result}");

    let posts = server.posts();
    assert_eq!(posts.len(), 2, "{posts:?}");
    let first = &posts[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("authorization"), None);
    let b = &first.body;
    assert_eq!(b["model"], "claude-test");
    assert_eq!(b["stream"], true);
    assert!(b["max_tokens"].as_u64().unwrap_or(0) > 0, "{b}");
    assert!(b.get("stream_options").is_none(), "{b}");
    let system = b["system"].as_array().unwrap();
    assert!(system[0]["text"].as_str().unwrap().contains("mm"));
    assert_eq!(system.last().unwrap()["cache_control"]["type"], "ephemeral");
    let tools = b["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "read_file" && t["input_schema"]["type"] == "object"),
        "{tools:?}"
    );
    assert_eq!(b["messages"][0]["role"], "user");

    // The second request replays the signed thinking block and the tool
    // use, and answers it with a tool result holding the file.
    let turns = posts[1].body["messages"].as_array().unwrap().clone();
    let assistant = turns
        .iter()
        .find(|t| t["role"] == "assistant")
        .expect("an assistant turn");
    let blocks = assistant["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "thinking", "{blocks:?}");
    assert_eq!(blocks[0]["signature"], "SIG-1");
    assert_eq!(blocks[0]["thinking"], "I should read it.");
    let tool_use = blocks.iter().find(|b| b["type"] == "tool_use").unwrap();
    assert_eq!(tool_use["id"], "toolu_01");
    assert_eq!(tool_use["input"]["path"], "notes.txt");
    let last = turns.last().unwrap();
    assert_eq!(last["role"], "user");
    let result_block = &last["content"][0];
    assert_eq!(result_block["type"], "tool_result");
    assert_eq!(result_block["tool_use_id"], "toolu_01");
    assert!(
        result_block["content"].as_str().unwrap().contains("4417"),
        "{result_block}"
    );
    assert_eq!(
        last["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn doctor_checks_an_anthropic_server_through_the_messages_api() {
    let ws = Workspace::new();
    let add = sse(&[
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","usage":{"input_tokens":50,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_add","name":"add","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2, \"b\": 3}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}),
        json!({"type":"message_stop"}),
    ]);
    let server = Native::start(
        vec![
            anthropic_text_cached("Hello.", 0),
            add,
            anthropic_text_cached("The sum is 5.", 0),
            anthropic_text_cached(r#"{"city": "Paris"}"#, 0),
            anthropic_text_cached("ok", 0),
            anthropic_text_cached("ok", 2400),
        ],
        vec![],
    );
    let out = ws
        .mm()
        .env("ANTHROPIC_API_KEY", "k")
        .args(["doctor", "-provider", "anthropic", "-url", &server.url()])
        .output()
        .unwrap();
    let o = stdout(&out);
    let row = |check: &str| {
        o.lines()
            .find(|l| l.trim_start().starts_with(check))
            .unwrap_or_else(|| panic!("no {check} row:\n{o}"))
            .to_string()
    };
    assert!(row("api").contains("Anthropic Messages"), "{o}");
    assert!(row("context window").contains("200000"), "{o}");
    for check in [
        "streamed reply",
        "tool call",
        "response_format",
        "prompt cache",
    ] {
        assert!(row(check).contains(" ok "), "{check}:\n{o}{}", stderr(&out));
    }
    let posts = server.posts();
    assert!(posts.iter().all(|p| p.path == "/v1/messages"));
    // The tool's result went back as a tool_result block for its use.
    let turns = posts[2].body["messages"].as_array().unwrap();
    assert_eq!(
        turns.last().unwrap()["content"][0]["tool_use_id"],
        "toolu_add"
    );
}

#[test]
fn an_anthropic_error_event_mid_stream_runs_no_tool_and_says_why() {
    let ws = Workspace::new();
    let cut = sse(&[
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","usage":{"input_tokens":5,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"bash","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"touch made\"}"}}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let server = Native::start(vec![cut], vec![]);
    let out = ws
        .mm()
        .env("ANTHROPIC_API_KEY", "k")
        .args([
            "-p",
            "make a file",
            "-provider",
            "anthropic",
            "-url",
            &server.url(),
            "-auto",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Overloaded"), "{}", stderr(&out));
    assert!(!ws.path().join("made").exists());
}

fn responses_stream(events: &[Value]) -> String {
    sse(events)
}

#[test]
fn openai_responses_carry_reasoning_items_across_turns() {
    let ws = Workspace::new();
    ws.write("notes.txt", "answer: 58\n");
    let call = responses_stream(&[
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}),
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC-1"}}),
        json!({"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":""}}),
        json!({"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"{\"path\":\"notes.txt\"}"}),
        json!({"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"notes.txt\"}"}}),
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":700,"input_tokens_details":{"cached_tokens":0},"output_tokens":20}}}),
    ]);
    let answer = responses_stream(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}),
        json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"It says 58."}),
        json!({"type":"response.completed","response":{"id":"resp_2","status":"completed","usage":{"input_tokens":760,"input_tokens_details":{"cached_tokens":640},"output_tokens":6}}}),
    ]);
    let server = Native::start(vec![call, answer], vec![]);
    let out = ws
        .mm()
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "-p",
            "What is the code in my notes?",
            "-provider",
            "openai",
            "-model",
            "o4-mini",
            "-url",
            &server.url(),
            "-think",
            "high",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("It says 58."), "{}", stdout(&out));
    let posts = server.posts();
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].path, "/v1/responses");
    assert_eq!(posts[0].header("authorization"), Some("Bearer sk-test"));
    let b = &posts[0].body;
    assert!(b["instructions"].as_str().unwrap().contains("mm"));
    assert_eq!(b["store"], false);
    assert_eq!(b["reasoning"]["effort"], "high");
    assert_eq!(b["include"][0], "reasoning.encrypted_content");
    assert!(b.get("messages").is_none());
    assert!(
        b["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "function" && t["name"] == "read_file")
    );
    let input = posts[1].body["input"].as_array().unwrap().clone();
    let at = |kind: &str| input.iter().position(|i| i["type"] == kind).unwrap();
    assert_eq!(input[at("reasoning")]["encrypted_content"], "ENC-1");
    assert!(at("reasoning") < at("function_call"));
    let output = &input[at("function_call_output")];
    assert_eq!(output["call_id"], "call_1");
    assert!(output["output"].as_str().unwrap().contains("58"));
}

#[test]
fn api_chat_keeps_an_openai_reasoning_model_on_chat_completions() {
    let ws = Workspace::new();
    ws.write(".mm/config.yaml", "api: chat\n");
    let server = support::Server::start(vec![support::text("fine")]);
    let out = ws
        .mm()
        .env("OPENAI_API_KEY", "sk-test")
        .args(["-p", "hi", "-provider", "openai", "-model", "o4-mini"])
        .args(["-url", &server.url()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
    // An unknown api is refused, naming the key's values.
    ws.write(".mm/config.yaml", "api: grpc\n");
    let out = ws.run(&server, "hi", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("chat, messages, responses"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn gemini_is_spoken_to_as_openai_with_its_window_from_the_models_api() {
    let ws = Workspace::new();
    let server = support::Server::start(vec![support::text("hello from gemini")]);
    server.route(
        "/models/gemini-test",
        json!({"name": "models/gemini-test", "inputTokenLimit": 1048576, "outputTokenLimit": 65536}),
    );
    let out = ws
        .mm()
        .env("GEMINI_API_KEY", "g-key")
        .args(["-p", "hi", "-provider", "gemini", "-model", "gemini-test"])
        .args(["-url", &server.url(), "-json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["answer"], "hello from gemini");
    assert_eq!(result["context_window"], 1048576, "{result}");
    assert_eq!(server.authorizations(), vec!["Bearer g-key".to_string()]);
}
