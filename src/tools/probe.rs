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

/// What a probe ran and what came of it.
pub struct Probe {
    /// The call as the question wrote it, and the file defining it.
    pub call: String,
    pub file: String,
    /// What the call returned (its `repr`/JSON), or the error it raised.
    pub result: Result<String, String>,
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
    call: &crate::agent::harness::AskedCall,
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

/// The values of the local variables where `command` (a plain
/// `python3 script.py args`) crashes, as lines for the model; None when
/// the command is not that, did not crash, or there is no fence.
pub async fn crash_values(
    env: &ToolEnv,
    command: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    if !env.sandbox.fence().is_on()
        || command.contains(['\'', '"', '$', '|', ';', '&', '<', '>', '`', '\\', '*', '?'])
    {
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
    // A marker the script cannot know in advance, so its own output
    // cannot pass for the values.
    let tag = format!(
        "MM-VALUES-{:x}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
        std::process::id()
    );
    let mut args = vec!["-c", PY_VALUES, &tag];
    args.extend(&words[1..]);
    let root = env.sandbox.root();
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let cmd = env.sandbox.command("python3", &args, root, plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    let mut out = Vec::new();
    let mut inside = false;
    let marker = format!("{tag} ");
    // Values are the program's text: no control characters reach the
    // model.
    let clean = |l: &str| -> String { l.chars().filter(|c| !c.is_control()).collect() };
    for line in f.output.lines() {
        if let Some(head) = line.strip_prefix(&marker) {
            out.push(format!("[values in {} when it failed]", clean(head)));
            inside = true;
        } else if inside && line.starts_with("  ") {
            out.push(clean(line));
        } else {
            inside = false;
        }
    }
    (!out.is_empty()).then(|| out.join("\n"))
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
            except BaseException as x:
                v = "raises " + type(x).__name__
            out.append("  %s = %s" % (text, v))
    walk(rets[0].value)
    return out
def tracer(frame, event, arg):
    if event != "call" or len(done) >= 2:
        return None
    back, fn = frame.f_back, os.path.abspath(frame.f_code.co_filename)
    if back is None or os.path.abspath(back.f_code.co_filename) != test_abs or back.f_lineno != line:
        return None
    if not fn.startswith(root + os.sep) or fn == test_abs:
        return None
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    args = ", ".join("%s=%s" % (k, show(frame.f_locals.get(k))) for k in names if k != "self")
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

/// The failing Python test a failure's traceback ends in: its file, the
/// line in it that failed, and the test function's name.
fn failing_python_test(failure: &str) -> Option<(String, usize, String)> {
    static FRAME: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        crate::agent::harness::regex(r#"File "(?:\./)?([\w./-]+\.py)", line (\d+), in (\w+)"#).ok()
    });
    FRAME
        .as_ref()?
        .captures_iter(failure)
        .filter(|c| crate::agent::harness::is_test_file(&c[1]))
        .filter_map(|c| Some((c[1].to_string(), c[2].parse().ok()?, c[3].to_string())))
        .last()
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
    let tag = format!(
        "MM-TRACE-{:x}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
        std::process::id()
    );
    let line_arg = line.to_string();
    let args = ["-c", PY_TRACE, &tag, &file, &line_arg, &name];
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let cmd = env.sandbox.command("python3", &args, root, plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    let clean = |l: &str| -> String { l.chars().filter(|c| !c.is_control()).collect() };
    let marker = format!("{tag} ");
    let mut out = Vec::new();
    let mut inside = false;
    for l in f.output.lines() {
        if let Some(head) = l.strip_prefix(&marker) {
            out.push(format!("[{file}:{line} calls {}]", clean(head)));
            inside = true;
        } else if inside && l.starts_with("  ") {
            out.push(clean(l));
        } else {
            inside = false;
        }
    }
    (!out.is_empty()).then(|| out.join("\n"))
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
