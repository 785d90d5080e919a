//! Settings: compiled-in defaults, then `~/.config/mm/config.yaml`, then the
//! agent file, then command-line flags. The result is one `Settings` value
//! that the rest of the program reads and never writes.

pub mod duration;
pub mod file;
pub mod provider;
mod resolve;
pub mod servers;
pub mod structured;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use file::{AgentFile, ConfigError, ContextMode, EditFormat, SandboxMode, SubAgentRef};
pub use provider::{Api, ProviderInfo, ProviderKind};
pub use resolve::resolve;
use resolve::*;

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
/// The tools an asking session may offer (comma-separated): its child
/// offers no other (a role's `tools:` hold for its sub-tasks too).
pub const ASK_TOOLS_VAR: &str = "MM_TOOLS_CEILING";
/// "0": a sub-task whose session did not ask before file edits does not
/// either (`approveEdits: false` for it).
pub const APPROVE_EDITS_VAR: &str = "MM_APPROVE_EDITS";
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

/// A role an agent works in (`.mm/agents/NAME.md`, read by `roles`).
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    /// The only tools it is offered, when it names any.
    pub tools: Option<Vec<String>>,
    /// Its mode, at most the session's.
    pub sandbox: Option<SandboxMode>,
    /// What the role adds to the system prompt.
    pub body: String,
    pub file: PathBuf,
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
    /// When no candidate passes, small changes of the best (an operator,
    /// a constant, a string's ends, a method) are tried in memory against
    /// the request's checks.
    Mutate,
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
    /// An edit that takes out a definition the request does not name is
    /// refused once.
    Keep,
    /// A review of named files asks about each function alone first.
    Review,
}

impl Behaviour {
    pub const ALL: [Behaviour; 15] = [
        Behaviour::Reread,
        Behaviour::Stall,
        Behaviour::Asserts,
        Behaviour::Candidates,
        Behaviour::Refine,
        Behaviour::Mutate,
        Behaviour::Exit0,
        Behaviour::Evidence,
        Behaviour::Rename,
        Behaviour::Named,
        Behaviour::Best,
        Behaviour::Callers,
        Behaviour::Extract,
        Behaviour::Keep,
        Behaviour::Review,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::Reread => "reread",
            Behaviour::Stall => "stall",
            Behaviour::Asserts => "asserts",
            Behaviour::Candidates => "candidates",
            Behaviour::Refine => "refine",
            Behaviour::Mutate => "mutate",
            Behaviour::Exit0 => "exit0",
            Behaviour::Evidence => "evidence",
            Behaviour::Rename => "rename",
            Behaviour::Named => "named",
            Behaviour::Best => "best",
            Behaviour::Callers => "callers",
            Behaviour::Extract => "extract",
            Behaviour::Keep => "keep",
            Behaviour::Review => "review",
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
    /// The wire format requests are sent in (`api:`, else the provider's).
    pub api: Api,
    pub fallback: Option<String>,
    /// Nothing chose a server: try llama-server on 8080, then Ollama.
    pub auto_detect: bool,
    pub api_key: Option<String>,
    pub system: Option<String>,
    pub sampling: serde_json::Map<String, serde_json::Value>,
    pub bash_tool: bool,
    pub edit_tools: bool,
    pub plan_tool: bool,
    /// `planGate`: while an approved plan is carried out, a write to a
    /// file the plan does not name asks.
    pub plan_gate: bool,
    /// `taskTool`: the `task` tool is offered (it is when roles exist too).
    pub task_tool: bool,
    /// The role the session works in (`-role NAME`, or a sub-task's).
    pub role: Option<Role>,
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
    /// `auxUrl`: where aux requests go (None: the main server).
    pub aux_url: Option<String>,
    /// The key for `auxUrl`, from `auxApiKeyEnv`.
    pub aux_api_key: Option<String>,
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
