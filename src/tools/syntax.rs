//! Where no language server checks a file, the interpreter's own parser
//! does: `node --check` for JavaScript, Python's `ast.parse` for Python.
//! Neither runs the file's code; both run in the fence, read-only, and
//! without a fence only under `full` (the interpreter may be the
//! project's own). The verdict has the language server's shape, so the
//! turn's end-of-turn check treats both alike.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ToolEnv;
use crate::sandbox::{Access, RunPlan};

const PY_PARSE: &str = "import ast, sys\nsrc = open(sys.argv[1], encoding='utf-8').read()\nast.parse(src, sys.argv[1])\n";

/// How a parser runs: in the fence, read-only; without one only under
/// `full`. An interpreter found on PATH can still be the project's (a
/// pyenv shim reads the workspace's `.python-version` and runs a venv's
/// `python3`), so without the fence nothing runs unasked (red-team
/// round 18).
fn parser_plan(env: &ToolEnv) -> Option<RunPlan> {
    let fenced = env.sandbox.fence().is_on();
    (fenced || env.sandbox.mode() == crate::config::SandboxMode::Full).then_some(RunPlan {
        access: fenced.then_some(Access::ReadOnly),
        net: false,
        git_guard: false,
    })
}

/// The parser's verdict on the file as written, or None when there is
/// no parser for its language here.
pub async fn check(
    env: &ToolEnv,
    rel: &str,
    cancel: &CancellationToken,
) -> Option<crate::lsp::Check> {
    // `./` so a file named like an option stays a file.
    let path = format!("./{rel}");
    let (program, args): (&str, Vec<&str>) = match Path::new(rel).extension()?.to_str()? {
        "py" => ("python3", vec!["-I", "-c", PY_PARSE, &path]),
        "js" | "cjs" | "mjs" => ("node", vec!["--check", &path]),
        _ => return None,
    };
    crate::lsp::find_program(program)?;
    let root = env.sandbox.root();
    let plan = parser_plan(env)?;
    let cmd = env.sandbox.command(program, &args, root, plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
    }
    if f.exit_code == Some(0)
        && matches!(Path::new(rel).extension()?.to_str()?, "js" | "cjs")
        && let Ok(text) = std::fs::read_to_string(root.join(rel))
        && let Some(why) = mixed_modules(&text)
    {
        // Node takes a file with `export` for an ES module, where
        // `module.exports` and `require` do not exist: it parses, and
        // fails when loaded.
        return Some(crate::lsp::Check {
            text: format!("[{rel} mixes module systems:] {why}"),
            errors: 1,
            new_errors: Some(1),
            baseline: Some(Vec::new()),
            now: vec![format!("{rel} mixes module systems")],
        });
    }
    if f.exit_code == Some(0) {
        return Some(crate::lsp::Check {
            text: String::new(),
            errors: 0,
            new_errors: Some(0),
            baseline: Some(Vec::new()),
            now: Vec::new(),
        });
    }
    let root_text = root.to_string_lossy();
    let lines: Vec<String> = f
        .output
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("Node.js v"))
        .map(|l| l.replace(root_text.as_ref(), "."))
        .collect();
    let tail: Vec<String> = lines.iter().rev().take(8).rev().cloned().collect();
    let first = lines
        .iter()
        .find(|l| l.contains("Error"))
        .cloned()
        .unwrap_or_else(|| "does not parse".into());
    Some(crate::lsp::Check {
        text: format!("[{rel} does not parse ({program}):]\n{}", tail.join("\n")),
        errors: 1,
        new_errors: Some(1),
        baseline: Some(Vec::new()),
        now: vec![first],
    })
}

/// A JavaScript file with both ES module statements (`export`, `import
/// … from`) and CommonJS (`module.exports`, `exports.x =`, `require(`):
/// what to tell the model, or None.
pub fn mixed_modules(text: &str) -> Option<String> {
    let mut esm: Option<&str> = None;
    let mut cjs: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") || t.starts_with('*') {
            continue;
        }
        if esm.is_none() {
            if statement_at(t, "export") {
                esm = Some("export");
            } else if t.starts_with("import ")
                && (t.contains(" from ") || t.contains('"') || t.contains('\''))
            {
                esm = Some("import");
            }
        }
        if cjs.is_none() {
            if t.contains("module.exports") {
                cjs = Some("module.exports");
            } else if t.starts_with("exports.") {
                cjs = Some("exports.");
            } else if t.contains("require(") {
                cjs = Some("require(");
            }
        }
    }
    let (esm, cjs) = (esm?, cjs?);
    Some(format!(
        "it has an `{esm}` statement (ES module) and `{cjs}` (CommonJS). Node loads a file with `{esm}` as an ES module, where `module.exports` and `require` do not exist, so it fails when loaded. Use one system: the one the file already used."
    ))
}

/// `word` as a statement in `line`: at its start or after `;` or `}`,
/// followed by a space, `{` or `*` (a model put `export { f };` after a
/// function on one line).
fn statement_at(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].trim_end();
        let after = line[at + word.len()..].chars().next();
        (before.is_empty() || before.ends_with(';') || before.ends_with('}'))
            && matches!(after, Some(' ' | '{' | '*'))
    })
}

/// Whether `content` would parse as the file `rel` (by its extension),
/// read from stdin so nothing is written; None when there is no parser
/// for its language here or it did not answer. JavaScript counts as
/// parsing when it parses as a script or as a module.
pub async fn parses(
    env: &ToolEnv,
    rel: &str,
    content: &str,
    cancel: &CancellationToken,
) -> Option<bool> {
    let tries: Vec<(&str, Vec<&str>)> = match Path::new(rel).extension()?.to_str()? {
        "py" => vec![(
            "python3",
            vec![
                "-I",
                "-c",
                "import ast, sys\nast.parse(sys.stdin.buffer.read())\n",
            ],
        )],
        "js" | "cjs" => vec![
            ("node", vec!["--check", "-"]),
            ("node", vec!["--check", "--input-type=module", "-"]),
        ],
        "mjs" => vec![("node", vec!["--check", "--input-type=module", "-"])],
        _ => return None,
    };
    let root = env.sandbox.root();
    let plan = parser_plan(env)?;
    let mut answered = false;
    for (program, args) in tries {
        crate::lsp::find_program(program)?;
        let cmd = env.sandbox.command(program, &args, root, plan);
        let Ok(f) = super::bash::run_with_input(
            cmd,
            Some(content.as_bytes().to_vec()),
            Duration::from_secs(20),
            cancel,
        )
        .await
        else {
            continue;
        };
        if f.timed_out || f.cancelled {
            continue;
        }
        answered = true;
        if f.exit_code == Some(0) {
            return Some(true);
        }
    }
    answered.then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_mixing_export_and_module_exports_is_named() {
        let mixed = "function a() {}\nfunction b() {} export { b };\nmodule.exports = { a };\n";
        assert!(mixed_modules(mixed).unwrap().contains("`export` statement"));
        assert!(mixed_modules("const x = require('x');\nmodule.exports = { x };\n").is_none());
        assert!(mixed_modules("import x from './x.js';\nexport const y = x;\n").is_none());
        assert!(mixed_modules("// export { a }\nmodule.exports = {};\n").is_none());
    }
}
