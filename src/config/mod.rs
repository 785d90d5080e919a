//! Settings: compiled-in defaults, then `~/.config/mm/config.yaml`, then the
//! agent file, then command-line flags. The result is one `Settings` value
//! that the rest of the program reads and never writes.

pub mod duration;
pub mod file;
pub mod provider;
pub mod servers;
pub mod structured;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use file::{AgentFile, ConfigError, ContextMode, EditFormat, SandboxMode, SubAgentRef};
pub use provider::{ProviderInfo, ProviderKind};

/// Default completion cap for local servers. llama-server has no cap of its
/// own, and a small model that loops fills its whole window in one reply
/// (measured on the Go agents: 15,864 tokens in 45 minutes at 6 tok/s).
pub const LOCAL_COMPLETION_CAP: u64 = 4096;
/// Sampling temperature for local servers when `sampling:` sets none.
/// Measured on Qwen2.5-Coder 1.5B fixing a one-line bug: 4 of 4 runs at
/// 0.2, 2 of 3 at llama-server's default (0.8), which also loops more.
pub const LOCAL_TEMPERATURE: f64 = 0.2;
/// Tool rounds per turn when nothing says otherwise.
pub const DEFAULT_MAX_ROUNDS: u32 = 40;

/// What the command line sets; `None` leaves the lower layers alone.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub url: Option<String>,
    pub sandbox: Option<SandboxMode>,
    pub yolo: bool,
    pub max_rounds: Option<u32>,
    pub max_requests: Option<u32>,
    /// `-no-harness`.
    pub no_harness: bool,
    /// `-harness-off LIST`.
    pub harness_off: Option<String>,
    /// `-edit-format tools|whole`.
    pub edit_format: Option<EditFormat>,
    /// `-ctx compact|rebuild`.
    pub context_mode: Option<file::ContextMode>,
    /// `-no-skills`.
    pub no_skills: bool,
    /// `-max-tokens N`: the completion cap (`maxTokens`).
    pub max_tokens: Option<u64>,
    /// `-context N`: the context window (`contextWindow`).
    pub context_window: Option<u64>,
    /// `-think LEVEL` (mingo's): off, low, medium, high, xhigh, max.
    pub think: Option<String>,
}

/// The environment that carries an asker's limits to the agent it asks:
/// how deep agents already ask agents, who asked, and the asker's sandbox
/// mode (the asked agent's at most).
pub const ASK_DEPTH_VAR: &str = "MM_ASK_DEPTH";
pub const ASK_CHAIN_VAR: &str = "MM_ASK_CHAIN";
pub const ASK_CEILING_VAR: &str = "MM_SANDBOX_CEILING";
/// "0" when some asker up the chain does not grant its asked agents'
/// permission requests: none below it may then grant them either.
pub const ASK_YOLO_VAR: &str = "MM_ASK_YOLO";

/// A digest of a file's bytes (None when it cannot be read): an asked
/// agent's file must be the one mm loaded.
pub fn file_digest(path: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(path).ok()?;
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

/// A sub-agent declared under `mmConfigs`, its path resolved.
#[derive(Clone, Debug)]
pub struct SubAgent {
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    /// The asking agent grants the asked one's permission requests.
    pub yolo: bool,
    /// The file as it was when the asker loaded its settings.
    pub digest: Option<u64>,
}

/// A harness behaviour that can be turned off on its own, to measure it
/// (`harnessOff`, `-harness-off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// A read of a file the model already has comes back as one line.
    Reread,
    /// An edit task stalled on reads gets the whole file asked for as text.
    Stall,
    /// Checks written from the request's own words, run against the change.
    Asserts,
    /// Alternative changes tried in scratch copies against a failing check.
    Candidates,
    /// When no candidate passes, the best is corrected against the
    /// checks it still fails, kept only when it fails fewer.
    Refine,
    /// A command that now exits 0 is still questioned (output, symptom).
    Exit0,
    /// Exact values and output in an answer are held to the tools' results.
    Evidence,
    /// A rename request is done by a word-bounded replace across files.
    Rename,
    /// A write to another file than the one the request names is refused.
    Named,
    /// A turn that ends failing more of the request's checks than it did
    /// earlier gets that earlier version back.
    Best,
    /// A change asked for file by file brings the files that call what
    /// changed.
    Callers,
    /// A hard-coded literal made a constant in a new module by mm itself.
    Extract,
}

impl Behaviour {
    pub const ALL: [Behaviour; 12] = [
        Behaviour::Reread,
        Behaviour::Stall,
        Behaviour::Asserts,
        Behaviour::Candidates,
        Behaviour::Refine,
        Behaviour::Exit0,
        Behaviour::Evidence,
        Behaviour::Rename,
        Behaviour::Named,
        Behaviour::Best,
        Behaviour::Callers,
        Behaviour::Extract,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::Reread => "reread",
            Behaviour::Stall => "stall",
            Behaviour::Asserts => "asserts",
            Behaviour::Candidates => "candidates",
            Behaviour::Refine => "refine",
            Behaviour::Exit0 => "exit0",
            Behaviour::Evidence => "evidence",
            Behaviour::Rename => "rename",
            Behaviour::Named => "named",
            Behaviour::Best => "best",
            Behaviour::Callers => "callers",
            Behaviour::Extract => "extract",
        }
    }

    pub fn parse(s: &str) -> Option<Behaviour> {
        Behaviour::ALL.into_iter().find(|b| b.as_str() == s.trim())
    }
}

/// The behaviours the flag (comma-separated) or the config key turn off;
/// the flag wins. An unknown name is an error that lists the known ones.
fn behaviours_off(flag: Option<&str>, key: Option<&[String]>) -> Result<Vec<Behaviour>, String> {
    let names: Vec<String> = match (flag, key) {
        (Some(f), _) => f
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect(),
        (None, Some(k)) => k.to_vec(),
        (None, None) => Vec::new(),
    };
    names
        .iter()
        .map(|n| {
            Behaviour::parse(n).ok_or_else(|| {
                format!(
                    "harnessOff: unknown behaviour {n:?}; known: {}",
                    Behaviour::ALL.map(Behaviour::as_str).join(", ")
                )
            })
        })
        .collect()
}

/// The resolved settings of one agent.
#[derive(Clone, Debug)]
pub struct Settings {
    /// What loading said that is worth a line at start (keys of the Go
    /// agent's config that mm does not use).
    pub notes: Vec<String>,
    /// The provider name as the user wrote it (`llmman`, `local`, ...).
    pub provider: String,
    pub provider_info: ProviderInfo,
    /// `None`: ask the server which model it has loaded.
    pub model: Option<String>,
    pub base_url: String,
    pub fallback: Option<String>,
    /// Nothing chose a server: try llama-server on 8080, then Ollama.
    pub auto_detect: bool,
    pub api_key: Option<String>,
    pub system: Option<String>,
    pub sampling: serde_json::Map<String, serde_json::Value>,
    pub bash_tool: bool,
    pub edit_tools: bool,
    pub plan_tool: bool,
    pub skills_dir: Option<String>,
    /// Skills are offered (`-no-skills` turns them off).
    pub skills: bool,
    pub sandbox: SandboxMode,
    /// `yolo: true` or `-yolo`: full access, never ask.
    pub yolo: bool,
    pub max_rounds: u32,
    pub max_requests: Option<u32>,
    pub watchdog: Duration,
    pub first_token_timeout: Duration,
    pub bash_timeout: Duration,
    /// `structuredOutput`, compiled: every answer is JSON of this shape.
    pub structured: Option<std::sync::Arc<structured::Structured>>,
    pub context_window: Option<u64>,
    /// Completion cap sent as `max_tokens` unless `sampling` sets one.
    pub max_tokens: Option<u64>,
    pub sub_agents: BTreeMap<String, SubAgent>,
    /// `hooks`: commands run without a model turn.
    pub hooks: file::Hooks,
    /// `fetchContent`: the tool is offered.
    pub fetch_content: bool,
    /// `fetchPrivate`: it may reach loopback and private addresses.
    pub fetch_private: bool,
    /// `envPassthrough`: variables approved commands get despite the
    /// secret filter.
    pub env_passthrough: Vec<String>,
    /// `ui`: the front end `mm` opens without a flag.
    pub ui: file::Ui,
    /// MCP servers to start (those with `enabled: false` left out).
    pub mcp_servers: BTreeMap<String, file::McpServerFile>,
    /// Ask before file changes when someone can answer.
    pub approve_edits: bool,
    pub theme: String,
    pub keymap: String,
    pub checkpoint_days: u64,
    /// Language servers, built-in ones with the config's changes.
    pub lsp: Vec<servers::ServerSpec>,
    pub acp_name: Option<String>,
    pub acp_title: Option<String>,
    /// The agent file these settings came from, if any.
    pub agent_file: Option<PathBuf>,
    /// `verify:`: None detects the test command, Some("") turns it off.
    pub verify: Option<String>,
    pub verify_attempts: u32,
    /// The checking loops are on (`-no-harness` / `harness: false` turn them off).
    pub harness: bool,
    /// Harness behaviours turned off (`harnessOff`, `-harness-off`).
    pub harness_off: Vec<Behaviour>,
    /// Alternative changes tried against a failing check (`candidates`).
    pub candidates: u32,
    /// How an edit task's change is asked for (`editFormat`).
    pub edit_format: EditFormat,
    /// The time all candidates of a turn may take (`candidateTime`).
    pub candidate_time: Duration,
    /// Compact at this share of the window, in percent (0: only `/compact`).
    pub compact_at: u32,
    /// `contextMode` / `-ctx`: how requests are made from the conversation.
    pub context_mode: file::ContextMode,
    pub aux_model: Option<String>,
    /// Dollars per million tokens, by model.
    pub prices: BTreeMap<String, file::Price>,
    /// `trace: true` or `AGENT_TRACE=1`: requests and responses to
    /// `.mm/traces/<session>/`.
    pub trace: bool,
    pub budget_minutes: Option<u64>,
    pub budget_k_tokens: Option<u64>,
    /// None: never notify.
    pub notify_after: Option<Duration>,
}

impl Settings {
    /// Keys the Go `mm`'s files set that this mm accepts, so those files
    /// load, but does not act on yet.
    pub fn inert_keys(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.plan_tool {
            v.push("planTool");
        }
        v
    }
}

/// Where personal configuration lives: `$MM_CONFIG_DIR`, else
/// `$XDG_CONFIG_HOME/mm`, else `~/.config/mm`.
pub fn user_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MM_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("mm"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config").join("mm"))
}

/// Where mm keeps data of its own (shadow repositories, language servers
/// it installed): `$MM_DATA_DIR`, else `$XDG_DATA_HOME/mm`, else
/// `~/.local/share/mm`.
pub fn data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("MM_DATA_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("mm"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/mm"))
}

/// Appends `line` and a newline to the file `name` in mm's data folder
/// (created with the folder when missing): the user's own records
/// (sessions started, "always" answers, trusted files).
pub fn append_data_line(name: &str, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let path = data_dir()
        .ok_or_else(|| std::io::Error::other("no data folder (HOME is not set)"))?
        .join(name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?
        .write_all(format!("{line}\n").as_bytes())
}

/// 1-based line and column of a byte offset, for errors in TOML files.
pub(crate) fn line_col(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line as u64, col as u64)
}

/// A repository's own `.mm/config.yaml`, between the user's config and
/// an agent file.
pub struct ProjectConfig {
    pub path: PathBuf,
    pub file: AgentFile,
    /// The user trusts this file as it is: its keys that run code or send
    /// the work elsewhere apply too.
    pub trusted: bool,
}

/// Loads every layer and resolves them into `Settings`.
pub fn load(agent_file: Option<&Path>, flags: &Overrides) -> Result<Settings, ConfigError> {
    load_with(agent_file, None, flags)
}

/// As `load`, with a repository's config between the user's and the
/// agent file (without its trusted-only keys unless it is trusted).
pub fn load_with(
    agent_file: Option<&Path>,
    project: Option<&ProjectConfig>,
    flags: &Overrides,
) -> Result<Settings, ConfigError> {
    let mut layers: Vec<(Option<PathBuf>, AgentFile)> = Vec::new();
    // The Go agent's own config, below ours.
    let mut notes = Vec::new();
    if let Some(path) = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".agent").join("config.json"))
        .filter(|p| p.is_file())
    {
        let (file, unused) = go_agent_layer(&path)?;
        if !unused.is_empty() {
            notes.push(format!(
                "{}: {} not used by mm",
                path.display(),
                unused.join(", ")
            ));
        }
        layers.push((Some(path), file));
    }
    if let Some(dir) = user_config_dir() {
        let path = dir.join("config.yaml");
        if path.is_file() {
            layers.push((None, AgentFile::load(&path)?));
        }
    }
    if let Some(p) = project {
        let mut file = p.file.clone();
        if !p.trusted {
            file.drop_trusted_only();
        }
        layers.push((Some(p.path.clone()), file));
    }
    let mut user_file = None;
    if let Some(dir) = user_config_dir() {
        user_file = Some(dir.join("config.yaml"));
    }
    if let Some(path) = agent_file {
        layers.push((Some(path.to_path_buf()), AgentFile::load(path)?));
    }
    let mut settings = resolve(&layers, flags, agent_file, &|name: &str| {
        std::env::var(name).ok()
    })?;
    settings.notes = notes;
    // The last layer that declares `structuredOutput` gives it, and its
    // errors' places.
    if let Some((path, decl)) = layers.iter().rev().find_map(|(p, l)| {
        l.structured_output
            .as_ref()
            .map(|d| (p.clone().or(user_file.clone()).unwrap_or_default(), d))
    }) {
        settings.structured = Some(std::sync::Arc::new(compile_structured(
            &settings, &path, decl,
        )?));
        // One constrained answer a turn: nothing to verify, nudge or re-ask.
        settings.harness = false;
    }
    Ok(settings)
}

/// The Go agent's `~/.agent/config.json` as a layer: its keys as mm's
/// (`url` → `baseUrl`, `/v1` added; `model`; `command_timeout_sec` →
/// `bashTimeout`; `verify_command` → `verify`; `mcp_servers`; `aux_model`;
/// `notify_sec` → `notifyAfter`), and the names of those mm has no use
/// for.
pub fn go_agent_layer(path: &Path) -> Result<(AgentFile, Vec<String>), ConfigError> {
    use serde_json::{Value, json};
    // The user's own file, as `config.yaml` is read.
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        position: None,
        message: e.to_string(),
    })?;
    let go: serde_json::Map<String, Value> =
        serde_json::from_str(&text).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            position: Some((e.line() as u64, e.column() as u64)),
            message: e.to_string(),
        })?;
    let mut ours = serde_json::Map::new();
    let mut unused = Vec::new();
    let seconds = |v: &Value| v.as_u64().map(|n| json!(format!("{n}s")));
    for (key, value) in go {
        let mapped = match key.as_str() {
            "url" => value.as_str().map(|u| {
                let u = u.trim_end_matches('/');
                let u = if u.ends_with("/v1") {
                    u.to_string()
                } else {
                    format!("{u}/v1")
                };
                ("baseUrl", json!(u))
            }),
            "model" => Some(("model", value)),
            "command_timeout_sec" => seconds(&value).map(|v| ("bashTimeout", v)),
            "verify_command" => Some(("verify", value)),
            "mcp_servers" => Some(("mcpServers", value)),
            "aux_model" => Some(("auxModel", value)),
            "notify_sec" => seconds(&value).map(|v| ("notifyAfter", v)),
            _ => None,
        };
        match mapped {
            Some((k, v)) => {
                ours.insert(k.to_string(), v);
            }
            None => unused.push(key),
        }
    }
    let file = AgentFile::parse(path, &Value::Object(ours).to_string())?;
    Ok((file, unused))
}

/// Compiles `structuredOutput`; an error names its place in the YAML file.
fn compile_structured(
    settings: &Settings,
    path: &Path,
    decl: &serde_saphyr::Spanned<String>,
) -> Result<structured::Structured, ConfigError> {
    let at = decl.referenced;
    let error = |position: Option<(u64, u64)>, message: String| ConfigError {
        file: path.to_path_buf(),
        position,
        message,
    };
    // An agent acts or answers in a fixed shape: a constrained answer
    // leaves no room for a tool call.
    let mut tools = Vec::new();
    if settings.bash_tool {
        tools.push("bashTool");
    }
    if settings.edit_tools {
        tools.push("editTools");
    }
    if settings.plan_tool {
        tools.push("planTool");
    }
    if !settings.sub_agents.is_empty() {
        tools.push("mmConfigs");
    }
    if !tools.is_empty() {
        let fix: Vec<String> = tools
            .iter()
            .map(|t| {
                if *t == "mmConfigs" {
                    "remove mmConfigs".to_string()
                } else {
                    format!("{t}: false")
                }
            })
            .collect();
        return Err(error(
            (at.line() > 0).then(|| (at.line(), at.column())),
            format!(
                "structuredOutput cannot be used with tools — this agent declares: {} (set {})",
                tools.join(", "),
                fix.join(", ")
            ),
        ));
    }
    structured::compile(&decl.value).map_err(|e| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        error(
            yaml_place(&text, at.line(), e.line, e.col),
            format!("structuredOutput: {}", e.message),
        )
    })
}

/// Where line `go_line`, column `go_col` of the declarations sit in the
/// YAML file, the value's place being line `at` (the block scalar's first
/// line of content, or its `|` line).
fn yaml_place(text: &str, at: u64, go_line: usize, go_col: usize) -> Option<(u64, u64)> {
    if at == 0 {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let indicator = |n: u64| {
        n >= 1
            && lines.get(n as usize - 1).is_some_and(|l| {
                let l = l.trim_end();
                ["|", "|-", "|+", ">", ">-", ">+"]
                    .iter()
                    .any(|ind| l.ends_with(ind))
            })
    };
    let start = if indicator(at) {
        at + 1
    } else if indicator(at - 1) {
        at
    } else {
        // A one-line value: its place is the error's best place.
        return Some((at, 1));
    };
    let indent = lines
        .iter()
        .skip(start as usize - 1)
        .find(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .unwrap_or(0);
    Some((start + go_line as u64 - 1, (indent + go_col) as u64))
}

/// Merges the layers (lowest first) and the flags; `env` reads the
/// process environment (`MM_BASE_URL`, the key variables).
/// mingo's `-think LEVEL` as the request's sampling fields: a local
/// server's chat template switch (`chat_template_kwargs.enable_thinking`),
/// a hosted API's `reasoning_effort`.
fn think(
    sampling: &mut serde_json::Map<String, serde_json::Value>,
    level: &str,
    local: bool,
) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["off", "low", "medium", "high", "xhigh", "max"];
    if !LEVELS.contains(&level) {
        return Err(format!(
            "-think takes one of {}, not {level:?}",
            LEVELS.join(", ")
        ));
    }
    if local {
        let kwargs = sampling
            .entry("chat_template_kwargs")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(k) = kwargs.as_object_mut() {
            k.insert("enable_thinking".into(), serde_json::json!(level != "off"));
        }
    } else if level == "off" {
        sampling.remove("reasoning_effort");
    } else {
        sampling.insert("reasoning_effort".into(), serde_json::json!(level));
    }
    Ok(())
}

pub fn resolve(
    layers: &[(Option<PathBuf>, AgentFile)],
    flags: &Overrides,
    agent_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    let mut merged = AgentFile::default();
    let mut sub_agents = BTreeMap::new();
    for (path, layer) in layers {
        if let Some(configs) = &layer.mm_configs {
            let base = path
                .as_ref()
                .and_then(|p| p.parent())
                .map(Path::to_path_buf)
                .unwrap_or_default();
            for (name, r) in configs {
                let path =
                    std::path::absolute(base.join(&r.path)).unwrap_or_else(|_| base.join(&r.path));
                sub_agents.insert(
                    name.clone(),
                    SubAgent {
                        digest: file_digest(&path),
                        name: name.clone(),
                        path,
                        description: r.description.clone(),
                        yolo: r.yolo.unwrap_or(false),
                    },
                );
            }
        }
        overlay(&mut merged, layer.clone());
    }
    let err = |message: String| ConfigError {
        file: agent_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("command line")),
        position: None,
        message,
    };

    let env_url = env("MM_BASE_URL").filter(|s| !s.is_empty());
    let chose_server = flags.provider.is_some()
        || flags.url.is_some()
        || env_url.is_some()
        || merged.provider.is_some()
        || merged.base_url.is_some();
    let provider = flags
        .provider
        .clone()
        .or(merged.provider.clone())
        .unwrap_or_else(|| "local".to_string());
    let provider_info = provider::lookup(&provider).ok_or_else(|| {
        err(format!(
            "unknown provider {provider:?}; known providers: {}",
            provider::NAMES.join(", ")
        ))
    })?;
    let base_url = flags
        .url
        .clone()
        .or(env_url)
        .or(merged.base_url.clone())
        .unwrap_or_else(|| provider_info.default_base_url.to_string());
    let base_url = base_url.trim_end_matches('/').to_string();
    let insecure = merged.allow_insecure_http.unwrap_or(false);
    provider::check_url(&base_url, insecure).map_err(|e| err(e.to_string()))?;
    if let Some(fallback) = &merged.fallback {
        provider::check_url(fallback, insecure).map_err(|e| err(format!("fallback: {e}")))?;
    }

    let api_key = merged
        .api_key_env
        .as_deref()
        .into_iter()
        .chain(["MM_API_KEY"])
        .chain(provider_info.key_envs.iter().copied())
        .find_map(|name| env(name).filter(|v| !v.is_empty()));
    if !provider_info.local && api_key.is_none() {
        return Err(err(format!(
            "provider {provider} needs an API key: set {}",
            provider_info.key_envs.join(" or ")
        )));
    }

    let model = flags
        .model
        .clone()
        .or(merged.model.clone())
        .or(provider_info.default_model.map(str::to_string));
    if model.is_none() && !provider_info.local {
        return Err(err(format!(
            "provider {provider} needs a model: set `model:` in the agent file or pass -model"
        )));
    }

    let mut yolo = flags.yolo || merged.yolo.unwrap_or(false);
    let mut sandbox = if yolo {
        SandboxMode::Full
    } else {
        flags
            .sandbox
            .or(merged.sandbox)
            .unwrap_or(SandboxMode::Workspace)
    };
    // An agent asked by another may do no more than the asker: its mode is
    // capped, and below full access its own `yolo` does not hold (the
    // asker answers its permission requests).
    // A ceiling that cannot be read is the lowest.
    if let Some(ceiling) = env(ASK_CEILING_VAR)
        .filter(|v| !v.is_empty())
        .map(|v| SandboxMode::parse(&v).unwrap_or(SandboxMode::ReadOnly))
    {
        sandbox = sandbox.min(ceiling);
        if ceiling != SandboxMode::Full {
            yolo = false;
        }
    }
    let mut mcp_servers = merged.mcp_servers.clone().unwrap_or_default();
    mcp_servers.retain(|_, s| s.enabled != Some(false));
    for (name, s) in &mcp_servers {
        if s.command.is_some() == s.url.is_some() {
            return Err(err(format!(
                "mcpServers.{name}: give either command (a server over stdio) or url (streamable HTTP)"
            )));
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err(format!(
                "mcpServers: {name:?} is not a server name (letters, digits, - and _)"
            )));
        }
    }
    let compact_at = merged.compact_at.unwrap_or(80);
    if compact_at > 95 {
        return Err(err(format!(
            "compactAt is a percentage of the context window up to 95 (0: only /compact), not {compact_at}"
        )));
    }
    let max_tokens = flags
        .max_tokens
        .or(merged.max_tokens)
        .or(provider_info.local.then_some(LOCAL_COMPLETION_CAP));
    let acp = merged.acp.clone().unwrap_or_default();
    let mut sampling = merged.sampling.clone().unwrap_or_default();
    if let Some(level) = &flags.think {
        think(&mut sampling, level, provider_info.local).map_err(err)?;
    }
    if provider_info.local && !sampling.contains_key("temperature") {
        sampling.insert("temperature".into(), serde_json::json!(LOCAL_TEMPERATURE));
    }

    Ok(Settings {
        notes: Vec::new(),
        provider,
        provider_info,
        model,
        base_url,
        fallback: merged.fallback.clone(),
        auto_detect: !chose_server,
        api_key,
        system: merged.system.clone(),
        sampling,
        bash_tool: merged.bash_tool.unwrap_or(true),
        edit_tools: merged.edit_tools.unwrap_or(true),
        plan_tool: merged.plan_tool.unwrap_or(false),
        skills_dir: merged.skills_dir.clone(),
        skills: !flags.no_skills,
        sandbox,
        yolo,
        max_rounds: flags
            .max_rounds
            .or(merged.max_turns)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
            .max(1),
        max_requests: flags.max_requests.or(merged.max_requests),
        watchdog: merged
            .watchdog_timeout
            .map(|d| d.0)
            .unwrap_or(Duration::from_secs(120)),
        first_token_timeout: merged
            .first_token_timeout
            .map(|d| d.0)
            .unwrap_or(Duration::from_secs(600)),
        bash_timeout: merged
            .bash_timeout
            .map(|d| d.0)
            .unwrap_or(Duration::from_secs(120)),
        structured: None,
        context_window: flags.context_window.or(merged.context_window),
        max_tokens,
        sub_agents,
        hooks: merged.hooks.clone().unwrap_or_default(),
        fetch_content: merged.fetch_content.unwrap_or(false),
        fetch_private: merged.fetch_private.unwrap_or(false),
        env_passthrough: merged.env_passthrough.clone().unwrap_or_default(),
        ui: merged.ui.unwrap_or_default(),
        mcp_servers,
        approve_edits: merged.approve_edits.unwrap_or(true),
        theme: merged.theme.clone().unwrap_or_else(|| "dark".into()),
        keymap: merged.keymap.clone().unwrap_or_else(|| "default".into()),
        checkpoint_days: merged.checkpoint_days.unwrap_or(30),
        lsp: servers::resolve(&merged.lsp.clone().unwrap_or_default()).map_err(err)?,
        acp_name: acp.name,
        acp_title: acp.title,
        agent_file: agent_file.map(Path::to_path_buf),
        verify: merged.verify.as_deref().map(|v| {
            if v.trim() == "off" {
                String::new()
            } else {
                v.trim().to_string()
            }
        }),
        verify_attempts: merged.verify_attempts.unwrap_or(3),
        harness: !flags.no_harness && merged.harness.unwrap_or(true),
        harness_off: behaviours_off(flags.harness_off.as_deref(), merged.harness_off.as_deref())
            .map_err(err)?,
        candidates: merged.candidates.unwrap_or(3).min(8),
        edit_format: flags.edit_format.or(merged.edit_format).unwrap_or_default(),
        candidate_time: merged
            .candidate_time
            .map(|d| d.0)
            .unwrap_or(Duration::from_secs(240)),
        compact_at,
        context_mode: flags
            .context_mode
            .or(merged.context_mode)
            .unwrap_or_default(),
        aux_model: merged.aux_model.clone(),
        prices: merged.prices.clone().unwrap_or_default(),
        notify_after: Some(merged.notify_after.map_or(Duration::from_secs(10), |d| d.0))
            .filter(|d| !d.is_zero()),
        budget_minutes: merged.budget_minutes.filter(|m| *m > 0),
        budget_k_tokens: merged.budget_k_tokens.filter(|k| *k > 0),
        trace: merged.trace.unwrap_or(false)
            || env("AGENT_TRACE").is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes")),
    })
}

/// Lays `top` over `base`: every key `top` sets wins; `sampling` merges key
/// by key so a personal temperature survives an agent file's max_tokens.
fn overlay(base: &mut AgentFile, top: AgentFile) {
    macro_rules! take {
        ($($field:ident),*) => { $( if top.$field.is_some() { base.$field = top.$field; } )* };
    }
    take!(
        provider,
        model,
        base_url,
        fallback,
        allow_insecure_http,
        api_key_env,
        system,
        bash_tool,
        edit_tools,
        plan_tool,
        skills_dir,
        yolo,
        sandbox,
        mm_configs,
        acp,
        max_turns,
        max_requests,
        watchdog_timeout,
        first_token_timeout,
        bash_timeout,
        structured_output,
        hooks,
        fetch_content,
        fetch_private,
        env_passthrough,
        ui,
        context_window,
        max_tokens,
        approve_edits,
        theme,
        keymap,
        checkpoint_days,
        verify,
        verify_attempts,
        harness,
        harness_off,
        candidates,
        candidate_time,
        edit_format,
        compact_at,
        context_mode,
        aux_model,
        prices,
        trace,
        budget_minutes,
        budget_k_tokens,
        notify_after
    );
    if let Some(servers) = top.mcp_servers {
        // Server by server: an agent file's server of the same name wins.
        base.mcp_servers
            .get_or_insert_with(Default::default)
            .extend(servers);
    }
    if let Some(top_lsp) = top.lsp {
        // Server by server: a personal pyright setting survives an agent
        // file that only adds clangd options.
        let lsp = base.lsp.get_or_insert_with(Default::default);
        for (k, v) in top_lsp {
            lsp.insert(k, v);
        }
    }
    if let Some(top_sampling) = top.sampling {
        let sampling = base.sampling.get_or_insert_with(Default::default);
        for (k, v) in top_sampling {
            sampling.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn layer(text: &str) -> (Option<PathBuf>, AgentFile) {
        (
            Some(PathBuf::from("/cfg/agent.yaml")),
            AgentFile::parse(Path::new("agent.yaml"), text).unwrap(),
        )
    }

    #[test]
    fn later_layers_and_flags_win() {
        let global = (
            None,
            AgentFile::parse(
                Path::new("config.yaml"),
                "model: a\nsampling:\n  temperature: 0.5\n",
            )
            .unwrap(),
        );
        let agent = layer("model: b\nsampling:\n  max_tokens: 100\nmaxTurns: 7\n");
        let flags = Overrides {
            max_rounds: Some(3),
            ..Default::default()
        };
        let s = resolve(&[global, agent], &flags, None, &no_env).unwrap();
        assert_eq!(s.model.as_deref(), Some("b"));
        assert_eq!(s.sampling["temperature"], 0.5);
        assert_eq!(s.sampling["max_tokens"], 100);
        assert_eq!(s.max_rounds, 3);
    }

    #[test]
    fn mingos_flags_set_the_cap_the_window_and_thinking() {
        let flags = Overrides {
            max_tokens: Some(10),
            context_window: Some(8192),
            think: Some("high".into()),
            ..Default::default()
        };
        let s = resolve(&[layer("maxTokens: 99\n")], &flags, None, &no_env).unwrap();
        assert_eq!((s.max_tokens, s.context_window), (Some(10), Some(8192)));
        assert_eq!(s.sampling["chat_template_kwargs"]["enable_thinking"], true);
        let off = Overrides {
            think: Some("off".into()),
            ..Default::default()
        };
        let s = resolve(&[], &off, None, &no_env).unwrap();
        assert_eq!(s.sampling["chat_template_kwargs"]["enable_thinking"], false);
        let hosted = resolve(
            &[],
            &Overrides {
                provider: Some("openai".into()),
                model: Some("gpt-5".into()),
                think: Some("low".into()),
                ..Default::default()
            },
            None,
            &|k| (k == "OPENAI_API_KEY").then(|| "k".to_string()),
        )
        .unwrap();
        assert_eq!(hosted.sampling["reasoning_effort"], "low");
        let bad = Overrides {
            think: Some("lots".into()),
            ..Default::default()
        };
        let e = resolve(&[], &bad, None, &no_env).unwrap_err();
        assert!(e.to_string().contains("-think takes one of"), "{e}");
    }

    #[test]
    fn no_config_means_auto_detect_on_the_local_default() {
        let s = resolve(&[], &Overrides::default(), None, &no_env).unwrap();
        assert!(s.auto_detect);
        assert_eq!(s.provider, "local");
        assert_eq!(s.max_tokens, Some(LOCAL_COMPLETION_CAP));
        assert_eq!(s.sandbox, SandboxMode::Workspace);
        assert_eq!(s.sampling["temperature"], LOCAL_TEMPERATURE);
    }

    #[test]
    fn yolo_means_full() {
        let s = resolve(
            &[layer("yolo: true\n")],
            &Overrides::default(),
            None,
            &no_env,
        )
        .unwrap();
        assert_eq!(s.sandbox, SandboxMode::Full);
    }

    #[test]
    fn sub_agent_paths_are_relative_to_their_file() {
        let s = resolve(
            &[layer("mmConfigs:\n  c:\n    path: agent.countries.yaml\n")],
            &Overrides::default(),
            None,
            &no_env,
        )
        .unwrap();
        assert_eq!(
            s.sub_agents["c"].path,
            PathBuf::from("/cfg/agent.countries.yaml")
        );
    }

    #[test]
    fn bad_provider_and_plain_http_are_errors() {
        let e = resolve(
            &[layer("provider: gpt\n")],
            &Overrides::default(),
            None,
            &no_env,
        )
        .unwrap_err();
        assert!(e.message.contains("unknown provider"), "{e}");
        let e = resolve(
            &[layer("baseUrl: http://example.com/v1\n")],
            &Overrides::default(),
            None,
            &no_env,
        )
        .unwrap_err();
        assert!(e.message.contains("plain http"), "{e}");
    }

    #[test]
    fn the_environment_chooses_the_server_and_the_key() {
        let env = |name: &str| match name {
            "MM_BASE_URL" => Some("http://127.0.0.1:9999/v1".to_string()),
            "MM_API_KEY" => Some("sk-from-env".to_string()),
            _ => None,
        };
        let s = resolve(&[], &Overrides::default(), None, &env).unwrap();
        assert!(!s.auto_detect, "MM_BASE_URL chose the server");
        assert_eq!(s.base_url, "http://127.0.0.1:9999/v1");
        assert_eq!(s.api_key.as_deref(), Some("sk-from-env"));
        // A hosted provider without its key is an error that names the
        // variables to set; with one of them it loads.
        let e = resolve(
            &[layer("provider: openai\nmodel: gpt-4o-mini\n")],
            &Overrides::default(),
            None,
            &no_env,
        )
        .unwrap_err();
        assert!(e.message.contains("needs an API key"), "{e}");
        let openai = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-o".to_string());
        let s = resolve(
            &[layer("provider: openai\nmodel: gpt-4o-mini\n")],
            &Overrides::default(),
            None,
            &openai,
        )
        .unwrap();
        assert_eq!(s.api_key.as_deref(), Some("sk-o"));
    }
}
