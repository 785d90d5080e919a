//! Splitting a command line the way `sh` would, as far as the exec gate
//! needs: words after quote removal (with what the shell would still do to
//! each), redirections with their targets, and the separators between
//! simple commands. Pure, so the fuzzer and the tests feed it strings.
//!
//! Anything this lexer is not sure about is an error with a reason, and
//! the gate treats an error as "not on the list": command and process
//! substitution, unterminated quotes, `|&`.

/// A word after quote removal, with what the shell would still do to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// An unquoted or double-quoted `$…`, an unquoted leading `~`, or an
    /// unquoted `{` (brace expansion in bash): the text is not what runs.
    pub expands: bool,
    /// An unquoted `*`, `?` or `[`: the shell may replace it with paths.
    pub globs: bool,
    /// A quoted or escaped `*`, `?`, `[` or `]`: in a glob word the text no
    /// longer says which of them the shell takes as pattern characters.
    pub quoted_meta: bool,
}

impl Word {
    fn new() -> Self {
        Word {
            text: String::new(),
            expands: false,
            globs: false,
            quoted_meta: false,
        }
    }

    /// A word exactly as given (for option values split off a word).
    pub fn plain(text: &str) -> Self {
        Word {
            text: text.to_string(),
            ..Word::new()
        }
    }

    /// Pushes a quoted or escaped character.
    fn push_quoted(&mut self, c: char) {
        if matches!(c, '*' | '?' | '[' | ']') {
            self.quoted_meta = true;
        }
        self.text.push(c);
    }

    /// A glob whose pattern characters the text can tell apart from
    /// quoted ones: the gate can expand it as the shell would.
    pub fn readable_glob(&self) -> bool {
        self.globs && !self.quoted_meta
    }

    /// A word the shell passes on exactly as written.
    pub fn literal(&self) -> bool {
        !self.expands && !self.globs
    }
}

/// A redirection: the operator with its fd prefix (`2>`, `>>`, `<`, `>&`)
/// and its target word, if one followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub op: String,
    pub target: Option<Word>,
}

/// How a simple command is joined to the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// The first command, or after `;` or a newline: runs whatever the
    /// command before did.
    Sequence,
    /// After `&&`: runs when what came before succeeded.
    And,
    /// After `||`: runs when what came before failed.
    Or,
    /// After `|`: a pipeline member, in a subshell of its own.
    Pipe,
}

/// One simple command: its words and redirections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Simple {
    pub join: Join,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(Word),
    Sep(Join),
    /// `&`, `(`, `)`: background jobs and subshells.
    Control(char),
    Redirect(String),
}

/// Splits a command line into simple commands.
pub fn parse(input: &str) -> Result<Vec<Simple>, String> {
    let tokens = lex(input)?;
    let mut out = Vec::new();
    let mut cur = Simple {
        join: Join::Sequence,
        words: Vec::new(),
        redirects: Vec::new(),
    };
    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Token::Word(w) => cur.words.push(w),
            Token::Sep(join) => {
                let empty = cur.words.is_empty() && cur.redirects.is_empty();
                if empty && join != Join::Sequence {
                    return Err("a separator with no command before it".into());
                }
                if !empty {
                    out.push(std::mem::replace(
                        &mut cur,
                        Simple {
                            join,
                            words: Vec::new(),
                            redirects: Vec::new(),
                        },
                    ));
                } else {
                    cur.join = Join::Sequence;
                }
            }
            Token::Control('&') => return Err("a background job (`&`)".into()),
            Token::Control(_) => return Err("a subshell or group".into()),
            Token::Redirect(op) => {
                let target = match iter.peek() {
                    Some(Token::Word(_)) => match iter.next() {
                        Some(Token::Word(w)) => Some(w),
                        _ => None,
                    },
                    _ => None,
                };
                cur.redirects.push(Redirect { op, target });
            }
        }
    }
    if !cur.words.is_empty() || !cur.redirects.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

fn lex(input: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut word: Option<Word> = None;
    let flush = |word: &mut Option<Word>, tokens: &mut Vec<Token>| {
        if let Some(mut w) = word.take() {
            // A lone `[` (the test command) or `]` matches nothing.
            if w.text == "[" || w.text == "]" {
                w.globs = false;
            }
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
                if c == ';' && chars.get(i + 1) == Some(&';') {
                    return Err("`;;` (a case clause)".into());
                }
                tokens.push(Token::Sep(Join::Sequence));
                i += 1;
            }
            '#' if word.is_none() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '|' => {
                flush(&mut word, &mut tokens);
                if chars.get(i + 1) == Some(&'|') {
                    tokens.push(Token::Sep(Join::Or));
                    i += 2;
                } else {
                    if chars.get(i + 1) == Some(&'&') {
                        return Err("`|&` pipes stderr".into());
                    }
                    tokens.push(Token::Sep(Join::Pipe));
                    i += 1;
                }
            }
            '&' => {
                flush(&mut word, &mut tokens);
                if chars.get(i + 1) == Some(&'&') {
                    tokens.push(Token::Sep(Join::And));
                    i += 2;
                } else if chars.get(i + 1) == Some(&'>') {
                    let len = if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    tokens.push(Token::Redirect(chars[i..i + len].iter().collect()));
                    i += len;
                } else {
                    tokens.push(Token::Control('&'));
                    i += 1;
                }
            }
            '(' | ')' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Control(c));
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
                    && w.literal()
                {
                    op.push_str(&w.text);
                    word = None;
                }
                flush(&mut word, &mut tokens);
                op.push(c);
                i += 1;
                while let Some(&n) = chars.get(i) {
                    if matches!(n, '>' | '<' | '&' | '|' | '-') && op.len() < 6 {
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
                let w = word.get_or_insert_with(Word::new);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated quote".into()),
                        Some('\'') => break,
                        Some(&ch) => w.push_quoted(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                let w = word.get_or_insert_with(Word::new);
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
                                    w.push_quoted(n);
                                }
                                None => return Err("unterminated quote".into()),
                            }
                        }
                        Some(&ch) => w.push_quoted(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '\\' => {
                i += 1;
                match chars.get(i) {
                    Some('\n') => {}
                    Some(&n) => word.get_or_insert_with(Word::new).push_quoted(n),
                    None => {}
                }
                i += 1;
            }
            '$' => {
                if chars.get(i + 1) == Some(&'(') {
                    return Err("command substitution".into());
                }
                let w = word.get_or_insert_with(Word::new);
                w.expands = true;
                w.text.push('$');
                i += 1;
            }
            '*' | '?' | '[' => {
                let w = word.get_or_insert_with(Word::new);
                w.globs = true;
                w.text.push(c);
                i += 1;
            }
            '~' => {
                // `~` expands at the start of a word (and after `=` or `:`
                // in an assignment).
                let w = word.get_or_insert_with(Word::new);
                if w.text.is_empty() || w.text.ends_with(['=', ':']) {
                    w.expands = true;
                }
                w.text.push(c);
                i += 1;
            }
            '{' => {
                // Brace expansion in bash (`{a,b}`, `{1..3}`); `@{1}` stays.
                let w = word.get_or_insert_with(Word::new);
                if brace_expands(&chars[i + 1..]) {
                    w.expands = true;
                }
                w.text.push(c);
                i += 1;
            }
            _ => {
                word.get_or_insert_with(Word::new).text.push(c);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut tokens);
    Ok(tokens)
}

/// Whether the text after an unquoted `{` may be a brace expansion: a
/// `,` or `..` before the closing `}` (a quote on the way: assume so).
fn brace_expands(rest: &[char]) -> bool {
    let mut prev = '{';
    for &c in rest {
        match c {
            '}' => return false,
            ',' => return true,
            '.' if prev == '.' => return true,
            '\'' | '"' | '\\' | '$' | '{' => return true,
            ' ' | '\t' | '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => return false,
            _ => {}
        }
        prev = c;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        parse(cmd)
            .unwrap()
            .into_iter()
            .map(|s| s.words.into_iter().map(|w| w.text).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(
            words("ls 'a b' \"c d\" e\\ f"),
            vec![vec!["ls", "a b", "c d", "e f"]]
        );
        assert_eq!(
            words("find . '-delete'"),
            vec![vec!["find", ".", "-delete"]]
        );
        assert_eq!(words("echo \"a\\\"b\""), vec![vec!["echo", "a\"b"]]);
    }

    #[test]
    fn separators_say_how_commands_join() {
        let p = parse("cd a && ls; cat x | wc -l || true").unwrap();
        let joins: Vec<Join> = p.iter().map(|s| s.join).collect();
        assert_eq!(
            joins,
            vec![
                Join::Sequence,
                Join::And,
                Join::Sequence,
                Join::Pipe,
                Join::Or
            ]
        );
    }

    #[test]
    fn expansions_are_marked() {
        let p = parse("cat ~/.ssh/id_rsa a~b {a,b} $HOME \"$X\" '$Y' *.rs").unwrap();
        let w = &p[0].words;
        assert!(w[1].expands, "leading tilde");
        assert!(!w[2].expands, "a tilde inside a word stays");
        assert!(w[3].expands, "braces");
        assert!(w[4].expands && w[5].expands);
        assert!(w[6].literal(), "single quotes keep $");
        assert!(w[7].globs);
        let p = parse("cat '[a]'* \\[b]* [c]*").unwrap();
        let w = &p[0].words;
        assert!(
            w[1].globs && !w[1].readable_glob(),
            "a quoted class with a glob"
        );
        assert!(!w[2].readable_glob(), "an escaped bracket");
        assert!(w[3].readable_glob());
    }

    #[test]
    fn redirections_carry_their_targets() {
        let p = parse("wc -l < in.txt 2>/dev/null >out").unwrap();
        let ops: Vec<(&str, Option<&str>)> = p[0]
            .redirects
            .iter()
            .map(|r| (r.op.as_str(), r.target.as_ref().map(|t| t.text.as_str())))
            .collect();
        assert_eq!(
            ops,
            vec![
                ("<", Some("in.txt")),
                ("2>", Some("/dev/null")),
                (">", Some("out"))
            ]
        );
    }

    #[test]
    fn unsure_constructs_are_errors() {
        for bad in [
            "ls $(pwd)",
            "ls `pwd`",
            "echo \"$(id)\"",
            "diff <(ls) x",
            "ls |& cat",
            "echo 'open",
            "(ls)",
            "ls &",
            "| ls",
            "case x in a) ;; esac",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
