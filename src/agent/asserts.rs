//! Checks from the user's words. When a request states behaviour (rules,
//! examples, edge cases) and no test covers it, the model's change is
//! held to the request itself: a separate, tool-less request that sees
//! the request and nothing of the code writes a few one-line checks;
//! those whose expected value the request itself states are kept; mm runs
//! them in the fence against the changed code (a script given on stdin,
//! never a file in the workspace) and sends the failures back once.
//! When the request's examples are enough for the values, the checks
//! asked for are of the inputs its words say are refused (an error they
//! name), and only those are kept.
//! They are also the check candidate changes are tried against.

mod asking;
mod running;

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::examples::{self, Example, Expect, Lang};
use super::{Agent, TurnState, harness, rustcheck};
use crate::config::Behaviour;
use crate::protocol::Level;
use crate::tools::guard;
pub(super) use running::failures;

/// What the request's own checks are called where a failure is reported.
pub const REQUEST_CHECKS: &str = "the request's checks";

pub const SYSTEM: &str = "You write test checks from a request. Reply with one fenced code block of Python lines and nothing else.";

/// The system prompt of the request for checks in `lang`.
pub(super) fn system(lang: Lang) -> &'static str {
    match lang {
        Lang::Python => SYSTEM,
        Lang::JavaScript => {
            "You write test checks from a request. Reply with one fenced code block of JavaScript lines and nothing else."
        }
        Lang::Rust => {
            "You write test checks from a request. Reply with one fenced code block of Rust lines and nothing else."
        }
    }
}

/// Tokens the checks' reply may take: about a dozen lines.
const CHECKS_CAP: u64 = 400;
/// At most this many checks written by the model are kept.
const MAX_CHECKS: usize = 8;
/// At most this many examples from the user's words are run.
const MAX_EXAMPLES: usize = 16;
/// With this many examples, no checks are asked of the model.
const ENOUGH_EXAMPLES: usize = 3;

/// The request for checks: the user's words (the request and the
/// documents it names), the functions to call and where from, and the two
/// line shapes of the language.
pub fn request(words: &str, calls: &[(String, String)], lang: Lang) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|(name, module)| format!("{name} (from {module})"))
        .collect();
    let (shapes, fence) = match lang {
        Lang::Python => (
            "  assert CALL == EXPECTED\n  raises(ExceptionName, lambda: CALL)",
            "python",
        ),
        Lang::JavaScript => (
            "  assert.deepStrictEqual(CALL, EXPECTED);\n  assert.throws(() => CALL, ErrorName);",
            "js",
        ),
        Lang::Rust => ("  assert_eq!(CALL, EXPECTED);", "rust"),
    };
    format!(
        "A developer asked for this:\n\"\"\"\n{}\n\"\"\"\nWrite 4 to 6 checks of the behaviour this request states: its examples, its rules and its edge cases, and nothing it does not state. Call {} by name. One check per line, each in one of these two shapes:\n{shapes}\nReply with only those lines in one ```{fence} block.",
        words.trim(),
        names.join(", ")
    )
}

/// The request for checks of what the request says fails: the inputs
/// its words say raise (or throw) one of `errors`. Asked when its
/// examples are enough for the values but an error rule has none.
pub fn raises_request(
    words: &str,
    calls: &[(String, String)],
    lang: Lang,
    errors: &[String],
) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|(name, module)| format!("{name} (from {module})"))
        .collect();
    let (shape, fence) = match lang {
        Lang::Python => ("  raises(ExceptionName, lambda: CALL)", "python"),
        Lang::JavaScript | Lang::Rust => ("  assert.throws(() => CALL, ErrorName);", "js"),
    };
    format!(
        "A developer asked for this:\n\"\"\"\n{}\n\"\"\"\nWrite 3 to 5 checks of the inputs this request says are refused with {}: one for each rule that refuses an input, and nothing it does not state. Call {} by name. One check per line, in this shape:\n{shape}\nReply with only those lines in one ```{fence} block.",
        words.trim(),
        errors.join(" or "),
        names.join(", ")
    )
}

/// `reply` with the functions' module written off their calls:
/// `privacy.mask_email(…)` is `mask_email(…)`. The request names the
/// module each function comes from, and a small model calls it through
/// the module, which the check script does not bind (each such check
/// was skipped as a NameError of its own).
pub fn unqualified(reply: &str, calls: &[(String, String)]) -> String {
    let mut out = reply.to_string();
    for (name, module) in calls {
        let module = module
            .trim_start_matches("./")
            .trim_end_matches(".py")
            .trim_end_matches(".js")
            .trim_end_matches(".mjs")
            .trim_end_matches(".cjs");
        let last = module.rsplit(['.', '/']).next().unwrap_or(module);
        let mut qualifiers = vec![module.replace('/', ".")];
        if last != qualifiers[0] {
            qualifiers.push(last.to_string());
        }
        for q in qualifiers {
            let Ok(re) = harness::regex(&format!(
                r"(^|[^\w$.]){}\s*\.\s*{}\s*\(",
                regex::escape(&q),
                regex::escape(name)
            )) else {
                continue;
            };
            out = re
                .replace_all(&out, |c: &regex::Captures| {
                    format!("{}{name}(", c.get(1).map_or("", |m| m.as_str()))
                })
                .into_owned();
        }
    }
    out
}

/// Two calls alike but for spacing and the quotes around strings.
fn same_call(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| if c == '"' { '\'' } else { c })
            .collect()
    };
    norm(a) == norm(b)
}

/// The exceptions the user's words name (`ValueError`, `RangeError`), in
/// the order they first appear.
pub fn named_errors(words: &str) -> Vec<String> {
    let Ok(re) = harness::regex(r"\b([A-Z][A-Za-z]*(?:Error|Exception))\b") else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(words) {
        let name = c[1].to_string();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

static CHECK_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    harness::regex(
        r"^(?:assert\s+(.+?)\s*==\s*(.+?)|raises\(\s*([A-Za-z_]\w*)\s*,\s*lambda\s*:\s*(.+)\))\s*$",
    )
    .ok()
});

/// The exception of a `with pytest.raises(E):` line.
fn with_raises(line: &str) -> Option<String> {
    let rest = line.strip_prefix("with ")?;
    let rest = rest.strip_prefix("pytest.").unwrap_or(rest);
    let exc = rest.strip_prefix("raises(")?.strip_suffix("):")?.trim();
    (!exc.is_empty() && exc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| exc.to_string())
}

/// An expected value that is an error's name (`== ValueError`, as a
/// small model writes a refusal) expects the call to raise it.
fn value_or_raises(expected: &str) -> Expect {
    let e = expected.trim();
    let is_error = e.starts_with(|c: char| c.is_ascii_uppercase())
        && (e.ends_with("Error") || e.ends_with("Exception"))
        && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if is_error {
        Expect::Raises(e.to_string())
    } else {
        Expect::Value(e.to_string())
    }
}

/// A JavaScript check line: (call, expected) or (call, error name).
fn js_check(line: &str) -> Option<(String, Expect)> {
    let line = line.trim().trim_end_matches(';').trim_end();
    if let Some(args) = [
        "assert.deepStrictEqual(",
        "assert.strictEqual(",
        "assert.deepEqual(",
        "assert.equal(",
    ]
    .iter()
    .find_map(|p| line.strip_prefix(p))
    {
        let args = args.strip_suffix(')')?;
        let (call, expected) = split_top(args)?;
        return Some((call.to_string(), value_or_raises(expected)));
    }
    let args = line.strip_prefix("assert.throws(")?.strip_suffix(')')?;
    let (f, error) = split_top(args)?;
    let call = f
        .trim()
        .strip_prefix("()")?
        .trim_start()
        .strip_prefix("=>")?
        .trim();
    let call = call
        .strip_prefix('{')
        .and_then(|c| c.strip_suffix('}'))
        .map_or(call, |c| c.trim().trim_end_matches(';'));
    let error = error.trim();
    (!error.is_empty() && error.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| (call.to_string(), Expect::Raises(error.to_string())))
}

/// `a, b` split at its one comma outside brackets and quotes.
fn split_top(args: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    let mut at = None;
    for (i, c) in args.char_indices() {
        match quote {
            Some(q) if c == q && prev != '\\' => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' | '`' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    if at.is_some() {
                        return None;
                    }
                    at = Some(i);
                }
                _ => {}
            },
        }
        prev = c;
    }
    let i = at?;
    let (a, b) = (args[..i].trim(), args[i + 1..].trim());
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
}

/// Literals in `text`: numbers and quoted strings.
fn literals(text: &str) -> Vec<String> {
    static LIT: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r#"-?\d+(?:\.\d+)?|"[^"]*"|'[^']*'"#).ok());
    LIT.as_ref()
        .map(|re| re.find_iter(text).map(|m| m.as_str().to_string()).collect())
        .unwrap_or_default()
}

/// Whether the user's words state `expected`: every literal in it
/// appears in them (numbers as numbers: `12.50` is `12.5`), or it is a
/// plain truth value or empty value.
fn stated(words: &str, expected: &str) -> bool {
    let e = expected.trim();
    if matches!(
        e,
        "True" | "False" | "None" | "true" | "false" | "null" | "[]" | "{}" | "''" | "\"\"" | "0"
    ) {
        return true;
    }
    let lits = literals(e);
    if lits.is_empty() {
        return false;
    }
    let said = literals(words);
    let num = |s: &str| s.parse::<f64>().ok();
    lits.iter().all(|l| {
        let bare = l.trim_matches(['"', '\'']);
        match num(l) {
            Some(v) => said.iter().any(|p| num(p) == Some(v)) || words.contains(l.as_str()),
            None => said.iter().any(|p| p == l) || standing_alone(words, bare),
        }
    })
}

/// Whether `part` appears in `text` with no letter or digit right
/// before or after it (nor a full stop before it): `A.` and `L.` are not
/// stated by `"A.L."`, `2 days` is by `` `2 days` ``.
fn standing_alone(text: &str, part: &str) -> bool {
    if part.is_empty() {
        return false;
    }
    text.match_indices(part).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + part.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '.')
            && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether the words show `call` with `expected`: in one line of them
/// (or a line and the next, as a doctest puts a call and its result),
/// every literal of the call's arguments and the value stated (a call
/// with no literal argument: its name there). A value the words state
/// elsewhere is not enough: a small model pairs an argument it made up
/// with a value from another example (`clip('hello world', 10)` is
/// `'hello world'`, where the words show it with 8 and `'hello w…'`).
fn shown_together(words: &str, call: &str, expected: &str) -> bool {
    let lines: Vec<&str> = words.lines().collect();
    (0..lines.len()).any(|i| {
        let window = lines[i..(i + 2).min(lines.len())].join("\n");
        args_stated(&window, call) && stated(&window, expected)
    })
}

/// Whether every literal of the call's arguments is in the words (a call
/// with no literal argument: its name is).
fn args_stated(words: &str, call: &str) -> bool {
    let (name, args) = call.split_once('(').unwrap_or((call, ""));
    let lits = literals(args);
    if lits.is_empty() {
        let name = name.rsplit('.').next().unwrap_or(name).trim();
        return !name.is_empty() && standing_alone(words, name);
    }
    let said = literals(words);
    let num = |s: &str| s.parse::<f64>().ok();
    lits.iter().all(|l| match num(l) {
        Some(v) => said.iter().any(|p| num(p) == Some(v)),
        None => said.iter().any(|p| p == l) || standing_alone(words, l.trim_matches(['"', '\''])),
    })
}

/// A check alike the two before it but for its numbers: a small model
/// that counts on (`f('x', 11)`, `f('x', 12)`, … each "throws") is no
/// longer reading the words.
fn counting_on(kept: &[Example], ex: &Example) -> bool {
    let shape = |e: &Example| -> String {
        let mut s: String = e.call.chars().filter(|c| !c.is_ascii_digit()).collect();
        s.push_str(&format!("{:?}", e.expect).replace(|c: char| c.is_ascii_digit(), ""));
        s
    };
    let mine = shape(ex);
    kept.len() >= 2 && kept[kept.len() - 2..].iter().all(|k| shape(k) == mine)
}

/// The checks from a reply that the user's words back: one per line, of
/// the two shapes, calling one of `names`, its expected value (or the
/// exception) stated in `words` (the request and the documents it
/// names).
pub fn grounded_checks(words: &str, reply: &str, names: &[String]) -> Vec<Example> {
    checks_in(Some(words), reply, names)
}

/// The checks of a reply, one per line, of the two shapes, calling one
/// of `names`, whatever their values (a review's checks from a
/// function's documentation, judged by running them).
pub fn parsed_checks(reply: &str, names: &[String]) -> Vec<Example> {
    checks_in(None, reply, names)
}

/// The checks of a reply; with `words`, only those whose expected value
/// (or exception) the words state.
fn checks_in(words: Option<&str>, reply: &str, names: &[String]) -> Vec<Example> {
    let Some(re) = CHECK_LINE.as_ref() else {
        return Vec::new();
    };
    // No closed block: a reply cut at its cap, whose last line may be cut.
    let block = super::recover::fenced_blocks(reply)
        .first()
        .map(|(_, _, b)| b.to_string())
        .unwrap_or_else(|| match reply.rfind('\n') {
            Some(end) if !reply.ends_with('\n') => reply[..end].to_string(),
            _ => reply.to_string(),
        });
    let mut out: Vec<Example> = Vec::new();
    // `with pytest.raises(E):` (or `with raises(E):`): the call on the
    // next line is expected to raise E.
    let mut raising: Option<String> = None;
    for line in block.lines().map(str::trim) {
        if line.is_empty() {
            continue;
        }
        if let Some(exc) = with_raises(line) {
            raising = Some(exc);
            continue;
        }
        let pending = raising.take();
        let parsed = match re.captures(line) {
            None if let Some(exc) = pending => (line.to_string(), Expect::Raises(exc)),
            Some(c) => match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(call), Some(expected), _, _) => (
                    call.as_str().to_string(),
                    value_or_raises(expected.as_str()),
                ),
                (_, _, Some(exc), Some(call)) => (
                    call.as_str().to_string(),
                    Expect::Raises(exc.as_str().to_string()),
                ),
                _ => continue,
            },
            None => match js_check(line) {
                Some(p) => p,
                None => continue,
            },
        };
        let (call, expect) = parsed;
        let call = call.as_str();
        let backed = match (&expect, words) {
            (_, None) => true,
            (Expect::Value(v), Some(words)) => shown_together(words, call, v),
            (Expect::Raises(e), Some(words)) => words.contains(e.as_str()),
        };
        let calls_one = names.iter().any(|n| call.contains(&format!("{n}(")));
        let ex = Example {
            call: call.to_string(),
            expect,
        };
        if backed && calls_one && !out.contains(&ex) && !counting_on(&out, &ex) {
            out.push(ex);
        }
    }
    out.truncate(MAX_CHECKS);
    out
}

/// Whether a definition's block is a placeholder still to be written: a
/// body that raises NotImplementedError, says TODO or "not implemented",
/// or is only `pass` or `...`.
pub fn is_placeholder(block: &str) -> bool {
    let lower = block.to_lowercase();
    if [
        "notimplementederror",
        "todo",
        "not implemented",
        "unimplemented!(",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return true;
    }
    let body: Vec<&str> = block
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("\"\"\""))
        .collect();
    matches!(body.as_slice(), ["pass" | "..."])
}

/// The documentation of `name` in `text`, without its code: the comment
/// lines right above its definition (`///`, `#`, a `/** … */` block) and
/// a Python docstring.
pub fn doc_of(text: &str, name: &str) -> String {
    let Some(block) = guard::block_of(text, name) else {
        return String::new();
    };
    let Some(at) = text.find(&block) else {
        return String::new();
    };
    let mut lines: Vec<&str> = text[..at]
        .lines()
        .rev()
        .take_while(|l| {
            let t = l.trim_start();
            t.starts_with("//") || t.starts_with('#') || t.starts_with("/*") || t.starts_with('*')
        })
        .collect();
    lines.reverse();
    // A docstring: the string that opens the body, after the signature.
    let body: Vec<&str> = block.lines().collect();
    if let Some(sig_end) = body.iter().position(|l| l.trim_end().ends_with(':'))
        && let Some(first) = body.get(sig_end + 1)
    {
        let t = first.trim_start().trim_start_matches(['r', 'R']);
        for quote in ["\"\"\"", "'''"] {
            if let Some(rest) = t.strip_prefix(quote) {
                lines.push(first);
                if !rest.contains(quote) {
                    for l in &body[sig_end + 2..] {
                        lines.push(l);
                        if l.contains(quote) {
                            break;
                        }
                    }
                }
                break;
            }
        }
    }
    lines.join("\n")
}

/// The checks' module for a file: `pkg/util.py` is `pkg.util`.
pub(super) fn python_module(file: &str) -> String {
    file.trim_end_matches(".py").replace('/', ".")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_functions_documentation_is_read_without_its_code() {
        let py = "import re\n\n\ndef cents(text):\n    \"\"\"Cents in a price.\n\n    cents('12.5') -> 1250\n    \"\"\"\n    raise NotImplementedError\n\n\ndef other():\n    return 1\n";
        assert_eq!(
            doc_of(py, "cents"),
            "    \"\"\"Cents in a price.\n\n    cents('12.5') -> 1250\n    \"\"\""
        );
        let one = "def f(x):\n    '''f(2) -> 4'''\n    return x\n";
        assert_eq!(doc_of(one, "f"), "    '''f(2) -> 4'''");
        let rs = "/// Bytes in a size.\n///\n/// ```\n/// assert_eq!(parse_size(\"2k\"), Some(2048));\n/// ```\npub fn parse_size(s: &str) -> Option<u64> {\n    todo!()\n}\n";
        let doc = doc_of(rs, "parse_size");
        assert!(
            doc.starts_with("/// Bytes in a size.") && !doc.contains("todo!"),
            "{doc}"
        );
        assert_eq!(
            examples::extract(&doc, &["parse_size".to_string()]),
            vec![Example {
                call: "parse_size(\"2k\")".into(),
                expect: Expect::Value("Some(2048)".into()),
            }]
        );
        // No documentation: nothing.
        assert_eq!(doc_of("def g():\n    return 1\n", "g"), "");
        assert_eq!(doc_of(py, "missing"), "");
    }

    #[test]
    fn a_with_raises_block_is_a_check_that_the_call_raises() {
        let words = "mask_email(address): no @ raises ValueError. mask_email('x@y.io') -> '*@y.io'";
        let reply = "```python\ndef check_no_at():\n    with pytest.raises(ValueError):\n        mask_email('no-at')\n\nwith raises(KeyError):\n    mask_email('a')\nwith pytest.raises(ValueError):\n    print('x')\n```";
        let got = grounded_checks(words, reply, &["mask_email".to_string()]);
        assert_eq!(
            got,
            [Example {
                call: "mask_email('no-at')".into(),
                expect: Expect::Raises("ValueError".into()),
            }]
        );
        assert!(same_call("f( \"a\", 2)", "f('a',2)"));
        assert!(!same_call("f('a')", "f('b')"));
    }

    #[test]
    fn an_expected_value_that_names_an_error_expects_the_call_to_raise_it() {
        let words = "mask_email(address): no @ raises ValueError; chunk throws a RangeError.";
        let reply = "```python\nassert mask_email('no-at') == ValueError\nassert mask_email('a@b') == 'a@b'\nassert.deepStrictEqual(chunk([1], 0), RangeError);\n```";
        let got = grounded_checks(
            words,
            reply,
            &["mask_email".to_string(), "chunk".to_string()],
        );
        assert_eq!(
            got,
            [
                Example {
                    call: "mask_email('no-at')".into(),
                    expect: Expect::Raises("ValueError".into()),
                },
                Example {
                    call: "chunk([1], 0)".into(),
                    expect: Expect::Raises("RangeError".into()),
                },
            ]
        );
    }

    #[test]
    fn a_call_through_its_module_is_a_call_of_the_function() {
        let words = "mask_email(address): an address without text after the @ raises ValueError.";
        let reply = "```python\nimport privacy\ndef test_no_domain():\n    with raises(ValueError):\n        privacy.mask_email(\"bob@\")\nraises(ValueError, lambda: pkg.privacy.mask_email('@x'))\nraises(ValueError, lambda: other.mask_email('a'))\n```";
        let asked = [("mask_email".to_string(), "pkg.privacy".to_string())];
        let got = grounded_checks(
            words,
            &unqualified(reply, &asked),
            &["mask_email".to_string()],
        );
        let calls: Vec<&str> = got.iter().map(|e| e.call.as_str()).collect();
        assert_eq!(
            calls,
            [
                "mask_email(\"bob@\")",
                "mask_email('@x')",
                "other.mask_email('a')"
            ]
        );
        let js = "assert.throws(() => lists.chunk([1], 0), RangeError);\nassert.throws(() => sublists.chunk([1], 0), RangeError);";
        assert_eq!(
            unqualified(js, &[("chunk".to_string(), "lib/lists.js".to_string())]),
            "assert.throws(() => chunk([1], 0), RangeError);\nassert.throws(() => sublists.chunk([1], 0), RangeError);"
        );
    }

    #[test]
    fn the_errors_the_words_name_are_read_once_each_in_order() {
        let words = "Otherwise raise `ValueError`. A size that is not whole throws a RangeError; an empty list raises ValueError. No error for zero.";
        assert_eq!(named_errors(words), ["ValueError", "RangeError"]);
        assert!(named_errors("Returns the sum.").is_empty());
    }

    #[test]
    fn placeholders_are_bodies_still_to_write() {
        assert!(is_placeholder(
            "def f(x):\n    \"\"\"Doc.\"\"\"\n    raise NotImplementedError\n"
        ));
        assert!(is_placeholder("def f(x):\n    pass  # TODO\n"));
        assert!(is_placeholder(
            "def remove(self, sku):\n    \"\"\"Ship.\"\"\"\n    ...\n"
        ));
        assert!(is_placeholder(
            "function f(q) {\n  throw new Error('not implemented');\n}\n"
        ));
        assert!(is_placeholder("pub fn f() -> u32 {\n    todo!()\n}\n"));
        assert!(!is_placeholder("def f(x):\n    return x + 1\n"));
        assert!(!is_placeholder(
            "def f(x):\n    if x:\n        pass\n    return 2\n"
        ));
    }

    use super::*;

    const PROMPT: &str = "Add shipping_cost(weight_kg, zone) to shipping.py: zone 'eu' costs 5.0 plus 1.5 per kg over 2; an unknown zone raises ValueError; round to 2 decimals. Example: shipping_cost(4, 'eu') is 8.0.";

    #[test]
    fn only_checks_whose_value_the_request_states_are_kept() {
        let reply = "```python\nassert shipping_cost(4, 'eu') == 8.0\nassert shipping_cost(3, 'eu') == 6.5\nraises(ValueError, lambda: shipping_cost(1, 'mars'))\nraises(KeyError, lambda: shipping_cost(1, 'mars'))\nassert other(1) == 8.0\nprint('hi')\n```";
        let got: Vec<String> = grounded_checks(PROMPT, reply, &["shipping_cost".to_string()])
            .iter()
            .map(|c| c.shown(Lang::Python))
            .collect();
        assert_eq!(
            got,
            vec![
                "assert shipping_cost(4, 'eu') == 8.0",
                "raises(ValueError, lambda: shipping_cost(1, 'mars'))",
            ]
        );
        assert!(stated("costs 12.50 each", "12.5"));
        // A string is stated as a literal, or standing alone, not as a
        // piece of another value.
        let spec = "Examples: `initials(\"Ada Lovelace\")` is `\"A.L.\"`, and `0 files`.";
        assert!(stated(spec, "\"A.L.\""));
        assert!(!stated(spec, "\"A.\""));
        assert!(!stated(spec, "'L.'"));
        assert!(stated(spec, "'0 files'"));
        assert!(stated(spec, "\"Ada\""));
        assert!(!stated("costs 12.50 each", "13"));
    }

    #[test]
    fn a_value_is_kept_with_the_call_the_words_show_it_with() {
        let words = "## clip(text, width)\n\nText of at most `width` characters is returned unchanged; longer text keeps `width - 1` characters and ends with `~`.\nA width below 1 throws a RangeError.\n\n`clip('good morning', 6)` gives `'good ~'`.\n";
        let reply = "```js\nassert.deepStrictEqual(clip('good morning', 6), 'good ~');\nassert.deepStrictEqual(clip('good morning', 9), 'good morning');\nassert.throws(() => clip('good morning', 0), RangeError);\nassert.throws(() => clip('good morning', 13), RangeError);\nassert.throws(() => clip('good morning', 14), RangeError);\nassert.throws(() => clip('good morning', 15), RangeError);\n```";
        let got: Vec<String> = grounded_checks(words, reply, &["clip".to_string()])
            .iter()
            .map(|c| c.shown(Lang::JavaScript))
            .collect();
        // 'good morning' is in the words, but with 6 and 'good ~', never
        // as what 9 gives; the model counting on from 13 is not read.
        assert_eq!(
            got,
            vec![
                "clip('good morning', 6) should be 'good ~'",
                "clip('good morning', 0) should throw RangeError",
                "clip('good morning', 13) should throw RangeError",
            ]
        );
        // A doctest's result on the line after its call is shown with it.
        assert!(shown_together(">>> half(8)\n4\n", "half(8)", "4"));
        assert!(!shown_together(
            ">>> half(8)\n4\n\nhalf(9) is odd\n",
            "half(9)",
            "4"
        ));
    }

    #[test]
    fn javascript_checks_are_read_and_held_to_the_words_too() {
        let words = "chunk(items, size) splits items: chunk([1, 2, 3], 2) gives [[1, 2], [3]]. A size below 1 throws a RangeError.";
        let reply = "```js\nassert.deepStrictEqual(chunk([1, 2, 3], 2), [[1, 2], [3]]);\nassert.deepStrictEqual(chunk([1, 2, 3], 1), [[1], [2], [7]]);\nassert.throws(() => chunk([1, 'a,b'], 0), RangeError);\nassert.throws(() => { chunk([1], -1); }, TypeError);\nassert.strictEqual(chunk([], 3).length, 0);\nconsole.log(chunk([1], 1));\n```";
        let got = grounded_checks(words, reply, &["chunk".to_string()]);
        assert_eq!(
            got,
            vec![
                Example {
                    call: "chunk([1, 2, 3], 2)".into(),
                    expect: Expect::Value("[[1, 2], [3]]".into()),
                },
                Example {
                    call: "chunk([1, 'a,b'], 0)".into(),
                    expect: Expect::Raises("RangeError".into()),
                },
                Example {
                    call: "chunk([], 3).length".into(),
                    expect: Expect::Value("0".into()),
                },
            ]
        );
        // The request for them shows the words and the language's shapes.
        let ask = request(
            words,
            &[("chunk".into(), "lists.js".into())],
            Lang::JavaScript,
        );
        assert!(ask.contains("A size below 1 throws a RangeError."), "{ask}");
        assert!(
            ask.contains("assert.throws(() => CALL, ErrorName);"),
            "{ask}"
        );
        assert!(ask.contains("chunk (from lists.js)"), "{ask}");
    }

    /// Runs the checks' script in `dir`: whether it passed, and its output.
    fn run_checks_in(dir: &std::path::Path, module: &str, checks: &[String]) -> (bool, String) {
        let words = checks.join("\n") + "\n";
        let parsed = grounded_checks(&words, &words, &["shipping_cost".into(), "rev".into()]);
        assert_eq!(parsed.len(), checks.len());
        let script = examples::python_script(&[module.to_string()], &[], &parsed);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(examples::command(Lang::Python, &script))
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn a_reply_cut_at_its_cap_still_gives_its_complete_checks() {
        let cut = "```python\nassert shipping_cost(4, 'eu') == 8.0\nassert shipping_cost(3, 'eu') == 6.5\nassert shipping_cost(4, 'eu') == 8";
        assert_eq!(
            grounded_checks(PROMPT, cut, &["shipping_cost".to_string()]),
            vec![Example {
                call: "shipping_cost(4, 'eu')".into(),
                expect: Expect::Value("8.0".into())
            }]
        );
    }

    #[test]
    fn the_script_runs_each_check_and_names_what_it_gave() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("shipping.py"),
            "def shipping_cost(w, zone):\n    if zone != 'eu':\n        raise KeyError(zone)\n    return 5.0 + 1.5 * max(0, w - 2)\n",
        )
        .unwrap();
        let checks = vec![
            "assert shipping_cost(4, 'eu') == 8.0".to_string(),
            "assert shipping_cost(3, 'eu') == 7.0".to_string(),
            "raises(ValueError, lambda: shipping_cost(1, 'mars'))".to_string(),
        ];
        let (ok, text) = run_checks_in(dir.path(), "shipping", &checks);
        assert!(!ok);
        assert!(
            text.contains("FAILED: assert shipping_cost(3, 'eu') == 7.0  (it gives 6.5)"),
            "{text}"
        );
        assert!(text.contains("(it raises KeyError: 'mars')"), "{text}");
        assert!(!text.contains("== 8.0"), "{text}");
        assert!(!dir.path().join("__pycache__").exists());
    }

    #[test]
    fn a_module_that_no_longer_imports_fails_the_checks() {
        let dir = tempfile::tempdir().unwrap();
        // Valid syntax, but the annotation runs at import and raises.
        std::fs::write(
            dir.path().join("words.py"),
            "def rev(s) -> ' '.join(s.split())(s):\n    return s\n",
        )
        .unwrap();
        let checks = vec!["assert rev('a b') == 'b a'".to_string()];
        let (ok, text) = run_checks_in(dir.path(), "words", &checks);
        assert!(!ok);
        assert!(
            text.contains("FAILED: import words  (it raises NameError"),
            "{text}"
        );
    }
}
