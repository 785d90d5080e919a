//! Runs one call the user asks about ("what does `discount(200, 'gold')`
//! return?") instead of letting a small model work it out in its head:
//! the function is imported from the workspace file that defines it and
//! called with the literal arguments from the question, in the fence,
//! read-only, without network. Only literal arguments; never without a
//! fence.

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

/// Calls `name(args)` from `file` and returns what it gives. None when
/// there is no fence, no interpreter, or the run timed out.
pub async fn call(
    env: &ToolEnv,
    file: &str,
    name: &str,
    args: &str,
    cancel: &CancellationToken,
) -> Option<Probe> {
    if !env.sandbox.fence().is_on() {
        return None;
    }
    let (program, code) = if let Some(stem) = file.strip_suffix(".py") {
        let module = stem.replace('/', ".");
        (
            "python3",
            format!("from {module} import {name}\nprint(repr({name}({args})))\n"),
        )
    } else {
        (
            "node",
            format!(
                "const m = require('./{file}');\nconst f = typeof m === 'function' && m.name === '{name}' ? m : m['{name}'];\nconsole.log(JSON.stringify(f({args})));\n"
            ),
        )
    };
    crate::lsp::find_program(program)?;
    let flag = if program == "node" { "-e" } else { "-c" };
    let root = env.sandbox.root();
    let plan = RunPlan {
        access: Some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let cmd = env.sandbox.command(program, &[flag, &code], root, plan);
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
        call: format!("{name}({args})"),
        file: file.to_string(),
        result,
    })
}

/// Runs the script again under a wrapper that, when it raises, prints
/// the values of the variables in the innermost workspace frames.
const PY_VALUES: &str = r#"import os, runpy, sys, types
sys.argv = sys.argv[1:]
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
            print("MM-VALUES %s at %s:%d" % (f.f_code.co_name, where, line))
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
    let mut args = vec!["-c", PY_VALUES];
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
    for line in f.output.lines() {
        if let Some(head) = line.strip_prefix("MM-VALUES ") {
            out.push(format!("[values in {head} when it failed]"));
            inside = true;
        } else if inside && line.starts_with("  ") {
            out.push(line.to_string());
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
