//! The agent as a task: front ends submit `Op`s, the router applies the ones
//! that cannot wait (cancel, approval answers, language-server queries) at
//! once and queues the rest for the worker, which runs one at a time. Every
//! front end (headless, REPL, TUI) drives the agent this way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::approval::ApprovalBroker;
use crate::bus::EventBus;
use crate::protocol::{AgentEvent, Level, NavKind, Op, OpId, OpResult, Submission};

enum Work {
    /// A turn, with the token that cancels it (made when it is queued, so
    /// a cancel while it waits behind another op is not lost).
    Turn(String, Vec<crate::protocol::Image>, CancellationToken),
    /// `/ask-NAME`: another agent answers, and the pair joins the conversation.
    Ask {
        name: String,
        prompt: String,
        with_context: bool,
        token: CancellationToken,
    },
    NewSession,
    /// A custom command's turn.
    Command {
        name: String,
        args: String,
        token: CancellationToken,
    },
    /// `/compact`: a summary request, cancellable like a turn.
    Compact {
        focus: Option<String>,
        token: CancellationToken,
    },
    /// `/commit`'s message: a model request, cancellable like a turn.
    ProposeCommit(CancellationToken),
    /// `/plan`: a turn in plan mode.
    Plan(String, CancellationToken),
    /// An approved plan carried out.
    RunPlan(Vec<String>, CancellationToken),
    /// A checkpoint operation, run between turns.
    Git(Op),
}

/// Spawns the router and the worker. The returned handle finishes when
/// the op channel closes or `Op::Shutdown` arrives (after the running
/// turn ends). Every op ends with one `Finished` carrying its id.
pub fn spawn(
    agent: Agent,
    broker: Arc<ApprovalBroker>,
    bus: EventBus,
    mut ops: mpsc::UnboundedReceiver<Submission>,
) -> JoinHandle<()> {
    // The tokens of the turns queued or running: a cancel cancels them all.
    let turns: Arc<Mutex<Vec<CancellationToken>>> = Arc::default();
    let (work_tx, work_rx) = mpsc::unbounded_channel::<(OpId, Work)>();
    let lsp = agent.lsp();
    // What the queries answered while the worker is busy read.
    let glance = agent.glance_slot();
    let busy: Arc<AtomicBool> = Arc::default();
    let worker = tokio::spawn(worker(
        agent,
        bus.clone(),
        work_rx,
        turns.clone(),
        busy.clone(),
    ));
    tokio::spawn(async move {
        while let Some(Submission { id, op }) = ops.recv().await {
            tracing::debug!(id, ?op, "op");
            let done = |result: OpResult| {
                bus.for_op(id).publish(AgentEvent::Finished { result });
            };
            // The worker is gone (it stopped on a bug): the op ends at once.
            let queue = |work: Work| {
                if work_tx.send((id, work)).is_err() {
                    done(OpResult::Failed {
                        error: "the agent has stopped".into(),
                    });
                }
            };
            // A token for work that Ctrl-C cancels, kept with the others.
            let tracked = || {
                let token = CancellationToken::new();
                if let Ok(mut t) = turns.lock() {
                    t.push(token.clone());
                }
                token
            };
            let op = match queued_work(op, tracked) {
                Ok(work) => {
                    queue(work);
                    continue;
                }
                Err(op) => op,
            };
            match op {
                Op::Cancel => {
                    if let Ok(t) = turns.lock() {
                        for token in t.iter() {
                            token.cancel();
                        }
                    }
                    done(OpResult::Done);
                }
                Op::Approval {
                    id: request,
                    decision,
                } => {
                    broker.resolve(request, decision);
                    done(OpResult::Done);
                }
                Op::Shutdown => {
                    done(OpResult::Done);
                    break;
                }
                Op::OpenFile { path } => {
                    tokio::spawn(open_file(lsp.clone(), bus.for_op(id), path));
                }
                // Not queued behind a turn: the server answers while the
                // model works.
                Op::Navigate {
                    kind,
                    path,
                    line,
                    col,
                } => {
                    tokio::spawn(navigate_op(
                        lsp.clone(),
                        bus.for_op(id),
                        kind,
                        path,
                        line,
                        col,
                    ));
                }
                // Queries that change nothing answer at once while a turn
                // runs, from the figures of its last request.
                op @ (Op::Stats
                | Op::Cost
                | Op::Mcp
                | Op::Skills
                | Op::Agents
                | Op::Ctx { mode: None })
                    if busy.load(Ordering::SeqCst)
                        && let Some(g) = glance.lock().ok().and_then(|g| g.clone()) =>
                {
                    bus.for_op(id).publish(AgentEvent::Notice {
                        turn: Some(g.turn),
                        level: Level::Info,
                        text: glanced(&op, &g),
                    });
                    done(OpResult::Done);
                }
                op @ (Op::ListCheckpoints
                | Op::PreviewRewind { .. }
                | Op::Rewind { .. }
                | Op::SessionDiff { .. }
                | Op::UncommittedDiff
                | Op::SwitchSession { .. }
                | Op::Commit { .. }
                | Op::Undo
                | Op::Stats
                | Op::Cost
                | Op::Ctx { .. }
                | Op::Model { .. }
                | Op::Init
                | Op::Piped { .. }
                | Op::Mcp
                | Op::Skills
                | Op::Agents
                | Op::Export { .. }) => queue(Work::Git(op)),
                // Taken by `queued_work` above.
                Op::UserMessage { .. }
                | Op::Plan { .. }
                | Op::RunPlan { .. }
                | Op::AskAgent { .. }
                | Op::NewSession
                | Op::RunCommand { .. }
                | Op::Compact { .. }
                | Op::ProposeCommit => {}
            }
        }
        drop(work_tx);
        let _ = worker.await;
    })
}

/// The work an op queues behind the turns, each with a token Ctrl-C
/// cancels where it takes one; the op back when it is other work.
fn queued_work(op: Op, tracked: impl Fn() -> CancellationToken) -> Result<Work, Op> {
    Ok(match op {
        Op::UserMessage { text, images } => Work::Turn(text, images, tracked()),
        Op::Plan { text } => Work::Plan(text, tracked()),
        Op::RunPlan { steps } => Work::RunPlan(steps, tracked()),
        Op::AskAgent {
            name,
            prompt,
            with_context,
        } => Work::Ask {
            name,
            prompt,
            with_context,
            token: tracked(),
        },
        Op::NewSession => Work::NewSession,
        Op::RunCommand { name, args } => Work::Command {
            name,
            args,
            token: tracked(),
        },
        Op::Compact { focus } => Work::Compact {
            focus,
            token: tracked(),
        },
        Op::ProposeCommit => Work::ProposeCommit(tracked()),
        other => return Err(other),
    })
}

/// A navigation, not queued behind a turn: the language server answers
/// while the model works.
async fn navigate_op(
    lsp: Option<Arc<crate::lsp::Lsp>>,
    bus: EventBus,
    kind: crate::protocol::NavKind,
    path: String,
    line: u32,
    col: u32,
) {
    let answer = navigate(lsp, kind, path, line, col).await;
    let result = match &answer {
        AgentEvent::Locations { error: Some(e), .. } => OpResult::Failed { error: e.clone() },
        _ => OpResult::Done,
    };
    bus.publish(answer);
    bus.publish(AgentEvent::Finished { result });
}

/// A file the user opened in the viewer, told to its language server.
async fn open_file(lsp: Option<Arc<crate::lsp::Lsp>>, bus: EventBus, path: String) {
    if let Some(lsp) = lsp {
        let abs = lsp.root().join(&path);
        if crate::lsp::language_of(&abs).is_some()
            && let Ok(text) = crate::paths::read_checked_text(&abs)
        {
            lsp.opened(&abs, &text).await;
        }
    }
    bus.publish(AgentEvent::Finished {
        result: OpResult::Done,
    });
}

/// A query's answer from the figures of the running turn's last request.
fn glanced(op: &Op, g: &super::stats::Glance) -> String {
    match op {
        Op::Stats => g.stats(),
        Op::Cost => g.cost(),
        Op::Mcp => g.mcp.clone(),
        Op::Skills => g.skills.clone(),
        Op::Agents => g.agents.clone(),
        _ => g.ctx(),
    }
}

async fn worker(
    mut agent: Agent,
    bus: EventBus,
    mut work: mpsc::UnboundedReceiver<(OpId, Work)>,
    turns: Arc<Mutex<Vec<CancellationToken>>>,
    busy: Arc<AtomicBool>,
) {
    while let Some((id, item)) = work.recv().await {
        bus.set_worker_op(id);
        busy.store(true, Ordering::SeqCst);
        // A bug that panics ends this op with an error the front end can
        // show, and stops the worker (the agent's state is unknown): the
        // ops after it end at once instead of waiting forever.
        let ran = std::panic::AssertUnwindSafe(run_one(&mut agent, &bus, item, &turns))
            .catch_unwind()
            .await;
        let (result, stop) = match ran {
            Ok(result) => (result, false),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(std::string::ToString::to_string)
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                let error = format!("mm hit a bug and stopped the agent: {why}");
                bus.publish(AgentEvent::Notice {
                    turn: None,
                    level: Level::Error,
                    text: error.clone(),
                });
                (OpResult::Failed { error }, true)
            }
        };
        tracing::debug!(id, ?result, "op finished");
        busy.store(false, Ordering::SeqCst);
        bus.publish(AgentEvent::Finished { result });
        bus.set_worker_op(0);
        if stop {
            break;
        }
    }
}

async fn run_one(
    agent: &mut Agent,
    bus: &EventBus,
    item: Work,
    turns: &Mutex<Vec<CancellationToken>>,
) -> OpResult {
    match item {
        Work::Turn(text, images, token) => {
            agent.images_with_next(images);
            turn_over(&token, turns, agent.run_turn(&text, &token).await)
        }
        Work::Plan(text, token) => turn_over(&token, turns, agent.plan_turn(&text, &token).await),
        Work::RunPlan(steps, token) => {
            turn_over(&token, turns, agent.run_plan(steps, &token).await)
        }
        Work::Ask {
            name,
            prompt,
            with_context,
            token,
        } => {
            let report = agent.ask_turn(&name, &prompt, with_context, &token).await;
            turn_over(&token, turns, report)
        }
        Work::Command { name, args, token } => turn_over(
            &token,
            turns,
            agent.command_turn(&name, &args, &token).await,
        ),
        Work::Git(op) => {
            // An error a turn noted is not this op's.
            agent.take_op_error();
            run_git_op(agent, op).await;
            match agent.take_op_error() {
                Some(error) => OpResult::Failed { error },
                None => OpResult::Done,
            }
        }
        Work::ProposeCommit(token) => {
            agent.take_op_error();
            agent.propose_commit(&token).await;
            token.cancel();
            if let Ok(mut t) = turns.lock() {
                t.retain(|k| !k.is_cancelled());
            }
            match agent.take_op_error() {
                Some(error) => OpResult::Failed { error },
                None => OpResult::Done,
            }
        }
        Work::Compact { focus, token } => {
            let result = agent.compact_now(focus, &token).await;
            token.cancel();
            if let Ok(mut t) = turns.lock() {
                t.retain(|k| !k.is_cancelled());
            }
            match result {
                Ok(()) => OpResult::Done,
                Err(error) => OpResult::Failed { error },
            }
        }
        Work::NewSession => match agent.new_session() {
            Ok(()) => OpResult::Done,
            Err(e) => {
                let error = format!("could not start a new session: {e}");
                bus.publish(AgentEvent::Notice {
                    turn: None,
                    level: Level::Error,
                    text: error.clone(),
                });
                OpResult::Failed { error }
            }
        },
    }
}

/// A turn's op is over: its token leaves the list (cancelled ones, of
/// turns still queued, run and end at once), and its report is the result.
fn turn_over(
    token: &CancellationToken,
    turns: &Mutex<Vec<CancellationToken>>,
    report: crate::protocol::TurnResult,
) -> OpResult {
    token.cancel();
    if let Ok(mut t) = turns.lock() {
        t.retain(|k| !k.is_cancelled());
    }
    OpResult::Turn {
        report: Box::new(report),
    }
}

async fn navigate(
    lsp: Option<Arc<crate::lsp::Lsp>>,
    kind: NavKind,
    path: String,
    line: u32,
    col: u32,
) -> AgentEvent {
    let query = format!("{path}:{line}:{col}");
    let done = |items, error| AgentEvent::Locations {
        kind,
        query: query.clone(),
        items,
        error,
    };
    let Some(lsp) = lsp else {
        return done(vec![], Some("no language server in this session".into()));
    };
    let abs = lsp.root().join(&path);
    let (l, c) = (Some(line as usize), Some(col as usize));
    match lsp.locations(kind, &abs, None, l, c).await {
        Ok(locs) => done(lsp.loc_items(&locs), None),
        Err(e) => done(vec![], Some(e)),
    }
}

async fn run_git_op(agent: &mut Agent, op: Op) {
    match op {
        Op::ListCheckpoints => agent.list_checkpoints().await,
        Op::PreviewRewind { id, turn } => agent.preview_rewind(&id, turn).await,
        Op::Rewind {
            id,
            turn,
            mode,
            overwrite,
        } => agent.rewind(&id, turn, mode, overwrite).await,
        Op::SessionDiff { from } => agent.session_diff(from).await,
        Op::SwitchSession { id } => agent.switch_session(&id).await,
        Op::UncommittedDiff => agent.uncommitted_diff().await,
        Op::Commit { message } => agent.commit(message).await,
        Op::Undo => agent.undo().await,
        Op::Stats => agent.stats(),
        Op::Cost => agent.cost(),
        Op::Ctx { mode } => agent.ctx(mode),
        Op::Model { name } => agent.switch_model(name).await,
        Op::Init => agent.init_agents_md().await,
        Op::Piped { text } => agent.piped(&text),
        Op::Mcp => agent.mcp_status(),
        Op::Skills => agent.skills_list(),
        Op::Agents => agent.notice(Level::Info, agent.glance().agents),
        Op::Export { path } => agent.export(path).await,
        _ => {}
    }
}
