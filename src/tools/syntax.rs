//! Where no language server checks a file, the interpreter's own parser
//! does: `node --check` for JavaScript, Python's `ast.parse` for Python.
//! Neither runs the file's code; both run in the fence, read-only, when
//! there is one. The verdict has the language server's shape, so the
//! turn's end-of-turn check treats both alike.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ToolEnv;
use crate::sandbox::{Access, RunPlan};

const PY_PARSE: &str = "import ast, sys\nsrc = open(sys.argv[1], encoding='utf-8').read()\nast.parse(src, sys.argv[1])\n";

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
    let plan = RunPlan {
        access: env.sandbox.fence().is_on().then_some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
    let cmd = env.sandbox.command(program, &args, root, plan);
    let f = super::bash::run(cmd, Duration::from_secs(20), cancel)
        .await
        .ok()?;
    if f.timed_out || f.cancelled {
        return None;
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
    let plan = RunPlan {
        access: env.sandbox.fence().is_on().then_some(Access::ReadOnly),
        net: false,
        git_guard: false,
    };
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
