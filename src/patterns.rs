//! Small pieces of shared knowledge about text that both the agent and
//! its tools use: regexes compiled small, and what names a test file.

use regex::Regex;

/// A regex whose lazy DFA keeps a small cache: these run once or twice a
/// turn over a reply, and the default cache (2 MiB each, grown as a long
/// reply is scanned) cost a headless run a megabyte of memory.
pub(crate) fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .dfa_size_limit(64 * 1024)
        .build()
}

/// A byte regex for prompts and replies whose pattern repeats a "any
/// character but" class a bounded number of times (`[^.\n]{0,30}`): as
/// a byte class, `(?-u:[^.\n])`, each repeat is one byte, where the
/// Unicode class compiled to a large automaton per repeat (a megabyte
/// for a 200-repeat).
pub(crate) fn bytes_regex(pattern: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(pattern)
        .dfa_size_limit(64 * 1024)
        .build()
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
