//! A definition's block in a file: found by name, its docstring kept, re-
//! indented to its place.

use super::*;

/// The lines of the definition of `name` in `text`: its first line, and
/// every line after it until one is indented no deeper (a closing brace
/// at that depth belongs to it).
pub fn block_of(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| definitions(l).first().map(String::as_str) == Some(name))?;
    // Decorators directly above belong to the definition.
    let mut first = start;
    while first > 0 && lines[first - 1].trim_start().starts_with('@') {
        first -= 1;
    }
    let depth = leading(lines[start]);
    let mut end = start + 1;
    while end < lines.len() {
        let l = lines[end];
        if l.trim().is_empty() {
            end += 1;
            continue;
        }
        if leading(l) <= depth {
            let t = l.trim_start();
            if t.starts_with('}') || t.starts_with(')') || t.starts_with(']') {
                end += 1;
            }
            break;
        }
        end += 1;
    }
    // Blank lines at the end are the file's, not the definition's.
    while end > start + 1 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    Some(lines[first..end].concat())
}

/// The line index where a Python definition's body starts (after the
/// line that ends its signature), when `block` is one.
pub(crate) fn body_start(lines: &[&str]) -> Option<usize> {
    let def = lines.iter().position(|l| {
        let t = l.trim_start();
        t.starts_with("def ") || t.starts_with("async def ") || t.starts_with("class ")
    })?;
    let code = |l: &str| l.split(" #").next().unwrap_or(l).trim_end().to_string();
    let end = (def..lines.len()).find(|&i| code(lines[i]).ends_with(':'))?;
    Some(end + 1)
}

/// The docstring lines a Python definition opens its body with.
pub(crate) fn docstring<'a>(lines: &[&'a str]) -> Option<(usize, Vec<&'a str>)> {
    let start = body_start(lines)?;
    let first = lines.get(start)?.trim_start();
    let quote = ["\"\"\"", "'''", "r\"\"\"", "r'''"]
        .iter()
        .find(|q| first.starts_with(**q))?;
    let q = quote.trim_start_matches('r');
    let rest = &first[quote.len()..];
    if rest.contains(q) {
        return Some((start, vec![lines[start]]));
    }
    let end = (start + 1..lines.len()).find(|&i| lines[i].contains(q))?;
    Some((start, lines[start..=end].to_vec()))
}

/// `fresh` (a new version of the Python definition `old`) with `old`'s
/// docstring when it dropped it: a model rewriting a function's code
/// leaves its documentation out more often than it means to delete it.
pub(crate) fn keep_docstring(old: &str, fresh: &str) -> String {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = fresh.split_inclusive('\n').collect();
    let trimmed: Vec<&str> = new_lines.iter().map(|l| l.trim_end_matches('\n')).collect();
    let (Some((_, doc)), None, Some(at)) = (
        docstring(&old_lines),
        docstring(&trimmed),
        body_start(&trimmed),
    ) else {
        return fresh.to_string();
    };
    // The body's indentation, from its first line with code.
    let Some(body) = trimmed[at..].iter().find(|l| !l.trim().is_empty()) else {
        return fresh.to_string();
    };
    let indent = &body[..body.len() - body.trim_start().len()];
    let mut out: String = new_lines[..at].concat();
    for l in &doc {
        if !l.trim().is_empty() {
            // Lines after the first keep their depth beyond the first's.
            let extra = leading(l).saturating_sub(leading(doc[0]));
            out.push_str(indent);
            out.push_str(&" ".repeat(extra));
            out.push_str(l.trim_start());
        }
        out.push('\n');
    }
    out.push_str(&new_lines[at..].concat());
    out
}

pub fn reindent(block: &str, to: usize) -> String {
    let from = block
        .lines()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('@'))
        .map(leading)
        .unwrap_or(0);
    block
        .split_inclusive('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.trim_start_matches([' ', '\t']).to_string()
            } else {
                let cut = leading(l).min(from);
                format!("{}{}", " ".repeat(to), &l[cut..])
            }
        })
        .collect()
}
