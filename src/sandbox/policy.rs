//! The exec policy: which shell commands are read-only enough to run
//! without asking. The command is split the way `sh` splits words (quotes
//! and backslashes understood), so `'-delete'` is `-delete`; anything this
//! parser is not sure about is "not allowlisted" and goes to the mode's
//! answer (ask, refuse or run). This is a convenience gate, not a security
//! boundary: an allowlisted `cat` can still read any file the user can.

/// How one command line was judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Every part is on the read-only list.
    ReadOnly,
    /// Something is not: the reason, in a few words.
    NotAllowlisted(String),
}

/// A word after quote removal, with what the shell would still do to it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Word {
    text: String,
    /// An unquoted or double-quoted `$...` expansion.
    expands: bool,
    /// An unquoted `*`, `?` or `[`.
    globs: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(Word),
    /// `|`, `||`, `&&`, `;`, newline: separate simple commands.
    Separator,
    /// `&`, `(`, `)`: background jobs and subshells.
    Control(String),
    /// A redirection operator with its fd prefix, e.g. `2>`, `>>`, `<`.
    Redirect(String),
}

/// Splits a command line into tokens. Err with a reason for constructs
/// that are never allowlisted (substitutions, unterminated quotes).
fn lex(input: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut word: Option<Word> = None;
    let flush = |word: &mut Option<Word>, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                flush(&mut word, &mut tokens);
                i += 1;
            }
            '\n' | ';' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Separator);
                i += 1;
            }
            '#' if word.is_none() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '|' => {
                flush(&mut word, &mut tokens);
                i += if chars.get(i + 1) == Some(&'|') { 2 } else { 1 };
                if chars.get(i) == Some(&'&') {
                    return Err("`|&` pipes stderr".into());
                }
                tokens.push(Token::Separator);
            }
            '&' => {
                flush(&mut word, &mut tokens);
                if chars.get(i + 1) == Some(&'&') {
                    tokens.push(Token::Separator);
                    i += 2;
                } else if chars.get(i + 1) == Some(&'>') {
                    let len = if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    tokens.push(Token::Redirect(chars[i..i + len].iter().collect()));
                    i += len;
                } else {
                    tokens.push(Token::Control("&".into()));
                    i += 1;
                }
            }
            '(' | ')' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Control(c.to_string()));
                i += 1;
            }
            '<' | '>' => {
                if chars.get(i + 1) == Some(&'(') {
                    return Err("process substitution".into());
                }
                // A word made only of digits right before is the fd number.
                let mut op = String::new();
                if let Some(w) = &word
                    && !w.text.is_empty()
                    && w.text.chars().all(|d| d.is_ascii_digit())
                    && !w.expands
                {
                    op.push_str(&w.text);
                    word = None;
                }
                flush(&mut word, &mut tokens);
                op.push(c);
                i += 1;
                while let Some(&n) = chars.get(i) {
                    if matches!(n, '>' | '<' | '&' | '|') && op.len() < 4 {
                        op.push(n);
                        i += 1;
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Redirect(op));
            }
            '`' => return Err("command substitution".into()),
            '\'' => {
                let w = word.get_or_insert_with(empty_word);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated quote".into()),
                        Some('\'') => break,
                        Some(&ch) => w.text.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                let w = word.get_or_insert_with(empty_word);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated quote".into()),
                        Some('"') => break,
                        Some('`') => return Err("command substitution".into()),
                        Some('$') => {
                            if chars.get(i + 1) == Some(&'(') {
                                return Err("command substitution".into());
                            }
                            w.expands = true;
                            w.text.push('$');
                        }
                        Some('\\') => {
                            i += 1;
                            match chars.get(i) {
                                Some(&n @ ('$' | '`' | '"' | '\\')) => w.text.push(n),
                                Some('\n') => {}
                                Some(&n) => {
                                    w.text.push('\\');
                                    w.text.push(n);
                                }
                                None => return Err("unterminated quote".into()),
                            }
                        }
                        Some(&ch) => w.text.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '\\' => {
                i += 1;
                match chars.get(i) {
                    Some('\n') => {}
                    Some(&n) => word.get_or_insert_with(empty_word).text.push(n),
                    None => {}
                }
                i += 1;
            }
            '$' => {
                if chars.get(i + 1) == Some(&'(') {
                    return Err("command substitution".into());
                }
                let w = word.get_or_insert_with(empty_word);
                w.expands = true;
                w.text.push('$');
                i += 1;
            }
            '*' | '?' | '[' => {
                let w = word.get_or_insert_with(empty_word);
                w.globs = true;
                w.text.push(c);
                i += 1;
            }
            _ => {
                word.get_or_insert_with(empty_word).text.push(c);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut tokens);
    Ok(tokens)
}

fn empty_word() -> Word {
    Word {
        text: String::new(),
        expands: false,
        globs: false,
    }
}

/// A simple command: its words and whether a redirection went anywhere
/// but stderr or /dev/null.
struct Simple {
    words: Vec<Word>,
}

/// Judges a whole command line.
pub fn judge(command: &str) -> Judgement {
    match judge_inner(command) {
        Ok(()) => Judgement::ReadOnly,
        Err(reason) => Judgement::NotAllowlisted(reason),
    }
}

fn judge_inner(command: &str) -> Result<(), String> {
    let tokens = lex(command)?;
    let commands = split(tokens)?;
    if commands.is_empty() {
        return Err("empty command".into());
    }
    for cmd in &commands {
        check_simple(cmd)?;
    }
    Ok(())
}

fn split(tokens: Vec<Token>) -> Result<Vec<Simple>, String> {
    let mut out = Vec::new();
    let mut cur = Simple { words: Vec::new() };
    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Token::Word(w) => cur.words.push(w),
            Token::Separator => {
                if !cur.words.is_empty() {
                    out.push(std::mem::replace(&mut cur, Simple { words: Vec::new() }));
                }
            }
            Token::Control(c) if c == "&" => return Err("a background job (`&`)".into()),
            Token::Control(_) => return Err("a subshell".into()),
            Token::Redirect(op) => {
                let target = match iter.peek() {
                    Some(Token::Word(w)) => Some(w.clone()),
                    _ => None,
                };
                if !harmless_redirect(&op, target.as_ref()) {
                    return Err("a redirection to a file".into());
                }
                if target.is_some() {
                    iter.next();
                }
            }
        }
    }
    if !cur.words.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

/// Redirections that write nothing: to /dev/null, or between stdout and stderr.
fn harmless_redirect(op: &str, target: Option<&Word>) -> bool {
    let fd_dup = matches!(op, ">&" | "1>&" | "2>&");
    if fd_dup {
        return target.is_some_and(|t| t.text == "1" || t.text == "2");
    }
    let to_null = matches!(op, ">" | ">>" | "1>" | "2>" | "2>>" | "1>>" | "&>" | "&>>");
    to_null && target.is_some_and(|t| t.text == "/dev/null" && !t.expands)
}

fn check_simple(cmd: &Simple) -> Result<(), String> {
    let Some(first) = cmd.words.first() else {
        return Err("empty command".into());
    };
    if first.text.contains('=') && !first.text.starts_with('=') {
        return Err("a variable assignment before the command".into());
    }
    for w in &cmd.words {
        if w.expands {
            return Err("a shell expansion (`$`)".into());
        }
        if w.globs && w.text.starts_with('-') {
            return Err("a glob in a flag".into());
        }
    }
    let verb = first.text.as_str();
    if verb.contains('/') {
        return Err(format!("a path-qualified command ({verb})"));
    }
    let args: Vec<&str> = cmd.words[1..].iter().map(|w| w.text.as_str()).collect();
    check_verb(verb, &args)
}

const PLAIN_READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "file",
    "stat",
    "du",
    "df",
    "which",
    "whoami",
    "id",
    "uname",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    "nl",
    "cut",
    "tr",
    "column",
    "diff",
    "cmp",
    "comm",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "grep",
    "egrep",
    "fgrep",
    "test",
    "[",
    "type",
    "printenv",
];

fn check_verb(verb: &str, args: &[&str]) -> Result<(), String> {
    let not_listed = || Err(format!("`{verb}` is not on the read-only list"));
    match verb {
        v if PLAIN_READERS.contains(&v) => Ok(()),
        "rg" => deny_flags(verb, args, &["--pre", "--pre-glob"]),
        "tree" => deny_short_or_long(verb, args, 'o', &["--output"]),
        "sort" => deny_short_or_long(
            verb,
            args,
            'o',
            &["--output", "--compress-program", "--temporary-directory"],
        ),
        "uniq" => {
            let operands = args.iter().filter(|a| !a.starts_with('-')).count();
            if operands > 1 {
                Err("`uniq` with an output file".into())
            } else {
                Ok(())
            }
        }
        "date" => {
            if args
                .iter()
                .all(|a| a.starts_with('+') || matches!(*a, "-u" | "--utc" | "-R" | "-I"))
            {
                Ok(())
            } else {
                Err("`date` with an operand or a setting flag".into())
            }
        }
        "find" => deny_flags(
            verb,
            args,
            &[
                "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ],
        ),
        "git" => check_git(args),
        "cargo" => match first_operand(args) {
            Some("check" | "tree" | "metadata" | "version" | "--version" | "-V") => Ok(()),
            _ => Err("`cargo` other than check, tree or metadata".into()),
        },
        "go" => match first_operand(args) {
            Some("vet" | "list" | "version") => Ok(()),
            Some("env") if !args.iter().any(|a| matches!(*a, "-w" | "-u")) => Ok(()),
            _ => Err("`go` other than vet, list, version or env".into()),
        },
        _ => not_listed(),
    }
}

fn first_operand<'a>(args: &[&'a str]) -> Option<&'a str> {
    args.first().copied()
}

fn deny_flags(verb: &str, args: &[&str], denied: &[&str]) -> Result<(), String> {
    for a in args {
        let name = a.split('=').next().unwrap_or(a);
        if denied.contains(&name) {
            return Err(format!("`{verb} {name}`"));
        }
    }
    Ok(())
}

/// Denies a short flag letter, attached (`-oFILE`) or clustered (`-ro`),
/// and the listed long flags (`--output=x` too).
fn deny_short_or_long(verb: &str, args: &[&str], short: char, long: &[&str]) -> Result<(), String> {
    for a in args {
        if let Some(rest) = a.strip_prefix("--") {
            let name = rest.split('=').next().unwrap_or(rest);
            if long.iter().any(|l| l.trim_start_matches("--") == name) {
                return Err(format!("`{verb} --{name}` writes a file"));
            }
        } else if let Some(cluster) = a.strip_prefix('-')
            && cluster.contains(short)
        {
            return Err(format!("`{verb} -{short}` writes a file"));
        }
    }
    Ok(())
}

fn check_git(args: &[&str]) -> Result<(), String> {
    // Global options before the subcommand; `-c` could set a pager or hook.
    let mut rest = args;
    while let Some(first) = rest.first() {
        match *first {
            "--no-pager" | "-P" | "--no-optional-locks" => rest = &rest[1..],
            "-C" if rest.len() > 1 => rest = &rest[2..],
            _ => break,
        }
    }
    let Some((sub, sub_args)) = rest.split_first() else {
        return Err("`git` without a subcommand".into());
    };
    if sub_args
        .iter()
        .any(|a| a.starts_with("--output") || a.starts_with("--ext-diff"))
    {
        return Err("`git` writing to a file".into());
    }
    let no_operands = |what: &str| {
        if sub_args.iter().any(|a| !a.starts_with('-')) {
            Err(format!(
                "`git {what}` with an operand changes the repository"
            ))
        } else {
            Ok(())
        }
    };
    match *sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "grep"
        | "describe" | "shortlog" | "show-ref" | "ls-tree" | "cat-file" | "reflog" => Ok(()),
        "branch" => {
            if sub_args.iter().any(|a| {
                matches!(
                    *a,
                    "-d" | "-D"
                        | "-m"
                        | "-M"
                        | "-c"
                        | "-C"
                        | "--delete"
                        | "--move"
                        | "--copy"
                        | "-u"
                        | "--set-upstream-to"
                        | "--unset-upstream"
                        | "-f"
                        | "--force"
                )
            }) {
                return Err("`git branch` changing a branch".into());
            }
            let listing = sub_args.iter().any(|a| {
                matches!(
                    *a,
                    "-l" | "--list" | "-a" | "-r" | "--contains" | "--merged"
                )
            });
            if listing {
                Ok(())
            } else {
                no_operands("branch")
            }
        }
        "tag" => {
            if sub_args.iter().any(|a| matches!(*a, "-l" | "--list")) {
                Ok(())
            } else {
                no_operands("tag")
            }
        }
        "remote" => match sub_args.first() {
            None | Some(&"-v") | Some(&"--verbose") => Ok(()),
            Some(&"show") | Some(&"get-url") => Ok(()),
            _ => Err("`git remote` changing a remote".into()),
        },
        "stash" => match sub_args.first() {
            Some(&"list") | Some(&"show") => Ok(()),
            _ => Err("`git stash` changes the work tree".into()),
        },
        other => Err(format!("`git {other}` is not on the read-only list")),
    }
}

/// What "always" remembers for a command: its prefix (verb, plus the
/// subcommand for tools that have them) when the command is one plain
/// simple command, else the exact command line.
pub fn always_key(command: &str) -> String {
    let exact = command.trim().to_string();
    let Ok(tokens) = lex(command) else {
        return exact;
    };
    let mut words = Vec::new();
    for t in tokens {
        match t {
            Token::Word(w) if !w.expands && !w.globs => words.push(w.text),
            _ => return exact,
        }
    }
    let Some(verb) = words.first() else {
        return exact;
    };
    if verb.contains('/') || verb.contains('=') {
        return exact;
    }
    const WITH_SUBCOMMANDS: &[&str] = &[
        "git", "cargo", "npm", "pnpm", "yarn", "go", "make", "docker", "kubectl", "pip", "uv",
        "poetry", "bundle", "dotnet", "gradle", "mvn", "just", "deno", "bun", "npx",
    ];
    match words.get(1) {
        Some(sub) if WITH_SUBCOMMANDS.contains(&verb.as_str()) && !sub.starts_with('-') => {
            format!("{verb} {sub}")
        }
        _ => verb.clone(),
    }
}

/// True when `command` falls under a remembered "always" key.
pub fn matches_always(command: &str, key: &str) -> bool {
    // A complex command's key is its exact text, so a prefix key only ever
    // covers plain simple commands, never redirections or chains.
    command.trim() == key || always_key(command) == key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(cmd: &str) {
        assert_eq!(judge(cmd), Judgement::ReadOnly, "{cmd} should be read-only");
    }

    fn no(cmd: &str) {
        assert!(
            matches!(judge(cmd), Judgement::NotAllowlisted(_)),
            "{cmd} should not be allowlisted"
        );
    }

    #[test]
    fn read_only_commands_pass() {
        ok("ls -la");
        ok("cat src/main.rs | head -20");
        ok("grep -rn 'fn main' src && wc -l src/*.rs");
        ok("find . -name '*.rs' -type f");
        ok("git status --short; git log --oneline -5");
        ok("git diff HEAD~1 -- src");
        ok("cargo check --all-targets 2>&1");
        ok("ls missing 2>/dev/null");
        ok("sort -r file.txt");
        ok("uniq input.txt");
        ok("date +%Y");
        ok("git --no-pager log");
        ok("echo hello # a comment > x");
    }

    #[test]
    fn writing_and_running_things_is_not_allowlisted() {
        no("rm -rf target");
        no("echo hi > out.txt");
        no("echo hi >> out.txt");
        no("cat < secret");
        no("ls $(pwd)");
        no("ls `pwd`");
        no("echo \"$HOME\"");
        no("ls $HOME");
        no("sudo ls");
        no("xargs rm");
        no("eval ls");
        no("/bin/ls");
        no("PATH=/tmp ls");
        no("LD_PRELOAD=x.so ls");
        no("ls &");
        no("(ls)");
        no("diff <(ls) <(ls a)");
        no("cargo test");
        no("git commit -m x");
        no("git branch new-feature");
        no("git -c core.pager=sh log");
        no("git diff --output=patch.txt");
        no("go env -w GOFLAGS=x");
        no("echo 'unterminated");
    }

    #[test]
    fn quoted_and_clustered_flags_are_seen_through() {
        no("find . '-delete'");
        no("find . -\"exec\" rm {} ;");
        no("find . -name x -exec rm {} \\;");
        no("sort -o out.txt in.txt");
        no("sort -oout.txt in.txt");
        no("sort -ro out.txt in.txt");
        no("sort --output=out.txt in");
        no("uniq in.txt out.txt");
        no("date -s 2020-01-01");
        no("date 0101");
        no("tree -o listing.txt");
        no("rg --pre cat pattern");
        no("ls -*");
        no("ls 2>&1 >log");
    }

    #[test]
    fn always_keys_are_prefixes_for_plain_commands_only() {
        assert_eq!(always_key("cargo test --lib"), "cargo test");
        assert_eq!(always_key("npm run build"), "npm run");
        assert_eq!(always_key("rm -f a.txt"), "rm");
        assert_eq!(always_key("echo hi > out.txt"), "echo hi > out.txt");
        assert_eq!(always_key("make && rm -rf /"), "make && rm -rf /");
        assert!(matches_always("cargo test --release", "cargo test"));
        assert!(!matches_always("cargo build", "cargo test"));
        assert!(!matches_always("cargo test > /etc/x", "cargo test"));
        assert!(!matches_always("cargo test; rm -rf ~", "cargo test"));
    }
}
