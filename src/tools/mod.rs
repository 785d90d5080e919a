//! The tools the model can call. Tools return text, never print; the agent
//! publishes what they did. Schemas are kept short: every byte of them is
//! in the prompt prefix a small local model reads before its first token.

mod approve;
pub use approve::HUNKS_REJECTED;
pub mod ask;
pub mod asking;
pub mod bash;
mod command;
pub mod custom;
pub mod edit_match;
pub mod fetch;
pub mod fs;
pub mod guard;
pub mod nav;
pub mod probe;
mod schema;
pub mod scratch;
pub mod search;
pub mod syntax;
pub mod task;

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

pub use approve::write_own;
use approve::*;
use command::*;
pub(crate) use schema::{integer, object, string};
pub use schema::{specs, validate};

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
    /// A picture the tool read, shown to the model with the result.
    pub image: Option<Box<crate::llm::Image>>,
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
            image: None,
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
    /// `task`: sub-tasks for a child agent, in the roles found (None: no
    /// such tool).
    pub task: Option<task::TaskEnv>,
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
    /// Changes the user said no to, by turn, path and the content they
    /// would have left: the same change is not put to them again in that
    /// turn (by the model or by mm).
    pub refused: Mutex<Vec<(crate::protocol::TurnId, String, String)>>,
    /// The instruction files of subfolders shown so far.
    pub nested: crate::instructions::Nested,
    /// Whether the model takes images, once the server said.
    pub vision: std::sync::OnceLock<bool>,
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
            task: None,
            editor: std::sync::OnceLock::new(),
            mcp: None,
            skills: Vec::new(),
            commands: Vec::new(),
            command_tools: Vec::new(),
            fetch: None,
            start_notes: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            nested: crate::instructions::Nested::default(),
            vision: std::sync::OnceLock::new(),
        }
    }
}

/// The call being run, for approvals and cancellation.
pub struct CallCtx<'a> {
    pub turn: TurnId,
    pub call_id: &'a str,
    pub cancel: &'a CancellationToken,
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
            Some(a) => {
                a.run(args, ctx, env.sandbox.child_ceiling(a.asker.ceiling))
                    .await
            }
            None => ToolOutput::error("no agents to ask: this agent declares no mmConfigs"),
        },
        ToolName::Task => match &env.task {
            Some(t) => {
                t.run(args, ctx, env.sandbox.child_ceiling(t.asker.ceiling))
                    .await
            }
            None => ToolOutput::error(
                "task is off (taskTool: true, or a role in .mm/agents/, turns it on)",
            ),
        },
        // The agent keeps the plan; a call that reaches the tools has no
        // plan to mark.
        ToolName::UpdatePlan => ToolOutput::error("update_plan is not offered in this turn"),
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
        // `planGate`: a tool that may change files asks, whatever the mode
        // (in auto mode, where nobody is asked, it does not run).
        let mode = match sandbox.mode() {
            SandboxMode::Full if sandbox.plan_gated() => SandboxMode::Workspace,
            SandboxMode::Auto if sandbox.plan_gated() => {
                return ToolOutput::refused(format!(
                    "{name} may change files, a plan is being carried out under planGate, and in auto mode nobody is asked, so it does not run"
                ));
            }
            m => m,
        };
        match mode {
            SandboxMode::ReadOnly => {
                return ToolOutput::refused(format!(
                    "{name} may change files and the sandbox is read-only (a readOnly tool needs the fence)"
                ));
            }
            SandboxMode::Full => sandbox.approved_plan(),
            // What could write the user's own config in the workspace
            // does not run unasked (red-team round 34), as with bash.
            SandboxMode::Auto if let Some(p) = sandbox.holds_own_config() => {
                return ToolOutput::refused(format!(
                    "{name} may change files, the workspace holds {}, your own configuration, and in auto mode nobody is asked, so it does not run; start mm in a project folder",
                    p.display()
                ));
            }
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
    // While a plan is made or carried out under planGate, a tool the
    // config lets run may change anything: it asks.
    let permission = match tool.permission {
        McpPermission::Allow if env.sandbox.planning() || env.sandbox.plan_gated() => {
            McpPermission::Ask
        }
        p => p,
    };
    match permission {
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
