//! The read-only list, argument by argument: for each command the options
//! it may take (spelled in full: GNU tools accept any unambiguous prefix of
//! a long option, so `--o=FILE` would be `--output=FILE`) and what its
//! operands are. An option that is not named here, or an operand of the
//! wrong kind, takes the command off the list. Measured against a hostile
//! model (issue 9): `sort --compress-prog=sh`, `sort --o=/x`, `uniq IN OUT`,
//! `file -C -m x`, `git grep -O'cmd'` all got through a list of verbs with
//! denied flags; a list of allowed options cannot be got round that way.
//!
//! Option syntax in the tables: `-a` a short flag, `-n=` a short option
//! with a value (`-n5` or `-n 5`), `--all` a long flag, `--lines=` a long
//! option with a value (`--lines=5` or `--lines 5`), `--color=?` a value
//! only after `=` (`-U=?`: a short option's value only attached, `-U5`).
//! A value marked `=p` is a path the command reads; `=e`
//! gives grep its pattern (so the first operand is a path).

use super::shell::Word;

/// What a command's operands are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    Nothing,
    /// Free text the command does not open (echo, which, test).
    Text,
    /// Files or folders the command reads.
    Paths,
    /// A pattern, then paths (grep, rg), unless an option gave the pattern.
    PatternThenPaths,
    /// One input path at most (uniq: a second operand is an output file).
    OnePath,
    /// Only `+FORMAT` (date).
    DateFormat,
    /// Revisions and pathspecs inside the repository (git: it never reads
    /// a file outside its repository without `--no-index`).
    GitRevs,
}

pub struct Spec {
    pub name: &'static str,
    pub opts: &'static str,
    pub operands: Operands,
    /// `-NUM` is a count (head -20, grep -3, git log -5).
    pub digits: bool,
}

const fn spec(name: &'static str, opts: &'static str, operands: Operands) -> Spec {
    Spec {
        name,
        opts,
        operands,
        digits: false,
    }
}

const fn counted(name: &'static str, opts: &'static str, operands: Operands) -> Spec {
    Spec {
        name,
        opts,
        operands,
        digits: true,
    }
}

use Operands::*;

const GREP_OPTS: &str = "-r -n -i -l -L -c -v -w -x -o -h -H -s -q -E -F -G -P -I -a -b -z -Z -T -U \
-A= -B= -C= -m= -e=e -f=pe -d= -D= \
--recursive --line-number --ignore-case --no-ignore-case --files-with-matches --files-without-match \
--count --invert-match --word-regexp --line-regexp --only-matching --no-filename --with-filename \
--no-messages --quiet --silent --extended-regexp --fixed-strings --basic-regexp --perl-regexp \
--byte-offset --null --null-data --initial-tab --binary --text --line-buffered \
--max-count= --after-context= --before-context= --context= --regexp=e --file=pe --include= --exclude= \
--exclude-dir= --binary-files= --label= --color=? --colour=? --directories= --devices=";

/// The plain read-only commands. Left out on purpose: `-R`/`-L`/`--follow`
/// style options that follow symlinks out of the workspace (and `diff -r`,
/// which follows the links it finds in folders), anything that writes
/// (`-o`, `--output`), reads a list of file names from a file, or runs a
/// program (`--pre`, `--compress-program`, `-z` in rg, `diff -l`).
pub const COMMANDS: &[Spec] = &[
    spec(
        "ls",
        "-1 -a -A -b -B -c -C -d -F -g -G -h -i -k -l -m -n -N -o -p -q -Q -r -R -s -S -t -u -U -v -x -X -Z \
--all --almost-all --escape --ignore-backups --directory --classify --file-type --no-group --human-readable --si \
--inode --kibibytes --numeric-uid-gid --literal --hide-control-chars --quote-name --reverse --recursive --size \
--context --group-directories-first --full-time --color=? --sort= --time= --time-style= --format= --indicator-style= \
--width= -w= --block-size= --ignore= -I= --hide=",
        Paths,
    ),
    spec(
        "cat",
        "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank \
--show-tabs --show-nonprinting",
        Paths,
    ),
    counted(
        "head",
        "-n= -c= -q -v -z --lines= --bytes= --quiet --silent --verbose --zero-terminated",
        Paths,
    ),
    counted(
        "tail",
        "-n= -c= -q -v -z --lines= --bytes= --quiet --silent --verbose --zero-terminated",
        Paths,
    ),
    spec(
        "wc",
        "-c -m -l -L -w --bytes --chars --lines --max-line-length --words --total=",
        Paths,
    ),
    spec("pwd", "-L -P", Nothing),
    spec("echo", "-n -e -E", Text),
    spec("printf", "", Text),
    // Not `-z`/`--uncompress`: the file's bytes pick a decompressor that
    // file runs on it (red-team round 19).
    spec(
        "file",
        "-b -i -k -l -n -N -p -r -s -0 -E --brief --mime --mime-type --mime-encoding --keep-going \
--no-buffer --no-pad --preserve-date --raw --special-files --print0 --extension --apple",
        Paths,
    ),
    spec(
        "stat",
        "-f -L -t -c= --file-system --dereference --terse --format= --printf=",
        Paths,
    ),
    spec(
        "du",
        "-0 -a -b -c -h -H -k -l -m -s -S -x -d= -t= --null --all --apparent-size --bytes --total \
--human-readable --si --summarize --separate-dirs --one-file-system --count-links --max-depth= \
--threshold= --block-size= --time --time= --exclude= --inodes",
        Paths,
    ),
    spec(
        "df",
        "-a -h -H -i -k -l -P -T --all --human-readable --si --inodes --local --portability --print-type \
--total --type= --exclude-type= --output=? --block-size=",
        Paths,
    ),
    spec("which", "-a", Text),
    spec("whoami", "", Nothing),
    spec(
        "id",
        "-g -G -n -r -u -z --group --groups --name --real --user --zero",
        Text,
    ),
    spec(
        "uname",
        "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version \
--machine --processor --hardware-platform --operating-system",
        Nothing,
    ),
    spec("basename", "-a -s= -z --multiple --suffix= --zero", Text),
    spec("dirname", "-z --zero", Text),
    spec(
        "realpath",
        "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet \
--strip --no-symlinks --zero --relative-to= --relative-base=",
        Text,
    ),
    spec(
        "readlink",
        "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing \
--no-newline --quiet --silent --verbose --zero",
        Text,
    ),
    spec("true", "", Text),
    spec("false", "", Text),
    spec(
        "nl",
        "-p -b= -d= -f= -h= -i= -l= -n= -s= -v= -w= --no-renumber --body-numbering= --section-delimiter= \
--footer-numbering= --header-numbering= --line-increment= --join-blank-lines= --number-format= \
--number-separator= --starting-line-number= --number-width=",
        Paths,
    ),
    spec(
        "cut",
        "-n -s -z -b= -c= -d= -f= --bytes= --characters= --delimiter= --fields= --complement \
--only-delimited --output-delimiter= --zero-terminated",
        Paths,
    ),
    spec(
        "tr",
        "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1",
        Text,
    ),
    spec(
        "column",
        "-t -x -n -e -c= -s= -o= -N= -R= --table --fillrows --separator= --output-separator= \
--table-columns= --table-right= --output-width=",
        Paths,
    ),
    spec(
        "diff",
        "-a -b -B -c -d -e -E -i -n -p -q -s -t -T -u -w -y -Z -C= -U= -W= -I= \
--normal --brief --report-identical-files --context --context= --unified --unified= --ed --rcs \
--side-by-side --width= --left-column --suppress-common-lines --show-c-function --label= --expand-tabs \
--initial-tab --suppress-blank-empty --ignore-case --ignore-tab-expansion --ignore-trailing-space \
--ignore-space-change --ignore-all-space --ignore-blank-lines --ignore-matching-lines= --text \
--strip-trailing-cr --minimal --speed-large-files --color=? --show-function-line= --tabsize=",
        Paths,
    ),
    spec(
        "cmp",
        "-b -l -s -i= -n= --print-bytes --verbose --quiet --silent --ignore-initial= --bytes=",
        Paths,
    ),
    spec(
        "comm",
        "-1 -2 -3 -z --check-order --nocheck-order --output-delimiter= --total --zero-terminated",
        Paths,
    ),
    spec("md5sum", "-b -t -z --binary --text --tag --zero", Paths),
    spec("sha1sum", "-b -t -z --binary --text --tag --zero", Paths),
    spec("sha256sum", "-b -t -z --binary --text --tag --zero", Paths),
    spec("sha512sum", "-b -t -z --binary --text --tag --zero", Paths),
    spec(
        "b2sum",
        "-b -t -z -l= --binary --text --tag --zero --length=",
        Paths,
    ),
    counted("grep", GREP_OPTS, PatternThenPaths),
    counted("egrep", GREP_OPTS, PatternThenPaths),
    counted("fgrep", GREP_OPTS, PatternThenPaths),
    counted(
        "rg",
        "-a -c -F -H -i -I -l -n -N -o -p -q -s -S -u -U -v -w -x -0 \
-A= -B= -C= -e=e -f=pe -g= -m= -M= -t= -T= -d= -j= -E= -r= \
--text --count --count-matches --fixed-strings --with-filename --no-filename --ignore-case --line-number \
--no-line-number --only-matching --pretty --quiet --case-sensitive --smart-case --unrestricted \
--multiline --multiline-dotall --invert-match --word-regexp --line-regexp --null --files --files-with-matches \
--files-without-match --hidden --no-ignore --no-ignore-vcs --no-ignore-parent --no-ignore-dot --heading \
--no-heading --column --no-column --vimgrep --json --stats --trim --byte-offset --sort-files --passthru \
--after-context= --before-context= --context= --regexp=e --file=pe --glob= --iglob= --max-count= \
--max-columns= --type= --type-not= --max-depth= --threads= --encoding= --replace= --sort= --sortr= \
--color=? --colors= --max-filesize= --context-separator= --field-match-separator= --type-list",
        PatternThenPaths,
    ),
    spec(
        "tree",
        "-a -d -f -i -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -A -S -L= -P= -I= \
--noreport --dirsfirst --filesfirst --prune --matchdirs --ignore-case --du --si --gitignore --charset=",
        Paths,
    ),
    spec(
        "sort",
        "-b -d -f -g -h -i -M -n -r -s -u -V -z -c -C -k= -t= -S= \
--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort \
--ignore-nonprinting --month-sort --numeric-sort --reverse --version-sort --stable --unique \
--zero-terminated --check --check= --key= --field-separator= --buffer-size= --debug",
        Paths,
    ),
    spec(
        "uniq",
        "-c -d -D -i -u -z -f= -s= -w= --count --repeated --all-repeated=? --ignore-case --unique \
--zero-terminated --skip-fields= --skip-chars= --check-chars= --group=?",
        OnePath,
    ),
    spec(
        "date",
        "-u -R -I --utc --universal --rfc-email -d= --date= --iso-8601=? --rfc-3339=",
        DateFormat,
    ),
    spec("test", "", Text),
    spec("[", "", Text),
    spec("type", "", Text),
    spec("printenv", "-0 --null", Text),
];

/// git subcommands that only read, with their options. Left out: anything
/// that runs a program (`-O`, `--open-files-in-pager`, `--ext-diff`,
/// `--textconv`), writes a file (`--output`), reads outside the repository
/// (`--no-index`), or looks into submodules, whose settings git would
/// honour (`--ignore-submodules`, `--recurse-submodules`: on the command
/// line they beat the guard's `diff.ignoreSubmodules=all`).
pub const GIT: &[Spec] = &[
    spec(
        "status",
        "-s -b -u -z -v --short --branch --long --porcelain --porcelain=? --verbose --untracked-files=? \
--ignored=? --no-renames --renames --ahead-behind --no-ahead-behind --show-stash \
--column=? --no-column",
        GitRevs,
    ),
    counted("log", LOG_OPTS, GitRevs),
    counted(
        "shortlog",
        "-n -s -e -c -w=? --numbered --summary --email --committer --all --group= --format=",
        GitRevs,
    ),
    spec("diff", DIFF_OPTS, GitRevs),
    counted("show", LOG_OPTS, GitRevs),
    spec(
        "rev-parse",
        "-q --abbrev-ref --abbrev-ref=? --short --short=? --verify --quiet --show-toplevel --show-prefix \
--show-cdup --git-dir --absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository \
--symbolic --symbolic-full-name --all --branches --tags --remotes --sq --default= --show-superproject-working-tree",
        GitRevs,
    ),
    spec(
        "ls-files",
        "-c -d -m -o -i -s -u -k -t -v -f -z --cached --deleted --modified --others --ignored --stage \
--unmerged --killed --directory --no-empty-directory --exclude-standard --full-name --error-unmatch \
--eol --abbrev --abbrev=? --debug --exclude=",
        GitRevs,
    ),
    spec(
        "ls-tree",
        "-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree --abbrev=? --format=",
        GitRevs,
    ),
    spec(
        "blame",
        "-b -c -e -f -l -n -p -s -t -w -M -C -L= --root --show-stats --porcelain --line-porcelain \
--incremental --show-name --show-number --show-email --abbrev=? --date= --since= --first-parent \
--ignore-rev= --no-textconv",
        GitRevs,
    ),
    counted(
        "grep",
        "-a -c -E -F -G -h -H -i -I -l -L -n -o -p -P -q -r -v -w -W -z -A= -B= -C= -e=e -f=pe -m= \
--cached --untracked --text --ignore-case --word-regexp \
--invert-match --full-name --extended-regexp --basic-regexp --perl-regexp --fixed-strings --line-number \
--column --files-with-matches --name-only --files-without-match --null --count --break --heading \
--show-function --function-context --quiet --all-match --and --or --not --max-depth= --after-context= \
--before-context= --context= --max-count= --threads= --color=? --no-color --exclude-standard --no-exclude-standard",
        GitRevs,
    ),
    spec(
        "describe",
        "--all --tags --contains --long --always --exact-match --first-parent \
--abbrev=? --candidates= --match= --exclude=",
        GitRevs,
    ),
    spec(
        "show-ref",
        "-d -s -q --head --dereference --hash=? --abbrev=? --verify --exists --quiet --tags --heads --branches",
        GitRevs,
    ),
    spec("cat-file", "-t -s -e -p --batch-check=?", GitRevs),
    spec(
        "branch",
        "-a -l -r -v -vv --all --list --remotes --verbose --show-current --no-color --color=? \
--contains= --no-contains= --merged=? --no-merged=? --points-at= --sort= --format= --column=? --no-column",
        GitRevs,
    ),
    spec(
        "tag",
        "-l -n --list --contains= --no-contains= --merged=? --no-merged=? --points-at= --sort= --format= --column=? --no-column",
        GitRevs,
    ),
    spec("remote", "-v --verbose", Nothing),
    counted("reflog", LOG_OPTS, GitRevs),
    spec(
        "stash",
        "-p --patch --stat --name-only --name-status",
        GitRevs,
    ),
    spec("version", "", Nothing),
];

const LOG_OPTS: &str = "-p -u -s -n= -i -E -F -P -c -m -t -M -C -B -R -z -W -L= \
--oneline --stat --stat=? --shortstat --numstat --name-only --name-status --summary --patch --no-patch \
--graph --all --branches=? --tags=? --remotes=? --decorate --decorate=? --no-decorate --abbrev-commit \
--no-abbrev-commit --abbrev=? --format=? --pretty=? --date= --relative-date --reverse --first-parent \
--merges --no-merges --max-count= --skip= --since= --after= --until= --before= --author= --committer= \
--grep= --all-match --invert-grep --regexp-ignore-case --follow --full-history --simplify-merges \
--ancestry-path --left-right --cherry-pick --topo-order --date-order --author-date-order --source \
--walk-reflogs --no-walk=? --color=? --no-color --word-diff=? --word-diff-regex= --color-words=? \
--ignore-space-change --ignore-all-space --ignore-blank-lines --unified=? --diff-filter= --find-renames=? \
--find-copies=? --no-renames --raw --full-index --binary --function-context \
--no-ext-diff --no-textconv --diff-merges= --dirstat=? --cc --combined-all-paths --expand-tabs=? \
--notes=? --no-notes --mailmap --no-mailmap --use-mailmap --parents --children \
--boundary --minimal --patience --histogram --diff-algorithm= --indent-heuristic --no-indent-heuristic";

const DIFF_OPTS: &str = "-p -u -s -z -R -a -b -w -W -M -C -B -D -U=? \
--cached --staged --stat --stat=? --shortstat --numstat --name-only --name-status --summary --patch \
--no-patch --raw --color=? --no-color --word-diff=? --word-diff-regex= --color-words=? --ignore-space-change \
--ignore-all-space --ignore-blank-lines --ignore-space-at-eol --ignore-cr-at-eol --unified=? --diff-filter= \
--find-renames=? --find-copies=? --no-renames --full-index --binary --abbrev=? --function-context \
--no-ext-diff --no-textconv --merge-base --minimal --patience --histogram --diff-algorithm= --dirstat=? \
--check --exit-code --quiet --relative=? --no-relative --text --src-prefix= --dst-prefix= --no-prefix \
--indent-heuristic --no-indent-heuristic --inter-hunk-context= --ita-visible-in-index";

/// Looks a command up.
pub fn find(list: &'static [Spec], name: &str) -> Option<&'static Spec> {
    list.iter().find(|s| s.name == name)
}

/// How one option of a spec takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    Nothing,
    Value {
        path: bool,
        pattern: bool,
    },
    /// A value only after `=`.
    Optional,
}

fn lookup(spec: &Spec, name: &str) -> Option<Takes> {
    for o in spec.opts.split_whitespace() {
        let (n, kind) = match o.split_once('=') {
            Some((n, k)) => (n, Some(k)),
            None => (o, None),
        };
        if n != name {
            continue;
        }
        return Some(match kind {
            None => Takes::Nothing,
            Some("?") => Takes::Optional,
            Some(k) => Takes::Value {
                path: k.contains('p'),
                pattern: k.contains('e'),
            },
        });
    }
    None
}

/// A command's arguments sorted out by its spec.
#[derive(Debug, Default)]
pub struct Args {
    pub operands: Vec<Word>,
    /// Option values that are paths the command reads.
    pub path_values: Vec<Word>,
    /// An option gave the pattern (grep -e), so every operand is a path.
    pub pattern_given: bool,
    /// The options given, by name (`-l`, `--list`), values left out: a
    /// word that is an option's value (`--format -l`) is not one.
    pub options: Vec<String>,
}

/// An option's value as its own word: it must be what it looks like. A
/// glob there could expand to several words and shift the rest (`sort -t
/// [+-]*` became `sort -t + --compress-program=sh`).
fn value_word(prog: &str, option: &str, w: &Word) -> Result<Word, String> {
    if !w.literal() {
        return Err(format!(
            "`{prog} {option}` with a value made by the shell ({})",
            w.text
        ));
    }
    Ok(w.clone())
}

/// Sorts `args` into options and operands; Err names the first argument
/// the spec does not allow.
pub fn parse_args(prog: &str, spec: &Spec, args: &[Word]) -> Result<Args, String> {
    let mut out = Args::default();
    let mut i = 0;
    let mut only_operands = false;
    let unknown = |a: &str| Err(format!("`{prog} {a}` is not on the read-only list"));
    while i < args.len() {
        let w = &args[i];
        let a = w.text.as_str();
        i += 1;
        if only_operands || a == "-" || !a.starts_with('-') {
            out.operands.push(w.clone());
            continue;
        }
        if !w.literal() {
            return Err(format!("`{prog}`: an option made by the shell ({a})"));
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let full = format!("--{name}");
            out.options.push(full.clone());
            match lookup(spec, &full) {
                None => return unknown(&full),
                Some(Takes::Nothing) if value.is_some() => return unknown(a),
                Some(Takes::Nothing | Takes::Optional) => {}
                Some(Takes::Value { path, pattern }) => {
                    let value = match value {
                        Some(v) => Word::plain(v),
                        None => match args.get(i) {
                            Some(v) => {
                                i += 1;
                                value_word(prog, &full, v)?
                            }
                            None => return Err(format!("`{prog} {full}` without its value")),
                        },
                    };
                    out.pattern_given |= pattern;
                    if path {
                        out.path_values.push(value);
                    }
                }
            }
            continue;
        }
        let cluster = &a[1..];
        if spec.digits && cluster.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let chars: Vec<char> = cluster.chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let name = format!("-{}", chars[j]);
            match lookup(spec, &name) {
                // `-U5`: a value only when attached (git's `-U[<n>]`);
                // the word after a bare `-U` is not its value.
                Some(Takes::Optional) => {
                    out.options.push(name);
                    break;
                }
                None => {
                    // `-vv` style repeats are listed whole.
                    if lookup(spec, a) == Some(Takes::Nothing) {
                        out.options.push(a.to_string());
                        break;
                    }
                    return unknown(&name);
                }
                Some(Takes::Nothing) => {
                    out.options.push(name);
                    j += 1;
                }
                Some(Takes::Value { path, pattern }) => {
                    out.options.push(name.clone());
                    let rest: String = chars[j + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                value_word(prog, &name, v)?
                            }
                            None => return Err(format!("`{prog} {name}` without its value")),
                        }
                    } else {
                        Word::plain(&rest)
                    };
                    out.pattern_given |= pattern;
                    if path {
                        out.path_values.push(value);
                    }
                    break;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(list: &[&str]) -> Vec<Word> {
        list.iter().map(|t| Word::plain(t)).collect()
    }

    fn parse(name: &str, args: &[&str]) -> Result<Args, String> {
        let spec = find(COMMANDS, name).unwrap();
        parse_args(name, spec, &w(args))
    }

    #[test]
    fn every_option_in_the_tables_is_well_formed() {
        for s in COMMANDS.iter().chain(GIT) {
            for o in s.opts.split_whitespace() {
                let name = o.split('=').next().unwrap();
                assert!(
                    (name.starts_with("--") && name.len() > 3)
                        || (name.starts_with('-') && name.len() >= 2),
                    "{}: {o}",
                    s.name
                );
                if let Some(k) = o.split_once('=').map(|(_, k)| k) {
                    assert!(matches!(k, "" | "?" | "p" | "e" | "pe"), "{}: {o}", s.name);
                }
            }
        }
    }

    #[test]
    fn clusters_values_and_long_options() {
        let a = parse("ls", &["-la", "src", "--color=auto"]).unwrap();
        assert_eq!(a.operands.len(), 1);
        let a = parse("head", &["-n5", "a", "-n", "3", "b", "--lines=2", "-20"]).unwrap();
        assert_eq!(a.operands.len(), 2);
        let a = parse("grep", &["-rn", "-e", "x", "-f", "pats.txt", "src"]).unwrap();
        assert!(a.pattern_given);
        assert_eq!(a.path_values[0].text, "pats.txt");
        assert_eq!(a.operands[0].text, "src");
        let a = parse("cat", &["--", "-n"]).unwrap();
        assert_eq!(a.operands[0].text, "-n");
    }

    #[test]
    fn a_value_git_takes_only_attached_does_not_eat_the_next_word() {
        // `git diff -U --output=F`: git reads `--output=F` as an option.
        let g = |sub: &str, args: &[&str]| parse_args(sub, find(GIT, sub).unwrap(), &w(args));
        for (sub, args) in [
            ("diff", vec!["-U", "--output=/tmp/x"]),
            ("diff", vec!["--unified", "--no-index", "a", "b"]),
            ("log", vec!["-p", "--unified", "--output=/tmp/x"]),
            ("describe", vec!["--abbrev", "--dirty"]),
        ] {
            assert!(g(sub, &args).is_err(), "{sub} {args:?}");
        }
        let a = g("diff", &["-U5", "a.txt"]).unwrap();
        assert_eq!(a.operands.len(), 1);
        let a = g("diff", &["-U", "a.txt"]).unwrap();
        assert_eq!(a.operands[0].text, "a.txt");
        assert!(g("log", &["--unified=3"]).is_ok());
        assert!(g("describe", &["--abbrev=7"]).is_ok());
    }

    #[test]
    fn abbreviations_and_unknown_options_are_refused() {
        for (cmd, args) in [
            ("sort", vec!["--o=/tmp/x", "a"]),
            ("sort", vec!["--outp", "/tmp/x"]),
            ("sort", vec!["--compress-prog=sh", "a"]),
            ("sort", vec!["-o", "x"]),
            ("sort", vec!["-ro", "x"]),
            ("file", vec!["-C", "-m", "x"]),
            ("file", vec!["-z", "x"]),
            ("file", vec!["--uncompress", "x"]),
            ("ls", vec!["--colo"]),
            ("grep", vec!["-R", "x"]),
            ("rg", vec!["--pre", "sh", "x"]),
            ("rg", vec!["-z", "x"]),
            ("tree", vec!["-o", "out"]),
            ("cat", vec!["-n=3"]),
            ("ls", vec!["--all=yes"]),
            ("head", vec!["-n"]),
        ] {
            assert!(parse(cmd, &args).is_err(), "{cmd} {args:?}");
        }
        let glob = Word {
            globs: true,
            ..Word::plain("[+-]*")
        };
        let spec = find(COMMANDS, "sort").unwrap();
        let args = vec![w(&["-t"]).remove(0), glob, w(&["big.txt"]).remove(0)];
        assert!(
            parse_args("sort", spec, &args).is_err(),
            "a glob as a value"
        );
        assert!(parse("sort", &["--compress-prog=sh"]).is_err());
    }
}
