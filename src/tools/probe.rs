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
const PY_VALUES: &str = r#"import os, runpy, sys, types
tag, sys.argv = sys.argv[1], sys.argv[2:]
root = os.getcwd()
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    raise
except BaseException as e:
    tb, frames = e.__traceback__, []
    while tb:
        f = tb.tb_frame
        if os.path.abspath(f.f_code.co_filename).startswith(root + os.sep):
            frames.append((f, tb.tb_lineno))
        tb = tb.tb_next
    for f, line in reversed(frames[-2:]):
        where = os.path.relpath(f.f_code.co_filename, root)
        shown = []
        for k, v in list(f.f_locals.items()):
            if k.startswith("__") or isinstance(v, (types.ModuleType, types.FunctionType, type)):
                continue
            r = repr(v)
            shown.append("  %s = %s" % (k, r if len(r) <= 160 else r[:160] + "..."))
        if shown and f.f_code.co_name != "<module>":
            print("%s %s at %s:%d" % (tag, f.f_code.co_name, where, line))
            print("\n".join(shown[:12]))
    sys.exit(1)
"#;

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
const PY_CRASH_REPAIR: &str = r#"import ast, contextlib, io, os, runpy, sys, time, types
tag, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
root = os.getcwd()
sys.dont_write_bytecode = True
start = time.monotonic()
script_abs = os.path.abspath(script)
base = os.path.dirname(script_abs)
sys.path.insert(0, base)

def ours():
    for k, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None) or ""
        if os.path.abspath(f).startswith(root + os.sep):
            del sys.modules[k]

def run(path=None, code=None):
    ours()
    out = io.StringIO()
    sys.argv = [script] + args
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            if path == script_abs:
                exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
            else:
                if path:
                    name = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                    m = types.ModuleType(name)
                    m.__file__ = path
                    sys.modules[name] = m
                    exec(code, m.__dict__)
                runpy.run_path(script, run_name="__main__")
        return None, out.getvalue()
    except SystemExit as e:
        return (None if e.code in (None, 0) else "SystemExit"), out.getvalue()
    except BaseException as e:
        return type(e).__name__, out.getvalue()

failed, _ = run()
if failed != "TypeError":
    sys.exit(0)
files = [script_abs]
for m in list(sys.modules.values()):
    f = os.path.abspath(getattr(m, "__file__", None) or "")
    if f.startswith(base + os.sep) and f.endswith(".py") and f not in files:
        files.append(f)

TEXT_METHODS = {"split", "rsplit", "strip", "lstrip", "rstrip", "readline", "read", "readlines", "splitlines", "partition", "rpartition", "getenv"}
def texty(n):
    while isinstance(n, ast.Subscript):
        if ast.unparse(n.value) in ("sys.argv", "os.environ"):
            return True
        n = n.value
    if not isinstance(n, ast.Call):
        return False
    f = n.func
    if isinstance(f, ast.Name):
        return f.id == "input"
    if isinstance(f, ast.Attribute):
        return f.attr in TEXT_METHODS or ast.unparse(f) == "os.environ.get"
    return False

def names_in(t):
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [x for e in t.elts for x in names_in(e)]
    return []

def scopes(tree):
    yield tree
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n

def own(scope):
    # The nodes of a scope, not those of the functions nested in it.
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))

def edits(src):
    # (line, col, end col, new text) on one line each: text made numbers
    # where it enters the program; argparse options given a type.
    tree = ast.parse(src)
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument" \
                and n.lineno == n.end_lineno and not any(k.arg in ("type", "action") for k in n.keywords):
            for conv in ("int", "float"):
                out.append((n.lineno, n.end_col_offset - 1, n.end_col_offset - 1, ", type=%s" % conv))
    for n in ast.walk(tree):
        # Text used where it comes in: `f(sys.argv[2])`.
        p = parents.get(n)
        if texty(n) and n.lineno == n.end_lineno and not isinstance(p, (ast.Assign, ast.For, ast.Subscript, ast.Attribute)) \
                and not (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in ("int", "float", "str", "len")):
            for conv in ("int", "float"):
                out.append((n.lineno, n.col_offset, n.end_col_offset, conv))
    for scope in scopes(tree):
        bound = set()
        def from_text(v):
            if texty(v):
                return True
            while isinstance(v, ast.Subscript):
                v = v.value
            return isinstance(v, ast.Name) and v.id in bound
        for _ in range(3):
            for n in own(scope):
                if isinstance(n, ast.Assign) and from_text(n.value):
                    for t in n.targets:
                        bound.update(names_in(t))
                elif isinstance(n, ast.For) and from_text(n.iter):
                    bound.update(names_in(n.target))
        for n in sorted(own(scope), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in bound):
                continue
            p = parents.get(n)
            if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in ("int", "float", "str", "len"):
                continue
            if isinstance(p, ast.Call) and p.func is n:
                continue
            for conv in ("int", "float"):
                out.append((n.lineno, n.col_offset, n.end_col_offset, conv))
    return out

tried = 0
for path in files[:6]:
    try:
        src = open(path, encoding="utf-8").read()
    except OSError:
        continue
    lines = src.split("\n")
    if len(lines) > 2000:
        continue
    try:
        found = edits(src)
    except SyntaxError:
        continue
    for line, col, end, new in found:
        if time.monotonic() - start > 8 or tried >= 120:
            sys.exit(0)
        old = lines[line - 1]
        raw = old.encode("utf-8")
        if col == end:
            changed = raw[:col] + new.encode() + raw[end:]
        else:
            changed = raw[:col] + ("%s(" % new).encode() + raw[col:end] + b")" + raw[end:]
        changed = changed.decode("utf-8", "replace")
        text = "\n".join(lines[:line - 1] + [changed] + lines[line:])
        tried += 1
        try:
            code = compile(text, path, "exec")
        except SyntaxError:
            continue
        failed, printed = run(path, code)
        if failed is None:
            rel = os.path.relpath(path, root)
            print("%s %s:%d" % (tag, rel, line))
            print("  was: %s" % old.strip())
            print("  now: %s" % changed.strip())
            for l in printed.splitlines()[:4]:
                print("  out: %s" % l[:160])
            sys.exit(0)
"#;

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
const JS_REPAIR: &str = r#"const Module = require("module"), fs = require("fs"), path = require("path");
const [tag, test] = process.argv.slice(1);
const root = process.cwd(), testAbs = path.resolve(test), start = Date.now();
const orig = Module._extensions[".js"];
let patch = null;
Module._extensions[".js"] = function (m, file) {
  if (patch && file === patch.file) return m._compile(patch.src, file);
  return orig(m, file);
};
const ours = (f) => f.startsWith(root + path.sep) && !f.includes(path.sep + "node_modules" + path.sep);
const quiet = () => {};
function run() {
  for (const k of Object.keys(require.cache)) if (ours(k)) delete require.cache[k];
  const log = console.log, err = console.error, exit = process.exit, out = [];
  console.log = (...a) => out.push(a.join(" "));
  console.error = quiet;
  process.exit = (c) => { throw new Error("exit " + c); };
  try { require(testAbs); return out; } catch (e) { return null; }
  finally { console.log = log; console.error = err; process.exit = exit; }
}
if (run() !== null) process.exit(0);
const files = Object.keys(require.cache).filter((f) => ours(f) && f !== testAbs && f.endsWith(".js")).slice(0, 4);
const SWAPS = [["<=", "<"], ["<", "<="], [">=", ">"], [">", ">="], ["<", ">"], [">", "<"], ["===", "!=="], ["!==", "==="],
  ["&&", "||"], ["||", "&&"], ["Math.min", "Math.max"], ["Math.max", "Math.min"], [" + 1", ""], [" - 1", ""], ["+", "-"], ["-", "+"], ["*", "/"], ["/", "*"]];
function* mutants(lines) {
  let params = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const sig = line.match(/function\s*\w*\s*\(([^)]*)\)|\(([^)]*)\)\s*=>/);
    if (sig) params = (sig[1] ?? sig[2]).split(",").map((p) => p.trim().split("=")[0].trim()).filter((p) => /^\w+$/.test(p));
    if (/^\s*(\/\/|\*|\/\*)/.test(line)) continue;
    const ret = line.match(/^(.*\breturn\s+)(\w+)(\s*;?\s*)$/);
    if (ret) for (const p of params) if (p !== ret[2]) yield [i, ret[1] + p + ret[3]];
    for (const [a, b] of SWAPS) {
      let at = line.indexOf(a);
      while (at >= 0) {
        const before = line[at - 1] || " ", after = line[at + a.length] || " ";
        // A whole operator: `<` not from `<=`, `+` not from `++` or `+=`.
        const whole = !(a.length <= 2 && /[<>=!&|+\-*\/]/.test(after)) && !(a.length <= 2 && /[<>=!&|+\-*\/]/.test(before));
        if (whole || a.startsWith("Math") || a.startsWith(" ")) yield [i, line.slice(0, at) + b + line.slice(at + a.length)];
        at = line.indexOf(a, at + 1);
      }
    }
  }
}
let tried = 0;
for (const file of files) {
  const src = fs.readFileSync(file, "utf8"), lines = src.split("\n");
  if (lines.length > 2000) continue;
  for (const [i, now] of mutants(lines)) {
    if (Date.now() - start > 8000 || tried >= 300) process.exit(0);
    tried++;
    const copy = lines.slice();
    copy[i] = now;
    patch = { file, src: copy.join("\n") };
    const out = run();
    if (out !== null) {
      console.log(`${tag} ${path.relative(root, file)}:${i + 1}`);
      console.log(`  was: ${lines[i].trim()}`);
      console.log(`  now: ${now.trim()}`);
      for (const l of out.slice(0, 4)) console.log(`  out: ${String(l).slice(0, 160)}`);
      process.exit(0);
    }
  }
}
"#;

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
const PY_TRACE: &str = r#"import ast, importlib, inspect, os, sys, textwrap, types, unittest
tag, test_file, line, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
root = os.getcwd()
sys.path.insert(0, root)
test_abs = os.path.abspath(test_file)
mod = importlib.import_module(test_file[:-3].replace("/", "."))
run = getattr(mod, name, None)
if not isinstance(run, types.FunctionType):
    run = None
    for v in list(vars(mod).values()):
        if isinstance(v, type) and issubclass(v, unittest.TestCase) and name in vars(v):
            case = v(name)
            def run(case=case):
                case.setUp()
                try:
                    getattr(case, name)()
                finally:
                    case.tearDown()
            break
def show(v):
    try:
        r = repr(v)
    except Exception:
        r = "?"
    r = "".join(c for c in r if c.isprintable())
    return r if len(r) <= 120 else r[:120] + "..."
done = []
def parts(frame):
    try:
        src, first = inspect.getsourcelines(frame.f_code)
        tree = ast.parse(textwrap.dedent("".join(src)))
    except Exception:
        return []
    at = frame.f_lineno - first + 1
    rets = [n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None and n.lineno == at]
    if not rets:
        return []
    out, seen = ["  line %d: %s" % (frame.f_lineno, src[at - 1].strip())], set()
    def walk(n):
        for c in ast.iter_child_nodes(n):
            walk(c)
        if isinstance(n, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Subscript, ast.IfExp)):
            text = ast.unparse(n)
            if text in seen or len(out) > 10:
                return
            seen.add(text)
            try:
                e = ast.Expression(body=n)
                ast.fix_missing_locations(e)
                v = show(eval(compile(e, "<mm>", "eval"), frame.f_globals, dict(frame.f_locals)))
            except NameError:
                # A name of a comprehension's own: no value here.
                return
            except BaseException as x:
                v = "raises " + type(x).__name__
            out.append("  %s = %s" % (text, v))
    walk(rets[0].value)
    return out
active = {}
def called(frame):
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return names, ", ".join("%s=%s" % (k, show(frame.f_locals.get(k))) for k in names if k != "self")
def tracer(frame, event, arg):
    if event != "call":
        return None
    back, fn = frame.f_back, os.path.abspath(frame.f_code.co_filename)
    if not fn.startswith(root + os.sep) or fn == test_abs:
        return None
    # A workspace function the traced one calls (through a generator
    # expression or a lambda): its arguments and what it returned.
    up, hops = back, 0
    while up is not None and id(up) not in active and hops < 3 and up.f_code.co_name.startswith("<"):
        up, hops = up.f_back, hops + 1
    if up is not None and id(up) in active:
        sub = active[id(up)]
        if len(sub) >= 4 or frame.f_code.co_name.startswith("<"):
            return None
        _, sargs = called(frame)
        srel, sname, sstate = os.path.relpath(fn, root), frame.f_code.co_name, {"raised": None}
        def inner(frame, event, arg):
            if event == "exception":
                sstate["raised"] = arg[0].__name__
            elif event == "return" and len(sub) < 4:
                how = "raised " + sstate["raised"] if sstate["raised"] and arg is None else "returned " + show(arg)
                text = "  it called %s(%s) in %s, which %s" % (sname, sargs, srel, how)
                if text not in sub:
                    sub.append(text)
            return inner
        return inner
    if len(done) >= 2:
        return None
    if back is None or os.path.abspath(back.f_code.co_filename) != test_abs or back.f_lineno != line:
        return None
    code = frame.f_code
    names, args = called(frame)
    active[id(frame)] = []
    state = {"raised": None}
    def local(frame, event, arg):
        if event == "exception":
            state["raised"] = arg[0].__name__
        elif event == "return":
            rel = os.path.relpath(fn, root)
            how = "raised " + state["raised"] if state["raised"] and arg is None else "returned " + show(arg)
            lines = ["%s %s(%s) in %s %s" % (tag, code.co_name, args, rel, how)]
            if not state["raised"]:
                lines += parts(frame)
            lines += active.pop(id(frame), [])
            skip = set(names) | {"self"}
            other = [(k, v) for k, v in frame.f_locals.items() if k not in skip and not isinstance(v, (types.ModuleType, types.FunctionType, type))]
            lines += ["  %s = %s" % (k, show(v)) for k, v in other[:6]]
            done.append("\n".join(lines))
        return local
    return local
if run is not None:
    sys.settrace(tracer)
    try:
        run()
    except BaseException:
        pass
    finally:
        sys.settrace(None)
print("\n".join(done))
"#;

/// Tries small changes of the `return` line that produced a failing
/// test's wrong value, in memory: an operator swapped, a `± 1` dropped or
/// moved, the grouping of an arithmetic chain, a comparison, `min`/`max`.
/// The first that makes every test of the test file pass is printed, with
/// the line as it is. argv as `PY_TRACE`'s. At most 300 tries, 8 s.
const PY_REPAIR: &str = r#"import ast, contextlib, copy, importlib, io, os, sys, time, types, unittest
tag, test_file, line, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
root = os.getcwd()
sys.path.insert(0, root)
sys.dont_write_bytecode = True
test_abs = os.path.abspath(test_file)
test_mod = test_file[:-3].replace("/", ".")
start = time.monotonic()

def ours():
    for k, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None) or ""
        if os.path.abspath(f).startswith(root + os.sep):
            del sys.modules[k]

def tests_of(mod):
    cases = []
    for v in list(vars(mod).values()):
        if isinstance(v, type) and issubclass(v, unittest.TestCase):
            cases.append(unittest.defaultTestLoader.loadTestsFromTestCase(v))
        elif isinstance(v, types.FunctionType) and v.__name__.startswith("test") and v.__module__ == mod.__name__:
            cases.append(unittest.FunctionTestCase(v))
    return unittest.TestSuite(cases)

def passes(mod):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        r = unittest.TextTestRunner(stream=out, verbosity=0).run(tests_of(mod))
    return r.wasSuccessful() and r.testsRun > 0

target = {}
def tracer(frame, event, arg):
    if event != "call" or target:
        return None
    back, fn = frame.f_back, os.path.abspath(frame.f_code.co_filename)
    if back is None or os.path.abspath(back.f_code.co_filename) != test_abs or back.f_lineno != line:
        return None
    if not fn.startswith(root + os.sep) or fn == test_abs:
        return None
    def local(frame, event, arg):
        if event == "return" and "file" not in target:
            target["file"], target["line"] = fn, frame.f_lineno
        return local
    return local

mod = importlib.import_module(test_mod)
sys.settrace(tracer)
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        unittest.TextTestRunner(stream=io.StringIO()).run(tests_of(mod))
finally:
    sys.settrace(None)
if "file" not in target:
    sys.exit(0)
path, at = target["file"], target["line"]
src = open(path, encoding="utf-8").read()
tree = ast.parse(src)
rets = [n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None and n.lineno == at and n.end_lineno == at]
if not rets:
    sys.exit(0)
ret = rets[0]
rel = os.path.relpath(path, root)
modname = rel[:-3].replace(os.sep, ".")

ARITH = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv]
CMP = {ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt, ast.GtE], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt, ast.LtE], ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq]}
SWAP = {"min": "max", "max": "min", "True": "False", "False": "True"}

def flat(n, ops, vals):
    if isinstance(n, ast.BinOp) and type(n.op) in ARITH:
        flat(n.left, ops, vals); ops.append(n.op); flat(n.right, ops, vals)
    else:
        vals.append(n)

def shapes(vals, ops):
    if len(vals) == 1:
        yield vals[0]
        return
    for i in range(1, len(vals)):
        for l in shapes(vals[:i], ops[:i - 1]):
            for r in shapes(vals[i:], ops[i:]):
                yield ast.BinOp(left=l, op=ops[i - 1], right=r)

def mutants(expr):
    # Each yields a whole new expression; simplest first.
    nodes = [n for n in ast.walk(expr)]
    for i, n in enumerate(nodes):
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub):
            for keep in (n.left, n.right):
                other = n.right if keep is n.left else n.left
                if isinstance(other, ast.Constant) and isinstance(other.value, (int, float)):
                    yield replace(expr, i, keep)
    for i, n in enumerate(nodes):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            for d in (1, -1):
                yield replace(expr, i, ast.Constant(n.value + d))
    for i, n in enumerate(nodes):
        if isinstance(n, ast.BinOp) and type(n.op) in ARITH:
            ops, vals = [], []
            flat(n, ops, vals)
            if 2 < len(vals) <= 6:
                for s in shapes(vals, ops):
                    yield replace(expr, i, s)
    for i, n in enumerate(nodes):
        if isinstance(n, ast.BinOp) and type(n.op) in ARITH:
            for op in ARITH:
                if op is not type(n.op):
                    yield replace(expr, i, ast.BinOp(left=n.left, op=op(), right=n.right))
        elif isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in CMP:
            for op in CMP[type(n.ops[0])]:
                yield replace(expr, i, ast.Compare(left=n.left, ops=[op()], comparators=n.comparators))
        elif isinstance(n, ast.BoolOp):
            yield replace(expr, i, ast.BoolOp(op=ast.Or() if isinstance(n.op, ast.And) else ast.And(), values=n.values))
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.Not, ast.USub)):
            yield replace(expr, i, n.operand)
        elif isinstance(n, ast.Name) and n.id in SWAP:
            yield replace(expr, i, ast.Name(id=SWAP[n.id], ctx=ast.Load()))
        elif isinstance(n, ast.Constant) and type(n.value) is bool:
            yield replace(expr, i, ast.Constant(not n.value))

def replace(expr, index, new):
    if index == 0:
        return new
    e = copy.deepcopy(expr)
    old = list(ast.walk(expr))[index]
    target_node = list(ast.walk(e))[index]
    for parent in ast.walk(e):
        for field, value in ast.iter_fields(parent):
            if value is target_node:
                setattr(parent, field, new)
                return e
            if isinstance(value, list):
                for k, v in enumerate(value):
                    if v is target_node:
                        value[k] = new
                        return e
    return e

original = ast.unparse(ret.value)
seen = {original}
tried = 0
for m in mutants(ret.value):
    if time.monotonic() - start > 8 or tried >= 300:
        break
    text = ast.unparse(m)
    if text in seen:
        continue
    seen.add(text)
    tried += 1
    ret.value = m
    try:
        code = compile(ast.fix_missing_locations(tree), path, "exec")
    except Exception:
        continue
    ours()
    mm = types.ModuleType(modname)
    mm.__file__ = path
    sys.modules[modname] = mm
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(code, mm.__dict__)
            ok = passes(importlib.import_module(test_mod))
    except BaseException:
        ok = False
    if ok:
        indent = src.splitlines()[at - 1][: len(src.splitlines()[at - 1]) - len(src.splitlines()[at - 1].lstrip())]
        print("%s %s:%d: %sreturn %s" % (tag, rel, at, indent, text))
        print("%s was: %sreturn %s" % (tag, indent, original))
        break
"#;

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
