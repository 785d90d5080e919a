//! Finding the model server and the model before the first turn: the
//! configured endpoint (or its fallback), or, when nothing was configured,
//! a llama-server on 127.0.0.1:8080 and then Ollama on 127.0.0.1:11434.

use std::sync::Arc;
use std::time::Duration;

use crate::config::{ProviderKind, Settings, provider};
use crate::llm::client::WindowProbe;
use crate::llm::{ClientOptions, LlmClient, LlmError};

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
const AUTO_ENDPOINTS: &[(&str, &str)] = &[
    ("local", "http://127.0.0.1:8080/v1"),
    ("ollama", "http://127.0.0.1:11434/v1"),
];

/// Where auto-detection looks: llama-server, then Ollama.
/// `MM_LOCAL_ENDPOINTS` (comma-separated base URLs, in the same roles)
/// replaces them, for machines that use other ports.
fn auto_endpoints() -> Vec<(&'static str, String)> {
    match std::env::var("MM_LOCAL_ENDPOINTS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .enumerate()
            .map(|(i, url)| {
                (
                    if i == 1 { "ollama" } else { "local" },
                    url.trim_end_matches('/').to_string(),
                )
            })
            .collect(),
        _ => AUTO_ENDPOINTS
            .iter()
            .map(|(n, u)| (*n, u.to_string()))
            .collect(),
    }
}

/// The paragraph a new user reads when no server answers.
pub const NO_SERVER_HELP: &str = "Three ways to get a model:
  1. `scripts/setup` in the mm repository: builds llama-server, fetches a small model (1.1 GB) and serves it on 127.0.0.1:8080, where mm looks first.
  2. Ollama: `ollama serve`, then `ollama pull qwen2.5-coder:7b` (`:1.5b` on a machine without a GPU); mm finds it on 127.0.0.1:11434.
  3. An API key: `OPENAI_API_KEY=... mm -provider openai -m gpt-4.1-mini` (deepseek and openrouter work the same way).
Another server (LM Studio, vLLM, a remote machine): `mm -provider lmstudio`, or `mm -url http://HOST:PORT/v1`.
Then `mm doctor` checks the whole setup.";

/// Why mm cannot start talking to a model. The words are the user's next
/// step.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Client(#[from] LlmError),
    #[error("the server at {0} lists no model; load one or set `model:` / -model")]
    NoModel(String),
    #[error(
        "cannot reach the model server at {0}: is it running? (start it, or point mm elsewhere with -url or baseUrl:)"
    )]
    Unreachable(String),
    #[error("the server at {url} did not list its models ({error}); set `model:` or -model")]
    Models { url: String, error: LlmError },
    /// Auto-detection found nothing where it looked (said): the
    /// paragraph a new user reads.
    #[error(
        "could not reach a model server: nothing answered on {0}, and no config names another.\n\n{NO_SERVER_HELP}"
    )]
    NoServer(String),
}

/// A client with a model, ready for the first request.
pub struct Connected {
    pub client: Arc<LlmClient>,
    pub model: String,
    pub context_window: Option<u64>,
    /// Said once at start: the window is small, and how to get more.
    pub window_note: Option<String>,
    /// Said once at start: the server does not list the model asked for.
    pub model_note: Option<String>,
}

fn client_for(
    settings: &Settings,
    base_url: &str,
    fallback: Option<String>,
) -> Result<LlmClient, LlmError> {
    // The key goes to the server, never to a command's environment, under
    // whatever name the user keeps it.
    if let Some(key) = &settings.api_key {
        crate::sandbox::env::mark_secret(key);
    }
    LlmClient::new(ClientOptions {
        base_url: base_url.to_string(),
        api: settings.api,
        fallback,
        api_key: settings.api_key.clone(),
        first_token_timeout: settings.first_token_timeout,
        watchdog: settings.watchdog,
    })
}

/// Connects as the settings say; may update `settings` (provider and base
/// URL found by auto-detection).
pub async fn connect(settings: &mut Settings) -> Result<Connected, StartupError> {
    if settings.auto_detect {
        return auto_detect(settings).await;
    }
    let client = client_for(settings, &settings.base_url, settings.fallback.clone())?;
    let model = match settings.model.clone() {
        Some(m) => m,
        None => loaded_model(settings, &client).await?,
    };
    let (context_window, window_note) = context_window(settings, &client, &model).await;
    Ok(Connected {
        client: Arc::new(client),
        model,
        context_window,
        window_note,
        model_note: None,
    })
}

async fn loaded_model(settings: &Settings, client: &LlmClient) -> Result<String, StartupError> {
    match client.list_models(PROBE_TIMEOUT).await {
        Ok(ids) => {
            first_chat_model(&ids).ok_or_else(|| StartupError::NoModel(settings.base_url.clone()))
        }
        Err(LlmError::Connect { .. }) => {
            if let Some(fallback) = settings.fallback.as_deref()
                && provider::check_url(fallback, true).is_ok()
            {
                let fb = client_for(settings, fallback, None)?;
                if let Ok(ids) = fb.list_models(PROBE_TIMEOUT).await
                    && let Some(m) = first_chat_model(&ids)
                {
                    return Ok(m);
                }
            }
            Err(StartupError::Unreachable(settings.base_url.clone()))
        }
        Err(error) => Err(StartupError::Models {
            url: settings.base_url.clone(),
            error,
        }),
    }
}

/// The first listed model that is not an embedding model.
fn first_chat_model(ids: &[String]) -> Option<String> {
    ids.iter()
        .find(|id| !id.to_ascii_lowercase().contains("embed"))
        .or(ids.first())
        .cloned()
}

/// The window the server gives the model: `contextWindow` when set,
/// else what the server says (llama-server `/props`, Ollama `/api/ps` or
/// `/api/show`, vLLM `max_model_len`, LM Studio's model list).
async fn context_window(
    settings: &Settings,
    client: &LlmClient,
    model: &str,
) -> (Option<u64>, Option<String>) {
    if settings.context_window.is_some() {
        return (settings.context_window, None);
    }
    let probe = match settings.provider_info.kind {
        ProviderKind::LlamaCpp => {
            client
                .server_context_window(PROBE_TIMEOUT)
                .await
                .map(|n| WindowProbe {
                    tokens: n,
                    source: "llama-server /props",
                    assumed: false,
                })
        }
        ProviderKind::Ollama => client.ollama_window(model, PROBE_TIMEOUT).await,
        ProviderKind::Vllm => client.vllm_window(model, PROBE_TIMEOUT).await,
        ProviderKind::LmStudio => client.lmstudio_window(model, PROBE_TIMEOUT).await,
        ProviderKind::Gemini => client.gemini_window(model, PROBE_TIMEOUT).await,
        // No API says; every current Claude model has at least this.
        ProviderKind::Anthropic => Some(WindowProbe {
            tokens: 200_000,
            source: "Anthropic's documented window",
            assumed: true,
        }),
        _ => None,
    };
    let Some(p) = probe else {
        return (None, None);
    };
    tracing::info!(tokens = p.tokens, source = p.source, "context window");
    let note = (settings.provider_info.kind == ProviderKind::Ollama && p.tokens < 8192).then(|| {
        format!(
            "Ollama serves {model} with a {}-token window ({}{}); Ollama cuts longer requests from the front without a word, so mm compacts before that. For more room: OLLAMA_CONTEXT_LENGTH=16384 ollama serve, or PARAMETER num_ctx in a Modelfile, or contextWindow in the config",
            p.tokens,
            p.source,
            if p.assumed { ", assumed: the model is not loaded yet" } else { "" }
        )
    });
    (Some(p.tokens), note)
}

async fn auto_detect(settings: &mut Settings) -> Result<Connected, StartupError> {
    for (name, url) in auto_endpoints() {
        let Some(info) = provider::lookup(name) else {
            continue;
        };
        // Auto-detection looks at this machine only.
        if !reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(provider::is_loopback_host))
            .unwrap_or(false)
        {
            continue;
        }
        let client = client_for(settings, &url, None)?;
        let Ok(ids) = client.list_models(Duration::from_secs(2)).await else {
            continue;
        };
        settings.provider = name.to_string();
        settings.provider_info = info;
        settings.base_url = url.clone();
        let Some(model) = settings.model.clone().or_else(|| first_chat_model(&ids)) else {
            continue;
        };
        let (context_window, window_note) = context_window(settings, &client, &model).await;
        // `-m` with a name the server does not list: a typo is said now,
        // not as a 404 later (llama-server answers to any name).
        let model_note = (!ids.is_empty() && !ids.contains(&model)).then(|| {
            let listed: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
            format!(
                "the server at {url} lists no model {model} (it lists {}{}); requests name {model} anyway",
                listed.join(", "),
                if ids.len() > 5 { ", …" } else { "" }
            )
        });
        return Ok(Connected {
            client: Arc::new(client),
            model,
            context_window,
            window_note,
            model_note,
        });
    }
    Err(StartupError::NoServer(looked_at()))
}

/// Where auto-detection looked, in words.
fn looked_at() -> String {
    let named = |(name, url): &(&str, String)| {
        let host = url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches("/v1");
        match *name {
            "ollama" => format!("{host} (Ollama)"),
            _ => format!("{host} (llama-server)"),
        }
    };
    let all: Vec<String> = auto_endpoints().iter().map(named).collect();
    match all.split_last() {
        None => "no address (MM_LOCAL_ENDPOINTS is empty)".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or on {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_nothing_configured_llama_server_comes_before_ollama() {
        // What the README and `--help` promise: 127.0.0.1:8080, then
        // 127.0.0.1:11434 (no test sets MM_LOCAL_ENDPOINTS in this process).
        assert!(std::env::var_os("MM_LOCAL_ENDPOINTS").is_none());
        assert_eq!(
            auto_endpoints(),
            vec![
                ("local", "http://127.0.0.1:8080/v1".to_string()),
                ("ollama", "http://127.0.0.1:11434/v1".to_string()),
            ]
        );
    }

    #[test]
    fn embedding_models_are_skipped() {
        let ids = vec!["nomic-embed-text".to_string(), "qwen".to_string()];
        assert_eq!(first_chat_model(&ids).as_deref(), Some("qwen"));
        assert_eq!(first_chat_model(&[]), None);
    }
}
