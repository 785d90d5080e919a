//! One request to the model: sent, streamed, retried, its usage counted and
//! its reply turned into the assistant message.

use super::*;

impl Agent {
    /// Sends the conversation and streams the reply onto the bus. A
    /// request that overflows the context window is sent again with old
    /// outputs left out; when nothing more can be, the turn stops with
    /// what the user can do.
    pub(super) async fn request(
        &mut self,
        round: u32,
        with_tools: bool,
        cancel: &CancellationToken,
    ) -> Result<Streamed, Stop> {
        // Rebuilt requests leave older turns out first: compaction is for
        // what is still too large after that.
        self.advance_rebuild();
        if self.wants_compaction() && !cancel.is_cancelled() {
            self.auto_compact(cancel).await;
        }
        let mut compacted_here = false;
        loop {
            match self.request_once(round, with_tools, cancel).await? {
                Sent::Reply(streamed) => return Ok(streamed),
                Sent::Overflow {
                    requested,
                    window,
                    body_bytes,
                    message,
                } if !compacted_here
                    && self.settings.compact_at > 0
                    && self.messages.len() >= self.compact_retry_at =>
                {
                    // The server says the window is full: compact first,
                    // leave outputs out only if that is not enough.
                    compacted_here = true;
                    tracing::info!(?requested, ?window, message, "overflow: compacting");
                    if let Some(r) = requested {
                        self.calibrate(body_bytes, r);
                    }
                    if self.context_window.is_none() {
                        self.context_window = window;
                    }
                    self.auto_compact(cancel).await;
                }
                Sent::Overflow {
                    requested,
                    window,
                    body_bytes,
                    message,
                } => match self.shed(requested, window, body_bytes) {
                    Some(what) => {
                        tracing::info!(what, "context overflow");
                        self.notice(Level::Warning, what);
                        self.publish_context();
                    }
                    None => {
                        self.bus.publish(AgentEvent::Context {
                            tokens: requested.unwrap_or_else(|| self.next_request_tokens()),
                        });
                        return Err(Stop::Outcome(
                            Outcome::Failed,
                            Some(window::advice(requested, window, &message)),
                        ));
                    }
                },
            }
        }
    }

    /// One request, as the conversation stands.
    pub(super) async fn request_once(
        &mut self,
        round: u32,
        with_tools: bool,
        cancel: &CancellationToken,
    ) -> Result<Sent, Stop> {
        self.advance_rebuild();
        let view = self.view();
        let body = llm::build_body(&self.chat_request(&view, with_tools));
        // Serialised once: measured here, sent as it is.
        let text = body.to_string();
        let body_bytes = text.len();
        let (as_compact, as_rebuild) =
            self.both_modes_given(&view, with_tools.then_some(body_bytes));
        drop(view);
        self.refresh_glance(Some((
            (body_bytes as f64 / self.bytes_per_token).round() as u64,
            (as_compact, as_rebuild),
        )));
        // The gauge counts the request being sent, not the last one.
        self.bus.publish(AgentEvent::Context {
            tokens: (body_bytes as f64 / self.bytes_per_token).round() as u64,
        });
        tracing::debug!(
            turn = self.turn,
            round,
            with_tools,
            bytes = body_bytes,
            "request"
        );
        let bus = self.bus.clone();
        let turn = self.turn;
        // A runaway reply is cut here rather than at max_tokens.
        let request_cancel = cancel.child_token();
        let ran_away: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        // The turn's own message: a reply that hands it back is cut too.
        let message = (self.turn_starts.last())
            .and_then(|&i| self.messages.get(i))
            .map(super::llm::types::Message::text)
            .unwrap_or("");
        let watch = self
            .harness_on()
            .then(|| harness::RunawayWatch::against(message));
        let live = Arc::new(std::sync::Mutex::new(progress::Live::new()));
        let shown_live = live.clone();
        let started = std::time::Instant::now();
        let (stop, flag, tracked) = (request_cancel.clone(), ran_away.clone(), live.clone());
        // The answer's text as it streamed: what the user saw is kept if
        // they cancel.
        let shown = Arc::new(std::sync::Mutex::new(String::new()));
        let seen = shown.clone();
        let mut on_event = relay(Relay {
            bus,
            turn,
            round,
            live: tracked,
            shown: seen,
            watch,
            ran_away: flag,
            stop,
        });
        let ticker = tokio::spawn(progress::watch(progress::Watch {
            client: self.client.clone(),
            bus: self.bus.clone(),
            live,
            turn,
            hidden_limit: self.harness_on().then_some(progress::HIDDEN_LIMIT),
            key: crate::llm::client::SlotKey::of(
                &body,
                (body_bytes as f64 / self.bytes_per_token) as u64,
            ),
            stop: request_cancel.clone(),
            ran_away: ran_away.clone(),
            follow: false,
        }));
        let result = self
            .client
            .stream_chat_text(text, &self.budget, &request_cancel, &mut on_event)
            .await;
        ticker.abort();
        // A cancel is a cancel, whatever the connection said as it closed.
        let result = match result {
            Err(e) if cancel.is_cancelled() && !matches!(e, LlmError::Cancelled) => {
                tracing::debug!(error = %e, "an error after the user cancelled");
                Err(LlmError::Cancelled)
            }
            other => other,
        };
        self.trace(&body, &result, started.elapsed().as_millis() as u64);
        let runaway = ran_away.lock().ok().and_then(|r| r.clone());
        // The log keeps each request's figures, and how a runaway ended.
        let (usage, first_token_ms) = match &result {
            Ok(s) => (s.reply.usage.unwrap_or_default(), s.first_token_ms),
            Err(_) => (
                Usage {
                    completion: shown_live.lock().map(|l| l.chunks()).unwrap_or(0),
                    ..Usage::default()
                },
                None,
            ),
        };
        if result.is_ok() || runaway.is_some() {
            self.conversation_requests += 1;
            self.log.append(&Record::Request {
                turn: self.turn,
                round,
                prompt: usage.prompt,
                cached: usage.cached,
                completion: usage.completion,
                first_token_ms,
                ms: started.elapsed().as_millis() as u64,
                stopped: runaway.clone(),
                as_compact: Some(as_compact),
                as_rebuild: Some(as_rebuild),
                bytes: Some(body_bytes as u64),
            })?;
        }
        self.sent(
            result,
            runaway,
            (cancel, &shown),
            body_bytes,
            (as_compact, as_rebuild),
        )
    }

    /// What a request came to: the reply, a window overflow, or why the
    /// turn stops (a runaway cut, a cancel that keeps what streamed, the
    /// budget, a bad reply, a refusal of the structured output).
    fn sent(
        &mut self,
        result: Result<Streamed, LlmError>,
        runaway: Option<String>,
        (cancel, shown): (&CancellationToken, &std::sync::Mutex<String>),
        body_bytes: usize,
        (as_compact, as_rebuild): (u64, u64),
    ) -> Result<Sent, Stop> {
        match result {
            Ok(streamed) => {
                self.record_usage(&streamed, Some((as_compact, as_rebuild)));
                if let Some(u) = streamed.reply.usage {
                    self.calibrate(body_bytes, u.prompt);
                }
                if let Some(how) = runaway {
                    // It finished before the cut landed: still a runaway.
                    return Err(Stop::Runaway(how));
                }
                Ok(Sent::Reply(streamed))
            }
            Err(LlmError::Overflow {
                requested,
                window,
                message,
            }) => Ok(Sent::Overflow {
                requested,
                window,
                body_bytes,
                message,
            }),
            Err(LlmError::Cancelled) if runaway.is_some() && !cancel.is_cancelled() => {
                Err(Stop::Runaway(runaway.unwrap_or_default()))
            }
            Err(LlmError::Cancelled) => {
                // What streamed before the cancel stays in the conversation
                // (and the log, the replay, a resume), marked as cut.
                let partial = shown.lock().map(|s| s.clone()).unwrap_or_default();
                if !partial.trim().is_empty() {
                    self.push(Message::assistant(format!(
                        "{}\n\n[cancelled by the user]",
                        partial.trim_end()
                    )))?;
                }
                Err(Stop::Outcome(Outcome::Cancelled, None))
            }
            Err(e @ LlmError::Budget(_)) => {
                Err(Stop::Outcome(Outcome::Budget, Some(e.to_string())))
            }
            Err(LlmError::BadReply(why)) => Err(Stop::BadReply(why)),
            Err(LlmError::Http { status, body })
                if self.structured.is_some() && (400..500).contains(&status) =>
            {
                Err(Stop::Outcome(
                    Outcome::Failed,
                    Some(structured::refused(&self.client.base_url(), status, &body)),
                ))
            }
            Err(e) => Err(Stop::Outcome(Outcome::Failed, Some(e.to_string()))),
        }
    }

    pub(super) fn record_usage(&mut self, streamed: &Streamed, modes: Option<(u64, u64)>) {
        let usage = streamed.reply.usage.unwrap_or_default();
        self.usage.add(&usage);
        self.check_budgets();
        self.bus.publish(AgentEvent::Usage {
            turn: self.turn,
            stats: RequestStats {
                usage,
                first_token_ms: streamed.first_token_ms,
                tokens_per_second: streamed.tokens_per_second(),
                modes,
            },
            // A request beside the conversation (`modes` None) says
            // nothing of how full it is.
            context_used: if modes.is_some() {
                usage.prompt + usage.completion
            } else {
                0
            },
        });
    }

    /// The assistant message of a reply, with a tool call the model wrote
    /// as text turned into a real one when the request offered tools
    /// (`tools_on`); else the call is left out of the answer, not run (an
    /// answer was asked for). Returns whether it was truncated.
    pub(super) fn assistant_message(
        &self,
        streamed: Streamed,
        round: u32,
        recover_code: bool,
        tools_on: bool,
    ) -> (Message, bool) {
        let reply = streamed.reply;
        let truncated = reply.truncated();
        let mut content = reply.content;
        let mut calls: Vec<ToolCall> = reply
            .calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone().unwrap_or_default(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        if calls.is_empty() && !truncated && !self.specs.is_empty() {
            let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_ref()).collect();
            if let Some(r) = recover::fenced_call(&content, &names) {
                if tools_on {
                    self.notice(
                        Level::Info,
                        format!(
                            "the model wrote a {} call as text; running it as a real call",
                            r.name
                        ),
                    );
                    calls.push(ToolCall {
                        id: format!("text_call_{}_{round}", self.turn),
                        name: r.name,
                        arguments: r.arguments,
                    });
                } else {
                    self.notice(
                        Level::Info,
                        format!(
                            "the model wrote a {} call as text where its answer was asked for; not run",
                            r.name
                        ),
                    );
                }
                content = r.remaining_text;
            }
        }
        if calls.is_empty()
            && !truncated
            && recover_code
            && self.specs.iter().any(|s| s.name == ToolName::WriteFile)
            && content.contains("```")
            && let Some(p) = recover::code_proposal(
                &content,
                &self.tools.read_files_now(),
                &self.tools.unread_sources(),
            )
        {
            self.tools.note_read(&p.path);
            // The change was printed instead of made: it becomes the call
            // the model should have sent, with its checks and approval.
            self.notice(
                Level::Info,
                format!(
                    "the model printed a new version of {} instead of writing it; proposing it as a change",
                    p.path
                ),
            );
            calls.push(ToolCall {
                id: format!("text_edit_{}_{round}", self.turn),
                name: ToolName::WriteFile.as_str().into(),
                arguments: serde_json::json!({"path": p.path, "content": p.content}).to_string(),
            });
        }
        // (An answer that is nothing but the echo is asked again as such.)
        if self.harness_on() && !harness::echoes_instruction(&content) {
            content = harness::without_echo(&content);
        }
        let msg = Message {
            role: Role::Assistant,
            content: (!content.is_empty()).then_some(content),
            reasoning: (!reply.reasoning.is_empty()).then_some(reply.reasoning),
            tool_calls: calls,
            tool_call_id: None,
            replay: reply.replay,
            images: Vec::new(),
        };
        (msg, truncated)
    }
}

/// What a request's stream feeds besides the reply.
struct Relay {
    bus: crate::bus::EventBus,
    turn: TurnId,
    round: u32,
    /// The status bar's figures.
    live: Arc<std::sync::Mutex<progress::Live>>,
    /// The answer's text as it streamed (kept if the user cancels).
    shown: Arc<std::sync::Mutex<String>>,
    /// The runaway guard (with the harness on).
    watch: Option<harness::RunawayWatch>,
    /// How a runaway was told, once.
    ran_away: Arc<std::sync::Mutex<Option<String>>>,
    /// Cancels the request (a runaway).
    stop: CancellationToken,
}

/// The stream's events onto the bus, with the figures, the text shown
/// and the runaway guard kept up to date.
fn relay(mut r: Relay) -> impl FnMut(ClientEvent) {
    let mut ids: HashMap<usize, String> = HashMap::new();
    move |ev: ClientEvent| {
        if let Ok(mut l) = r.live.lock() {
            l.on_event(&ev);
        }
        match &ev {
            ClientEvent::Attempt(_) => {
                if let Ok(mut s) = r.shown.lock() {
                    s.clear();
                }
            }
            ClientEvent::Delta(StreamDelta::Content(text)) => {
                if let Ok(mut s) = r.shown.lock() {
                    s.push_str(text);
                }
            }
            _ => {}
        }
        let streamed = match &ev {
            ClientEvent::Delta(StreamDelta::Content(text)) => Some((text, true)),
            ClientEvent::Delta(StreamDelta::ToolArgs { text, .. }) => Some((text, false)),
            _ => None,
        };
        if let (Some(w), Some((text, content))) = (r.watch.as_mut(), streamed)
            && let Some(how) = w.push(text, content)
        {
            if let Ok(mut f) = r.ran_away.lock() {
                f.get_or_insert_with(|| how.into());
            }
            r.stop.cancel();
        }
        r.bus.publish(agent_event(ev, (r.turn, r.round), &mut ids));
    }
}

/// What a client event is to the front ends: a request started, text,
/// reasoning, a tool call's start and arguments (by the id the stream
/// gave, `ids`), a retry or a fallback said.
fn agent_event(
    ev: ClientEvent,
    (turn, round): (TurnId, u32),
    ids: &mut HashMap<usize, String>,
) -> AgentEvent {
    match ev {
        ClientEvent::Attempt(attempt) => AgentEvent::RequestStarted {
            turn,
            round,
            attempt,
        },
        ClientEvent::Delta(StreamDelta::Content(text)) => AgentEvent::Token { turn, text },
        ClientEvent::Delta(StreamDelta::Reasoning(text)) => AgentEvent::Reasoning { turn, text },
        ClientEvent::Delta(StreamDelta::ToolStart { index, id, name }) => {
            let call_id = id.unwrap_or_else(|| format!("call_{index}"));
            ids.insert(index, call_id.clone());
            AgentEvent::ToolCallStarted {
                turn,
                call_id,
                name,
            }
        }
        ClientEvent::Delta(StreamDelta::ToolArgs { index, text }) => AgentEvent::ToolCallDelta {
            turn,
            call_id: ids
                .get(&index)
                .cloned()
                .unwrap_or_else(|| format!("call_{index}")),
            delta: text,
        },
        ClientEvent::Retrying { wait, reason } => AgentEvent::Notice {
            turn: Some(turn),
            level: Level::Warning,
            text: format!("{reason}; retrying in {:.1}s", wait.as_secs_f64()),
        },
        ClientEvent::FellBack { url } => AgentEvent::Notice {
            turn: Some(turn),
            level: Level::Info,
            text: format!("the server did not answer; using the fallback {url}"),
        },
        ClientEvent::Notice(text) => AgentEvent::Notice {
            turn: Some(turn),
            level: Level::Warning,
            text,
        },
    }
}
