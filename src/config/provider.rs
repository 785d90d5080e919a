//! The providers mm knows, with their defaults, and the rule that plain
//! http only goes to loopback.

use std::net::IpAddr;

/// The dialect details that differ between providers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// llama.cpp's llama-server and servers built on it (llmman).
    LlamaCpp,
    Ollama,
    LmStudio,
    Vllm,
    OpenAi,
    DeepSeek,
    OpenRouter,
    /// Anthropic's Messages API (`api: messages`).
    Anthropic,
    /// Google Gemini through its OpenAI-compatible endpoint.
    Gemini,
}

/// The wire format a request is sent in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions (`/chat/completions`): every local server.
    #[default]
    Chat,
    /// Anthropic Messages (`/messages`).
    Messages,
    /// OpenAI Responses (`/responses`).
    Responses,
}

impl Api {
    /// The names `api:` takes.
    pub const NAMES: [&'static str; 3] = ["chat", "messages", "responses"];

    pub fn parse(name: &str) -> Option<Api> {
        match name {
            "chat" | "chat-completions" => Some(Api::Chat),
            "messages" | "anthropic" => Some(Api::Messages),
            "responses" => Some(Api::Responses),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Messages => "messages",
            Api::Responses => "responses",
        }
    }

    /// The API a provider's model is spoken to in when `api:` does not
    /// say: Anthropic's own, OpenAI's Responses for its reasoning models
    /// (their reasoning is carried from turn to turn only there), chat
    /// completions for everything else.
    pub fn default_for(kind: ProviderKind, model: Option<&str>) -> Api {
        match kind {
            ProviderKind::Anthropic => Api::Messages,
            ProviderKind::OpenAi if model.is_some_and(is_openai_reasoning_model) => Api::Responses,
            _ => Api::Chat,
        }
    }
}

/// OpenAI's reasoning models: the o-series and GPT-5.
pub fn is_openai_reasoning_model(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    ["o1", "o3", "o4"]
        .iter()
        .any(|p| m == *p || m.starts_with(&format!("{p}-")))
        || m.starts_with("gpt-5")
}

#[derive(Clone, Copy, Debug)]
pub struct ProviderInfo {
    pub kind: ProviderKind,
    pub default_base_url: &'static str,
    /// Environment variables searched for the API key, in order.
    pub key_envs: &'static [&'static str],
    /// A loopback server: no key needed, the model is whatever it has
    /// loaded, and replies get a completion cap.
    pub local: bool,
    pub default_model: Option<&'static str>,
}

/// Every provider name accepted in `provider:` and `-provider`.
pub const NAMES: &[&str] = &[
    "local",
    "llamacpp",
    "llmman",
    "ollama",
    "lmstudio",
    "vllm",
    "openai",
    "deepseek",
    "openrouter",
    "anthropic",
    "gemini",
];

pub fn lookup(name: &str) -> Option<ProviderInfo> {
    let info = |kind, base, keys, local, model| ProviderInfo {
        kind,
        default_base_url: base,
        key_envs: keys,
        local,
        default_model: model,
    };
    Some(match name {
        "local" | "llamacpp" => info(
            ProviderKind::LlamaCpp,
            "http://127.0.0.1:8080/v1",
            &["LLAMA_API_KEY"],
            true,
            None,
        ),
        "llmman" => info(
            ProviderKind::LlamaCpp,
            "http://127.0.0.1:17434/v1",
            &["LLMMAN_API_KEY"],
            true,
            None,
        ),
        "ollama" => info(
            ProviderKind::Ollama,
            "http://127.0.0.1:11434/v1",
            &["OLLAMA_API_KEY"],
            true,
            None,
        ),
        "lmstudio" => info(
            ProviderKind::LmStudio,
            "http://127.0.0.1:1234/v1",
            &["LMSTUDIO_API_KEY"],
            true,
            None,
        ),
        "vllm" => info(
            ProviderKind::Vllm,
            "http://127.0.0.1:8000/v1",
            &["VLLM_API_KEY"],
            true,
            None,
        ),
        "openai" => info(
            ProviderKind::OpenAi,
            "https://api.openai.com/v1",
            &["OPENAI_API_KEY"],
            false,
            None,
        ),
        "deepseek" => info(
            ProviderKind::DeepSeek,
            "https://api.deepseek.com/v1",
            &["DEEPSEEK_API_KEY"],
            false,
            Some("deepseek-chat"),
        ),
        "openrouter" => info(
            ProviderKind::OpenRouter,
            "https://openrouter.ai/api/v1",
            &["OPENROUTER_API_KEY"],
            false,
            None,
        ),
        "anthropic" => info(
            ProviderKind::Anthropic,
            "https://api.anthropic.com/v1",
            &["ANTHROPIC_API_KEY"],
            false,
            Some("claude-sonnet-4-5"),
        ),
        "gemini" => info(
            ProviderKind::Gemini,
            "https://generativelanguage.googleapis.com/v1beta/openai",
            &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            false,
            Some("gemini-2.5-flash"),
        ),
        _ => return None,
    })
}

/// True for `localhost` and loopback IP literals. A host name that merely
/// starts with `127.` is not loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

/// Checks a base URL: http(s) only, and plain http only to loopback.
/// Why a base URL is not one mm sends to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("invalid URL {url:?}: {error}")]
    Invalid { url: String, error: String },
    #[error(
        "refusing plain http to {0}: use https, a loopback or private-network address, or set allowInsecureHttp: true"
    )]
    PlainHttp(String),
    #[error("unsupported URL scheme {scheme:?} in {url:?}")]
    Scheme { scheme: String, url: String },
}

pub fn check_base_url(url: &str) -> Result<(), UrlError> {
    check_url(url, false)
}

/// True for hosts on a private network: RFC 1918 and link-local
/// addresses, IPv6 unique-local ones, `*.local`, `*.lan`, `*.internal`,
/// `*.home.arpa` (so `host.docker.internal`), and a one-label name (a
/// container's). A name is not resolved: this is what the user wrote.
pub fn is_private_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_private() || ip.is_link_local(),
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
        Err(_) => {
            let h = host.to_ascii_lowercase();
            !h.is_empty()
                && (!h.contains('.')
                    || [".local", ".lan", ".internal", ".home.arpa"]
                        .iter()
                        .any(|s| h.ends_with(s)))
        }
    }
}

/// What to say once about a plain-http URL the user wrote for a host that
/// is not this machine.
pub fn plain_http_note(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    (parsed.scheme() == "http" && !is_loopback_host(host))
        .then(|| format!("the connection to {host} is plain http: not encrypted"))
}

/// Checks a URL the user wrote (an agent file, `-url`): https anywhere,
/// plain http to this machine or a private network, or anywhere with
/// `allowInsecureHttp`.
pub fn check_url(url: &str, allow_insecure: bool) -> Result<(), UrlError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| UrlError::Invalid {
        url: url.to_string(),
        error: e.to_string(),
    })?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let host = parsed.host_str().unwrap_or("");
            if is_loopback_host(host) || is_private_host(host) || allow_insecure {
                Ok(())
            } else {
                Err(UrlError::PlainHttp(host.to_string()))
            }
        }
        other => Err(UrlError::Scheme {
            scheme: other.to_string(),
            url: url.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_name_resolves() {
        for name in NAMES {
            assert!(lookup(name).is_some(), "{name}");
        }
        assert!(lookup("gpt").is_none());
    }

    #[test]
    fn loopback_means_localhost_or_a_loopback_literal() {
        for ok in [
            "localhost",
            "127.0.0.1",
            "127.5.6.7",
            "::1",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "127.0.0.1.nip.io",
            "example.com",
            "10.0.0.1",
            "host.docker.internal",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn plain_http_is_refused_off_loopback() {
        assert!(check_base_url("http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("http://[::1]:8080/v1").is_ok());
        assert!(check_base_url("https://api.openai.com/v1").is_ok());
        // What the user wrote for a private network is used, said once.
        for private in [
            "http://host.docker.internal:17434/v1",
            "http://192.168.1.20:8080/v1",
            "http://10.0.0.5/v1",
            "http://172.20.0.3:11434/v1",
            "http://ollama:11434/v1",
            "http://gpu-box.local:8080/v1",
            "http://[fd00::5]:8080/v1",
        ] {
            assert!(check_base_url(private).is_ok(), "{private}");
            assert!(plain_http_note(private).is_some(), "{private}");
        }
        assert!(plain_http_note("http://127.0.0.1:8080/v1").is_none());
        let err = check_base_url("http://models.example.com/v1").unwrap_err();
        assert_eq!(err, UrlError::PlainHttp("models.example.com".into()));
        assert!(err.to_string().contains("refusing plain http"), "{err}");
        assert!(check_url("http://models.example.com/v1", true).is_ok());
        assert!(check_base_url("http://8.8.8.8/v1").is_err());
        assert!(check_base_url("http://127.0.0.1.evil.com/v1").is_err());
        assert!(check_base_url("ftp://x/").is_err());
    }
}
