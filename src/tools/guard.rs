//! Checks on what a write would do, before it is done: a whole-file
//! write that drops definitions or most of a file is a small model
//! writing only the part it changed, not a decision to delete; a new
//! file that is another file's content copied is a misread task. And
//! after a change, the names it removed that other files still use.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

mod blocks;
pub use blocks::*;

mod imports;
pub use imports::*;

/// Definition lines in the languages mm's users write most: Python,
/// JavaScript/TypeScript, Rust, Go, shell. One capture group: the name.
static DEFINITION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Python: functions and methods at any depth, classes.
        r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)",
        r"^\s*class\s+([A-Za-z_]\w*)",
        // A script's entry point is code to keep like a definition.
        r#"^if\s+__name__\s*==\s*['"](__main__)['"]\s*:"#,
        // JavaScript / TypeScript.
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=",
        // Rust.
        r"^\s*(?:pub(?:\([\w:\s]+\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+\S+\s+)*fn\s+([A-Za-z_]\w*)",
        r"^(?:pub(?:\([\w:\s]+\))?\s+)?(?:struct|enum|trait|mod|type|static)\s+([A-Za-z_]\w*)",
        // Go.
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",
        r"^type\s+([A-Za-z_]\w*)",
        // Shell.
        r"^([A-Za-z_][\w-]*)\s*\(\)\s*\{",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// The names a file defines, in order, each once.
pub fn definitions(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        for re in DEFINITION.iter() {
            if let Some(name) = re.captures(line).and_then(|c| c.get(1)) {
                let name = name.as_str().to_string();
                if seen.insert(name.clone()) {
                    out.push(name);
                }
                break;
            }
        }
    }
    out
}

/// The names whose definition line a change altered (parameters added,
/// removed or reordered), in order: their callers may need the change too.
pub fn signature_changes(before: &str, after: &str) -> Vec<String> {
    let lines = |text: &str| -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(name) = DEFINITION
                .iter()
                .find_map(|re| re.captures(line).and_then(|c| c.get(1)))
                && !out.iter().any(|(n, _)| n == name.as_str())
            {
                let spaced: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
                out.push((name.as_str().to_string(), spaced));
            }
        }
        out
    };
    let old = lines(before);
    lines(after)
        .into_iter()
        .filter(|(name, line)| {
            old.iter()
                .any(|(n, l)| n == name && l != line && line.contains('('))
        })
        .map(|(name, _)| name)
        .collect()
}

/// What a file defines, counted by kind, in order of first appearance:
/// `5 functions: a, b, c, d, e` or `1 class: T; 4 methods: …`. A small
/// model miscounts a list; it reads a number.
pub fn counted_definitions(text: &str) -> String {
    let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        let Some(name) = DEFINITION
            .iter()
            .find_map(|re| re.captures(line).and_then(|c| c.get(1)))
            .map(|m| m.as_str().to_string())
        else {
            continue;
        };
        if name == "__main__" || !seen.insert(name.clone()) {
            continue;
        }
        let kind = kind_of(line);
        match groups.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, names)) => names.push(name),
            None => groups.push((kind, vec![name])),
        }
    }
    groups
        .iter()
        .map(|(kind, names)| {
            let plural = match (*kind, names.len()) {
                (k, 1) => k.to_string(),
                ("class", _) => "classes".to_string(),
                (k, _) => format!("{k}s"),
            };
            format!("{} {plural}: {}", names.len(), names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The kind of definition a line makes.
fn kind_of(line: &str) -> &'static str {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '(')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.iter().take(4).any(|x| *x == w);
    if has("class") {
        "class"
    } else if has("struct") || has("enum") || has("trait") || has("type") || has("interface") {
        "type"
    } else if has("def") || has("fn") || has("func") || line.contains("function") {
        if leading(line) > 0 {
            "method"
        } else {
            "function"
        }
    } else if has("mod") {
        "module"
    } else {
        "name"
    }
}

/// Files below this many non-blank lines may be rewritten freely.
const SMALL_FILE: usize = 10;

/// Why writing `after` over `before` would destroy work, or None.
pub fn destructive(rel: &str, before: &str, after: &str) -> Option<String> {
    if let Some(why) = nests_top_level(rel, before, after) {
        return Some(why);
    }
    let kept: BTreeSet<String> = definitions(after).into_iter().collect();
    let lost: Vec<String> = definitions(before)
        .into_iter()
        .filter(|d| !kept.contains(d))
        .collect();
    let old_lines = before.lines().filter(|l| !l.trim().is_empty()).count();
    let new_lines = after.lines().filter(|l| !l.trim().is_empty()).count();
    let most_gone = old_lines >= SMALL_FILE && new_lines * 2 < old_lines;
    if lost.is_empty() && !most_gone {
        return None;
    }
    let what = if lost.is_empty() {
        format!("{} of its {old_lines} lines", old_lines - new_lines)
    } else {
        format!(
            "{} ({} of {old_lines} lines left)",
            lost.join(", "),
            new_lines
        )
    };
    Some(format!(
        "refused: this write_file would replace all of {rel} and delete {what}. Nothing was written. write_file replaces the WHOLE file: to add or change part of it, use edit_file (old_string = the lines to change or the line to add after, replacement = those lines with your change); or send write_file again with the complete file, every existing definition kept."
    ))
}

/// Python functions and classes at the top of `before` that `after` has
/// only indented, inside another definition: a small model that wraps the
/// whole file in the function it was asked to add. The refusal, or None.
pub fn nests_top_level(rel: &str, before: &str, after: &str) -> Option<String> {
    if !rel.ends_with(".py") {
        return None;
    }
    static TOP: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)").ok());
    let top = TOP.as_ref()?;
    let names = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| top.captures(l).and_then(|c| c.get(1)))
            .map(|m| m.as_str().to_string())
            .collect()
    };
    let (was, now) = (names(before), names(after));
    let all = definitions(after);
    let moved: Vec<String> = was
        .iter()
        .filter(|n| !now.contains(*n) && all.contains(n))
        .cloned()
        .collect();
    if moved.is_empty() {
        return None;
    }
    Some(format!(
        "refused: this write would move {} inside another definition; in {rel} they are at the top level, where the code that uses them finds them. Nothing was written. Keep every existing function at the top level (no indentation) and put what the request asks for beside them; or use edit_file to add it.",
        moved.join(", ")
    ))
}

/// A new file whose content is an existing file's, copied: the model
/// wrote back what it was shown instead of what was asked.
pub fn copied_from(after: &str, others: &[(String, String)]) -> Option<String> {
    let norm = |s: &str| -> String { s.split_whitespace().collect::<Vec<_>>().join(" ") };
    let new = norm(after);
    if new.len() < 40 {
        return None;
    }
    others
        .iter()
        .find(|(_, text)| norm(text) == new)
        .map(|(p, _)| p.clone())
}

/// A whole-file write of import lines only: what it meant is those
/// imports added to the file, the rest kept. None when it holds anything
/// else, or nothing the file lacks.
fn merge_imports(before: &str, after: &str) -> Option<(String, Vec<String>)> {
    let lines: Vec<&str> = after
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() || !lines.iter().all(|l| is_import(l)) {
        return None;
    }
    let have: BTreeSet<&str> = before.lines().map(str::trim_end).collect();
    let new: Vec<String> = lines
        .iter()
        .filter(|l| !have.contains(**l))
        .map(|l| (*l).to_string())
        .collect();
    if new.is_empty() {
        return None;
    }
    Some((add_imports(before, &new), new))
}

/// The definitions of a partial write that the file already holds just
/// as written (none when it holds any of them otherwise, or the write
/// has none): the same part sent again after it landed.
pub fn already_in(before: &str, after: &str) -> Vec<String> {
    let defs = definitions(after);
    let same = |n: &String| match (block_of(before, n), block_of(after, n)) {
        (Some(a), Some(b)) => a.trim_end() == b.trim_end(),
        _ => false,
    };
    if defs.is_empty() || !defs.iter().all(same) {
        return Vec::new();
    }
    defs
}

/// A whole file the model wrote for a request that names some of its
/// definitions, with its changes to the definitions the request does not
/// name taken back (new definitions, imports and other lines stay): a
/// small model handed a file whole "tidies" functions nobody asked
/// about. The names it took back are returned; None when the reply
/// changed none of the definitions the request names, or nothing was
/// taken back.
pub fn unasked_taken_back(
    before: &str,
    after: &str,
    request: &str,
) -> Option<(String, Vec<String>)> {
    let named = |name: &str| {
        request.match_indices(name).any(|(i, _)| {
            let ok = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            ok(request[..i].chars().next_back()) && ok(request[i + name.len()..].chars().next())
        })
    };
    let old_defs = definitions(before);
    // The reply changed a definition the request names: its other
    // changes are extra. (One that changed none of them may have found
    // the cause elsewhere in the file: left as written.)
    let changed = |d: &String| match (block_of(before, d), block_of(after, d)) {
        (Some(a), Some(b)) => a.trim_end() != b.trim_end(),
        _ => false,
    };
    if !old_defs.iter().any(|d| named(d) && changed(d)) {
        return None;
    }
    let mut content = after.to_string();
    let mut back = Vec::new();
    for name in old_defs.iter().filter(|d| !named(d)) {
        let (Some(old), Some(new)) = (block_of(before, name), block_of(&content, name)) else {
            continue;
        };
        // A class or a function holding a named one is left as written.
        if definitions(&new).iter().any(|d| d != name && named(d)) {
            continue;
        }
        if old.trim_end() != new.trim_end() {
            content = content.replacen(&new, &old, 1);
            back.push(name.clone());
        }
    }
    (!back.is_empty()).then_some((content, back))
}

/// What a whole-file write that drops definitions most likely meant:
/// the file as it is, with the write's definitions put in place of their
/// namesakes or added after the file's last definition, its new import
/// lines after the file's imports, and a top-level assignment it changed
/// (`module.exports = …`) in place of the old one. None when the write
/// shares nothing with the file to go by.
pub fn merge_write(before: &str, after: &str) -> Option<(String, Vec<String>)> {
    let old_defs = definitions(before);
    let new_defs = definitions(after);
    if new_defs.is_empty() {
        // Only lines at the top level, imports and assignments: those
        // are merged below (`DATE_FORMAT = …` in place of the old one).
        let top_only = after
            .lines()
            .filter(|l| !l.trim().is_empty())
            .all(|l| leading(l) == 0 && (is_import(l) || l.contains(" = ")));
        if !top_only || after.lines().all(|l| l.trim().is_empty() || is_import(l)) {
            return merge_imports(before, after);
        }
    }
    let mut content = before.to_string();
    let mut applied = Vec::new();
    let mut added = Vec::new();
    for name in &new_defs {
        let Some(block) = block_of(after, name) else {
            continue;
        };
        if old_defs.contains(name) {
            let Some(old) = block_of(&content, name) else {
                continue;
            };
            // A class written with only part of what it holds (just the
            // new method): its members are merged one by one instead.
            let inner_new: BTreeSet<String> = definitions(&block).into_iter().collect();
            if definitions(&old)
                .iter()
                .any(|d| d != name && !inner_new.contains(d))
            {
                continue;
            }
            let indent = old.lines().next().map(leading).unwrap_or(0);
            let fresh = keep_docstring(&old, &reindent(&block, indent));
            if fresh.trim_end() != old.trim_end() {
                content = content.replacen(&old, &fresh, 1);
                applied.push(format!("changed {name}"));
            }
        } else if leading(block.lines().next().unwrap_or("")) == 0 {
            // A Python method written without its class goes into the
            // file's last class.
            if is_method(&block)
                && let Some(merged) = into_last_class(&content, &block)
            {
                content = merged;
                applied.push(format!("added {name} to the class"));
                continue;
            }
            added.push(block);
            applied.push(format!("added {name}"));
        } else if let Some(class) = container_of(after, name)
            && old_defs.contains(&class)
            && let Some(merged) = into_class(&content, Some(&class), &block)
        {
            // A new member of a class the file has: added at its end.
            content = merged;
            applied.push(format!("added {name} to {class}"));
        }
    }
    if !added.is_empty() {
        content = with_definitions_added(&content, before, &added);
    }
    // Top-level lines outside the definitions: new imports, and an
    // assignment whose target the file already assigns.
    let inside: Vec<String> = new_defs.iter().filter_map(|n| block_of(after, n)).collect();
    for line in after.lines() {
        if line.trim().is_empty()
            || leading(line) > 0
            || inside.iter().any(|b| b.lines().any(|l| l == line))
            || content.lines().any(|l| l == line)
        {
            continue;
        }
        if is_import(line) {
            // After the module's docstring and its imports.
            let doc = docstring_end(&content);
            let at = doc
                + content[doc..]
                    .lines()
                    .take_while(|l| {
                        is_import(l)
                            || l.trim().is_empty()
                            || l.starts_with('#')
                            || l.starts_with("//")
                    })
                    .map(|l| l.len() + 1)
                    .sum::<usize>();
            let at = at.min(content.len());
            let at = content[..at].trim_end().len();
            let sep = if at == 0 { "" } else { "\n" };
            content.insert_str(
                at,
                &format!("{sep}{line}{}", if at == 0 { "\n" } else { "" }),
            );
            applied.push(format!("added `{}`", line.trim()));
        } else if let Some((target, _)) = line.split_once(" = ") {
            let prefix = format!("{target} = ");
            if let Some(old) = content
                .lines()
                .find(|l| l.starts_with(&prefix))
                .map(str::to_string)
            {
                content = content.replacen(&old, line, 1);
                applied.push(format!("changed `{target} = …`"));
            }
        }
    }
    if applied.is_empty() || content == before {
        return None;
    }
    Some((content, applied))
}

/// `content` with the new definitions' blocks after its last definition,
/// spaced as `before` spaces its own.
fn with_definitions_added(content: &str, before: &str, added: &[String]) -> String {
    let at = end_of_last_definition(content).unwrap_or(content.len());
    // Two blank lines between definitions where the file has them
    // (PEP 8), else one.
    let gap = if before.contains("\n\n\ndef ") || before.contains("\n\n\nclass ") {
        "\n\n\n"
    } else {
        "\n\n"
    };
    let mut insert = String::new();
    for b in added {
        insert.push_str(gap);
        insert.push_str(b.trim_end());
    }
    let (head, tail) = content.split_at(at);
    let head = head.trim_end();
    let tail = tail.trim_start_matches('\n');
    if tail.is_empty() {
        format!("{head}{insert}\n")
    } else {
        format!("{head}{insert}{gap}{tail}")
    }
}

/// A top-level line that binds names for the rest of the file: an
/// import (Python, JavaScript, Rust `use`) or a one-line assignment.
/// Returns the names it binds; None for any other line.
fn binding(line: &str) -> Option<Vec<String>> {
    static ASSIGN: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:export\s+)?(?:const|let|var)\s+)?([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=[^=]")
            .ok()
    });
    if leading(line) > 0 || line.trim_end().ends_with(['(', '[', '{', '\\', ',']) {
        return None;
    }
    let ident = |s: &str| -> Option<String> {
        let s = s.trim().trim_matches(['{', '}', '(', ')', ';', '*']).trim();
        let name = s.rsplit(" as ").next().unwrap_or(s).trim();
        (!name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$'))
        .then(|| name.to_string())
    };
    if let Some(rest) = line.strip_prefix("from ")
        && let Some((_, names)) = rest.split_once(" import ")
    {
        let out: Vec<String> = names.split(',').filter_map(ident).collect();
        return (!out.is_empty()).then_some(out);
    }
    if let Some(rest) = line.strip_prefix("import ") {
        // JavaScript: `import a from 'x'`, `import { a, b } from 'x'`.
        if let Some((names, _)) = rest.rsplit_once(" from ") {
            let out: Vec<String> = names.split(',').filter_map(ident).collect();
            return (!out.is_empty()).then_some(out);
        }
        // Python: `import a.b` binds `a`; `import a.b as c` binds `c`.
        let out: Vec<String> = rest
            .split(',')
            .filter_map(|m| {
                let m = m.trim();
                match m.split_once(" as ") {
                    Some((_, alias)) => ident(alias),
                    None => ident(m.split('.').next().unwrap_or(m)),
                }
            })
            .collect();
        return (!out.is_empty()).then_some(out);
    }
    if let Some(rest) = line.strip_prefix("use ") {
        let last = rest.trim_end_matches(';').rsplit("::").next()?;
        let out: Vec<String> = last.split(',').filter_map(ident).collect();
        return (!out.is_empty()).then_some(out);
    }
    // `const { a, b } = require('x')`.
    if let Some(rest) = line
        .strip_prefix("const {")
        .or_else(|| line.strip_prefix("let {"))
        .or_else(|| line.strip_prefix("var {"))
        && let Some((names, _)) = rest.split_once('}')
    {
        let out: Vec<String> = names.split(',').filter_map(ident).collect();
        return (!out.is_empty()).then_some(out);
    }
    let caps = ASSIGN.as_ref()?.captures(line)?;
    let name = caps.get(1)?.as_str();
    (name != "module" && name != "exports").then(|| vec![name.to_string()])
}

/// A whole-file write that keeps every definition but drops an import or
/// a top-level assignment its code still uses (a small model rewriting a
/// file from memory): `after` with those lines put back, imports at the
/// top and assignments after them, and the lines restored. None when
/// nothing used was dropped.
pub fn kept_bindings(before: &str, after: &str) -> Option<(String, Vec<String>)> {
    let after_lines: BTreeSet<&str> = after.lines().map(str::trim).collect();
    let bound_after: BTreeSet<String> = after
        .lines()
        .filter_map(binding)
        .flatten()
        .chain(definitions(after))
        .collect();
    let code: Vec<&str> = after.lines().filter(|l| binding(l).is_none()).collect();
    let used = |name: &str| -> bool {
        Regex::new(&format!(
            r"(?:^|[^\w$.]){}(?:[^\w$]|$)",
            regex::escape(name)
        ))
        .map(|re| code.iter().any(|l| re.is_match(l)))
        .unwrap_or(false)
    };
    let mut imports = Vec::new();
    let mut assigns = Vec::new();
    for line in before.lines() {
        let Some(names) = binding(line) else {
            continue;
        };
        if after_lines.contains(line.trim())
            || names.iter().any(|n| bound_after.contains(n))
            || !names.iter().any(|n| used(n))
        {
            continue;
        }
        if is_import(line) || line.starts_with("import ") {
            imports.push(line.to_string());
        } else {
            assigns.push(line.to_string());
        }
    }
    if imports.is_empty() && assigns.is_empty() {
        return None;
    }
    // Where the new file's own imports (and a leading docstring or
    // comments) end.
    let lines: Vec<&str> = after.split_inclusive('\n').collect();
    let head = import_head(&lines);
    let mut block = String::new();
    for l in &imports {
        block.push_str(l);
        block.push('\n');
    }
    if !assigns.is_empty() {
        if !imports.is_empty() || head > 0 {
            block.push('\n');
        }
        for l in &assigns {
            block.push_str(l);
            block.push('\n');
        }
    }
    let before_part: String = lines[..head].concat();
    let rest: String = lines[head..].concat();
    let rest = rest.trim_start_matches('\n');
    let mut content = before_part;
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&block);
    if !rest.is_empty() {
        content.push_str("\n\n");
        content.push_str(rest);
    }
    let restored = imports
        .into_iter()
        .chain(assigns)
        .map(|l| l.trim().to_string())
        .collect();
    Some((content, restored))
}

/// `def name(self` or `def name(cls`: a method.
fn is_method(block: &str) -> bool {
    let first = block
        .lines()
        .find(|l| l.trim_start().starts_with("def ") || l.trim_start().starts_with("async def "));
    first.is_some_and(|l| {
        l.split_once('(')
            .map(|(_, rest)| {
                let p = rest.trim_start();
                p.starts_with("self") || p.starts_with("cls")
            })
            .unwrap_or(false)
    })
}

/// The definition `name`'s line sits in, in `text`: the nearest
/// definition above it indented less.
fn container_of(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| definitions(l).first().map(String::as_str) == Some(name))?;
    let depth = leading(lines[at]);
    lines[..at]
        .iter()
        .rev()
        .filter(|l| !l.trim().is_empty() && leading(l) < depth)
        .find_map(|l| definitions(l).into_iter().next())
}

/// `text` with `method` added at the end of its last top-level class,
/// indented as that class's methods are.
fn into_last_class(text: &str, method: &str) -> Option<String> {
    into_class(text, None, method)
}

/// `text` with `method` added at the end of class `name` (or of the last
/// top-level class), indented as that class's methods are.
fn into_class(text: &str, name: Option<&str>, method: &str) -> Option<String> {
    let class = match name {
        Some(n) => n.to_string(),
        None => text
            .lines()
            .filter(|l| leading(l) == 0 && l.starts_with("class "))
            .filter_map(|l| definitions(l).into_iter().next())
            .next_back()?,
    };
    let block = block_of(text, &class)?;
    let indent = block
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .map(leading)
        .unwrap_or(4);
    let start = text.find(&block)?;
    let end = start + block.len();
    let body = reindent(method, indent);
    let head = text[..end].trim_end();
    let tail = text[end..].trim_start_matches('\n');
    let gap = if tail.is_empty() { "" } else { "\n\n" };
    Some(format!("{head}\n\n{}\n{gap}{tail}", body.trim_end()))
}

/// Where a Python module's leading docstring ends (after its line's
/// newline); 0 without one.
fn docstring_end(text: &str) -> usize {
    let t = text.trim_start();
    let start = text.len() - t.len();
    for q in ["\"\"\"", "'''"] {
        if let Some(rest) = t.strip_prefix(q)
            && let Some(close) = rest.find(q)
        {
            let end = start + q.len() + close + q.len();
            return text[end..].find('\n').map_or(text.len(), |n| end + n + 1);
        }
    }
    0
}

/// Words only mm's own messages use (tool results, refusals, the
/// request restated): content that holds one is a tool result copied
/// back, not a file's text. A small model wrote "banner.py is unchanged
/// since you saw it…" into a file.
const MM_WORDS: &[&str] = &[
    "is unchanged since you saw it",
    "It is not sent again.",
    "Nothing was written.",
    "not run again: this exact call",
    "The user's request: \"",
    "read_file it and copy the text exactly",
    "That call is done; do not repeat it.",
    "[mm: ",
];

/// The first of mm's own phrases `text` holds, if any.
pub fn mm_words(text: &str) -> Option<&'static str> {
    MM_WORDS.iter().copied().find(|w| text.contains(w))
}

/// Names `before` defined that `after` no longer does.
pub fn removed_names(before: &str, after: &str) -> Vec<String> {
    let kept: BTreeSet<String> = definitions(after).into_iter().collect();
    definitions(before)
        .into_iter()
        .filter(|d| !kept.contains(d))
        .collect()
}

pub fn leading(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `text` (the Python file `rel`) without its top-level imports of its
/// own module (`from fmt import x` in fmt.py), and those lines; None when
/// it has none.
pub fn self_imports(rel: &str, text: &str) -> Option<(String, Vec<String>)> {
    let stem = rel.strip_suffix(".py")?;
    let name = stem.rsplit('/').next()?;
    if name == "__init__" || name == "__main__" {
        return None;
    }
    let dotted = stem.replace('/', ".");
    let own = |m: &str| m == name || m == dotted || m.trim_start_matches('.') == name;
    let mut dropped = Vec::new();
    let kept: String = text
        .split_inclusive('\n')
        .filter(|line| {
            let l = line.trim_end();
            let module = l
                .strip_prefix("from ")
                .and_then(|r| r.split_once(" import "))
                .map(|(m, _)| m.trim())
                .or_else(|| {
                    l.strip_prefix("import ")
                        .map(|m| m.split(" as ").next().unwrap_or("").trim())
                });
            let is_own = module.is_some_and(own);
            if is_own {
                dropped.push(l.to_string());
            }
            !is_own
        })
        .collect();
    // The blank lines that followed an import at the top go with it.
    let kept = if text.starts_with('\n') {
        kept
    } else {
        kept.trim_start_matches('\n').to_string()
    };
    (!dropped.is_empty()).then_some((kept, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_nests_the_files_functions_in_a_new_one_is_refused() {
        let before = "from datetime import date\n\n\ndef word_count(text):\n    return len(text.split())\n\n\nclass Post:\n    pass\n";
        let nested = "def slugify(title):\n    from datetime import date\n\n    def word_count(text):\n        return len(text.split())\n\n    class Post:\n        pass\n";
        let why = nests_top_level("blog.py", before, nested).unwrap();
        assert!(
            why.contains("would move word_count, Post inside another definition"),
            "{why}"
        );
        assert!(destructive("blog.py", before, nested).is_some());
        let added = format!("{before}\n\ndef slugify(title):\n    return title.lower()\n");
        assert_eq!(nests_top_level("blog.py", before, &added), None);
        assert_eq!(nests_top_level("blog.js", before, nested), None);
    }

    #[test]
    fn a_merged_function_keeps_the_docstring_it_dropped() {
        let before = "def f(x):\n    \"\"\"Twice x.\n\n    Long.\n    \"\"\"\n    return x + x + 1\n\n\ndef g():\n    return 1\n";
        let (merged, _) = merge_write(before, "def f(x):\n    return 2 * x\n").unwrap();
        assert_eq!(
            merged,
            "def f(x):\n    \"\"\"Twice x.\n\n    Long.\n    \"\"\"\n    return 2 * x\n\n\ndef g():\n    return 1\n"
        );
        // One it changed stays as written.
        let (merged, _) =
            merge_write(before, "def f(x):\n    '''Double.'''\n    return 2 * x\n").unwrap();
        assert!(
            merged.starts_with("def f(x):\n    '''Double.'''\n    return 2 * x\n"),
            "{merged}"
        );
        // A blank line after the signature, a comment on it: still in place.
        let (merged, _) = merge_write(
            before,
            "def f(x):  # twice\n\n    if x:\n        return 2 * x\n",
        )
        .unwrap();
        assert!(
            merged.starts_with(
                "def f(x):  # twice\n    \"\"\"Twice x.\n\n    Long.\n    \"\"\"\n\n    if x:\n"
            ),
            "{merged}"
        );
    }

    #[test]
    fn a_rewrite_that_drops_a_used_import_gets_it_back() {
        let before =
            "import argparse\n\n\ndef main():\n    p = argparse.ArgumentParser()\n    return p\n";
        let after = "def main():\n    p = argparse.ArgumentParser()\n    return p\n";
        let (content, restored) = kept_bindings(before, after).unwrap();
        assert_eq!(restored, ["import argparse"]);
        assert_eq!(
            content,
            "import argparse\n\n\ndef main():\n    p = argparse.ArgumentParser()\n    return p\n"
        );
        // Dropped and no longer used: gone on purpose.
        let unused = "def main():\n    return 1\n";
        assert_eq!(kept_bindings(before, unused), None);
    }

    #[test]
    fn a_rewrite_keeps_imports_and_assignments_the_code_still_uses() {
        let before = "from fmt import format_list, format_title\n\nFRUITS = [\"apples\", \"pears\"]\nLIMIT = 3\n\nif __name__ == \"__main__\":\n    print(format_list(FRUITS))\n";
        let after = "if __name__ == '__main__':\n    print(format_list(FRUITS, sep=' | '))\n";
        let (content, restored) = kept_bindings(before, after).unwrap();
        assert_eq!(
            restored,
            [
                "from fmt import format_list, format_title",
                "FRUITS = [\"apples\", \"pears\"]"
            ]
        );
        assert!(content.starts_with("from fmt import format_list, format_title\n\nFRUITS = [\"apples\", \"pears\"]\n\n\nif __name__"), "{content}");
        // The new file binds the name itself: nothing to restore.
        let rebinds = "from fmt import format_list\nFRUITS = []\nprint(format_list(FRUITS))\n";
        assert_eq!(kept_bindings(before, rebinds), None);
    }

    #[test]
    fn bindings_in_javascript_and_rust() {
        assert_eq!(
            binding("const { clamp, lerp } = require('./math');").unwrap(),
            ["clamp", "lerp"]
        );
        assert_eq!(binding("import fs from 'node:fs';").unwrap(), ["fs"]);
        assert_eq!(
            binding("use std::collections::HashMap;").unwrap(),
            ["HashMap"]
        );
        assert_eq!(binding("import os.path").unwrap(), ["os"]);
        assert_eq!(binding("module.exports = { a };"), None);
        assert_eq!(binding("    x = 1"), None);
        assert_eq!(binding("if x == 1:"), None);
    }

    #[test]
    fn imports_from_workspace_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("settings.py"), "PORT = 1\n").unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/util.py"), "").unwrap();
        std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("math.js"), "").unwrap();
        let py =
            "import os\nfrom settings import PORT, TIMEOUT\nfrom .util import helper\nimport pkg\n";
        assert_eq!(
            local_imports(root, "pkg/mod.py", py),
            [
                (
                    "settings.py".to_string(),
                    vec!["PORT".to_string(), "TIMEOUT".to_string()]
                ),
                ("pkg/util.py".to_string(), vec!["helper".to_string()]),
                ("pkg/__init__.py".to_string(), vec!["pkg".to_string()]),
            ]
        );
        let js = "const { clamp } = require('./math');\nconst fs = require('fs');\n";
        assert_eq!(
            local_imports(root, "main.js", js),
            [("math.js".to_string(), vec!["clamp".to_string()])]
        );
    }

    #[test]
    fn definitions_that_shadow_an_import_are_found() {
        let before = "import unittest\nfrom stats import mean, total\n\nclass T(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 3]), 2)\n";
        let after =
            format!("{before}\n\ndef mean(values):\n    return sum(values) / len(values)\n");
        assert_eq!(shadowed_imports(before, &after), ["mean"]);
        assert!(shadowed_imports(before, before).is_empty());
    }

    #[test]
    fn two_module_exports_become_one() {
        let js = "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction capitalize(s) { return s[0].toUpperCase() + s.slice(1); } module.exports = { capitalize, repeat };\n\nmodule.exports = { repeat, isBlank };\n";
        let (out, names) = one_exports(js).unwrap();
        assert_eq!(names, ["capitalize", "repeat", "isBlank"]);
        assert_eq!(
            out,
            "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction capitalize(s) { return s[0].toUpperCase() + s.slice(1); }\n\nmodule.exports = { capitalize, repeat, isBlank };\n"
        );
        let esm = "function capitalize(s) { return s; } export default capitalize;\n\nmodule.exports = { repeat, isBlank };\n";
        let (out, names) = one_exports(esm).unwrap();
        assert_eq!(names, ["capitalize", "repeat", "isBlank"]);
        assert_eq!(
            out,
            "function capitalize(s) { return s; }\n\nmodule.exports = { capitalize, repeat, isBlank };\n"
        );
        assert_eq!(one_exports("module.exports = { a };\n"), None);
        assert_eq!(
            one_exports("module.exports = { a: 1 };\nmodule.exports = { b };\n"),
            None
        );
    }

    /// A file that uses a module beside it by name (`config.LINE_WIDTH`)
    /// without importing it gets `import config`; a module imported, a
    /// name bound, or a file name in a string does not.
    #[test]
    fn a_module_used_by_name_gets_imported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("config.py"), "LINE_WIDTH = 72\n").unwrap();
        let wrap =
            "import textwrap\n\n\ndef fill(t):\n    return textwrap.fill(t, config.LINE_WIDTH)\n";
        assert_eq!(missing_imports(root, "wrap.py", wrap), ["import config"]);
        let imported = format!("import config\n{wrap}");
        assert!(missing_imports(root, "wrap.py", &imported).is_empty());
        let bound = "def f(config):\n    return config.LINE_WIDTH\n";
        assert!(missing_imports(root, "wrap.py", bound).is_empty());
        let named = "def f():\n    print('see config.py')\n";
        assert!(missing_imports(root, "wrap.py", named).is_empty());
    }

    #[test]
    fn a_test_file_that_calls_an_unimported_function_gets_its_import() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("slug.py"),
            "import re\n\n\ndef slugify(text):\n    return text\n\n\ndef _helper():\n    pass\n",
        )
        .unwrap();
        std::fs::write(root.join("other.py"), "def unrelated():\n    pass\n").unwrap();
        let test = "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        result = slugify('A b')\n        self.assertEqual(result, 'a-b')\n        self.assertEqual(len(result), 3)\n";
        let lines = missing_imports(root, "test_slug.py", test);
        assert_eq!(lines, ["from slug import slugify"]);
        assert_eq!(
            add_imports(test, &lines),
            "import unittest\nfrom slug import slugify\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        result = slugify('A b')\n        self.assertEqual(result, 'a-b')\n        self.assertEqual(len(result), 3)\n"
        );
        // Imported, defined, a parameter, or defined in two modules: nothing.
        let imported = format!("from slug import slugify\n{test}");
        assert!(missing_imports(root, "test_slug.py", &imported).is_empty());
        let param = "def apply(slugify, x):\n    return slugify(x)\n";
        assert!(missing_imports(root, "t.py", param).is_empty());
        std::fs::write(root.join("copy.py"), "def slugify(t):\n    return t\n").unwrap();
        assert!(missing_imports(root, "test_slug.py", test).is_empty());
        assert_eq!(
            add_imports(
                "x = slugify(1)\n",
                &["from slug import slugify".to_string()]
            ),
            "from slug import slugify\n\nx = slugify(1)\n"
        );
    }

    #[test]
    fn code_under_test_copied_into_its_test_file_is_taken_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("slug.py"),
            "import re\n\n\ndef slugify(title):\n    return title.lower()\n",
        )
        .unwrap();
        std::fs::write(
            root.join("cli.py"),
            "def run():\n    pass\n\n\nif __name__ == '__main__':\n    run()\n",
        )
        .unwrap();
        let test = "import unittest\n\n\ndef slugify(title):\n    return title\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(slugify('A'), 'a')\n\n\nif __name__ == '__main__':\n    unittest.main()\n";
        let (out, names) = copied_into_test(root, "test_slug.py", test).unwrap();
        assert_eq!(names, ["slugify"]);
        assert!(!out.contains("def slugify"), "{out}");
        assert!(
            out.contains("unittest.main()"),
            "the test's own entry point stays: {out}"
        );
        assert_eq!(
            missing_imports(root, "test_slug.py", &out),
            ["from slug import slugify"]
        );
        assert_eq!(copied_into_test(root, "test_slug.py", &out), None);
    }

    #[test]
    fn definitions_in_several_languages() {
        let py = "import os\n\ndef a():\n    pass\n\nclass B:\n    def m(self):\n        pass\nasync def c():\n    pass\n";
        assert_eq!(definitions(py), ["a", "B", "m", "c"]);
        let script = "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n";
        assert_eq!(definitions(script), ["main", "__main__"]);
        assert!(destructive("s.py", script, "def main():\n    print(1)\n").is_some());
        let js = "function repeat(s, n) {}\nexport const isBlank = (s) => s;\nmodule.exports = { repeat };\n";
        assert_eq!(definitions(js), ["repeat", "isBlank"]);
        let rs = "pub fn is_leap(y: u32) -> bool {}\nstruct S;\nimpl S {\n    pub(crate) fn go(&self) {}\n}\n";
        assert_eq!(definitions(rs), ["is_leap", "S", "go"]);
        let go = "func (s *Server) Run() {}\nfunc main() {}\ntype T struct{}\n";
        assert_eq!(definitions(go), ["Run", "main", "T"]);
    }

    #[test]
    fn a_write_that_drops_definitions_is_refused_and_names_them() {
        let before = "def shout(s):\n    return s\n\n\ndef whisper(s):\n    return s\n";
        let after = "def reverse_words(s):\n    return s\n";
        let why = destructive("t.py", before, after).unwrap();
        assert!(why.contains("shout, whisper"), "{why}");
        assert!(why.contains("edit_file"));
        // The complete file with one more function is fine.
        let full = format!("{before}\n\ndef reverse_words(s):\n    return s\n");
        assert_eq!(destructive("t.py", before, &full), None);
    }

    #[test]
    fn a_write_that_drops_most_lines_is_refused_but_small_files_are_free() {
        let before: String = (0..20).map(|i| format!("x{i} = {i}\n")).collect();
        assert!(destructive("c.py", &before, "x0 = 0\n").is_some());
        assert_eq!(destructive("c.py", "a = 1\nb = 2\n", "a = 3\n"), None);
        // A fix that keeps everything passes.
        let fixed = before.replace("x3 = 3", "x3 = 4");
        assert_eq!(destructive("c.py", &before, &fixed), None);
    }

    #[test]
    fn a_snippet_written_over_a_file_is_merged_into_it() {
        let before = "import re\n\n\ndef shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n\n\nif __name__ == \"__main__\":\n    print(shout(\"x\"))\n";
        let after =
            "import os\n\ndef reverse_words(s):\n    return \" \".join(reversed(s.split()))\n";
        let (merged, applied) = merge_write(before, after).unwrap();
        assert_eq!(applied, ["added reverse_words", "added `import os`"]);
        assert_eq!(
            merged,
            "import re\nimport os\n\n\ndef shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n\n\ndef reverse_words(s):\n    return \" \".join(reversed(s.split()))\n\n\nif __name__ == \"__main__\":\n    print(shout(\"x\"))\n"
        );
        let js = "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction isBlank(s) {\n  return s.trim() === \"\";\n}\n\nmodule.exports = { repeat, isBlank };\n";
        let snippet = "function capitalize(s) {\n  return s[0].toUpperCase() + s.slice(1);\n}\n\nmodule.exports = { capitalize, repeat, isBlank };\n";
        let (merged, _) = merge_write(js, snippet).unwrap();
        assert_eq!(
            merged,
            "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction isBlank(s) {\n  return s.trim() === \"\";\n}\n\nfunction capitalize(s) {\n  return s[0].toUpperCase() + s.slice(1);\n}\n\nmodule.exports = { capitalize, repeat, isBlank };\n"
        );
        assert_eq!(merge_write(js, "hello\n"), None);
    }

    #[test]
    fn a_method_written_alone_goes_into_the_class() {
        let before = "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def push(self, item):\n        self._items.append(item)\n";
        let after = "def peek(self):\n    if not self._items:\n        raise IndexError(\"empty\")\n    return self._items[-1]\n";
        let (merged, applied) = merge_write(before, after).unwrap();
        assert_eq!(applied, ["added peek to the class"]);
        assert_eq!(
            merged,
            format!(
                "{before}\n    def peek(self):\n        if not self._items:\n            raise IndexError(\"empty\")\n        return self._items[-1]\n"
            )
        );
        let with_main = format!("{before}\n\nif __name__ == \"__main__\":\n    Stack()\n");
        let (merged, _) = merge_write(&with_main, after).unwrap();
        assert!(
            merged.contains("        return self._items[-1]\n\n\nif __name__"),
            "{merged}"
        );
    }

    #[test]
    fn definitions_copied_from_another_file_are_recognised() {
        let src =
            "def total(v):\n    return sum(v)\n\n\ndef mean(v):\n    return total(v) / len(v)\n";
        let others = vec![("stats.py".to_string(), src.to_string())];
        assert_eq!(
            copied_defs("def mean(v):\n    return 0\n", &others).as_deref(),
            Some("stats.py")
        );
        assert_eq!(copied_defs("def test_mean():\n    pass\n", &others), None);
        assert_eq!(copied_defs("x = 1\n", &others), None);
    }

    #[test]
    fn a_copy_of_another_file_is_recognised_through_whitespace() {
        let src = "import re\n\ndef slugify(t):\n    return '-'.join(re.findall(r'\\w+', t))\n";
        let others = vec![("slug.py".to_string(), src.to_string())];
        let copy = src.replace("\n\n", "\n");
        assert_eq!(copied_from(&copy, &others).as_deref(), Some("slug.py"));
        assert_eq!(
            copied_from(
                "import unittest\nfrom slug import slugify\n\nclass T(unittest.TestCase):\n    pass\n",
                &others
            ),
            None
        );
    }

    #[test]
    fn references_find_callers_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pricing.py"),
            "def compute_total(p):\n    return p\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("cart.py"),
            "from pricing import calc_total\n\nx = calc_total([1])\ncalc_totals = 1\n",
        )
        .unwrap();
        let removed = removed_names(
            "def calc_total(p):\n    return p\n",
            "def compute_total(p):\n    return p\n",
        );
        assert_eq!(removed, ["calc_total"]);
        let refs = references(dir.path(), &removed, "pricing.py");
        assert_eq!(
            refs,
            vec![(
                "calc_total".to_string(),
                vec!["cart.py:1".to_string(), "cart.py:3".to_string()]
            )]
        );
    }

    #[test]
    fn a_module_importing_itself_loses_that_import() {
        let (kept, dropped) = self_imports(
            "pkg/fmt.py",
            "from fmt import a, b\nimport os\nfrom pkg.fmt import c\n\ndef a():\n    pass\n",
        )
        .unwrap();
        assert_eq!(kept, "import os\n\ndef a():\n    pass\n");
        assert_eq!(
            dropped,
            vec!["from fmt import a, b", "from pkg.fmt import c"]
        );
        assert!(self_imports("report.py", "from fmt import a\n").is_none());
        assert!(self_imports("fmt.py", "    from fmt import a\n").is_none());
        assert!(self_imports("fmt.py", "import fmt_extra\n").is_none());
    }

    #[test]
    fn definitions_are_counted_by_kind() {
        let py = "import math\n\n\nclass T:\n    def a(self):\n        pass\n\n    def b(self):\n        pass\n\n\ndef f(x):\n    return x\n\n\nasync def g():\n    pass\n\n\nif __name__ == '__main__':\n    f(1)\n";
        assert_eq!(
            counted_definitions(py),
            "1 class: T; 2 methods: a, b; 2 functions: f, g"
        );
        let js =
            "const LIMIT = 3;\nfunction clamp(x) {\n  return x;\n}\nmodule.exports = { clamp };\n";
        assert_eq!(counted_definitions(js), "1 name: LIMIT; 1 function: clamp");
        let rs = "pub struct P;\nimpl P {\n    pub fn new() -> P { P }\n}\npub fn leap(y: u32) -> bool { y % 4 == 0 }\n";
        assert_eq!(
            counted_definitions(rs),
            "1 type: P; 1 method: new; 1 function: leap"
        );
    }

    #[test]
    fn a_class_written_with_only_its_new_method_gets_the_method_added() {
        let before = "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def pop(self):\n        return self._items.pop()\n\n\ndef make():\n    return Stack()\n";
        let after = "class Stack:\n    def peek(self):\n        return self._items[-1]\n";
        let (merged, applied) = merge_write(before, after).unwrap();
        assert_eq!(
            merged,
            "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def pop(self):\n        return self._items.pop()\n\n    def peek(self):\n        return self._items[-1]\n\n\ndef make():\n    return Stack()\n"
        );
        assert_eq!(applied, vec!["added peek to Stack"]);
        // A changed method of a class written whole is put in place.
        let after = "class Stack:\n    def pop(self):\n        return self._items.pop(0)\n";
        let (merged, _) = merge_write(before, after).unwrap();
        assert!(
            merged.contains("def __init__") && merged.contains("pop(0)"),
            "{merged}"
        );
    }

    #[test]
    fn a_changed_signature_is_named_and_a_changed_body_is_not() {
        let before = "def log(msg):\n    return f'[INFO] {msg}'\n\ndef other(x):\n    return x\n";
        let after = "def log(level, msg):\n    return f'[{level}] {msg}'\n\ndef other(x):\n    return x + 1\n";
        assert_eq!(signature_changes(before, after), vec!["log"]);
        assert!(signature_changes(before, before).is_empty());
        // Spacing alone is no change.
        assert!(signature_changes("def f(a, b):\n", "def  f(a, b):\n").is_empty());
    }

    #[test]
    fn a_whole_file_keeps_only_the_changes_the_request_names() {
        let before = "function mean(xs) {\n  return xs.reduce((a, b) => a + b, 0) / xs.length;\n}\n\nfunction count(xs, limit) {\n  return xs.filter((x) => x > limit).length;\n}\n\nmodule.exports = { mean, count };\n";
        let after = "function mean(xs) {\n  if (!xs.length) return 0;\n  return xs.reduce((a, b) => a + b, 0) / xs.length;\n}\n\nfunction count(xs, limit) {\n  return xs.filter((x) => x >= limit).length;\n}\n\nfunction helper() {\n  return 1;\n}\n\nmodule.exports = { mean, count, helper };\n";
        let (got, back) =
            unasked_taken_back(before, after, "mean() in stats.js divides by zero").unwrap();
        assert_eq!(back, vec!["count".to_string()]);
        assert!(got.contains("if (!xs.length) return 0;"), "{got}");
        assert!(got.contains("x > limit"), "{got}");
        assert!(got.contains("function helper()"), "{got}");
        assert!(
            got.contains("module.exports = { mean, count, helper };"),
            "{got}"
        );
        // A request naming no definition of the file, or both: as written.
        assert!(unasked_taken_back(before, after, "fix stats.js").is_none());
        // The named one left as it was: the change may be the cause.
        let only_count = after.replace("  if (!xs.length) return 0;\n", "");
        assert!(unasked_taken_back(before, &only_count, "mean() is wrong").is_none());
        assert!(unasked_taken_back(before, after, "fix mean and count").is_none());
        // `mean` inside `means` is not a name.
        assert!(unasked_taken_back(before, after, "the means are wrong").is_none());
    }
}
