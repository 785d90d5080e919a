//! The agent as a task: front ends send `Op`s, the router applies the ones
//! that cannot wait (cancel, approval answers) at once and queues the rest
//! for the worker, which runs one turn at a time.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Agent, TurnResult};
use crate::approval::ApprovalBroker;
use crate::bus::EventBus;
use crate::protocol::{AgentEvent, Level, NavKind, Op};

enum Work {
    Turn(String),
    NewSession,
    /// A checkpoint operation, run between turns.
    Git(Op),
}

/// Spawns the router and the worker. The returned handle finishes when
/// the op channel closes or `Op::Shutdown` arrives (after the running
/// turn ends).
pub fn spawn(
    agent: Agent,
    broker: Arc<ApprovalBroker>,
    bus: EventBus,
    mut ops: mpsc::UnboundedReceiver<Op>,
    results: Option<mpsc::UnboundedSender<TurnResult>>,
) -> JoinHandle<()> {
    let current: Arc<Mutex<CancellationToken>> = Arc::new(Mutex::new(CancellationToken::new()));
    let (work_tx, work_rx) = mpsc::unbounded_channel::<Work>();
    let lsp = agent.lsp();
    let worker = tokio::spawn(worker(
        agent,
        bus.clone(),
        work_rx,
        current.clone(),
        results,
    ));
    tokio::spawn(async move {
        while let Some(op) = ops.recv().await {
            match op {
                Op::UserMessage { text } => {
                    let _ = work_tx.send(Work::Turn(text));
                }
                Op::NewSession => {
                    let _ = work_tx.send(Work::NewSession);
                }
                Op::Cancel => {
                    if let Ok(token) = current.lock() {
                        token.cancel();
                    }
                }
                Op::Approval { id, decision } => {
                    broker.resolve(id, decision);
                }
                Op::Shutdown => break,
                Op::OpenFile { path } => {
                    if let Some(lsp) = lsp.clone() {
                        tokio::spawn(async move {
                            let abs = lsp.root().join(&path);
                            if crate::lsp::language_of(&abs).is_some()
                                && let Ok(text) = tokio::fs::read_to_string(&abs).await
                            {
                                lsp.opened(&abs, &text).await;
                            }
                        });
                    }
                }
                Op::Navigate {
                    kind,
                    path,
                    line,
                    col,
                } => {
                    // Not queued behind a turn: the server answers while
                    // the model works.
                    let (lsp, bus) = (lsp.clone(), bus.clone());
                    tokio::spawn(async move {
                        bus.publish(navigate(lsp, kind, path, line, col).await);
                    });
                }
                op @ (Op::ListCheckpoints
                | Op::PreviewRewind { .. }
                | Op::Rewind { .. }
                | Op::SessionDiff { .. }
                | Op::ProposeCommit
                | Op::Commit { .. }
                | Op::Undo
                | Op::Stats
                | Op::Export { .. }) => {
                    let _ = work_tx.send(Work::Git(op));
                }
            }
        }
        drop(work_tx);
        let _ = worker.await;
    })
}

async fn worker(
    mut agent: Agent,
    bus: EventBus,
    mut work: mpsc::UnboundedReceiver<Work>,
    current: Arc<Mutex<CancellationToken>>,
    results: Option<mpsc::UnboundedSender<TurnResult>>,
) {
    while let Some(item) = work.recv().await {
        match item {
            Work::Turn(text) => {
                let token = CancellationToken::new();
                if let Ok(mut c) = current.lock() {
                    *c = token.clone();
                }
                let result = agent.run_turn(&text, &token).await;
                if let Some(tx) = &results {
                    let _ = tx.send(result);
                }
            }
            Work::Git(op) => {
                let name = op_name(&op);
                run_git_op(&mut agent, op).await;
                bus.publish(AgentEvent::OpFinished {
                    op: name.to_string(),
                });
            }
            Work::NewSession => {
                if let Err(e) = agent.new_session() {
                    bus.publish(AgentEvent::Notice {
                        turn: None,
                        level: Level::Error,
                        text: format!("could not start a new session: {e}"),
                    });
                }
            }
        }
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
    let kind_name = match kind {
        NavKind::Definition => "definition",
        NavKind::References => "references",
    };
    let done = |items, error| AgentEvent::Locations {
        kind: kind_name.into(),
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

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::ListCheckpoints => "list_checkpoints",
        Op::PreviewRewind { .. } => "preview_rewind",
        Op::Rewind { .. } => "rewind",
        Op::SessionDiff { .. } => "session_diff",
        Op::ProposeCommit => "propose_commit",
        Op::Commit { .. } => "commit",
        Op::Undo => "undo",
        Op::Stats => "stats",
        Op::Export { .. } => "export",
        _ => "other",
    }
}

async fn run_git_op(agent: &mut Agent, op: Op) {
    match op {
        Op::ListCheckpoints => agent.list_checkpoints().await,
        Op::PreviewRewind { id } => agent.preview_rewind(&id).await,
        Op::Rewind {
            id,
            mode,
            overwrite,
        } => agent.rewind(&id, mode, overwrite).await,
        Op::SessionDiff { from } => agent.session_diff(from).await,
        Op::ProposeCommit => agent.propose_commit().await,
        Op::Commit { message } => agent.commit(message).await,
        Op::Undo => agent.undo(),
        Op::Stats => agent.stats(),
        Op::Export { path } => agent.export(path).await,
        _ => {}
    }
}
