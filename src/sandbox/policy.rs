//! The exec policy: what a shell command is, judged from its text alone.
//! Pure: the lexer splits it (`shell`), each simple command is matched
//! argument by argument against the read-only list (`rules`), and what can
//! only be checked on disk (operand paths, the directories `cd` moves to,
//! the repository git runs in) comes back as checks for the sandbox to do.
//!
//! Three classes:
//! - read-only: runs without asking in every mode (inside the fence where
//!   there is one, with the workspace read-only);
//! - project code: builds and test runners (cargo test, pytest, make, …)
//!   run the project's own code, so they are never read-only: they run
//!   without asking only inside the fence, and ask where there is none;
//! - anything else: asks (workspace), is refused (read-only) or runs (full).

mod gitcmd;

use super::rules::{self, Operands};
use super::shell::{self, Join, Simple, Word};
use gitcmd::*;

/// What a command line is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    ReadOnly,
    ProjectCode,
    /// Something is not on either list: the reason, in a few words.
    NotListed(String),
}

/// A check only the file system can answer. `dirs` are the directories
/// (relative to the workspace, "" for the root) the command may run in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// A path the command reads: inside the workspace, no credential.
    Read { word: Word, dirs: Vec<String> },
    /// A directory `cd` or `git -C` moves to: inside the workspace.
    Dir { word: Word, dirs: Vec<String> },
    /// git runs in `dirs` (joined with `at`, from `-C`): the repository's
    /// own config must not name programs git would run; `content`: the
    /// command prints file contents (so the repository must not track a
    /// credential file); `settings`: it prints the repository's settings
    /// (`git remote -v`), so none may hold a credential.
    Git {
        at: Option<Word>,
        dirs: Vec<String>,
        content: bool,
        /// It prints the repository's notes, if it has any.
        notes: bool,
        settings: bool,
    },
    /// A git revision or path: what it names as a path (`rev:path` too)
    /// is inside the workspace and not a credential.
    GitOperand { word: Word, dirs: Vec<String> },
    /// A search reads every file under `word` (or the directory it runs
    /// in): none may be credential-shaped.
    NoSecretsUnder {
        word: Option<Word>,
        dirs: Vec<String>,
    },
    /// An operand of `diff`/`cmp` that must not be a folder: given one,
    /// they read the files in it, through any link there.
    NotAFolder { word: Word, dirs: Vec<String> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub checks: Vec<Check>,
}

impl Verdict {
    fn not_listed(reason: impl Into<String>) -> Self {
        Verdict {
            class: Class::NotListed(reason.into()),
            checks: Vec::new(),
        }
    }
}

/// Judges a whole command line. The directory each command runs in is
/// followed through `cd`, `&&`, `||` and `;` as the shell would: a set of
/// (directory, did the last command succeed) states, so `cd sub && cat
/// ../a` checks `a` from `sub` only, and `cd sub; cat ../a` from both.
pub fn judge(command: &str) -> Verdict {
    let simples = match shell::parse(command) {
        Ok(s) => s,
        Err(reason) => return Verdict::not_listed(reason),
    };
    if simples.is_empty() {
        return Verdict::not_listed("an empty command");
    }
    let mut checks = Vec::new();
    let mut project = false;
    let mut states: Vec<(String, bool)> = vec![(String::new(), true)];
    for pipeline in pipelines(&simples) {
        let join = pipeline[0].join;
        let (run, skip): (Vec<_>, Vec<_>) = states.into_iter().partition(|(_, ok)| match join {
            Join::And => *ok,
            Join::Or => !*ok,
            Join::Sequence | Join::Pipe => true,
        });
        let mut dirs: Vec<String> = Vec::new();
        for (d, _) in &run {
            if !dirs.contains(d) {
                dirs.push(d.clone());
            }
        }
        if dirs.is_empty() {
            // It never runs; judge it from the root all the same.
            dirs.push(String::new());
        }
        let mut moved_to = None;
        for cmd in pipeline {
            match judge_simple(cmd, &dirs, &mut checks) {
                Err(reason) => return Verdict::not_listed(reason),
                Ok(Part::ReadOnly) => {}
                Ok(Part::Project) => project = true,
                // In a pipeline each command has a shell of its own.
                Ok(Part::Cd(target)) => moved_to = (pipeline.len() == 1).then_some(target),
            }
        }
        states = skip;
        for d in dirs {
            let moved = match &moved_to {
                Some(t) => cd_to(&d, t),
                None => d.clone(),
            };
            for state in [(moved, true), (d, false)] {
                if !states.contains(&state) {
                    states.push(state);
                }
            }
        }
    }
    Verdict {
        class: if project {
            Class::ProjectCode
        } else {
            Class::ReadOnly
        },
        checks,
    }
}

/// Simple commands grouped into pipelines (`a | b` is one).
fn pipelines(simples: &[Simple]) -> Vec<&[Simple]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=simples.len() {
        if i == simples.len() || simples[i].join != Join::Pipe {
            out.push(&simples[start..i]);
            start = i;
        }
    }
    out
}

/// True when the command runs without asking in every mode.
pub fn is_read_only(command: &str) -> bool {
    judge(command).class == Class::ReadOnly
}

fn join_dir(dir: &str, target: &str) -> String {
    if target.starts_with('/') || dir.is_empty() {
        target.to_string()
    } else {
        format!("{dir}/{target}")
    }
}

/// Where `cd target` from `dir` lands, as the shell computes it: the
/// path joined and `..` taken off the text (`cd -L`), "" for the root,
/// a leading `..` kept when it climbs out (the check then fails).
fn cd_to(dir: &str, target: &str) -> String {
    let joined = join_dir(dir, target);
    let absolute = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    if absolute { format!("/{body}") } else { body }
}

enum Part {
    ReadOnly,
    Project,
    Cd(String),
}

fn judge_simple(cmd: &Simple, dirs: &[String], checks: &mut Vec<Check>) -> Result<Part, String> {
    for r in &cmd.redirects {
        redirect(r, dirs, checks)?;
    }
    let mut words = cmd.words.as_slice();
    let mut assigns = 0;
    while let Some(w) = words.first()
        && is_assignment(&w.text)
    {
        words = &words[1..];
        assigns += 1;
    }
    let Some((verb, args)) = words.split_first() else {
        return Err(if assigns > 0 {
            "a variable assignment".into()
        } else {
            "a redirection without a command".into()
        });
    };
    if !verb.literal() {
        return Err("a command name made by the shell".into());
    }
    let name = verb.text.as_str();
    if name.contains('/') {
        return Err(format!("a path-qualified command ({name})"));
    }
    if name == "timeout" {
        let inner = after_timeout(args)?;
        let sub = Simple {
            join: cmd.join,
            words: inner.to_vec(),
            redirects: Vec::new(),
        };
        return match judge_simple(&sub, dirs, checks)? {
            Part::Cd(_) => Err("`timeout cd`".into()),
            other => Ok(other),
        };
    }
    if project_code(name, args) {
        return Ok(Part::Project);
    }
    if let Some(script) = script_run(name, args) {
        // The script is the workspace's code: it runs where tests run.
        checks.push(Check::Read {
            word: script.clone(),
            dirs: dirs.to_vec(),
        });
        return Ok(Part::Project);
    }
    if assigns > 0 {
        return Err("a variable assignment before the command".into());
    }
    if let Some(w) = words.iter().find(|w| w.globs && !w.readable_glob()) {
        // `'[a]'*`: the text no longer tells the quoted `[a]` (plain
        // characters to the shell) from a pattern the gate would expand.
        return Err(format!(
            "a glob mixed with quoted pattern characters ({})",
            w.text
        ));
    }
    if name == "cd" {
        return cd(args, dirs, checks);
    }
    match name {
        "git" => git(args, dirs, checks)?,
        "find" => find(args, dirs, checks)?,
        _ => {
            let Some(spec) = rules::find(rules::COMMANDS, name) else {
                return Err(format!("`{name}` is not on the read-only list"));
            };
            listed(name, spec, args, dirs, checks)?;
        }
    }
    Ok(Part::ReadOnly)
}

pub(super) fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Redirections that write nothing: to /dev/null, between stdout and
/// stderr, or reading a file (checked as a read).
fn redirect(r: &shell::Redirect, dirs: &[String], checks: &mut Vec<Check>) -> Result<(), String> {
    let target = r.target.as_ref().filter(|t| t.literal());
    let op = r.op.as_str();
    if matches!(op, ">&" | "1>&" | "2>&") {
        return match target {
            Some(t) if t.text == "1" || t.text == "2" => Ok(()),
            _ => Err("a redirection to a file".into()),
        };
    }
    if matches!(op, "<" | "0<") {
        return match target {
            Some(t) => {
                checks.push(Check::Read {
                    word: t.clone(),
                    dirs: dirs.to_vec(),
                });
                Ok(())
            }
            None => Err("an input redirection from something not a plain path".into()),
        };
    }
    let to_null = matches!(op, ">" | ">>" | "1>" | "2>" | "2>>" | "1>>" | "&>" | "&>>");
    if to_null && target.is_some_and(|t| t.text == "/dev/null") {
        return Ok(());
    }
    Err("a redirection to a file".into())
}

/// `timeout [-s SIG] [-k DUR] [--preserve-status] [--foreground] DUR CMD…`.
fn after_timeout(args: &[Word]) -> Result<&[Word], String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-s" | "-k" | "--signal" | "--kill-after" => i += 2,
            "--preserve-status" | "--foreground" | "-v" | "--verbose" => i += 1,
            t if t.starts_with("--signal=") || t.starts_with("--kill-after=") => i += 1,
            t if t.starts_with('-') => return Err(format!("`timeout {t}`")),
            _ => break,
        }
    }
    match args.get(i + 1..) {
        Some(rest) if !rest.is_empty() && args[i].literal() => Ok(rest),
        _ => Err("`timeout` without a command".into()),
    }
}

fn cd(args: &[Word], dirs: &[String], checks: &mut Vec<Check>) -> Result<Part, String> {
    let args: Vec<&Word> = args.iter().filter(|w| w.text != "--").collect();
    match args.as_slice() {
        [w] if w.literal() && w.text != "-" && !w.text.starts_with('-') => {
            // The shell's `cd` is logical: `d/..` is where it started,
            // whatever `d` links to. So is the place checked.
            for d in dirs {
                checks.push(Check::Dir {
                    word: Word::plain(&cd_to(d, &w.text)),
                    dirs: vec![String::new()],
                });
            }
            Ok(Part::Cd(w.text.clone()))
        }
        _ => Err("`cd` anywhere but one plain folder".into()),
    }
}

/// Checks a listed command's arguments and queues its path checks.
fn listed(
    name: &str,
    spec: &rules::Spec,
    args: &[Word],
    dirs: &[String],
    checks: &mut Vec<Check>,
) -> Result<(), String> {
    let parsed = rules::parse_args(name, spec, args)?;
    let read = |w: &Word, checks: &mut Vec<Check>| -> Result<(), String> {
        if w.expands {
            return Err(format!(
                "`{name}` with a path made by the shell ({})",
                w.text
            ));
        }
        checks.push(Check::Read {
            word: w.clone(),
            dirs: dirs.to_vec(),
        });
        Ok(())
    };
    for v in &parsed.path_values {
        read(v, checks)?;
    }
    let ops = &parsed.operands;
    match spec.operands {
        Operands::Nothing if !ops.is_empty() => {
            return Err(format!("`{name}` with an operand ({})", ops[0].text));
        }
        Operands::Nothing | Operands::GitRevs => {}
        Operands::Text => {
            if let Some(w) = ops.iter().find(|w| !w.literal()) {
                return Err(format!("a shell expansion ({})", w.text));
            }
        }
        Operands::Paths => {
            for w in ops {
                read(w, checks)?;
                if matches!(name, "diff" | "cmp") {
                    if w.globs {
                        return Err(format!("a glob as an operand of `{name}` ({})", w.text));
                    }
                    checks.push(Check::NotAFolder {
                        word: w.clone(),
                        dirs: dirs.to_vec(),
                    });
                }
            }
        }
        Operands::OnePath => {
            if ops.len() > 1 {
                return Err(format!("`{name}` with a second operand (an output file)"));
            }
            for w in ops {
                read(w, checks)?;
            }
        }
        Operands::PatternThenPaths => {
            let skip = usize::from(!parsed.pattern_given);
            if let Some(p) = ops.first().filter(|p| skip == 1 && !p.literal()) {
                return Err(format!("a pattern made by the shell ({})", p.text));
            }
            for w in ops.iter().skip(skip) {
                read(w, checks)?;
            }
            if recursive(name, args) {
                let paths: Vec<&Word> = ops.iter().skip(skip).collect();
                if paths.is_empty() {
                    checks.push(Check::NoSecretsUnder {
                        word: None,
                        dirs: dirs.to_vec(),
                    });
                }
                for w in paths {
                    checks.push(Check::NoSecretsUnder {
                        word: Some(w.clone()),
                        dirs: dirs.to_vec(),
                    });
                }
            }
        }
        Operands::DateFormat => {
            if let Some(w) = ops
                .iter()
                .find(|w| !w.text.starts_with('+') || !w.literal())
            {
                return Err(format!(
                    "`date` with an operand that sets the clock ({})",
                    w.text
                ));
            }
        }
    }
    Ok(())
}

/// A search that walks folders: rg always, grep with -r (or
/// `--directories=recurse`). Options are read loosely here: a false "yes"
/// only costs a walk.
fn recursive(name: &str, args: &[Word]) -> bool {
    name == "rg"
        || args.iter().any(|w| {
            let t = w.text.as_str();
            t == "--recursive"
                || t.starts_with("--directories")
                || t == "recurse"
                || (t.starts_with('-') && !t.starts_with("--") && t.contains(['r', 'd']))
        })
}

/// `find` predicates without a value.
const FIND_NO_ARG: &[&str] = &[
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-empty",
    "-true",
    "-false",
    "-readable",
    "-writable",
    "-executable",
    "-nouser",
    "-nogroup",
    "-depth",
    "-xdev",
    "-mount",
    "-noleaf",
    "-daystart",
    "-not",
    "!",
    "-o",
    "-or",
    "-a",
    "-and",
    "(",
    ")",
    ",",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
];
/// `find` predicates with a value that is no path.
const FIND_ONE_ARG: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-maxdepth",
    "-mindepth",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-printf",
    "-used",
    "-lname",
    "-ilname",
];
/// `find` predicates whose value is a path it reads.
const FIND_PATH_ARG: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];

/// find: start paths, then an expression of listed predicates only.
fn find(args: &[Word], dirs: &[String], checks: &mut Vec<Check>) -> Result<(), String> {
    let mut i = 0;
    // Leading options: -P (never follow) only; -H and -L follow symlinks.
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-P" => i += 1,
            "-H" | "-L" | "-follow" => return Err("`find` following symlinks".into()),
            _ => break,
        }
    }
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t.starts_with('-') || t == "(" || t == "!" || t == ")" {
            break;
        }
        if a.expands {
            return Err(format!("`find` in a folder made by the shell ({t})"));
        }
        checks.push(Check::Read {
            word: a.clone(),
            dirs: dirs.to_vec(),
        });
        i += 1;
    }
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !a.literal() && a.text.starts_with('-') {
            return Err("`find` with a predicate made by the shell".into());
        }
        i += 1;
        if FIND_NO_ARG.contains(&t) {
            continue;
        }
        let takes_path = FIND_PATH_ARG.contains(&t);
        // -newerXY: X and Y from a, B, c, m (t takes a date, not a path).
        let xy: Vec<char> = t.strip_prefix("-newer").unwrap_or("").chars().collect();
        let newer_xy =
            matches!(xy.as_slice(), [x, y] if "aBcm".contains(*x) && "aBcmt".contains(*y));
        if !(FIND_ONE_ARG.contains(&t) || takes_path || newer_xy) {
            return Err(format!("`find {t}` is not on the read-only list"));
        }
        let Some(v) = args.get(i) else {
            return Err(format!("`find {t}` without its value"));
        };
        if !v.literal() {
            // `-name *.rs` unquoted: the shell expands it, maybe into
            // several words (`-name +x -exec sh {}`).
            return Err(format!(
                "`find {t}` with a value made by the shell ({})",
                v.text
            ));
        }
        i += 1;
        if takes_path || (newer_xy && !t.ends_with('t')) {
            checks.push(Check::Read {
                word: v.clone(),
                dirs: dirs.to_vec(),
            });
        }
    }
    Ok(())
}

/// `python3 app.py args`, `node test.js`: an interpreter given a script
/// file as its first word. The script (checked as a path the command
/// reads) is project code like a test; inline code (`-c`, `-e`) is not.
fn script_run<'a>(name: &str, args: &'a [Word]) -> Option<&'a Word> {
    let exts: &[&str] = match name {
        "python" | "python3" => &[".py"],
        "node" => &[".js", ".mjs", ".cjs"],
        "ruby" => &[".rb"],
        "perl" => &[".pl"],
        "sh" | "bash" => &[".sh"],
        _ => return None,
    };
    let first = args.first()?;
    (first.literal()
        && !first.text.starts_with('-')
        && exts.iter().any(|e| first.text.ends_with(e)))
    .then_some(first)
}

/// Builds and test runners: they run code from the workspace (a build
/// script, a conftest.py, a Makefile), so they never count as read-only.
fn project_code(name: &str, args: &[Word]) -> bool {
    let sub = args
        .iter()
        .map(|w| w.text.as_str())
        .find(|a| !a.starts_with('-') && !a.starts_with('+'));
    let has = |flag: &str| args.iter().any(|w| w.text == flag);
    match name {
        "cargo" => {
            matches!(
                sub,
                Some(
                    "build"
                        | "b"
                        | "check"
                        | "c"
                        | "test"
                        | "t"
                        | "clippy"
                        | "doc"
                        | "bench"
                        | "run"
                        | "r"
                        | "metadata"
                        | "tree"
                        | "nextest"
                        | "version"
                )
            ) || (sub == Some("fmt") && has("--check"))
                || (sub.is_none() && (has("--version") || has("-V")))
        }
        "go" => {
            matches!(
                sub,
                Some("build" | "vet" | "test" | "list" | "version" | "run")
            ) || (sub == Some("env") && !has("-w") && !has("-u"))
        }
        "pytest" | "py.test" | "tox" | "nox" | "ctest" | "jest" | "vitest" | "mocha" | "tsc"
        | "mypy" | "pyright" | "flake8" | "pylint" | "eslint" | "make" | "ninja" | "gcc"
        | "g++" | "cc" | "c++" | "clang" | "clang++" | "rustc" | "javac" => true,
        "python" | "python3" => {
            let w: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            matches!(
                w.as_slice(),
                [
                    "-m",
                    "pytest" | "unittest" | "doctest" | "mypy" | "pyflakes" | "compileall",
                    ..
                ] | ["-V" | "--version"]
            )
        }
        "npm" | "pnpm" | "bun" => matches!(sub, Some("test" | "t" | "run" | "run-script")),
        "yarn" => matches!(sub, Some("test" | "run")),
        "deno" => matches!(sub, Some("test" | "check" | "lint")),
        "cmake" => has("--build"),
        "meson" => matches!(sub, Some("test" | "compile")),
        "mvn" | "gradle" => matches!(
            sub,
            Some("test" | "compile" | "verify" | "check" | "build" | "package")
        ),
        "dotnet" | "swift" => matches!(sub, Some("test" | "build")),
        "ruff" => sub == Some("check") && !has("--fix"),
        "black" | "prettier" => has("--check"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(cmd: &str) -> Class {
        judge(cmd).class
    }

    fn ok(cmd: &str) {
        assert_eq!(class(cmd), Class::ReadOnly, "{cmd} should be read-only");
    }

    fn project(cmd: &str) {
        assert_eq!(
            class(cmd),
            Class::ProjectCode,
            "{cmd} should be project code"
        );
    }

    fn no(cmd: &str) {
        assert!(
            matches!(class(cmd), Class::NotListed(_)),
            "{cmd} should not be listed"
        );
    }

    #[test]
    fn read_only_commands_pass() {
        for cmd in [
            "ls -la",
            "ls -la src --color=auto",
            "cat src/main.rs | head -20",
            "grep -rn 'fn main' src && wc -l src/*.rs",
            "find . -name '*.rs' -type f",
            "find src -maxdepth 2 -newer Cargo.toml -print",
            "git status --short; git log --oneline -5",
            "git diff HEAD~1 -- src",
            "git -C sub log -n 3",
            "git branch --list 'feat*'",
            "git tag -n -l 'v*'",
            "git branch --format '%(refname)' -l 'feat*'",
            "git show HEAD@{1}",
            "ls missing 2>/dev/null",
            "sort -r file.txt",
            "uniq input.txt",
            "date +%Y",
            "git --no-pager log",
            "echo hello # a comment > x",
            "wc -l < notes.txt",
            "cd src && ls",
            "head -20 a.txt",
            "rg -n --glob '*.rs' TODO src",
        ] {
            ok(cmd);
        }
    }

    #[test]
    fn project_code_is_its_own_class() {
        for cmd in [
            "cargo check --all-targets 2>&1",
            "cargo test --lib",
            "RUST_BACKTRACE=1 cargo test",
            "go vet ./...",
            "pytest -q tests/test_calc.py",
            "python -m pytest -x",
            "npm test",
            "npm run build",
            "make",
            "make test | tail -20",
            "cd sub && pytest",
            "timeout 60 pytest",
            "python x.py",
            "python3 report.py --times 3 Ann",
            "node test.js",
            "sh scripts/check.sh",
        ] {
            project(cmd);
        }
    }

    #[test]
    fn writing_and_running_things_is_not_listed() {
        for cmd in [
            "rm -rf target",
            "echo hi > out.txt",
            "echo hi >> out.txt",
            "ls $(pwd)",
            "ls `pwd`",
            "echo \"$HOME\"",
            "ls $HOME",
            "cat ~/.ssh/id_rsa",
            "cat {a,b}",
            "sudo ls",
            "xargs rm",
            "eval ls",
            "/bin/ls",
            "PATH=/tmp ls",
            "LD_PRELOAD=x.so ls",
            "ls &",
            "(ls)",
            "diff <(ls) <(ls a)",
            "git commit -m x",
            "git branch new-feature",
            "git branch -D main",
            "git branch --format -l new-feature",
            "git tag --format -l v2",
            "git describe --always --dirty",
            "git describe --broken",
            "git reflog expire --expire=now --all",
            "git reflog delete HEAD@{0}",
            "git -c core.pager=sh log",
            "git diff --output=patch.txt",
            "git diff --ext-diff",
            "git diff --no-index /etc/passwd x",
            "git grep -O'touch /tmp/x' foo",
            "git grep --open-files-in-pager=sh foo",
            "git log --textconv",
            "git show --show-signature",
            "git stash",
            "git stash drop",
            "git remote add evil ext::sh",
            "git version --build-options x",
            "git --git-dir=/x status",
            "go env -w GOFLAGS=x",
            "echo 'unterminated",
            "cd",
            "cd -",
            "cd ~",
            "node -e 'x'",
            "python3 -c 'print(1)'",
            "python3 -u x.py",
            "node $SCRIPT.js",
            "cargo fmt",
            "npx some-package",
            "timeout 5 rm -rf x",
            "find . -newer\u{e9} a.txt",
            "cat '[a]'*",
            "cat \\[a]*",
            "git status --ignore-submodules=none",
            "git ls-files --recurse-submodules",
            "find . -newer\u{e9}\u{e9} a.txt",
        ] {
            no(cmd);
        }
    }

    #[test]
    fn options_are_exact_and_operands_checked() {
        for cmd in [
            "find . '-delete'",
            "find . -\"exec\" rm {} ;",
            "find . -name x -exec rm {} \\;",
            "find . -fprint out",
            "find -L . -name x",
            "sort -o out.txt in.txt",
            "sort -oout.txt in.txt",
            "sort -ro out.txt in.txt",
            "sort --output=out.txt in",
            "sort --o=/outside/x in",
            "sort --outp /outside/x in",
            "sort --compress-prog=sh in",
            "uniq in.txt out.txt",
            "file -C -m x",
            "date -s 2020-01-01",
            "date 0101",
            "tree -o listing.txt",
            "tree -R",
            "rg --pre cat pattern",
            "rg -z pattern",
            "grep -R secret .",
            "ls -*",
            "ls 2>&1 >log",
            "cat < $HOME/x",
            "tail -f log",
        ] {
            no(cmd);
        }
    }

    #[test]
    fn paths_come_back_as_checks_from_every_directory() {
        let v = judge("cd sub; cat ../a.txt");
        assert_eq!(v.class, Class::ReadOnly);
        let reads: Vec<(&str, &Vec<String>)> = v
            .checks
            .iter()
            .filter_map(|c| match c {
                Check::Read { word, dirs } => Some((word.text.as_str(), dirs)),
                _ => None,
            })
            .collect();
        assert_eq!(
            reads,
            vec![("../a.txt", &vec!["sub".to_string(), String::new()])]
        );
        let v = judge("cd sub && cat ../a.txt && cat ../b.txt || cat c.txt");
        let seen: Vec<(&str, Vec<&str>)> = v
            .checks
            .iter()
            .filter_map(|c| match c {
                Check::Read { word, dirs } => Some((
                    word.text.as_str(),
                    dirs.iter().map(String::as_str).collect(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("../a.txt", vec!["sub"]),
                ("../b.txt", vec!["sub"]),
                // Runs when the cd or a cat failed: from either place.
                ("c.txt", vec!["", "sub"]),
            ]
        );
        // `cd` is logical, as in the shell: `d/..` is where it started.
        let v = judge("cd d/.. && cat ../x");
        assert!(v.checks.iter().any(|c| matches!(c, Check::Read { word, dirs } if word.text == "../x" && dirs == &vec![String::new()])), "{v:?}");
        assert_eq!(cd_to("a/b", "../c/./d"), "a/c/d");
        assert_eq!(cd_to("", ".."), "..");
        assert_eq!(cd_to("/w", "x/../.."), "/");
        let v = judge("cd sub | cat ../a.txt; cat ../b.txt");
        assert!(v.checks.iter().any(|c| matches!(c, Check::Read { word, dirs } if word.text == "../b.txt" && dirs == &vec![String::new()])));
        let v = judge("grep -e x -f pats.txt src");
        let n = v
            .checks
            .iter()
            .filter(|c| matches!(c, Check::Read { .. }))
            .count();
        assert_eq!(n, 2, "the -f file and the operand");
        let v = judge("git -C sub status");
        assert!(
            v.checks
                .iter()
                .any(|c| matches!(c, Check::Git { at: Some(w), .. } if w.text == "sub"))
        );
    }
}
