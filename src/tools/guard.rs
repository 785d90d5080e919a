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

/// What a whole-file write that drops definitions most likely meant:
/// the file as it is, with the write's definitions put in place of their
/// namesakes or added after the file's last definition, its new import
/// lines after the file's imports, and a top-level assignment it changed
/// (`module.exports = …`) in place of the old one. None when the write
/// shares nothing with the file to go by.
pub fn merge_write(before: &str, after: &str) -> Option<(String, Vec<String>)> {
    let old_defs = definitions(before);
    let new_defs = definitions(after);
    if new_defs.is_empty() {
        return None;
    }
    let mut content = before.to_string();
    let mut applied = Vec::new();
    let mut added = Vec::new();
    for name in &new_defs {
        let Some(block) = block_of(after, name) else {
            continue;
        };
        if old_defs.contains(name) {
            let Some(old) = block_of(&content, name) else {
                continue;
            };
            let indent = old.lines().next().map(leading).unwrap_or(0);
            let fresh = reindent(&block, indent);
            if fresh.trim_end() != old.trim_end() {
                content = content.replacen(&old, &fresh, 1);
                applied.push(format!("changed {name}"));
            }
        } else if leading(block.lines().next().unwrap_or("")) == 0 {
            // A Python method written without its class goes into the
            // file's last class.
            if is_method(&block)
                && let Some(merged) = into_last_class(&content, &block)
            {
                content = merged;
                applied.push(format!("added {name} to the class"));
                continue;
            }
            added.push(block);
            applied.push(format!("added {name}"));
        }
    }
    if !added.is_empty() {
        let at = end_of_last_definition(&content).unwrap_or(content.len());
        // Two blank lines between definitions where the file has them
        // (PEP 8), else one.
        let gap = if before.contains("\n\n\ndef ") || before.contains("\n\n\nclass ") {
            "\n\n\n"
        } else {
            "\n\n"
        };
        let mut insert = String::new();
        for b in &added {
            insert.push_str(gap);
            insert.push_str(b.trim_end());
        }
        let (head, tail) = content.split_at(at);
        let head = head.trim_end();
        let tail = tail.trim_start_matches('\n');
        content = if tail.is_empty() {
            format!("{head}{insert}\n")
        } else {
            format!("{head}{insert}{gap}{tail}")
        };
    }
    // Top-level lines outside the definitions: new imports, and an
    // assignment whose target the file already assigns.
    let inside: Vec<String> = new_defs.iter().filter_map(|n| block_of(after, n)).collect();
    for line in after.lines() {
        if line.trim().is_empty()
            || leading(line) > 0
            || inside.iter().any(|b| b.lines().any(|l| l == line))
            || content.lines().any(|l| l == line)
        {
            continue;
        }
        if is_import(line) {
            let at = content
                .lines()
                .take_while(|l| {
                    is_import(l) || l.trim().is_empty() || l.starts_with('#') || l.starts_with("//")
                })
                .map(|l| l.len() + 1)
                .sum::<usize>()
                .min(content.len());
            let at = content[..at].trim_end().len();
            let sep = if at == 0 { "" } else { "\n" };
            content.insert_str(
                at,
                &format!("{sep}{line}{}", if at == 0 { "\n" } else { "" }),
            );
            applied.push(format!("added `{}`", line.trim()));
        } else if let Some((target, _)) = line.split_once(" = ") {
            let prefix = format!("{target} = ");
            if let Some(old) = content
                .lines()
                .find(|l| l.starts_with(&prefix))
                .map(str::to_string)
            {
                content = content.replacen(&old, line, 1);
                applied.push(format!("changed `{target} = …`"));
            }
        }
    }
    if applied.is_empty() || content == before {
        return None;
    }
    Some((content, applied))
}

/// `def name(self` or `def name(cls`: a method.
fn is_method(block: &str) -> bool {
    let first = block
        .lines()
        .find(|l| l.trim_start().starts_with("def ") || l.trim_start().starts_with("async def "));
    first.is_some_and(|l| {
        l.split_once('(')
            .map(|(_, rest)| {
                let p = rest.trim_start();
                p.starts_with("self") || p.starts_with("cls")
            })
            .unwrap_or(false)
    })
}

/// `text` with `method` added at the end of its last top-level class,
/// indented as that class's methods are.
fn into_last_class(text: &str, method: &str) -> Option<String> {
    let class = text
        .lines()
        .filter(|l| leading(l) == 0 && l.starts_with("class "))
        .filter_map(|l| definitions(l).into_iter().next())
        .next_back()?;
    let block = block_of(text, &class)?;
    let indent = block
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .map(leading)
        .unwrap_or(4);
    let start = text.find(&block)?;
    let end = start + block.len();
    let body = reindent(method, indent);
    let head = text[..end].trim_end();
    let tail = text[end..].trim_start_matches('\n');
    let gap = if tail.is_empty() { "" } else { "\n\n" };
    Some(format!("{head}\n\n{}\n{gap}{tail}", body.trim_end()))
}

fn is_import(line: &str) -> bool {
    line.starts_with("import ")
        || line.starts_with("from ")
        || line.starts_with("use ")
        || (line.starts_with("const ") && line.contains("require("))
}

/// The byte offset where the last top-level definition of `text` ends.
fn end_of_last_definition(text: &str) -> Option<usize> {
    let name = text
        .lines()
        .filter(|l| leading(l) == 0)
        .filter_map(|l| definitions(l).into_iter().next())
        .next_back()?;
    let block = block_of(text, &name)?;
    let start = text.rfind(&block)?;
    Some(start + block.len())
}

/// The other file whose definitions `after` copies: every name `after`
/// defines is defined there, and it is not the file written.
pub fn copied_defs(after: &str, others: &[(String, String)]) -> Option<String> {
    let defs = definitions(after);
    if defs.is_empty() {
        return None;
    }
    others
        .iter()
        .find(|(_, text)| {
            let theirs = definitions(text);
            defs.iter().all(|d| theirs.contains(d))
        })
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

pub fn leading(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines of the definition of `name` in `text`: its first line, and
/// every line after it until one is indented no deeper (a closing brace
/// at that depth belongs to it).
pub fn block_of(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| definitions(l).first().map(String::as_str) == Some(name))?;
    // Decorators directly above belong to the definition.
    let mut first = start;
    while first > 0 && lines[first - 1].trim_start().starts_with('@') {
        first -= 1;
    }
    let depth = leading(lines[start]);
    let mut end = start + 1;
    while end < lines.len() {
        let l = lines[end];
        if l.trim().is_empty() {
            end += 1;
            continue;
        }
        if leading(l) <= depth {
            let t = l.trim_start();
            if t.starts_with('}') || t.starts_with(')') || t.starts_with(']') {
                end += 1;
            }
            break;
        }
        end += 1;
    }
    // Blank lines at the end are the file's, not the definition's.
    while end > start + 1 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    Some(lines[first..end].concat())
}

pub fn reindent(block: &str, to: usize) -> String {
    let from = block
        .lines()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('@'))
        .map(leading)
        .unwrap_or(0);
    block
        .split_inclusive('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.trim_start_matches([' ', '\t']).to_string()
            } else {
                let cut = leading(l).min(from);
                format!("{}{}", " ".repeat(to), &l[cut..])
            }
        })
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
    fn a_snippet_written_over_a_file_is_merged_into_it() {
        let before = "import re\n\n\ndef shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n\n\nif __name__ == \"__main__\":\n    print(shout(\"x\"))\n";
        let after =
            "import os\n\ndef reverse_words(s):\n    return \" \".join(reversed(s.split()))\n";
        let (merged, applied) = merge_write(before, after).unwrap();
        assert_eq!(applied, ["added reverse_words", "added `import os`"]);
        assert_eq!(
            merged,
            "import re\nimport os\n\n\ndef shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n\n\ndef reverse_words(s):\n    return \" \".join(reversed(s.split()))\n\n\nif __name__ == \"__main__\":\n    print(shout(\"x\"))\n"
        );
        let js = "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction isBlank(s) {\n  return s.trim() === \"\";\n}\n\nmodule.exports = { repeat, isBlank };\n";
        let snippet = "function capitalize(s) {\n  return s[0].toUpperCase() + s.slice(1);\n}\n\nmodule.exports = { capitalize, repeat, isBlank };\n";
        let (merged, _) = merge_write(js, snippet).unwrap();
        assert_eq!(
            merged,
            "function repeat(s, n) {\n  return s.repeat(n);\n}\n\nfunction isBlank(s) {\n  return s.trim() === \"\";\n}\n\nfunction capitalize(s) {\n  return s[0].toUpperCase() + s.slice(1);\n}\n\nmodule.exports = { capitalize, repeat, isBlank };\n"
        );
        assert_eq!(merge_write(js, "hello\n"), None);
    }

    #[test]
    fn a_method_written_alone_goes_into_the_class() {
        let before = "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def push(self, item):\n        self._items.append(item)\n";
        let after = "def peek(self):\n    if not self._items:\n        raise IndexError(\"empty\")\n    return self._items[-1]\n";
        let (merged, applied) = merge_write(before, after).unwrap();
        assert_eq!(applied, ["added peek to the class"]);
        assert_eq!(
            merged,
            format!(
                "{before}\n    def peek(self):\n        if not self._items:\n            raise IndexError(\"empty\")\n        return self._items[-1]\n"
            )
        );
        let with_main = format!("{before}\n\nif __name__ == \"__main__\":\n    Stack()\n");
        let (merged, _) = merge_write(&with_main, after).unwrap();
        assert!(
            merged.contains("        return self._items[-1]\n\n\nif __name__"),
            "{merged}"
        );
    }

    #[test]
    fn definitions_copied_from_another_file_are_recognised() {
        let src =
            "def total(v):\n    return sum(v)\n\n\ndef mean(v):\n    return total(v) / len(v)\n";
        let others = vec![("stats.py".to_string(), src.to_string())];
        assert_eq!(
            copied_defs("def mean(v):\n    return 0\n", &others).as_deref(),
            Some("stats.py")
        );
        assert_eq!(copied_defs("def test_mean():\n    pass\n", &others), None);
        assert_eq!(copied_defs("x = 1\n", &others), None);
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
