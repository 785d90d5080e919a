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

mod project;
use project::*;

mod stdin;
use stdin::*;

mod subcommands;
use subcommands::*;

mod opening;
pub use opening::*;

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
    if let Some(code) = standalone(&cli).await {
        return code;
    }
    let root = match workspace_root(&cli) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mm: {e}");
            return 2;
        }
    };
    debug_log(&root);
    if let Some(code) = about_sessions(&cli, &root) {
        return code;
    }
    if let Some(cases) = &cli.eval {
        return crate::eval::run(&cli, cases).await;
    }
    let mut cli = cli;
    let mut piped = match prompt_input(&mut cli) {
        Ok(p) => p,
        Err(code) => return code,
    };
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
    say_settings_notes(&settings);
    let unattended = cli.prompt.is_some();
    if cli.show_prompt {
        return show_first_request(&cli, &settings, &root, unattended).await;
    }
    let tui_looks = match tui_looks(&cli, &settings, &root) {
        Ok(l) => l,
        Err(code) => return code,
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
    let opened = match open_session(&rt, &root, cli.resume.as_deref(), unattended).await {
        Ok(o) => o,
        // It may name files and keys of the workspace's own files:
        // shown as text, never raw.
        Err((code, msg)) => return early_exit(&cli, code, &msg),
    };
    drive(&cli, opened, piped, tui_looks).await
}

/// The prompt's flags checked, `-p -` read from stdin, and what is piped
/// with a prompt (a pipe or a file on stdin, never a terminal). Err: the
/// exit code of a misuse, said.
fn prompt_input(cli: &mut Cli) -> Result<Option<String>, i32> {
    if cli.json && cli.prompt.is_none() && !cli.show_prompt {
        eprintln!("mm: -json needs -p PROMPT");
        return Err(2);
    }
    for (set, flag) in [(cli.json_stream, "-json-stream"), (cli.quiet, "-quiet")] {
        if set && cli.prompt.is_none() {
            eprintln!("mm: {flag} needs -p PROMPT");
            return Err(2);
        }
    }
    // `cat log | mm -p "why does it fail"`: what is piped goes with the
    // prompt as context (a pipe or a file on stdin, never a terminal).
    let mut piped = None;
    if cli.prompt.as_deref() == Some("-") {
        cli.prompt_from_stdin = true;
        match read_stdin_prompt() {
            Ok(p) => cli.prompt = Some(p),
            Err(e) => {
                eprintln!("mm: -p -: {e}");
                return Err(2);
            }
        }
    } else if cli.prompt.is_some() && stdin_is_piped() {
        match read_piped() {
            Ok(text) => piped = text,
            Err(e) => {
                eprintln!("mm: stdin: {e}");
                return Err(2);
            }
        }
    }
    Ok(piped)
}

/// What loading the settings has to say before the session: plain http
/// to another machine, notes on the files read, keys of the Go mm's
/// accepted but not acted on.
fn say_settings_notes(settings: &Settings) {
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
}

/// The TUI's theme and keys, when the session runs in the TUI. Err: the
/// exit code of a config error, said.
fn tui_looks(
    cli: &Cli,
    settings: &Settings,
    root: &Path,
) -> Result<Option<(tui::theme::Theme, tui::keymap::Keymap)>, i32> {
    let tui = cli.tui || (settings.ui == config::file::Ui::Tui && !cli.repl && !cli.acp);
    if tui && cli.prompt.is_none() {
        match load_looks(settings, root) {
            Ok(l) => Ok(Some(l)),
            Err(e) => {
                eprintln!(
                    "mm: config error: {}",
                    crate::untrusted::displayable(&e.to_string())
                );
                Err(2)
            }
        }
    } else {
        Ok(None)
    }
}

/// `-show-prompt`: the first request as it would go, in this workspace.
async fn show_first_request(cli: &Cli, settings: &Settings, root: &Path, unattended: bool) -> i32 {
    let root = match std::fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mm: cannot use {} as the workspace: {e}", root.display());
            return 2;
        }
    };
    let fenced = !cli.unfenced && Fence::detect().await.is_on();
    show_prompt(settings, &root, unattended, fenced, cli.json, cli.no_net);
    0
}

/// What runs without a workspace: shell completions, `mm doctor` (or a
/// word close to it), the man page. None: none of them was asked for.
async fn standalone(cli: &Cli) -> Option<i32> {
    if let Some(shell) = &cli.completions {
        return Some(
            match crate::cli::completions(shell, &mut std::io::stdout()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("mm: {e}");
                    2
                }
            },
        );
    }
    if cli
        .config
        .as_deref()
        .is_some_and(|c| c == std::path::Path::new("doctor") && !c.exists())
    {
        return Some(doctor(cli).await);
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
        return Some(2);
    }
    if cli.man {
        return Some(match crate::cli::man_page(&mut std::io::stdout()) {
            Ok(()) => 0,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
            Err(e) => {
                eprintln!("mm: {e}");
                1
            }
        });
    }
    None
}

/// What reads the workspace's sessions and ends: `-sessions`, `-prune`,
/// `-show` (with `-export` or `-diff`). None: none of them was asked for.
fn about_sessions(cli: &Cli, root: &Path) -> Option<i32> {
    if cli.sessions {
        repl::print_sessions(root);
        return Some(0);
    }
    if cli.prune {
        return Some(prune(root));
    }
    if let Some(which) = &cli.show {
        return Some(match session::read_records(root, which) {
            Ok((id, records)) if cli.export.is_some() => export(
                root,
                &id,
                &records,
                cli.export.as_deref().unwrap_or("-"),
                cli.json,
            ),
            Ok((id, records)) if cli.diff => show_diff(root, &id, &records),
            Ok((_, records)) => {
                show::replay(&records);
                0
            }
            Err(e) => {
                eprintln!("mm: {e}");
                1
            }
        });
    }
    None
}

/// The session opened: run headless (`-p`), in the TUI or in the REPL,
/// until it ends; the language servers stop after it. Returns the exit
/// code.
async fn drive(
    cli: &Cli,
    opened: Opened,
    piped: Option<String>,
    tui_looks: Option<(tui::theme::Theme, tui::keymap::Keymap)>,
) -> i32 {
    let Opened {
        ops,
        events,
        handle,
        info,
        lsp,
        replay,
        root,
        ..
    } = opened;
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
        let code = headless::run(
            ops,
            events,
            headless::Ask {
                prompt,
                commands: &info.commands,
                plan: cli.plan,
                typed: !cli.prompt_from_stdin,
            },
            output,
        )
        .await;
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
        tools: crate::roles::tool_ceiling(settings.role.as_ref()),
        net: !cli.no_net,
        unfenced: cli.unfenced,
        idle: settings.first_token_timeout + settings.watchdog,
        server_flags: server_flags(cli),
        budget: Some(Arc::new(RequestBudget::for_session(settings.max_requests))),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::tools::asking::ChildNote>();
    let shown = tokio::spawn(async move {
        while let Some(note) = rx.recv().await {
            if let crate::tools::asking::ChildNote::Step(line) = note {
                eprintln!("  │ {}", crate::untrusted::displayable(&line));
            }
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

fn load_settings(cli: &Cli, project: Option<&config::ProjectConfig>) -> Result<Settings, i32> {
    let mut settings = config::load_with(cli.config.as_deref(), project, &cli.overrides())
        .map_err(|e| early_exit(cli, 2, &format!("config error: {e}")))?;
    if let Some(name) = &cli.role {
        let root = workspace_root(cli).unwrap_or_default();
        let role = crate::roles::find(&root, name)
            .map_err(|e| early_exit(cli, 2, &format!("-role: {e}")))?;
        crate::roles::apply(&mut settings, role);
    }
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
        lsp: {
            let languages: Vec<&str> = (settings.lsp.iter())
                .filter(|s| s.enabled && crate::lsp::find_program(&s.command).is_some())
                .flat_map(|s| s.languages.iter().map(String::as_str))
                .collect();
            crate::lsp::serves_workspace(root, &languages)
        },
    });
    if !settings.sub_agents.is_empty() {
        specs.push(tools::ask::spec(&settings.sub_agents));
    }
    let roles = crate::roles::for_session(root).0;
    if tools::task::offered(settings, &roles) {
        specs.push(tools::task::spec(&roles));
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
    crate::roles::keep_tools(&mut specs, settings.role.as_ref());
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
    let body = llm::native_body(settings.api, &body);
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
