//! What a request limits: files to leave alone, changes to keep to what
//! it names, definitions not to take out or rename unasked, and questions
//! that ask how rather than for the doing.

use super::*;

/// The files a message says to leave alone ("leave shop/prices.py
/// alone", "don't touch config.py", "keep util.js as it is"): mm makes no
/// change of its own to them, and the model's writes to them are refused,
/// until a later message asks for them.
pub fn hands_off(prompt: &str) -> Vec<String> {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\bleave\s+(?P<a>[^\s,;]+)\s+(?:alone|as it is|as is|unchanged|untouched)\b|\b(?:do not|don't|dont|never)\s+(?:touch|change|modify|edit)\s+(?P<b>[^\s,;]+)|\bkeep\s+(?P<c>[^\s,;]+)\s+(?:as it is|as is|unchanged|untouched)\b|\bhands off\s+(?P<d>[^\s,;]+)").ok()
    });
    if !crate::patterns::holds_any(
        prompt,
        &[
            "leave",
            "touch",
            "change",
            "modify",
            "edit",
            "keep",
            "hands off",
        ],
    ) {
        return Vec::new();
    }
    let Some(re) = RE.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(prompt) {
        let word = ["a", "b", "c", "d"]
            .iter()
            .find_map(|g| c.name(g))
            .map(|m| m.as_str().trim_matches(|ch: char| "`'\".,:)(".contains(ch)))
            .unwrap_or("");
        for f in named_files(word) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// `list` after a message: the files it says to leave alone join it, and
/// the ones it names without saying so leave it (asked for now).
pub fn update_hands_off(list: &mut Vec<String>, prompt: &str) {
    let named = named_files(prompt);
    let off = hands_off(prompt);
    list.retain(|f| !named.contains(f) || off.contains(f));
    for f in off {
        if !list.contains(&f) {
            list.push(f);
        }
    }
}

/// The message limits the change to what it names ("change nothing
/// else", "only touch cart.py"): mm's own changes stay in the files it
/// names.
pub fn only_what_it_names(prompt: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\b(?:change|touch|modify|edit)\s+nothing\s+else\b|\bnothing\s+else\b|\bonly\s+(?:change|touch|modify|edit|fix)\b|\bdo not\s+change\s+anything\s+else\b|\bdon't\s+change\s+anything\s+else\b").ok()
    });
    crate::patterns::holds_any(prompt, &["else", "only"])
        && RE.as_ref().is_some_and(|r| r.is_match(prompt))
}

/// A question that asks how to do something ("How do I run the tests?",
/// "what command builds it?"): the user will do it; the answer is the
/// way, not the doing.
pub fn asks_how(prompt: &str) -> bool {
    static RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(r"(?i)\bhow\s+(?:do|can|should|would|could|are|must)\s+(?:i|we|you|one|people|users)\b|\bhow\s+to\b|\bwhat\s+(?:command|commands|script)\b|\bwhich\s+(?:command|commands|script)\b").ok()
    });
    crate::patterns::holds_any(prompt, &["how", "command", "script"])
        && RE.as_ref().is_some_and(|r| r.is_match(prompt))
}

/// The definitions a change takes out of a file (`before` to `after`)
/// that the request neither names nor asks to take away: a small model
/// asked to add a method replaces an existing one with it (`pop` became
/// `peek` everywhere). Empty when the request asks to remove, rename,
/// replace or restructure anything.
pub fn unasked_removal(prompt: &str, before: &str, after: &str) -> Vec<String> {
    const TAKES_AWAY: &[&str] = &[
        "remove",
        "removes",
        "removing",
        "delete",
        "deletes",
        "deleting",
        "drop",
        "dropping",
        "rename",
        "renames",
        "renaming",
        "replace",
        "replacing",
        "merge",
        "merging",
        "inline",
        "inlining",
        "move",
        "moving",
        "refactor",
        "refactoring",
        "split",
        "combine",
        "consolidate",
        "rewrite",
        "rewriting",
        "simplify",
        "unused",
        "dead",
        "instead",
        "deprecated",
        "obsolete",
        "cleanup",
        "tidy",
        "restructure",
        "reorganize",
        "reorganise",
        "extract",
    ];
    // "without removing it" describes the new code, not the change.
    let words: Vec<String> = prompt
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let asked = words.iter().enumerate().any(|(i, w)| {
        TAKES_AWAY.contains(&w.as_str())
            && !(i > 0
                && ["without", "not", "never", "don't", "dont", "no"]
                    .contains(&words[i - 1].as_str()))
    });
    if asked
        || crate::patterns::holds_any(
            prompt,
            &[
                "get rid",
                "clean up",
                "call it ",
                "take it out",
                "take out",
                "no longer needed",
            ],
        )
    {
        return Vec::new();
    }
    // "Make the def line read def format_items(items):": the definition
    // that takes its place is the one the request names, a rename it
    // implies, unless it asks to add that one.
    let had = crate::tools::guard::definitions(before);
    let names_new = crate::tools::guard::definitions(after)
        .iter()
        .any(|d| !had.contains(d) && crate::patterns::has_word(prompt, &[d.as_str()]));
    let adds = words.iter().any(|w| {
        [
            "add",
            "adds",
            "adding",
            "create",
            "implement",
            "insert",
            "new",
            "write",
        ]
        .contains(&w.as_str())
    });
    if names_new && !adds {
        return Vec::new();
    }
    crate::tools::guard::removed_names(before, after)
        .into_iter()
        .filter(|name| !crate::patterns::has_word(prompt, &[name.as_str()]))
        .collect()
}

/// An edit that renames a definition the request names, when the request
/// does not ask for a rename: the old name and the new one.
pub fn unasked_rename(prompt: &str, old: &str, new: &str) -> Option<(String, String)> {
    let lower = prompt.to_lowercase();
    if lower.contains("rename") || lower.contains("call it ") && lower.contains(" instead") {
        return None;
    }
    let ident = |t: &str| {
        let t = t.trim();
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    // A bare name replaced by another: a rename too.
    let (before, after) = if ident(old) && ident(new) {
        (vec![old.trim().to_string()], vec![new.trim().to_string()])
    } else {
        (
            crate::tools::guard::definitions(old),
            crate::tools::guard::definitions(new),
        )
    };
    let gone: Vec<&String> = before.iter().filter(|d| !after.contains(d)).collect();
    let added: Vec<&String> = after.iter().filter(|d| !before.contains(d)).collect();
    let ([gone], [added]) = (gone.as_slice(), added.as_slice()) else {
        return None;
    };
    let named = Regex::new(&format!(r"(?-u:\b){}(?-u:\b)", regex::escape(gone))).ok()?;
    named
        .is_match(prompt)
        .then(|| ((*gone).clone(), (*added).clone()))
}
