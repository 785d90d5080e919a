//! Custom slash commands: `.mm/commands/NAME.md` (the repository's) and
//! `~/.config/mm/commands/NAME.md` (personal; the repository's shadows
//! it), and the Go agent's `.agent/commands/` and `~/.agent/commands/`
//! after each. Front matter: `description`, optional `model` and `allowedTools`;
//! the body is the prompt, with `$ARGUMENTS` (all that follows the
//! command) and `$1`…`$9` (its words) replaced. A built-in command of the
//! same name always wins (`slash::Slash`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub name: String,
    pub description: String,
    /// The model this command's turn uses (on the same server).
    pub model: Option<String>,
    /// The only tools this command's turn offers.
    pub allowed_tools: Option<Vec<String>>,
    pub body: String,
    pub file: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    description: Option<String>,
    model: Option<String>,
    #[serde(alias = "allowedTools", alias = "allowed-tools")]
    allowed_tools: Option<Tools>,
    #[serde(alias = "argument-hint")]
    #[allow(dead_code)]
    argument_hint: Option<String>,
}

/// A list, or one comma-separated string (as other agents write it).
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Tools {
    List(Vec<String>),
    Text(String),
}

impl Tools {
    pub(crate) fn names(self) -> Vec<String> {
        match self {
            Tools::List(v) => v,
            Tools::Text(s) => s
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
        }
    }
}

fn read_command(file: &Path, name: &str) -> Result<Command, String> {
    let text = crate::paths::read_small_text(file).map_err(|e| e.to_string())?;
    let (front, body) = match crate::skills::split_front(&text) {
        Some((front, body)) => {
            let f: Front =
                serde_saphyr::from_str(front).map_err(|e| format!("front matter: {e}"))?;
            (Some(f), body)
        }
        None => (None, text.as_str()),
    };
    let body = body.trim().to_string();
    if body.is_empty() {
        return Err("no prompt after the front matter".into());
    }
    let (description, model, tools) = match front {
        Some(f) => (f.description, f.model, f.allowed_tools),
        None => (None, None, None),
    };
    let description = description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| {
            let first: String = body.lines().next().unwrap_or("").chars().take(60).collect();
            first
        });
    Ok(Command {
        name: name.to_string(),
        description: description.trim().to_string(),
        model: model.filter(|m| !m.trim().is_empty()),
        allowed_tools: tools.map(Tools::names),
        body,
        file: file.to_path_buf(),
    })
}

/// The `NAME.md` files in `dir`, sorted by name, each named for its
/// file (letters, digits, - and _); with `within`, only files that lie
/// inside it, links resolved, that the file tools would not refuse (a
/// repository's link to `~/.ssh/id_rsa` or to git's config is not read).
/// `what` names them in the warnings.
pub(crate) fn markdown_files(
    dir: &Path,
    within: Option<&Path>,
    what: &str,
    warnings: &mut Vec<String>,
) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    let mut out = Vec::new();
    for e in entries {
        let file = e.path();
        let fname = e.file_name().to_string_lossy().to_string();
        let Some(name) = fname.strip_suffix(".md") else {
            continue;
        };
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            || name.is_empty()
        {
            warnings.push(format!(
                "{what} {} left out: a name is letters, digits, - and _",
                file.display()
            ));
            continue;
        }
        if let Some(w) = within
            && let Err(why) = crate::paths::own_file(&file, w)
        {
            warnings.push(format!("{what} {} left out: {why}", file.display()));
            continue;
        }
        out.push((name.to_string(), file));
    }
    out
}

/// The commands in `dir`; with `within`, only files that lie inside it.
fn scan(dir: &Path, within: Option<&Path>, found: &mut Vec<Command>, warnings: &mut Vec<String>) {
    for (name, file) in markdown_files(dir, within, "command", warnings) {
        if crate::slash::Slash::is_built_in(&name) || name.starts_with("ask-") {
            warnings.push(format!(
                "command {} left out: /{name} is built in",
                file.display()
            ));
            continue;
        }
        if found.iter().any(|c| c.name == name) {
            continue;
        }
        match read_command(&file, &name) {
            Ok(c) => found.push(c),
            Err(why) => warnings.push(format!("command {} left out: {why}", file.display())),
        }
    }
}

/// The repository's commands, then the personal ones it does not shadow.
/// The repository's (`.mm/commands`, then the Go agent's
/// `.agent/commands`), then the personal folders' in order, each shadowing
/// the same name further on.
pub fn load(root: &Path, personal: &[PathBuf]) -> (Vec<Command>, Vec<String>) {
    let (mut found, mut warnings) = (Vec::new(), Vec::new());
    for dir in [".mm", ".agent"] {
        scan(
            &root.join(dir).join("commands"),
            Some(root),
            &mut found,
            &mut warnings,
        );
    }
    for p in personal {
        scan(p, None, &mut found, &mut warnings);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, warnings)
}

/// The commands of a session in `root`: personal ones from
/// `~/.config/mm/commands`, then the Go agent's `~/.agent/commands`.
pub fn for_session(root: &Path) -> (Vec<Command>, Vec<String>) {
    load(root, &personal_dirs("commands"))
}

/// The personal folders of a kind (`commands`, `agents`): mm's
/// (`~/.config/mm/KIND`), then the Go agent's (`~/.agent/KIND`).
pub(crate) fn personal_dirs(kind: &str) -> Vec<PathBuf> {
    crate::config::user_config_dir()
        .map(|d| d.join(kind))
        .into_iter()
        .chain(
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".agent").join(kind)),
        )
        .collect()
}

/// The prompt a command sends for `args`.
pub fn expand(body: &str, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(r) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args.trim());
            rest = r;
        } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let i = d as usize - '1' as usize;
            out.push_str(words.get(i).copied().unwrap_or(""));
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    // Words the body does not place are added at the end.
    if !body.contains("$ARGUMENTS") {
        let placed = (1..=9)
            .filter(|n| body.contains(&format!("${n}")))
            .max()
            .unwrap_or(0);
        let rest = words.get(placed..).unwrap_or_default().join(" ");
        if !rest.is_empty() {
            out.push_str("\n\n");
            out.push_str(&rest);
        }
    }
    out
}

/// A typed line as a custom command: (name, arguments), when it names one.
pub fn parse<'a>(line: &'a str, commands: &[(String, String)]) -> Option<(String, &'a str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    commands
        .iter()
        .any(|(n, _)| n == name)
        .then(|| (name.to_string(), args.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_placed_and_extra_ones_appended() {
        assert_eq!(
            expand("Review $1 for $2.", "a.py bugs"),
            "Review a.py for bugs."
        );
        assert_eq!(expand("Do: $ARGUMENTS!", " all of it "), "Do: all of it!");
        assert_eq!(expand("Costs $5 and $x", ""), "Costs  and $x");
        assert_eq!(expand("Summarize.", "briefly"), "Summarize.\n\nbriefly");
        assert_eq!(
            expand("Review $1.", "app.py races"),
            "Review app.py.\n\nraces"
        );
    }

    #[test]
    fn the_repository_shadows_personal_commands_and_built_ins_win() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = t.path().join("ws");
        let personal = t.path().join("personal");
        let write = |p: PathBuf, s: &str| {
            std::fs::create_dir_all(p.parent().unwrap_or(Path::new("/"))).ok();
            std::fs::write(p, s).ok();
        };
        write(
            root.join(".mm/commands/review.md"),
            "---\ndescription: Review a file\nallowedTools: read_file, grep\n---\nReview $1.\n",
        );
        write(personal.join("review.md"), "Personal review.\n");
        write(
            personal.join("fixup.md"),
            "---\nmodel: small\n---\nFix $ARGUMENTS\n",
        );
        write(personal.join("diff.md"), "Shadowed by the built-in.\n");
        write(personal.join("bad.md"), "---\nmodle: x\n---\nBody\n");
        // The Go agent's folders: after ours, shadowed by them.
        write(root.join(".agent/commands/review.md"), "Go review.\n");
        write(
            root.join(".agent/commands/migrate.md"),
            "Migrate $ARGUMENTS.\n",
        );
        let go_personal = t.path().join("go-personal");
        write(go_personal.join("fixup.md"), "Go fixup.\n");
        write(go_personal.join("tidy.md"), "Tidy up.\n");
        let (cmds, warnings) = load(&root, &[personal, go_personal]);
        let names: Vec<&str> = cmds.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fixup", "migrate", "review", "tidy"]);
        assert_eq!(cmds[1].body, "Migrate $ARGUMENTS.");
        let cmds: Vec<Command> = cmds
            .into_iter()
            .filter(|c| c.name == "fixup" || c.name == "review")
            .collect();
        assert_eq!(cmds[1].description, "Review a file");
        assert_eq!(
            cmds[1].allowed_tools,
            Some(vec!["read_file".to_string(), "grep".to_string()])
        );
        assert_eq!(cmds[0].model.as_deref(), Some("small"));
        assert_eq!(cmds[0].description, "Fix $ARGUMENTS");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("diff.md") && w.contains("built in"))
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("bad.md") && w.contains("modle"))
        );
        let listed = vec![("review".to_string(), String::new())];
        assert_eq!(
            parse("/review a.py", &listed),
            Some(("review".into(), "a.py"))
        );
        assert_eq!(parse("/other a.py", &listed), None);
    }
}
