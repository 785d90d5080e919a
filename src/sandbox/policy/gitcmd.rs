//! git's read commands judged: which subcommands are listings, what their
//! operands and option values are, and the repository checks each one needs.

use super::*;

/// git: global options, then a read-only subcommand with its options.
pub(super) fn git(args: &[Word], dirs: &[String], checks: &mut Vec<Check>) -> Result<(), String> {
    let mut rest = args;
    let mut at: Option<Word> = None;
    while let Some(first) = rest.first() {
        match first.text.as_str() {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects" => rest = &rest[1..],
            "-C" if rest.len() > 1 => {
                let dir = rest[1].clone();
                if !dir.literal() {
                    return Err("`git -C` with a folder made by the shell".into());
                }
                if at.is_some() {
                    return Err("`git -C` twice".into());
                }
                checks.push(Check::Dir {
                    word: dir.clone(),
                    dirs: dirs.to_vec(),
                });
                at = Some(dir);
                rest = &rest[2..];
            }
            "--version" if rest.len() == 1 => return Ok(()),
            t if t.starts_with('-') => return Err(format!("`git {t}` before the subcommand")),
            _ => break,
        }
    }
    let Some((sub, sub_args)) = rest.split_first() else {
        return Err("`git` without a subcommand".into());
    };
    if !sub.literal() {
        return Err("a git subcommand made by the shell".into());
    }
    let Some(spec) = rules::find(rules::GIT, &sub.text) else {
        return Err(format!("`git {}` is not on the read-only list", sub.text));
    };
    let name = format!("git {}", sub.text);
    let parsed = rules::parse_args(&name, spec, sub_args)?;
    if let Some(w) = parsed.operands.iter().find(|w| !w.literal()) {
        return Err(format!("`{name}` with a shell expansion ({})", w.text));
    }
    if spec.operands == Operands::Nothing
        && let Some(w) = parsed.operands.first()
    {
        return Err(format!("`{name} {}` is not on the read-only list", w.text));
    }
    let first = parsed.operands.first().map(|w| w.text.as_str());
    // From what parsed as options: `--format -l` is a format, not a list.
    let listing = parsed
        .options
        .iter()
        .any(|o| matches!(o.as_str(), "-l" | "--list"));
    match sub.text.as_str() {
        "branch" | "tag" if first.is_some() && !listing => {
            return Err(format!("`{name}` with a name creates or changes one"));
        }
        "reflog" if !matches!(first, None | Some("show")) => {
            return Err(format!("`{name} {}`", first.unwrap_or("")));
        }
        "stash" if !matches!(first, Some("list" | "show")) => {
            return Err("`git stash` other than list or show changes the work tree".into());
        }
        "cat-file" | "remote" | "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files"
        | "ls-tree" | "blame" | "grep" | "describe" | "shortlog" | "show-ref" | "branch"
        | "tag" | "reflog" | "stash" | "version" => {}
        other => return Err(format!("`git {other}`")),
    }
    for v in &parsed.path_values {
        checks.push(Check::Read {
            word: v.clone(),
            dirs: dirs.to_vec(),
        });
    }
    // Revisions and paths alike: an operand that names a place outside the
    // repository makes `git diff A B` a `--no-index` diff of two files.
    let git_dirs: Vec<String> = dirs
        .iter()
        .map(|d| match &at {
            Some(w) => join_dir(d, &w.text),
            None => d.clone(),
        })
        .collect();
    for w in &parsed.operands {
        checks.push(Check::GitOperand {
            word: w.clone(),
            dirs: git_dirs.clone(),
        });
    }
    if sub.text == "grep" {
        // Pathspecs reach anywhere in the repository (`..`, `:(top)`): the
        // whole workspace is walked.
        checks.push(Check::NoSecretsUnder {
            word: None,
            dirs: vec![String::new()],
        });
    }
    let metadata_only = !prints_contents(&sub.text, &parsed.options);
    // `git log` shows `refs/notes/commits` (and what `notes.displayRef`
    // names) unless told not to; a note can be any blob.
    let notes = matches!(sub.text.as_str(), "log" | "reflog" | "whatchanged")
        && !parsed.options.iter().any(|o| o == "--no-notes");
    checks.push(Check::Git {
        at,
        dirs: dirs.to_vec(),
        content: !metadata_only,
        notes,
        settings: sub.text == "remote",
    });
    Ok(())
}

/// Whether git subcommand `sub` with these options prints file contents
/// (a diff, a blob), not only names, commits or settings.
fn prints_contents(sub: &str, options: &[String]) -> bool {
    // `git log` and `git reflog` print files only with a patch (`-p`,
    // `-L`, a word diff…); a list of commits is no file's content.
    let patch = options.iter().any(|o| {
        matches!(
            o.as_str(),
            "-p" | "-u"
                | "-U"
                | "-W"
                | "-L"
                | "-c"
                | "--patch"
                | "--unified"
                | "--function-context"
                | "--word-diff"
                | "--word-diff-regex"
                | "--color-words"
                | "--cc"
                | "--binary"
                | "-m"
                | "--diff-merges"
                | "--notes"
                | "--show-notes"
        )
    });
    // `git status -v` prints the staged diff, `-vv` the unstaged one too.
    let verbose = options
        .iter()
        .any(|o| matches!(o.as_str(), "-v" | "-vv" | "--verbose"));
    // `--format='%(raw)'` prints the object a tag or branch points at (a
    // tag may point at a file).
    let formatted = matches!(sub, "tag" | "branch") && options.iter().any(|o| o == "--format");
    let metadata_only = (sub == "status" && !verbose)
        || matches!(
            sub,
            "ls-files"
                | "ls-tree"
                | "rev-parse"
                | "describe"
                | "show-ref"
                | "branch"
                | "tag"
                | "remote"
                | "version"
                | "shortlog"
        )
        || (matches!(sub, "log" | "reflog") && !patch);
    !metadata_only || formatted
}
