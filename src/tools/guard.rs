//! Checks on what a write would do, before it is done: a whole-file
//! write that drops definitions or most of a file is a small model
//! writing only the part it changed, not a decision to delete; a new
//! file that is another file's content copied is a misread task. And
//! after a change, the names it removed that other files still use.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// Definition lines in the languages mm's users write most: Python,
/// JavaScript/TypeScript, Rust, Go, shell. One capture group: the name.
static DEFINITION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Python: functions and methods at any depth, classes.
        r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)",
        r"^\s*class\s+([A-Za-z_]\w*)",
        // JavaScript / TypeScript.
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=",
        // Rust.
        r"^\s*(?:pub(?:\([\w:\s]+\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+\S+\s+)*fn\s+([A-Za-z_]\w*)",
        r"^(?:pub(?:\([\w:\s]+\))?\s+)?(?:struct|enum|trait|mod|type|static)\s+([A-Za-z_]\w*)",
        // Go.
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",
        r"^type\s+([A-Za-z_]\w*)",
        // Shell.
        r"^([A-Za-z_][\w-]*)\s*\(\)\s*\{",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// The names a file defines, in order, each once.
pub fn definitions(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        for re in DEFINITION.iter() {
            if let Some(name) = re.captures(line).and_then(|c| c.get(1)) {
                let name = name.as_str().to_string();
                if seen.insert(name.clone()) {
                    out.push(name);
                }
                break;
            }
        }
    }
    out
}

/// Files below this many non-blank lines may be rewritten freely.
const SMALL_FILE: usize = 10;

/// Why writing `after` over `before` would destroy work, or None.
pub fn destructive(rel: &str, before: &str, after: &str) -> Option<String> {
    let kept: BTreeSet<String> = definitions(after).into_iter().collect();
    let lost: Vec<String> = definitions(before)
        .into_iter()
        .filter(|d| !kept.contains(d))
        .collect();
    let old_lines = before.lines().filter(|l| !l.trim().is_empty()).count();
    let new_lines = after.lines().filter(|l| !l.trim().is_empty()).count();
    let most_gone = old_lines >= SMALL_FILE && new_lines * 2 < old_lines;
    if lost.is_empty() && !most_gone {
        return None;
    }
    let what = if lost.is_empty() {
        format!("{} of its {old_lines} lines", old_lines - new_lines)
    } else {
        format!(
            "{} ({} of {old_lines} lines left)",
            lost.join(", "),
            new_lines
        )
    };
    Some(format!(
        "refused: this write_file would replace all of {rel} and delete {what}. Nothing was written. write_file replaces the WHOLE file: to add or change part of it, use edit_file (old_string = the lines to change or the line to add after, replacement = those lines with your change); or send write_file again with the complete file, every existing definition kept."
    ))
}

/// A new file whose content is an existing file's, copied: the model
/// wrote back what it was shown instead of what was asked.
pub fn copied_from(after: &str, others: &[(String, String)]) -> Option<String> {
    let norm = |s: &str| -> String { s.split_whitespace().collect::<Vec<_>>().join(" ") };
    let new = norm(after);
    if new.len() < 40 {
        return None;
    }
    others
        .iter()
        .find(|(_, text)| norm(text) == new)
        .map(|(p, _)| p.clone())
}

/// Where each name in `names` still appears in the workspace's text
/// files, as `path:line`, at most a few per name.
pub fn references(root: &Path, names: &[String], skip: &str) -> Vec<(String, Vec<String>)> {
    if names.is_empty() {
        return Vec::new();
    }
    let patterns: Vec<(String, Regex)> = names
        .iter()
        .filter_map(|n| {
            Regex::new(&format!(r"\b{}\b", regex::escape(n)))
                .ok()
                .map(|r| (n.clone(), r))
        })
        .collect();
    let mut found: Vec<(String, Vec<String>)> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    for entry in crate::sandbox::path::walk(root)
        .build()
        .flatten()
        .take(5_000)
    {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        if rel == skip || rel.starts_with(".mm/") {
            continue;
        }
        if entry
            .metadata()
            .map(|m| m.len() > 512 * 1024)
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            for ((_, re), (_, hits)) in patterns.iter().zip(found.iter_mut()) {
                if hits.len() < 5 && re.is_match(line) {
                    hits.push(format!("{rel}:{}", i + 1));
                }
            }
        }
    }
    found.retain(|(_, hits)| !hits.is_empty());
    found
}

/// Names `before` defined that `after` no longer does.
pub fn removed_names(before: &str, after: &str) -> Vec<String> {
    let kept: BTreeSet<String> = definitions(after).into_iter().collect();
    definitions(before)
        .into_iter()
        .filter(|d| !kept.contains(d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_in_several_languages() {
        let py = "import os\n\ndef a():\n    pass\n\nclass B:\n    def m(self):\n        pass\nasync def c():\n    pass\n";
        assert_eq!(definitions(py), ["a", "B", "m", "c"]);
        let js = "function repeat(s, n) {}\nexport const isBlank = (s) => s;\nmodule.exports = { repeat };\n";
        assert_eq!(definitions(js), ["repeat", "isBlank"]);
        let rs = "pub fn is_leap(y: u32) -> bool {}\nstruct S;\nimpl S {\n    pub(crate) fn go(&self) {}\n}\n";
        assert_eq!(definitions(rs), ["is_leap", "S", "go"]);
        let go = "func (s *Server) Run() {}\nfunc main() {}\ntype T struct{}\n";
        assert_eq!(definitions(go), ["Run", "main", "T"]);
    }

    #[test]
    fn a_write_that_drops_definitions_is_refused_and_names_them() {
        let before = "def shout(s):\n    return s\n\n\ndef whisper(s):\n    return s\n";
        let after = "def reverse_words(s):\n    return s\n";
        let why = destructive("t.py", before, after).unwrap();
        assert!(why.contains("shout, whisper"), "{why}");
        assert!(why.contains("edit_file"));
        // The complete file with one more function is fine.
        let full = format!("{before}\n\ndef reverse_words(s):\n    return s\n");
        assert_eq!(destructive("t.py", before, &full), None);
    }

    #[test]
    fn a_write_that_drops_most_lines_is_refused_but_small_files_are_free() {
        let before: String = (0..20).map(|i| format!("x{i} = {i}\n")).collect();
        assert!(destructive("c.py", &before, "x0 = 0\n").is_some());
        assert_eq!(destructive("c.py", "a = 1\nb = 2\n", "a = 3\n"), None);
        // A fix that keeps everything passes.
        let fixed = before.replace("x3 = 3", "x3 = 4");
        assert_eq!(destructive("c.py", &before, &fixed), None);
    }

    #[test]
    fn a_copy_of_another_file_is_recognised_through_whitespace() {
        let src = "import re\n\ndef slugify(t):\n    return '-'.join(re.findall(r'\\w+', t))\n";
        let others = vec![("slug.py".to_string(), src.to_string())];
        let copy = src.replace("\n\n", "\n");
        assert_eq!(copied_from(&copy, &others).as_deref(), Some("slug.py"));
        assert_eq!(
            copied_from(
                "import unittest\nfrom slug import slugify\n\nclass T(unittest.TestCase):\n    pass\n",
                &others
            ),
            None
        );
    }

    #[test]
    fn references_find_callers_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pricing.py"),
            "def compute_total(p):\n    return p\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("cart.py"),
            "from pricing import calc_total\n\nx = calc_total([1])\ncalc_totals = 1\n",
        )
        .unwrap();
        let removed = removed_names(
            "def calc_total(p):\n    return p\n",
            "def compute_total(p):\n    return p\n",
        );
        assert_eq!(removed, ["calc_total"]);
        let refs = references(dir.path(), &removed, "pricing.py");
        assert_eq!(
            refs,
            vec![(
                "calc_total".to_string(),
                vec!["cart.py:1".to_string(), "cart.py:3".to_string()]
            )]
        );
    }
}
