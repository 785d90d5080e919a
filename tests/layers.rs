//! The layout's rule, checked on the source: a module may use only modules
//! of a lower layer (or its own), so no arrow points up and there is no
//! cycle. The table is the one docs/ARCHITECTURE.md draws.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::collections::BTreeSet;
use std::path::Path;

/// Layers from the bottom; modules of one layer may not use each other
/// unless listed in `SIDEWAYS`.
const LAYERS: &[&[&str]] = &[
    &["protocol", "diff", "patterns", "untrusted", "mmdir"],
    &["paths", "config", "bus"],
    &["llm", "git", "clipboard", "notify"],
    &["sandbox", "skills", "instructions"],
    &["approval", "lsp", "session", "startup", "mcp", "commands"],
    &["tools"],
    &["agent"],
    &["console", "tui", "headless", "eval", "cli", "doctor"],
    &["launch"],
    // `mm -acp` opens a session per client request through the launcher;
    // main.rs hands the launcher its entry points.
    &["acp"],
];

/// Uses within a layer that are allowed (caller, callee).
const SIDEWAYS: &[(&str, &str)] = &[
    ("headless", "console"),
    ("eval", "cli"),
    // A notification goes through tmux and screen as the clipboard's does.
    ("notify", "clipboard"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The `crate::x` modules a file uses, outside its test module: paths
/// written out (`crate::x::y`) and grouped imports (`use crate::{x, y::z}`).
fn uses(text: &str) -> BTreeSet<String> {
    // The test module is the file's last item; a `#[cfg(test)]` on
    // anything else is read like the rest.
    let mut code = text;
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") || after.starts_with("pub mod ") {
            code = &text[..at];
            break;
        }
        from = at + 1;
    }
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The first name of each item at the group's top level.
            let mut depth = 0usize;
            let mut start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        start = false;
                        let name = ident(&group[k..]);
                        if !name.is_empty() && name != "self" {
                            out.insert(name);
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        let name = ident(rest);
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name()
                .is_some_and(|n| n != "tests" && n != "snapshots")
            {
                walk(&p, files);
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            files.push(p);
        }
    }
}

#[test]
fn no_module_uses_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(mine) = layer_of(&top) else {
            wrong.push(format!("{top}: not in the layer table"));
            continue;
        };
        seen.insert(top.clone());
        for used in uses(&std::fs::read_to_string(f).unwrap()) {
            if used == top {
                continue;
            }
            let Some(theirs) = layer_of(&used) else {
                continue; // an item of lib.rs, or a macro path
            };
            let sideways = theirs == mine && SIDEWAYS.contains(&(top.as_str(), used.as_str()));
            if theirs > mine || (theirs == mine && !sideways) {
                wrong.push(format!("{} uses crate::{used}", rel.display()));
            }
        }
    }
    // Sideways arrows never come back: no cycle within a layer either.
    for (a, b) in SIDEWAYS {
        assert!(
            !SIDEWAYS.contains(&(b, a)),
            "{a} and {b} use each other: a cycle"
        );
    }
    assert!(
        wrong.is_empty(),
        "arrows that point up:\n{}",
        wrong.join("\n")
    );
    assert!(seen.len() > 20, "the walk found the modules: {seen:?}");
}
