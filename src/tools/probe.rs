//! Runs one call the user asks about ("what does `discount(200, 'gold')`
//! return?") instead of letting a small model work it out in its head:
//! the function is imported from the workspace file that defines it and
//! called with the literal arguments from the question, in the fence,
//! read-only, without network. Only literal arguments; never without a
//! fence.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ToolEnv;
use crate::sandbox::{Access, RunPlan};

/// The call a question asks about: "What does `discount(200, 'gold')`
/// return?". Only a plain function name and literal arguments (numbers,
/// quoted strings, lists, tuples, dicts, True/False/None), which come
/// back as JSON: whoever runs the call passes data, never the question's
/// text as code.
pub struct AskedCall {
    pub name: String,
    /// The arguments as the question wrote them, for display.
    pub shown: String,
    /// The arguments as a JSON array.
    pub json: String,
}

/// What a probe ran and what came of it.
pub struct Probe {
    /// The call as the question wrote it, and the file defining it.
    pub call: String,
    pub file: String,
    /// What the call returned (its `repr`/JSON), or the error it raised.
    pub result: Result<String, String>,
}

/// A one-line change a probe found by trying changes in the fence, with
/// which the failing command or test passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    /// The workspace file and the line (1-based) to change.
    pub file: String,
    pub line: usize,
    /// The line as it is in the file, and as the fix has it.
    pub was: String,
    pub now: String,
    /// What mm tried and found, as a note for the model.
    pub note: String,
}

/// The fix of line `line` of `file` whose code (without indentation)
/// becomes `code`: the line read from the file now, the new one indented
/// as it is. None when the file or the line is not there.
fn fix_at(env: &ToolEnv, file: &str, line: usize, code: &str, note: String) -> Option<Fix> {
    let r = env.sandbox.check_read(file).ok()?;
    let bytes = crate::paths::read_checked(&r.abs, 1024 * 1024).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let was = text.lines().nth(line.checked_sub(1)?)?.to_string();
    let indent = &was[..was.len() - was.trim_start().len()];
    Some(Fix {
        file: r.rel.clone(),
        line,
        now: format!("{indent}{}", code.trim()),
        was,
        note,
    })
}

/// The workspace file (from `sources`: path and content) that alone
/// defines `name` at its top level, in a language a probe can run.
pub fn defining_file<'a>(sources: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let holders: Vec<&str> = sources
        .iter()
        .filter(|(p, _)| p.ends_with(".py") || p.ends_with(".js") || p.ends_with(".cjs"))
        .filter(|(_, text)| {
            text.lines()
                .filter(|l| !l.starts_with([' ', '\t']))
                .flat_map(super::guard::definitions)
                .any(|d| d == name)
        })
        .map(|(p, _)| p.as_str())
        .collect();
    match holders.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Imports the module named by argv[1], calls argv[2] with the JSON
/// array argv[3] as arguments: the question's values travel as data.
const PY_CALL: &str = "import importlib, json, sys\nf = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])\nprint(repr(f(*json.loads(sys.argv[3]))))\n";
const JS_CALL: &str = "const m = require(require('path').resolve(process.argv[1]));\nconst f = typeof m === 'function' && m.name === process.argv[2] ? m : m[process.argv[2]];\nconsole.log(JSON.stringify(f(...JSON.parse(process.argv[3]))));\n";

/// A workspace path as a Python module name (`pkg/shop.py` is
/// `pkg.shop`), when every part is an identifier.
fn module_name(file: &str) -> Option<String> {
    let stem = file.strip_suffix(".py")?;
    let parts: Vec<&str> = stem.split('/').collect();
    parts
        .iter()
        .all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .then(|| parts.join("."))
}

/// Calls `call.name` from `file` with the question's arguments and
/// returns what it gives. None when there is no fence, no interpreter,
/// a file name that is not a plain module path, or the run timed out.
pub async fn call(
    env: &ToolEnv,
    file: &str,
    call: &AskedCall,
    cancel: &CancellationToken,
) -> Option<Probe> {
    if !env.sandbox.fence().is_on() {
        return None;
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let (program, flag, code, target) = if file.ends_with(".py") {
        ("python3", "-c", PY_CALL, module_name(file)?)
    } else if file.chars().all(plain) && !file.starts_with(['-', '/']) {
        ("node", "-e", JS_CALL, format!("./{file}"))
    } else {
        return None;
    };
    crate::lsp::find_program(program)?;
    let root = env.sandbox.root();
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let args = [flag, code, &target, &call.name, &call.json];
    let cmd = env.sandbox.command(program, &args, root, plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    let text = f.output.trim().to_string();
    let result = if f.exit_code == Some(0) {
        Ok(text.lines().last().unwrap_or("").to_string())
    } else {
        Err(text
            .lines()
            .rev()
            .find(|l| l.contains("Error") || l.contains("Exception"))
            .unwrap_or("it failed")
            .trim()
            .to_string())
    };
    Some(Probe {
        call: format!("{}({})", call.name, call.shown),
        file: file.to_string(),
        result,
    })
}

/// Requires the module named by argv[1] and says whether argv[2] is a
/// function it exports (the module itself, when it exports only that).
const JS_EXPORTS: &str = "let m;\ntry { m = require(require('path').resolve(process.argv[1])); } catch (e) { console.log('requiring it fails: ' + String(e.message).split('\\n')[0]); process.exit(0); }\nconst n = process.argv[2];\nconst f = typeof m === 'function' && m.name === n ? m : m && m[n];\nconsole.log(typeof f === 'function' ? 'ok' : 'it does not export ' + n);\n";

/// For a JavaScript file that defines `name`: whether requiring it gives
/// that function, run in the fence (read-only, no network). Some(problem)
/// when it does not ("it does not export capitalize", "requiring it
/// fails: …"); None when it does or this cannot be checked here.
pub async fn js_export_problem(
    env: &ToolEnv,
    file: &str,
    name: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    if !env.sandbox.fence().is_on()
        || !(file.ends_with(".js") || file.ends_with(".cjs"))
        || !file.chars().all(plain)
        || file.starts_with(['-', '/'])
    {
        return None;
    }
    crate::lsp::find_program("node")?;
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let target = format!("./{file}");
    let args = ["-e", JS_EXPORTS, &target, name];
    let cmd = env.sandbox.command("node", &args, env.sandbox.root(), plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    let last = f
        .output
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string();
    let clean: String = last.chars().filter(|c| !c.is_control()).take(200).collect();
    (clean != "ok" && !clean.is_empty()).then_some(clean)
}

/// Runs the script again under a wrapper that, when it raises, prints
/// the values of the variables in the innermost workspace frames.
const PY_VALUES: &str = include_str!("probe/values.py");

/// Characters that make a command more than a program and its words.
const SHELL_SYNTAX: [char; 12] = ['\'', '"', '$', '|', ';', '&', '<', '>', '`', '\\', '*', '?'];

/// The words of `command` when it is a plain `python3 script.py args`
/// (no quoting, no shell syntax) and a fence is on.
fn python_script(env: &ToolEnv, command: &str) -> Option<Vec<String>> {
    if !env.sandbox.fence().is_on() || command.contains(SHELL_SYNTAX) {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let (program, script) = (*words.first()?, *words.get(1)?);
    if !matches!(program, "python" | "python3")
        || !script.ends_with(".py")
        || script.starts_with('-')
    {
        return None;
    }
    crate::lsp::find_program("python3")?;
    Some(
        words[1..]
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
    )
}

/// The values of the local variables where `command` (a plain
/// `python3 script.py args`) crashes, as lines for the model; None when
/// the command is not that, did not crash, or there is no fence.
pub async fn crash_values(
    env: &ToolEnv,
    command: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    let words = python_script(env, command)?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let blocks = run_tagged(env, PY_VALUES, "MM-VALUES", &words, cancel).await?;
    Some(bracketed(blocks, |head| {
        format!("[values in {head} when it failed]")
    }))
}

/// Runs a script that crashes with a `TypeError` again, in memory, with
/// one small change at a time where text enters the program: a name
/// bound from `split`, `strip`, `input()`, `sys.argv` or the environment
/// (or such a value used directly) wrapped in `int(…)` or `float(…)`
/// where it is used, an argparse option
/// without a type given `type=int` or `type=float`. The first change with
/// which the script runs to the end is printed with the line as it was
/// and what the script printed. argv: a tag, the script, its arguments.
/// At most 120 tries, 8 s.
const PY_CRASH_REPAIR: &str = include_str!("probe/crash_repair.py");

/// For a plain `python3 script.py` command that crashes with a
/// `TypeError`: a one-line change (text turned into a number where it
/// enters the program) with which it runs to the end, found by trying
/// such changes in the fence (read-only, in memory). None when none is
/// found or there is no fence.
pub async fn crash_repair(env: &ToolEnv, command: &str, cancel: &CancellationToken) -> Option<Fix> {
    let words = python_script(env, command)?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let blocks = run_tagged(env, PY_CRASH_REPAIR, "MM-FIX", &words, cancel).await?;
    fix_of(
        env,
        blocks,
        command,
        "turning text into numbers where it enters the program",
    )
}

/// Runs the test script again, in memory, with one small change at a
/// time in the workspace modules it requires: a comparison, `&&`/`||`,
/// `Math.min`/`Math.max` or an arithmetic operator swapped, a `± 1`
/// dropped, a `return name` given another parameter of its function. The
/// first change with which the script runs to the end without throwing
/// is printed with the line as it was and what the script printed. argv:
/// a tag, the test script. At most 300 tries, 8 s.
const JS_REPAIR: &str = include_str!("probe/repair.js");

/// For a plain `node test.js` command that fails: a one-line change of
/// the workspace code it requires with which it runs to the end, found by
/// trying small changes in the fence (read-only, in memory). None when
/// none is found, there is no fence or no node.
pub async fn script_repair(
    env: &ToolEnv,
    command: &str,
    cancel: &CancellationToken,
) -> Option<Fix> {
    if !env.sandbox.fence().is_on() || command.contains(SHELL_SYNTAX) {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let ["node", script] = words.as_slice() else {
        return None;
    };
    if !script.ends_with(".js") || script.starts_with('-') {
        return None;
    }
    crate::lsp::find_program("node")?;
    let blocks =
        run_tagged_with(env, ("node", "-e"), JS_REPAIR, "MM-FIX", &[script], cancel).await?;
    fix_of(env, blocks, command, "small changes of the code it runs")
}

/// The fix a repair program printed (`place` head; `was:`, `now:` and
/// `out:` lines), with a note saying what was tried (`how`).
fn fix_of(
    env: &ToolEnv,
    blocks: Vec<(String, Vec<String>)>,
    command: &str,
    how: &str,
) -> Option<Fix> {
    let (place, body) = blocks.into_iter().next()?;
    let field = |name: &str| {
        body.iter()
            .filter_map(|l| l.trim_start().strip_prefix(name))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (was, now) = (field("was: "), field("now: "));
    let (was, now) = (was.first()?, now.first()?);
    let printed = field("out: ");
    let shown = if printed.is_empty() {
        "prints nothing".to_string()
    } else {
        format!(
            "prints:\n{}",
            printed
                .iter()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    let (path, line) = place.rsplit_once(':')?;
    let note = format!(
        "[mm tried {how}, in the fence: with {place} changed from `{was}` to `{now}`, `{command}` runs without error and {shown}]"
    );
    fix_at(env, path, line.parse().ok()?, now, note)
}

/// Tagged blocks as lines for the model: each head in brackets as `head`
/// words it, its indented lines under it.
fn bracketed(blocks: Vec<(String, Vec<String>)>, head: impl Fn(&str) -> String) -> String {
    blocks
        .into_iter()
        .flat_map(|(h, body)| std::iter::once(head(&h)).chain(body))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs one failing Python test again with a tracer on the workspace
/// calls made from its failing line: argv is a tag, the test file, the
/// line, the test function's name. For each call (two at most) it prints
/// the arguments, what came back, and the value of every part of the
/// `return` expression that produced it, worked out in the function's own
/// frame.
const PY_TRACE: &str = include_str!("probe/trace.py");

/// Tries small changes of the `return` line that produced a failing
/// test's wrong value, in memory: an operator swapped, a `± 1` dropped or
/// moved, the grouping of an arithmetic chain, a comparison, `min`/`max`.
/// The first that makes every test of the test file pass is printed, with
/// the line as it is. argv as `PY_TRACE`'s. At most 300 tries, 8 s.
const PY_REPAIR: &str = include_str!("probe/repair.py");

/// Tries small changes of a Python file's functions against a check
/// script, in memory: a method for another (`split(' ')` for `split()`,
/// `lower` for `upper`, `strip` dropped), an integer ± 1, a term of a sum
/// dropped, an operator or a comparison for another, a condition negated,
/// a string with a character of the expected values added or dropped at
/// either end (a returned value, each element joined), or with the
/// characters where a value it gives and the one expected part,
/// `min`/`max`. Up to three changes in a row, each kept only when fewer
/// checks fail; at most 3,000 tries, 20 s. Prints the first file with
/// which every check passes.
const PY_MUTATE: &str = include_str!("probe/mutate.py");

/// The same for JavaScript, token by token on the function's lines: a
/// string, a number, an operator, a method name (`toUpperCase`,
/// `startsWith`, `Math.min`...), a condition negated, a returned value
/// with characters before or after, `split(' ')` on every run of spaces.
const JS_MUTATE: &str = include_str!("probe/mutate.js");

/// The shell command that runs the mutation search on `file` (from the
/// root, a `.py` or `.js` file), changing only the functions `names`,
/// judged by the check script `check` in the file's language (see
/// `agent::examples::python_script`). Run it where `file` holds the code
/// to start from: a scratch copy.
pub fn mutation_command(file: &str, names: &[String], check: &str) -> Option<String> {
    let python = file.ends_with(".py");
    if !python && !file.ends_with(".js") && !file.ends_with(".cjs") {
        return None;
    }
    let (file, names, check) = (
        serde_json::to_string(file).ok()?,
        serde_json::to_string(names).ok()?,
        serde_json::to_string(check).ok()?,
    );
    Some(if python {
        format!(
            "python3 - <<'MM_MUTATE'\nFILE = {file}\nNAMES = {names}\nCHECK = {check}\n{PY_MUTATE}\nMM_MUTATE"
        )
    } else {
        format!(
            "node - <<'MM_MUTATE'\nconst FILE = {file}, NAMES = {names}, CHECK = {check};\n{JS_MUTATE}\nMM_MUTATE"
        )
    })
}

/// What a mutation search found: the file's new text and a line on each
/// change, in order. None when it found nothing.
pub fn mutation_found(output: &str) -> Option<(String, Vec<String>)> {
    #[derive(serde::Deserialize)]
    struct Found {
        source: String,
        changes: Vec<String>,
    }
    let line = output.lines().find_map(|l| l.strip_prefix("MM-MUTATE "))?;
    let f: Found = serde_json::from_str(line).ok()?;
    Some((f.source, f.changes))
}

/// The failing Python test a failure's traceback ends in: its file, the
/// line in it that failed, and the test function's name.
fn failing_python_test(failure: &str) -> Option<(String, usize, String)> {
    static FRAME: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        crate::patterns::regex(r#"File "(?:\./)?([\w./-]+\.py)", line (\d+), in (\w+)"#).ok()
    });
    FRAME
        .as_ref()?
        .captures_iter(failure)
        .filter(|c| crate::patterns::is_test_file(&c[1]))
        .filter_map(|c| Some((c[1].to_string(), c[2].parse().ok()?, c[3].to_string())))
        .last()
}

/// For a Python test that fails on a wrong value: a one-line change of
/// the `return` that made it with which every test of that file passes,
/// found by trying small changes in the fence (read-only, in memory), as
/// a fix. None when none is found or there is no fence.
pub async fn repair_candidate(
    env: &ToolEnv,
    failure: &str,
    cancel: &CancellationToken,
) -> Option<Fix> {
    let (file, _, lines) = python_test_probe(env, failure, PY_REPAIR, "MM-REPAIR", cancel).await?;
    let mut found = None;
    let mut was = None;
    for (head, _) in &lines {
        if let Some(rest) = head.strip_prefix("was: ") {
            was = Some(rest.trim().to_string());
        } else if let Some((place, code)) = head.split_once(": ") {
            found = Some((place.to_string(), code.trim().to_string()));
        }
    }
    let ((place, code), was) = (found?, was?);
    let (path, line) = place.rsplit_once(':')?;
    let note = format!(
        "[mm tried small changes of {place} in the fence: with `{code}` instead of `{was}`, every test in {file} passes.]"
    );
    fix_at(env, path, line.parse().ok()?, &code, note)
}

/// For a Python test that fails on a wrong value: what the workspace
/// function called on the failing line got and returned, and the value of
/// each part of the expression it returned, as lines for the model. None
/// when the failure is not that, there is no fence, or nothing was traced.
pub async fn wrong_value_trace(
    env: &ToolEnv,
    failure: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    let (file, line, calls) = python_test_probe(env, failure, PY_TRACE, "MM-TRACE", cancel).await?;
    Some(bracketed(calls, |head| {
        format!("[{file}:{line} calls {head}]")
    }))
}

/// Runs `program` (argv: a tag, the test file, the failing line, the test
/// function) on the failing Python test `failure` ends in, in the fence,
/// read-only, without network: the test file, and each line the program
/// tagged with the lines indented under it, and the failing line. None
/// when the failure is not a Python assertion, there is no fence, or
/// nothing was tagged.
async fn python_test_probe(
    env: &ToolEnv,
    failure: &str,
    program: &str,
    kind: &str,
    cancel: &CancellationToken,
) -> Option<(String, usize, Vec<(String, Vec<String>)>)> {
    if !env.sandbox.fence().is_on() || !failure.contains("AssertionError") {
        return None;
    }
    let (file, line, name) = failing_python_test(failure)?;
    // Tracebacks name files absolute or from `./`.
    let root = env.sandbox.root();
    let file = Path::new(&file)
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or(file)
        .trim_start_matches("./")
        .to_string();
    module_name(&file)?;
    crate::lsp::find_program("python3")?;
    let line_arg = line.to_string();
    let out = run_tagged(env, program, kind, &[&file, &line_arg, &name], cancel).await?;
    Some((file, line, out))
}

/// Runs `python3 -c program TAG rest…` in the fence, read-only, without
/// network, and returns each output line that starts with the tag (the
/// tag taken off) with the indented lines under it, control characters
/// removed. The tag is made fresh, so the code the program runs cannot
/// print lines that pass for the program's own. None when nothing was
/// tagged or the run timed out.
async fn run_tagged(
    env: &ToolEnv,
    program: &str,
    kind: &str,
    rest: &[&str],
    cancel: &CancellationToken,
) -> Option<Vec<(String, Vec<String>)>> {
    run_tagged_with(env, ("python3", "-c"), program, kind, rest, cancel).await
}

/// `run_tagged` with another interpreter: (program, its flag for code
/// given as an argument), `("node", "-e")`.
async fn run_tagged_with(
    env: &ToolEnv,
    interpreter: (&str, &str),
    program: &str,
    kind: &str,
    rest: &[&str],
    cancel: &CancellationToken,
) -> Option<Vec<(String, Vec<String>)>> {
    let tag = format!(
        "{kind}-{:x}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
        std::process::id()
    );
    let mut args = vec![interpreter.1, program, &tag];
    args.extend(rest);
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let cmd = env
        .sandbox
        .command(interpreter.0, &args, env.sandbox.root(), plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    let clean = |l: &str| -> String { l.chars().filter(|c| !c.is_control()).collect() };
    let marker = format!("{tag} ");
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for l in f.output.lines() {
        if let Some(head) = l.strip_prefix(&marker) {
            out.push((clean(head), Vec::new()));
            inside = true;
        } else if inside && l.starts_with("  ") {
            if let Some((_, body)) = out.last_mut() {
                body.push(clean(l));
            }
        } else {
            inside = false;
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_are_module_names() {
        assert_eq!(module_name("pkg/shop.py").as_deref(), Some("pkg.shop"));
        assert_eq!(module_name("shop import x\nimport os\nfrom shop.py"), None);
        assert_eq!(module_name("my-shop.py"), None);
        assert_eq!(module_name("shop.js"), None);
    }

    #[test]
    fn the_one_file_defining_a_name() {
        let sources = vec![
            (
                "shop.py".to_string(),
                "RATES = {}\n\ndef discount(p, t):\n    return p\n".to_string(),
            ),
            (
                "util.py".to_string(),
                "class X:\n    def discount(self):\n        pass\n".to_string(),
            ),
        ];
        assert_eq!(defining_file(&sources, "discount"), Some("shop.py"));
        assert_eq!(defining_file(&sources, "missing"), None);
        let twice = [
            sources[0].clone(),
            ("b.py".to_string(), sources[0].1.clone()),
        ];
        assert_eq!(defining_file(&twice, "discount"), None);
    }
}
