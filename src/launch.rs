//! Picks a front end and builds what it needs: settings, the connection,
//! the session, the agent. Everything here runs once per process.

use crate::toolname::ToolName;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::{Agent, AgentParts, prompt, service};
use crate::approval::{ApprovalBroker, BrokerMode};
use crate::bus::{EventBus, OpSender};
use crate::cli::Cli;
use crate::config::{self, Settings};
use crate::console::{repl, show};
use crate::llm::{self, ChatRequest, Message, RequestBudget};
use crate::sandbox::{Fence, Sandbox};
use crate::session::{self, SessionLog};
use crate::tools::{self, ToolEnv, ToolSet};
use crate::{headless, startup, tui};

/// A panic anywhere kills what mm started before it is reported.
fn kill_children_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        crate::sandbox::procs::kill_all();
        previous(info);
    }));
}

/// What `mm -acp` runs once the runtime is ready (or could not be made).
/// The ACP agent sits above the launcher (it opens a session through it
/// for each client request), so its caller hands it in.
pub struct AcpEntry {
    pub serve: fn(Runtime, PathBuf) -> futures::future::LocalBoxFuture<'static, i32>,
    pub unavailable: fn(Settings, String) -> futures::future::LocalBoxFuture<'static, i32>,
}

/// Runs mm as the flags say and returns the exit code.
/// A run that ends before its first request: the reason on stderr and,
/// for `-p … -json`, the result object on stdout (outcome `error`), so a
/// script reading stdout learns why. Returns `code`.
fn early_exit(cli: &Cli, code: i32, msg: &str) -> i32 {
    eprintln!("mm: {}", crate::untrusted::displayable(msg));
    if cli.json && cli.prompt.is_some() {
        let v = serde_json::json!({
            "outcome": "error",
            "answer": "",
            "written": [],
            "error": msg,
        });
        // C1 controls and bidi marks as escapes, as every JSON line is.
        println!("{}", crate::untrusted::json_line(&v));
    }
    code
}

pub async fn run(cli: Cli, acp: AcpEntry) -> i32 {
    kill_children_on_panic();
    if let Some(shell) = &cli.completions {
        return match crate::cli::completions(shell, &mut std::io::stdout()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("mm: {e}");
                2
            }
        };
    }
    if cli
        .config
        .as_deref()
        .is_some_and(|c| c == std::path::Path::new("doctor") && !c.exists())
    {
        return doctor(&cli).await;
    }
    // `mm doctr`: a word that is no file, close to the one command.
    if let Some(c) = cli.config.as_deref().and_then(|c| c.to_str())
        && !std::path::Path::new(c).exists()
        && !c.contains(['/', '.'])
        && strsim::levenshtein(c, "doctor") <= 2
    {
        eprintln!(
            "mm: no agent file {}; did you mean `mm doctor`?",
            crate::untrusted::displayable(c)
        );
        return 2;
    }
    if cli.man {
        return match crate::cli::man_page(&mut std::io::stdout()) {
            Ok(()) => 0,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
            Err(e) => {
                eprintln!("mm: {e}");
                1
            }
        };
    }
    let root = match workspace_root(&cli) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mm: {e}");
            return 2;
        }
    };
    debug_log(&root);
    if cli.sessions {
        repl::print_sessions(&root);
        return 0;
    }
    if cli.prune {
        return prune(&root);
    }
    if let Some(which) = &cli.show {
        return match session::read_records(&root, which) {
            Ok((id, records)) if cli.export.is_some() => export(
                &root,
                &id,
                &records,
                cli.export.as_deref().unwrap_or("-"),
                cli.json,
            ),
            Ok((id, records)) if cli.diff => show_diff(&root, &id, &records),
            Ok((_, records)) => {
                show::replay(&records);
                0
            }
            Err(e) => {
                eprintln!("mm: {e}");
                1
            }
        };
    }
    if let Some(cases) = &cli.eval {
        return crate::eval::run(&cli, cases).await;
    }
    if cli.json && cli.prompt.is_none() && !cli.show_prompt {
        eprintln!("mm: -json needs -p PROMPT");
        return 2;
    }
    for (set, flag) in [(cli.json_stream, "-json-stream"), (cli.quiet, "-quiet")] {
        if set && cli.prompt.is_none() {
            eprintln!("mm: {flag} needs -p PROMPT");
            return 2;
        }
    }
    let mut cli = cli;
    // `cat log | mm -p "why does it fail"`: what is piped goes with the
    // prompt as context (a pipe or a file on stdin, never a terminal).
    let mut piped = None;
    if cli.prompt.as_deref() == Some("-") {
        match read_stdin_prompt() {
            Ok(p) => cli.prompt = Some(p),
            Err(e) => {
                eprintln!("mm: -p -: {e}");
                return 2;
            }
        }
    } else if cli.prompt.is_some() && stdin_is_piped() {
        match read_piped() {
            Ok(text) => piped = text,
            Err(e) => {
                eprintln!("mm: stdin: {e}");
                return 2;
            }
        }
    }
    let project = match project_config(&root, &cli) {
        Ok(p) => p,
        Err(e) => return early_exit(&cli, 2, &format!("config error: {e}")),
    };
    if cli.show_config {
        return show_config(&cli, project.as_ref());
    }
    let mut settings = match load_settings(&cli, project.as_ref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(name) = cli.ask.as_ref().or(cli.ask_with_context.as_ref())
        && !cli.show_prompt
    {
        // The asked agent gets what was piped inside its prompt.
        let name = name.clone();
        let mut cli = cli;
        if let (Some(p), Some(text)) = (cli.prompt.as_ref(), piped.take()) {
            cli.prompt = Some(format!(
                "{p}\n\n{}",
                crate::agent::piped_note(text.trim_end())
            ));
        }
        return ask_once(&cli, &settings, &root, &name).await;
    }
    // Plain http the user wrote for another machine is used, and said once.
    let written = (!settings.auto_detect).then_some(settings.base_url.as_str());
    for url in written.into_iter().chain(settings.fallback.as_deref()) {
        if let Some(note) = crate::config::provider::plain_http_note(url) {
            eprintln!("mm: {note}");
        }
    }
    for note in &settings.notes {
        eprintln!("mm: {}", crate::untrusted::displayable(note));
    }
    let inert = settings.inert_keys();
    if !inert.is_empty() {
        eprintln!(
            "mm: {} accepted (written for the Go mm) but not acted on yet",
            inert.join(", ")
        );
    }
    let unattended = cli.prompt.is_some();
    if cli.show_prompt {
        let root = match std::fs::canonicalize(&root) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("mm: cannot use {} as the workspace: {e}", root.display());
                return 2;
            }
        };
        let fenced = !cli.unfenced && Fence::detect().await.is_on();
        show_prompt(&settings, &root, unattended, fenced, cli.json, cli.no_net);
        return 0;
    }
    let tui = cli.tui || (settings.ui == config::file::Ui::Tui && !cli.repl && !cli.acp);
    let tui_looks = if tui && cli.prompt.is_none() {
        match load_looks(&settings, &root) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!(
                    "mm: config error: {}",
                    crate::untrusted::displayable(&e.to_string())
                );
                return 2;
            }
        }
    } else {
        None
    };
    // The fence is looked for while the server is: neither waits for the other.
    let fence = async {
        if cli.unfenced {
            Fence::Off("-unfenced".into())
        } else {
            match std::fs::canonicalize(&root) {
                Ok(r) => Fence::detect_in(&r).await,
                Err(_) => Fence::detect().await,
            }
        }
    };
    // A broken tool manifest is a config error, said before any server
    // is looked for (the answer must not depend on whether one runs).
    if !cli.acp
        && (settings.bash_tool || settings.edit_tools)
        && let Err(e) = load_command_tools(&root)
    {
        return early_exit(&cli, 2, &e);
    }
    let (fence, connected) = tokio::join!(fence, startup::connect(&mut settings));
    if let Err(msg) = fence_required(&cli, &settings, &fence) {
        return early_exit(&cli, 2, &msg);
    }
    if let Fence::Off(why) = &fence
        && !cli.unfenced
        && settings.sandbox < config::SandboxMode::Auto
    {
        eprintln!("mm: no OS fence ({why}): tests and builds ask before they run");
    }
    let connected = match connected {
        Ok(c) => c,
        Err(msg) => {
            if cli.acp {
                eprintln!("mm: {msg}");
                return (acp.unavailable)(settings, msg.to_string()).await;
            }
            return early_exit(&cli, 1, &msg.to_string());
        }
    };
    let rt = Runtime {
        settings: Arc::new(settings),
        connected,
        fence,
        net: !cli.no_net,
        server_flags: server_flags(&cli),
        trust: cli.trust,
    };
    if cli.acp {
        return (acp.serve)(rt, root).await;
    }
    let Opened {
        ops,
        events,
        handle,
        info,
        lsp,
        replay,
        root,
        ..
    } = match open_session(&rt, &root, cli.resume.as_deref(), unattended).await {
        Ok(o) => o,
        // It may name files and keys of the workspace's own files:
        // shown as text, never raw.
        Err((code, msg)) => return early_exit(&cli, code, &msg),
    };
    if let Some(prompt) = &cli.prompt {
        let output = if cli.json_stream {
            headless::Output::JsonStream
        } else if cli.json {
            headless::Output::Json
        } else if cli.quiet {
            headless::Output::Quiet
        } else {
            headless::Output::Text
        };
        if let Some(text) = piped {
            ops.submit(crate::protocol::Op::Piped { text });
        }
        let code = headless::run(ops, events, prompt, &info.commands, output).await;
        let _ = handle.await;
        if let Some(l) = &lsp {
            l.shutdown().await;
        }
        return code;
    }
    if let Some((theme, keymap)) = tui_looks {
        let mut app = tui::App::new(theme, keymap, ops.clone(), root.clone(), info);
        for ev in session::replay::events(&replay) {
            app.on_agent(ev);
        }
        if !replay.is_empty() {
            // A resumed session's changes are marked in the tree again.
            app.refresh_marks();
        }
        let mut events = events;
        // SessionStarted is already queued: the app takes it before drawing.
        while let Ok(ev) = events.try_recv() {
            app.on_event(ev);
        }
        let (code, session) = tui::run(app, ops, events).await;
        let _ = handle.await;
        if let Some(l) = &lsp {
            l.shutdown().await;
        }
        // The session stays in the terminal's scrollback after the alternate screen.
        if let Ok((_, records)) = session::read_records(&root, &session) {
            show::replay(&records);
        }
        return code;
    }
    let code = repl::run(ops, events, info, root).await;
    let _ = handle.await;
    if let Some(l) = &lsp {
        l.shutdown().await;
    }
    code
}

/// What every session of this process shares: the settings, the model
/// server, the fence.
pub struct Runtime {
    pub settings: Arc<Settings>,
    pub connected: startup::Connected,
    pub fence: Fence,
    pub net: bool,
    /// `-url`, `-provider`, `-model` as given: the agents this one asks
    /// use the server the user chose for the run.
    pub server_flags: Vec<String>,
    /// `-trust`: the repository's own config and command tools are
    /// trusted as they are now.
    pub trust: bool,
}

/// The server the command line chose, as flags for a child `mm`.
fn server_flags(cli: &Cli) -> Vec<String> {
    let mut v = Vec::new();
    for (flag, value) in [
        ("-url", &cli.url),
        ("-provider", &cli.provider),
        ("-model", &cli.model),
    ] {
        if let Some(value) = value {
            v.push(flag.to_string());
            v.push(value.clone());
        }
    }
    v
}

/// What a session brings to the agents it asks: its workspace, its
/// sandbox mode as their ceiling, its fence and network, and how long a
/// child may stay silent.
pub fn asker(rt: &Runtime, root: &std::path::Path) -> crate::tools::asking::Asker {
    crate::tools::asking::Asker {
        root: root.to_path_buf(),
        ceiling: rt.settings.sandbox,
        net: rt.net,
        unfenced: !rt.fence.is_on(),
        idle: rt.settings.first_token_timeout + rt.settings.watchdog,
        server_flags: rt.server_flags.clone(),
        budget: None,
    }
}

/// A session running as a service: submit ops, read events.
pub struct Opened {
    pub ops: OpSender,
    pub events: crate::bus::EventReceiver,
    pub handle: tokio::task::JoinHandle<()>,
    pub info: crate::protocol::SessionInfo,
    pub lsp: Option<Arc<crate::lsp::Lsp>>,
    /// A resumed session's records.
    pub replay: Vec<session::Record>,
    /// The workspace, canonical.
    pub root: PathBuf,
    /// The session's tools (a front end may lend them its editor).
    pub tools: Arc<ToolEnv>,
}

/// The workspace's command tools: every built-in name there can be is
/// taken, so a manifest cannot claim one.
fn load_command_tools(root: &Path) -> Result<Vec<tools::custom::CommandTool>, String> {
    let built_in = built_in_tool_names();
    let taken: Vec<&str> = built_in.iter().map(String::as_str).collect();
    tools::custom::load(root, &taken)
}

/// Every tool name mm itself can offer.
fn built_in_tool_names() -> Vec<String> {
    tools::specs(ToolSet {
        bash: true,
        edit: true,
        write: true,
        lsp: true,
    })
    .into_iter()
    .map(|s| s.name.into_owned())
    .chain(
        [
            ToolName::AskAgent,
            ToolName::ReadSkill,
            ToolName::FetchContent,
        ]
        .map(|t| t.as_str().to_string()),
    )
    .collect()
}

/// Opens a session in `root` (new, or `resume`d: `last` or an id) and
/// starts its service. Errors carry the exit code (2: the workspace).
pub async fn open_session(
    rt: &Runtime,
    root: &std::path::Path,
    resume: Option<&str>,
    unattended: bool,
) -> Result<Opened, (i32, String)> {
    let settings = &rt.settings;
    let sandbox = match Sandbox::with_fence(root, settings.sandbox, rt.fence.clone(), rt.net) {
        Ok(s) => Arc::new(
            s.ask_before_edits(settings.approve_edits && !unattended)
                .with_passthrough(settings.env_passthrough.clone()),
        ),
        Err(e) => {
            return Err((
                2,
                format!("cannot use {} as the workspace: {e}", root.display()),
            ));
        }
    };
    let root = sandbox.root().to_path_buf();
    let mut replay = Vec::new();
    let (log, history) = match resume {
        Some(which) => {
            match SessionLog::resume(&root, which) {
                Ok((log, records, repair)) => {
                    if repair.torn_bytes > 0 {
                        eprintln!("mm: repaired session {}: cut a torn last line", log.id());
                    }
                    if !repair.closed_calls.is_empty() {
                        eprintln!(
                            "mm: repaired session {}: {} tool call(s) had no recorded result; the model is told to check before redoing them",
                            log.id(),
                            repair.closed_calls.len()
                        );
                    }
                    let logged = session::always_keys(&records)
                        .into_iter()
                        .collect::<std::collections::BTreeSet<_>>()
                        .len();
                    let always = session::held_always_keys(&records, &root);
                    let started_here = session::started_in(&records, &root);
                    if logged > always.len() && started_here {
                        eprintln!(
                            "mm: session {}: {} \"always\" answer(s) in its log were not given through your mm (written into the log?): they do not hold",
                            log.id(),
                            logged - always.len()
                        );
                    }
                    if logged > 0 && !started_here {
                        // A log this workspace did not write (one that came
                        // with a cloned repository) grants nothing.
                        eprintln!(
                            "mm: session {} was not started in this folder by your mm (a log that came with the repository?): its {} \"always\" answer(s) do not hold here",
                            log.id(),
                            logged
                        );
                    } else if !always.is_empty() {
                        eprintln!(
                            "mm: session {}: {} \"always\" answer(s) still hold: {}",
                            log.id(),
                            always.len(),
                            always
                                .iter()
                                .map(|k| crate::untrusted::displayable(
                                    &crate::sandbox::always::words(k)
                                )
                                .into_owned())
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        sandbox.restore(&always);
                    }
                    replay = records.clone();
                    (log, session::messages(&records))
                }
                Err(e) => return Err((1, e.to_string())),
            }
        }
        None => match SessionLog::create(&root, &settings.provider, &rt.connected.model) {
            Ok(log) => (log, Vec::new()),
            Err(e) => return Err((1, e.to_string())),
        },
    };
    // A `/model` switch holds on resume, unless this command line names
    // a model itself.
    let mut model = rt.connected.model.clone();
    if let Some(switched) = session::switched_model(&replay)
        && switched != model
    {
        if rt.server_flags.iter().any(|f| f == "-model") {
            eprintln!(
                "mm: session {} had switched to {}; -model {} holds for this run",
                log.id(),
                crate::untrusted::displayable(&switched),
                crate::untrusted::displayable(&model)
            );
        } else {
            eprintln!(
                "mm: session {} uses {} (switched with /model)",
                log.id(),
                crate::untrusted::displayable(&switched)
            );
            model = switched;
        }
    }
    let settings = rt.settings.clone();
    let bus = EventBus::new();
    let mode = if unattended {
        BrokerMode::Deny
    } else {
        BrokerMode::Interactive
    };
    let broker = Arc::new(ApprovalBroker::new(mode, bus.clone()));
    let mut tool_env = ToolEnv::new(sandbox, broker.clone(), settings.bash_timeout);
    tool_env.guard_writes = settings.harness;
    // A language server runs the project's code (a toolchain file's
    // programs, build scripts, proc macros): without the fence it would
    // run unasked on the host, so only `full` starts one there.
    let lsp_unfenced = !tool_env.sandbox.fence().is_on()
        && tool_env.sandbox.mode() != crate::config::SandboxMode::Full
        && settings.lsp.iter().any(|s| s.enabled);
    if settings.edit_tools && !lsp_unfenced {
        tool_env.lsp = Some(Arc::new(
            crate::lsp::Lsp::new(
                &root,
                settings.lsp.clone(),
                bus.ambient(),
                Some(root.join(".mm").join("lsp.log")),
            )
            .fenced(tool_env.sandbox.clone()),
        ));
    }
    let (skills, skill_warnings) = crate::skills::for_session(&settings, &root);
    tool_env.skills = skills;
    if settings.bash_tool || settings.edit_tools {
        tool_env.command_tools = load_command_tools(&root).map_err(|e| (2, e))?;
        // "readOnly" lets a tool run unasked (in the fence): a tool that
        // came with a clone gets that only once the user trusts it.
        for tool in tool_env
            .command_tools
            .iter_mut()
            .filter(|t| t.manifest.read_only)
        {
            let Ok(text) = std::fs::read(&tool.file) else {
                tool.manifest.read_only = false;
                continue;
            };
            let line = format!("{}\t{}", tool.file.display(), crate::git::blob_id(&text));
            if is_trusted(&line) {
                continue;
            }
            let shown = tool
                .file
                .strip_prefix(&root)
                .unwrap_or(&tool.file)
                .display()
                .to_string();
            if rt.trust {
                remember_trusted(&line);
                eprintln!(
                    "mm: {shown} (readOnly) is trusted as it is now; a change to it asks again"
                );
            } else {
                tool.manifest.read_only = false;
                eprintln!(
                    "mm: {}: readOnly is left out until you trust the file (mm -trust): it asks like any command",
                    crate::untrusted::displayable(&shown)
                );
            }
        }
    }
    if settings.fetch_content
        && !tool_env.sandbox.no_net()
        && (settings.edit_tools || settings.bash_tool)
    {
        tool_env.fetch = Some(settings.fetch_private);
    }
    let (commands, command_warnings) = crate::commands::for_session(&root);
    tool_env.commands = commands;
    if let Ok(mut notes) = tool_env.start_notes.lock() {
        if lsp_unfenced && settings.edit_tools {
            notes.push(
                "language servers are off: without the OS fence they would run the project's code unasked (-yolo starts them outside it)".into(),
            );
        }
        notes.extend(skill_warnings);
        notes.extend(command_warnings);
        if settings.bash_tool || settings.edit_tools {
            notes.extend(
                crate::instructions::for_prompt(&root, crate::config::user_config_dir().as_deref())
                    .notes,
            );
        }
    }
    if !settings.mcp_servers.is_empty() && settings.bash_tool | settings.edit_tools {
        let built_in = built_in_tool_names();
        let mut taken: Vec<&str> = built_in.iter().map(String::as_str).collect();
        taken.extend(
            tool_env
                .command_tools
                .iter()
                .map(|t| t.manifest.name.as_str()),
        );
        tool_env.mcp = Some(Arc::new(
            crate::mcp::McpServers::start(&settings.mcp_servers, &tool_env.sandbox, &taken).await,
        ));
    }
    // The session's request budget: its sub-agents' requests count too.
    let budget = Arc::new(RequestBudget::for_session(settings.max_requests));
    if !settings.sub_agents.is_empty() {
        let mut asker = asker(rt, &root);
        asker.budget = Some(budget.clone());
        tool_env.ask = Some(tools::ask::AskEnv {
            agents: settings.sub_agents.clone(),
            asker,
            bus: bus.clone(),
        });
    }
    let lsp = tool_env.lsp.clone();
    let tools = Arc::new(tool_env);
    let tools_kept = tools.clone();
    let mut agent = Agent::new(AgentParts {
        settings: settings.clone(),
        model,
        context_window: rt.connected.context_window,
        client: rt.connected.client.clone(),
        budget,
        tools,
        bus: bus.clone(),
        turn_starts: session::turn_starts(&replay),
        checkpoints: session::checkpoints(&replay),
        git: open_checkpoints(
            &root,
            log.id(),
            settings.checkpoint_days,
            session::checkpoints(&replay).last(),
        ),
        made: session::made(&replay),
        window_note: rt.connected.window_note.clone(),
        model_note: rt.connected.model_note.clone(),
        log,
        history,
        unattended,
        resumed: resume.is_some(),
    });
    let events = bus.subscribe();
    let info = agent.info();
    agent.announce();
    let (ops, ops_rx) = OpSender::channel();
    let handle = service::spawn(agent, broker, bus, ops_rx);
    Ok(Opened {
        ops,
        events,
        handle,
        info,
        lsp,
        replay,
        root,
        tools: tools_kept,
    })
}

/// The TUI's theme and keymap, loaded before anything starts so a broken
/// file stops mm with its line:col.
/// `-sandbox read-only` and `-no-net` promise what only the fence can
/// keep: without one they stop mm, unless `-unfenced` says to go on.
fn fence_required(cli: &Cli, settings: &Settings, fence: &Fence) -> Result<(), String> {
    // Commands outside the fence keep the network whatever mm says.
    if cli.no_net && (cli.unfenced || settings.sandbox == config::SandboxMode::Full) {
        let why = if cli.unfenced {
            "-unfenced"
        } else {
            "full access (-yolo, -sandbox full)"
        };
        return Err(format!(
            "-no-net cannot be kept with {why}: commands run outside the fence, with the network. Drop -no-net, or use -auto (every command in the fence)."
        ));
    }
    let auto = settings.sandbox == config::SandboxMode::Auto;
    if auto && cli.unfenced {
        return Err("-sandbox auto runs every command inside the fence, and -unfenced turns it off: use one or the other.".into());
    }
    let Fence::Off(why) = fence else {
        return Ok(());
    };
    if cli.unfenced {
        return Ok(());
    }
    let wants = if auto {
        "-sandbox auto"
    } else if cli.no_net {
        "-no-net"
    } else if settings.sandbox == config::SandboxMode::ReadOnly {
        "-sandbox read-only"
    } else {
        return Ok(());
    };
    Err(format!(
        "{wants} needs the OS fence, and there is none here: {why}. Install bubblewrap (apt-get install bubblewrap), or add -unfenced to go on without it."
    ))
}

fn load_looks(
    settings: &Settings,
    root: &std::path::Path,
) -> Result<(crate::tui::theme::Theme, crate::tui::keymap::Keymap), config::ConfigError> {
    let depth = crate::tui::theme::ColorDepth::detect();
    let theme = crate::tui::theme::load(&settings.theme, root, depth)?;
    let keymap = crate::tui::keymap::load(&settings.keymap)?;
    Ok((theme, keymap))
}

/// The checkpoint store, or None (with a word on stderr) when git cannot
/// keep checkpoints here.
fn open_checkpoints(
    root: &std::path::Path,
    session: &str,
    keep_days: u64,
    resumed_at: Option<&crate::protocol::CheckpointInfo>,
) -> Option<Arc<std::sync::Mutex<crate::git::Store>>> {
    match crate::git::Store::open(root, session) {
        Ok(mut s) => {
            if let Some(found) = s.passed_over() {
                eprintln!(
                    "mm: checkpoints go to a shadow repository: the one at {} is not this workspace's own (its work tree is elsewhere, or its objects or refs lead out of it)",
                    crate::untrusted::displayable(&found.display().to_string())
                );
            }
            if keep_days > 0 {
                let _ = s.prune_older_than(keep_days);
            }
            if let Some(oid) = resumed_at.and_then(|c| crate::git::CheckpointId::parse(&c.id).ok())
            {
                let _ = s.resume_at(oid);
            }
            Some(Arc::new(std::sync::Mutex::new(s)))
        }
        Err(e) => {
            eprintln!("mm: checkpoints are off: {e}");
            None
        }
    }
}

/// `MM_LOG=debug` (any `tracing` filter: `mm=trace`, `mm::lsp=debug`)
/// appends what mm does to `.mm/debug.log`: the ops, each request, each
/// tool call, the language servers' own messages. Nothing is written
/// without it.
fn debug_log(root: &std::path::Path) {
    let Some(filter) = std::env::var("MM_LOG")
        .ok()
        .filter(|f| !f.trim().is_empty())
    else {
        return;
    };
    let file = crate::mmdir::MmDir::open(&root.join(".mm"))
        .and_then(|d| d.file("debug.log", crate::mmdir::Open::Append));
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mm: MM_LOG is set but .mm/debug.log cannot be opened: {e}");
            return;
        }
    };
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mm: MM_LOG={filter}: {e}");
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init();
}

/// `-prune`: drops the checkpoint refs of every session but the latest.
fn prune(root: &std::path::Path) -> i32 {
    let latest = session::list(root)
        .first()
        .map(|s| s.id.clone())
        .unwrap_or_default();
    let store = match crate::git::Store::open(root, &latest) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mm: {e}");
            return 1;
        }
    };
    match store.prune(&[latest.as_str()]) {
        Ok(n) => {
            println!(
                "removed {n} checkpoint ref(s) under refs/mm/checkpoints (kept session {latest}); `git gc` frees their space"
            );
            0
        }
        Err(e) => {
            eprintln!("mm: {e}");
            1
        }
    }
}

/// The session's changes since its first checkpoint (empty when there
/// are none or git cannot say).
fn session_changes(
    root: &std::path::Path,
    id: &str,
    records: &[session::Record],
) -> Result<Vec<crate::protocol::FileChange>, String> {
    let Some(first) = session::checkpoints(records).into_iter().next() else {
        return Ok(Vec::new());
    };
    crate::git::Store::open(root, id)
        .and_then(|mut s| {
            let oid = crate::git::CheckpointId::parse(&first.id)?;
            s.diff_since(oid)
        })
        .map(|c| c.iter().map(crate::git::PlannedChange::forward).collect())
        .map_err(|e| e.to_string())
}

/// `-show ID -export PATH`: the session as Markdown, or JSONL with -json.
fn export(
    root: &std::path::Path,
    id: &str,
    records: &[session::Record],
    path: &str,
    json: bool,
) -> i32 {
    let changes = if json {
        Vec::new()
    } else {
        session_changes(root, id, records).unwrap_or_else(|e| {
            eprintln!("mm: the export has no diff: {e}");
            Vec::new()
        })
    };
    // A path on the command line is the shell's: relative to the current
    // directory, also with -cwd.
    let target =
        (path != "-").then(|| std::path::absolute(path).unwrap_or_else(|_| root.join(path)));
    let text = session::export::document(root, records, changes, target.as_deref(), json);
    let Some(target) = target else {
        // To a terminal (or a pipe read by one): nothing raw.
        print!("{}", crate::untrusted::displayable(&text));
        return 0;
    };
    match std::fs::write(&target, text) {
        Ok(()) => {
            eprintln!("mm: exported session {id} to {path}");
            0
        }
        Err(e) => {
            eprintln!("mm: cannot write {path}: {e}");
            1
        }
    }
}

/// `-show ID -diff`: the session's changes against its first checkpoint.
fn show_diff(root: &std::path::Path, id: &str, records: &[session::Record]) -> i32 {
    if session::checkpoints(records).is_empty() {
        eprintln!("mm: session {id} has no checkpoints");
        return 1;
    }
    match session_changes(root, id, records) {
        Ok(changes) => {
            if changes.is_empty() {
                println!("no changes since session {id} began");
            }
            crate::console::git_cmds::print_changes(&changes);
            0
        }
        Err(e) => {
            eprintln!("mm: {e}");
            1
        }
    }
}

fn workspace_root(cli: &Cli) -> Result<PathBuf, String> {
    match &cli.cwd {
        Some(dir) => std::fs::canonicalize(dir).map_err(|e| format!("-cwd {}: {e}", dir.display())),
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))
        }
    }
}

/// `--ask NAME -p PROMPT`: the named agent answers as a child `mm -acp`;
/// only its answer goes to stdout, its steps to stderr.
async fn ask_once(cli: &Cli, settings: &Settings, root: &std::path::Path, name: &str) -> i32 {
    let Some(sub) = settings.sub_agents.get(name) else {
        return 2;
    };
    let Some(prompt) = &cli.prompt else {
        return 2;
    };
    let root = match std::fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mm: cannot use {} as the workspace: {e}", root.display());
            return 2;
        }
    };
    let mut prompt = prompt.clone();
    if cli.ask_with_context.is_some() {
        let Some(which) = &cli.resume else {
            eprintln!(
                "mm: --ask-with-context {name} needs -resume last|ID: the conversation to send"
            );
            return 2;
        };
        match session::read_records(&root, which) {
            Ok((_, records)) => {
                let t = crate::tools::asking::transcript(&session::messages(&records));
                prompt = crate::tools::asking::with_context(&t, &prompt);
            }
            Err(e) => {
                eprintln!("mm: {e}");
                return 1;
            }
        }
    }
    let asker = crate::tools::asking::Asker {
        root,
        ceiling: settings.sandbox,
        net: !cli.no_net,
        unfenced: cli.unfenced,
        idle: settings.first_token_timeout + settings.watchdog,
        server_flags: server_flags(cli),
        budget: Some(Arc::new(RequestBudget::for_session(settings.max_requests))),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let shown = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            eprintln!("  │ {}", crate::untrusted::displayable(&line));
        }
    });
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c2.cancel();
        }
    });
    let result = crate::tools::asking::ask(sub, &prompt, &asker, Some(tx), &cancel).await;
    watcher.abort();
    let _ = shown.await;
    match result {
        Ok(a) => {
            eprintln!(
                "mm: {} answered (session {})",
                crate::untrusted::displayable(name),
                crate::untrusted::displayable(&a.session)
            );
            println!("{}", crate::untrusted::displayable(a.text.trim_end()));
            0
        }
        Err(e) => {
            eprintln!("mm: {}", crate::untrusted::displayable(&e));
            if cancel.is_cancelled() { 130 } else { 1 }
        }
    }
}

/// Stdin is a pipe or a file (not a terminal, not /dev/null or a socket).
fn stdin_is_piped() -> bool {
    use nix::sys::stat::SFlag;
    let Ok(st) = nix::sys::stat::fstat(std::io::stdin()) else {
        return false;
    };
    let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    kind == SFlag::S_IFIFO || kind == SFlag::S_IFREG
}

/// The most piped context read; the agent cuts it to fit the window.
const PIPED_MAX: u64 = 8 * 1024 * 1024;

/// What is piped to `mm -p PROMPT`, to its end (None when empty). A pipe
/// that stays open and silent is said after a few seconds, not waited on
/// in silence.
fn read_piped() -> Result<Option<String>, String> {
    use std::io::Read;
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        if !flag.load(Ordering::Relaxed) {
            eprintln!(
                "mm: waiting for stdin to end (what is piped goes with the prompt; </dev/null sends none)"
            );
        }
    });
    let mut bytes = Vec::new();
    let read = std::io::stdin().take(PIPED_MAX + 1).read_to_end(&mut bytes);
    done.store(true, Ordering::Relaxed);
    read.map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > PIPED_MAX {
        return Err(format!(
            "over {} MiB piped; send less (tail -c 1M FILE | mm -p …)",
            PIPED_MAX / (1024 * 1024)
        ));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok((!text.trim().is_empty()).then_some(text))
}

/// `-p -`: the prompt is all of stdin (at most 1 MiB of UTF-8, not empty).
fn read_stdin_prompt() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(1024 * 1024 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if bytes.len() > 1024 * 1024 {
        return Err("the prompt on stdin is over 1 MiB".into());
    }
    let text = String::from_utf8(bytes).map_err(|_| "stdin is not UTF-8 text".to_string())?;
    if text.trim().is_empty() {
        return Err("stdin held no prompt".into());
    }
    Ok(text.trim_end().to_string())
}

fn load_settings(cli: &Cli, project: Option<&config::ProjectConfig>) -> Result<Settings, i32> {
    let settings = config::load_with(cli.config.as_deref(), project, &cli.overrides())
        .map_err(|e| early_exit(cli, 2, &format!("config error: {e}")))?;
    // Every agent file this one can reach, as it is now: none may be run
    // later if it changed (a model could rewrite one to send a key away).
    crate::tools::asking::pin(&settings.sub_agents);
    let Some(name) = cli.ask.as_ref().or(cli.ask_with_context.as_ref()) else {
        return Ok(settings);
    };
    if cli.prompt.is_none() && !cli.show_prompt {
        eprintln!("mm: --ask {name} needs -p PROMPT");
        return Err(2);
    }
    let Some(sub) = settings.sub_agents.get(name) else {
        let known: Vec<&str> = settings.sub_agents.keys().map(String::as_str).collect();
        let declared = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        eprintln!(
            "mm: --ask {}: no agent of that name under mmConfigs (declared: {})",
            crate::untrusted::displayable(name),
            crate::untrusted::displayable(&declared)
        );
        return Err(2);
    };
    if !cli.show_prompt {
        return Ok(settings);
    }
    config::load(Some(&sub.path), &cli.overrides()).map_err(|e| {
        eprintln!(
            "mm: config error: {}",
            crate::untrusted::displayable(&e.to_string())
        );
        2
    })
}

/// `-show-prompt`: the system prompt (with -json: the whole first request)
/// on stdout, the first request's size on stderr.
fn show_prompt(
    settings: &Settings,
    root: &std::path::Path,
    unattended: bool,
    fenced: bool,
    json: bool,
    no_net: bool,
) {
    // What was cut or left out of the instructions, as a run says it.
    if settings.bash_tool || settings.edit_tools {
        for note in
            crate::instructions::for_prompt(root, crate::config::user_config_dir().as_deref()).notes
        {
            eprintln!("mm: {}", crate::untrusted::displayable(&note));
        }
    }
    let skills = crate::skills::for_session(settings, root).0;
    let system = prompt::system_prompt(
        settings,
        &prompt::PromptEnv {
            root,
            unattended,
            fenced,
            skills: &skills,
        },
    );
    // The tools a session offers, in the order it offers them.
    let mut specs = tools::specs(ToolSet {
        bash: settings.bash_tool,
        edit: settings.edit_tools,
        write: settings.sandbox != crate::config::SandboxMode::ReadOnly,
        lsp: settings
            .lsp
            .iter()
            .any(|s| s.enabled && crate::lsp::find_program(&s.command).is_some()),
    });
    if !settings.sub_agents.is_empty() {
        specs.push(tools::ask::spec(&settings.sub_agents));
    }
    if !skills.is_empty() {
        specs.push(crate::skills::spec());
    }
    if settings.bash_tool || settings.edit_tools {
        let taken: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
        match tools::custom::load(root, &taken) {
            Ok(custom) => specs.extend(custom.iter().map(tools::custom::CommandTool::spec)),
            Err(e) => eprintln!("mm: {}", crate::untrusted::displayable(&e)),
        }
    }
    if settings.fetch_content && !no_net && (settings.edit_tools || settings.bash_tool) {
        specs.push(tools::fetch::spec());
    }
    let mcp: Vec<&str> = settings.mcp_servers.keys().map(String::as_str).collect();
    let messages = [Message::system(system.clone()), Message::user("")];
    let rf = settings.structured.as_ref().map(|s| {
        serde_json::json!({
            "type": "json_schema",
            "json_schema": {"name": s.name, "strict": true, "schema": s.schema},
        })
    });
    let body = llm::build_body(&ChatRequest {
        model: settings.model.as_deref().unwrap_or(""),
        messages: &messages,
        tools: &specs,
        sampling: &settings.sampling,
        max_tokens: settings.max_tokens,
        replay_reasoning: false,
        response_format: rf.as_ref(),
    });
    let size = serde_json::to_vec(&body).map(|b| b.len()).unwrap_or(0);
    if json {
        println!("{}", crate::untrusted::json_line(&body));
    } else {
        println!("{}", crate::untrusted::displayable(&system));
        if let Some(s) = &settings.structured {
            // What the server constrains every answer to.
            println!(
                "\n[response_format: the JSON Schema of every answer, named {}]\n{}",
                s.name,
                serde_json::to_string_pretty(&s.schema).unwrap_or_default()
            );
        }
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
    eprintln!(
        "mm: first request {size} bytes (system prompt {} bytes, {} tools: {})",
        system.len(),
        specs.len(),
        names.join(", ")
    );
    if !mcp.is_empty() && (settings.bash_tool || settings.edit_tools) {
        eprintln!(
            "mm: and the tools of the MCP servers {}, which a session starts (not counted here)",
            crate::untrusted::displayable(&mcp.join(", "))
        );
    }
}

/// `mm doctor`: every check, one table, exit 1 when one failed.
async fn doctor(cli: &Cli) -> i32 {
    use crate::doctor::{Row, Verdict};
    let mut rows: Vec<Row> = Vec::new();
    let user = config::user_config_dir().map(|d| d.join("config.yaml"));
    let project = match workspace_root(cli).map(|r| project_config(&r, cli)) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) | Err(e) => {
            rows.push(Row {
                check: "config",
                verdict: Verdict::Fail,
                detail: e,
                fix: Some("correct the file at the place named".into()),
            });
            print!("{}", crate::doctor::render(&rows));
            return 1;
        }
    };
    let mut settings = match config::load_with(None, project.as_ref(), &cli.overrides()) {
        Ok(s) => {
            rows.push(Row {
                check: "config",
                verdict: Verdict::Ok,
                detail: {
                    let mut files: Vec<String> = Vec::new();
                    if let Some(p) = user.as_ref().filter(|p| p.is_file()) {
                        files.push(p.display().to_string());
                    }
                    if let Some(p) = &project {
                        files.push(format!(
                            "{}{}",
                            p.path.display(),
                            if p.trusted || p.file.trusted_only_keys().is_empty() {
                                String::new()
                            } else {
                                format!(
                                    " (not trusted: {} left out; mm -trust)",
                                    p.file.trusted_only_keys().join(", ")
                                )
                            }
                        ));
                    }
                    if files.is_empty() {
                        "the defaults (no ~/.config/mm/config.yaml, no .mm/config.yaml)".into()
                    } else {
                        files.join(", then ")
                    }
                },
                fix: None,
            });
            s
        }
        Err(e) => {
            rows.push(Row {
                check: "config",
                verdict: Verdict::Fail,
                detail: e.to_string(),
                fix: Some("correct the file at the place named".into()),
            });
            print!("{}", crate::doctor::render(&rows));
            return 1;
        }
    };
    let fence = async {
        if cli.unfenced {
            Fence::Off("-unfenced".into())
        } else {
            Fence::detect().await
        }
    };
    let (fence, connected) = tokio::join!(fence, startup::connect(&mut settings));
    match &connected {
        Ok(c) => rows.extend(crate::doctor::server_rows(&settings, c).await),
        Err(e) => {
            // The first line: the fix says the rest.
            let said = e.to_string();
            rows.push(Row {
                check: "server",
                verdict: Verdict::Fail,
                detail: said.lines().next().unwrap_or_default().to_string(),
                fix: Some(crate::doctor::NO_SERVER_FIX.into()),
            });
            for check in [
                "model",
                "context window",
                "streamed reply",
                "tool call",
                "response_format",
                "prompt cache",
            ] {
                rows.push(Row {
                    check,
                    verdict: Verdict::Skip,
                    detail: "not checked: no server".into(),
                    fix: None,
                });
            }
        }
    }
    let root = workspace_root(cli).unwrap_or_else(|_| PathBuf::from("."));
    rows.extend(crate::doctor::local_rows(&settings, &fence, &root));
    print!("{}", crate::doctor::render(&rows));
    crate::doctor::code(&rows)
}

const TRUSTED: &str = "trusted-configs.tsv";

/// The file where trusted project configs and command tools are written
/// down (`path<TAB>blob`).
fn trusted_registry() -> Option<PathBuf> {
    config::data_dir().map(|d| d.join(TRUSTED))
}

/// Whether the user trusted the file whose `path<TAB>blob` line this is.
fn is_trusted(line: &str) -> bool {
    trusted_registry()
        .and_then(|r| std::fs::read_to_string(r).ok())
        .is_some_and(|t| t.lines().any(|l| l == line))
}

fn remember_trusted(line: &str) {
    if let Err(e) = config::append_data_line(TRUSTED, line) {
        eprintln!("mm: could not remember the trust: {e}");
    }
}

/// The workspace's `.mm/config.yaml`, if any: read only when it is a
/// regular file inside the workspace, and trusted when the user said so
/// for its contents as they are (`-trust`, or a yes when mm asks; a
/// change to the file asks again). Untrusted, its keys that run code or
/// send the work elsewhere are left out, and that is said.
fn project_config(
    root: &std::path::Path,
    cli: &Cli,
) -> Result<Option<config::ProjectConfig>, String> {
    // The nearest one from the working folder up to the repository's root,
    // so a subfolder of the project keeps its config.
    let top = root
        .ancestors()
        .find(|p| p.join(".git").exists())
        .unwrap_or(root);
    let Some((up, dir)) = root
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .enumerate()
        .find(|(_, d)| std::fs::symlink_metadata(d.join(".mm").join("config.yaml")).is_ok())
    else {
        return Ok(None);
    };
    let path = dir.join(".mm").join("config.yaml");
    let shown = format!("{}.mm/config.yaml", "../".repeat(up));
    let shown = shown.as_str();
    if !crate::paths::resolves_inside(&path, dir) {
        return Err(format!(
            "{shown}: links outside the workspace; mm does not read it"
        ));
    }
    let text = crate::paths::read_small_text(&path).map_err(|e| format!("{shown}: {e}"))?;
    let file = config::AgentFile::parse(&path, &text).map_err(|e| e.to_string())?;
    let keys = file.trusted_only_keys();
    let line = format!(
        "{}\t{}",
        path.display(),
        crate::git::blob_id(text.as_bytes())
    );
    let mut trusted = keys.is_empty() || is_trusted(&line);
    let interactive = cli.prompt.is_none()
        && !cli.acp
        && !cli.show_config
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    if !trusted && (cli.trust || interactive && ask_trust(shown, &keys)) {
        remember_trusted(&line);
        trusted = true;
        eprintln!(
            "mm: {shown} is trusted as it is now ({}); a change to it asks again",
            keys.join(", ")
        );
    } else if !trusted {
        eprintln!(
            "mm: {shown} sets {}: left out until you trust the file (mm -trust; they can run commands or send your code elsewhere)",
            crate::untrusted::displayable(&keys.join(", "))
        );
    }
    Ok(Some(config::ProjectConfig {
        path,
        file,
        trusted,
    }))
}

/// Asks on the terminal whether to trust the project config.
fn ask_trust(shown: &str, keys: &[&str]) -> bool {
    use std::io::Write;
    eprint!(
        "mm: this repository's {shown} sets {}: keys that can run commands, send your code to another server or widen what mm may do. Trust it? [y/N] ",
        keys.join(", ")
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes")
}

/// `-show-config`: each layer, then each key set anywhere with its value
/// and the layer it comes from; the flags last.
fn show_config(cli: &Cli, project: Option<&config::ProjectConfig>) -> i32 {
    let mut layers: Vec<(String, String, Vec<&str>)> = Vec::new();
    // The Go agent's config, its keys as it names them.
    if let Some(p) = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| std::path::PathBuf::from(h).join(".agent/config.json"))
        .filter(|p| p.is_file())
        && let Ok(t) = crate::paths::read_small_text(&p)
    {
        layers.push((p.display().to_string(), t, Vec::new()));
    }
    if let Some(p) = config::user_config_dir().map(|d| d.join("config.yaml"))
        && p.is_file()
    {
        match std::fs::read_to_string(&p) {
            Ok(t) => layers.push((p.display().to_string(), t, Vec::new())),
            Err(e) => {
                eprintln!("mm: {}: {e}", p.display());
                return 2;
            }
        }
    }
    if let Some(p) = project {
        let text = crate::paths::read_small_text(&p.path).unwrap_or_default();
        let left_out = if p.trusted {
            Vec::new()
        } else {
            p.file.trusted_only_keys()
        };
        layers.push((p.path.display().to_string(), text, left_out));
    }
    if let Some(a) = &cli.config {
        match std::fs::read_to_string(a) {
            Ok(t) => layers.push((a.display().to_string(), t, Vec::new())),
            Err(e) => {
                eprintln!("mm: {}: {e}", a.display());
                return 2;
            }
        }
    }
    let settings = match load_settings(cli, project) {
        Ok(s) => s,
        Err(code) => return code,
    };
    for note in &settings.notes {
        eprintln!("mm: {}", crate::untrusted::displayable(note));
    }
    let mut out = String::from("layers, lowest first:\n  defaults\n");
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for (name, text, left_out) in &layers {
        out.push_str(&format!("  {name}"));
        if !left_out.is_empty() {
            out.push_str(&format!(
                " (not trusted: {} left out; mm -trust)",
                left_out.join(", ")
            ));
        }
        out.push('\n');
        let map: serde_json::Map<String, serde_json::Value> =
            serde_saphyr::from_str(text).unwrap_or_default();
        for (k, v) in map {
            let from = if left_out.contains(&k.as_str()) {
                format!("{name} (left out: not trusted)")
            } else {
                name.clone()
            };
            let shown = crate::untrusted::json_line(&v);
            match keys.iter_mut().find(|(key, _, _)| *key == k) {
                Some(e) if !left_out.contains(&k.as_str()) => *e = (k, shown, from),
                Some(_) => {}
                None => keys.push((k, shown, from)),
            }
        }
    }
    // The agent file is a layer above, not a flag.
    let agent_file = cli.config.as_ref().map(|p| p.display().to_string());
    let flags: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "-show-config" && a != "--show-config")
        .filter(|a| Some(a) != agent_file.as_ref())
        .collect();
    // The keys a flag set, and which flag.
    let o = cli.overrides();
    let by_flag: Vec<(&str, String)> = [
        (
            "provider",
            o.provider.as_ref().map(|v| format!("-provider {v}")),
        ),
        ("model", o.model.as_ref().map(|v| format!("-model {v}"))),
        ("baseUrl", o.url.as_ref().map(|v| format!("-url {v}"))),
        (
            "sandbox",
            o.sandbox.map(|v| format!("-sandbox {}", v.as_str())),
        ),
        ("yolo", o.yolo.then(|| "-yolo".to_string())),
        ("maxTurns", o.max_rounds.map(|v| format!("-max-rounds {v}"))),
        (
            "maxRequests",
            o.max_requests.map(|v| format!("-max-requests {v}")),
        ),
        (
            "contextMode",
            o.context_mode.map(|v| format!("-ctx {}", v.as_str())),
        ),
        (
            "maxTokens",
            o.max_tokens.map(|v| format!("-max-tokens {v}")),
        ),
        (
            "contextWindow",
            o.context_window.map(|v| format!("-context {v}")),
        ),
        ("sampling", o.think.as_ref().map(|v| format!("-think {v}"))),
    ]
    .into_iter()
    .filter_map(|(k, f)| f.map(|f| (k, f)))
    .collect();
    let flag_of = |key: &str| {
        by_flag
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, f)| format!("  (flag {f})"))
            .unwrap_or_default()
    };
    out.push_str(&format!(
        "  flags{}\n\nresolved:\n",
        if flags.is_empty() {
            " (none)".to_string()
        } else {
            format!(": {}", flags.join(" "))
        }
    ));
    out.push_str(&format!(
        "  provider      {}{}\n",
        settings.provider,
        flag_of("provider")
    ));
    out.push_str(&format!(
        "  baseUrl       {}{}{}\n",
        settings.base_url,
        if settings.auto_detect {
            " (looked for: llama-server, then Ollama)"
        } else {
            ""
        },
        flag_of("baseUrl")
    ));
    out.push_str(&format!(
        "  model         {}{}\n",
        settings
            .model
            .as_deref()
            .unwrap_or("what the server has loaded"),
        flag_of("model")
    ));
    out.push_str(&format!(
        "  sandbox       {}{}{}\n",
        settings.sandbox.as_str(),
        if settings.yolo { ", yolo" } else { "" },
        flag_of("sandbox") + &flag_of("yolo")
    ));
    out.push_str(&format!(
        "  maxTurns      {}{}\n",
        settings.max_rounds,
        flag_of("maxTurns")
    ));
    if let Some(n) = settings.max_requests {
        out.push_str(&format!("  maxRequests   {n}{}\n", flag_of("maxRequests")));
    }
    out.push_str(&format!(
        "  contextMode   {}{}\n",
        settings.context_mode.as_str(),
        flag_of("contextMode")
    ));
    if let Some(n) = settings.max_tokens {
        out.push_str(&format!("  maxTokens     {n}{}\n", flag_of("maxTokens")));
    }
    if let Some(n) = settings.context_window {
        out.push_str(&format!(
            "  contextWindow {n}{}\n",
            flag_of("contextWindow")
        ));
    }
    if !settings.sampling.is_empty() {
        out.push_str(&format!(
            "  sampling      {}{}\n",
            crate::untrusted::json_line(&serde_json::Value::Object(settings.sampling.clone())),
            flag_of("sampling")
        ));
    }
    out.push_str(&format!(
        "  harness       {}{}\n",
        if settings.harness { "on" } else { "off" },
        if cli.no_harness {
            "  (flag -no-harness)"
        } else {
            ""
        }
    ));
    out.push_str("\nkeys set in the files (the highest layer wins; a flag over them all):\n");
    keys.sort();
    for (k, v, from) in keys {
        let over = match by_flag.iter().find(|(key, _)| *key == k) {
            Some((_, f)) => format!(" (flag {f} wins)"),
            None => String::new(),
        };
        out.push_str(&format!("  {k}: {v}    # {from}{over}\n"));
    }
    print!("{}", crate::untrusted::displayable(&out));
    0
}
