//! Small pieces of shared knowledge about text that both the agent and
//! its tools use: regexes compiled small, and what names a test file.

use regex::Regex;

/// A regex whose lazy DFA keeps a small cache: these run once or twice a
/// turn over a reply, and the default cache (2 MiB each, grown as a long
/// reply is scanned) cost a headless run a megabyte of memory.
///
/// `\w`, `\s`, `\b`, `\d` and `(?i)` are ASCII: the patterns look for
/// English words and code names, and their Unicode forms compiled to
/// automata that took half of a headless run's CPU (a `(?i)` word class
/// repeated is thousands of states). A pattern that can only be written
/// with Unicode on (one that could match invalid UTF-8 without it) keeps it.
pub(crate) fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    let build = |unicode: bool| {
        regex::RegexBuilder::new(pattern)
            .unicode(unicode)
            .dfa_size_limit(64 * 1024)
            .build()
    };
    build(false).or_else(|_| build(true))
}

/// A byte regex for prompts and replies, ASCII classes as [`regex`].
/// Its patterns repeat an "any character but" class a bounded number of
/// times (`[^.\n]{0,30}`): as a byte class each repeat is one byte, where
/// the Unicode class compiled to a large automaton per repeat (a megabyte
/// for a 200-repeat).
pub(crate) fn bytes_regex(pattern: &str) -> Result<regex::bytes::Regex, regex::Error> {
    let build = |unicode: bool| {
        regex::bytes::RegexBuilder::new(pattern)
            .unicode(unicode)
            .dfa_size_limit(64 * 1024)
            .build()
    };
    build(false).or_else(|_| build(true))
}

/// Whether `text` has one of `words` as a whole word, case ignored:
/// `(?i)(?-u:\b)(w1|w2|…)(?-u:\b)` without building a regex (ASCII
/// letters, digits and `_` make a word, as `(?-u:\b)` sees it). A
/// request is classified by a dozen such word lists at the start of every
/// turn; built as regexes they cost a headless run a third of its CPU.
pub(crate) fn has_word(text: &str, words: &[&str]) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| !w.is_empty() && words.iter().any(|x| x.eq_ignore_ascii_case(w)))
}

/// Whether `text` holds one of `needles` (written in lower case), case
/// ignored: the test in front of a regex that cannot match without one
/// of them, so that the regex is built only for a text that might match.
pub(crate) fn holds_any(text: &str, needles: &[&str]) -> bool {
    let lower = text.to_ascii_lowercase();
    needles.iter().any(|n| lower.contains(n))
}

/// A path that holds tests by the usual conventions.
pub fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("test_")
        || name.starts_with("test.")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
        || path.starts_with("tests/")
        || path.contains("/tests/")
        || path.starts_with("test/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_list_matches_where_its_regex_does() {
        let words = ["fix", "bug", "test_x"];
        let re = bytes_regex(r"(?i)(?-u:\b)(fix|bug|test_x)(?-u:\b)").unwrap();
        for text in [
            "please FIX it",
            "prefix the name",
            "fix_it",
            "fixé",
            "a bug.",
            "bugs",
            "(Bug)",
            "",
            "test_x()",
            "my_test_x",
            "fix\u{e9}s",
            "\u{e9}fix",
        ] {
            assert_eq!(
                has_word(text, &words),
                re.is_match(text.as_bytes()),
                "{text:?}"
            );
        }
        assert!(holds_any("The TESTS pass", &["test"]));
        assert!(!holds_any("all green", &["test", "spec"]));
    }

    #[test]
    fn classes_are_ascii_and_a_pattern_that_needs_unicode_keeps_it() {
        let word = regex(r"(?i)\bfix\b").unwrap();
        assert!(word.is_match("Please FIX it"));
        assert!(!word.is_match("prefix"));
        // `\w` is ASCII: the name stops at the accent.
        let name = regex(r"\w+").unwrap();
        assert_eq!(name.find("héllo").unwrap().as_str(), "h");
        // `.` over a `&str` needs Unicode (it could match half a
        // character): the pattern is built with it, not refused.
        let any = regex("a.b").unwrap();
        assert!(any.is_match("a→b"));
        let bytes = bytes_regex(r"(?i)(?-u:\b)tests?(?-u:[^.\n]){0,30}pass").unwrap();
        assert!(bytes.is_match(b"The Tests now pass"));
    }
}
