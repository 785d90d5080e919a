//! Skills: Markdown instructions with `name` and `description` front
//! matter, found under `skillsDir`, `.mm/skills/` (the repository's) and
//! `~/.config/mm/skills/` (personal; the repository's shadows a personal
//! one of the same name), as `<name>/SKILL.md` (with files beside it) or
//! `<name>.md`. The system prompt lists names and descriptions only; the
//! `read_skill` tool loads a body, or one of the skill's other files, when
//! the task calls for it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::llm::ToolSpec;

/// A skill's body (or file) is cut beyond this many bytes.
const BODY_CAP: usize = 40_000;
/// Other files of a skill listed with its body.
const FILES_LISTED: usize = 50;

#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The Markdown file.
    pub file: PathBuf,
    /// The skill's folder (`<name>/SKILL.md`), whose other files it may read.
    pub dir: Option<PathBuf>,
    /// `file` with its links resolved when it was loaded (and checked
    /// inside its folder): read again from there without following a link,
    /// so a folder or file swapped for one since is not read.
    pub real: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Front {
    name: Option<String>,
    description: Option<String>,
    // Keys other agents' skills carry; accepted, not used.
    #[allow(dead_code)]
    license: Option<serde_json::Value>,
    #[allow(dead_code)]
    allowed_tools: Option<serde_json::Value>,
    #[allow(dead_code)]
    metadata: Option<serde_json::Value>,
}

/// The front matter (YAML between `---` lines) and the body of a file.
pub fn split_front(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.find("\n---")?;
    let front = &rest[..end + 1];
    let after = &rest[end + 4..];
    let body = after
        .strip_prefix("\r\n")
        .or_else(|| after.strip_prefix('\n'))
        .unwrap_or(after);
    Some((front, body))
}

/// A skill file read: Err names what is wrong with it.
fn read_skill_file(file: &Path, fallback_name: &str) -> Result<Skill, String> {
    let text = crate::paths::read_small_text(file).map_err(|e| e.to_string())?;
    let (front, _) = split_front(&text)
        .ok_or("no front matter (a --- block with name and description first)")?;
    let f: Front = serde_saphyr::from_str(front).map_err(|e| format!("front matter: {e}"))?;
    let name = f
        .name
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| fallback_name.to_string());
    let description = f
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or("no description in the front matter")?;
    Ok(Skill {
        name: name.trim().to_string(),
        description: description.split_whitespace().collect::<Vec<_>>().join(" "),
        file: file.to_path_buf(),
        dir: None,
        real: std::fs::canonicalize(file).ok(),
    })
}

/// The skills in one folder, sorted by name; broken files as warnings.
/// With `within`, only skills that lie inside it (a repository's link to
/// a folder elsewhere is not offered).
fn scan(dir: &Path, within: Option<&Path>, found: &mut Vec<Skill>, warnings: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        let stem = e.file_name().to_string_lossy().to_string();
        let (file, folder) = if path.is_dir() {
            let f = path.join("SKILL.md");
            if !f.is_file() {
                continue;
            }
            (f, Some(path.clone()))
        } else if stem.ends_with(".md") {
            (path.clone(), None)
        } else {
            continue;
        };
        let name = stem.trim_end_matches(".md");
        if within.is_some_and(|w| !crate::paths::resolves_inside(&path, w)) {
            warnings.push(format!(
                "skill {} left out: it links outside the workspace",
                path.display()
            ));
            continue;
        }
        // The file itself, links resolved: inside, and nothing the file
        // tools would refuse (a SKILL.md linked out, or to git's config).
        if let Some(w) = within
            && let Err(why) = crate::paths::own_file(&file, w)
        {
            warnings.push(format!("skill {} left out: {why}", file.display()));
            continue;
        }
        match read_skill_file(&file, name) {
            Ok(mut s) => {
                s.dir = folder;
                if !found.iter().any(|f| f.name == s.name) {
                    found.push(s);
                }
            }
            Err(why) => warnings.push(format!("skill {} left out: {why}", file.display())),
        }
    }
}

/// Every skill, first found wins: `skills_dir`, the repository's, the
/// personal ones. Warnings name the files left out.
pub fn load(
    skills_dir: Option<&Path>,
    root: &Path,
    personal: Option<&Path>,
) -> (Vec<Skill>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    if let Some(d) = skills_dir {
        // A folder that does not exist is no skills (the Go mm's files
        // say `skillsDir: no-skills`).
        if d.exists() && !d.is_dir() {
            warnings.push(format!("skillsDir {} is not a folder", d.display()));
        }
        scan(d, None, &mut found, &mut warnings);
    }
    scan(
        &root.join(".mm").join("skills"),
        Some(root),
        &mut found,
        &mut warnings,
    );
    if let Some(p) = personal {
        scan(p, None, &mut found, &mut warnings);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, warnings)
}

/// The skills a session in `root` offers (none with `-no-skills`):
/// `skillsDir` is relative to the agent file's folder.
pub fn for_session(settings: &crate::config::Settings, root: &Path) -> (Vec<Skill>, Vec<String>) {
    if !settings.skills || !settings.edit_tools && !settings.bash_tool {
        return (Vec::new(), Vec::new());
    }
    let base = settings
        .agent_file
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    let dir = settings.skills_dir.as_deref().map(|d| base.join(d));
    let personal = crate::config::user_config_dir().map(|d| d.join("skills"));
    load(dir.as_deref(), root, personal.as_deref())
}

/// The system prompt's catalog: names and descriptions.
pub fn catalog(skills: &[Skill]) -> String {
    let mut out = String::from(
        "\nSkills (call read_skill with a name when the task matches one; follow what it says):\n",
    );
    for s in skills {
        out.push_str(&format!("- {}: {}\n", s.name, s.description));
    }
    out
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: crate::toolname::ToolName::ReadSkill.as_str().into(),
        description: "Load a skill's instructions by name (see Skills), or one of its files."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "file": {"type": "string", "description": "A file the skill lists (optional)"},
            },
            "required": ["name"],
        }),
    }
}

fn capped(mut text: String) -> String {
    if text.len() > BODY_CAP {
        let mut cut = BODY_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[… cut: the file is longer]");
    }
    text
}

/// The files of a skill's folder besides SKILL.md, relative.
fn other_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            // Nothing hidden (`.git`, `.env`, `.mm`) and nothing shaped like
            // a credential: a skill folder linked to the workspace's top
            // would offer those.
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            // A link could lead out of the skill (a secret, a loop).
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir)
                && rel != Path::new("SKILL.md")
                && crate::paths::credential_reason(&rel.to_string_lossy()).is_none()
            {
                out.push(rel.to_string_lossy().to_string());
            }
        }
    }
    out.sort();
    out.truncate(FILES_LISTED);
    out
}

/// Where a skill's other files are read from: its folder as it was when
/// mm loaded the skill, links resolved then (a link in the way swapped
/// since is not followed).
fn home(skill: &Skill) -> Option<&Path> {
    skill.dir.as_ref()?;
    skill.real.as_deref()?.parent()
}

/// Reads a skill's file: from where it was at load, with no link
/// followed, and, when the skill lies in the workspace `root`, only what
/// `read_file` would read there (no token from git's config, no file with
/// other names, none of mm's records).
fn read_file_of(root: &Path, path: &Path) -> Result<String, String> {
    if let Ok(rel) = path.strip_prefix(root) {
        let r = crate::paths::Resolved {
            abs: path.to_path_buf(),
            rel: rel.to_string_lossy().into_owned(),
        };
        if let Some(why) = crate::paths::read_refusal(root, &r) {
            return Err(why);
        }
    }
    let bytes = crate::paths::read_checked(path, 1024 * 1024).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

/// `read_skill`: the body and the skill's other files, or one of those.
pub fn read(
    skills: &[Skill],
    args: &serde_json::Map<String, Value>,
    root: &Path,
) -> Result<String, String> {
    let name = args
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        return Err(format!(
            "no skill {name:?}; the skills: {}",
            names.join(", ")
        ));
    };
    if let Some(file) = args
        .get("file")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
    {
        let Some(home) = home(skill) else {
            return Err(format!("the skill {name} has no other files"));
        };
        let none = || format!("the skill {name} has no file {file:?}");
        // As listed: nothing hidden, nothing shaped like a credential, no
        // link, nothing outside the folder.
        if !other_files(home).iter().any(|f| f == file) {
            return Err(none());
        }
        return read_file_of(root, &home.join(file))
            .map(capped)
            .map_err(|_| none());
    }
    let real = skill.real.as_deref().unwrap_or(&skill.file);
    let text = read_file_of(root, real)?;
    let body = split_front(&text)
        .map(|(_, b)| b)
        .unwrap_or(&text)
        .to_string();
    let mut out = format!(
        "[skill {name}: follow it now; it is loaded, do not load it again]\n{}",
        capped(body)
    );
    if let Some(dir) = home(skill) {
        let files = other_files(dir);
        if !files.is_empty() {
            out.push_str(&format!(
                "\n\n[its files, for read_skill with file: {}]",
                files.join(", ")
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        let (f, b) = split_front("---\nname: x\ndescription: y\n---\nbody\n").unwrap_or(("", ""));
        assert_eq!(f, "name: x\ndescription: y\n");
        assert_eq!(b, "body\n");
        assert!(split_front("no front").is_none());
    }

    /// Red-team round 22: a command swapped the skill's folder for a link
    /// out after mm loaded it; `read_skill` reads nothing outside.
    #[test]
    fn a_skill_folder_swapped_for_a_link_after_loading_is_not_read() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let t = t.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let root = t.join("ws");
        let out = t.join("out");
        let skill = root.join(".mm/skills/rel");
        std::fs::create_dir_all(&skill).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
        let md = "---\nname: rel\ndescription: Release.\n---\nSteps.\n";
        std::fs::write(skill.join("SKILL.md"), md).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(skill.join("notes.txt"), "mine").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            out.join("SKILL.md"),
            "---\nname: rel\ndescription: x\n---\nSECRET\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(out.join("notes.txt"), "SECRET").unwrap_or_else(|e| panic!("{e}"));
        let (skills, _) = load(None, &root, None);
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        std::fs::rename(&skill, root.join(".mm/skills/kept")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&out, &skill).unwrap_or_else(|e| panic!("{e}"));
        let body = read(&skills, &args(json!({"name": "rel"})), &root);
        assert!(!format!("{body:?}").contains("SECRET"), "{body:?}");
        let file = read(
            &skills,
            &args(json!({"name": "rel", "file": "notes.txt"})),
            &root,
        );
        assert!(!format!("{file:?}").contains("SECRET"), "{file:?}");
        // Red-team round 23: a skill folder that is the workspace's top
        // (a link `.mm/skills/top -> ../..`) offers no hidden file and no
        // credential.
        std::fs::write(
            root.join("SKILL.md"),
            "---\nname: top\ndescription: Top.\n---\nx\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join(".env"), "TOKEN=DOTENV").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("id_rsa"), "KEY").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("../..", root.join(".mm/skills/top"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (skills, _) = load(None, &root, None);
        for f in [".env", "id_rsa", ".mm/skills/kept/notes.txt"] {
            let got = read(&skills, &args(json!({"name": "top", "file": f})), &root);
            assert!(got.is_err(), "{f}: {got:?}");
        }
        // Round 24: a git dir under another name in that folder holds a
        // token: read_file's rule holds (it refuses it).
        std::fs::create_dir_all(root.join("repo.d/objects")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("repo.d/refs")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("repo.d/HEAD"), "ref: refs/heads/main\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            root.join("repo.d/config"),
            "[remote \"o\"]\n\turl = https://u:TOKEN9@example.com/r\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let got = read(
            &skills,
            &args(json!({"name": "top", "file": "repo.d/config"})),
            &root,
        );
        assert!(!format!("{got:?}").contains("TOKEN9"), "{got:?}");
        // Round 24: the link chain to the skill's folder repointed after
        // load (`c -> .` became `c -> secrets`): its files are read from
        // where the folder was at load, not where the links lead now.
        std::fs::create_dir_all(root.join("secrets")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("secrets/pw.txt"), "PW=hunter2").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(".", root.join("c")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("../../c", root.join(".mm/skills/chain"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            root.join("SKILL.md"),
            "---\nname: chain\ndescription: Chain.\n---\nx\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (skills, _) = load(None, &root, None);
        std::fs::remove_file(root.join("c")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("secrets", root.join("c")).unwrap_or_else(|e| panic!("{e}"));
        let got = read(
            &skills,
            &args(json!({"name": "chain", "file": "pw.txt"})),
            &root,
        );
        assert!(!format!("{got:?}").contains("hunter2"), "{got:?}");
        let body = read(&skills, &args(json!({"name": "chain"})), &root).unwrap_or_default();
        assert!(
            !body.contains(": pw.txt") && !body.contains(", pw.txt"),
            "{body}"
        );
    }

    #[test]
    fn the_repository_shadows_personal_skills_and_broken_ones_are_named() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = t.path().join("ws");
        let personal = t.path().join("personal");
        let write = |p: PathBuf, s: &str| {
            std::fs::create_dir_all(p.parent().unwrap_or(Path::new("/"))).ok();
            std::fs::write(p, s).ok();
        };
        write(
            root.join(".mm/skills/release/SKILL.md"),
            "---\nname: release\ndescription: Cut a release.\n---\nSteps.\n",
        );
        write(root.join(".mm/skills/release/checklist.txt"), "1. tag\n");
        write(
            personal.join("release.md"),
            "---\nname: release\ndescription: Personal.\n---\nMine.\n",
        );
        write(
            personal.join("style.md"),
            "---\ndescription: House style.\n---\nShort lines.\n",
        );
        write(personal.join("broken.md"), "---\nname: [\n---\n");
        let (skills, warnings) = load(None, &root, Some(&personal));
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["release", "style"]);
        assert_eq!(skills[0].description, "Cut a release.");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("broken.md"), "{warnings:?}");
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let body = read(&skills, &args(json!({"name": "release"})), &root).unwrap_or_default();
        assert!(
            body.contains("Steps.") && body.contains("checklist.txt"),
            "{body}"
        );
        let file = read(
            &skills,
            &args(json!({"name": "release", "file": "checklist.txt"})),
            &root,
        );
        assert_eq!(file.as_deref(), Ok("1. tag\n"));
        assert!(
            read(
                &skills,
                &args(json!({"name": "release", "file": "../x"})),
                &root
            )
            .is_err()
        );
        assert!(read(&skills, &args(json!({"name": "nope"})), &root).is_err());
        // A link in a skill's folder (to a secret outside it) is not offered.
        std::fs::write(t.path().join("secret"), "key=1\n").ok();
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            t.path().join("secret"),
            root.join(".mm/skills/release/notes"),
        )
        .ok();
        let body = read(&skills, &args(json!({"name": "release"})), &root).unwrap_or_default();
        assert!(!body.contains("notes"), "{body}");
        assert!(
            read(
                &skills,
                &args(json!({"name": "release", "file": "notes"})),
                &root
            )
            .is_err()
        );
    }
}
