//! The layout's rule, checked on the source: a module may use only modules
//! of a lower layer (or its own), so no arrow points up and there is no
//! cycle. The table is the one docs/ARCHITECTURE.md draws.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::collections::BTreeSet;
use std::path::Path;

/// Layers from the bottom; modules of one layer may not use each other
/// unless listed in `SIDEWAYS`.
const LAYERS: &[&[&str]] = &[
    &[
        "protocol",
        "diff",
        "patterns",
        "untrusted",
        "mmdir",
        "slash",
        "toolname",
    ],
    &["paths", "config", "bus"],
    &["llm", "git", "clipboard", "notify"],
    &["sandbox", "skills", "instructions"],
    &[
        "approval", "lsp", "session", "startup", "mcp", "commands", "roles",
    ],
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
    // A call's one-line summary names its key argument.
    ("protocol", "toolname"),
    ("headless", "console"),
    ("eval", "cli"),
    // A notification goes through tmux and screen as the clipboard's does.
    ("notify", "clipboard"),
    // Roles are files like commands, found and read the same way.
    ("roles", "commands"),
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

/// The identifier `s` starts with.
fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
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

/// A file's module path from `src/`: `tui/panes/cell.rs` is
/// `["tui", "panes", "cell"]`, `tui/mod.rs` is `["tui"]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// The modules a file names (`crate::a::b`, `super::x`, `super::{x, y}`),
/// resolved against the modules there are, each as deep as it exists.
fn module_uses(
    text: &str,
    me: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeSet<Vec<String>> {
    let mut code = text;
    if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
        code = &text[..i];
    }
    let mut out = BTreeSet::new();
    let mut rest = code;
    loop {
        let next = [rest.find("crate::"), rest.find("super::")]
            .into_iter()
            .flatten()
            .min();
        let Some(i) = next else { break };
        // Not the tail of another word (`my_crate::`).
        let boundary = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        // `super::` is the module's parent (a file's module path already
        // is its own, `mod.rs` or not); each more `super` one up again.
        let (base, tail): (Vec<String>, &str) = match rest[i..].strip_prefix("crate::") {
            Some(t) => (Vec::new(), t),
            None => {
                let mut base = me.to_vec();
                let mut t = &rest[i..];
                while let Some(x) = t.strip_prefix("super::") {
                    base.pop();
                    t = x;
                }
                (base, t)
            }
        };
        rest = tail;
        if !boundary {
            continue;
        }
        let names: Vec<Vec<String>> = if let Some(group) = tail.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|p| p.trim().split("::").take(2).map(ident).collect())
                .collect()
        } else {
            let mut v = Vec::new();
            let mut t = tail;
            for _ in 0..2 {
                let name = ident(t);
                if name.is_empty() {
                    break;
                }
                t = t[name.len()..].strip_prefix("::").unwrap_or("");
                v.push(name);
            }
            vec![v]
        };
        for segs in names {
            let mut p = base.clone();
            for seg in segs {
                let mut q = p.clone();
                q.push(seg);
                if modules.contains(&q) {
                    p = q;
                } else {
                    break;
                }
            }
            if !p.is_empty() && modules.contains(&p) {
                out.insert(p);
            }
        }
    }
    out
}

/// No cycle among modules side by side at any depth (`tui::app` →
/// `tui::panes` → `tui::commands` → `tui::app` was one): an arrow between
/// two modules counts between their ancestors just under the nearest
/// module they share; a module and its own parent or children are one.
#[test]
fn no_cycle_among_modules_side_by_side() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let paths: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            (module_path(rel), std::fs::read_to_string(f).unwrap())
        })
        .filter(|(p, _)| p.first().is_none_or(|m| m != "main"))
        .collect();
    let modules: BTreeSet<Vec<String>> = paths.iter().map(|(p, _)| p.clone()).collect();
    let mut edges: std::collections::BTreeMap<Vec<String>, BTreeSet<Vec<String>>> =
        Default::default();
    for (me, text) in &paths {
        for used in module_uses(text, me, &modules) {
            let k = me.iter().zip(&used).take_while(|(a, b)| a == b).count();
            if k == me.len() || k == used.len() {
                continue; // itself, a parent or a child
            }
            edges
                .entry(me[..=k].to_vec())
                .or_default()
                .insert(used[..=k].to_vec());
        }
    }
    // A cycle: a node that reaches itself.
    let mut cycles = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<Vec<String>> = edges[start].iter().cloned().collect();
        while let Some(n) = stack.pop() {
            if &n == start {
                cycles.push(start.join("::"));
                break;
            }
            if seen.insert(n.clone())
                && let Some(next) = edges.get(&n)
            {
                stack.extend(next.iter().cloned());
            }
        }
    }
    assert!(
        edges.len() > 30,
        "the walk found the modules: {:?}",
        edges.keys()
    );
    assert!(cycles.is_empty(), "modules on a cycle: {cycles:?}");
}
