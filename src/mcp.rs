//! MCP servers (`mcpServers`): their tools join mm's, through the official
//! Rust SDK (`rmcp`). A stdio server is started inside the fence with the
//! workspace as its folder and mm's scrubbed environment; an HTTP server
//! is reached over streamable HTTP. A server that does not start, stops
//! answering or dies is said once and its tools go away; mm goes on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::file::{McpPermission, McpServerFile};
use crate::llm::ToolSpec;
use crate::sandbox::Sandbox;

/// How long a server has to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// A call's time limit when the server's `timeoutSec` does not say.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// A tool result longer than this is cut (head and tail kept).
const RESULT_CAP: usize = 30_000;
/// Below this window, tool descriptions are cut to their first sentence
/// and parameter descriptions dropped: every byte is in every request.
const TRIM_BELOW: u64 = 32_768;
const TRIMMED_DESCRIPTION: usize = 160;

/// One of a server's tools as the model sees it.
#[derive(Clone, Debug)]
pub struct McpTool {
    /// `server__tool`, or the tool's own name with `noPrefix`.
    pub exposed: String,
    pub server: String,
    /// The server's name for it.
    pub remote: String,
    pub description: String,
    pub schema: Value,
    pub permission: McpPermission,
}

/// Where a server stands.
#[derive(Clone, Debug)]
pub enum Status {
    Running,
    /// It did not start (the reason).
    Failed(String),
    /// It stopped answering or died during the session (the reason).
    Stopped(String),
}

struct Server {
    name: String,
    cfg: McpServerFile,
    status: Mutex<Status>,
    tools: Vec<McpTool>,
    peer: Option<Peer<RoleClient>>,
    /// Kept alive for the session; dropped with it.
    _service: Option<Mutex<RunningService<RoleClient, ()>>>,
    /// The stdio server's process group (killed on drop).
    _group: Option<crate::sandbox::procs::Group>,
}

/// The session's MCP servers.
pub struct McpServers {
    servers: Vec<Server>,
    /// Said once at start, then taken.
    notices: Mutex<Vec<(bool, String)>>,
    /// What was said once already (a headless refusal, by tool).
    told: Mutex<std::collections::HashSet<String>>,
}

/// `${VAR}` replaced by the variable's value (empty when unset).
fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find('}') {
            Some(end) => {
                let name = &rest[start + 2..start + 2 + end];
                out.push_str(&std::env::var(name).unwrap_or_default());
                rest = &rest[start + 3 + end..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first sentence of a description, cut to `cap` characters.
fn first_sentence(text: &str, cap: usize) -> String {
    let text = text.trim();
    let end = text
        .find(". ")
        .map(|i| i + 1)
        .or_else(|| text.find('\n'))
        .unwrap_or(text.len());
    let s: String = text[..end].chars().take(cap).collect();
    s.trim().to_string()
}

/// A schema without the descriptions of its properties.
fn without_descriptions(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        for p in props.values_mut() {
            if let Some(o) = p.as_object_mut() {
                o.remove("description");
            }
        }
    }
    if let Some(o) = s.as_object_mut() {
        o.remove("$schema");
    }
    s
}

/// A tool result's content as text for the model.
fn result_text(result: &rmcp::model::CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(v["text"].as_str().unwrap_or("").to_string()),
            Some("resource") => {
                let r = &v["resource"];
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_string()),
                    None => parts.push(format!(
                        "[a resource: {}]",
                        r.get("uri").and_then(Value::as_str).unwrap_or("?")
                    )),
                }
            }
            Some("resource_link") => parts.push(format!(
                "[a resource link: {}]",
                v.get("uri").and_then(Value::as_str).unwrap_or("?")
            )),
            Some(kind) => parts.push(format!("[{kind} content, not shown]")),
            None => {}
        }
    }
    if parts.is_empty()
        && let Some(s) = &result.structured_content
    {
        parts.push(s.to_string());
    }
    let text = parts.join("\n");
    if text.len() <= RESULT_CAP {
        return text;
    }
    let mut head = RESULT_CAP * 2 / 3;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - RESULT_CAP / 3;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

impl McpServers {
    /// Starts every configured server (at once, each within its time) and
    /// lists its tools. One that fails is said and left out.
    pub async fn start(
        cfgs: &BTreeMap<String, McpServerFile>,
        sandbox: &Arc<Sandbox>,
        taken: &[&str],
    ) -> Self {
        let started = futures::future::join_all(
            cfgs.iter()
                .map(|(name, cfg)| start_one(name.clone(), cfg.clone(), sandbox.clone())),
        )
        .await;
        let mut notices = Vec::new();
        let mut servers: Vec<Server> = Vec::new();
        for mut s in started {
            // A name another tool has (a built-in, a command tool, an
            // earlier server's) is left out and said.
            let before = s.tools.len();
            let mut clashes = Vec::new();
            s.tools.retain(|t| {
                let clash = taken.contains(&t.exposed.as_str())
                    || servers
                        .iter()
                        .any(|o| o.tools.iter().any(|x| x.exposed == t.exposed));
                if clash {
                    clashes.push(t.exposed.clone());
                }
                !clash
            });
            if s.tools.len() < before {
                notices.push((
                    true,
                    format!(
                        "MCP server {}: left out {} (another tool has the name; noPrefix: false keeps them apart)",
                        s.name,
                        clashes.join(", ")
                    ),
                ));
            }
            match &*s
                .status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
            {
                Status::Running => notices.push((
                    false,
                    format!(
                        "MCP server {}: {} tool{}",
                        s.name,
                        s.tools.len(),
                        if s.tools.len() == 1 { "" } else { "s" }
                    ),
                )),
                Status::Failed(why) | Status::Stopped(why) => notices.push((
                    true,
                    format!(
                        "MCP server {} did not start: {why}; mm goes on without its tools",
                        s.name
                    ),
                )),
            }
            servers.push(s);
        }
        Self {
            servers,
            notices: Mutex::new(notices),
            told: Mutex::default(),
        }
    }

    /// True the first time `what` is asked about: say it then only.
    pub fn first_time(&self, what: &str) -> bool {
        self.told
            .lock()
            .map(|mut t| t.insert(what.to_string()))
            .unwrap_or(false)
    }

    /// What to say at start: (is a warning, text).
    pub fn take_notices(&self) -> Vec<(bool, String)> {
        self.notices
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }

    fn running(&self) -> impl Iterator<Item = &Server> {
        self.servers.iter().filter(|s| {
            matches!(
                *s.status
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
                Status::Running
            )
        })
    }

    /// The running servers' tools as the model sees them; `window` below
    /// `TRIM_BELOW` trims their descriptions.
    pub fn specs(&self, window: Option<u64>) -> Vec<ToolSpec> {
        let trim = window.is_some_and(|w| w < TRIM_BELOW);
        self.running()
            .flat_map(|s| s.tools.iter())
            .filter(|t| t.permission != McpPermission::Deny)
            .map(|t| ToolSpec {
                name: t.exposed.clone().into(),
                description: if trim {
                    first_sentence(&t.description, TRIMMED_DESCRIPTION).into()
                } else {
                    t.description.clone().into()
                },
                parameters: if trim {
                    without_descriptions(&t.schema)
                } else {
                    t.schema.clone()
                },
            })
            .collect()
    }

    /// Whether tool descriptions are trimmed at this window.
    pub fn trims(window: Option<u64>) -> bool {
        window.is_some_and(|w| w < TRIM_BELOW)
    }

    /// The tool the model called by this name, on a running server.
    pub fn find(&self, exposed: &str) -> Option<McpTool> {
        self.servers
            .iter()
            .flat_map(|s| s.tools.iter())
            .find(|t| t.exposed == exposed)
            .cloned()
    }

    /// Whether a tool's server still runs.
    pub fn alive(&self, exposed: &str) -> bool {
        self.running()
            .any(|s| s.tools.iter().any(|t| t.exposed == exposed))
    }

    /// Calls a tool. Err: the server is gone (the text says why, once).
    pub async fn call(
        &self,
        tool: &McpTool,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<(bool, String), String> {
        let Some(server) = self.servers.iter().find(|s| s.name == tool.server) else {
            return Err(format!("no MCP server {}", tool.server));
        };
        if let Status::Stopped(why) | Status::Failed(why) = &*server
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            return Err(format!(
                "the MCP server {} is not running ({why}); its tools are gone for this session",
                server.name
            ));
        }
        let Some(peer) = &server.peer else {
            return Err(format!("the MCP server {} is not connected", server.name));
        };
        let mut params = CallToolRequestParams::new(tool.remote.clone());
        if let Some(map) = args.as_object() {
            params = params.with_arguments(map.clone());
        }
        let limit = server
            .cfg
            .timeout_sec
            .map(Duration::from_secs)
            .unwrap_or(CALL_TIMEOUT);
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, peer.call_tool(params)) => r,
            _ = cancel.cancelled() => return Ok((false, "cancelled by the user".into())),
        };
        match outcome {
            Ok(Ok(result)) => Ok((result.is_error != Some(true), result_text(&result))),
            Ok(Err(e)) => {
                // The server answered with an error: it is alive. Anything
                // else (a closed or broken transport): it died or hung up.
                let alive = matches!(
                    e,
                    rmcp::ServiceError::McpError(_) | rmcp::ServiceError::UnexpectedResponse
                );
                if !alive || peer.is_transport_closed() {
                    let why = format!("stopped: {e}");
                    *server
                        .status
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Status::Stopped(why.clone());
                    return Err(format!(
                        "the MCP server {} {why}; its tools are gone for this session",
                        server.name
                    ));
                }
                Ok((false, format!("the MCP call failed: {e}")))
            }
            Err(_) => {
                let why = format!("no answer within {} s", limit.as_secs());
                *server
                    .status
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Status::Stopped(why.clone());
                Err(format!(
                    "the MCP server {} gave {why}; its tools are gone for this session",
                    server.name
                ))
            }
        }
    }

    /// `/mcp`: each server, how it stands and its tools.
    pub fn describe(&self) -> String {
        if self.servers.is_empty() {
            return "no MCP servers (mcpServers in the config or the agent file adds them)".into();
        }
        let mut out = String::new();
        for s in &self.servers {
            let how = match &*s
                .status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
            {
                Status::Running => "running".to_string(),
                Status::Failed(why) => format!("did not start: {why}"),
                Status::Stopped(why) => format!("stopped: {why}"),
            };
            let at = s.cfg.url.clone().unwrap_or_else(|| {
                let mut c = s.cfg.command.clone().unwrap_or_default();
                for a in &s.cfg.args {
                    c.push(' ');
                    c.push_str(a);
                }
                c
            });
            out.push_str(&format!("{} ({at}): {how}\n", s.name));
            for t in &s.tools {
                let perm = match t.permission {
                    McpPermission::Allow => "allow",
                    McpPermission::Ask => "ask",
                    McpPermission::Deny => "deny",
                };
                out.push_str(&format!(
                    "  {} [{perm}] {}\n",
                    t.exposed,
                    first_sentence(&t.description, 80)
                ));
            }
        }
        out.trim_end().to_string()
    }
}

/// The system prompt's lines for servers marked `prefer`.
pub fn prefer_lines(cfgs: &BTreeMap<String, McpServerFile>) -> Vec<String> {
    cfgs.iter()
        .filter(|(_, c)| c.prefer)
        .map(|(name, c)| match &c.prefer_hint {
            Some(h) => format!("- The MCP server {name}: {}", h.trim()),
            None => format!("- Prefer the tools of the MCP server {name} for what they cover."),
        })
        .collect()
}

/// The name a tool gets: `server__tool` unless `noPrefix`.
fn exposed_name(server: &str, cfg: &McpServerFile, tool: &str) -> String {
    let name = if cfg.no_prefix {
        tool.to_string()
    } else {
        format!("{server}__{tool}")
    };
    // Function names allow letters, digits, _ and -, up to 64.
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn tools_of(server: &str, cfg: &McpServerFile, listed: Vec<Tool>) -> Vec<McpTool> {
    let default = cfg.permission.unwrap_or_default();
    listed
        .into_iter()
        .map(|t| {
            let remote = t.name.to_string();
            McpTool {
                exposed: exposed_name(server, cfg, &remote),
                server: server.to_string(),
                permission: cfg.tools.get(&remote).copied().unwrap_or(default),
                description: t
                    .description
                    .as_deref()
                    .map(str::to_string)
                    .or(t.title.clone())
                    .unwrap_or_else(|| format!("{remote} (MCP server {server})")),
                schema: Value::Object((*t.input_schema).clone()),
                remote,
            }
        })
        .collect()
}

async fn start_one(name: String, cfg: McpServerFile, sandbox: Arc<Sandbox>) -> Server {
    let failed = |name: String, cfg: McpServerFile, why: String| Server {
        name,
        cfg,
        status: Mutex::new(Status::Failed(why)),
        tools: Vec::new(),
        peer: None,
        _service: None,
        _group: None,
    };
    let (service, group) = match connect(&name, &cfg, &sandbox).await {
        Ok(c) => c,
        Err(why) => return failed(name, cfg, why),
    };
    let peer = service.peer().clone();
    let listed = match tokio::time::timeout(START_TIMEOUT, peer.list_all_tools()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return failed(name, cfg, format!("listing its tools failed: {e}")),
        Err(_) => return failed(name, cfg, "it did not list its tools within 60 s".into()),
    };
    let tools = tools_of(&name, &cfg, listed);
    Server {
        name,
        cfg,
        status: Mutex::new(Status::Running),
        tools,
        peer: Some(peer),
        _service: Some(Mutex::new(service)),
        _group: group,
    }
}

type Connected = (
    RunningService<RoleClient, ()>,
    Option<crate::sandbox::procs::Group>,
);

async fn connect(name: &str, cfg: &McpServerFile, sandbox: &Sandbox) -> Result<Connected, String> {
    if let Some(url) = &cfg.url {
        if sandbox.no_net() {
            return Err(format!("{url} is on the network and this run has -no-net"));
        }
        let mut headers = std::collections::HashMap::new();
        for (k, v) in &cfg.headers {
            let key = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("header {k}: {e}"))?;
            let value = reqwest::header::HeaderValue::from_str(&expand(v))
                .map_err(|e| format!("header {k}: {e}"))?;
            headers.insert(key, value);
        }
        let config =
            StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let service = tokio::time::timeout(START_TIMEOUT, ().serve(transport))
            .await
            .map_err(|_| format!("{url} did not answer within 60 s"))?
            .map_err(|e| format!("{url}: {e}"))?;
        return Ok((service, None));
    }
    let Some(program) = &cfg.command else {
        return Err("no command and no url".into());
    };
    let root = sandbox.root();
    let cwd = match &cfg.cwd {
        Some(c) => sandbox
            .check_read(c)
            .map(|r| r.abs)
            .map_err(|e| format!("cwd {c}: {e}"))?,
        None => root.to_path_buf(),
    };
    let args: Vec<&str> = cfg.args.iter().map(String::as_str).collect();
    let mut cmd = sandbox.command(program, &args, &cwd, sandbox.approved_plan());
    for (k, v) in &cfg.env {
        cmd.env(k, expand(v));
    }
    // What the server writes to stderr: `.mm/mcp-NAME.log`, never through
    // a link (a cloned repository's `.mm/mcp-x.log -> ~/.bashrc` had the
    // server's output appended there).
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let log = crate::mmdir::MmDir::open(&root.join(".mm"))
        .and_then(|d| d.file(&format!("mcp-{safe}.log"), crate::mmdir::Open::Append))
        .ok();
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(match log {
            Some(f) => std::process::Stdio::from(f),
            None => std::process::Stdio::null(),
        })
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("{program}: {e}"))?;
    let group = child.id().and_then(crate::sandbox::procs::Group::register);
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("no pipes to the server".into());
    };
    // The child is reaped when it ends; its group is killed with the session.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let service = tokio::time::timeout(START_TIMEOUT, ().serve((stdout, stdin)))
        .await
        .map_err(|_| format!("{program} did not answer within 60 s"))?
        .map_err(|e| format!("{program}: {e}"))?;
    Ok((service, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(unsafe_code)] // the SAFETY notes below say why
    fn variables_are_expanded_and_unknown_ones_are_empty() {
        // SAFETY: a test-only variable no other test reads.
        unsafe { std::env::set_var("MM_MCP_TEST_TOKEN", "s3cret") };
        assert_eq!(expand("Bearer ${MM_MCP_TEST_TOKEN}"), "Bearer s3cret");
        assert_eq!(expand("${MM_MCP_TEST_UNSET_VAR}x"), "x");
        assert_eq!(expand("no ${ closing"), "no ${ closing");
    }

    #[test]
    fn names_get_the_server_prefix_and_only_allowed_characters() {
        let cfg = McpServerFile::default();
        assert_eq!(exposed_name("time", &cfg, "get-time"), "time__get-time");
        assert_eq!(exposed_name("x", &cfg, "a.b c"), "x__a_b_c");
        let cfg = McpServerFile {
            no_prefix: true,
            ..Default::default()
        };
        assert_eq!(exposed_name("time", &cfg, "now"), "now");
    }

    #[test]
    fn trimmed_descriptions_keep_the_first_sentence() {
        assert_eq!(first_sentence("Echo it. Then more.", 80), "Echo it.");
        let schema = serde_json::json!({"$schema": "x", "type": "object", "properties": {"m": {"type": "string", "description": "long"}}});
        assert_eq!(
            without_descriptions(&schema),
            serde_json::json!({"type": "object", "properties": {"m": {"type": "string"}}})
        );
    }
}
