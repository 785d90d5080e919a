//! `mm -acp`: mm as an Agent Client Protocol agent on stdin/stdout, for
//! editors (Zed, and any ACP client) and for an asking `mm` (`ask_agent`).
//!
//! Each ACP session is an mm session driven through the same service as
//! the other front ends: a prompt is an `Op::UserMessage`, the agent's
//! events become `session/update` notifications, its approval questions
//! become `session/request_permission` requests, and `session/cancel` is
//! `Op::Cancel`. Sessions are mm's own: `session/load` takes one up again
//! and streams its history back.

mod permission;
mod prompt;
mod updates;

use permission::{decision_of, permission_request, put_plan};
use prompt::{prompt_images, prompt_text};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ContentBlock, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    UnstructuredCommandInput,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{ByteStreams, Client};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::bus::OpSender;
use crate::launch::{Opened, Runtime, open_session};
use crate::protocol::{
    AgentEvent, ApprovalDecision, ApprovalKind, ApprovalRequest, Op, OpId, OpResult, Outcome,
};
use crate::slash::{Face, Slash};

/// One mm session an ACP client opened.
struct Live {
    ops: OpSender,
    /// The prompt waiting for its turn to end.
    pending: Mutex<Option<Pending>>,
    handle: Mutex<Option<tokio::task::JoinHandle<()>>>,
    lsp: Option<Arc<crate::lsp::Lsp>>,
    /// The agents under `mmConfigs`, which `/ask-NAME` asks.
    agents: Vec<(String, String)>,
    /// Custom slash commands (name, description).
    commands: Vec<(String, String)>,
    /// The session's workspace (canonical).
    root: PathBuf,
    /// The client chose plan mode: a prompt is a plan-mode turn.
    planning: std::sync::atomic::AtomicBool,
}

/// A prompt waiting for its op to finish.
struct Pending {
    op: OpId,
    responder: Responder<PromptResponse>,
    /// A built-in command (`/stats`): the notices it answers with are
    /// the reply the editor shows.
    command: bool,
    /// A plan-mode turn: the plan it proposes is put to the user.
    plan: bool,
}

/// The session modes offered: mm's default, and plan mode.
const PLAN_MODE: &str = "plan";
const DEFAULT_MODE: &str = "default";

fn modes(planning: bool) -> SessionModeState {
    SessionModeState::new(
        if planning { PLAN_MODE } else { DEFAULT_MODE },
        vec![
            SessionMode::new(DEFAULT_MODE, "Default")
                .description("read-only commands run at once; the rest asks".to_string()),
            SessionMode::new(PLAN_MODE, "Plan")
                .description("look (read-only) and propose numbered steps to approve".to_string()),
        ],
    )
}

struct State {
    rt: Runtime,
    /// The process's directory: the workspace when a client sends none.
    root: PathBuf,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// The client reads files for us (`fs/read_text_file`): its unsaved
    /// changes are seen.
    client_reads: std::sync::atomic::AtomicBool,
}

type Shared = Arc<State>;

/// Serves ACP on stdin/stdout until the client closes it; the exit code.
pub async fn serve(rt: Runtime, root: PathBuf) -> i32 {
    let st: Shared = Arc::new(State {
        rt,
        root,
        sessions: Mutex::new(HashMap::new()),
        client_reads: std::sync::atomic::AtomicBool::new(false),
    });
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    let result = agent(st.clone()).connect_to(transport).await;
    // The client is gone: every session ends, and what it started.
    let lives: Vec<Arc<Live>> = st
        .sessions
        .lock()
        .map(|mut s| s.drain().map(|(_, l)| l).collect())
        .unwrap_or_default();
    for live in lives {
        close(&live).await;
    }
    crate::sandbox::procs::kill_all();
    match result {
        Ok(()) => 0,
        Err(e) if agent_client_protocol::is_incoming_transport_closed(&e) => 0,
        Err(e) => {
            eprintln!("mm: acp: {e}");
            1
        }
    }
}

async fn close(live: &Live) {
    live.ops.send(Op::Cancel);
    live.ops.send(Op::Shutdown);
    let handle = live.handle.lock().ok().and_then(|mut h| h.take());
    if let Some(h) = handle {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), h).await;
    }
    if let Some(l) = &live.lsp {
        l.shutdown().await;
    }
}

fn agent(
    st: Shared,
) -> agent_client_protocol::v1::Builder<
    agent_client_protocol::Agent,
    impl agent_client_protocol::HandleDispatchFrom<Client> + 'static,
> {
    let (s1, s2, s3, s4, s5) = (st.clone(), st.clone(), st.clone(), st.clone(), st.clone());
    let s6 = st;
    agent_client_protocol::Agent
        .v1()
        .name("mm")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                initialize(&s1, &req, responder).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let root = workspace(&s2, &req.cwd);
                match start(&s2, &root, None, &cx).await {
                    Ok((id, live)) => {
                        responder
                            .respond(NewSessionResponse::new(id.clone()).modes(modes(false)))?;
                        offer_commands(&cx, &id, &live);
                        Ok(())
                    }
                    Err(msg) => responder.respond_with_error(
                        agent_client_protocol::Error::internal_error().data(msg),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                load_session(&s3, req, responder, cx).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<PromptResponse>, _cx| {
                let id = req.session_id.0.to_string();
                let Some(live) = s4.sessions.lock().ok().and_then(|s| s.get(&id).cloned()) else {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(format!("no session {id}")),
                    );
                };
                let text = prompt_text(&req.prompt, &live.root);
                // An agent's question is never taken as a command.
                let asked = req
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("mm"))
                    .is_some_and(|m| m["asked"] == true);
                let images = prompt_images(&req.prompt, !asked);
                let Ok(mut pending) = live.pending.lock() else {
                    return responder
                        .respond_with_error(agent_client_protocol::Error::internal_error());
                };
                if pending.is_some() {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_request()
                            .data("a prompt is already running in this session"),
                    );
                }
                let (op, command) = match prompt_op(text, images, asked, &live) {
                    Ok(chosen) => chosen,
                    Err(why) => {
                        return responder.respond_with_error(
                            agent_client_protocol::Error::invalid_params().data(why),
                        );
                    }
                };
                let plan = matches!(op, Op::Plan { .. });
                // `/plan` is a turn, not a command that answers in notices.
                let command = command && !plan;
                match live.ops.submit(op) {
                    Some(op) => {
                        *pending = Some(Pending {
                            op,
                            responder,
                            command,
                            plan,
                        });
                        Ok(())
                    }
                    None => responder.respond_with_error(
                        agent_client_protocol::Error::internal_error()
                            .data("the session's agent has stopped"),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                let id = n.session_id.0.to_string();
                if let Some(live) = s5.sessions.lock().ok().and_then(|s| s.get(&id).cloned()) {
                    live.ops.send(Op::Cancel);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx| { set_mode(&s6, &req, responder) },
            agent_client_protocol::on_receive_request!(),
        )
}

/// `initialize`: what the client can read for us, and what mm offers
/// (images unless the server says the model cannot take them).
async fn initialize(
    st: &Shared,
    req: &InitializeRequest,
    responder: Responder<InitializeResponse>,
) -> Result<(), agent_client_protocol::Error> {
    st.client_reads.store(
        req.client_capabilities.fs.read_text_file,
        std::sync::atomic::Ordering::SeqCst,
    );
    // Images are offered unless the server says the model
    // cannot take them.
    let c = &st.rt.connected;
    let images = c.client.vision(&c.model).await != Some(false);
    responder.respond(init_response(&st.rt.settings, req, images))
}

/// `session/set_mode`: plan mode on or off.
fn set_mode(
    st: &Shared,
    req: &SetSessionModeRequest,
    responder: Responder<SetSessionModeResponse>,
) -> Result<(), agent_client_protocol::Error> {
    let id = req.session_id.0.to_string();
    let Some(live) = st.sessions.lock().ok().and_then(|s| s.get(&id).cloned()) else {
        return responder.respond_with_error(
            agent_client_protocol::Error::invalid_params().data(format!("no session {id}")),
        );
    };
    let planning = match &*req.mode_id.0 {
        PLAN_MODE => true,
        DEFAULT_MODE => false,
        other => {
            return responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(format!("no mode {other}: {DEFAULT_MODE} or {PLAN_MODE}")),
            );
        }
    };
    live.planning
        .store(planning, std::sync::atomic::Ordering::SeqCst);
    responder.respond(SetSessionModeResponse::new())
}

/// `session/load`: a session of the workspace, by its whole id, replayed
/// to the client (one already open is closed first).
async fn load_session(
    st: &Shared,
    req: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let root = workspace(st, &req.cwd);
    let id = req.session_id.0.to_string();
    if let Some(old) = st.sessions.lock().ok().and_then(|mut s| s.remove(&id)) {
        close(&old).await;
    }
    // Only a whole id: a prefix or `last` would open a session
    // under an id the client does not know.
    if id.contains(['/', '\\', '.'])
        || !crate::session::sessions_dir(&root)
            .join(format!("{id}.jsonl"))
            .is_file()
    {
        return responder.respond_with_error(
            agent_client_protocol::Error::invalid_params().data(format!("no session {id}")),
        );
    }
    match start(st, &root, Some(&id), &cx).await {
        Ok((id, live)) => {
            responder.respond(LoadSessionResponse::new().modes(modes(false)))?;
            offer_commands(&cx, &id, &live);
            Ok(())
        }
        Err(msg) => {
            responder.respond_with_error(agent_client_protocol::Error::invalid_params().data(msg))
        }
    }
}

/// What a prompt asks for, and whether it is a built-in command: a
/// built-in (`/compact`, `/stats`, run as in the TUI), `/ask-NAME PROMPT`
/// (offered as a command), a custom command, a plan in plan mode, or a
/// message. An agent's question (`asked`) is never taken as a command.
fn prompt_op(
    text: String,
    images: Vec<crate::protocol::Image>,
    asked: bool,
    live: &Live,
) -> Result<(Op, bool), String> {
    let built_in = Slash::parse(text.trim())
        .filter(|(c, _)| !asked && c.on(Face::Acp))
        .map(|(c, rest)| command_op(c, rest));
    let command = built_in.is_some();
    let op = match (
        built_in,
        crate::protocol::parse_ask(text.trim()).filter(|_| !asked),
    ) {
        (Some(Ok(op)), _) => op,
        (Some(Err(why)), _) => return Err(why),
        (None, Some((name, with_context, prompt)))
            if live.agents.iter().any(|(n, _)| *n == name) && !prompt.is_empty() =>
        {
            Op::AskAgent {
                name,
                prompt,
                with_context,
            }
        }
        _ => match crate::commands::parse(text.trim(), &live.commands).filter(|_| !asked) {
            Some((name, args)) => Op::RunCommand {
                name,
                args: args.to_string(),
            },
            None if live.planning.load(std::sync::atomic::Ordering::SeqCst) => Op::Plan { text },
            None => Op::UserMessage { text, images },
        },
    };
    Ok((op, command))
}

/// The workspace as the session will see it (canonical when it can be).
fn root_of(_rt: &Runtime, root: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// What `initialize` answers: mm's capabilities and the name the agent
/// file gives it.
fn init_response(
    s: &crate::config::Settings,
    req: &InitializeRequest,
    images: bool,
) -> InitializeResponse {
    let mut info = Implementation::new(
        s.acp_name.clone().unwrap_or_else(|| "mm".into()),
        env!("CARGO_PKG_VERSION"),
    );
    if let Some(t) = &s.acp_title {
        info = info.title(t.clone());
    }
    InitializeResponse::new(
        req.protocol_version
            .min(agent_client_protocol::schema::ProtocolVersion::V1),
    )
    .agent_capabilities(
        AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .embedded_context(true)
                    .image(images),
            ),
    )
    .agent_info(info)
}

/// No model server answered: the editor still gets an agent, whose every
/// session says why it cannot start (an editor shows that; a process that
/// exits at once is only "the server exited").
pub async fn serve_unavailable(settings: crate::config::Settings, why: String) -> i32 {
    let settings = Arc::new(settings);
    let (w1, w2, w3) = (why.clone(), why.clone(), why);
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    let result = agent_client_protocol::Agent
        .v1()
        .name("mm")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                responder.respond(init_response(&settings, &req, false))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: NewSessionRequest, responder: Responder<NewSessionResponse>, _cx| {
                responder.respond_with_error(
                    agent_client_protocol::Error::internal_error().data(w1.clone()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        _cx| {
                responder.respond_with_error(
                    agent_client_protocol::Error::internal_error().data(w2.clone()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: PromptRequest, responder: Responder<PromptResponse>, _cx| {
                responder.respond_with_error(
                    agent_client_protocol::Error::internal_error().data(w3.clone()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await;
    match result {
        Err(e) if !agent_client_protocol::is_incoming_transport_closed(&e) => 1,
        _ => 0,
    }
}

/// The folder a client named, or the process's own.
fn workspace(st: &State, cwd: &std::path::Path) -> PathBuf {
    if cwd.as_os_str().is_empty() || !cwd.is_absolute() {
        st.root.clone()
    } else {
        cwd.to_path_buf()
    }
}

/// Opens (or resumes) a session and starts pumping its events to the client.
async fn start(
    st: &Shared,
    root: &std::path::Path,
    resume: Option<&str>,
    cx: &ConnectionTo<Client>,
) -> Result<(String, Arc<Live>), String> {
    let Opened {
        ops,
        events,
        handle,
        info,
        lsp,
        replay,
        tools,
        ..
    } = open_session(&st.rt, root, resume, false)
        .await
        .map_err(|(_, m)| m)?;
    let id = info.session.clone();
    if st.client_reads.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = tools.editor.set(Arc::new(Editor {
            cx: cx.clone(),
            session: id.clone(),
        }));
    }
    let live = Arc::new(Live {
        ops,
        pending: Mutex::new(None),
        handle: Mutex::new(Some(handle)),
        lsp,
        agents: info.agents.clone(),
        commands: info.commands.clone(),
        root: root_of(&st.rt, root),
        planning: std::sync::atomic::AtomicBool::new(false),
    });
    // A loaded session's history goes to the client before the answer.
    let mut map = updates::Mapper::new(root_of(&st.rt, root));
    for ev in crate::session::replay::events(&replay) {
        for u in map.updates(&ev, true) {
            let _ = cx.send_notification(SessionNotification::new(id.clone(), u));
        }
    }
    if let Ok(mut s) = st.sessions.lock() {
        s.insert(id.clone(), live.clone());
    }
    tokio::spawn(pump(id.clone(), live.clone(), events, cx.clone(), map));
    Ok((id, live))
}

/// The client's view of files: what its buffers hold.
struct Editor {
    cx: ConnectionTo<Client>,
    session: String,
}

impl crate::tools::EditorFiles for Editor {
    fn read(&self, abs: PathBuf) -> futures::future::BoxFuture<'static, Option<String>> {
        let req =
            agent_client_protocol::v1::schema::ReadTextFileRequest::new(self.session.clone(), abs);
        let sent = self.cx.send_request(req);
        Box::pin(async move { sent.block_task().await.ok().map(|r| r.content) })
    }
}

/// Tells the client the session's commands: the built-ins an editor can
/// use, `/ask-NAME` for each agent, the custom commands (after the
/// session's id reached it).
fn offer_commands(cx: &ConnectionTo<Client>, id: &str, live: &Live) {
    let input = |hint: &str| {
        AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint.to_string()))
    };
    let mut commands: Vec<AvailableCommand> = Slash::of(Face::Acp)
        .map(|c| {
            let offered = AvailableCommand::new(c.name(), c.about());
            match c.args() {
                "" => offered,
                a => offered.input(input(a)),
            }
        })
        .collect();
    commands.extend(
        crate::protocol::ask_commands(&live.agents)
            .into_iter()
            .filter_map(|(c, d)| {
                let name = c.strip_prefix("/ask-")?.to_string();
                Some(
                    AvailableCommand::new(format!("ask-{name}"), d)
                        .input(input("the question, with everything the agent needs")),
                )
            }),
    );
    commands.extend(
        live.commands
            .iter()
            .map(|(n, d)| AvailableCommand::new(n.clone(), d.clone()).input(input("arguments"))),
    );
    let _ = cx.send_notification(SessionNotification::new(
        id.to_string(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    ));
}

/// The op a built-in command typed in the editor runs, or why it cannot.
fn command_op(command: Slash, rest: &str) -> Result<Op, String> {
    let arg = Some(rest.trim()).filter(|a| !a.is_empty());
    Ok(match command {
        Slash::Stats => Op::Stats,
        Slash::Cost => Op::Cost,
        Slash::Mcp => Op::Mcp,
        Slash::Skills => Op::Skills,
        Slash::Agents => Op::Agents,
        Slash::Init => Op::Init,
        Slash::Plan => match arg {
            Some(text) => Op::Plan {
                text: text.to_string(),
            },
            None => return Err("usage: /plan REQUEST".into()),
        },
        Slash::Compact => Op::Compact {
            focus: arg.map(str::to_string),
        },
        Slash::Model => Op::Model {
            name: arg.map(str::to_string),
        },
        Slash::Ctx => match arg {
            None => Op::Ctx { mode: None },
            Some(a) => match crate::config::ContextMode::parse(a) {
                Some(mode) => Op::Ctx { mode: Some(mode) },
                None => return Err(format!("/ctx takes compact or rebuild, not {a}")),
            },
        },
        other => return Err(format!("/{} is not a command of the editor", other.name())),
    })
}

/// Turns the session's events into the client's notifications, asks the
/// client what the approval broker asks, and answers prompts when their
/// turn ends.
async fn pump(
    id: String,
    live: Arc<Live>,
    mut events: crate::bus::EventReceiver,
    cx: ConnectionTo<Client>,
    mut map: updates::Mapper,
) {
    while let Some(ev) = events.recv().await {
        match &ev.msg {
            AgentEvent::ApprovalRequested { request } => {
                let update = map.permission_call(request);
                let req = permission_request(&id, update, request);
                let (cx2, ops, request) = (cx.clone(), live.ops.clone(), request.clone());
                tokio::spawn(async move {
                    let decision = match cx2.send_request(req).block_task().await {
                        Ok(r) => decision_of(&r, &request),
                        Err(e) => ApprovalDecision::No {
                            reason: Some(format!("the client did not answer: {e}")),
                        },
                    };
                    ops.send(Op::Approval {
                        id: request.id,
                        decision,
                    });
                });
            }
            AgentEvent::Finished { result } => {
                let waiting = live.pending.lock().ok().and_then(|mut p| match p.as_ref() {
                    Some(w) if w.op == ev.id => p.take(),
                    _ => None,
                });
                match (waiting, result) {
                    // A plan proposed: the user says whether to carry it out.
                    (Some(w), OpResult::Turn { report })
                        if w.plan && !report.plan.is_empty() && report.outcome == Outcome::Done =>
                    {
                        let steps: Vec<String> =
                            report.plan.iter().map(|s| s.step.clone()).collect();
                        tokio::spawn(put_plan(
                            id.clone(),
                            live.clone(),
                            cx.clone(),
                            steps,
                            w.responder,
                            result.clone(),
                        ));
                    }
                    (Some(w), _) => {
                        let _ = answer(w.responder, result);
                    }
                    (None, _) => {}
                }
            }
            // What a built-in command answers is its reply.
            AgentEvent::Notice { text, .. }
                if live
                    .pending
                    .lock()
                    .is_ok_and(|p| p.as_ref().is_some_and(|w| w.command && w.op == ev.id)) =>
            {
                let said = SessionNotification::new(id.clone(), updates::said(format!("{text}\n")));
                if cx.send_notification(said).is_err() {
                    return;
                }
            }
            msg => {
                for u in map.updates(msg, false) {
                    if cx
                        .send_notification(SessionNotification::new(id.clone(), u))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    }
}

/// A short id that differs between calls in one process.
fn uuid_like() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

/// The prompt's response: why the turn stopped, and in `_meta.mm` what it
/// came to (the answer, the files written) for clients that want it.
fn answer(
    responder: Responder<PromptResponse>,
    result: &OpResult,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        OpResult::Turn { report } => {
            let stop = match report.outcome {
                Outcome::Done => StopReason::EndTurn,
                Outcome::Cancelled => StopReason::Cancelled,
                Outcome::Budget => StopReason::MaxTurnRequests,
                Outcome::Truncated => StopReason::MaxTokens,
                Outcome::Failed => {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::internal_error().data(
                            report
                                .error
                                .clone()
                                .unwrap_or_else(|| "the turn failed".into()),
                        ),
                    );
                }
            };
            let mut meta = serde_json::Map::new();
            meta.insert(
                "mm".into(),
                serde_json::json!({
                    "outcome": report.outcome.as_str(),
                    "answer": report.answer,
                    "written": report.written,
                    "error": report.error,
                }),
            );
            responder.respond(PromptResponse::new(stop).meta(meta))
        }
        OpResult::Failed { error } => responder
            .respond_with_error(agent_client_protocol::Error::internal_error().data(error.clone())),
        OpResult::Done => responder.respond(PromptResponse::new(StopReason::EndTurn)),
    }
}

/// What a client's update says, for the agent's own use in tests and the
/// asking side.
pub fn is_text(u: &SessionUpdate) -> Option<&str> {
    match u {
        SessionUpdate::AgentMessageChunk(c) => match &c.content {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::prompt::mention;
    use super::*;

    #[test]
    fn a_mentioned_file_is_a_workspace_path() {
        let root = std::path::Path::new("/nonexistent/ws");
        assert_eq!(
            mention("file:///nonexistent/ws/src/a%20b.rs#L10", root),
            "src/a b.rs"
        );
        assert_eq!(mention("file:///etc/hosts", root), "/etc/hosts");
        assert_eq!(
            mention("https://example.com/x", root),
            "https://example.com/x"
        );
    }

    #[test]
    fn an_asked_agents_steps_reach_the_client_in_its_card() {
        let mut m = updates::Mapper::new(PathBuf::from("/ws"));
        m.updates(
            &AgentEvent::ToolCallStarted {
                turn: 1,
                call_id: "a1".into(),
                name: "ask_agent".into(),
            },
            false,
        );
        let u = m.updates(
            &AgentEvent::ToolProgress {
                turn: 1,
                call_id: "a1".into(),
                text: "✓ read_file a.txt".into(),
            },
            false,
        );
        let SessionUpdate::ToolCallUpdate(t) = &u[0] else {
            panic!("{u:?}")
        };
        let text = format!("{:?}", t.fields.content);
        assert!(text.contains("read_file a.txt"), "{text}");
    }

    #[test]
    fn locations_stay_in_the_workspace() {
        let mut m = updates::Mapper::new(PathBuf::from("/ws"));
        for (args, want) in [
            (r#"{"path":"../../etc/passwd"}"#, None),
            (r#"{"path":"/etc/passwd"}"#, None),
            (r#"{"path":"src/a.rs","line":0}"#, Some("/ws/src/a.rs")),
        ] {
            let u = m.updates(
                &AgentEvent::ToolCallRunning {
                    turn: 1,
                    call_id: "c".into(),
                    name: "read_file".into(),
                    summary: String::new(),
                    arguments: args.into(),
                },
                false,
            );
            let locs = match &u[0] {
                SessionUpdate::ToolCall(t) => t.locations.clone(),
                SessionUpdate::ToolCallUpdate(t) => t.fields.locations.clone().unwrap_or_default(),
                other => panic!("{other:?}"),
            };
            match want {
                None => assert!(locs.is_empty(), "{args}: {locs:?}"),
                Some(p) => {
                    assert_eq!(locs[0].path, PathBuf::from(p));
                    assert_eq!(locs[0].line, None);
                }
            }
        }
    }
}
