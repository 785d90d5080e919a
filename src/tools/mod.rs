//! The tools the model can call. Tools return text, never print; the agent
//! publishes what they did. Schemas are kept short: every byte of them is
//! in the prompt prefix a small local model reads before its first token.

pub mod ask;
pub mod asking;
pub mod bash;
pub mod custom;
pub mod edit_match;
pub mod fetch;
pub mod fs;
pub mod guard;
pub mod nav;
pub mod probe;
pub mod scratch;
pub mod search;
pub mod syntax;

use crate::approval::{Answer, HEADLESS_REFUSAL};
use crate::toolname::ToolName;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalBroker;
use crate::llm::ToolSpec;
use crate::protocol::{ApprovalDecision, ApprovalKind, FileChange, ToolStatus, TurnId};
use crate::sandbox::{ExecDecision, Sandbox};

/// Which groups of tools an agent offers, as the Go mm's agent files say:
/// `editTools` is every file tool (read, list, glob, grep, write, edit),
/// `bashTool` the shell. With both off the agent has no tools at all.
#[derive(Clone, Copy, Debug)]
pub struct ToolSet {
    pub bash: bool,
    pub edit: bool,
    /// write_file and edit_file (with `edit`): not in a read-only
    /// sandbox, where every call of them would be refused.
    pub write: bool,
    /// The language-server tools (with `edit`, when a server is installed).
    pub lsp: bool,
}

/// What a tool came to.
#[derive(Clone, Debug)]
pub struct ToolOutput {
    pub status: ToolStatus,
    pub text: String,
    /// Boxed: an output travels in every `Result` of the file tools.
    pub change: Option<Box<FileChange>>,
    /// The language server's verdict on the change, when one checked it.
    pub check: Option<Box<crate::lsp::Check>>,
    /// Something the user must hear of, whatever the model makes of it.
    pub warning: Option<String>,
    /// Errors the change brought into files that use the changed one.
    pub dependents: Vec<(String, crate::lsp::Check)>,
    /// A person said yes to this change: nothing of mm's may undo it.
    pub approved: bool,
    /// A person said no to this call (or nobody could be asked): mm
    /// does not press the model to do it another way.
    pub declined: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self::with(ToolStatus::Ok, text)
    }
    pub fn error(text: impl Into<String>) -> Self {
        Self::with(ToolStatus::Error, text)
    }
    pub fn refused(text: impl Into<String>) -> Self {
        Self::with(ToolStatus::Refused, text)
    }
    pub fn not_run(text: impl Into<String>) -> Self {
        Self::with(ToolStatus::NotRun, text)
    }
    /// Refused because the person asked said no, or nobody could be asked.
    pub fn declined(text: impl Into<String>) -> Self {
        Self {
            declined: true,
            ..Self::with(ToolStatus::Refused, text)
        }
    }
    fn with(status: ToolStatus, text: impl Into<String>) -> Self {
        Self {
            status,
            text: text.into(),
            change: None,
            check: None,
            warning: None,
            dependents: Vec::new(),
            approved: false,
            declined: false,
        }
    }
    pub fn with_change(mut self, change: FileChange) -> Self {
        self.change = Some(Box::new(change));
        self
    }
}

/// What the tools share for a session.
pub struct ToolEnv {
    pub sandbox: Arc<Sandbox>,
    pub broker: Arc<ApprovalBroker>,
    /// Content hash of each file as last read or written by the model.
    pub reads: Mutex<HashMap<PathBuf, u64>>,
    pub bash_timeout: Duration,
    /// Language servers: diagnostics after writes, navigation tools.
    pub lsp: Option<Arc<crate::lsp::Lsp>>,
    /// The harness's help with files (off with `-no-harness`): whole-file
    /// writes that would delete definitions are merged or refused, new
    /// files that copy a file read as context are refused, and a file's
    /// definitions are listed above its content.
    pub guard_writes: bool,
    /// `ask_agent`: the agents under `mmConfigs` (None: no such tool).
    pub ask: Option<ask::AskEnv>,
    /// The editor mm runs in (an ACP client that reads files for it):
    /// asked for a file's text as it has it, unsaved changes included.
    pub editor: std::sync::OnceLock<Arc<dyn EditorFiles>>,
    /// The MCP servers' tools (None: no `mcpServers`).
    pub mcp: Option<Arc<crate::mcp::McpServers>>,
    /// The skills `read_skill` loads.
    pub skills: Vec<crate::skills::Skill>,
    /// Custom slash commands.
    pub commands: Vec<crate::commands::Command>,
    /// Command tools (`.mm/tools/NAME.json`).
    pub command_tools: Vec<custom::CommandTool>,
    /// `fetch_content` is offered; whether it may reach private addresses.
    pub fetch: Option<bool>,
    /// What the session says as it opens (skills left out).
    pub start_notes: Mutex<Vec<String>>,
    /// The instruction files of subfolders shown so far.
    pub nested: crate::instructions::Nested,
}

/// An editor's view of files (ACP `fs/read_text_file`).
pub trait EditorFiles: Send + Sync {
    /// The file's text as the editor holds it; None when it cannot say.
    fn read(&self, abs: PathBuf) -> futures::future::BoxFuture<'static, Option<String>>;
}

impl ToolEnv {
    pub fn new(sandbox: Arc<Sandbox>, broker: Arc<ApprovalBroker>, bash_timeout: Duration) -> Self {
        Self {
            sandbox,
            broker,
            reads: Mutex::new(HashMap::new()),
            bash_timeout,
            lsp: None,
            guard_writes: true,
            ask: None,
            editor: std::sync::OnceLock::new(),
            mcp: None,
            skills: Vec::new(),
            commands: Vec::new(),
            command_tools: Vec::new(),
            fetch: None,
            start_notes: Mutex::new(Vec::new()),
            nested: crate::instructions::Nested::default(),
        }
    }
}

/// The call being run, for approvals and cancellation.
pub struct CallCtx<'a> {
    pub turn: TurnId,
    pub call_id: &'a str,
    pub cancel: &'a CancellationToken,
}

fn string(desc: &str) -> Value {
    json!({"type": "string", "description": desc})
}

fn integer(desc: &str) -> Value {
    json!({"type": "integer", "description": desc})
}

fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// The tool schemas offered to the model.
pub fn specs(set: ToolSet) -> Vec<ToolSpec> {
    let mut v = Vec::new();
    if set.edit {
        v.extend([
        ToolSpec {
            name: ToolName::ReadFile.as_str().into(),
            description: "Read a text file; returns numbered lines. A file must be read before you edit or overwrite it.".into(),
            parameters: object(
                json!({
                    "path": string("Path relative to the workspace"),
                    "offset": integer("First line, 1-based"),
                    "limit": integer("Number of lines (default 500)"),
                }),
                &["path"],
            ),
        },
        ToolSpec {
            name: ToolName::ListDir.as_str().into(),
            description: "List a folder (default: the workspace root). Folders end with /.".into(),
            parameters: object(json!({"path": string("Folder path")}), &[]),
        },
        ToolSpec {
            name: ToolName::Glob.as_str().into(),
            description: "Find files whose path matches a glob pattern. A pattern without / matches file names at any depth.".into(),
            parameters: object(
                json!({"pattern": string("Glob pattern"), "path": string("Folder to search in")}),
                &["pattern"],
            ),
        },
        ToolSpec {
            name: ToolName::Grep.as_str().into(),
            description: "Search file contents with a regular expression; returns path:line: text.".into(),
            parameters: object(
                json!({
                    "pattern": string("Regular expression"),
                    "path": string("File or folder (default: the workspace)"),
                    "glob": string("Only files matching this glob"),
                }),
                &["pattern"],
            ),
        },
        ]);
    }
    if set.edit && set.write {
        v.push(ToolSpec {
            name: ToolName::WriteFile.as_str().into(),
            description: "Create a file, or replace the whole content of a file you have read. Creates parent folders.".into(),
            parameters: object(
                json!({"path": string("Path relative to the workspace"), "content": string("The complete file content")}),
                &["path", "content"],
            ),
        });
        v.push(ToolSpec {
            name: ToolName::EditFile.as_str().into(),
            description: "Replace one block of text in a file you have read. old_string must occur exactly once (copy it from the file, with enough lines to be unique), unless replace_all is true.".into(),
            parameters: object(
                json!({
                    "path": string("Path relative to the workspace"),
                    "old_string": string("Exact text to replace"),
                    "replacement": string("The new text that takes its place"),
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence"},
                }),
                &["path", "old_string", "replacement"],
            ),
        });
    }
    if set.edit && set.lsp {
        v.extend(nav::specs());
    }
    if set.bash {
        v.push(ToolSpec {
            name: ToolName::Bash.as_str().into(),
            description: "Run a shell command in the workspace with sh -c; stdin is closed and long output is cut. Read-only commands run at once; others may need the user's approval.".into(),
            parameters: object(
                json!({"command": string("The command line"), "timeout": integer("Seconds before it is killed (at most the user's limit)")}),
                &["command"],
            ),
        });
    }
    v
}

/// Checks a call's arguments against its schema: a JSON object, every
/// required argument present (a missing argument is never taken as empty),
/// the declared types. Numbers sent as strings are accepted for integers.
pub fn validate(spec: &ToolSpec, arguments: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("the arguments are not valid JSON ({e})"))?;
    let Value::Object(mut args) = value else {
        return Err("the arguments must be a JSON object".into());
    };
    for name in spec.required() {
        match args.get(name) {
            None | Some(Value::Null) => {
                return Err(format!("missing required argument `{name}`"));
            }
            Some(_) => {}
        }
    }
    let props = spec
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, schema) in &props {
        let Some(v) = args.get(name).cloned() else {
            continue;
        };
        if v.is_null() {
            args.remove(name);
            continue;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") if !v.is_string() => {
                return Err(format!("argument `{name}` must be a string"));
            }
            Some("integer") => {
                let n = match &v {
                    Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
                    Value::String(s) => s.trim().parse::<u64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) => {
                        args.insert(name.clone(), json!(n));
                    }
                    None => return Err(format!("argument `{name}` must be a whole number")),
                }
            }
            _ => {}
        }
    }
    for key in args.keys() {
        if !props.contains_key(key) {
            return Err(format!(
                "unknown argument `{key}`; this tool takes: {}",
                props.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(args)
}

pub fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

pub fn arg_u64(args: &Map<String, Value>, name: &str) -> Option<u64> {
    args.get(name).and_then(Value::as_u64)
}

pub use crate::protocol::call_summary as summary;

/// When the editor holds unsaved changes to the file a call reads, the
/// model and the user hear of it: mm reads and writes the file on disk.
async fn unsaved_note(env: &ToolEnv, args: &Map<String, Value>) -> Option<String> {
    let editor = env.editor.get()?.clone();
    let r = env
        .sandbox
        .check_read(arg_str(args, crate::toolname::arg::PATH)?)
        .ok()?;
    let held = tokio::time::timeout(Duration::from_secs(2), editor.read(r.abs.clone()))
        .await
        .ok()??;
    let disk = crate::paths::read_checked_text(&r.abs).ok()?;
    // Editors hold lines ending in \n whatever the file has.
    let same = held.replace("\r\n", "\n") == disk.replace("\r\n", "\n");
    (!same).then(|| {
        format!(
            "(note: the editor has unsaved changes to {}; this is the file on disk, which is what edits change. Ask the user to save it if those changes matter.)",
            r.rel
        )
    })
}

/// Runs one validated call.
pub async fn run(
    env: &ToolEnv,
    name: &str,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    let started = std::time::Instant::now();
    let mut out = run_one(env, name, args, ctx).await;
    // A folder's own instructions come with the first file the model
    // reads or changes under it.
    if (name == ToolName::ReadFile || crate::toolname::edits(name))
        && out.status == ToolStatus::Ok
        && let Ok(r) = env
            .sandbox
            .check_read(arg_str(args, crate::toolname::arg::PATH).unwrap_or_default())
    {
        out.text
            .push_str(&env.nested.for_file(env.sandbox.root(), &r.abs));
    }
    tracing::debug!(
        call = ctx.call_id,
        name,
        summary = %summary(name, args),
        status = ?out.status,
        ms = started.elapsed().as_millis() as u64,
        "tool"
    );
    out
}

async fn run_one(
    env: &ToolEnv,
    name: &str,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    let Some(tool) = ToolName::parse(name) else {
        return run_other(env, name, args, ctx).await;
    };
    match tool {
        ToolName::ReadFile => {
            let mut out = fs::read_file(env, args);
            if out.status == ToolStatus::Ok
                && let Some(note) = unsaved_note(env, args).await
            {
                out.text = format!("{note}\n{}", out.text);
                out.warning = Some(note);
            }
            if out.status == ToolStatus::Ok
                && let Some(lsp) = env.lsp.clone()
                && let Ok(r) = env
                    .sandbox
                    .check_read(arg_str(args, crate::toolname::arg::PATH).unwrap_or_default())
                && crate::lsp::language_of(&r.abs).is_some()
                && let Ok(text) = crate::paths::read_checked_text(&r.abs)
            {
                // The server learns the file as it was, so the next edit's
                // errors can be told apart from old ones.
                tokio::spawn(async move { lsp.opened(&r.abs, &text).await });
            }
            out
        }
        ToolName::LspDefinition
        | ToolName::LspReferences
        | ToolName::LspHover
        | ToolName::LspWorkspaceSymbols => nav::run(env, name, args).await,
        ToolName::WriteFile | ToolName::EditFile => {
            let prepared = if tool == ToolName::WriteFile {
                fs::prepare_write(env, args)
            } else {
                fs::prepare_edit(env, args)
            };
            write_pending(env, prepared, ctx).await
        }
        ToolName::ListDir => fs::list_dir(env, args),
        ToolName::Glob | ToolName::Grep => {
            let sandbox = env.sandbox.clone();
            let args = args.clone();
            let glob = tool == ToolName::Glob;
            let res = tokio::task::spawn_blocking(move || {
                if glob {
                    search::glob(&sandbox, &args)
                } else {
                    search::grep(&sandbox, &args)
                }
            })
            .await;
            res.unwrap_or_else(|e| ToolOutput::error(format!("search failed: {e}")))
        }
        ToolName::Bash => run_bash(env, args, ctx).await,
        ToolName::FetchContent => match &env.fetch {
            Some(allow_private) => tokio::select! {
                r = fetch::fetch(args, *allow_private) => match r {
                    Ok(text) => ToolOutput::ok(text),
                    Err(e) => ToolOutput::error(e),
                },
                _ = ctx.cancel.cancelled() => ToolOutput::not_run("cancelled by the user"),
            },
            None => ToolOutput::error("fetch_content is off (fetchContent: true turns it on)"),
        },
        ToolName::ReadSkill => match crate::skills::read(&env.skills, args, env.sandbox.root()) {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(e),
        },
        ToolName::AskAgent => match &env.ask {
            Some(a) => a.run(args, ctx).await,
            None => ToolOutput::error("no agents to ask: this agent declares no mmConfigs"),
        },
    }
}

/// A tool that is none of mm's own: a command tool, or an MCP server's.
async fn run_other(
    env: &ToolEnv,
    name: &str,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    match name {
        other if env.command_tools.iter().any(|t| t.manifest.name == other) => {
            match env.command_tools.iter().find(|t| t.manifest.name == other) {
                Some(t) => run_command_tool(env, t, args, ctx).await,
                None => ToolOutput::error(format!("unknown tool {other}")),
            }
        }
        other => match env.mcp.as_ref().and_then(|m| m.find(other).map(|t| (m, t))) {
            Some((mcp, tool)) => run_mcp(env, mcp, &tool, args, ctx).await,
            None => ToolOutput::error(format!("unknown tool {other}")),
        },
    }
}

/// A command tool: its program with the arguments as flags and as JSON
/// on stdin. `readOnly` runs at once in a read-only fence without the
/// network; the others ask like a shell command (not in a read-only
/// sandbox; at once in `full`, outside the fence; unasked in `auto`, in
/// the fence as an unasked command runs) and run with the workspace
/// writable.
async fn run_command_tool(
    env: &ToolEnv,
    tool: &custom::CommandTool,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    use crate::config::SandboxMode;
    use crate::sandbox::{Access, RunPlan};
    let argv = match tool.argv(args) {
        Ok(a) => a,
        Err(e) => return ToolOutput::error(e),
    };
    let name = &tool.manifest.name;
    let sandbox = &env.sandbox;
    let shown = argv
        .iter()
        .map(|a| crate::untrusted::displayable(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    // Without a fence, "readOnly" is only the manifest's word: it is
    // treated like any other tool.
    let plan = if tool.manifest.read_only && sandbox.fence().is_on() {
        RunPlan {
            access: Some(Access::ReadOnly),
            net: false,
            git_guard: true,
        }
    } else {
        match sandbox.mode() {
            SandboxMode::ReadOnly => {
                return ToolOutput::refused(format!(
                    "{name} may change files and the sandbox is read-only (a readOnly tool needs the fence)"
                ));
            }
            SandboxMode::Full => sandbox.approved_plan(),
            // Nobody is asked: it runs as an unasked command does.
            SandboxMode::Auto => match sandbox.unattended_plan() {
                Some(plan) => plan,
                None => {
                    return ToolOutput::refused(format!(
                        "{name} may change files, the sandbox is auto and there is no fence (bubblewrap) to run it in"
                    ));
                }
            },
            SandboxMode::Workspace => {
                let file = tool
                    .file
                    .strip_prefix(sandbox.root())
                    .unwrap_or(&tool.file)
                    .display()
                    .to_string();
                // "Always" holds for this tool running this program: a
                // manifest changed since (its command swapped by code
                // that ran in the fence) asks again, resumed or not.
                let what = crate::git::blob_id(tool.manifest.command.join("\0").as_bytes());
                let asked = ask_tool(
                    env,
                    ctx,
                    name,
                    shown.clone(),
                    format!(
                        "the command tool {name} ({})",
                        crate::untrusted::displayable(&file)
                    ),
                    format!("the tool {name}"),
                    &format!("tool:{name}:{}", &what[..what.len().min(12)]),
                )
                .await;
                match asked {
                    Ok(()) => sandbox.approved_plan(),
                    Err(None) => return ToolOutput::declined(HEADLESS_REFUSAL),
                    Err(Some(no)) => return no,
                }
            }
        }
    };
    let rest: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let cmd = sandbox.command(&argv[0], &rest, sandbox.root(), plan);
    let input = Value::Object(args.clone()).to_string().into_bytes();
    match bash::run_with_input(cmd, Some(input), tool.timeout(), ctx.cancel).await {
        Err(e) => ToolOutput::error(format!("{name} did not start: {e}")),
        Ok(f) if f.timed_out => ToolOutput::error(format!(
            "{name} was stopped after {} s\n{}",
            tool.timeout().as_secs(),
            f.output
        )),
        Ok(f) if f.cancelled => ToolOutput::not_run("cancelled by the user"),
        Ok(f) if f.exit_code == Some(0) => ToolOutput::ok(f.output),
        Ok(f) => ToolOutput::error(format!(
            "{name} exited with {}\n{}",
            f.exit_code
                .map_or("a signal".to_string(), |c| format!("status {c}")),
            f.output
        )),
    }
}

/// Asks the user about a tool that is not a shell command ("always" is
/// remembered under `key`). Ok: run it; Err(None): nobody can answer;
/// Err(Some(out)): the user said no.
async fn ask_tool(
    env: &ToolEnv,
    ctx: &CallCtx<'_>,
    name: &str,
    command: String,
    reason: String,
    scope: String,
    key: &str,
) -> Result<(), Option<ToolOutput>> {
    if env.sandbox.is_always(key) {
        return Ok(());
    }
    let kind = ApprovalKind::Exec {
        command,
        reason,
        always_key: key.to_string(),
        scope,
    };
    match env
        .broker
        .ask(ctx.turn, ctx.call_id, kind, ctx.cancel)
        .await
    {
        Answer::Unattended => Err(None),
        Answer::User(ApprovalDecision::Always) => {
            env.sandbox.remember(key);
            Ok(())
        }
        Answer::User(ApprovalDecision::No { reason }) => {
            Err(Some(ToolOutput::declined(match reason {
                Some(r) => format!("the user said no to {name}: {r}"),
                None => format!("the user said no to {name}"),
            })))
        }
        Answer::User(_) => Ok(()),
    }
}

/// An MCP server's tool, as its permission says: `deny` never runs,
/// `ask` asks the user (once for the session with "always"; refused
/// when nobody can answer), `allow` runs.
async fn run_mcp(
    env: &ToolEnv,
    mcp: &crate::mcp::McpServers,
    tool: &crate::mcp::McpTool,
    args: &Map<String, Value>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    use crate::config::file::McpPermission;
    let key = format!("mcp:{}", tool.exposed);
    match tool.permission {
        McpPermission::Deny => {
            return ToolOutput::refused(format!(
                "{} is denied by the configuration (mcpServers.{})",
                tool.exposed, tool.server
            ));
        }
        McpPermission::Ask => {
            let args_text = Value::Object(args.clone()).to_string();
            let shown = crate::untrusted::displayable(&args_text);
            let asked = ask_tool(
                env,
                ctx,
                &tool.exposed,
                format!("{} {shown}", tool.exposed),
                format!("a tool of the MCP server {}", tool.server),
                format!("the MCP tool {}", tool.exposed),
                &key,
            )
            .await;
            match asked {
                Err(None) => {
                    let mut out = ToolOutput::declined(format!(
                        "{HEADLESS_REFUSAL} (the MCP tool {} asks first)",
                        tool.exposed
                    ));
                    if mcp.first_time(&key) {
                        out.warning = Some(format!(
                            "the MCP tool {} was refused: it asks first and nobody can answer here; `permission: allow` under mcpServers.{} (or `tools: {{{}: allow}}`) lets it run",
                            tool.exposed, tool.server, tool.remote
                        ));
                    }
                    return out;
                }
                Err(Some(no)) => return no,
                Ok(()) => {}
            }
        }
        McpPermission::Allow => {}
    }
    match mcp
        .call(tool, &Value::Object(args.clone()), ctx.cancel)
        .await
    {
        Ok((true, text)) => ToolOutput::ok(text),
        Ok((false, text)) => ToolOutput::error(text),
        Err(gone) => {
            let mut out = ToolOutput::error(gone.clone());
            out.warning = Some(gone);
            out
        }
    }
}

/// A write or an edit worked out (`prepared`): asked about when edits need
/// approval, put on disk, and checked (language server, parser).
async fn write_pending(
    env: &ToolEnv,
    prepared: Result<fs::Pending, ToolOutput>,
    ctx: &CallCtx<'_>,
) -> ToolOutput {
    let pending = match prepared {
        Ok(p) => p,
        Err(out) => return out,
    };
    // The files that use this one, so errors the change brings
    // there (a caller of a renamed function) are seen too.
    let watched = match &env.lsp {
        Some(lsp) if env.guard_writes && pending.before.is_some() => {
            let users = env.dependents(&pending.r.rel);
            if users.is_empty() {
                None
            } else {
                Some(lsp.watch_dependents(&users).await)
            }
        }
        _ => None,
    };
    match approve_change(env, pending, ctx).await {
        Ok((pending, note, approved)) => {
            let abs = pending.r.abs.clone();
            let rel = pending.r.rel.clone();
            let mut out = fs::commit(env, pending, ctx.cancel.is_cancelled(), &note);
            out.approved = approved && out.change.is_some();
            if let (Some(lsp), Some(change)) = (&env.lsp, &out.change)
                && let Some(check) = lsp
                    .check_write(ctx.call_id, &abs, &change.after, ctx.cancel)
                    .await
            {
                out.text.push('\n');
                out.text.push_str(&check.text);
                out.check = Some(Box::new(check));
            }
            if let (Some(lsp), Some(watched), true) = (&env.lsp, watched, out.change.is_some()) {
                for (user, check) in lsp.dependents_after(watched).await {
                    if check.new_errors.unwrap_or(0) > 0 {
                        out.text.push_str(&format!(
                            "\n[{user} uses {rel}; this change brought errors there:]\n{}",
                            check.text
                        ));
                    }
                    out.dependents.push((user, check));
                }
            }
            if out.check.is_none()
                && env.guard_writes
                && let Some(change) = &out.change
                && let Some(check) = syntax::check(env, &change.path, ctx.cancel).await
            {
                if check.errors > 0 {
                    out.text.push('\n');
                    out.text.push_str(&check.text);
                }
                out.check = Some(Box::new(check));
            }
            out
        }
        Err(out) => out,
    }
}

/// A write of mm's own whose content it computed (a rename): approval,
/// disk and checks as for `write_file`, without the guards that read a
/// model's whole-file write as a part to merge in.
pub async fn write_own(env: &ToolEnv, rel: &str, content: &str, ctx: &CallCtx<'_>) -> ToolOutput {
    write_pending(env, fs::prepare_plain(env, rel, content), ctx).await
}

/// Asks the user about a file change when edits need approval. The user
/// may accept only some hunks: the model is told exactly which were
/// rejected, so it does not assume they landed.
async fn approve_change(
    env: &ToolEnv,
    mut pending: fs::Pending,
    ctx: &CallCtx<'_>,
) -> Result<(fs::Pending, String, bool), ToolOutput> {
    let key = match env.sandbox.edit_decision(&pending.r.rel) {
        crate::sandbox::EditDecision::Apply => return Ok((pending, String::new(), false)),
        crate::sandbox::EditDecision::Ask { key } => key,
    };
    let change = pending.change();
    let answered = CancellationToken::new();
    if let Some(lsp) = env.lsp.clone()
        && let Some(current) = pending.before.clone()
        && crate::lsp::language_of(&pending.r.abs).is_some()
    {
        // The server's verdict joins the approval overlay while the user
        // reads the diff (a new file has nothing to compare with).
        let (call_id, abs) = (ctx.call_id.to_string(), pending.r.abs.clone());
        let proposed = pending.after.clone();
        let answered = answered.clone();
        tokio::spawn(async move {
            lsp.preview(&call_id, &abs, &current, &proposed, &answered)
                .await;
        });
    }
    let _answered = answered.drop_guard();
    let answer = env
        .broker
        .ask(
            ctx.turn,
            ctx.call_id,
            ApprovalKind::Edit { change },
            ctx.cancel,
        )
        .await;
    let decision = match answer {
        Answer::User(d) => d,
        Answer::Unattended => return Err(ToolOutput::declined(HEADLESS_REFUSAL)),
    };
    match decision {
        ApprovalDecision::Yes => Ok((pending, String::new(), true)),
        ApprovalDecision::Always => {
            env.sandbox.remember(&key);
            Ok((pending, String::new(), true))
        }
        ApprovalDecision::No { reason } => Err(ToolOutput::declined(match reason {
            Some(r) => format!("the user rejected this change to {}: {r}", pending.r.rel),
            None => format!(
                "the user rejected this change to {}; the file is unchanged",
                pending.r.rel
            ),
        })),
        ApprovalDecision::Hunks { accepted } => {
            let before = pending.before.clone().unwrap_or_default();
            let all = crate::diff::hunks(&before, &pending.after, crate::diff::CONTEXT);
            let rejected: Vec<String> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| !accepted.contains(i))
                .map(|(i, h)| format!("hunk {} ({})", i + 1, h.header()))
                .collect();
            if accepted.is_empty() {
                return Err(ToolOutput::declined(format!(
                    "the user rejected every hunk of this change to {}; the file is unchanged",
                    pending.r.rel
                )));
            }
            pending.after = crate::diff::apply_hunks(&before, &pending.after, &accepted);
            let note = if rejected.is_empty() {
                String::new()
            } else {
                format!(
                    ". The user REJECTED {} of {} hunks: {}; those lines were left as they were",
                    rejected.len(),
                    all.len(),
                    rejected.join(", ")
                )
            };
            Ok((pending, note, true))
        }
    }
}

async fn run_bash(env: &ToolEnv, args: &Map<String, Value>, ctx: &CallCtx<'_>) -> ToolOutput {
    let command = arg_str(args, crate::toolname::arg::COMMAND).unwrap_or_default();
    if command.trim().is_empty() {
        return ToolOutput::error("empty command");
    }
    let plan = match env.sandbox.check_exec(command) {
        ExecDecision::Run(plan) => plan,
        ExecDecision::Deny { reason } => return ToolOutput::refused(format!("refused: {reason}")),
        ExecDecision::Ask { reason, key } => {
            let kind = ApprovalKind::Exec {
                command: command.to_string(),
                reason,
                scope: crate::sandbox::always::describe(&key),
                always_key: key.clone(),
            };
            match env
                .broker
                .ask(ctx.turn, ctx.call_id, kind, ctx.cancel)
                .await
            {
                Answer::Unattended => return ToolOutput::declined(HEADLESS_REFUSAL),
                // Hunks only mean something for edits.
                Answer::User(ApprovalDecision::Yes | ApprovalDecision::Hunks { .. }) => {}
                Answer::User(ApprovalDecision::Always) => env.sandbox.remember(&key),
                Answer::User(ApprovalDecision::No { reason }) => {
                    let why = match reason {
                        Some(r) => format!("the user declined to run this command: {r}"),
                        None => "the user declined to run this command".into(),
                    };
                    return ToolOutput::declined(why);
                }
            }
            env.sandbox.approved_plan()
        }
    };
    if ctx.cancel.is_cancelled() {
        return ToolOutput::not_run("not executed: cancelled");
    }
    // The user's limit (`bashTimeout`) is a ceiling: a model may ask for
    // less time, never more.
    let timeout = arg_u64(args, "timeout")
        .map(Duration::from_secs)
        .unwrap_or(env.bash_timeout)
        .min(env.bash_timeout)
        .min(bash::MAX_TIMEOUT);
    let root = env.sandbox.root();
    // A command that may write could leave a git repository in the
    // workspace whose settings git honours later (a planted fsmonitor or
    // hook): look before and after, and tell the user.
    let repos_before = match plan.git_guard {
        true => None,
        false => git_repositories(env).await,
    };
    let cmd = env.sandbox.command("/bin/sh", &["-c", command], root, plan);
    let f = match bash::run(cmd, timeout, ctx.cancel).await {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("cannot start /bin/sh: {e}")),
    };
    let mut out = bash_result(f, timeout, plan);
    if let (Some(before), Some(after)) = (repos_before, git_repositories(env).await) {
        let mut planted: Vec<&String> = after
            .iter()
            .filter(|(p, v)| before.get(*p) != Some(*v))
            .map(|(p, _)| p)
            .collect();
        planted.sort();
        if !planted.is_empty() {
            let names: Vec<&str> = planted.iter().map(|p| p.as_str()).collect();
            let w = format!(
                "this command created or changed a git repository at {}: git honours its settings (hooks, fsmonitor) when you run git there; delete it if you did not expect it",
                names.join(", ")
            );
            out.text.push_str(&format!("\n[{w}]"));
            out.warning = Some(w);
        }
    }
    out
}

/// The workspace's git repositories and their fingerprints, off the
/// runtime thread.
async fn git_repositories(env: &ToolEnv) -> Option<std::collections::BTreeMap<String, u64>> {
    let sandbox = env.sandbox.clone();
    tokio::task::spawn_blocking(move || sandbox.git_repositories())
        .await
        .ok()
        .flatten()
}

/// A finished command as the model reads it.
fn bash_result(f: bash::Finished, timeout: Duration, plan: crate::sandbox::RunPlan) -> ToolOutput {
    let mut text = f.output;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if plan.access.is_some() && f.exit_code == Some(1) && text.starts_with("bwrap: ") {
        // The fence itself failed, not the command: say so plainly.
        text.push_str("[the OS fence (bubblewrap) could not start this command; it did not run]\n");
    }
    let secs = f.elapsed.as_secs_f64();
    if f.timed_out {
        text.push_str(&format!(
            "[killed after {}s timeout, with everything it started]",
            timeout.as_secs()
        ));
        return ToolOutput::error(text);
    }
    if f.cancelled {
        text.push_str("[cancelled by the user; the command was killed]");
        return ToolOutput::not_run(text);
    }
    match f.exit_code {
        Some(0) => {
            text.push_str(&format!("[exit code 0, {secs:.1}s]"));
            ToolOutput::ok(text)
        }
        Some(code) => {
            text.push_str(&format!("[exit code {code}, {secs:.1}s]"));
            ToolOutput::error(text)
        }
        None => {
            text.push_str("[killed by a signal]");
            ToolOutput::error(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        specs(ToolSet {
            bash: true,
            edit: true,
            write: true,
            lsp: false,
        })
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
    }

    #[test]
    fn a_missing_argument_is_never_empty() {
        let e = validate(&spec("write_file"), r#"{"path":"a.txt"}"#).unwrap_err();
        assert!(e.contains("missing required argument `content`"), "{e}");
        let e = validate(&spec("write_file"), r#"{"path":"a.txt","content":null}"#).unwrap_err();
        assert!(e.contains("content"), "{e}");
        assert!(validate(&spec("write_file"), r#"{"path":"a.txt","content":""}"#).is_ok());
    }

    #[test]
    fn types_are_checked_and_integer_strings_accepted() {
        assert!(validate(&spec("read_file"), r#"{"path":5}"#).is_err());
        let a = validate(&spec("read_file"), r#"{"path":"a","offset":"10"}"#).unwrap();
        assert_eq!(a["offset"], 10);
        assert!(validate(&spec("read_file"), r#"{"path":"a","offset":"ten"}"#).is_err());
        assert!(validate(&spec("read_file"), "not json").is_err());
        assert!(validate(&spec("read_file"), "[1]").is_err());
        let e = validate(&spec("read_file"), r#"{"path":"a","file":"b"}"#).unwrap_err();
        assert!(e.contains("unknown argument `file`"), "{e}");
    }

    #[test]
    fn groups_turn_tools_off() {
        let names = |set| {
            specs(set)
                .iter()
                .map(|s| s.name.to_string())
                .collect::<Vec<_>>()
        };
        let none = names(ToolSet {
            bash: false,
            edit: false,
            write: true,
            lsp: false,
        });
        assert!(none.is_empty());
        let shell = names(ToolSet {
            bash: true,
            edit: false,
            write: true,
            lsp: false,
        });
        assert_eq!(shell, vec!["bash"]);
        let read_only = names(ToolSet {
            bash: true,
            edit: true,
            write: false,
            lsp: false,
        });
        assert_eq!(
            read_only,
            vec!["read_file", "list_dir", "glob", "grep", "bash"]
        );
    }
}
