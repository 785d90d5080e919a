//! The event bus: the agent publishes `AgentEvent`s, every front end and
//! printer subscribes; front ends send `Op`s back on one channel.
//!
//! Each subscriber gets its own unbounded queue rather than a shared ring
//! buffer: a headless run prints the answer from these events, and a ring
//! that drops events under a burst of tokens would print a damaged answer.
//! A subscriber that goes away is dropped on the next publish.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::protocol::{AgentEvent, Op};

pub type EventReceiver = mpsc::UnboundedReceiver<AgentEvent>;

#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<AgentEvent>>>>,
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

    pub fn publish(&self, event: AgentEvent) {
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        subs.retain(|tx| !tx.is_closed());
        if let Some((last, rest)) = subs.split_last() {
            for tx in rest {
                let _ = tx.send(event.clone());
            }
            let _ = last.send(event);
        }
    }
}

/// The sending half of the op channel, cloned into every front end.
#[derive(Clone)]
pub struct OpSender {
    tx: mpsc::UnboundedSender<Op>,
}

impl OpSender {
    pub fn channel() -> (OpSender, mpsc::UnboundedReceiver<Op>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (OpSender { tx }, rx)
    }

    /// Sends an op; false when the agent has gone away.
    pub fn send(&self, op: Op) -> bool {
        self.tx.send(op).is_ok()
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
                match rx.recv().await {
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
}
