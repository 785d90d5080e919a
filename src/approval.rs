//! The approval broker: routes "may I?" to whichever front end can answer.
//!
//! A tool asks the broker and awaits a decision. In interactive mode the
//! broker publishes `ApprovalRequested` on the bus and waits for the
//! matching `Op::Approval` (the terminal's y/N/a, the TUI overlay, an ACP
//! client). A headless run has no one to ask: the broker says no at once,
//! and says why once, so an unattended run never gets consent it did not have.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::protocol::{AgentEvent, ApprovalDecision, ApprovalKind, ApprovalRequest, Level, TurnId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerMode {
    /// A front end answers through `Op::Approval`.
    Interactive,
    /// Nobody can answer: everything that needs approval is refused.
    Deny,
}

pub struct ApprovalBroker {
    mode: BrokerMode,
    bus: EventBus,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<ApprovalDecision>>>,
    told_headless: AtomicBool,
}

/// What asking came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// What a front end answered (a "no" when the turn was cancelled).
    User(ApprovalDecision),
    /// Nobody can answer in this run: refused without asking.
    Unattended,
}

/// The reason the model gets when a headless run refuses a call.
pub const HEADLESS_REFUSAL: &str = "not run: this call needs the user's approval and this run is unattended. \
Do not retry it; do what you can with read-only commands and the file tools, and say in your answer what is left for the user to run.";

impl ApprovalBroker {
    pub fn new(mode: BrokerMode, bus: EventBus) -> Self {
        Self {
            mode,
            bus,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            told_headless: AtomicBool::new(false),
        }
    }

    /// Whether someone can answer (a front end), or everything that needs
    /// approval is refused.
    pub fn can_ask(&self) -> bool {
        self.mode == BrokerMode::Interactive
    }

    /// Asks, and waits until a front end answers or the turn is cancelled.
    pub async fn ask(
        &self,
        turn: TurnId,
        call_id: &str,
        kind: ApprovalKind,
        cancel: &CancellationToken,
    ) -> Answer {
        if self.mode == BrokerMode::Deny {
            if !self.told_headless.swap(true, Ordering::SeqCst) {
                self.bus.publish(AgentEvent::Notice {
                    turn: Some(turn),
                    level: Level::Warning,
                    text: "this run cannot ask for approval: commands outside the read-only list are refused (use -auto to run them in the fence, or -yolo for full access)".into(),
                });
            }
            return Answer::Unattended;
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        self.bus.publish(AgentEvent::ApprovalRequested {
            request: ApprovalRequest {
                id,
                turn,
                call_id: call_id.to_string(),
                kind,
            },
        });
        let decision = tokio::select! {
            d = rx => d.unwrap_or(ApprovalDecision::No { reason: None }),
            _ = cancel.cancelled() => ApprovalDecision::No { reason: Some("cancelled".into()) },
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        self.bus.publish(AgentEvent::ApprovalResolved {
            id,
            decision: decision.clone(),
        });
        Answer::User(decision)
    }

    /// Delivers a front end's answer; false when nothing waits on `id`.
    pub fn resolve(&self, id: u64, decision: ApprovalDecision) -> bool {
        let tx = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match tx {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec_kind() -> ApprovalKind {
        ApprovalKind::Exec {
            command: "rm x".into(),
            reason: "r".into(),
            always_key: "rm".into(),
            scope: "`rm …` commands".into(),
        }
    }

    #[tokio::test]
    async fn headless_refuses_and_says_so_once() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let b = ApprovalBroker::new(BrokerMode::Deny, bus);
        let cancel = CancellationToken::new();
        for _ in 0..3 {
            let d = b.ask(1, "c", exec_kind(), &cancel).await;
            assert_eq!(d, Answer::Unattended);
        }
        let mut notices = 0;
        while let Ok(ev) = rx.try_recv() {
            if matches!(ev.msg, AgentEvent::Notice { .. }) {
                notices += 1;
            }
        }
        assert_eq!(notices, 1);
    }

    #[tokio::test]
    async fn an_answer_from_a_front_end_reaches_the_asker() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let b = std::sync::Arc::new(ApprovalBroker::new(BrokerMode::Interactive, bus));
        let b2 = b.clone();
        let answerer = tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                if let AgentEvent::ApprovalRequested { request } = ev.msg {
                    assert!(b2.resolve(request.id, ApprovalDecision::Always));
                    break;
                }
            }
        });
        let d = b.ask(1, "c", exec_kind(), &CancellationToken::new()).await;
        assert_eq!(d, Answer::User(ApprovalDecision::Always));
        answerer.await.unwrap();
        assert!(!b.resolve(99, ApprovalDecision::Yes));
    }

    #[tokio::test]
    async fn cancel_ends_the_wait_with_no() {
        let b = ApprovalBroker::new(BrokerMode::Interactive, EventBus::new());
        let cancel = CancellationToken::new();
        cancel.cancel();
        let d = b.ask(1, "c", exec_kind(), &cancel).await;
        assert!(matches!(d, Answer::User(ApprovalDecision::No { .. })));
    }
}
