//! Roles: `.mm/agents/NAME.md` (the repository's) and
//! `~/.config/mm/agents/NAME.md` (personal; the repository's shadows it),
//! and the Go agent's `.agent/agents/` and `~/.agent/agents/` after each.
//! A role is words for the system prompt of an agent that works in it
//! (`mm -role NAME`, or a sub-task the `task` tool starts in it), with
//! optional settings: `model` (on the same server), `tools` (the only
//! tools it is offered) and `sandbox` (its mode, at most the session's).
//!
//! The settings are a YAML front matter (`---` lines around it), or, as
//! the Go agent writes them, `key: value` lines at the top of the file
//! before a blank line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::commands::Tools;
pub use crate::config::Role;
use crate::config::{SandboxMode, Settings};
use crate::llm::ToolSpec;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Front {
    description: Option<String>,
    model: Option<String>,
    #[serde(alias = "allowedTools", alias = "allowed-tools")]
    tools: Option<Tools>,
    sandbox: Option<String>,
}

/// The keys a role's header may set.
const KEYS: [&str; 4] = ["description", "model", "tools", "sandbox"];

/// The Go agent's header: `key: value` lines of known keys at the top,
/// up to the first line that is not one. (front as YAML, body)
fn plain_header(text: &str) -> (String, &str) {
    let mut front = String::new();
    let mut rest = text;
    while let Some((line, after)) = rest.split_once('\n').or(Some((rest, ""))) {
        let Some((key, _)) = line.split_once(':') else {
            break;
        };
        if !KEYS.contains(&key.trim()) || key.starts_with(char::is_whitespace) {
            break;
        }
        front.push_str(line.trim_end());
        front.push('\n');
        rest = after;
        if after.is_empty() {
            break;
        }
    }
    (front, rest)
}

fn read_role(file: &Path, name: &str) -> Result<Role, String> {
    let text = crate::paths::read_small_text(file).map_err(|e| e.to_string())?;
    let (front, body) = match crate::skills::split_front(&text) {
        Some((front, body)) => (front.to_string(), body),
        None => plain_header(&text),
    };
    let f: Front = if front.trim().is_empty() {
        Front::default()
    } else {
        serde_saphyr::from_str(&front).map_err(|e| format!("its settings: {e}"))?
    };
    let body = body.trim().to_string();
    if body.is_empty() {
        return Err("no words for the role after its settings".into());
    }
    let sandbox = match f.sandbox.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => Some(SandboxMode::parse(s).ok_or_else(|| {
            format!("sandbox: {s:?} is not a mode (read-only, workspace, auto, full)")
        })?),
    };
    let description = f
        .description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| body.lines().next().unwrap_or("").chars().take(60).collect());
    Ok(Role {
        name: name.to_string(),
        description: description.trim().to_string(),
        model: f.model.filter(|m| !m.trim().is_empty()),
        tools: f.tools.map(Tools::names),
        sandbox,
        body,
        file: file.to_path_buf(),
    })
}

/// The roles of a workspace: its own (`.mm/agents`, then the Go agent's
/// `.agent/agents`), then the personal folders' in order, each shadowing
/// the same name further on; sorted by name, broken files as warnings.
pub fn load(root: &Path, personal: &[PathBuf]) -> (Vec<Role>, Vec<String>) {
    let (mut found, mut warnings): (Vec<Role>, Vec<String>) = (Vec::new(), Vec::new());
    let dirs = [".mm", ".agent"]
        .iter()
        .map(|d| (root.join(d).join("agents"), Some(root)))
        .chain(personal.iter().map(|p| (p.clone(), None)));
    for (dir, within) in dirs {
        for (name, file) in crate::commands::markdown_files(&dir, within, "role", &mut warnings) {
            if found.iter().any(|r| r.name == name) {
                continue;
            }
            match read_role(&file, &name) {
                Ok(r) => found.push(r),
                Err(why) => warnings.push(format!("role {} left out: {why}", file.display())),
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, warnings)
}

/// The roles of a session in `root`: personal ones from
/// `~/.config/mm/agents`, then the Go agent's `~/.agent/agents`.
pub fn for_session(root: &Path) -> (Vec<Role>, Vec<String>) {
    load(root, &crate::commands::personal_dirs("agents"))
}

/// The role called `name` in `root`, or what to say.
pub fn find(root: &Path, name: &str) -> Result<Role, String> {
    let (roles, warnings) = for_session(root);
    if let Some(r) = roles.iter().find(|r| r.name == name) {
        return Ok(r.clone());
    }
    if let Some(w) = warnings.iter().find(|w| w.contains(&format!("{name}.md"))) {
        return Err(w.clone());
    }
    let known: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
    Err(format!(
        "no role named {name:?} (.mm/agents/{name}.md or ~/.config/mm/agents/{name}.md); the roles here: {}",
        if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        }
    ))
}

/// The session's settings in `role`: its model, its mode (at most the
/// session's: a role never widens what the user allowed) and its words.
pub fn apply(settings: &mut Settings, role: Role) {
    if let Some(m) = &role.model {
        settings.model = Some(m.clone());
    }
    if let Some(mode) = role.sandbox {
        settings.sandbox = settings.sandbox.min(mode);
        if settings.sandbox != SandboxMode::Full {
            settings.yolo = false;
        }
    }
    settings.role = Some(role);
}

/// The tools a session may offer: those its role names, within those the
/// session that asked it may offer (`MM_TOOLS_CEILING`); None: any.
pub fn tool_ceiling(role: Option<&Role>) -> Option<Vec<String>> {
    let inherited: Option<Vec<String>> =
        std::env::var(crate::config::ASK_TOOLS_VAR).ok().map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        });
    // Only names a tool can have: one with a comma in it matches no tool
    // here, and must not become two in the variable a helper reads.
    let own = role.and_then(|r| r.tools.clone()).map(|t| {
        t.into_iter()
            .filter(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            })
            .collect::<Vec<_>>()
    });
    match (inherited, own) {
        (Some(up), Some(own)) => Some(own.into_iter().filter(|n| up.contains(n)).collect()),
        (up, own) => up.or(own),
    }
}

/// The tools a session in `role` is offered: those the role names, when
/// it names any, and none its asker could not offer.
pub fn keep_tools(specs: &mut Vec<ToolSpec>, role: Option<&Role>) {
    if let Some(allowed) = tool_ceiling(role) {
        specs.retain(|s| allowed.iter().any(|a| *a == s.name));
    }
}

/// The system prompt's part for `role`.
pub fn prompt_part(role: &Role) -> String {
    format!("\nYour role: {}\n{}\n", role.name, role.body)
}

/// What `/agents` shows.
pub fn listing(roles: &[Role], warnings: &[String]) -> String {
    let mut out = String::new();
    if roles.is_empty() {
        out.push_str("no roles: add .mm/agents/NAME.md (or ~/.config/mm/agents/NAME.md); its words join the system prompt of a sub-task started in it\n");
    }
    for r in roles {
        let mut extra: Vec<String> = Vec::new();
        if let Some(m) = &r.model {
            extra.push(format!("model {m}"));
        }
        if let Some(t) = &r.tools {
            extra.push(format!("tools {}", t.join(", ")));
        }
        if let Some(s) = r.sandbox {
            extra.push(format!("sandbox {}", s.as_str()));
        }
        out.push_str(&format!(
            "{}  {}{}  ({})\n",
            r.name,
            r.description,
            if extra.is_empty() {
                String::new()
            } else {
                format!(" [{}]", extra.join("; "))
            },
            r.file.display()
        ));
    }
    for w in warnings {
        out.push_str(&format!("{w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn roles_load_from_both_spellings_and_the_repository_shadows_the_personal_one() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(
            ws.path(),
            ".mm/agents/reviewer.md",
            "---\ndescription: Reviews a change\ntools: [read_file, grep]\nsandbox: read-only\n---\nYou review. Report; change nothing.\n",
        );
        // The Go agent's header: key lines, a blank line, the words.
        write(
            ws.path(),
            ".agent/agents/tester.md",
            "model: qwen2.5-coder-14b\n\nYou run the tests and say what fails.\nNote: only the failures.\n",
        );
        write(home.path(), "reviewer.md", "Personal reviewer.\n");
        write(home.path(), "scout.md", "Note: you search.\n");
        write(home.path(), "bad.md", "---\nsandbox: open\n---\nwords\n");
        write(home.path(), "Bad name.md", "words\n");
        let (roles, warnings) = load(ws.path(), &[home.path().to_path_buf()]);
        let names: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["reviewer", "scout", "tester"]);
        let rev = &roles[0];
        assert_eq!(rev.description, "Reviews a change");
        assert_eq!(
            rev.tools.as_deref(),
            Some(&["read_file".to_string(), "grep".to_string()][..])
        );
        assert_eq!(rev.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(rev.body, "You review. Report; change nothing.");
        let tester = &roles[2];
        assert_eq!(tester.model.as_deref(), Some("qwen2.5-coder-14b"));
        assert!(tester.body.starts_with("You run the tests"), "{tester:?}");
        assert!(tester.body.ends_with("Note: only the failures."));
        // A first line that is not a known key is the role's words.
        assert_eq!(roles[1].body, "Note: you search.");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("bad.md") && w.contains("\"open\""))
        );
        assert!(warnings.iter().any(|w| w.contains("Bad name.md")));
    }

    #[test]
    fn a_role_narrows_the_session_and_never_widens_it() {
        let role = |sandbox| Role {
            name: "r".into(),
            description: String::new(),
            model: Some("small".into()),
            tools: Some(vec!["read_file".into()]),
            sandbox,
            body: "words".into(),
            file: PathBuf::new(),
        };
        let mut s =
            crate::config::resolve(&[], &crate::config::Overrides::default(), None, &|_| None)
                .unwrap();
        s.sandbox = SandboxMode::Workspace;
        let mut wide = s.clone();
        apply(&mut wide, role(Some(SandboxMode::Full)));
        assert_eq!(wide.sandbox, SandboxMode::Workspace);
        assert_eq!(wide.model.as_deref(), Some("small"));
        apply(&mut s, role(Some(SandboxMode::ReadOnly)));
        assert_eq!(s.sandbox, SandboxMode::ReadOnly);
        let mut specs = crate::tools::specs(crate::tools::ToolSet {
            bash: true,
            edit: true,
            write: true,
            lsp: false,
        });
        keep_tools(&mut specs, s.role.as_ref());
        let names: Vec<&str> = specs.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["read_file"]);
    }
}
