//! How a request in flight is going, told about once a second: tokens so
//! far and their rate, or how far the server is through the prompt. A
//! llama-server on this machine is asked (`/slots`) whenever the stream
//! goes quiet, because it generates tokens it never streams — a small
//! model that writes thousands of tokens of whitespace around a tool call
//! shows nothing for minutes. With the harness on, such a hidden runaway
//! is stopped like a visible one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::llm::client::{SlotKey, SlotView};
use crate::llm::{ClientEvent, LlmClient, StreamDelta};
use crate::protocol::{AgentEvent, TurnId};

/// Generated tokens the server may keep to itself before the reply counts
/// as a runaway. A tool call's own syntax is a few dozen.
pub(super) const HIDDEN_LIMIT: u64 = 1000;
/// How long the stream must be quiet before the server is asked.
const QUIET: Duration = Duration::from_secs(2);
const TICK: Duration = Duration::from_secs(1);

/// What the stream has shown of the current attempt.
#[derive(Debug)]
pub(super) struct Live {
    /// Streamed pieces (about one token each on a local server).
    chunks: u64,
    last: Instant,
}

impl Live {
    pub(super) fn new() -> Live {
        Live {
            chunks: 0,
            last: Instant::now(),
        }
    }

    pub(super) fn chunks(&self) -> u64 {
        self.chunks
    }

    pub(super) fn on_event(&mut self, ev: &ClientEvent) {
        match ev {
            ClientEvent::Attempt(_) => *self = Live::new(),
            ClientEvent::Delta(
                StreamDelta::Content(_)
                | StreamDelta::Reasoning(_)
                | StreamDelta::ToolArgs { .. }
                | StreamDelta::ToolStart { .. },
            ) => {
                self.chunks += 1;
                self.last = Instant::now();
            }
            _ => {}
        }
    }
}

pub(super) struct Watch {
    pub client: Arc<LlmClient>,
    pub bus: EventBus,
    pub live: Arc<Mutex<Live>>,
    pub turn: TurnId,
    /// None: a hidden runaway is told, not stopped.
    pub hidden_limit: Option<u64>,
    /// What tells this request's slot from another client's; its prompt
    /// estimate is the total the server's count of tokens read is shown
    /// against (its own total grows as it reads).
    pub key: SlotKey,
    pub stop: CancellationToken,
    pub ran_away: Arc<Mutex<Option<String>>>,
    /// A helper's requests, one after another: the slot is found afresh
    /// each time, not kept by the first one's task id.
    pub follow: bool,
}

/// Runs beside a request until it is aborted.
pub(super) async fn watch(w: Watch) {
    let mut tick = tokio::time::interval(TICK);
    tick.tick().await;
    // When tokens were first seen, and how many there were then.
    let mut since: Option<(Instant, u64)> = None;
    // The server's task id of this request, once its slot is found.
    let mut task = None;
    loop {
        tick.tick().await;
        let (chunks, quiet) = match w.live.lock() {
            Ok(l) => (l.chunks, l.last.elapsed() >= QUIET),
            Err(_) => return,
        };
        let before = task;
        if w.follow {
            task = None;
        }
        let view = if quiet {
            w.client.slot_progress(&w.key, &mut task).await
        } else {
            SlotView::Unknown
        };
        if w.follow && task.is_some() && task != before {
            // The helper's next request: its rate starts again.
            since = None;
        }
        let slot = match view {
            SlotView::Ours(s) => Some(s),
            _ => None,
        };
        // Only this request's tokens count: another client's slot is
        // neither shown nor held against the runaway limit.
        let tokens = chunks.max(slot.map_or(0, |s| s.decoded));
        let queued = tokens == 0 && view == SlotView::Another;
        let prompt = slot.filter(|_| tokens == 0).map(|s| {
            let all = s.prompt_tokens.max(w.key.prompt_estimate);
            (s.prompt_done.min(all), all)
        });
        let now = Instant::now();
        let tokens_per_second = match since {
            None => {
                if tokens > 0 {
                    since = Some((now, tokens));
                }
                None
            }
            Some((at, from)) => {
                let secs = now.duration_since(at).as_secs_f64();
                (secs >= 1.0).then(|| (tokens.saturating_sub(from)) as f64 / secs)
            }
        };
        w.bus.publish(AgentEvent::Generating {
            turn: w.turn,
            tokens,
            tokens_per_second,
            prompt,
            queued,
        });
        if let (Some(limit), Some(s)) = (w.hidden_limit, slot)
            && s.decoded >= chunks + limit
        {
            if let Ok(mut r) = w.ran_away.lock() {
                r.get_or_insert_with(|| {
                    format!(
                        "the server generated {} tokens and streamed {chunks} of them",
                        s.decoded
                    )
                });
            }
            w.stop.cancel();
            return;
        }
    }
}

/// What tells a helper's requests on the server: nothing but being
/// busy (its prompts, caps and temperatures are its own).
fn helper_key(probe: &serde_json::Value) -> SlotKey {
    let mut key = SlotKey::of(probe, 0);
    key.max_tokens = None;
    key.temperature = None;
    key
}

impl super::Agent {
    /// While a helper (`task`, `ask_agent`) works, the server's progress
    /// on its requests, in the status bar as a turn's own: any busy slot
    /// is taken for the helper's. Its own requests beside its
    /// conversation (checks, candidates) go at other temperatures than
    /// the session's, and were shown as "server busy with another
    /// request" (a trial's reviewer helper). Abort the handle when the
    /// call ends.
    pub(super) fn watch_helper(&self) -> tokio::task::JoinHandle<()> {
        let probe = crate::llm::build_body(&crate::llm::ChatRequest {
            model: &self.model,
            messages: &[],
            tools: &[],
            sampling: &self.settings.sampling,
            max_tokens: None,
            replay_reasoning: false,
            response_format: None,
        });
        let key = helper_key(&probe);
        let live = Arc::new(Mutex::new(Live::new()));
        tokio::spawn(watch(Watch {
            client: self.client.clone(),
            bus: self.bus.clone(),
            live,
            turn: self.turn,
            hidden_limit: None,
            key,
            stop: CancellationToken::new(),
            ran_away: Arc::new(Mutex::new(None)),
            follow: true,
        }))
    }

    /// A request beside the conversation (a candidate, a check, the
    /// summary of a compaction, a commit message), streamed with the
    /// progress a turn's request shows: tokens and their rate, how far
    /// the server is through the prompt, a retry's wait.
    pub(super) async fn stream_watched(
        &self,
        body: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<crate::llm::Streamed, crate::llm::LlmError> {
        self.stream_watched_on(self.client.clone(), body, cancel)
            .await
    }

    /// A housekeeping request (a summary, a commit message, a title): to
    /// `auxUrl`'s server when there is one, watched the same way.
    pub(super) async fn stream_aux(
        &self,
        body: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<crate::llm::Streamed, crate::llm::LlmError> {
        let client = self.aux.clone().unwrap_or_else(|| self.client.clone());
        self.stream_watched_on(client, body, cancel).await
    }

    /// The model that answers housekeeping requests.
    pub(super) fn aux_model(&self) -> String {
        self.settings
            .aux_model
            .clone()
            .unwrap_or_else(|| self.model.clone())
    }

    async fn stream_watched_on(
        &self,
        client: Arc<crate::llm::LlmClient>,
        body: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<crate::llm::Streamed, crate::llm::LlmError> {
        let live = Arc::new(Mutex::new(Live::new()));
        let tracked = live.clone();
        let bus = self.bus.clone();
        let turn = self.turn;
        let mut on_event = move |ev: ClientEvent| {
            if let Ok(mut l) = tracked.lock() {
                l.on_event(&ev);
            }
            if let ClientEvent::Retrying { wait, reason } = ev {
                bus.publish(AgentEvent::Notice {
                    turn: Some(turn),
                    level: crate::protocol::Level::Warning,
                    text: format!("{reason}; retrying in {:.1}s", wait.as_secs_f64()),
                });
            }
        };
        let stop = cancel.child_token();
        let estimate = (body.to_string().len() as f64 / self.bytes_per_token) as u64;
        let ticker = tokio::spawn(watch(Watch {
            client: client.clone(),
            bus: self.bus.clone(),
            live,
            turn,
            hidden_limit: None,
            key: SlotKey::of(body, estimate),
            stop: stop.clone(),
            ran_away: Arc::new(Mutex::new(None)),
            follow: false,
        }));
        let result = client
            .stream_chat(body, &self.budget, &stop, &mut on_event)
            .await;
        ticker.abort();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::client::SlotView;

    /// A helper's check request at temperature 0 is the helper's, not
    /// another client's (a trial's bar said "server busy" for it).
    #[test]
    fn a_helpers_request_at_any_temperature_is_the_helpers() {
        let key = helper_key(&serde_json::json!({"temperature": 0.2, "max_tokens": 4096}));
        let slot = serde_json::json!({"id": 0, "id_task": 5, "is_processing": true,
            "n_prompt_tokens": 300, "n_prompt_tokens_processed": 100,
            "params": {"n_predict": 300, "temperature": 0.0},
            "next_token": [{"n_decoded": 0}]});
        assert!(matches!(key.find(&[slot], &mut None), SlotView::Ours(_)));
    }
}
