//! The command line. Compatible with the Go mm: every long flag works with
//! one dash or two (`-prompt` / `--prompt`), and the agent file may come
//! before or after the flags.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, Parser};

use crate::config::{ContextMode, Overrides, SandboxMode};

#[derive(Parser, Debug, Default)]
#[command(
    name = "mm",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("MM_COMMIT"), ")"),
    about = "A coding agent for the terminal, built so small local models deliver real work.",
    long_about = None,
    after_help = "Commands:\n  mm doctor    check the whole setup (server, model, tool calls, fence, ...) and say what to fix\n\n\
Without an agent file, mm uses a llama-server on 127.0.0.1:8080 (then Ollama on 127.0.0.1:11434).\n\
Every long flag also works with a single dash (-prompt, -json, -yolo).\n\
Exit codes: 0 done, 1 failed, 2 usage or config error, 3 budget exhausted, 4 reply truncated, 130 cancelled."
)]
pub struct Cli {
    /// Agent file (YAML) with provider, model, tools and prompt settings.
    #[arg(value_name = "CONFIG.yaml")]
    pub config: Option<PathBuf>,

    /// Run one prompt headless: the answer on stdout, everything else on stderr
    /// (`-p -`: the prompt is read from stdin; with a prompt, text piped on
    /// stdin goes along as context: `git diff | mm -p "review this"`).
    #[arg(
        short = 'p',
        long = "prompt",
        value_name = "PROMPT",
        allow_hyphen_values = true
    )]
    pub prompt: Option<String>,
    /// `-p -`: the prompt was read from stdin (a file's words, not typed).
    #[arg(skip)]
    pub prompt_from_stdin: bool,

    /// Full-screen terminal UI (`ui: tui` in the config makes it the default).
    #[arg(long, conflicts_with = "repl")]
    pub tui: bool,

    /// The line REPL, whatever the config's `ui` says.
    #[arg(long)]
    pub repl: bool,

    /// With -p: print one JSON object (outcome, answer, written files, session, usage).
    /// With -show-prompt: print the first request body.
    #[arg(long)]
    pub json: bool,

    /// With -p: every event as one JSON line on stdout as it happens, then the
    /// result (the -json object) as a line with "type": "result".
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,

    /// With -p: plan, do not change. The model looks with the read-only tools and commands only,
    /// and its answer is a numbered plan (in -json, "plan": its steps); nothing is written.
    #[arg(long, requires = "prompt")]
    pub plan: bool,

    /// With -p: only the answer on stdout and warnings and errors on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Work in the role NAME (.mm/agents/NAME.md or ~/.config/mm/agents/NAME.md): its words join the system prompt, and its model, tools and sandbox apply (never wider than the session's).
    #[arg(long, value_name = "NAME")]
    pub role: Option<String>,

    /// With -p: ask the agent NAME declared under mmConfigs, and print only its answer.
    #[arg(long, value_name = "NAME")]
    pub ask: Option<String>,

    /// With -p: ask the agent NAME, sending it the resumed session's conversation too (-resume).
    #[arg(long, value_name = "NAME")]
    pub ask_with_context: Option<String>,

    /// Speak the Agent Client Protocol on stdin/stdout, for editors (Zed) and other ACP clients.
    #[arg(long)]
    pub acp: bool,

    /// Continue a session: `last` or a session id.
    #[arg(long, value_name = "last|ID")]
    pub resume: Option<String>,

    /// List the sessions of this workspace.
    #[arg(long)]
    pub sessions: bool,

    /// Replay a session's transcript without a model: `last` or an id.
    #[arg(long, value_name = "last|ID")]
    pub show: Option<String>,

    /// With -show: print the session's changes (a diff against its first checkpoint).
    #[arg(long)]
    pub diff: bool,

    /// With -show: write the session to PATH as Markdown (with -json: JSONL events; `-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub export: Option<String>,

    /// Delete the checkpoint refs of every session but the latest (then `git gc` frees them).
    #[arg(long)]
    pub prune: bool,

    /// What the tools may do: read-only, workspace (default), auto (never ask, every command in the fence) or full.
    #[arg(long, value_name = "MODE", value_parser = sandbox_values())]
    pub sandbox: Option<SandboxMode>,

    /// Never ask, and run every command inside the fence (same as -sandbox auto): the mode for unattended runs. -yes (the Go agent's) means the same.
    #[arg(long, visible_alias = "yes", conflicts_with_all = ["yolo", "sandbox"])]
    pub auto: bool,

    /// Full access and never ask, commands outside the fence (same as -sandbox full).
    #[arg(long)]
    pub yolo: bool,

    /// Cut the network for every command and language server mm starts (needs the fence).
    #[arg(long)]
    pub no_net: bool,

    /// Run without the OS fence (bubblewrap) even where it exists; tests and builds then ask.
    #[arg(long)]
    pub unfenced: bool,

    /// Model id (default: what the server has loaded).
    #[arg(long, short = 'm', value_name = "ID", value_hint = clap::ValueHint::Other)]
    pub model: Option<String>,

    /// local, llamacpp, llmman, ollama, lmstudio, vllm, openai, deepseek, openrouter, anthropic,
    /// gemini.
    #[arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other)]
    pub provider: Option<String>,

    /// Base URL of the model server, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL", value_hint = clap::ValueHint::Url)]
    pub url: Option<String>,

    /// Model requests allowed for the whole process, retries and sub-agents included.
    #[arg(long, value_name = "N")]
    pub max_requests: Option<u32>,

    /// Tool rounds per turn, then one tool-less request for a final report (exit 3).
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<u32>,

    /// Completion cap per reply, in tokens (the config's maxTokens; local default 4096).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// The model's context window in tokens, instead of asking the server (the config's contextWindow).
    #[arg(long, value_name = "N")]
    pub context: Option<u64>,

    /// Thinking: off, low, medium, high, xhigh or max (a local server's enable_thinking; a hosted API's reasoning_effort).
    #[arg(long, value_name = "LEVEL")]
    pub think: Option<String>,

    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Print the system prompt (with -json: the first request body) and its size, then exit.
    #[arg(long)]
    pub show_prompt: bool,

    /// Turn off the checking loops (verify, reproduce, claim checks, re-asks): the model's answer ends the turn.
    #[arg(long)]
    pub no_harness: bool,

    /// How each request is made from the conversation: compact (the whole
    /// conversation, summarized near the window) or rebuild (recent turns,
    /// stale file reads dropped, a session-state block); /ctx switches.
    #[arg(long, value_name = "MODE", value_parser = ctx_values())]
    pub ctx: Option<ContextMode>,

    /// Offer no skills (.mm/skills, ~/.config/mm/skills, skillsDir).
    #[arg(long)]
    pub no_skills: bool,

    /// Run the eval cases in DIR (a case folder, or a folder of them); see eval/README.md.
    #[arg(long, value_name = "DIR")]
    pub eval: Option<PathBuf>,

    /// With -eval: runs of each case.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// With -eval: run only the dev half or the held-out half of the cases.
    #[arg(long, value_name = "HALF", value_parser = ["dev", "held-out", "all"])]
    pub half: Option<String>,

    /// Turn off some of the harness's behaviours, to measure each one
    /// (comma-separated: reread, stall, asserts, candidates, refine, mutate,
    /// exit0, evidence, rename, named, best, callers, extract, keep, review; see
    /// docs/small-models.md).
    #[arg(long, value_name = "LIST")]
    pub harness_off: Option<String>,

    /// How an edit task's change is asked for: tools (the model edits with
    /// its tools), whole (mm asks for each file the request names in full,
    /// as text), blocks (mm asks for search/replace blocks and applies
    /// them) or auto (whole when the request adds code to files it names
    /// and is not a fix, tools otherwise); then the model checks it.
    #[arg(long, value_name = "FORMAT", value_parser = edit_format_values())]
    pub edit_format: Option<crate::config::EditFormat>,

    /// Trust this repository's .mm/config.yaml as it is now: its keys that
    /// run commands, reach other servers or widen permissions apply too.
    #[arg(long)]
    pub trust: bool,

    /// Print where each setting comes from (defaults, ~/.config/mm/config.yaml,
    /// .mm/config.yaml, the agent file, flags) and exit.
    #[arg(long)]
    pub show_config: bool,

    /// Print a completion script for SHELL (bash, zsh, fish) and exit.
    #[arg(long, value_name = "SHELL", value_parser = ["bash", "zsh", "fish"])]
    pub completions: Option<String>,

    /// Print the manual page (roff, for `man`) and exit.
    #[arg(long)]
    pub man: bool,
}

// Possible values, so `--help` lists them and shell completion offers them.
fn edit_format_values() -> impl clap::builder::TypedValueParser<Value = crate::config::EditFormat> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["tools", "whole", "blocks", "auto"]).try_map(
        |s: String| {
            crate::config::EditFormat::parse(&s)
                .ok_or_else(|| format!("{s:?} is not an edit format (tools, whole, blocks, auto)"))
        },
    )
}

fn ctx_values() -> impl clap::builder::TypedValueParser<Value = ContextMode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["compact", "rebuild"]).try_map(|s: String| {
        ContextMode::parse(&s)
            .ok_or_else(|| format!("{s:?} is not a context mode (compact, rebuild)"))
    })
}

fn sandbox_values() -> impl clap::builder::TypedValueParser<Value = SandboxMode> {
    use clap::builder::{PossibleValue, TypedValueParser};
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("read-only").alias("readonly"),
        PossibleValue::new("workspace"),
        PossibleValue::new("auto"),
        PossibleValue::new("full"),
    ])
    .try_map(|s: String| {
        SandboxMode::parse(&s).ok_or_else(|| {
            format!("{s:?} is not a sandbox mode (read-only, workspace, auto, full)")
        })
    })
}

/// Writes the completion script for `shell` (bash, zsh or fish).
pub fn completions(shell: &str, out: &mut dyn std::io::Write) -> Result<(), String> {
    use clap_complete::Shell;
    let shell = match shell {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        other => return Err(format!("no completions for {other:?} (bash, zsh, fish)")),
    };
    clap_complete::generate(shell, &mut Cli::command(), "mm", out);
    Ok(())
}

/// Writes the manual page (roff).
pub fn man_page(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)?;
    let roff = |t: &str| t.replace('\\', "\\\\").replace('-', "\\-");
    let mut page = String::from(".SH ENVIRONMENT\n");
    for (var, effect) in MAN_ENVIRONMENT {
        page.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(var), roff(effect)));
    }
    page.push_str(".SH FILES\n");
    for (path, what) in MAN_FILES {
        page.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(path), roff(what)));
    }
    out.write_all(page.as_bytes())
}

const MAN_ENVIRONMENT: &[(&str, &str)] = &[
    ("MM_BASE_URL", "overrides the endpoint of any provider"),
    ("MM_API_KEY", "overrides the API key"),
    (
        "MM_LOCAL_ENDPOINTS",
        "comma-separated base URLs auto-detection tries instead of 127.0.0.1:8080 and :11434",
    ),
    (
        "MM_DATA_DIR",
        "shadow repositories for non-git workspaces and mm's own language servers (default ~/.local/share/mm)",
    ),
    (
        "MM_CONFIG_DIR",
        "the personal config directory (default ~/.config/mm)",
    ),
    (
        "MM_LOG",
        "a tracing filter (debug, mm::lsp=trace), logged to .mm/debug.log",
    ),
    (
        "AGENT_TRACE",
        "1: every request and response written to .mm/traces/SESSION/",
    ),
    ("NO_COLOR", "no colours"),
];

const MAN_FILES: &[(&str, &str)] = &[
    (
        "~/.config/mm/config.yaml",
        "the personal config, the lowest layer above the defaults",
    ),
    (
        "~/.config/mm/AGENTS.md",
        "personal instructions for every project",
    ),
    (
        ".mm/config.yaml",
        "the project's config: the nearest from the working folder up to the repository's root",
    ),
    (
        "AGENTS.md, CLAUDE.md",
        "project instructions, from the repository's root down to the working folder",
    ),
    (".mm/sessions/", "the session logs -resume and -show read"),
    (
        ".mm/commands/, .mm/tools/",
        "custom slash commands and command tools",
    ),
];

impl Cli {
    /// Parses the process arguments, accepting single-dash long flags.
    pub fn parse_args() -> Cli {
        Cli::parse_from(normalize(std::env::args_os()))
    }

    pub fn try_parse_args<I: IntoIterator<Item = OsString>>(args: I) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(normalize(args))
    }

    pub fn overrides(&self) -> Overrides {
        Overrides {
            provider: self.provider.clone(),
            model: self.model.clone(),
            url: self.url.clone(),
            sandbox: if self.auto {
                Some(SandboxMode::Auto)
            } else {
                self.sandbox
            },
            yolo: self.yolo,
            max_rounds: self.max_rounds,
            max_requests: self.max_requests,
            no_harness: self.no_harness,
            harness_off: self.harness_off.clone(),
            edit_format: self.edit_format,
            context_mode: self.ctx,
            no_skills: self.no_skills,
            max_tokens: self.max_tokens,
            context_window: self.context,
            think: self.think.clone(),
        }
    }
}

/// Rewrites `-name` and `-name=value` to `--name` when `name` is a long
/// flag, leaving short flags, values and everything after `--` alone.
pub fn normalize<I: IntoIterator<Item = OsString>>(args: I) -> Vec<OsString> {
    let cmd = Cli::command();
    let mut longs: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    longs.extend(["help".to_string(), "version".to_string()]);
    let mut shorts: Vec<char> = cmd
        .get_arguments()
        .filter_map(clap::Arg::get_short)
        .collect();
    shorts.extend(['h', 'V']);
    let mut out = Vec::new();
    let mut rest_is_positional = false;
    for (i, arg) in args.into_iter().enumerate() {
        if i == 0 || rest_is_positional {
            out.push(arg);
            continue;
        }
        let Some(s) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if s == "--" {
            rest_is_positional = true;
            out.push(arg);
            continue;
        }
        if let Some(body) = s.strip_prefix('-')
            && !body.starts_with('-')
            && body.len() > 1
        {
            let name = body.split('=').next().unwrap_or(body);
            if longs.iter().any(|l| l == name) {
                out.push(OsString::from(format!("-{s}")));
                continue;
            }
            // `-jsn`: a long flag mistyped, not short `-j` with `sn`;
            // as `--jsn` clap names the flag it is close to.
            let flag_like = name.starts_with(|c: char| c.is_ascii_lowercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            // A word that is not one of our flags is never a short flag
            // with its value run on (`-max-tokens` is not `-m ax-tokens`):
            // as `--word`, clap names the flag it is close to.
            if flag_like {
                out.push(OsString::from(format!("-{s}")));
                continue;
            }
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        let mut v = vec![OsString::from("mm")];
        v.extend(args.iter().map(OsString::from));
        Cli::try_parse_args(v).unwrap()
    }

    #[test]
    fn single_and_double_dash_long_flags_are_the_same() {
        let a = parse(&[
            "-prompt",
            "hi",
            "-json",
            "-max-rounds",
            "3",
            "-sandbox",
            "read-only",
        ]);
        let b = parse(&[
            "--prompt",
            "hi",
            "--json",
            "--max-rounds=3",
            "--sandbox=read-only",
        ]);
        assert_eq!(a.prompt, b.prompt);
        assert!(a.json && b.json);
        assert_eq!(a.max_rounds, Some(3));
        assert_eq!(b.max_rounds, Some(3));
        assert_eq!(a.sandbox, Some(SandboxMode::ReadOnly));
    }

    #[test]
    fn the_config_file_may_come_before_or_after_flags() {
        let a = parse(&["agent.yaml", "-p", "x"]);
        let b = parse(&["-p", "x", "agent.yaml"]);
        assert_eq!(a.config, b.config);
        assert_eq!(a.config.unwrap(), PathBuf::from("agent.yaml"));
    }

    #[test]
    fn values_that_look_like_flags_are_left_alone() {
        let c = parse(&["-p", "-json is a flag", "-yolo"]);
        assert_eq!(c.prompt.as_deref(), Some("-json is a flag"));
        assert!(c.yolo);
    }

    #[test]
    fn unknown_flags_and_bad_modes_are_usage_errors() {
        let v = |args: &[&str]| {
            let mut v = vec![OsString::from("mm")];
            v.extend(args.iter().map(OsString::from));
            v
        };
        let e = Cli::try_parse_args(v(&["-frobnicate"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = Cli::try_parse_args(v(&["-sandbox", "open"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        // A mistyped single-dash long flag is named with the one it is near.
        let e = Cli::try_parse_args(v(&["-jsn", "-p", "hi"])).unwrap_err();
        assert!(e.to_string().contains("'--json'"), "{e}");
        // A word that is not a flag is never a short flag with its value
        // run on: `-max-tokenz` is not `-m ax-tokenz`.
        let e = Cli::try_parse_args(v(&["-max-tokenz", "10", "-p", "hi"])).unwrap_err();
        assert!(e.to_string().contains("'--max-tokens'"), "{e}");
        assert!(Cli::try_parse_args(v(&["-mgpt-4", "-p", "hi"])).is_err());
        let c = Cli::try_parse_args(v(&["-m", "gpt-4", "-q", "-p", "hi"])).unwrap();
        assert_eq!(c.model.as_deref(), Some("gpt-4"));
        // The Go agent's -yes is -auto: never asked, inside the fence.
        assert!(Cli::try_parse_args(v(&["-p", "hi", "-yes"])).unwrap().auto);
        // mingo's flags.
        let c = Cli::try_parse_args(v(&[
            "-max-tokens",
            "10",
            "-context",
            "8192",
            "-think",
            "off",
            "-p",
            "hi",
        ]))
        .unwrap();
        let o = c.overrides();
        assert_eq!(
            (o.max_tokens, o.context_window, o.think.as_deref()),
            (Some(10), Some(8192), Some("off"))
        );
    }
}
