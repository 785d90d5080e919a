//! Imports and what they bring: merged, found missing, shadowed, added; a
//! module's exports; references between the workspace's files.

use super::*;

pub fn is_import(line: &str) -> bool {
    line.starts_with("import ")
        || line.starts_with("from ")
        || line.starts_with("use ")
        || (line.starts_with("const ") && line.contains("require("))
}

/// The byte offset where the last top-level definition of `text` ends.
pub(crate) fn end_of_last_definition(text: &str) -> Option<usize> {
    // Before a script's entry point, which stays last.
    let name = text
        .lines()
        .filter(|l| leading(l) == 0)
        .filter_map(|l| definitions(l).into_iter().next())
        .rfind(|n| n != "__main__")?;
    let block = block_of(text, &name)?;
    let start = text.rfind(&block)?;
    Some(start + block.len())
}

/// Names a write newly defines in a file that also imports them: the
/// definitions shadow the imported ones (the code under test copied into
/// its test file), so the import no longer means anything.
pub fn shadowed_imports(before: &str, after: &str) -> Vec<String> {
    let had: BTreeSet<String> = definitions(before).into_iter().collect();
    let imported: BTreeSet<String> = after
        .lines()
        .filter(|l| is_import(l) || l.starts_with("import "))
        .filter_map(binding)
        .flatten()
        .collect();
    definitions(after)
        .into_iter()
        .filter(|d| imported.contains(d) && !had.contains(d))
        .collect()
}

/// A CommonJS file with `module.exports = { a, b }` assigned more than
/// once, or with an ESM `export default x` beside it: the file with one
/// `module.exports` at the place of the last, exporting every name, and
/// those names. None when there is nothing to merge or an export is not
/// a plain list of names.
pub fn one_exports(text: &str) -> Option<(String, Vec<String>)> {
    static EXPORTS: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"module\.exports\s*=\s*\{([^{}]*)\};?|export\s+default\s+([A-Za-z_$][\w$]*);?")
            .ok()
    });
    let re = EXPORTS.as_ref()?;
    let found: Vec<regex::Captures> = re.captures_iter(text).collect();
    let cjs = found.iter().filter(|c| c.get(1).is_some()).count();
    if cjs == 0 || found.len() < 2 {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for c in &found {
        let list: Vec<&str> = match (c.get(1), c.get(2)) {
            (Some(l), _) => l
                .as_str()
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect(),
            (None, Some(n)) => vec![n.as_str()],
            _ => continue,
        };
        for n in list {
            if !n
                .chars()
                .all(|ch| ch.is_alphanumeric() || ch == '_' || ch == '$')
            {
                return None;
            }
            if !names.iter().any(|x| x == n) {
                names.push(n.to_string());
            }
        }
    }
    let last = found.last()?.get(0)?;
    let mut out = String::new();
    let mut at = 0;
    for c in &found {
        let m = c.get(0)?;
        out.push_str(&text[at..m.start()]);
        if m.start() == last.start() {
            out.push_str(&format!("module.exports = {{ {} }};", names.join(", ")));
        }
        at = m.end();
    }
    out.push_str(&text[at..]);
    // A statement cut out of a line leaves trailing spaces.
    let out: String = out
        .split_inclusive('\n')
        .map(|l| {
            let body = l.trim_end_matches('\n').trim_end();
            if l.ends_with('\n') {
                format!("{body}\n")
            } else {
                body.to_string()
            }
        })
        .collect();
    Some((out, names))
}

/// Python names common enough that a workspace function of the same
/// name is more likely the model's mistake than its meaning.
pub const PY_BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "bool",
    "callable",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "hasattr",
    "hash",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "open",
    "ord",
    "chr",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "sorted",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "main",
];

/// The imports a Python file needs for the functions and classes it
/// calls without defining or importing them, when exactly one module in
/// the same directory defines the name: `from slug import slugify` for a
/// new test file that calls `slugify(…)`. The lines to add.
pub fn missing_imports(root: &Path, rel: &str, text: &str) -> Vec<String> {
    static CALL: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?:^|[^\w.])([A-Za-z_]\w*)\s*\(").ok());
    static BOUND: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?m)(?:^\s*([A-Za-z_]\w*)\s*(?::[^=\n]+)?=[^=])|(?:\bfor\s+([A-Za-z_]\w*)\s+in\b)|(?:\bas\s+([A-Za-z_]\w*))|(?:\bdef\s+\w+\s*\(([^)]*)\))|(?:\blambda\s+([^:]*):)").ok()
    });
    let (Some(call), Some(bound_re)) = (CALL.as_ref(), BOUND.as_ref()) else {
        return Vec::new();
    };
    if !rel.ends_with(".py") {
        return Vec::new();
    }
    let mut bound: BTreeSet<String> = definitions(text).into_iter().collect();
    bound.extend(text.lines().filter_map(binding).flatten());
    for c in bound_re.captures_iter(text) {
        for g in 1..=5 {
            if let Some(m) = c.get(g) {
                for part in m.as_str().split(',') {
                    let name = part.trim().trim_start_matches('*');
                    let name = name.split([':', '=']).next().unwrap_or(name).trim();
                    if !name.is_empty() {
                        bound.insert(name.to_string());
                    }
                }
            }
        }
    }
    let mut wanted: Vec<String> = Vec::new();
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or(line);
        // Calls inside string literals are not calls.
        if code.trim_start().starts_with(['"', '\'']) {
            continue;
        }
        for c in call.captures_iter(code) {
            let Some(name) = c.get(1).map(|m| m.as_str()) else {
                continue;
            };
            let keyword = matches!(
                name,
                "if" | "elif"
                    | "while"
                    | "for"
                    | "return"
                    | "and"
                    | "or"
                    | "not"
                    | "in"
                    | "print"
                    | "assert"
                    | "yield"
                    | "with"
                    | "except"
                    | "lambda"
                    | "await"
                    | "del"
                    | "is"
            );
            if !keyword
                && !bound.contains(name)
                && !PY_BUILTINS.contains(&name)
                && !name.ends_with("Error")
                && !name.ends_with("Exception")
                && !wanted.iter().any(|w| w == name)
            {
                wanted.push(name.to_string());
            }
        }
    }
    let used_modules = modules_used(text, &bound);
    if wanted.is_empty() && used_modules.is_empty() {
        return Vec::new();
    }
    let modules = sibling_modules(root, rel);
    let imported = |m: &str| {
        text.lines().any(|l| {
            let l = l.trim_start();
            l.strip_prefix("import ")
                .is_some_and(|r| r.split(',').any(|p| p.split_whitespace().last() == Some(m)))
        })
    };
    let whole: Vec<String> = used_modules
        .iter()
        .filter(|m| modules.iter().any(|(name, _)| name == *m) && !imported(m))
        .map(|m| format!("import {m}"))
        .collect();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for name in &wanted {
        let holders: Vec<&String> = modules
            .iter()
            .filter(|(_, defs)| defs.contains(name))
            .map(|(m, _)| m)
            .collect();
        if let [module] = holders.as_slice() {
            match out.iter_mut().find(|(m, _)| m == *module) {
                Some((_, names)) => names.push(name.clone()),
                None => out.push(((*module).clone(), vec![name.clone()])),
            }
        }
    }
    whole
        .into_iter()
        .chain(
            out.into_iter()
                .map(|(m, names)| format!("from {m} import {}", names.join(", "))),
        )
        .collect()
}

/// Names used as modules (`config.LINE_WIDTH`) that the file never binds
/// or imports.
fn modules_used(text: &str, bound: &BTreeSet<String>) -> Vec<String> {
    static ATTR: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?:^|[^\w.])([A-Za-z_]\w*)\.[A-Za-z_]").ok());
    static QUOTED: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""[^"]*"|'[^']*'"#).ok());
    let mut used_modules: Vec<String> = Vec::new();
    if let (Some(attr), Some(quoted)) = (ATTR.as_ref(), QUOTED.as_ref()) {
        for line in text.lines() {
            let code = line.split('#').next().unwrap_or(line);
            if code.trim_start().starts_with(['"', '\'']) || is_import(code.trim_start()) {
                continue;
            }
            // "see config.py" names a file, not the module.
            let code = quoted.replace_all(code, "\"\"");
            for c in attr.captures_iter(&code) {
                if let Some(m) = c.get(1).map(|m| m.as_str())
                    && !bound.contains(m)
                    && !used_modules.iter().any(|u| u == m)
                {
                    used_modules.push(m.to_string());
                }
            }
        }
    }
    used_modules
}

/// The Python modules beside `rel` (not `rel` itself), each with the
/// names it defines at its top level.
pub(crate) fn sibling_modules(root: &Path, rel: &str) -> Vec<(String, Vec<String>)> {
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut modules: Vec<(String, Vec<String>)> = Vec::new();
    for e in entries.flatten().take(500) {
        let path = e.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().and_then(|x| x.to_str()) != Some("py")
            || path.file_name().and_then(|n| n.to_str())
                == Path::new(rel).file_name().and_then(|n| n.to_str())
            || !e.file_type().is_ok_and(|t| t.is_file())
            || e.metadata().map(|m| m.len() > 256 * 1024).unwrap_or(true)
        {
            continue;
        }
        let rel_here = dir.join(e.file_name()).to_string_lossy().into_owned();
        if !crate::paths::scannable(&rel_here, &path) {
            continue;
        }
        let Ok(code) = std::fs::read_to_string(&path) else {
            continue;
        };
        let top: Vec<String> = code
            .lines()
            .filter(|l| leading(l) == 0)
            .flat_map(definitions)
            .collect();
        modules.push((stem.to_string(), top));
    }
    modules
}

/// A Python test file that defines, at its top level, functions a module
/// beside it defines (the code under test copied in, so the tests test
/// the copy): the file without those definitions, and their names. The
/// import they then need is `missing_imports`' to add.
pub fn copied_into_test(root: &Path, rel: &str, text: &str) -> Option<(String, Vec<String>)> {
    let modules = sibling_modules(root, rel);
    let mut content = text.to_string();
    let mut names = Vec::new();
    for line in text.lines().filter(|l| leading(l) == 0) {
        let Some(name) = definitions(line).into_iter().next() else {
            continue;
        };
        if name.starts_with("test")
            || name == "__main__"
            || !modules.iter().any(|(_, defs)| defs.contains(&name))
        {
            continue;
        }
        let Some(block) = block_of(&content, &name) else {
            continue;
        };
        content = content.replacen(&block, "", 1);
        names.push(name);
    }
    if names.is_empty() {
        return None;
    }
    // The blank lines the blocks stood between: at most two in a row.
    while content.contains("\n\n\n\n") {
        content = content.replace("\n\n\n\n", "\n\n\n");
    }
    let body = content.trim_matches('\n');
    Some((format!("{body}\n"), names))
}

/// How many of `lines` a file's head takes: a module docstring first,
/// then comments, blank lines and top-level imports.
pub(crate) fn import_head(lines: &[&str]) -> usize {
    let mut head = 0;
    let mut in_doc = false;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        if in_doc {
            if t.contains("\"\"\"") {
                in_doc = false;
            }
            head = i + 1;
        } else if i == 0 && t.starts_with("\"\"\"") {
            in_doc = !(t.len() > 3 && t[3..].contains("\"\"\""));
            head = 1;
        } else if t.starts_with('#') || t.starts_with("//") || (is_import(l) && leading(l) == 0) {
            head = i + 1;
        } else if !t.is_empty() {
            break;
        }
    }
    head
}

/// `text` with `lines` added after its imports (at the top when it has
/// none, after a module docstring).
pub fn add_imports(text: &str, lines: &[String]) -> String {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let at = import_head(&all);
    let mut out: String = all[..at].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    let rest = all[at..].concat();
    if at == 0 && !rest.trim().is_empty() {
        out.push('\n');
    }
    out.push_str(&rest);
    out
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
    for entry in crate::paths::walk(root).build().flatten().take(5_000) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        if rel == skip || !crate::paths::scannable(&rel, entry.path()) {
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

/// The workspace files `text` (the file at `rel`) imports from, each
/// with the names it takes from there: Python `from x import a` /
/// `import x`, JavaScript `require('./x')` / `import … from './x'`.
/// Only files that exist under `root`.
pub fn local_imports(root: &Path, rel: &str, text: &str) -> Vec<(String, Vec<String>)> {
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    let exists = |p: &Path| -> Option<String> {
        // `./x` and `a/../x` as the plain relative path.
        let mut norm = std::path::PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::Normal(n) => norm.push(n),
                std::path::Component::ParentDir => {
                    if !norm.pop() {
                        return None;
                    }
                }
                std::path::Component::CurDir => {}
                _ => return None,
            }
        }
        let p = norm.as_path();
        let abs = root.join(p);
        (abs.starts_with(root) && abs.is_file()).then(|| p.to_string_lossy().into_owned())
    };
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().filter(|l| leading(l) == 0) {
        let mut candidates: Vec<std::path::PathBuf> = Vec::new();
        let js_source = line
            .split_once("require(")
            .map(|(_, r)| r)
            .or_else(|| line.rsplit_once(" from ").map(|(_, r)| r))
            .and_then(|r| {
                let r = r.trim_start();
                let q = r.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
                r[1..].split(q).next()
            });
        if let Some(src) = js_source {
            if !src.starts_with('.') {
                continue;
            }
            let base = dir.join(src);
            candidates.push(base.clone());
            for ext in ["js", "mjs", "cjs", "ts"] {
                candidates.push(base.with_extension(ext));
            }
            candidates.push(base.join("index.js"));
        } else {
            let module = if let Some(rest) = line.strip_prefix("from ") {
                rest.split_whitespace().next()
            } else if let Some(rest) = line.strip_prefix("import ") {
                rest.split([',', ' ']).next()
            } else {
                None
            };
            let Some(module) = module.filter(|m| !m.is_empty()) else {
                continue;
            };
            let dots = module.len() - module.trim_start_matches('.').len();
            let path = module.trim_start_matches('.').replace('.', "/");
            let mut bases = Vec::new();
            if dots > 0 {
                let mut d = dir.to_path_buf();
                for _ in 1..dots {
                    d.pop();
                }
                bases.push(d);
            } else {
                bases.push(dir.to_path_buf());
                bases.push(std::path::PathBuf::new());
            }
            for b in bases {
                if path.is_empty() {
                    candidates.push(b.join("__init__.py"));
                } else {
                    candidates.push(b.join(format!("{path}.py")));
                    candidates.push(b.join(&path).join("__init__.py"));
                }
            }
        }
        let Some(file) = candidates.iter().find_map(|c| exists(c)) else {
            continue;
        };
        let names = binding(line).unwrap_or_default();
        match out.iter_mut().find(|(f, _)| *f == file) {
            Some((_, have)) => have.extend(names),
            None => out.push((file, names)),
        }
    }
    out
}
