//! The system prompt: short rules, the environment, the project's
//! AGENTS.md. It is a stable prefix (no dates, no counters), so a local
//! server serves it from its KV cache on every request after the first.
//! The template is `assets/prompts/system.md`; a user replaces it with
//! `~/.config/mm/prompts/system.md` or `./.mm/prompts/system.md`.
//!
//! No concrete paths, file names or code in it: small models copy
//! examples from their prompt (measured: one agent edited a file that only
//! existed in its prompt's example).

use std::path::Path;

use crate::config::{SandboxMode, Settings};

const DEFAULT_TEMPLATE: &str = include_str!("../../assets/prompts/system.md");
/// For a session whose tools only look (a reviewer role's `read_file`,
/// `grep`): the rules for changing files pulled a small model's reviews
/// toward "already in the correct state, no changes needed".
const LOOKING_TEMPLATE: &str = include_str!("../../assets/prompts/looking.md");
const DEFAULT_IDENTITY: &str =
    "You are mm, a coding agent. You work in the user's workspace by calling tools.";

/// What the prompt says about the environment.
pub struct PromptEnv<'a> {
    pub root: &'a Path,
    /// True when nobody can answer an approval (headless).
    pub unattended: bool,
    /// Tests and builds run without asking, inside the OS fence.
    pub fenced: bool,
    /// The skills offered (their catalog joins the prompt).
    pub skills: &'a [crate::skills::Skill],
}

fn template(root: &Path, looking: bool) -> String {
    let local = workspace_text(root, ".mm/prompts/system.md");
    let user = crate::config::user_config_dir()
        .and_then(|d| read_text(&d.join("prompts").join("system.md")));
    let default = if looking {
        LOOKING_TEMPLATE
    } else {
        DEFAULT_TEMPLATE
    };
    local.or(user).unwrap_or_else(|| default.to_string())
}

/// The session's tools only look: its role (or the one that started it)
/// allows neither a file tool that writes nor commands.
fn only_looks(settings: &Settings) -> bool {
    let Some(allowed) = crate::roles::tool_ceiling(settings.role.as_ref()) else {
        return false;
    };
    !allowed
        .iter()
        .any(|n| crate::toolname::edits(n) || n == crate::toolname::ToolName::Bash.as_str())
}

/// A text file of at most 256 KiB, only if it is a regular file (a FIFO
/// named AGENTS.md froze mm before its first request).
fn read_text(path: &Path) -> Option<String> {
    let bytes = crate::paths::read_regular(path, 256 * 1024).ok()?;
    String::from_utf8(bytes).ok()
}

/// A file of the workspace that goes into every request: read only when
/// it resolves inside the workspace and does not look like a credential
/// (an `AGENTS.md` linked to `.env` or `~/.ssh/id_rsa` sent it to the
/// model).
fn workspace_text(root: &Path, rel: &str) -> Option<String> {
    let r = crate::paths::resolve(root, rel).ok()?;
    let real = crate::paths::own_file(&r.abs, root).ok()?;
    String::from_utf8(crate::paths::read_checked(&real, 256 * 1024).ok()?).ok()
}

fn sandbox_line(mode: SandboxMode, env: &PromptEnv<'_>, bash: bool) -> String {
    if !bash {
        return "sandbox: file tools only, inside the workspace".into();
    }
    let runs = if env.fenced {
        "read-only commands, tests and builds"
    } else {
        "read-only commands"
    };
    match (mode, env.unattended) {
        (SandboxMode::ReadOnly, _) => {
            format!("sandbox: read-only; files cannot be changed and only {runs} run")
        }
        (SandboxMode::Full, _) => "sandbox: full access inside the workspace".into(),
        (SandboxMode::Auto, _) => {
            "sandbox: every command runs at once, in a fence; only workspace files can change"
                .into()
        }
        (SandboxMode::Workspace, false) => {
            format!("sandbox: {runs} run at once; other commands wait for the user's approval")
        }
        (SandboxMode::Workspace, true) => {
            format!("sandbox: unattended run; only {runs} run, others are refused")
        }
    }
}

/// Builds the system prompt for an agent.
pub fn system_prompt(settings: &Settings, env: &PromptEnv<'_>) -> String {
    let identity = settings
        .system
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_IDENTITY);
    if let Some(s) = &settings.structured {
        // A grammar constrains the syntax, not the meaning: the model reads
        // the declarations and their comments.
        return format!(
            "{identity}\n\nAnswer with JSON only: one value of the shape these Go declarations give ({} is the answer; keys are the json tags; a comment says what its field holds; a pointer may be null).\n\n{}\n",
            s.name, s.source
        );
    }
    let role = settings
        .role
        .as_ref()
        .map(crate::roles::prompt_part)
        .unwrap_or_default();
    if !settings.bash_tool && !settings.edit_tools {
        // An agent without tools gets its own words only.
        return format!("{identity}\n{role}");
    }
    let git = if env.root.join(".git").exists() || find_git_above(env.root) {
        "yes"
    } else {
        "no"
    };
    let mut prompt = template(env.root, only_looks(settings))
        .replace("{{identity}}", identity)
        .replace("{{root}}", &env.root.to_string_lossy())
        .replace("{{os}}", std::env::consts::OS)
        .replace("{{git}}", git)
        .replace(
            "{{sandbox}}",
            &sandbox_line(settings.sandbox, env, settings.bash_tool),
        );
    let prefer = crate::mcp::prefer_lines(&settings.mcp_servers);
    if !prefer.is_empty() {
        prompt.push_str("\nMCP servers:\n");
        prompt.push_str(&prefer.join("\n"));
        prompt.push('\n');
    }
    if !env.skills.is_empty() {
        prompt.push_str(&crate::skills::catalog(env.skills));
    }
    prompt.push_str(
        &crate::instructions::for_prompt(env.root, crate::config::user_config_dir().as_deref())
            .section(),
    );
    prompt.push_str(&role);
    prompt
}

fn find_git_above(root: &Path) -> bool {
    root.ancestors().skip(1).any(|p| p.join(".git").exists())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, resolve};

    #[test]
    fn the_prompt_is_stable_and_carries_agents_md() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("AGENTS.md"),
            "Run the tests with make check.",
        )
        .unwrap();
        let s = resolve(&[], &Overrides::default(), None, &|_| None).unwrap();
        let env = PromptEnv {
            fenced: false,
            root: dir.path(),
            unattended: false,
            skills: &[],
        };
        let a = system_prompt(&s, &env);
        let b = system_prompt(&s, &env);
        assert_eq!(a, b);
        assert!(a.contains("Run the tests with make check."));
        assert!(a.contains(&dir.path().to_string_lossy().into_owned()));
        assert!(!a.contains("{{"), "{a}");
    }

    #[test]
    fn a_role_whose_tools_only_look_is_told_to_answer_not_to_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = resolve(&[], &Overrides::default(), None, &|_| None).unwrap();
        let env = PromptEnv {
            fenced: false,
            root: dir.path(),
            unattended: false,
            skills: &[],
        };
        let role = |tools: &[&str]| crate::config::Role {
            name: "reviewer".into(),
            description: "reviews".into(),
            model: None,
            tools: Some(tools.iter().map(|t| (*t).to_string()).collect()),
            sandbox: None,
            body: "Point out bugs.".into(),
            file: std::path::PathBuf::from("reviewer.md"),
        };
        s.role = Some(role(&["read_file", "grep"]));
        let looking = system_prompt(&s, &env);
        assert!(
            looking.contains("you have no tool that changes a file"),
            "{looking}"
        );
        assert!(
            !looking.contains("never describe a change, make it"),
            "{looking}"
        );
        assert!(looking.contains("Point out bugs."));
        s.role = Some(role(&["read_file", "edit_file"]));
        let changing = system_prompt(&s, &env);
        assert!(
            changing.contains("never describe a change, make it"),
            "{changing}"
        );
        s.role = None;
        assert!(system_prompt(&s, &env).contains("never describe a change, make it"));
    }

    #[test]
    fn an_agent_without_tools_gets_only_its_own_words() {
        let dir = tempfile::tempdir().unwrap();
        let layer = crate::config::AgentFile::parse(
            std::path::Path::new("a.yaml"),
            "system: You answer in JSON.\nbashTool: false\neditTools: false\n",
        )
        .unwrap();
        let s = resolve(&[(None, layer)], &Overrides::default(), None, &|_| None).unwrap();
        let env = PromptEnv {
            fenced: false,
            root: dir.path(),
            unattended: true,
            skills: &[],
        };
        assert_eq!(system_prompt(&s, &env), "You answer in JSON.\n");
    }
}
