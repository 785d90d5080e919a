//! A scripted OpenAI-compatible server for the tests, on 127.0.0.1: each
//! chat request gets the next reply of its script (text, reasoning, tool
//! calls, cut streams, 429s, stalls), and every request body is recorded.
//! Plus helpers to run the real `mm` binary in a temp workspace.
#![allow(dead_code)]

pub mod term;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer to a chat request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// SSE events, each `data:` payload written after its delay; the
    /// connection closes after the last one.
    Sse(Vec<(u64, String)>),
    /// A raw SSE body, as recorded from a real server.
    Raw(String),
    /// A non-200 answer.
    Status {
        code: u16,
        body: String,
        retry_after: Option<u64>,
    },
    /// Headers, then these events, then silence for `secs` before closing.
    StallAfter(Vec<String>, u64),
    /// A whole HTTP response, byte for byte (status line, headers, body).
    Response(Vec<u8>),
    /// The request is read, then the connection closes with no answer (a
    /// server dropping a kept-alive connection as mm sends on it).
    Close,
}

#[derive(Default)]
struct State {
    script: Vec<Reply>,
    requests: Vec<Value>,
    /// The same requests, byte for byte as they came.
    raw: Vec<String>,
    /// Replies to mm's focused requests of its own (see `is_side`).
    side: Vec<Reply>,
    side_requests: Vec<Value>,
    /// The `Authorization` header of each chat request ("" when none).
    authorizations: Vec<String>,
    /// `/slots` as a llama-server busy with the latest chat request that
    /// generates this many tokens a second, streamed or not (None: 404).
    slots_rate: Option<u64>,
    /// `/slots` shows another client's request, not this one's.
    slots_other: bool,
    last_chat: Option<std::time::Instant>,
    /// The last chat request's size in bytes, its `max_tokens` and
    /// `temperature`: what a llama-server's slot shows of it.
    last_shape: (usize, Value, Value),
    /// Answers for other paths (a server's own probes: `/api/ps`,
    /// `/api/show`, `/props`), by the end of the path, before the
    /// built-in ones.
    routes: Vec<(String, Value)>,
}

/// A request mm makes apart from the conversation (a focused request for
/// one function or one file): known by its system message. These are
/// answered from their own script, "No change." when it is empty, so a
/// test's script is the conversation's alone.
fn is_side(body: &Value) -> bool {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    system.starts_with("You fix bugs.")
        || system.starts_with("You change code as asked.")
        || system.starts_with("You write test checks")
        || system.starts_with("You write code.")
}

pub struct Server {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl Server {
    pub fn start(script: Vec<Reply>) -> Server {
        Self::with_side(script, Vec::new())
    }

    /// A server that answers mm's focused requests with `side`, in order.
    pub fn with_side(script: Vec<Reply>, side: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            script: script.into_iter().rev().collect(),
            requests: Vec::new(),
            raw: Vec::new(),
            side: side.into_iter().rev().collect(),
            side_requests: Vec::new(),
            authorizations: Vec::new(),
            slots_rate: None,
            slots_other: false,
            last_chat: None,
            last_shape: (0, Value::Null, Value::Null),
            routes: Vec::new(),
        }));
        let st = state.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let st = st.clone();
                thread::spawn(move || handle(stream, st));
            }
        });
        Server { port, state }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Bodies of the chat requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The chat requests' bodies byte for byte, as mm sent them.
    pub fn raw_requests(&self) -> Vec<String> {
        self.state.lock().unwrap().raw.clone()
    }

    /// The `Authorization` header of each chat request so far.
    pub fn authorizations(&self) -> Vec<String> {
        self.state.lock().unwrap().authorizations.clone()
    }

    /// Bodies of mm's focused requests received so far.
    pub fn side_requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().side_requests.clone()
    }

    /// Answers `/slots` as a llama-server generating `rate` tokens a
    /// second for the latest chat request.
    pub fn serve_slots(&self, rate: u64) {
        self.state.lock().unwrap().slots_rate = Some(rate);
    }

    /// `/slots` says the server is busy generating `rate` tokens a second
    /// for another client (a prompt of another size, another token cap).
    pub fn serve_other_clients_slot(&self, rate: u64) {
        let mut st = self.state.lock().unwrap();
        st.slots_rate = Some(rate);
        st.slots_other = true;
    }

    /// Answers requests to a path ending in `suffix` with `body` (in
    /// place of the built-in answer, if any).
    pub fn route(&self, suffix: &str, body: Value) {
        self.state
            .lock()
            .unwrap()
            .routes
            .push((suffix.to_string(), body));
    }

    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }
}

fn handle(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut content_length = 0usize;
    let mut authorization = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        if l.to_ascii_lowercase().starts_with("authorization:") {
            authorization = l["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0u8; content_length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let routed = {
        let st = state.lock().unwrap();
        st.routes
            .iter()
            .find(|(suffix, _)| path.ends_with(suffix.as_str()))
            .map(|(_, v)| v.clone())
    };
    if let Some(v) = routed {
        return respond_json(&mut stream, 200, &v);
    }
    if path.ends_with("/models") {
        return respond_json(
            &mut stream,
            200,
            &json!({"object":"list","data":[{"id":"scripted-model","object":"model"}]}),
        );
    }
    if path.ends_with("/props") {
        return respond_json(
            &mut stream,
            200,
            &json!({"default_generation_settings":{"n_ctx":8192}}),
        );
    }
    if path.ends_with("/slots") {
        let st = state.lock().unwrap();
        if let (Some(rate), Some(at)) = (st.slots_rate, st.last_chat) {
            let decoded = (at.elapsed().as_secs_f64() * rate as f64) as u64;
            // A slot as llama-server shows it: this request's (about four
            // bytes a token, the token cap and temperature it was sent
            // with) or another client's.
            let (bytes, cap, temp) = st.last_shape.clone();
            let slot = if st.slots_other {
                json!({"id":0,"id_task":90,"is_processing":true,"n_prompt_tokens":52000,"n_prompt_tokens_processed":52000,"params":{"n_predict":77,"temperature":1.5},"next_token":[{"has_next_token":true,"n_decoded":decoded}]})
            } else {
                json!({"id":0,"id_task":7,"is_processing":true,"n_prompt_tokens":bytes / 4,"n_prompt_tokens_processed":bytes / 4,"params":{"n_predict":cap,"temperature":temp},"next_token":[{"has_next_token":true,"n_decoded":decoded}]})
            };
            drop(st);
            return respond_json(&mut stream, 200, &json!([slot]));
        }
    }
    if !path.ends_with("/chat/completions") {
        return respond_json(&mut stream, 404, &json!({"error":{"message":"not found"}}));
    }
    let reply = {
        let mut st = state.lock().unwrap();
        let raw = String::from_utf8_lossy(&body).into_owned();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        st.last_chat = Some(std::time::Instant::now());
        st.authorizations.push(authorization);
        st.last_shape = (
            raw.len(),
            body.get("max_tokens").cloned().unwrap_or(json!(-1)),
            body.get("temperature").cloned().unwrap_or(json!(0.8)),
        );
        if is_side(&body) {
            st.side_requests.push(body);
            Some(st.side.pop().unwrap_or_else(|| text("No change.")))
        } else {
            st.raw.push(raw);
            st.requests.push(body);
            st.script.pop()
        }
    };
    let Some(reply) = reply else {
        return respond_json(
            &mut stream,
            500,
            &json!({"error":{"message":"the test script has no more replies"}}),
        );
    };
    match reply {
        Reply::Status {
            code,
            body,
            retry_after,
        } => {
            let extra = retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            let _ = write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Reply::Sse(events) => {
            sse_headers(&mut stream);
            for (delay, data) in events {
                if delay > 0 {
                    thread::sleep(Duration::from_millis(delay));
                }
                if write!(stream, "data: {data}\n\n").is_err() {
                    return;
                }
                let _ = stream.flush();
            }
        }
        Reply::Raw(text) => {
            sse_headers(&mut stream);
            let _ = stream.write_all(text.as_bytes());
        }
        Reply::Response(bytes) => {
            let _ = stream.write_all(&bytes);
        }
        Reply::Close => {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        Reply::StallAfter(events, secs) => {
            sse_headers(&mut stream);
            for data in events {
                let _ = write!(stream, "data: {data}\n\n");
                let _ = stream.flush();
            }
            thread::sleep(Duration::from_secs(secs));
        }
    }
}

fn sse_headers(stream: &mut TcpStream) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    );
    let _ = stream.flush();
}

fn respond_json(stream: &mut TcpStream, code: u16, v: &Value) {
    let body = v.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
}

fn usage(prompt: u64, cached: u64, completion: u64) -> String {
    json!({"choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion,"prompt_tokens_details":{"cached_tokens":cached}}}).to_string()
}

/// A plain answer, streamed word by word.
pub fn text(answer: &str) -> Reply {
    let mut ev = vec![(0, chunk(json!({"role":"assistant","content":null}), None))];
    for piece in answer.split_inclusive(' ') {
        ev.push((0, chunk(json!({"content": piece}), None)));
    }
    ev.push((0, chunk(json!({}), Some("stop"))));
    ev.push((0, usage(100, 80, 10)));
    ev.push((0, "[DONE]".to_string()));
    Reply::Sse(ev)
}

/// An answer preceded by reasoning.
pub fn reasoning_then_text(reasoning: &str, answer: &str) -> Reply {
    let mut ev = vec![(0, chunk(json!({"reasoning_content": reasoning}), None))];
    ev.push((0, chunk(json!({"content": answer}), Some("stop"))));
    ev.push((0, "[DONE]".to_string()));
    Reply::Sse(ev)
}

/// Tool calls: (id, name, arguments JSON), arguments streamed in pieces.
pub fn calls(list: &[(&str, &str, Value)]) -> Reply {
    Reply::Sse(call_events(list, Some("tool_calls"), true))
}

fn call_events(
    list: &[(&str, &str, Value)],
    finish: Option<&str>,
    done: bool,
) -> Vec<(u64, String)> {
    let mut ev = Vec::new();
    for (i, (id, name, args)) in list.iter().enumerate() {
        ev.push((0, chunk(json!({"tool_calls":[{"index":i,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}), None)));
        let text = args.to_string();
        let mid = text.len() / 2;
        let (a, b) = text.split_at(
            text.char_indices()
                .map(|(i, _)| i)
                .find(|&i| i >= mid)
                .unwrap_or(0),
        );
        for piece in [a, b] {
            ev.push((
                0,
                chunk(
                    json!({"tool_calls":[{"index":i,"function":{"arguments":piece}}]}),
                    None,
                ),
            ));
        }
    }
    if let Some(f) = finish {
        ev.push((0, chunk(json!({}), Some(f))));
        ev.push((0, usage(200, 150, 20)));
    }
    if done {
        ev.push((0, "[DONE]".to_string()));
    }
    ev
}

pub fn call(id: &str, name: &str, args: Value) -> Reply {
    calls(&[(id, name, args)])
}

/// Tool calls whose stream is cut: no finish_reason, no [DONE].
pub fn cut_calls(list: &[(&str, &str, Value)]) -> Reply {
    Reply::Sse(call_events(list, None, false))
}

/// Tool calls ended by the token limit.
pub fn length_calls(list: &[(&str, &str, Value)]) -> Reply {
    Reply::Sse(call_events(list, Some("length"), true))
}

/// A text answer ended by the token limit.
pub fn length_text(answer: &str) -> Reply {
    Reply::Sse(vec![
        (0, chunk(json!({"content": answer}), Some("length"))),
        (0, "[DONE]".to_string()),
    ])
}

pub fn fixture(name: &str) -> Reply {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sse")
        .join(name);
    Reply::Raw(std::fs::read_to_string(path).expect("fixture"))
}

/// A temp workspace with an isolated HOME (no personal config leaks in).
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A git repository on `main` holding `files`, committed as "init";
    /// its path.
    pub fn committed(&self, files: &[(&str, &str)]) -> PathBuf {
        let p = self.path();
        git(&p, &["init", "-q", "-b", "main"]);
        for (rel, text) in files {
            self.write(rel, text);
        }
        git(&p, &["add", "-A"]);
        git(&p, &["commit", "-qm", "init"]);
        p
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap_or_default()
    }

    /// `mm` with the workspace as its directory and a clean environment.
    pub fn mm(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mm"));
        c.current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        c
    }

    /// Runs `mm -p PROMPT -url URL ARGS...`.
    pub fn run(&self, server: &Server, prompt: &str, args: &[&str]) -> Output {
        self.mm()
            .args(["-p", prompt, "-url", &server.url()])
            .args(args)
            .output()
            .unwrap()
    }

    pub fn sessions(&self) -> Vec<PathBuf> {
        let dir = self.dir.path().join(".mm/sessions");
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// Says a test did not run what it is for, where cargo shows it: the
/// `eprintln!` of a passing test is swallowed, a write to the stderr
/// handle is not.
pub fn skip(why: &str) {
    use std::io::Write;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {name}: {why}");
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `cmd` with `input` piped to its stdin (then closed); its output.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = spawn_piped(cmd);
    let mut stdin = child.stdin.take().unwrap();
    // mm may stop reading before the end (a limit): what it never reads
    // may fail to write, and the output says the rest.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// `cmd` started with its three standard streams piped to the test.
pub fn spawn_piped(cmd: &mut Command) -> std::process::Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON result of a `-json` run.
pub fn json_result(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}

/// The tool result messages of a request, by call id.
pub fn tool_results(req: &Value) -> Vec<(String, String)> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// `git ARGS` in `dir` with a fixed identity; panics with git's stderr on
/// failure; returns stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// bwrap can start a sandbox here (mm's own probe). With
/// `MM_REQUIRE_FENCE` set (CI), a machine where it cannot fails the test
/// instead of skipping the fence.
pub fn fence_works() -> bool {
    let works = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(mm::sandbox::Fence::detect())
        .is_on();
    if !works && std::env::var_os("MM_REQUIRE_FENCE").is_some() {
        panic!("MM_REQUIRE_FENCE is set and bwrap cannot start a sandbox here");
    }
    works
}
