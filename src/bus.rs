//! The event bus: the agent publishes `AgentEvent`s, every front end and
//! printer subscribes; front ends send `Op`s back on one channel.
//!
//! Each subscriber gets its own unbounded queue rather than a shared ring
//! buffer: a headless run prints the answer from these events, and a ring
//! that drops events under a burst of tokens would print a damaged answer.
//! A subscriber that goes away is dropped on the next publish.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::protocol::{AgentEvent, Event, Op, OpId, Submission};

pub type EventReceiver = mpsc::UnboundedReceiver<Event>;

/// Which op id an event is stamped with.
#[derive(Clone)]
enum Stamp {
    /// Whatever op the agent's worker is running (0 between ops). The
    /// worker runs one op at a time, so what its turn publishes, and what
    /// the approval broker asks on its behalf, carries that op's id.
    Worker(Arc<AtomicU64>),
    /// One op that runs beside the worker (a language-server query), or 0.
    Fixed(OpId),
}

#[derive(Clone)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Event>>>>,
    stamp: Stamp,
}

impl Default for EventBus {
    fn default() -> Self {
        Self {
            subscribers: Arc::default(),
            stamp: Stamp::Worker(Arc::default()),
        }
    }
}

impl EventBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new receiver that sees every event published from now on, in order.
    pub fn subscribe(&self) -> EventReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(tx);
        }
        rx
    }

    /// The same bus, stamping what it publishes with `id`.
    pub fn for_op(&self, id: OpId) -> EventBus {
        EventBus {
            subscribers: self.subscribers.clone(),
            stamp: Stamp::Fixed(id),
        }
    }

    /// The same bus for what no op causes (a language server's reports).
    pub fn ambient(&self) -> EventBus {
        self.for_op(0)
    }

    /// The worker says which op it runs now (0: none).
    pub fn set_worker_op(&self, id: OpId) {
        if let Stamp::Worker(cell) = &self.stamp {
            cell.store(id, Ordering::SeqCst);
        }
    }

    pub fn publish(&self, msg: AgentEvent) {
        let id = match &self.stamp {
            Stamp::Worker(cell) => cell.load(Ordering::SeqCst),
            Stamp::Fixed(id) => *id,
        };
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        subs.retain(|tx| !tx.is_closed());
        let event = Event { id, msg };
        if let Some((last, rest)) = subs.split_last() {
            for tx in rest {
                let _ = tx.send(event.clone());
            }
            let _ = last.send(event);
        }
    }
}

/// The sending half of the op channel, cloned into every front end. It
/// numbers the ops so their events can be told apart.
#[derive(Clone)]
pub struct OpSender {
    tx: mpsc::UnboundedSender<Submission>,
    next: Arc<AtomicU64>,
}

impl OpSender {
    pub fn channel() -> (OpSender, mpsc::UnboundedReceiver<Submission>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            OpSender {
                tx,
                next: Arc::new(AtomicU64::new(1)),
            },
            rx,
        )
    }

    /// Sends an op; its id, or None when the agent has gone away.
    pub fn submit(&self, op: Op) -> Option<OpId> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        self.tx.send(Submission { id, op }).ok().map(|_| id)
    }

    /// Sends an op whose events the caller does not wait for; false when
    /// the agent has gone away.
    pub fn send(&self, op: Op) -> bool {
        self.submit(op).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_subscriber_sees_every_event_in_order() {
        let bus = EventBus::new();
        let mut a = bus.subscribe();
        let mut b = bus.subscribe();
        for i in 0..10_000 {
            bus.publish(AgentEvent::Token {
                turn: 1,
                text: i.to_string(),
            });
        }
        for rx in [&mut a, &mut b] {
            for i in 0..10_000 {
                match rx.recv().await.map(|e| e.msg) {
                    Some(AgentEvent::Token { text, .. }) => assert_eq!(text, i.to_string()),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }

    #[tokio::test]
    async fn a_dropped_subscriber_is_forgotten() {
        let bus = EventBus::new();
        let a = bus.subscribe();
        drop(a);
        let mut b = bus.subscribe();
        bus.publish(AgentEvent::Token {
            turn: 1,
            text: "x".into(),
        });
        assert!(b.recv().await.is_some());
        assert_eq!(bus.subscribers.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn events_carry_the_op_that_caused_them() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let note = |text: &str| AgentEvent::Notice {
            turn: None,
            level: crate::protocol::Level::Info,
            text: text.into(),
        };
        bus.publish(note("before"));
        bus.set_worker_op(7);
        bus.publish(note("in op 7"));
        bus.for_op(9).publish(note("beside, op 9"));
        bus.ambient().publish(note("a server's own"));
        bus.set_worker_op(0);
        bus.publish(note("after"));
        let ids: Vec<OpId> = std::iter::from_fn(|| rx.try_recv().ok().map(|e| e.id)).collect();
        assert_eq!(ids, vec![0, 7, 9, 0, 0]);
    }

    #[test]
    fn ops_are_numbered_from_one() {
        let (tx, mut rx) = OpSender::channel();
        let other = tx.clone();
        assert_eq!(tx.submit(Op::Stats), Some(1));
        assert_eq!(other.submit(Op::Cancel), Some(2));
        assert_eq!(rx.try_recv().map(|s| s.id).ok(), Some(1));
        drop(rx);
        assert_eq!(tx.submit(Op::Stats), None);
    }
}
