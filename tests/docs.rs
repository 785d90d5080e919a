//! The documentation holds what the code does: every flag `-help` lists
//! and every key an agent file may hold is documented in docs/, and
//! every relative link in the README and docs/ leads somewhere.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out
}

fn docs_text() -> String {
    pages()
        .iter()
        .filter(|p| p.starts_with(root().join("docs")))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` holds `word` with no word character or `-` on either side.
fn holds(text: &str, word: &str) -> bool {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    text.match_indices(word).any(|(i, _)| {
        !part(text[..i].chars().next_back()) && !part(text[i + word.len()..].chars().next())
    })
}

#[test]
fn every_flag_in_the_help_is_documented() {
    let out = Command::new(env!("CARGO_BIN_EXE_mm"))
        .arg("-help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let flags: Vec<String> = help
        .lines()
        .filter_map(|l| {
            // "  -p, --prompt <PROMPT>  …" and "      --tui  …": the long name.
            let l = l.trim_start();
            if !l.starts_with('-') {
                return None;
            }
            let long = l[l.find("--")? + 2..].split([' ', ',', '=']).next()?;
            Some(long.to_string())
        })
        .filter(|f| f != "help" && f != "version")
        .collect();
    assert!(flags.len() > 30, "{help}");
    let docs = docs_text();
    let missing: Vec<&String> = flags
        .iter()
        .filter(|f| !holds(&docs, &format!("-{f}")))
        .collect();
    assert!(
        missing.is_empty(),
        "flags no page in docs/ names: {missing:?}"
    );
}

#[test]
fn every_agent_file_key_is_documented() {
    let src = std::fs::read_to_string(root().join("src/config/file.rs")).unwrap();
    let start = src.find("pub struct AgentFile {").unwrap();
    let body = &src[start..start + src[start..].find("\n}").unwrap()];
    let keys: Vec<String> = body
        .lines()
        .filter_map(|l| {
            let field = l.trim().strip_prefix("pub ")?.split(':').next()?;
            if field.contains(' ') {
                return None;
            }
            // serde's camelCase.
            let mut key = String::new();
            let mut up = false;
            for c in field.chars() {
                if c == '_' {
                    up = true;
                } else if up {
                    key.extend(c.to_uppercase());
                    up = false;
                } else {
                    key.push(c);
                }
            }
            Some(key)
        })
        .collect();
    assert!(keys.len() > 40, "{body}");
    let docs = docs_text();
    let missing: Vec<&String> = keys.iter().filter(|k| !holds(&docs, k)).collect();
    assert!(
        missing.is_empty(),
        "agent-file keys no page in docs/ names: {missing:?}"
    );
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty()
                || path.contains("://")
                || path.starts_with("mailto:")
                || path.contains(' ')
            {
                continue;
            }
            let dir = page.parent().unwrap();
            if !dir.join(path).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere: {broken:#?}");
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines");
    // Its two set-up commands come first.
    let first_block: Vec<&str> = readme
        .split("```bash\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap()
        .lines()
        .collect();
    assert_eq!(first_block.len(), 2, "{first_block:?}");
    assert!(first_block[0].starts_with("scripts/setup"));
    assert!(first_block[1].starts_with("scripts/test"));
}
