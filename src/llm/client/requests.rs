//! The client's requests: one streamed chat request with its retries, what
//! the server says of its window and slots, and the progress of a request
//! the server is reading.

use super::*;

impl LlmClient {
    pub fn new(opts: ClientOptions) -> Result<Self, LlmError> {
        let loopback = reqwest::Url::parse(&opts.base_url)
            .ok()
            .and_then(|u| u.host_str().map(provider::is_loopback_host))
            .unwrap_or(false);
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("mm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        if loopback {
            // A local server closes kept-alive connections when it likes
            // (llama-server after 5 s idle, and sometimes sooner): a send
            // on one being closed failed with "connection closed before
            // message completed" and cost a retry a second later, a dozen
            // times in a run. A new connection to the loopback costs
            // microseconds, so none is kept.
            builder = builder.no_proxy().pool_max_idle_per_host(0);
        }
        // Plain http everywhere (a local server): no TLS will be spoken, so
        // the system's certificates (hundreds of files) are not read.
        let plain = |u: &str| u.trim_start().to_ascii_lowercase().starts_with("http://");
        if plain(&opts.base_url) && opts.fallback.as_deref().is_none_or(plain) {
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| LlmError::Connect {
            url: opts.base_url.clone(),
            detail: e.to_string(),
        })?;
        Ok(Self {
            http,
            api: opts.api,
            base_url: Mutex::new(opts.base_url),
            fallback: Mutex::new(opts.fallback),
            api_key: opts.api_key,
            first_token_timeout: opts.first_token_timeout,
            watchdog: opts.watchdog,
            slots: std::sync::atomic::AtomicBool::new(loopback),
            vision: tokio::sync::OnceCell::new(),
        })
    }

    /// The wire format requests go out in.
    pub fn api(&self) -> provider::Api {
        self.api
    }

    /// A request's key, as its API wants it: `x-api-key` with a version
    /// for Anthropic's, a bearer token for the others.
    fn authorized(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.api == provider::Api::Messages {
            req = req.header("anthropic-version", crate::llm::anthropic::VERSION);
            if let Some(key) = &self.api_key {
                req = req.header("x-api-key", key);
            }
        } else if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        req
    }

    /// The path and body a chat-completions body goes out as.
    fn wire(&self, body: &str) -> (&'static str, String) {
        let parsed = || serde_json::from_str::<Value>(body).unwrap_or(Value::Null);
        match self.api {
            provider::Api::Chat
                if body.contains("\"mm_replay\"") || body.contains(crate::llm::images::SCHEME) =>
            {
                // Items kept for a native API: a chat server is not sent
                // them. Images go in as data URLs.
                let mut v = parsed();
                for m in v["messages"].as_array_mut().into_iter().flatten() {
                    if let Some(o) = m.as_object_mut() {
                        o.remove("mm_replay");
                    }
                }
                crate::llm::images::fill(&mut v);
                ("chat/completions", v.to_string())
            }
            provider::Api::Chat => ("chat/completions", body.to_string()),
            api @ provider::Api::Messages => (
                "messages",
                crate::llm::native_body(api, &parsed()).to_string(),
            ),
            api @ provider::Api::Responses => (
                "responses",
                crate::llm::native_body(api, &parsed()).to_string(),
            ),
        }
    }

    pub fn base_url(&self) -> String {
        self.base_url.lock().map(|u| u.clone()).unwrap_or_default()
    }

    /// Sends one chat-completions request and streams the reply, retrying
    /// connect errors, 429 and 5xx only while nothing has been shown.
    pub async fn stream_chat(
        &self,
        body: &Value,
        budget: &RequestBudget,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Streamed, LlmError> {
        self.stream_chat_text(body.to_string(), budget, cancel, on_event)
            .await
    }

    /// `stream_chat` of a body already serialised (the agent measured it):
    /// sent as it is, on every attempt, never serialised again.
    pub async fn stream_chat_text(
        &self,
        body: String,
        budget: &RequestBudget,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Streamed, LlmError> {
        let body = body.as_str();
        let mut attempt = 0;
        loop {
            attempt += 1;
            budget.take()?;
            on_event(ClientEvent::Attempt(attempt));
            let reason = match self.attempt(body, cancel, on_event).await? {
                Attempt::Done(s) => return Ok(s),
                Attempt::Retry(reason, after) if attempt < MAX_ATTEMPTS => {
                    let wait = after.unwrap_or(Duration::from_millis(500 << attempt));
                    if wait > MAX_RETRY_WAIT {
                        return Err(LlmError::Http {
                            status: 429,
                            body: format!("{reason}; the server asks to wait {wait:?}"),
                        });
                    }
                    on_event(ClientEvent::Retrying {
                        wait,
                        reason: reason.clone(),
                    });
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                        _ = tokio::time::sleep(wait) => {}
                    }
                    continue;
                }
                Attempt::Retry(reason, _) => reason,
            };
            return Err(LlmError::Connect {
                url: self.base_url(),
                detail: format!("{reason} (gave up after {MAX_ATTEMPTS} attempts)"),
            });
        }
    }

    pub(super) async fn attempt(
        &self,
        body: &str,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Attempt, LlmError> {
        let started = Instant::now();
        let send = self.send_with_fallback(body, on_event);
        let resp = tokio::select! {
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            r = tokio::time::timeout(self.first_token_timeout, send) => match r {
                Err(_) => return Err(LlmError::FirstToken(self.first_token_timeout)),
                Ok(Err(SendError::Retry(reason))) => return Ok(Attempt::Retry(reason, None)),
                Ok(Err(SendError::Fatal(e))) => return Err(e),
                Ok(Ok(resp)) => resp,
            }
        };
        if !resp.status().is_success() {
            return failed_status(resp).await;
        }
        let is_json = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.contains("json"));
        if is_json && self.api != provider::Api::Chat {
            let bytes = read_capped(resp).await?;
            return Err(LlmError::Http {
                status: 200,
                body: format!(
                    "not a {} event stream: {}",
                    self.api.name(),
                    error_message(&String::from_utf8_lossy(&bytes))
                ),
            });
        }
        if is_json {
            // Not a stream: a server that ignored `stream` (its answer is
            // whole), or an error in a 200. Either way, asking again would
            // get the same.
            return self.whole_reply(resp, started).await;
        }
        let mut total = 0usize;
        let over = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = over.clone();
        let mut events = resp
            .bytes_stream()
            .take_while(move |chunk| {
                if let Ok(b) = chunk {
                    total += b.len();
                    if total > MAX_REPLY_BYTES {
                        flag.store(true, Ordering::SeqCst);
                        return std::future::ready(false);
                    }
                }
                std::future::ready(true)
            })
            .flat_map(|chunk| futures::stream::iter(by_lines(chunk)))
            .eventsource();
        let mut asm = Assembler::new();
        let mut native = Native::of(self.api);
        let mut first_token_ms = None;
        loop {
            let limit = match first_token_ms {
                Some(_) => self.watchdog,
                None => self.first_token_timeout.saturating_sub(started.elapsed()),
            };
            let next = tokio::select! {
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                n = tokio::time::timeout(limit, events.next()) => n,
            };
            let item = match next {
                Err(_) if first_token_ms.is_some() => return Err(LlmError::Stalled(self.watchdog)),
                Err(_) => return Err(LlmError::FirstToken(self.first_token_timeout)),
                Ok(None) => break,
                Ok(Some(Err(EventStreamError::Transport(e)))) if first_token_ms.is_none() => {
                    return Ok(Attempt::Retry(format!("stream error: {e}"), None));
                }
                // Bytes that are not UTF-8 or not SSE come the same way
                // every time: not retried.
                Ok(Some(Err(e @ (EventStreamError::Utf8(_) | EventStreamError::Parser(_))))) => {
                    return Err(LlmError::Stream(StreamError::BadChunk(e.to_string())));
                }
                Ok(Some(Err(e))) => return Err(LlmError::Cut(e.to_string())),
                Ok(Some(Ok(ev))) => ev,
            };
            let server_error = |e: StreamError| match e {
                StreamError::Server(m) => {
                    bad_reply_of(&m).unwrap_or(LlmError::Stream(StreamError::Server(m)))
                }
                other => LlmError::Stream(other),
            };
            let chunks = native.translate(item.data).map_err(server_error)?;
            let mut done = false;
            for data in chunks {
                let deltas = asm.push(&data).map_err(server_error)?;
                for delta in deltas {
                    if first_token_ms.is_none() {
                        first_token_ms = Some(started.elapsed().as_millis() as u64);
                    }
                    on_event(ClientEvent::Delta(delta));
                }
                done |= data.trim() == "[DONE]";
            }
            if done {
                break;
            }
        }
        if over.load(Ordering::SeqCst) {
            return Err(LlmError::TooBig);
        }
        let reply = asm.finish();
        if !reply.is_complete() {
            if first_token_ms.is_none() {
                return Ok(Attempt::Retry("the stream ended empty".into(), None));
            }
            return Err(LlmError::Cut(
                "no finish_reason and no [DONE] before the connection closed".into(),
            ));
        }
        Ok(Attempt::Done(Streamed {
            reply,
            first_token_ms,
            elapsed_ms: started.elapsed().as_millis() as u64,
            streamed: true,
        }))
    }

    /// A `200` with a JSON body instead of a stream: a whole chat
    /// completion becomes the reply; anything else is the server's error.
    pub(super) async fn whole_reply(
        &self,
        resp: reqwest::Response,
        started: Instant,
    ) -> Result<Attempt, LlmError> {
        let bytes = read_capped(resp).await?;
        let text = String::from_utf8_lossy(&bytes);
        match crate::llm::stream::whole_completion(&text) {
            Some(reply) => Ok(Attempt::Done(Streamed {
                reply,
                first_token_ms: Some(started.elapsed().as_millis() as u64),
                elapsed_ms: started.elapsed().as_millis() as u64,
                streamed: false,
            })),
            None => Err(LlmError::Http {
                status: 200,
                body: format!("not a chat completion stream: {}", error_message(&text)),
            }),
        }
    }

    /// POSTs to the active endpoint; on a connect error, switches once to
    /// the fallback (when it is allowed) and tries there.
    pub(super) async fn send_with_fallback(
        &self,
        body: &str,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<reqwest::Response, SendError> {
        loop {
            let base = self.base_url();
            match self.post(&base, body).await {
                Ok(resp) => return Ok(resp),
                Err(e) if e.is_connect() => {
                    let fallback = self.fallback.lock().ok().and_then(|mut f| f.take());
                    if let Some(url) = fallback {
                        // Checked with the config (plain http to a public
                        // host only when allowInsecureHttp said so).
                        match provider::check_url(&url, true) {
                            Ok(()) => {
                                if let Ok(mut b) = self.base_url.lock() {
                                    *b = url.trim_end_matches('/').to_string();
                                }
                                on_event(ClientEvent::FellBack { url });
                                continue;
                            }
                            Err(why) => {
                                on_event(ClientEvent::Notice(format!("fallback not tried: {why}")));
                            }
                        }
                    }
                    return Err(SendError::Retry(format!(
                        "cannot connect to {base}: {}",
                        root_cause(&e)
                    )));
                }
                Err(e) if e.is_timeout() => {
                    return Err(SendError::Retry(format!("timeout: {}", root_cause(&e))));
                }
                // The server closed a kept-alive connection just as mm sent
                // on it (llama-server drops idle ones after 5 s, and a tool
                // run is longer): nothing reached it, so it is sent again.
                Err(e) if e.is_request() && closed_early(&e) => {
                    return Err(SendError::Retry(format!(
                        "the connection closed: {}",
                        root_cause(&e)
                    )));
                }
                Err(e) => {
                    return Err(SendError::Fatal(LlmError::Connect {
                        url: base,
                        detail: root_cause(&e),
                    }));
                }
            }
        }
    }

    pub(super) async fn post(
        &self,
        base: &str,
        body: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let (path, body) = self.wire(body);
        let req = self
            .http
            .post(format!("{base}/{path}"))
            .header("Accept", "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        self.authorized(req).send().await
    }

    /// The model ids the server lists (`GET /models`).
    pub async fn list_models(&self, timeout: Duration) -> Result<Vec<String>, LlmError> {
        let base = self.base_url();
        let v = self.get_json(&format!("{base}/models"), timeout).await?;
        let ids = v
            .get("data")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(ids)
    }

    /// The context window a llama-server reports at `/props`.
    pub async fn server_context_window(&self, timeout: Duration) -> Option<u64> {
        let base = self.base_url();
        let root = base.strip_suffix("/v1").unwrap_or(&base);
        let v = self
            .get_json(&format!("{root}/props"), timeout)
            .await
            .ok()?;
        v.pointer("/default_generation_settings/n_ctx")
            .or_else(|| v.get("n_ctx"))
            .and_then(Value::as_u64)
    }

    /// The window Ollama serves `model` with: `/api/ps` for a loaded
    /// model (its `context_length`), else `/api/show`'s `num_ctx`
    /// parameter; else Ollama's default, at most the model's own length.
    /// Ollama's OpenAI endpoint ignores a `num_ctx` in the request, so
    /// this is the window mm must keep under: past it, Ollama drops the
    /// oldest messages without a word.
    pub async fn ollama_window(&self, model: &str, timeout: Duration) -> Option<WindowProbe> {
        let root = self.server_root();
        let same = |m: &Value| {
            ["name", "model"]
                .iter()
                .filter_map(|k| m.get(k).and_then(Value::as_str))
                .any(|n| n == model || n.strip_suffix(":latest") == Some(model))
        };
        if let Ok(ps) = self.get_json(&format!("{root}/api/ps"), timeout).await
            && let Some(n) = ps
                .get("models")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|m| same(m)))
                .and_then(|m| m.get("context_length"))
                .and_then(Value::as_u64)
        {
            return Some(WindowProbe::new(n, "Ollama /api/ps"));
        }
        let show = self
            .post_json(
                &format!("{root}/api/show"),
                &serde_json::json!({ "model": model }),
                timeout,
            )
            .await
            .ok()?;
        let param = show
            .get("parameters")
            .and_then(Value::as_str)
            .and_then(|p| {
                p.lines().find_map(|l| {
                    let mut w = l.split_whitespace();
                    (w.next() == Some("num_ctx"))
                        .then(|| w.next().and_then(|n| n.parse::<u64>().ok()))
                        .flatten()
                })
            });
        if let Some(n) = param {
            return Some(WindowProbe::new(n, "Ollama /api/show num_ctx"));
        }
        let trained = show
            .get("model_info")
            .and_then(Value::as_object)
            .and_then(|info| {
                info.iter()
                    .find(|(k, _)| k.ends_with(".context_length"))
                    .and_then(|(_, v)| v.as_u64())
            });
        let n = trained.map_or(OLLAMA_DEFAULT_CTX, |t| t.min(OLLAMA_DEFAULT_CTX));
        Some(WindowProbe {
            tokens: n,
            source: "Ollama's default",
            assumed: true,
        })
    }

    /// vLLM's `max_model_len` for `model`, from `/v1/models`.
    pub async fn vllm_window(&self, model: &str, timeout: Duration) -> Option<WindowProbe> {
        let base = self.base_url();
        let v = self
            .get_json(&format!("{base}/models"), timeout)
            .await
            .ok()?;
        let list = v.get("data").and_then(Value::as_array)?;
        let entry = list
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
            .or(list.first())?;
        let n = entry.get("max_model_len").and_then(Value::as_u64)?;
        Some(WindowProbe::new(n, "vLLM max_model_len"))
    }

    /// LM Studio's window for `model`, from `/api/v0/models`: the loaded
    /// context length, else the model's largest.
    pub async fn lmstudio_window(&self, model: &str, timeout: Duration) -> Option<WindowProbe> {
        let root = self.server_root();
        let v = self
            .get_json(&format!("{root}/api/v0/models"), timeout)
            .await
            .ok()?;
        let entry = v
            .get("data")
            .and_then(Value::as_array)?
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
        if let Some(n) = entry.get("loaded_context_length").and_then(Value::as_u64) {
            return Some(WindowProbe::new(n, "LM Studio loaded_context_length"));
        }
        let n = entry.get("max_context_length").and_then(Value::as_u64)?;
        Some(WindowProbe::new(n, "LM Studio max_context_length"))
    }

    /// The server's address without the `/v1` of its OpenAI endpoint.
    /// Gemini's window for `model`, from its native models API (the
    /// OpenAI-compatible one does not say): `inputTokenLimit`.
    pub async fn gemini_window(&self, model: &str, timeout: Duration) -> Option<WindowProbe> {
        let base = self.base_url();
        let root = base.trim_end_matches('/').trim_end_matches("/openai");
        let url = format!("{root}/models/{}", model.trim_start_matches("models/"));
        let mut req = self.http.get(&url).timeout(timeout);
        if let Some(key) = &self.api_key {
            req = req.header("x-goog-api-key", key);
        }
        let v = Self::json_of(&url, req).await.ok()?;
        v["inputTokenLimit"]
            .as_u64()
            .filter(|n| *n > 0)
            .map(|n| WindowProbe::new(n, "Gemini models API"))
    }

    /// Whether `model` takes images, as a server on this machine says:
    /// llama-server's `/props` (`modalities.vision`), Ollama's
    /// `/api/show` (`capabilities`). None when it does not say (a hosted
    /// API: the request is sent, and its refusal said). Asked once.
    pub async fn vision(&self, model: &str) -> Option<bool> {
        *self
            .vision
            .get_or_init(|| async {
                let local = reqwest::Url::parse(&self.base_url())
                    .ok()
                    .and_then(|u| {
                        u.host_str()
                            .map(|h| provider::is_loopback_host(h) || provider::is_private_host(h))
                    })
                    .unwrap_or(false);
                if !local {
                    return None;
                }
                let root = self.server_root();
                let timeout = Duration::from_secs(5);
                if let Ok(props) = self.get_json(&format!("{root}/props"), timeout).await
                    && let Some(v) = props["modalities"]["vision"].as_bool()
                {
                    return Some(v);
                }
                let show = self
                    .post_json(
                        &format!("{root}/api/show"),
                        &serde_json::json!({ "model": model }),
                        timeout,
                    )
                    .await
                    .ok()?;
                let caps = show["capabilities"].as_array()?;
                Some(caps.iter().any(|c| c == "vision"))
            })
            .await
    }

    /// How many tokens `text` is, as a local llama.cpp server counts them
    /// (`/tokenize`); None from any other server or when it cannot say.
    pub async fn count_tokens(&self, text: &str) -> Option<u64> {
        let local = reqwest::Url::parse(&self.base_url())
            .ok()
            .and_then(|u| u.host_str().map(provider::is_loopback_host))
            .unwrap_or(false);
        if !local {
            return None;
        }
        let url = format!("{}/tokenize", self.server_root());
        let got = self
            .post_json(
                &url,
                &serde_json::json!({ "content": text }),
                Duration::from_secs(5),
            )
            .await
            .ok()?;
        got["tokens"].as_array().map(|t| t.len() as u64)
    }

    pub(super) fn server_root(&self) -> String {
        let base = self.base_url();
        base.strip_suffix("/v1").unwrap_or(&base).to_string()
    }

    pub(super) async fn post_json(
        &self,
        url: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        let req = self.http.post(url).timeout(timeout).json(body);
        Self::json_of(url, self.authorized(req)).await
    }

    /// How this request is going, from a llama-server's `/slots`: prompt
    /// tokens read and tokens generated, including those it does not
    /// stream (a tool call's syntax, or whatever a model writes around
    /// it). A slot is taken for ours only when it matches the request (its
    /// prompt size near the estimate, the same token cap and temperature),
    /// and after that by its task id; a busy slot that is not ours says the
    /// server is working for another client. Unknown for a server that is
    /// not on this machine, has no `/slots`, or where more than one slot
    /// could be ours; a server that answers anything but a list of slots
    /// is not asked again.
    pub async fn slot_progress(&self, key: &SlotKey, task: &mut Option<u64>) -> SlotView {
        if !self.slots.load(Ordering::Relaxed) {
            return SlotView::Unknown;
        }
        let base = self.base_url();
        let root = base.strip_suffix("/v1").unwrap_or(&base);
        let v = match self
            .get_json(&format!("{root}/slots"), Duration::from_millis(800))
            .await
        {
            Ok(Value::Array(slots)) => slots,
            Ok(_) | Err(LlmError::Http { .. }) => {
                self.slots.store(false, Ordering::Relaxed);
                return SlotView::Unknown;
            }
            Err(_) => return SlotView::Unknown,
        };
        key.find(&v, task)
    }

    pub(super) async fn get_json(&self, url: &str, timeout: Duration) -> Result<Value, LlmError> {
        let req = self.http.get(url).timeout(timeout);
        Self::json_of(url, self.authorized(req)).await
    }

    pub(super) async fn json_of(
        url: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<Value, LlmError> {
        let resp = req.send().await.map_err(|e| LlmError::Connect {
            url: url.to_string(),
            detail: root_cause(&e),
        })?;
        let status = resp.status();
        let text = String::from_utf8_lossy(&read_capped(resp).await?).into_owned();
        if !status.is_success() {
            return Err(LlmError::Http {
                status: status.as_u16(),
                body: error_message(&text),
            });
        }
        serde_json::from_str(&text).map_err(|e| LlmError::Http {
            status: status.as_u16(),
            body: format!("not JSON: {e}"),
        })
    }
}

/// A reply whose status is no success: a window overflow or a bad request
/// said in its body is that error (an older llama-server says so with a
/// 500); a 429 or a 5xx is tried again; anything else is the HTTP error.
/// A native API's event stream, translated to chat-completions chunks.
enum Native {
    Chat,
    Messages(crate::llm::anthropic::Events),
    Responses(crate::llm::responses::Events),
}

impl Native {
    fn of(api: provider::Api) -> Native {
        match api {
            provider::Api::Chat => Native::Chat,
            provider::Api::Messages => Native::Messages(Default::default()),
            provider::Api::Responses => Native::Responses(Default::default()),
        }
    }

    fn translate(&mut self, data: String) -> Result<Vec<String>, StreamError> {
        match self {
            Native::Chat => Ok(vec![data]),
            Native::Messages(ev) => ev.push(&data),
            Native::Responses(ev) => ev.push(&data),
        }
    }
}

async fn failed_status(resp: reqwest::Response) -> Result<Attempt, LlmError> {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        let text = body_text(resp).await;
        return Err(LlmError::Http {
            status: status.as_u16(),
            body: error_message(&text),
        });
    }
    let after = retry_after(&resp);
    let text = body_text(resp).await;
    // Checked first: sending the same request again cannot help.
    if let Some(e) = overflow_of(&text) {
        return Err(e);
    }
    if let Some(e) = bad_reply_of(&text) {
        return Err(e);
    }
    if status.as_u16() != 429 && !status.is_server_error() {
        return Err(LlmError::Http {
            status: status.as_u16(),
            body: error_message(&text),
        });
    }
    Ok(Attempt::Retry(
        format!("server answered {}{}", status.as_u16(), short_body(&text)),
        after,
    ))
}
