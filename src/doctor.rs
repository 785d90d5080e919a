//! `mm doctor`: what works and what to fix, checked for real — the
//! config, the server and its model, the window, a streamed reply, a tool
//! call round trip, `response_format`, the prompt cache, the language
//! servers, the fence and the clipboard — printed as one table.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::llm::{ChatRequest, LlmClient, Message, RequestBudget, Streamed, ToolCall, ToolSpec};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
    /// Not checked (an earlier check failed).
    Skip,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "-",
        }
    }
}

/// One row of the table.
#[derive(Debug)]
pub struct Row {
    pub check: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about it, for a row that is not ok.
    pub fix: Option<String>,
}

fn row(check: &'static str, verdict: Verdict, detail: impl Into<String>) -> Row {
    Row {
        check,
        verdict,
        detail: detail.into(),
        fix: None,
    }
}

impl Row {
    fn fix(mut self, fix: impl Into<String>) -> Row {
        self.fix = Some(fix.into());
        self
    }
}

/// The table as text (through `displayable`: details carry server words).
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from("mm doctor\n\n");
    for r in rows {
        out.push_str(&format!(
            "  {:<17} {:<5} {}\n",
            r.check,
            r.verdict.word(),
            crate::untrusted::displayable(&r.detail)
        ));
        if let Some(f) = &r.fix {
            out.push_str(&format!(
                "  {:<17} {:<5} fix: {}\n",
                "",
                "",
                crate::untrusted::displayable(f)
            ));
        }
    }
    let fails = rows.iter().filter(|r| r.verdict == Verdict::Fail).count();
    let warns = rows.iter().filter(|r| r.verdict == Verdict::Warn).count();
    out.push('\n');
    out.push_str(&match (fails, warns) {
        (0, 0) => "verdict: ready\n".to_string(),
        (0, w) => format!("verdict: ready, with {w} warning(s) above\n"),
        (f, _) => format!("verdict: not ready: {f} check(s) failed; fix those first\n"),
    });
    out
}

/// The exit code for the rows: 1 when a check failed.
pub fn code(rows: &[Row]) -> i32 {
    i32::from(rows.iter().any(|r| r.verdict == Verdict::Fail))
}

pub const NO_SERVER_FIX: &str = "start a model server: scripts/setup in the mm repository (builds llama-server and a small model), or Ollama (`ollama serve`, `ollama pull qwen2.5-coder:7b`), or an API key (OPENAI_API_KEY with -provider openai); then run mm doctor again";

/// The checks that need no server.
pub fn local_rows(
    settings: &Settings,
    fence: &crate::sandbox::Fence,
    root: &std::path::Path,
) -> Vec<Row> {
    let mut rows = Vec::new();
    // Language servers: the configured ones found on PATH, against the
    // languages of the workspace's files.
    let found: Vec<&crate::config::servers::ServerSpec> = settings
        .lsp
        .iter()
        .filter(|s| s.enabled && crate::lsp::find_program(&s.command).is_some())
        .collect();
    let mut here: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for e in crate::paths::walk(root)
        .max_depth(Some(5))
        .build()
        .flatten()
        .take(5_000)
    {
        if e.file_type().is_some_and(|t| t.is_file())
            && let Some(l) = crate::lsp::language_of(e.path())
        {
            *here.entry(l).or_default() += 1;
        }
    }
    let lacking: Vec<(&str, usize)> = here
        .iter()
        .filter(|(l, _)| !found.iter().any(|s| s.languages.iter().any(|x| x == *l)))
        .map(|(l, n)| (*l, *n))
        .collect();
    let uncovered: Vec<String> = lacking
        .iter()
        .map(|(l, n)| format!("{l} ({n} file{})", if *n == 1 { "" } else { "s" }))
        .collect();
    let mut wanted: Vec<&str> = lacking
        .iter()
        .map(|(l, _)| match *l {
            "python" => "python: scripts/lsp install (pyright)",
            "rust" => "rust: rustup component add rust-analyzer",
            "go" => "go: gopls on PATH",
            "c" | "cpp" => "C/C++: clangd on PATH",
            _ => "JavaScript/TypeScript: typescript-language-server on PATH",
        })
        .collect();
    wanted.dedup();
    let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
    rows.push(
        if found.is_empty() && !here.is_empty() || !uncovered.is_empty() {
            row(
                "language servers",
                Verdict::Warn,
                format!(
                    "{}none for {} here: edits to them are checked by the parsers only",
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!("{} found; ", names.join(", "))
                    },
                    uncovered.join(", ")
                ),
            )
            .fix(wanted.join("; "))
        } else if found.is_empty() {
            row(
                "language servers",
                Verdict::Ok,
                "none found, and no source file here needs one",
            )
        } else {
            row("language servers", Verdict::Ok, names.join(", "))
        },
    );
    rows.push(match fence {
        crate::sandbox::Fence::Bwrap(p) => row(
            "fence",
            Verdict::Ok,
            format!(
                "bubblewrap ({}): tests and builds run fenced without asking",
                p.display()
            ),
        ),
        crate::sandbox::Fence::Off(why) => row(
            "fence",
            Verdict::Warn,
            format!("none ({why}): every test and build asks first"),
        )
        .fix("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"),
    });
    let env = crate::clipboard::Env::detect(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    rows.push(if env.display {
        row(
            "clipboard",
            Verdict::Ok,
            "the system clipboard (a display is set), the terminal (OSC 52) if it refuses",
        )
    } else if env.terminal {
        let via = match env.mux() {
            crate::clipboard::Mux::Tmux => ", through tmux",
            crate::clipboard::Mux::Screen => ", through screen",
            crate::clipboard::Mux::None => "",
        };
        row(
            "clipboard",
            Verdict::Ok,
            format!("the terminal (OSC 52{via}): no display here"),
        )
    } else {
        row(
            "clipboard",
            Verdict::Warn,
            "no display and no terminal: /copy writes a file in .mm/",
        )
    });
    rows
}

/// Sends one request and waits for the whole reply.
async fn ask(
    client: &LlmClient,
    settings: &Settings,
    model: &str,
    messages: &[Message],
    tools: &[ToolSpec],
    response_format: Option<&Value>,
    timeout: Duration,
) -> Result<Streamed, String> {
    let req = ChatRequest {
        model,
        messages,
        tools,
        sampling: &settings.sampling,
        max_tokens: Some(200),
        replay_reasoning: false,
        response_format,
    };
    let body = crate::llm::build_body(&req);
    let budget = RequestBudget::new(None);
    let cancel = CancellationToken::new();
    match tokio::time::timeout(
        timeout,
        client.stream_chat(&body, &budget, &cancel, &mut |_| {}),
    )
    .await
    {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no whole reply within {} s", timeout.as_secs())),
    }
}

fn add_tool() -> ToolSpec {
    ToolSpec {
        name: "add".into(),
        description: "Add two integers and return the sum.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }),
    }
}

/// The checks against the server mm connected to.
pub async fn server_rows(settings: &Settings, connected: &crate::startup::Connected) -> Vec<Row> {
    let client = &connected.client;
    let model = connected.model.as_str();
    let timeout = settings.first_token_timeout + Duration::from_secs(60);
    let mut rows = vec![
        row("server", Verdict::Ok, client.base_url()),
        row(
            "api",
            Verdict::Ok,
            match client.api() {
                crate::config::Api::Chat => "chat completions",
                crate::config::Api::Messages => "Anthropic Messages",
                crate::config::Api::Responses => "OpenAI Responses",
            },
        ),
        row("model", Verdict::Ok, model.to_string()),
    ];
    rows.push(match connected.context_window {
        Some(w) if w < 8192 => row(
            "context window",
            Verdict::Warn,
            format!("{w} tokens: long sessions compact often"),
        )
        .fix(
            connected
                .window_note
                .clone()
                .unwrap_or_else(|| "serve the model with a larger context (llama-server -c 16384; Ollama num_ctx), or set contextWindow".into()),
        ),
        Some(w) => row("context window", Verdict::Ok, format!("{w} tokens")),
        None => row(
            "context window",
            Verdict::Warn,
            "the server does not say: mm assumes one and may overflow it",
        )
        .fix("set contextWindow in ~/.config/mm/config.yaml"),
    });
    // A streamed reply.
    let hello = [
        Message::system("You are a test. Answer in one short sentence."),
        Message::user("Say hello."),
    ];
    match ask(client, settings, model, &hello, &[], None, timeout).await {
        Ok(s) if !s.reply.content.trim().is_empty() || !s.reply.reasoning.is_empty() => {
            let first = s
                .first_token_ms
                .map(|ms| format!("first token after {:.1} s", ms as f64 / 1000.0))
                .unwrap_or_else(|| "no first-token time".into());
            let speed = s
                .tokens_per_second()
                .map(|t| format!(", {t:.1} tokens/s"))
                .unwrap_or_default();
            rows.push(if s.streamed {
                row("streamed reply", Verdict::Ok, format!("{first}{speed}"))
            } else {
                row(
                    "streamed reply",
                    Verdict::Warn,
                    "the server sent the reply whole, not streamed: mm works, but nothing shows until a reply is done",
                )
                .fix("a server that streams (llama-server, Ollama, vLLM, LM Studio do)")
            });
        }
        Ok(_) => rows.push(
            row("streamed reply", Verdict::Fail, "the reply was empty")
                .fix("check the server's log; the model may not be loaded"),
        ),
        Err(e) => {
            rows.push(row("streamed reply", Verdict::Fail, e).fix(NO_SERVER_FIX));
            for check in ["tool call", "response_format", "prompt cache"] {
                rows.push(row(check, Verdict::Skip, "not checked: no reply"));
            }
            return rows;
        }
    }
    rows.push(tool_round_trip(client, settings, model, timeout).await);
    rows.push(response_format(client, settings, model, timeout).await);
    rows.push(prompt_cache(client, settings, model, timeout).await);
    rows
}

async fn tool_round_trip(
    client: &LlmClient,
    settings: &Settings,
    model: &str,
    timeout: Duration,
) -> Row {
    let tools = [add_tool()];
    let mut messages = vec![
        Message::system("You are a test. Use the tools you are given."),
        Message::user("Use the add tool to add 2 and 3."),
    ];
    let first = match ask(client, settings, model, &messages, &tools, None, timeout).await {
        Ok(s) => s,
        Err(e) => {
            return row(
                "tool call",
                Verdict::Fail,
                format!("a request with tools failed: {e}"),
            )
            .fix("the server must accept `tools` (llama-server: --jinja)");
        }
    };
    let Some(call) = first.reply.calls.first() else {
        return row(
            "tool call",
            Verdict::Fail,
            "the model answered in text instead of calling the tool",
        )
        .fix("llama-server needs --jinja (scripts/llama start passes a tool-call template); with Ollama or LM Studio pick a model with tool support");
    };
    let args: Option<Value> = serde_json::from_str(&call.arguments).ok();
    let right = args
        .as_ref()
        .is_some_and(|a| a["a"].as_i64().is_some() && a["b"].as_i64().is_some());
    if call.name != "add" || !right {
        return row(
            "tool call",
            Verdict::Warn,
            format!(
                "a call came back but not as asked: {}({})",
                call.name, call.arguments
            ),
        )
        .fix("a larger model calls tools more reliably");
    }
    let id = call.id.clone().unwrap_or_else(|| "call_1".into());
    let mut asked = Message::assistant("");
    asked.content = None;
    asked.tool_calls = vec![ToolCall {
        id: id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }];
    messages.push(asked);
    messages.push(Message::tool_result(&id, "5"));
    match ask(client, settings, model, &messages, &tools, None, timeout).await {
        Ok(s) if s.reply.content.contains('5') => row(
            "tool call",
            Verdict::Ok,
            format!(
                "add({}) called, its result used in the answer",
                call.arguments
            ),
        ),
        Ok(s) => row(
            "tool call",
            Verdict::Warn,
            format!(
                "the call worked; the answer after its result did not use it: {:?}",
                s.reply.content.chars().take(80).collect::<String>()
            ),
        ),
        Err(e) => row(
            "tool call",
            Verdict::Fail,
            format!("the call came back; sending its result failed: {e}"),
        )
        .fix("the server's chat template must accept tool results (llama-server: --jinja)"),
    }
}

async fn response_format(
    client: &LlmClient,
    settings: &Settings,
    model: &str,
    timeout: Duration,
) -> Row {
    let format = json!({
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false,
            },
        },
    });
    let messages = [
        Message::system("Answer with JSON only."),
        Message::user("What is the capital of France?"),
    ];
    match ask(
        client,
        settings,
        model,
        &messages,
        &[],
        Some(&format),
        timeout,
    )
    .await
    {
        Ok(s) => match serde_json::from_str::<Value>(s.reply.content.trim()) {
            Ok(v) if v["city"].is_string() => row(
                "response_format",
                Verdict::Ok,
                "a JSON schema is followed (structuredOutput works)",
            ),
            _ => row(
                "response_format",
                Verdict::Warn,
                "accepted, but the answer did not follow the schema",
            )
            .fix("structuredOutput answers are checked and asked again; expect retries"),
        },
        Err(e) => row("response_format", Verdict::Warn, format!("refused: {e}"))
            .fix("only structuredOutput needs it; everything else works"),
    }
}

async fn prompt_cache(
    client: &LlmClient,
    settings: &Settings,
    model: &str,
    timeout: Duration,
) -> Row {
    // A prefix long enough for any cache to keep, sent twice (Anthropic
    // keeps none under 1,024 tokens, 2,048 for its small models).
    let lines = if client.api() == crate::config::Api::Messages {
        400
    } else {
        120
    };
    let filler: String = (1..=lines)
        .map(|i| format!("Rule {i}: answer briefly.\n"))
        .collect();
    let messages = [Message::system(filler), Message::user("Say ok.")];
    let first = ask(client, settings, model, &messages, &[], None, timeout).await;
    let second = ask(client, settings, model, &messages, &[], None, timeout).await;
    match (first, second) {
        (Ok(_), Ok(s)) => match s.reply.usage {
            Some(u) if u.cached > 0 && u.prompt > 0 => row(
                "prompt cache",
                Verdict::Ok,
                format!(
                    "the second request found {}% of its prompt cached",
                    u.cached * 100 / u.prompt
                ),
            ),
            Some(u) if u.prompt > 0 => row(
                "prompt cache",
                Verdict::Warn,
                "the server reports no cached prompt tokens: every request is read from the start",
            )
            .fix(if u.completion > 0 {
                "llama-server caches by default (--cache-reuse helps); hosted APIs cache longer prompts only"
            } else {
                "the server does not report usage"
            }),
            _ => row(
                "prompt cache",
                Verdict::Warn,
                "the server reports no usage, so the cache cannot be seen",
            ),
        },
        (Err(e), _) | (_, Err(e)) => row("prompt cache", Verdict::Warn, format!("not checked: {e}")),
    }
}
