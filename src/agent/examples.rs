//! Examples as checks. A request, or the specification it points at,
//! often shows calls with their results (`wrap("a b", 1) -> ['a', 'b']`,
//! a doctest, `` `f(x)` returns `y` ``). mm reads those lines itself —
//! mechanical work, no model — and runs each as a check against the
//! change: Python through `python3 -`, JavaScript through `node -`, a
//! script on stdin in the fence, nothing written to the workspace.
//!
//! A check whose call or expected value does not read as code of the
//! language (prose after an arrow, another language's literal) is
//! skipped when run, never counted as a failure; a script that could
//! read none exits 3, which is no verdict.

use std::sync::LazyLock;

use regex::Regex;

use super::harness;

/// What an example says a call gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The call's value, as source text of the language.
    Value(String),
    /// The call raises (throws) this exception class, by name.
    Raises(String),
}

/// One call and what it should give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub call: String,
    pub expect: Expect,
}

/// The language a check script is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    JavaScript,
    /// A library crate's functions, through a program cargo builds
    /// (`rustcheck`).
    Rust,
}

impl Lang {
    /// The language of a source file, when mm can run checks in it.
    pub fn of(path: &str) -> Option<Lang> {
        match path.rsplit('.').next()? {
            "py" => Some(Lang::Python),
            "js" | "cjs" => Some(Lang::JavaScript),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }
}

impl Example {
    /// The check as a reader sees it, in the failure line.
    pub fn shown(&self, lang: Lang) -> String {
        match (lang, &self.expect) {
            (Lang::Python, Expect::Value(v)) => format!("assert {} == {v}", self.call),
            (Lang::Python, Expect::Raises(e)) => format!("raises({e}, lambda: {})", self.call),
            (Lang::JavaScript, Expect::Value(v)) => format!("{} should be {v}", self.call),
            (Lang::JavaScript, Expect::Raises(e)) => format!("{} should throw {e}", self.call),
            (Lang::Rust, Expect::Value(v)) => format!("assert_eq!({}, {v})", self.call),
            (Lang::Rust, Expect::Raises(_)) => format!("{} panics", self.call),
        }
    }
}

/// The end of the balanced call that opens at `open` (the index of its
/// `(`): the index after its `)`, quotes respected.
fn call_end(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s[open..].char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i + 1);
                }
                if depth < 0 {
                    return None;
                }
            }
            _ => {}
        }
    }
    None
}

/// A value written after an arrow, up to where the line's prose starts:
/// two spaces, a comment, or a `,` `;` `.` that ends the sentence, at no
/// depth and outside quotes.
fn value_at(s: &str) -> Option<&str> {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('`') {
        let end = rest.find('`')?;
        return Some(rest[..end].trim()).filter(|v| !v.is_empty());
    }
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut end = s.len();
    let bytes: Vec<(usize, char)> = s.char_indices().collect();
    for (k, &(i, c)) in bytes.iter().enumerate() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        let next = bytes.get(k + 1).map(|&(_, n)| n);
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    // A bracket the value is inside of ends it.
                    depth = 0;
                    end = i;
                    break;
                }
            }
            '#' if depth == 0 => {
                end = i;
                break;
            }
            ' ' | '\t' if depth == 0 && matches!(next, Some(' ' | '\t')) => {
                end = i;
                break;
            }
            ',' | ';' | '.' | ':' if depth == 0 && next.is_none_or(char::is_whitespace) => {
                end = i;
                break;
            }
            // `→ "x" (a note)`: prose in brackets after the value.
            ' ' if depth == 0 && next == Some('(') => {
                end = i;
                break;
            }
            // `f(1) is 2 and f(2) is 4`: the sentence goes on.
            ' ' if depth == 0 && joins_a_sentence(&s[i + 1..]) => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let v = s[..end].trim();
    (!v.is_empty() && quote.is_none() && depth == 0).then_some(v)
}

/// Whether `rest` starts with a word that joins a sentence's parts.
fn joins_a_sentence(rest: &str) -> bool {
    let word: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    matches!(
        word.as_str(),
        "and" | "or" | "but" | "so" | "when" | "while" | "because" | "then" | "since" | "unless"
    )
}

/// An exception class name: `ValueError`, `KeyError`, `PageRangeError`,
/// `OutOfStock` when the text says "raises" before it.
fn exception_name(s: &str) -> Option<&str> {
    static NAME: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r"^`?([A-Z][A-Za-z0-9_]*)`?").ok());
    let c = NAME.as_ref()?.captures(s.trim_start())?;
    c.get(1).map(|m| m.as_str())
}

/// The words between a call and its value: an arrow or a verb.
static SEPARATOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    harness::regex(concat!(
        r"^\s*`?\s*(?:->|=>|→|==|⇒|",
        r"(?:should\s+)?(?:returns?|gives?|is|be|becomes?|evaluates\s+to|yields?)\b|",
        r"(?:should\s+)?(?:raises?|throws?)\b)",
    ))
    .ok()
});

/// Whether a separator says the call raises.
fn says_raises(sep: &str) -> bool {
    let s = sep.to_lowercase();
    s.contains("raise") || s.contains("throw")
}

/// The examples on one line (not a doctest prompt) calling one of
/// `names`.
fn on_line(line: &str, names: &[String]) -> Vec<Example> {
    let mut out = Vec::new();
    let Some(sep_re) = SEPARATOR.as_ref() else {
        return out;
    };
    for name in names {
        let mut from = 0;
        while let Some(at) = line[from..].find(name.as_str()).map(|i| i + from) {
            from = at + name.len();
            // A whole name, not a method (`s.remove(`) nor part of one.
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let rest = &line[at + name.len()..];
            let open = at + name.len() + (rest.len() - rest.trim_start().len());
            if !line[open..].starts_with('(') {
                continue;
            }
            let Some(end) = call_end(line, open) else {
                continue;
            };
            let call = line[at..end].to_string();
            let tail = &line[end..];
            // Rust's `assert_eq!(f(1), 2)`, as a doc comment writes it.
            if line[..at].trim_end().ends_with("assert_eq!(")
                && let Some(after) = tail.trim_start().strip_prefix(',')
            {
                if let Some(v) = value_at(after) {
                    out.push(Example {
                        call,
                        expect: Expect::Value(v.to_string()),
                    });
                }
                from = end;
                continue;
            }
            let Some(m) = sep_re.find(tail) else {
                continue;
            };
            let after = &tail[m.end()..];
            let raises = says_raises(m.as_str());
            let after_trim = after.trim_start().trim_start_matches('`');
            // `-> raises ValueError`, `→ ValueError`
            let raised = if raises {
                exception_name(after_trim)
            } else {
                let lower = after_trim.to_lowercase();
                if lower.starts_with("raise") || lower.starts_with("throw") {
                    after_trim
                        .split_once(char::is_whitespace)
                        .and_then(|(_, e)| exception_name(e))
                } else {
                    exception_name(after_trim).filter(|e| {
                        (e.ends_with("Error") || e.ends_with("Exception"))
                            && value_at(after).is_some_and(|v| v.trim_matches('`') == *e)
                    })
                }
            };
            if let Some(e) = raised {
                out.push(Example {
                    call,
                    expect: Expect::Raises(e.to_string()),
                });
            } else if !raises && let Some(v) = value_at(after) {
                out.push(Example {
                    call,
                    expect: Expect::Value(v.to_string()),
                });
            }
            from = end;
        }
    }
    out
}

/// The text of a doctest line after its prompt, if it is one.
fn doctest_prompt(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix(">>> ")
}

/// The examples in `text` that call one of `names`: doctests
/// (`>>> f(1)` and the line after it, or the exception a traceback
/// ends with) and lines that put an arrow or a verb between a call and
/// its value (`f(1) -> 2`, `` `f(1)` returns `2` ``, `f(0) raises
/// ValueError`). In the text's order, without repeats.
pub fn extract(text: &str, names: &[String]) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let calls_a_name = |s: &str| {
        names.iter().any(|n| {
            s.trim_start().starts_with(n.as_str())
                && s.trim_start()[n.len()..].trim_start().starts_with('(')
        })
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if let Some(call) = doctest_prompt(line) {
            let call = call.trim();
            if !calls_a_name(call)
                || call_end(call, call.find('(').unwrap_or(0)) != Some(call.len())
            {
                continue;
            }
            let Some(answer) = lines.get(i).map(|l| l.trim()) else {
                continue;
            };
            if answer.is_empty() || answer.starts_with(">>>") || answer.starts_with("```") {
                continue;
            }
            let expect = if answer.starts_with("Traceback") {
                let raised = lines[i..]
                    .iter()
                    .take(12)
                    .find_map(|l| {
                        let t = l.trim();
                        t.split_once(':')
                            .map(|(head, _)| head)
                            .or(Some(t))
                            .and_then(|h| exception_name(h).filter(|e| *e == h))
                    })
                    .map(str::to_string);
                match raised {
                    Some(e) => Expect::Raises(e),
                    None => continue,
                }
            } else {
                Expect::Value(answer.to_string())
            };
            let ex = Example {
                call: call.to_string(),
                expect,
            };
            if !out.contains(&ex) {
                out.push(ex);
            }
            continue;
        }
        for ex in on_line(line, names) {
            if !out.contains(&ex) {
                out.push(ex);
            }
        }
    }
    out
}

/// Whether `s` is one literal argument: a quoted string, a number, or
/// `True`/`False`/`None`/`true`/`false`/`null`.
fn literal_arg(s: &str) -> bool {
    let s = s.trim();
    let quoted = |q: char| {
        s.len() >= 2 && s.starts_with(q) && s.ends_with(q) && !s[1..s.len() - 1].contains(q)
    };
    quoted('\'')
        || quoted('"')
        || (!s.is_empty() && s.parse::<f64>().is_ok())
        || matches!(s, "True" | "False" | "None" | "true" | "false" | "null")
}

/// The arguments written before an arrow, when they are literals only
/// (`'ada', 'lovelace'`), after what ends the example before it.
fn bare_args(left: &str) -> Option<String> {
    let left = left.trim();
    let left = ["\"\"\"", "'''", "`"]
        .iter()
        .find_map(|q| left.strip_prefix(q))
        .unwrap_or(left)
        .trim_start_matches([',', ';'])
        .trim();
    let left = left.strip_prefix("e.g.").unwrap_or(left).trim();
    if left.is_empty() {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    let mut quote: Option<char> = None;
    let mut from = 0;
    for (i, c) in left.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ',') => {
                parts.push(&left[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&left[from..]);
    parts.iter().all(|p| literal_arg(p)).then(|| {
        parts
            .iter()
            .map(|p| p.trim())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Examples a function's own documentation writes without its name:
/// `'12.5' -> 1250, '€3.07' -> 307` and `'ada', 'lovelace' -> 'Ada
/// Lovelace'` are calls of `name` with those literal arguments.
pub fn bare(doc: &str, name: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for line in doc.lines() {
        // A one-line docstring's closing quotes are not in the value.
        let mut rest = line
            .trim_end()
            .trim_end_matches("\"\"\"")
            .trim_end_matches("'''");
        while let Some(at) = rest.find("->") {
            let left = &rest[..at];
            let after = &rest[at + 2..];
            let Some(value) = value_at(after) else {
                break;
            };
            if let Some(args) = bare_args(left) {
                let ex = Example {
                    call: format!("{name}({args})"),
                    expect: Expect::Value(value.to_string()),
                };
                if !out.contains(&ex) {
                    out.push(ex);
                }
            }
            // The next example starts after this one's value.
            let value_end = after.find(value).map_or(0, |i| i + value.len());
            rest = &after[value_end..];
        }
    }
    out
}

/// A string literal of both languages (JSON's is both).
fn lit(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// The script's data in `lang`: `NAMES`, the functions the checks are
/// about, and `CHECKS`, each as (call, expected value or null, exception
/// or null, the check as shown).
fn data(lang: Lang, names: &[String], checks: &[Example]) -> String {
    let (null, open, close, decl, end) = match lang {
        Lang::Python => ("None", "(", ")", "", ""),
        Lang::JavaScript | Lang::Rust => ("null", "[", "]", "const ", ";"),
    };
    let names: Vec<String> = names.iter().map(|n| lit(n)).collect();
    let mut s = format!(
        "{decl}NAMES = [{}]{end}\n{decl}CHECKS = [\n",
        names.join(", ")
    );
    for c in checks {
        let (want, exc) = match &c.expect {
            Expect::Value(v) => (lit(v), null.to_string()),
            Expect::Raises(e) => (null.to_string(), lit(e)),
        };
        s.push_str(&format!(
            "    {open}{}, {want}, {exc}, {}{close},\n",
            lit(&c.call),
            lit(&c.shown(lang))
        ));
    }
    s.push_str(&format!("]{end}\n"));
    s
}

/// The Python script: imports each module (a module that no longer
/// imports fails, and says why), runs each check on its own, prints one
/// `FAILED:` line a failure; exit 1 on a failure, 3 when no check could
/// be read, 0 when all pass.
pub fn python_script(modules: &[String], names: &[String], checks: &[Example]) -> String {
    let mut s =
        String::from("import sys\nsys.path.insert(0, '.')\nsys.dont_write_bytecode = True\n");
    for m in modules {
        s.push_str(&format!(
            "try:\n    exec('from {m} import *')\nexcept BaseException as e:\n    print(f'FAILED: import {m}  (it raises {{type(e).__name__}}: {{e}})')\n    sys.exit(1)\n"
        ));
    }
    s.push_str(&data(Lang::Python, names, checks));
    s.push_str(concat!(
        // Where two strings part: a small model does not see that
        // 'A.L' lacks the '.' of 'A.L.'.
        "def gap(g, w):\n",
        "    if not (isinstance(g, str) and isinstance(w, str)) or g == w:\n",
        "        return ''\n",
        "    if w.startswith(g):\n",
        "        return f'; {w[len(g):]!r} is missing at the end'\n",
        "    if g.startswith(w):\n",
        "        return f'; {g[len(w):]!r} is extra at the end'\n",
        "    if w.endswith(g):\n",
        "        return f'; {w[:len(w) - len(g)]!r} is missing at the start'\n",
        "    if g.endswith(w):\n",
        "        return f'; {g[:len(g) - len(w)]!r} is extra at the start'\n",
        "    i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))\n",
        "    return f'; they differ from character {i}: {w[i:i + 10]!r} expected, {g[i:i + 10]!r} given' if i else ''\n",
        "checked = failed = 0\n",
        "for call, want, exc, shown in CHECKS:\n",
        "    try:\n",
        "        code = compile(call, '<check>', 'eval')\n",
        "        expected = None if exc else eval(compile(want, '<check>', 'eval'))\n",
        "    except Exception:\n",
        "        continue\n",
        "    try:\n",
        "        got = eval(code)\n",
        "    except Exception as e:\n",
        // A name the check itself uses and nothing defines makes the check
        // unreadable; one the code uses is the code's failure.
        "        tb = e.__traceback__\n",
        "        while tb.tb_next:\n",
        "            tb = tb.tb_next\n",
        "        if isinstance(e, NameError) and tb.tb_frame.f_code.co_filename == '<check>' and not any(n in str(e) for n in NAMES):\n",
        "            continue\n",
        "        checked += 1\n",
        "        if exc and any(k.__name__ == exc for k in type(e).__mro__):\n",
        "            continue\n",
        "        failed += 1\n",
        "        print(f'FAILED: {shown}  (it raises {type(e).__name__}: {e})')\n",
        "        continue\n",
        "    checked += 1\n",
        "    if exc:\n",
        "        failed += 1\n",
        "        print(f'FAILED: {shown}  (it returns {got!r})')\n",
        "    elif got != expected:\n",
        "        failed += 1\n",
        "        print(f'FAILED: {shown}  (it gives {got!r}{gap(got, expected)})')\n",
        "sys.exit(3 if not checked else 1 if failed else 0)\n",
    ));
    s
}

/// The JavaScript script, as the Python one: requires the module, runs
/// each check with its exports in scope, compares by value (a plain
/// object is a plain object whatever its prototype).
pub fn js_script(module: &str, names: &[String], checks: &[Example]) -> String {
    let path = lit(&format!("./{}", module.trim_start_matches("./")));
    let mut s = format!(
        "const util = require('util');\nlet m;\ntry {{ m = require(require('path').resolve({path})); }} catch (e) {{ console.log(`FAILED: require(${{{path}}})  (it throws ${{e.name}}: ${{e.message}})`); process.exit(1); }}\n"
    );
    s.push_str(&data(Lang::JavaScript, names, checks));
    s.push_str(concat!(
        "const norm = (v) => { try { return v === undefined ? v : JSON.parse(JSON.stringify(v)); } catch (e) { return v; } };\n",
        "const show = (v) => { try { return v === undefined ? 'undefined' : JSON.stringify(v); } catch (e) { return String(v); } };\n",
        "const scope = Object.assign(Object.create(null), m);\n",
        "const gap = (g, w) => {\n",
        "  if (typeof g !== 'string' || typeof w !== 'string' || g === w) return '';\n",
        "  const q = JSON.stringify;\n",
        "  if (w.startsWith(g)) return `; ${q(w.slice(g.length))} is missing at the end`;\n",
        "  if (g.startsWith(w)) return `; ${q(g.slice(w.length))} is extra at the end`;\n",
        "  if (w.endsWith(g)) return `; ${q(w.slice(0, w.length - g.length))} is missing at the start`;\n",
        "  if (g.endsWith(w)) return `; ${q(g.slice(0, g.length - w.length))} is extra at the start`;\n",
        "  let i = 0;\n",
        "  while (i < g.length && i < w.length && g[i] === w[i]) i++;\n",
        "  return i ? `; they differ from character ${i}: ${q(w.slice(i, i + 10))} expected, ${q(g.slice(i, i + 10))} given` : '';\n",
        "};\n",
        "let checked = 0, failed = 0;\n",
        "for (const [call, want, exc, shown] of CHECKS) {\n",
        "  let code, expected;\n",
        "  try {\n",
        "    code = new Function('scope', 'with (scope) { return (' + call + '); }');\n",
        "    if (exc === null) expected = new Function('return (' + want + ');')();\n",
        "  } catch (e) { continue; }\n",
        "  let got;\n",
        "  try { got = code(scope); } catch (e) {\n",
        "    const top = String(e && e.stack || '').split('\\n').find((l) => /^\\s+at /.test(l)) || '';\n",
        "    if (e instanceof ReferenceError && /^\\s+at eval \\(eval at /.test(top) && !NAMES.some((n) => e.message.includes(n))) continue;\n",
        "    checked++;\n",
        "    if (exc !== null && (e.name === exc || e.constructor && e.constructor.name === exc || (typeof m[exc] === 'function' && e instanceof m[exc]))) continue;\n",
        "    failed++;\n",
        "    console.log(`FAILED: ${shown}  (it throws ${e.name}: ${e.message})`);\n",
        "    continue;\n",
        "  }\n",
        "  checked++;\n",
        "  if (exc !== null) { failed++; console.log(`FAILED: ${shown}  (it returns ${show(got)})`); }\n",
        "  else if (!util.isDeepStrictEqual(norm(got), norm(expected))) { failed++; console.log(`FAILED: ${shown}  (it gives ${show(got)}${gap(got, expected)})`); }\n",
        "}\n",
        "process.exit(!checked ? 3 : failed ? 1 : 0);\n",
    ));
    s
}

/// The shell command that runs a check script on stdin (a here-document:
/// nothing is written to the workspace).
pub fn command(lang: Lang, script: &str) -> String {
    let program = match lang {
        Lang::Python => "python3",
        Lang::JavaScript => "node",
        // Built by cargo instead (`rustcheck::command`): no verdict here.
        Lang::Rust => return "exit 3".to_string(),
    };
    format!("{program} - <<'MM_REQUEST_CHECKS'\n{script}\nMM_REQUEST_CHECKS")
}

/// The language and script of a check command made by `command`.
pub fn script_of(cmd: &str) -> Option<(Lang, &str)> {
    let (lang, rest) = if let Some(rest) = cmd.strip_prefix("python3 - ") {
        (Lang::Python, rest)
    } else {
        (Lang::JavaScript, cmd.strip_prefix("node - ")?)
    };
    let script = rest
        .strip_prefix("<<'MM_REQUEST_CHECKS'\n")?
        .strip_suffix("\nMM_REQUEST_CHECKS")?;
    Some((lang, script))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docstring_writes_its_examples_without_the_function_name() {
        let doc = "    \"\"\"Parse a price as typed at the till into cents.\n\n    '12.50' -> 1250, '12.5' -> 1250, '12' -> 1200, ' 0.99 ' -> 99\n    \"\"\"";
        let got: Vec<String> = bare(doc, "parse_price")
            .iter()
            .map(|e| e.shown(Lang::Python))
            .collect();
        assert_eq!(
            got,
            [
                "assert parse_price('12.50') == 1250",
                "assert parse_price('12.5') == 1250",
                "assert parse_price('12') == 1200",
                "assert parse_price(' 0.99 ') == 99",
            ]
        );
        let two = bare(
            "\"\"\"'ada', 'lovelace' -> 'Ada Lovelace'.\"\"\"",
            "full_name",
        );
        assert_eq!(two[0].call, "full_name('ada', 'lovelace')");
        assert_eq!(two[0].expect, Expect::Value("'Ada Lovelace'".into()));
        // Prose before an arrow is not an argument.
        assert!(bare("\"\"\"1250 -> '€12.50'\"\"\"", "format_cents").len() == 1);
        assert!(bare("the total -> cents", "f").is_empty());
        assert!(bare("x -> 2", "f").is_empty());
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(std::string::ToString::to_string).collect()
    }

    fn value(call: &str, v: &str) -> Example {
        Example {
            call: call.into(),
            expect: Expect::Value(v.into()),
        }
    }

    #[test]
    fn arrows_verbs_and_backticks_give_calls_and_values() {
        let text = r#"
Examples:

    is_valid("4539 1488 0343 6467")  -> True
    is_valid("42")                   -> False   (too short)
    parseQuery('?q=a+b&page=2')   => { q: 'a b', page: '2' }
- `titleCase('the lord of the rings')` returns `'The Lord of the Rings'`
So f(1) is 2, and f(2) → 4. f(3) is 6 and f(4) is 8; f(5) → 3 minutes ago
The helper g(3) is used elsewhere.
s.remove("pen", 2)   # returns 3
"#;
        let got = extract(
            text,
            &names(&["is_valid", "parseQuery", "titleCase", "f", "remove"]),
        );
        assert_eq!(
            got,
            vec![
                value("is_valid(\"4539 1488 0343 6467\")", "True"),
                value("is_valid(\"42\")", "False"),
                value("parseQuery('?q=a+b&page=2')", "{ q: 'a b', page: '2' }"),
                value(
                    "titleCase('the lord of the rings')",
                    "'The Lord of the Rings'"
                ),
                value("f(1)", "2"),
                value("f(2)", "4"),
                value("f(3)", "6"),
                value("f(4)", "8"),
                value("f(5)", "3 minutes ago"),
            ]
        );
    }

    #[test]
    fn doctests_and_raised_exceptions_are_read() {
        let text = ">>> wrap(\"the quick brown fox\", 10)\n['the quick', 'brown fox']\n>>> wrap(\"   \", 5)\n[]\n>>> wrap(\"a\", 0)\nTraceback (most recent call last):\n  ...\nValueError: width\n";
        let got = extract(text, &names(&["wrap"]));
        assert_eq!(
            got,
            vec![
                value(
                    "wrap(\"the quick brown fox\", 10)",
                    "['the quick', 'brown fox']"
                ),
                value("wrap(\"   \", 5)", "[]"),
                Example {
                    call: "wrap(\"a\", 0)".into(),
                    expect: Expect::Raises("ValueError".into())
                },
            ]
        );
        let raises = extract(
            "parse_pages(\"5-3\", 10) raises PageRangeError\ncompare(\"\", \"1.0.0\") -> ValueError",
            &names(&["parse_pages", "compare"]),
        );
        assert_eq!(
            raises.iter().map(|e| e.expect.clone()).collect::<Vec<_>>(),
            vec![
                Expect::Raises("PageRangeError".into()),
                Expect::Raises("ValueError".into())
            ]
        );
    }

    fn run(lang: Lang, dir: &std::path::Path, script: &str) -> (Option<i32>, String) {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command(lang, script))
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn the_python_script_fails_wrong_values_and_skips_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ago.py"),
            "def ago(s):\n    if s < 0:\n        raise ValueError(s)\n    return 'just now' if s < 45 else 'a minute ago'\n",
        )
        .unwrap();
        let n = names(&["ago"]);
        let checks = vec![
            value("ago(10)", "'just now'"),
            value("ago(50)", "'2 minutes ago'"),
            value("ago(5)", "just now, the feed says"),
            value("ago(Some(3))", "'x'"),
            Example {
                call: "ago(-1)".into(),
                expect: Expect::Raises("ValueError".into()),
            },
            Example {
                call: "ago(1)".into(),
                expect: Expect::Raises("KeyError".into()),
            },
        ];
        let (code, out) = run(
            Lang::Python,
            dir.path(),
            &python_script(&["ago".into()], &n, &checks),
        );
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains("FAILED: assert ago(50) == '2 minutes ago'  (it gives 'a minute ago')"),
            "{out}"
        );
        assert!(
            out.contains("FAILED: raises(KeyError, lambda: ago(1))  (it returns 'just now')"),
            "{out}"
        );
        assert_eq!(out.lines().count(), 2, "{out}");
        // Only unreadable checks: no verdict.
        let (code, _) = run(
            Lang::Python,
            dir.path(),
            &python_script(&["ago".into()], &n, &checks[2..4]),
        );
        assert_eq!(code, Some(3));
        let (code, out) = run(
            Lang::Python,
            dir.path(),
            &python_script(&["ago".into()], &n, &checks[..1]),
        );
        assert_eq!((code, out.as_str()), (Some(0), ""));
    }

    #[test]
    fn a_name_the_code_uses_and_nothing_defines_fails_the_check() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lim.py"),
            "def fits(s, n):\n    return len(s) <= mn\n",
        )
        .unwrap();
        let n = names(&["fits"]);
        // The check's own unknown name (`helper`) is skipped; the code's
        // (`mn`) is a failure.
        let checks = vec![value("fits('ab', 3)", "True"), value("helper(1)", "2")];
        let (code, out) = run(
            Lang::Python,
            dir.path(),
            &python_script(&["lim".into()], &n, &checks),
        );
        assert_eq!(code, Some(1), "{out}");
        assert_eq!(
            out.trim(),
            "FAILED: assert fits('ab', 3) == True  (it raises NameError: name 'mn' is not defined)"
        );
    }

    #[test]
    fn the_javascript_script_compares_by_value() {
        if crate::lsp::find_program("node").is_none() {
            panic!("node is needed for this test (CI installs it)");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("q.js"),
            "function parse(s) { const o = Object.create(null); for (const p of s.split('&')) { if (p) { const [k, v = ''] = p.split('='); o[k] = v; } } return o; }\nfunction bad(x) { throw new RangeError('no'); }\nfunction slip(x) { return x <= min; }\nmodule.exports = { parse, bad, slip };\n",
        )
        .unwrap();
        let n = names(&["parse", "bad", "missing", "slip"]);
        let checks = vec![
            value("parse('a=1&b=2')", "{ a: '1', b: '2' }"),
            value("parse('a=1')", "{ a: 1 }"),
            value("parse('x')", "a plain object"),
            Example {
                call: "bad(1)".into(),
                expect: Expect::Raises("RangeError".into()),
            },
            value("missing(1)", "2"),
            // A name the code uses and nothing defines is the code's
            // failure; one only the check uses makes the check unreadable.
            value("slip(1)", "true"),
            value("helper(1)", "2"),
        ];
        let (code, out) = run(
            Lang::JavaScript,
            dir.path(),
            &js_script("q.js", &n, &checks),
        );
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains("FAILED: parse('a=1') should be { a: 1 }  (it gives {\"a\":\"1\"})"),
            "{out}"
        );
        assert!(
            out.contains("FAILED: missing(1) should be 2  (it throws ReferenceError"),
            "{out}"
        );
        assert!(
            out.contains(
                "FAILED: slip(1) should be true  (it throws ReferenceError: min is not defined)"
            ),
            "{out}"
        );
        assert_eq!(out.lines().count(), 3, "{out}");
        let (code, out) = run(
            Lang::JavaScript,
            dir.path(),
            &js_script("q.js", &n, &checks[..1]),
        );
        assert_eq!((code, out.as_str()), (Some(0), ""));
    }

    #[test]
    fn where_two_strings_part_is_said_in_both_languages() {
        if crate::lsp::find_program("node").is_none() {
            panic!("node is needed for this test (CI installs it)");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ini.py"),
            "def ini(s):\n    return '.'.join(w[0].upper() for w in s.split())\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("ini.js"),
            "function ini(s) { return s.split(' ').map((w) => w[0].toUpperCase()).join('.'); }\nmodule.exports = { ini };\n",
        )
        .unwrap();
        let n = names(&["ini"]);
        let checks = vec![
            value("ini('ada lovelace')", "'A.L.'"),
            value("ini('ada lovelace')", "'.A.L'"),
            value("ini('ada lovelace')", "'A-L'"),
            value("ini('ada lovelace')", "'A'"),
        ];
        let (_, py) = run(
            Lang::Python,
            dir.path(),
            &python_script(&["ini".into()], &n, &checks),
        );
        let (_, js) = run(
            Lang::JavaScript,
            dir.path(),
            &js_script("ini.js", &n, &checks),
        );
        for (out, q) in [(py, "'"), (js, "\"")] {
            for want in [
                format!("{q}.{q} is missing at the end"),
                format!("{q}.{q} is missing at the start"),
                format!("they differ from character 1: {q}-L{q} expected, {q}.L{q} given"),
                format!("{q}.L{q} is extra at the end"),
            ] {
                assert!(out.contains(&want), "{want}: {out}");
            }
        }
    }
}
