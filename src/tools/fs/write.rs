//! Writes and edits planned before they happen: the file read first and
//! unchanged since, the guard's checks, a whole-file write that would
//! delete code refused, an edit's text found; then committed.

use super::*;

/// A refusal that counts as the read it asks for: the same call, sent
/// again, is the one to run (not a repeat of a failure).
pub(crate) const SEND_AGAIN: &str = "so nothing was changed. Its current content is below";

/// Checks that an existing file was read in its current state. When it
/// was not, the refusal carries the current content (and counts as the
/// read), so the model can send its change again at once instead of
/// spending a round on read_file.
pub(crate) fn check_fresh(
    env: &ToolEnv,
    r: &Resolved,
    current: &str,
    verb: &str,
) -> Result<(), String> {
    let why = match env.read_hash(r) {
        Some(h) if h == content_hash(current) => return Ok(()),
        Some(_) => "changed since you read it",
        None => "has not been read",
    };
    env.remember_read(r, current);
    Err(format!(
        "refused: {} {why}, {SEND_AGAIN}; base your {verb} on it and send it again.\n{}",
        r.rel,
        numbered(current, 1, DEFAULT_READ_LINES)
    ))
}

/// A write or edit worked out but not yet on disk, so it can be shown
/// for approval first.
pub struct Pending {
    pub r: Resolved,
    pub before: Option<String>,
    pub after: String,
    /// How an edit matched, for the result text.
    pub how: Option<&'static str>,
    pub edit: bool,
    /// What mm did to the call, for the result text.
    pub note: Option<String>,
}

impl Pending {
    pub fn change(&self) -> FileChange {
        file_change(&self.r.rel, self.before.as_deref(), &self.after)
    }
}

/// Works out a write of mm's own whose content mm computed itself (a
/// rename): the path checks, but none of the guards that read a small
/// model's whole-file write as a part of the file to merge in.
pub fn prepare_plain(env: &ToolEnv, rel: &str, content: &str) -> Result<Pending, ToolOutput> {
    let r = env.sandbox.check_write(rel).map_err(ToolOutput::refused)?;
    let before = if std::fs::symlink_metadata(&r.abs).is_ok() {
        Some(
            read_text(&r.abs, &r.rel)
                .map_err(|e| ToolOutput::error(format!("cannot overwrite: {e}")))?,
        )
    } else {
        None
    };
    if before.as_deref() == Some(content) {
        return Err(ToolOutput::ok(format!(
            "{} already has this content; nothing written",
            r.rel
        )));
    }
    Ok(Pending {
        r,
        before,
        after: content.to_string(),
        how: None,
        edit: false,
        note: None,
    })
}

/// `text` without read_file's line numbers, when every line of it is one
/// of that view's numbered lines (`    12\tcode`: padded to six, one
/// apart) or its
/// closing "(… lines shown; read on …)" line; else None.
pub(crate) fn unnumbered(text: &str) -> Option<String> {
    let mut lines: Vec<&str> = text.lines().collect();
    if lines
        .last()
        .is_some_and(|l| l.starts_with('(') && l.contains("lines shown; read on with offset="))
    {
        lines.pop();
    }
    if lines.len() < 2 {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last: Option<u64> = None;
    for line in lines {
        let (num, rest) = line.split_once('\t')?;
        let n: u64 = num.trim_start().parse().ok()?;
        // As read_file pads them (`{:>6}`): a table whose first column
        // counts is not taken for one.
        if num.len() < 6 || last.is_some_and(|l| l + 1 != n) {
            return None;
        }
        last = Some(n);
        out.push_str(rest);
        out.push('\n');
    }
    Some(out)
}

/// Works out a write_file. `Err` is the call's final answer (refused,
/// failed, or nothing to do).
pub fn prepare_write(env: &ToolEnv, args: &Map<String, Value>) -> Result<Pending, ToolOutput> {
    write_plan(env, args).map(|p| tidy(env, p))
}

/// A JavaScript file the change leaves with two `module.exports` (the
/// later replaces the earlier, so what the first exported is lost) gets
/// one, exporting every name both did.
///
/// A Python file that calls a function of a module next to it without
/// importing it (a new test file) gets the import.
/// Lines of code for a note: `a`, `b`.
pub(crate) fn ticked(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("`{l}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn tidy(env: &ToolEnv, mut p: Pending) -> Pending {
    if !env.guard_writes {
        return p;
    }
    if p.r.rel.ends_with(".py") {
        let root = env.sandbox.root();
        if crate::patterns::is_test_file(&p.r.rel)
            && let Some((without, names)) =
                crate::tools::guard::copied_into_test(root, &p.r.rel, &p.after)
        {
            p.after = without;
            let note = format!(
                ". The test file defined {} again, which the code beside it defines, so the tests would test the copy: mm took the copy out; the tests import the real one",
                names.join(", ")
            );
            p.note = Some(format!("{}{note}", p.note.unwrap_or_default()));
        }
        // A file never imports itself (the model pasted the importing
        // file's head into it): Python stops at a circular import.
        if let Some((without, lines)) = crate::tools::guard::self_imports(&p.r.rel, &p.after)
            && p.before
                .as_deref()
                .is_none_or(|b| crate::tools::guard::self_imports(&p.r.rel, b).is_none())
        {
            p.after = without;
            let note = format!(
                ". {} cannot import itself, so mm left out {}",
                p.r.rel,
                ticked(&lines)
            );
            p.note = Some(format!("{}{note}", p.note.unwrap_or_default()));
        }
        // Only what this change brought: a file that already called the
        // name unimported is the user's business.
        let had = p
            .before
            .as_deref()
            .map(|b| crate::tools::guard::missing_imports(root, &p.r.rel, b))
            .unwrap_or_default();
        let lines: Vec<String> = crate::tools::guard::missing_imports(root, &p.r.rel, &p.after)
            .into_iter()
            .filter(|l| !had.contains(l))
            .collect();
        if !lines.is_empty() {
            p.after = crate::tools::guard::add_imports(&p.after, &lines);
            let note = format!(
                ". The code calls what it did not import, so mm added {}",
                ticked(&lines)
            );
            p.note = Some(format!("{}{note}", p.note.unwrap_or_default()));
        }
        return p;
    }
    if !(p.r.rel.ends_with(".js") || p.r.rel.ends_with(".cjs")) {
        return p;
    }
    if let Some((merged, names)) = crate::tools::guard::one_exports(&p.after) {
        p.after = merged;
        let note = format!(
            ". The file would have assigned module.exports twice (the second replaces the first), so mm made it one: module.exports = {{ {} }}",
            names.join(", ")
        );
        p.note = Some(format!("{}{note}", p.note.unwrap_or_default()));
    }
    p
}

/// The refusal of content that copies one of mm's own messages (into a
/// file that did not hold it).
pub(crate) fn mm_words_refusal(rel: &str, words: &str) -> String {
    format!(
        "refused: this content holds mm's own message ({words:?}), copied from a tool result; it is not {rel}'s text. Nothing was written. Write the code {rel} should hold."
    )
}

pub(crate) fn write_plan(env: &ToolEnv, args: &Map<String, Value>) -> Result<Pending, ToolOutput> {
    let path = arg_str(args, crate::toolname::arg::PATH).unwrap_or_default();
    let given = arg_str(args, crate::toolname::arg::CONTENT).unwrap_or_default();
    // read_file's numbered view copied as the content (a 1.5B model did):
    // the file's text is what follows the numbers.
    let unnumbered = env.guard_writes.then(|| unnumbered(given)).flatten();
    let content = unnumbered.as_deref().unwrap_or(given);
    let r = env.sandbox.check_write(path).map_err(ToolOutput::refused)?;
    let before = if std::fs::symlink_metadata(&r.abs).is_ok() {
        let current = read_text(&r.abs, &r.rel)
            .map_err(|e| ToolOutput::error(format!("cannot overwrite: {e}")))?;
        check_fresh(env, &r, &current, "overwrite").map_err(ToolOutput::refused)?;
        Some(current)
    } else {
        None
    };
    if before.as_deref() == Some(content) {
        return Err(ToolOutput::ok(format!(
            "{} already has this content; nothing written",
            r.rel
        )));
    }
    if env.guard_writes {
        if let Some(words) = crate::tools::guard::mm_words(content)
            && !before.as_deref().is_some_and(|b| b.contains(words))
        {
            return Err(ToolOutput::refused(mm_words_refusal(&r.rel, words)));
        }
        if let Some(why) = shadowing_refusal(env, &r, before.as_deref(), content) {
            return Err(ToolOutput::refused(why));
        }
        match &before {
            Some(old) => {
                if let Some(planned) = guard_overwrite(env, &r, old, content) {
                    return planned;
                }
            }
            None => {
                if let Some(source) = crate::tools::guard::copied_from(content, &env.read_files(&r))
                {
                    return Err(ToolOutput::refused(format!(
                        "refused: this would create {} as a copy of {source}, which you were shown as context. Nothing was written. Write what the request asks for in {}, not {source}'s content.",
                        r.rel, r.rel
                    )));
                }
            }
        }
    }
    Ok(Pending {
        r,
        before,
        after: content.to_string(),
        how: None,
        edit: false,
        note: unnumbered.map(|_| {
            ". The content was read_file's numbered view: mm wrote it without the line numbers"
                .to_string()
        }),
    })
}

/// The refusal of a write that defines again names the file imports
/// (hiding the imported code), or None.
fn shadowing_refusal(
    env: &ToolEnv,
    r: &Resolved,
    before: Option<&str>,
    content: &str,
) -> Option<String> {
    let shadowed = crate::tools::guard::shadowed_imports(before.unwrap_or(""), content);
    // In a test file the copies are taken out instead (see `tidy`).
    let taken_out = crate::patterns::is_test_file(&r.rel)
        && crate::tools::guard::copied_into_test(env.sandbox.root(), &r.rel, content)
            .is_some_and(|(_, names)| shadowed.iter().all(|n| names.contains(n)));
    if !shadowed.is_empty() && !taken_out {
        let source = crate::tools::guard::local_imports(env.sandbox.root(), &r.rel, content)
            .into_iter()
            .find(|(_, names)| names.iter().any(|n| shadowed.contains(n)))
            .map(|(f, _)| f)
            .unwrap_or_else(|| "the module it imports from".into());
        // Where this file calls them: the lines a change of how it
        // calls them would edit.
        let calls: Vec<String> = before
            .unwrap_or("")
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                shadowed.iter().any(|n| l.contains(&format!("{n}(")))
                    && crate::tools::guard::definitions(l).is_empty()
            })
            .take(4)
            .map(|(i, l)| format!("\n  line {}: {}", i + 1, l.trim()))
            .collect();
        let calls = if calls.is_empty() {
            String::new()
        } else {
            format!(
                "\n{} calls {} here; to change how it calls {}, edit_file these lines:{}",
                r.rel,
                shadowed.join(", "),
                if shadowed.len() == 1 { "it" } else { "them" },
                calls.concat()
            )
        };
        return Some(format!(
            "refused: {} imports {} from {source} and this write would define {} again in {}, hiding the imported code. Nothing was written. To change {}, edit {source} itself with edit_file; keep {} for what the request asks of it.{calls}",
            r.rel,
            shadowed.join(", "),
            if shadowed.len() == 1 { "it" } else { "them" },
            r.rel,
            shadowed.join(", "),
            r.rel
        ));
    }
    None
}

/// What the guard makes of a write over an existing file: refused (its
/// definitions nested or deleted, another file's code over it), merged
/// (only the part it changed), or with the bindings it dropped kept; None
/// to write it as sent.
fn guard_overwrite(
    env: &ToolEnv,
    r: &Resolved,
    old: &str,
    content: &str,
) -> Option<Result<Pending, ToolOutput>> {
    // The file's functions moved inside a new one: nothing to
    // merge, the write is wrong as a whole.
    if let Some(why) = crate::tools::guard::nests_top_level(&r.rel, old, content) {
        return Some(Err(ToolOutput::refused(why)));
    }
    if let Some(why) = crate::tools::guard::destructive(&r.rel, old, content) {
        // Another file's code written over this one (the source
        // into its test file) is a misread task, not a part to
        // merge in.
        if let Some(source) = crate::tools::guard::copied_defs(content, &env.read_files(r)) {
            return Some(Err(ToolOutput::refused(format!(
                "refused: this would put {source}'s code into {}, and delete what {} has. Nothing was written. Change {source} itself with edit_file, or write what the request asks for in {}.",
                r.rel, r.rel, r.rel
            ))));
        }
        // A small model writes only the part it changed: put
        // that part into the file instead of deleting the rest.
        if let Some((merged, applied)) = crate::tools::guard::merge_write(old, content) {
            let lost = crate::tools::guard::removed_names(old, content);
            let note = format!(
                ". Your write_file content would have deleted {} from {}, so mm kept the file and applied only your part ({}). To delete code, use edit_file",
                if lost.is_empty() {
                    "most of the file".to_string()
                } else {
                    lost.join(", ")
                },
                r.rel,
                applied.join(", ")
            );
            return Some(Ok(Pending {
                before: Some(old.to_string()),
                r: r.clone(),
                after: merged,
                how: None,
                edit: true,
                note: Some(note),
            }));
        }
        // The part sent again after it landed: say so, not "would
        // delete" (a small model sent the same part four times).
        let same = crate::tools::guard::already_in(old, content);
        if !same.is_empty() {
            return Some(Err(ToolOutput::refused(format!(
                "not written: {} already has {} exactly as in your content (your earlier write put it there), and writing it whole would delete the rest of {}. Nothing changed. read_file {} to see it; if it does what the request asks, answer; if not, change it with edit_file.",
                r.rel,
                same.join(", "),
                r.rel,
                r.rel
            ))));
        }
        return Some(Err(ToolOutput::refused(why)));
    }
    // Every definition kept, but an import or constant the code
    // still uses dropped: put it back rather than break the file.
    if let Some((kept, restored)) = crate::tools::guard::kept_bindings(old, content) {
        let note = format!(
            ". Your write_file content dropped {} from {}, which the code still uses, so mm kept {}",
            restored
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", "),
            r.rel,
            if restored.len() == 1 { "it" } else { "them" }
        );
        return Some(Ok(Pending {
            before: Some(old.to_string()),
            r: r.clone(),
            after: kept,
            how: None,
            edit: false,
            note: Some(note),
        }));
    }
    None
}

/// Works out an edit_file.
pub fn prepare_edit(env: &ToolEnv, args: &Map<String, Value>) -> Result<Pending, ToolOutput> {
    edit_plan(env, args).map(|p| tidy(env, p))
}

pub(crate) fn edit_plan(env: &ToolEnv, args: &Map<String, Value>) -> Result<Pending, ToolOutput> {
    let path = arg_str(args, crate::toolname::arg::PATH).unwrap_or_default();
    let old = arg_str(args, crate::toolname::arg::OLD_STRING).unwrap_or_default();
    let new = arg_str(args, crate::toolname::arg::REPLACEMENT).unwrap_or_default();
    if old.is_empty() {
        return Err(ToolOutput::error(
            "old_string is empty: give the exact text to replace, or use write_file for a new file",
        ));
    }
    if old == new {
        return Err(ToolOutput::error(
            "old_string and replacement are the same: nothing would change",
        ));
    }
    let r = env.sandbox.check_write(path).map_err(ToolOutput::refused)?;
    let current = read_text(&r.abs, &r.rel)
        .map_err(|e| ToolOutput::error(format!("{e}{}", missing_hint(&env.sandbox, &r))))?;
    // (A file that already holds those words, mm's own source, is
    // edited as any other.)
    if env.guard_writes
        && let Some(words) = crate::tools::guard::mm_words(new)
        && !current.contains(words)
    {
        return Err(ToolOutput::refused(mm_words_refusal(&r.rel, words)));
    }
    check_fresh(env, &r, &current, "edit").map_err(ToolOutput::refused)?;
    let replace_all = args
        .get(crate::toolname::arg::REPLACE_ALL)
        .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"));
    if replace_all && current.contains(old) {
        let count = current.matches(old).count();
        return Ok(Pending {
            r,
            after: current.replace(old, new),
            before: Some(current),
            how: if count > 1 { Some("replace_all") } else { None },
            edit: true,
            note: None,
        });
    }
    // A small model names the definition to replace (old_string
    // `load_orders`) and sends the whole new definition: the name alone
    // would match inside its `def` line and nest one definition in the
    // other.
    if env.guard_writes
        && let Some(after) = named_definition(&current, old, new)
    {
        return Ok(Pending {
            after,
            before: Some(current),
            r,
            how: Some(
                "old_string named a definition: the definitions in replacement took the place of their namesakes",
            ),
            edit: true,
            note: None,
        });
    }
    let splice = edit_match::find(&current, old, new).map_err(|e| match e {
        MatchError::Ambiguous { mut lines } => {
            lines.dedup();
            let all: Vec<&str> = current.lines().collect();
            let listed: Vec<String> = lines
                .iter()
                .map(|n| {
                    let text = all.get(n - 1).copied().unwrap_or("").trim_end();
                    format!("  line {n}: {}", text.chars().take(120).collect::<String>())
                })
                .collect();
            ToolOutput::error(format!(
                "old_string matches {} places in {}, so nothing was changed:\n{}\nTo change every one, send the same call with replace_all: true. To change one, include more of its surrounding lines so old_string matches once.",
                lines.len(),
                r.rel,
                listed.join("\n")
            ))
        }
        MatchError::NotFound { closest } => {
            let hint = match closest {
                Some(block) => format!("\nThe closest text in the file is:\n{block}"),
                None if env.guard_writes => not_found_hint(env, &r, &current, old),
                None => String::new(),
            };
            ToolOutput::error(format!(
                "old_string was not found in {}; read_file it and copy the text exactly{hint}",
                r.rel
            ))
        }
    })?;
    let after = edit_match::apply(&current, &splice);
    Ok(Pending {
        r,
        before: Some(current),
        after,
        how: splice.how,
        edit: true,
        note: None,
    })
}

/// What an edit would leave in `current`, found as the edit tool finds
/// it (every place, a named definition, the text matched), with none of
/// its checks: None when old_string matches nowhere or in more than one
/// place.
pub(crate) fn edit_outcome(
    current: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Option<String> {
    if old.is_empty() {
        return None;
    }
    if replace_all && current.contains(old) {
        return Some(current.replace(old, new));
    }
    if let Some(after) = named_definition(current, old, new) {
        return Some(after);
    }
    let splice = edit_match::find(current, old, new).ok()?;
    Some(edit_match::apply(current, &splice))
}

/// Puts a pending change on disk. `note` is added to the result (which
/// hunks the user rejected, say).
pub fn commit(env: &ToolEnv, p: Pending, cancelled: bool, note: &str) -> ToolOutput {
    let note = format!("{}{note}", p.note.as_deref().unwrap_or(""));
    let note = note.as_str();
    if cancelled {
        return ToolOutput::not_run("not executed: cancelled");
    }
    if p.before.as_deref() == Some(p.after.as_str()) {
        return ToolOutput::ok(format!("{} is unchanged{note}", p.r.rel));
    }
    if let Err(e) = atomic_write(&p.r.abs, &p.after) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.r.rel));
    }
    env.remember_read(&p.r, &p.after);
    let change = p.change();
    let rel = &p.r.rel;
    let lines = p.after.lines().count();
    let text = match (&p.before, p.edit) {
        (None, _) => format!("created {rel} ({lines} lines){note}"),
        (Some(_), false) => format!(
            "wrote {rel} ({lines} lines, +{} -{}){note}",
            change.added, change.removed
        ),
        (Some(before), true) => {
            let how = p.how.map(|h| format!(" ({h})")).unwrap_or_default();
            format!(
                "edited {rel}{how}: +{} -{}{note}\n{}",
                change.added,
                change.removed,
                diff::unified(rel, before, &p.after, 2, 40)
            )
        }
    };
    ToolOutput::ok(text).with_change(change)
}

/// For a path that does not exist: files elsewhere with the same name.
/// The file after an edit whose old_string is a bare name the file
/// defines once and whose replacement is a definition of that name (and
/// maybe of others): each definition in the replacement takes the place
/// of its namesake, new ones are added. None for any other edit.
pub(crate) fn named_definition(current: &str, old: &str, new: &str) -> Option<String> {
    let name = old.trim();
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if !ident
        || crate::tools::guard::definitions(new.trim_start())
            .first()
            .map(String::as_str)
            != Some(name)
    {
        return None;
    }
    let defines = current
        .lines()
        .filter(|l| {
            crate::tools::guard::definitions(l)
                .first()
                .map(String::as_str)
                == Some(name)
        })
        .count();
    if defines != 1 {
        return None;
    }
    let depth = new
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(crate::tools::guard::leading)
        .unwrap_or(0);
    let top_level = new
        .lines()
        .filter(|l| {
            crate::tools::guard::leading(l) <= depth
                && !crate::tools::guard::definitions(l).is_empty()
        })
        .count();
    if top_level > 1 {
        // Several definitions: put each in place, as a merged write does
        // (the ones after the named one would be in the file twice).
        return crate::tools::guard::merge_write(current, new).map(|(merged, _)| merged);
    }
    let block = crate::tools::guard::block_of(current, name)?;
    let indent = crate::tools::guard::leading(block.lines().next().unwrap_or(""));
    let mut replacement = crate::tools::guard::reindent(new.trim_matches('\n'), indent);
    if block.ends_with('\n') && !replacement.ends_with('\n') {
        replacement.push('\n');
    }
    Some(current.replacen(&block, &replacement, 1))
}

/// For an old_string that is nowhere in the file: the other file that
/// holds its first line (a small model copies a test's call as the code to
/// change), and the file's own definitions it names, with line numbers, to
/// copy from.
pub(crate) fn not_found_hint(env: &ToolEnv, r: &Resolved, current: &str, old: &str) -> String {
    let mut hint = String::new();
    let first = old
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if first.len() >= 6 {
        // The files read, and the workspace's files of the same kind (a
        // test the model saw only quoted in a failure).
        let mut candidates: Vec<std::path::PathBuf> = env
            .reads
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let ext = r.abs.extension().map(std::ffi::OsStr::to_os_string);
        candidates.extend(
            crate::paths::walk(env.sandbox.root())
                .build()
                .flatten()
                .take(2000)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(ignore::DirEntry::into_path)
                .filter(|p| {
                    ext.is_some() && p.extension().map(std::ffi::OsStr::to_os_string) == ext
                })
                .take(300),
        );
        candidates.sort();
        candidates.dedup();
        let mut found: Vec<(String, usize)> = candidates
            .iter()
            .filter(|p| **p != r.abs)
            .filter(|p| {
                p.strip_prefix(env.sandbox.root())
                    .is_ok_and(|rel| env.sandbox.check_read(&rel.to_string_lossy()).is_ok())
            })
            .filter_map(|p| {
                // As read_file would: no link, no FIFO, no second name.
                let text = crate::paths::read_checked(p, 256 * 1024)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())?;
                let line = text.lines().position(|l| l.contains(first))? + 1;
                let rel = p.strip_prefix(env.sandbox.root()).ok()?;
                Some((rel.to_string_lossy().into_owned(), line))
            })
            .collect();
        found.sort();
        if let Some((file, line)) = found.first() {
            hint.push_str(&format!(
                "\n`{}` is text from {file} (line {line}), not from {}: old_string must be code of {} itself.",
                first.chars().take(80).collect::<String>(),
                r.rel,
                r.rel
            ));
        }
    }
    let defined = crate::tools::guard::definitions(current);
    let mut named: Vec<&String> = defined
        .iter()
        .filter(|d| {
            old.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == d.as_str())
        })
        .collect();
    named.truncate(2);
    for name in named {
        let Some(block) = crate::tools::guard::block_of(current, name) else {
            continue;
        };
        let Some(at) = current.find(&block) else {
            continue;
        };
        let start = current[..at].lines().count() + 1;
        let numbered: Vec<String> = block
            .lines()
            .take(30)
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}", start + i))
            .collect();
        hint.push_str(&format!(
            "\n{name} in {} as it is now:\n{}",
            r.rel,
            numbered.join("\n")
        ));
    }
    hint
}

pub fn missing_hint(sandbox: &Sandbox, r: &Resolved) -> String {
    if r.abs.exists() {
        return String::new();
    }
    let Some(name) = r.abs.file_name() else {
        return String::new();
    };
    let root = sandbox.root();
    let found: Vec<String> = crate::paths::walk(root)
        .build()
        .flatten()
        .take(20_000)
        .filter(|e| e.file_name() == name && e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            e.path()
                .strip_prefix(root)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
        })
        .take(3)
        .collect();
    if found.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", found.join(" or "))
    }
}

pub(crate) fn file_change(rel: &str, before: Option<&str>, after: &str) -> FileChange {
    let (added, removed) = diff::line_counts(before.unwrap_or(""), after);
    FileChange {
        path: rel.to_string(),
        kind: if before.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Created
        },
        before: Arc::from(before.unwrap_or("")),
        after: Arc::from(after),
        added,
        removed,
    }
}
