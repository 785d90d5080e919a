//! Opening a session, shared by every front end (the TUI, the REPL,
//! headless and ACP): the settings, the fence, the tools, the checkpoints,
//! the session log and the agent.

use super::*;

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
pub(super) fn server_flags(cli: &Cli) -> Vec<String> {
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
        tools: crate::roles::tool_ceiling(rt.settings.role.as_ref()),
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
pub(super) fn load_command_tools(root: &Path) -> Result<Vec<tools::custom::CommandTool>, String> {
    let built_in = built_in_tool_names();
    let taken: Vec<&str> = built_in.iter().map(String::as_str).collect();
    tools::custom::load(root, &taken)
}

/// Every tool name mm itself can offer.
pub(super) fn built_in_tool_names() -> Vec<String> {
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
            ToolName::Task,
            ToolName::ReadSkill,
            ToolName::FetchContent,
        ]
        .map(|t| t.as_str().to_string()),
    )
    .collect()
}

/// What a resume says at start: a repaired log, and the "always"
/// answers its log holds (only those given through this user's mm, in
/// this folder, hold again).
fn say_resumed(
    log: &SessionLog,
    records: &[session::Record],
    repair: &session::Repair,
    root: &std::path::Path,
    sandbox: &Sandbox,
) {
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
    let logged = session::always_keys(records)
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let always = session::held_always_keys(records, root);
    let started_here = session::started_in(records, root);
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
                .map(
                    |k| crate::untrusted::displayable(&crate::sandbox::always::words(k))
                        .into_owned()
                )
                .collect::<Vec<_>>()
                .join(", ")
        );
        sandbox.restore(&always);
    }
}

/// The model of a resumed session: a `/model` switch holds, unless this
/// command line names a model itself.
fn resumed_model(rt: &Runtime, log: &SessionLog, replay: &[session::Record]) -> String {
    let mut model = rt.connected.model.clone();
    if let Some(switched) = session::switched_model(replay)
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
    model
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
        Some(which) => match SessionLog::resume(&root, which) {
            Ok((log, records, repair)) => {
                say_resumed(&log, &records, &repair, &root, &sandbox);
                replay = records.clone();
                (log, session::messages(&records))
            }
            Err(e) => return Err((1, e.to_string())),
        },
        None => match SessionLog::create(&root, &settings.provider, &rt.connected.model) {
            Ok(log) => (log, Vec::new()),
            Err(e) => return Err((1, e.to_string())),
        },
    };
    let model = resumed_model(rt, &log, &replay);
    let settings = rt.settings.clone();
    let bus = EventBus::new();
    // The session's request budget: its sub-agents' requests count too.
    let budget = Arc::new(RequestBudget::for_session(settings.max_requests));
    let tool_env = session_tools(rt, &root, sandbox, &bus, &budget, unattended).await?;
    let broker = tool_env.broker.clone();
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
        made_from: session::made_from(&replay),
        bytes_per_token: session::bytes_per_token(&replay),
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
pub(super) fn fence_required(cli: &Cli, settings: &Settings, fence: &Fence) -> Result<(), String> {
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

pub(super) fn load_looks(
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
pub(super) fn open_checkpoints(
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

/// "readOnly" lets a command tool run unasked (in the fence): a tool
/// that came with a clone gets that only once the user trusts it (`-trust`
/// trusts it as it is now); until then it asks like any command.
fn trust_read_only(rt: &Runtime, root: &Path, tools: &mut [crate::tools::custom::CommandTool]) {
    for tool in tools.iter_mut().filter(|t| t.manifest.read_only) {
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
            .strip_prefix(root)
            .unwrap_or(&tool.file)
            .display()
            .to_string();
        if rt.trust {
            remember_trusted(&line);
            eprintln!("mm: {shown} (readOnly) is trusted as it is now; a change to it asks again");
        } else {
            tool.manifest.read_only = false;
            eprintln!(
                "mm: {}: readOnly is left out until you trust the file (mm -trust): it asks like any command",
                crate::untrusted::displayable(&shown)
            );
        }
    }
}

/// The session's tools: the broker that asks for it, language servers,
/// skills, command tools, MCP servers, and the agents it may ask or hand
/// a sub-task; `budget` is charged for their requests too.
async fn session_tools(
    rt: &Runtime,
    root: &Path,
    sandbox: Arc<Sandbox>,
    bus: &EventBus,
    budget: &Arc<RequestBudget>,
    unattended: bool,
) -> Result<ToolEnv, (i32, String)> {
    let settings = &rt.settings;
    let root = root.to_path_buf();
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
    let (skills, skill_warnings) = crate::skills::for_session(settings, &root);
    tool_env.skills = skills;
    if settings.bash_tool || settings.edit_tools {
        tool_env.command_tools = load_command_tools(&root).map_err(|e| (2, e))?;
        trust_read_only(rt, &root, &mut tool_env.command_tools);
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
    if !settings.sub_agents.is_empty() {
        let mut asker = asker(rt, &root);
        asker.budget = Some(budget.clone());
        tool_env.ask = Some(tools::ask::AskEnv {
            agents: settings.sub_agents.clone(),
            asker,
            bus: bus.clone(),
        });
    }
    // `task`: on with `taskTool: true` or when there are roles, below the
    // depth limit of agents asking agents.
    let (roles, role_warnings) = crate::roles::for_session(&root);
    if tools::task::offered(settings, &roles) {
        let mut asker = asker(rt, &root);
        asker.budget = Some(budget.clone());
        tool_env.task = Some(tools::task::TaskEnv {
            roles,
            asker,
            bus: bus.clone(),
            agent_file: settings.agent_file.clone(),
            ask_edits: settings.approve_edits && !unattended,
            broker: tool_env.broker.clone(),
            answered: Default::default(),
        });
    }
    if let Ok(mut notes) = tool_env.start_notes.lock() {
        notes.extend(role_warnings);
    }
    Ok(tool_env)
}
