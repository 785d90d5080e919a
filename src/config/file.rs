//! The YAML agent file (and `~/.config/mm/config.yaml`, which has the same
//! shape). Keys are the Go mm's, so its agent files load unchanged. Unknown
//! keys and wrong types are errors that name the file, line:col and the
//! closest valid key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::duration;

/// The front end `mm` opens when no flag chooses one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ui {
    #[default]
    Repl,
    Tui,
}

/// How an edit task's change is asked for: the model edits with its
/// tools (`tools`), or mm first asks for each file the request names in
/// full, as text, and writes it (`whole`, Aider's whole-file format), or
/// asks for search/replace blocks and applies them (`blocks`, Aider's
/// diff format). `auto`: `whole` for a request that adds or implements
/// code in the files it names (not a fix), `tools` for the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EditFormat {
    #[default]
    Tools,
    Whole,
    /// Search/replace blocks written as text and applied by mm.
    Blocks,
    /// Whole files for additions to named files, tools otherwise.
    Auto,
}

impl EditFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tools" => Some(EditFormat::Tools),
            "whole" => Some(EditFormat::Whole),
            "blocks" => Some(EditFormat::Blocks),
            "auto" => Some(EditFormat::Auto),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EditFormat::Tools => "tools",
            EditFormat::Whole => "whole",
            EditFormat::Blocks => "blocks",
            EditFormat::Auto => "auto",
        }
    }
}

/// How much the tools may do without asking.
/// Ordered from least to most: a ceiling is a `min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    Workspace,
    /// Never ask, but every command runs inside the fence (unattended
    /// work; what `-eval` uses).
    Auto,
    Full,
}

impl SandboxMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read-only" | "readonly" => Some(SandboxMode::ReadOnly),
            "workspace" => Some(SandboxMode::Workspace),
            "auto" => Some(SandboxMode::Auto),
            "full" => Some(SandboxMode::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Workspace => "workspace",
            SandboxMode::Auto => "auto",
            SandboxMode::Full => "full",
        }
    }
}

pub use crate::protocol::ContextMode;

/// A Go-style duration string in YAML (`30s`, `2m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        duration::parse(&s)
            .map(GoDuration)
            .map_err(serde::de::Error::custom)
    }
}

/// Another agent file this agent can ask (`ask_agent`, `--ask NAME`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAgentRef {
    pub path: String,
    #[serde(default)]
    pub description: String,
    /// Grant the asked agent's permission requests (the Go mm's key).
    #[serde(default)]
    pub yolo: Option<bool>,
}

/// What an MCP tool may do without asking (`permission`, `tools`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpPermission {
    Allow,
    #[default]
    Ask,
    Deny,
}

/// An MCP server (`mcpServers`; the Go agent's `mcp_servers` too): a
/// command started over stdio, or a streamable-HTTP url.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct McpServerFile {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Set for the command, `${VAR}` expanded from mm's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The command's folder, inside the workspace (default: its root).
    pub cwd: Option<String>,
    pub url: Option<String>,
    /// Sent with every HTTP request, `${VAR}` expanded.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Tools keep their own names instead of `server__tool`.
    #[serde(default, alias = "no_prefix")]
    pub no_prefix: bool,
    /// The system prompt says to prefer this server's tools.
    #[serde(default)]
    pub prefer: bool,
    /// The words of that line.
    #[serde(alias = "prefer_hint")]
    pub prefer_hint: Option<String>,
    /// Every tool's permission (default `ask`).
    pub permission: Option<McpPermission>,
    /// Per tool, by the server's name for it.
    #[serde(default)]
    pub tools: BTreeMap<String, McpPermission>,
    /// Seconds a call may take (default 120).
    #[serde(alias = "timeout_sec")]
    pub timeout_sec: Option<u64>,
    /// `false` keeps the server configured but not started.
    pub enabled: Option<bool>,
}

/// Commands mm runs on its own, without a model turn (`hooks`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hooks {
    /// After each file change a tool made (a formatter).
    pub after_edit: Option<String>,
    /// Before `/commit` commits; a failure stops the commit.
    pub before_commit: Option<String>,
    /// When a turn ends.
    pub turn_end: Option<String>,
}

/// How the agent introduces itself to an ACP client.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpInfo {
    pub name: Option<String>,
    pub title: Option<String>,
}

/// Every key an agent file may hold; all optional, later layers win.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentFile {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Tried when `baseUrl` does not answer.
    pub fallback: Option<String>,
    /// Plain http to a public host (a private network's is always allowed).
    pub allow_insecure_http: Option<bool>,
    /// Name of the environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// The wire format: `chat` (Chat Completions), `messages` (Anthropic)
    /// or `responses` (OpenAI Responses); by default the provider's.
    pub api: Option<String>,
    pub system: Option<String>,
    /// Passed through to the request body as is (temperature, max_tokens,
    /// top_p, parallel_tool_calls, chat_template_kwargs, ...).
    pub sampling: Option<serde_json::Map<String, serde_json::Value>>,
    pub bash_tool: Option<bool>,
    pub edit_tools: Option<bool>,
    pub plan_tool: Option<bool>,
    pub plan_gate: Option<bool>,
    /// Offer the `task` tool: a sub-task handed to a child agent with a
    /// fresh context (also on when roles are defined).
    pub task_tool: Option<bool>,
    pub skills_dir: Option<String>,
    pub yolo: Option<bool>,
    pub sandbox: Option<SandboxMode>,
    pub mm_configs: Option<BTreeMap<String, SubAgentRef>>,
    /// MCP servers whose tools join mm's (`mcp_servers`: the Go agent's key).
    #[serde(alias = "mcp_servers")]
    pub mcp_servers: Option<BTreeMap<String, McpServerFile>>,
    /// Commands run on their own: `afterEdit`, `beforeCommit`, `turnEnd`.
    pub hooks: Option<Hooks>,
    /// Offer `fetch_content` (web pages as text); default false.
    pub fetch_content: Option<bool>,
    /// Let `fetch_content` reach loopback and private addresses.
    pub fetch_private: Option<bool>,
    /// Variables the secret filter drops that commands the user approved
    /// get anyway (`SSH_AUTH_SOCK` for `git push` over ssh).
    pub env_passthrough: Option<Vec<String>>,
    /// The front end `mm` opens without -p: `repl` (default) or `tui`.
    pub ui: Option<Ui>,
    pub acp: Option<AcpInfo>,
    pub max_turns: Option<u32>,
    pub max_requests: Option<u32>,
    pub watchdog_timeout: Option<GoDuration>,
    pub first_token_timeout: Option<GoDuration>,
    pub bash_timeout: Option<GoDuration>,
    /// Go type declarations: the JSON shape of every answer (compiled
    /// when the config loads; the place gives errors their line:col).
    pub structured_output: Option<serde_saphyr::Spanned<String>>,
    pub context_window: Option<u64>,
    /// Completion cap for local servers (default 4096).
    pub max_tokens: Option<u64>,
    /// Interactive runs ask before a file tool changes a file (default true).
    pub approve_edits: Option<bool>,
    /// TUI theme name (`dark`, `light`, `high-contrast`, or a user file).
    pub theme: Option<String>,
    /// TUI keymap name (`default`, `vim`, `emacs`, or a user file).
    pub keymap: Option<String>,
    /// Checkpoints of sessions older than this many days are pruned at
    /// start (default 30; 0 keeps them all).
    pub checkpoint_days: Option<u64>,
    /// Language servers: changes to the built-in ones, or new ones.
    pub lsp: Option<BTreeMap<String, super::servers::ServerFile>>,
    /// The command that runs the project's tests (`off`: never run them;
    /// unset: detected from the workspace).
    pub verify: Option<String>,
    /// Rounds of "the tests fail, fix them" per turn (default 3).
    pub verify_attempts: Option<u32>,
    /// The checking loops (verify, reproduce, claim checks, re-asks);
    /// default true.
    pub harness: Option<bool>,
    /// Harness behaviours turned off one by one, to measure each
    /// (`reread`, `stall`, `asserts`, `candidates`, `refine`, `exit0`,
    /// `evidence`, `rename`, `named`, `best`, `callers`, `extract`).
    pub harness_off: Option<Vec<String>>,
    /// How an edit task's change is asked for: `tools` (default) or
    /// `whole` (each named file in full, as text).
    pub edit_format: Option<EditFormat>,
    /// Alternative changes tried against a failing check, each in a
    /// scratch copy (default 3; 0: none).
    pub candidates: Option<u32>,
    /// Time the candidates of one turn may take together (default 240s).
    pub candidate_time: Option<GoDuration>,
    /// Compact the conversation when the next request would fill this
    /// share of the window, in percent (default 80; 0: never on its own).
    pub compact_at: Option<u32>,
    /// How requests are made from the conversation: `compact` (default)
    /// or `rebuild`.
    pub context_mode: Option<ContextMode>,
    /// The model that writes compaction summaries, `/commit` messages and
    /// session titles (on the same server, or on `auxUrl`).
    pub aux_model: Option<String>,
    /// The chat-completions server `auxModel` is on, when not the main one.
    pub aux_url: Option<String>,
    /// The environment variable holding `auxUrl`'s key (none is sent
    /// otherwise: the main key never goes to another server).
    pub aux_api_key_env: Option<String>,
    /// Every request and response to `.mm/traces/<session>/` (the Go mm's
    /// key; `AGENT_TRACE=1` too).
    pub trace: Option<bool>,
    /// A warning when a run's time passes this many minutes, and at each
    /// further 50%; never a stop.
    pub budget_minutes: Option<u64>,
    /// A warning when a run's tokens pass this many thousand, and at each
    /// further 50%; never a stop.
    pub budget_k_tokens: Option<u64>,
    /// A turn longer than this rings the bell and notifies when it ends,
    /// as does a question waiting after it (default 10s; 0s: never).
    pub notify_after: Option<GoDuration>,
    /// What hosted models cost, by model name (`/cost`, `/stats`).
    pub prices: Option<BTreeMap<String, Price>>,
}

/// What a hosted model costs, in dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    /// Prompt tokens the server took from its cache (default: `input`).
    pub cached: Option<f64>,
    pub output: f64,
}

/// A configuration error, with its place in the file when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub position: Option<(u64, u64)>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, col)) => write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                line,
                col,
                self.message
            ),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl AgentFile {
    /// The keys set here that run code, send the work elsewhere or widen
    /// what mm may do: a repository's own config gets them only when the
    /// user trusts it (`mm -trust`).
    pub fn trusted_only_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        macro_rules! check {
            ($($field:ident => $key:literal),*) => { $( if self.$field.is_some() { keys.push($key); } )* };
        }
        check!(
            provider => "provider",
            base_url => "baseUrl",
            fallback => "fallback",
            allow_insecure_http => "allowInsecureHttp",
            api_key_env => "apiKeyEnv",
            aux_url => "auxUrl",
            aux_api_key_env => "auxApiKeyEnv",
            skills_dir => "skillsDir",
            yolo => "yolo",
            sandbox => "sandbox",
            mm_configs => "mmConfigs",
            mcp_servers => "mcpServers",
            hooks => "hooks",
            fetch_content => "fetchContent",
            fetch_private => "fetchPrivate",
            env_passthrough => "envPassthrough",
            approve_edits => "approveEdits",
            lsp => "lsp",
            verify => "verify",
            // Retention and a command's limit: a clone must not delete
            // the user's checkpoints or make every command hang.
            checkpoint_days => "checkpointDays",
            bash_timeout => "bashTimeout"
        );
        // Turning a tool on widens what mm may do (the user's own config
        // may have turned it off); turning it off narrows it.
        if self.bash_tool == Some(true) {
            keys.push("bashTool");
        }
        if self.edit_tools == Some(true) {
            keys.push("editTools");
        }
        keys
    }

    /// Leaves out the keys `trusted_only_keys` names.
    pub fn drop_trusted_only(&mut self) {
        self.provider = None;
        self.base_url = None;
        self.fallback = None;
        self.allow_insecure_http = None;
        self.api_key_env = None;
        self.aux_url = None;
        self.aux_api_key_env = None;
        self.skills_dir = None;
        self.yolo = None;
        self.sandbox = None;
        self.mm_configs = None;
        self.mcp_servers = None;
        self.hooks = None;
        self.fetch_content = None;
        self.fetch_private = None;
        self.env_passthrough = None;
        self.approve_edits = None;
        self.lsp = None;
        self.checkpoint_days = None;
        self.bash_timeout = None;
        self.verify = None;
        if self.bash_tool == Some(true) {
            self.bash_tool = None;
        }
        if self.edit_tools == Some(true) {
            self.edit_tools = None;
        }
    }

    /// Reads and checks one YAML file.
    pub fn load(path: &Path) -> Result<AgentFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            position: None,
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<AgentFile, ConfigError> {
        if text.trim().is_empty() {
            return Ok(AgentFile::default());
        }
        // A tab in the indentation: the parser names the line before it.
        if let Some(n) = text.lines().position(|l| l.starts_with('\t')) {
            return Err(ConfigError {
                file: path.to_path_buf(),
                position: Some((n as u64 + 1, 1)),
                message: "a tab in the indentation; YAML indents with spaces".into(),
            });
        }
        serde_saphyr::from_str::<AgentFile>(text).map_err(|e| describe(path, &e))
    }
}

/// Turns a YAML error into one line that says what to change.
pub(crate) fn describe(path: &Path, err: &serde_saphyr::Error) -> ConfigError {
    let position = err
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| (l.line(), l.column()));
    ConfigError {
        file: path.to_path_buf(),
        position,
        message: explain(&first_line(&err.to_string())),
    }
}

/// The error text without the source snippet and the position the YAML
/// library adds (ours is printed in front already).
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("invalid YAML").trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    if let Some(rest) = line.strip_prefix("line ")
        && let Some(i) = rest.find(": ")
        && rest[..i].contains("column")
    {
        return rest[i + 2..].to_string();
    }
    match line.rfind(" at line ") {
        Some(i) => line[..i].trim().to_string(),
        None => line.to_string(),
    }
}

/// Rewrites serde's "unknown field `x`, expected one of a, b" to name the
/// closest valid key.
fn explain(message: &str) -> String {
    // The parser's words for a number that is not one.
    if let Some(kind) = message.strip_prefix("invalid ")
        && matches!(kind, "u8" | "u16" | "u32" | "u64" | "i32" | "i64" | "usize")
    {
        return "expected a whole number".into();
    }
    if matches!(message, "invalid f32" | "invalid f64") {
        return "expected a number".into();
    }
    if message == "expected string scalar" {
        return "expected a single value here, not a list or a map (or a bracket or quote was left open)".into();
    }
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((field, tail)) = rest.split_once('`') else {
        return message.to_string();
    };
    let list = tail
        .trim_start_matches(',')
        .trim()
        .trim_start_matches("expected one of")
        .trim_start_matches("expected")
        .trim();
    let expected: Vec<&str> = list
        .split([',', ' '])
        .map(|s| s.trim().trim_matches('`'))
        .filter(|s| !s.is_empty() && *s != "or")
        .collect();
    match closest(field, &expected) {
        Some(best) => format!("unknown key {field:?}; the closest valid key is {best:?}"),
        None => format!("unknown key {field:?}"),
    }
}

/// The valid key nearest to a mistyped one (case-insensitive edit distance).
pub fn closest<'a>(field: &str, expected: &[&'a str]) -> Option<&'a str> {
    let lower = field.to_ascii_lowercase();
    expected
        .iter()
        .map(|cand| {
            let score = strsim::normalized_damerau_levenshtein(&lower, &cand.to_ascii_lowercase());
            (score, *cand)
        })
        .filter(|(score, _)| *score > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, cand)| cand)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Red-team round 14: a repository's config turned the bash tool back
    /// on over the user's `bashTool: false`, untrusted.
    #[test]
    fn turning_a_tool_on_waits_for_trust_and_turning_it_off_does_not() {
        let parse = |t: &str| AgentFile::parse(Path::new("c.yaml"), t).unwrap();
        let mut on = parse("bashTool: true\neditTools: true\n");
        assert_eq!(on.trusted_only_keys(), ["bashTool", "editTools"]);
        on.drop_trusted_only();
        assert_eq!((on.bash_tool, on.edit_tools), (None, None));
        let mut off = parse("bashTool: false\n");
        assert!(off.trusted_only_keys().is_empty());
        off.drop_trusted_only();
        assert_eq!(off.bash_tool, Some(false));
    }

    #[test]
    fn yaml_errors_say_what_to_change_at_the_right_line() {
        let err = |text: &str| {
            AgentFile::parse(Path::new("a.yaml"), text)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("model: x\nmaxTurns: \"abc\"\n"),
            "a.yaml:2:11: expected a whole number"
        );
        assert_eq!(
            err("model: x\n\tmaxTurns: 3\n"),
            "a.yaml:2:1: a tab in the indentation; YAML indents with spaces"
        );
        assert!(err("model: x\ncompactAt: [70\n").starts_with("a.yaml:2:"));
    }

    fn parse(text: &str) -> Result<AgentFile, ConfigError> {
        AgentFile::parse(Path::new("agent.yaml"), text)
    }

    #[test]
    fn reads_the_go_keys() {
        let f = parse(
            "provider: llmman\nmodel: m\nbaseUrl: http://127.0.0.1:1/v1\nfallback: http://x/v1\n\
             bashTool: false\neditTools: true\nplanTool: false\nskillsDir: no-skills\nyolo: true\n\
             maxTurns: 20\nwatchdogTimeout: 2m\nfirstTokenTimeout: 3m\n\
             sampling:\n  temperature: 0.0\n  chat_template_kwargs:\n    enable_thinking: false\n\
             acp:\n  name: bob\n  title: Bob\n\
             mmConfigs:\n  countries:\n    path: a.yaml\n    description: d\n    yolo: true\n\
             structuredOutput: |\n  type A struct {}\n  var X = A{}\n",
        )
        .unwrap();
        assert_eq!(f.provider.as_deref(), Some("llmman"));
        assert_eq!(f.max_turns, Some(20));
        assert_eq!(
            f.watchdog_timeout,
            Some(GoDuration(Duration::from_secs(120)))
        );
        let sampling = f.sampling.unwrap();
        assert_eq!(sampling["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(f.mm_configs.unwrap()["countries"].path, "a.yaml");
        assert!(f.structured_output.unwrap().value.contains("var X"));
    }

    #[test]
    fn an_unknown_key_names_line_col_and_the_closest_key() {
        let err = parse("model: m\nbaseURL: http://127.0.0.1/v1\n").unwrap_err();
        assert_eq!(err.position, Some((2, 1)), "{err}");
        assert!(err.message.contains("\"baseURL\""), "{err}");
        assert!(err.message.contains("\"baseUrl\""), "{err}");
        assert!(err.to_string().starts_with("agent.yaml:2:1: "), "{err}");
    }

    #[test]
    fn a_wrong_type_names_its_place() {
        let err = parse("model: m\nmaxTurns: lots\n").unwrap_err();
        assert_eq!(err.position.map(|p| p.0), Some(2), "{err}");
        let err = parse("watchdogTimeout: 30\n").unwrap_err();
        assert_eq!(err.position.map(|p| p.0), Some(1), "{err}");
        assert!(err.message.contains("unit"), "{err}");
    }

    #[test]
    fn a_nested_unknown_key_is_caught_too() {
        let err = parse("acp:\n  name: x\n  titel: y\n").unwrap_err();
        assert_eq!(err.position, Some((3, 3)), "{err}");
        assert!(err.message.contains("\"title\""), "{err}");
    }

    #[test]
    fn closest_key_prefers_the_nearest_spelling() {
        let keys = ["baseUrl", "bashTool", "model", "maxTurns"];
        assert_eq!(closest("base_url", &keys), Some("baseUrl"));
        assert_eq!(closest("maxturn", &keys), Some("maxTurns"));
        assert_eq!(closest("modle", &keys), Some("model"));
    }
}
