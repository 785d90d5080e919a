//! A reply made into a change: a function put in place of its old version,
//! search/replace blocks found and applied, whole files vetted.

use super::*;

/// `before` with the reply's version of the functions shown put in place
/// of theirs, and what changed; None when the reply has no code block,
/// changes none of them, or would add or change anything else (an
/// import the new code needs may come with it).
pub fn apply(before: &str, reply: &str, names: &[String]) -> Option<(String, Vec<String>)> {
    let block = recover::fenced_blocks(reply).first().map(|(_, _, b)| *b)?;
    let (merged, applied) = guard::merge_write(before, block)?;
    // "changed `DATE_FORMAT = …`" names the constant.
    let changed: Vec<String> = applied
        .iter()
        .filter_map(|a| a.strip_prefix("changed "))
        .map(|c| {
            c.strip_prefix('`')
                .and_then(|c| c.strip_suffix(" = …`"))
                .map(|c| {
                    c.trim_start_matches("const ")
                        .trim_start_matches("let ")
                        .trim_start_matches("var ")
                })
                .unwrap_or(c)
                .to_string()
        })
        .collect();
    let imports = applied
        .iter()
        .filter(|a| a.strip_prefix("added `").is_some_and(guard::is_import))
        .count();
    let only_shown =
        changed.len() + imports == applied.len() && changed.iter().all(|c| names.contains(c));
    let merged = keep_visibility(before, merged, &changed);
    (only_shown && !changed.is_empty() && merged != before).then_some((merged, changed))
}

/// A Rust function a reply rewrote keeps the `pub` it had: a small model
/// drops it, the crate's own tests still pass, and every caller outside
/// the module (the request's checks, the user's code) loses it.
pub(crate) fn keep_visibility(before: &str, mut merged: String, changed: &[String]) -> String {
    let def_line = |text: &str, name: &str| -> Option<String> {
        text.lines()
            .find(|l| guard::definitions(l).first().map(String::as_str) == Some(name))
            .map(str::to_string)
    };
    for name in changed {
        let (Some(old), Some(new)) = (def_line(before, name), def_line(&merged, name)) else {
            continue;
        };
        let vis = |l: &str| l.trim_start().starts_with("pub");
        let rust_fn = |l: &str| {
            let t = l.trim_start();
            t.starts_with("fn ") || t.starts_with("async fn ") || t.starts_with("const fn ")
        };
        if vis(&old) && !vis(&new) && rust_fn(&new) {
            let head: String = old.split_whitespace().next().unwrap_or("pub").to_string();
            let indent = &new[..new.len() - new.trim_start().len()];
            let fixed = format!("{indent}{head} {}", new.trim_start());
            merged = merged.replacen(&new, &fixed, 1);
        }
    }
    merged
}

/// Lines a file may have to be asked for whole.
pub const MAX_FILE_LINES: usize = 120;

/// The files of a change the request asks for across two or three
/// existing, short source files (path and content, in the request's
/// order); empty when the request is not that.
pub fn change_files(prompt: &str, sources: &[(String, String)]) -> Vec<(String, String)> {
    let named: Vec<String> = harness::named_files(prompt)
        .into_iter()
        .filter(|f| has_definitions(f))
        .collect();
    // Code that moves between files needs both in view at once.
    let lower = prompt.to_lowercase();
    let moves = ["move ", "extract", "split ", "merge ", "copy "]
        .iter()
        .any(|w| lower.contains(w));
    if moves || !(2..=3).contains(&named.len()) || named.iter().any(|f| harness::is_test_file(f)) {
        return Vec::new();
    }
    let found: Vec<(String, String)> = named
        .iter()
        .filter_map(|f| sources.iter().find(|(p, _)| p == f).cloned())
        .filter(|(_, t)| t.lines().count() <= MAX_FILE_LINES)
        .collect();
    if found.len() == named.len() {
        found
    } else {
        Vec::new()
    }
}

/// Files that call a changed definition, asked for after it, at most.
pub(crate) const MAX_CALLERS: usize = 3;

/// The request for one file, whole: the request, the context files, the
/// file as it is (or that it is new), and what to write.
pub fn whole_request(
    prompt: &str,
    file: &str,
    before: Option<&str>,
    context: &[(String, String)],
) -> String {
    let mut text = format!("The request: {}\n", prompt.trim());
    for (name, body) in context {
        text.push_str(&format!(
            "\n{name}:\n```{}\n{}\n```\n",
            fence_language(name),
            body.trim_end()
        ));
    }
    match before {
        Some(b) => text.push_str(&format!(
            "\n{file} is now:\n```{}\n{}\n```\nWrite {file} in full, with the part of the request that is in {file} done. Keep everything else in it as it is.",
            fence_language(file),
            b.trim_end()
        )),
        None => text.push_str(&format!(
            "\n{file} does not exist yet. Write {file} in full, as the request asks."
        )),
    }
    text
}

/// `name` called on any line of `text`: the name followed by `(`.
pub(crate) fn calls_in(text: &str, name: &str) -> bool {
    harness::regex(&format!(r"\b{}\s*\(", regex::escape(name)))
        .is_ok_and(|re| text.lines().any(|l| re.is_match(l)))
}

/// A file of a focused change: one the request names, or one that calls
/// what changed in one it names (`caller`), with the changed files it is
/// to see beside it.
pub(crate) struct Part {
    pub(crate) file: String,
    pub(crate) before: String,
    pub(crate) context: Vec<(String, String)>,
    /// For a caller: the definitions that changed, the only calls its
    /// change may touch.
    pub(crate) caller: Option<Vec<String>>,
}

/// `after` with only the changes that touch a call of one of `names`:
/// a caller asked to follow a new signature that also rewrote other
/// lines (a small model wraps a neighbouring value in the call too) gets
/// those lines back as they were.
pub fn only_the_calls(before: &str, after: &str, names: &[String]) -> String {
    use similar::{DiffOp, TextDiff};
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let calls = |lines: &[&str]| lines.iter().any(|l| names.iter().any(|n| calls_in(l, n)));
    let diff = TextDiff::configure().diff_slices(&old, &new);
    let mut out = String::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                out.extend(old[old_index..old_index + len].iter().copied());
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                let lines = &old[old_index..old_index + old_len];
                if !calls(lines) {
                    out.extend(lines.iter().copied());
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                let lines = &new[new_index..new_index + new_len];
                if calls(lines) {
                    out.extend(lines.iter().copied());
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let was = &old[old_index..old_index + old_len];
                let now = &new[new_index..new_index + new_len];
                if old_len == new_len {
                    // Line for line: each keeps its change only if it
                    // was a call.
                    for (w, n) in was.iter().zip(now) {
                        out.push_str(if calls(&[w]) { n } else { w });
                    }
                } else {
                    out.extend((if calls(was) { now } else { was }).iter().copied());
                }
            }
        }
    }
    out
}

pub const CHANGE_SYSTEM: &str = "You change code as asked. Reply with only the changed code, in full, in one fenced code block.";
/// The system prompt of a change asked for as search/replace blocks.
pub const BLOCKS_SYSTEM: &str = "You change code as asked. Reply with only search/replace blocks.";

/// The focused request for one file of a change.
pub fn change_request(prompt: &str, file: &str, content: &str) -> String {
    format!(
        "The request: {}\n\n{file} is now:\n```{}\n{}```\nWrite {file} in full, with the part of the request that is in {file} done. Change nothing else.",
        prompt.trim(),
        fence_language(file),
        content
    )
}

/// The new content of `file` from a focused reply, or why it is not kept.
pub fn change_of(
    prompt: &str,
    file: &str,
    before: &str,
    reply: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    let block = recover::fenced_blocks(reply)
        .first()
        .map(|(_, _, b)| *b)
        .ok_or("no code block")?;
    // Whole when it keeps most of the file's lines: a fragment of a
    // short file with no definitions is not the file.
    let kept_lines = before
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| block.lines().any(|b| b.trim() == l.trim()))
        .count();
    let old_lines = before.lines().filter(|l| !l.trim().is_empty()).count();
    let whole = guard::destructive(file, before, block).is_none() && kept_lines * 2 >= old_lines;
    let mut after = if whole {
        block.to_string()
    } else {
        let (merged, _) = guard::merge_write(before, block).ok_or("parts of the file lost")?;
        if guard::destructive(file, before, &merged).is_some() {
            return Err("parts of the file lost");
        }
        merged
    };
    if before.ends_with('\n') && !after.ends_with('\n') {
        after.push('\n');
    }
    vet(prompt, file, before, after, block, spelled)
}

/// The file after the search/replace blocks of `reply` (Aider's format:
/// `<<<<<<< SEARCH`, the lines as they are, `=======`, the lines to put
/// in their place, `>>>>>>> REPLACE`) are applied to `before` in order,
/// each found as `edit_file` finds its `old_string` (exactly, then
/// ignoring indentation and spacing); an empty SEARCH appends. Held to
/// the same checks as a whole file.
pub fn blocks_change(
    prompt: &str,
    file: &str,
    before: &str,
    reply: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    let blocks = search_replace_blocks(reply);
    if blocks.is_empty() {
        return Err("no search/replace block");
    }
    let mut after = before.to_string();
    for (search, replace) in &blocks {
        if search.trim().is_empty() {
            if !after.ends_with('\n') && !after.is_empty() {
                after.push('\n');
            }
            after.push_str(replace);
            after.push('\n');
            continue;
        }
        // A small model copies the template's "(the lines as they are)"
        // parentheses around its lines: tried without them too.
        let splice = crate::tools::edit_match::find(&after, search, replace)
            .or_else(|e| {
                let (s, r) = (unwrap_parens(search), unwrap_parens(replace));
                if s == search.as_str() {
                    return Err(e);
                }
                crate::tools::edit_match::find(&after, s, r)
            })
            .map_err(|_| "a SEARCH part not found once in the file")?;
        after = crate::tools::edit_match::apply(&after, &splice);
    }
    if guard::destructive(file, before, &after).is_some() {
        return Err("parts of the file lost");
    }
    let brought = after.clone();
    vet(prompt, file, before, after, &brought, spelled)
}

/// `text` without the "(" it starts with and the ")" it ends with, when
/// it has them (either alone: the model's copy of a template line).
pub(crate) fn unwrap_parens(text: &str) -> &str {
    let t = text.trim();
    let t = t.strip_prefix('(').unwrap_or(t);
    t.strip_suffix(')')
        .filter(|inner| inner.matches('(').count() < inner.matches(')').count() + 1)
        .unwrap_or(t)
}

/// The (search, replace) pairs of the search/replace blocks in `reply`.
pub fn search_replace_blocks(reply: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = reply.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("<<<<<<<") {
            continue;
        }
        let mut search = Vec::new();
        let mut replace = Vec::new();
        let mut in_replace = false;
        let mut closed = false;
        for l in lines.by_ref() {
            let t = l.trim();
            if !in_replace && t.starts_with("=======") && t.trim_matches('=').is_empty() {
                in_replace = true;
            } else if in_replace && t.starts_with(">>>>>>>") {
                closed = true;
                break;
            } else if in_replace {
                replace.push(l);
            } else {
                search.push(l);
            }
        }
        if closed {
            out.push((search.join("\n"), replace.join("\n")));
        }
    }
    out
}

/// What every change asked of the model as text must pass: a change, no
/// unasked rename among the definitions it brings (`brought`: the text
/// that came back), and the code the request spells out for the file.
pub(crate) fn vet(
    prompt: &str,
    file: &str,
    before: &str,
    after: String,
    brought: &str,
    spelled: &[(Option<String>, String)],
) -> Result<String, &'static str> {
    // The request copied into the file (a comment `# The request: …`
    // after it) is not a change: those lines go.
    let asked = prompt.trim();
    let after = if asked.len() >= 30 && after.contains(asked) && !before.contains(asked) {
        after
            .split_inclusive('\n')
            .filter(|l| !l.contains(asked))
            .collect::<String>()
    } else {
        after
    };
    if after.trim_end() == before.trim_end() {
        return Err("no change");
    }
    if guard::mm_words(&after).is_some_and(|w| !before.contains(w)) {
        return Err("mm's own words copied in");
    }
    // Judged on what came back: a merge keeps the old name beside the
    // new one.
    let old = guard::definitions(before);
    let new = guard::definitions(brought);
    let gone: Vec<&String> = old.iter().filter(|d| !new.contains(d)).collect();
    let added: Vec<&String> = new.iter().filter(|d| !old.contains(d)).collect();
    if gone.iter().any(|g| {
        added
            .iter()
            .any(|a| harness::unasked_rename(prompt, g, a).is_some())
    }) {
        return Err("a rename the request does not ask for");
    }
    let missing = spelled
        .iter()
        .filter(|(f, _)| f.as_deref() == Some(file))
        .any(|(_, code)| !harness::has_code(&after, code));
    if missing {
        return Err("the code the request spells out is not in it");
    }
    Ok(after)
}
