//! Which command checks the work: the project's test runner, or the command
//! the request names.

use super::*;

/// The command that runs the project's tests, when the workspace says
/// which: pytest or unittest for Python test files, `cargo test`,
/// `go test ./...`, `npm test` when package.json has a test script.
pub fn detect_verify(root: &Path) -> Option<String> {
    if root.join("Cargo.toml").is_file() {
        return Some("cargo test --offline -q".into());
    }
    if root.join("go.mod").is_file() {
        return Some("go test ./...".into());
    }
    // The workspace's own file, not through a link, and not a FIFO or a
    // device that would hang or fill memory.
    if let Ok(bytes) = crate::paths::read_regular(&root.join("package.json"), 1 << 20)
        && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes)
        && let Some(test) = v["scripts"]["test"].as_str()
        && !test.contains("no test specified")
    {
        return Some("npm test --silent".into());
    }
    if has_python_tests(root) {
        return Some(if python_has_pytest() {
            "python3 -m pytest -q -x --no-header -p no:cacheprovider".into()
        } else {
            "python3 -m unittest -q".into()
        });
    }
    None
}

pub(super) fn has_python_tests(root: &Path) -> bool {
    // A plain walk, three levels deep: the ignore-aware walker compiles
    // every ignore file it meets, a megabyte of memory for one answer.
    pub(super) fn look(dir: &Path, depth: u32, budget: &mut u32) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for e in entries.flatten() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_file()
                && name.ends_with(".py")
                && (name.starts_with("test_") || name.ends_with("_test.py"))
            {
                return true;
            }
            let skip = name.starts_with('.')
                || matches!(
                    name.as_ref(),
                    "node_modules" | "target" | "venv" | "__pycache__" | "build" | "dist"
                );
            if kind.is_dir() && !skip && depth > 0 && look(&e.path(), depth - 1, budget) {
                return true;
            }
        }
        false
    }
    look(root, 2, &mut 2_000)
}

/// Whether pytest is installed for the host's python3 (found outside the
/// workspace), seen on disk without running anything: nothing the
/// workspace holds (a `pytest.py`, a `python3` in `.venv/bin`) runs here,
/// outside the fence.
pub(super) fn python_has_pytest() -> bool {
    static HAS: LazyLock<bool> = LazyLock::new(|| {
        let Some(python) =
            crate::sandbox::host::program("python3").and_then(|p| std::fs::canonicalize(p).ok())
        else {
            return false;
        };
        let mut libs: Vec<std::path::PathBuf> = python
            .parent()
            .and_then(Path::parent)
            .map(|prefix| prefix.join("lib"))
            .into_iter()
            .collect();
        if let Some(home) = std::env::var_os("HOME") {
            libs.push(Path::new(&home).join(".local/lib"));
        }
        libs.iter().any(|lib| has_pytest_under(lib))
    });
    *HAS
}

/// `lib/python3*/{site,dist}-packages/pytest` under `lib`.
pub(super) fn has_pytest_under(lib: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(lib) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("python3")
            && ["site-packages", "dist-packages"]
                .iter()
                .any(|p| e.path().join(p).join("pytest").is_dir())
    })
}

/// Programs whose command line a request may quote as the thing that
/// fails (`python3 app.py` crashes, `cargo test` fails).
pub(super) const RUNNERS: &[&str] = &[
    "python", "python3", "pytest", "node", "npm", "npx", "cargo", "go", "make", "ruby", "perl",
    "sh", "bash", "deno", "yarn", "pnpm", "java", "mvn", "gradle", "dotnet", "php",
];

/// The command a request quotes in backticks (or after "run"), when it
/// looks like one of the project's programs or test runners.
pub fn named_command(prompt: &str) -> Option<String> {
    static TICKS: LazyLock<Option<regex::bytes::Regex>> =
        LazyLock::new(|| bytes_regex(r"`((?-u:[^`\n]){2,200})`").ok());
    if !prompt.contains('`') {
        return None;
    }
    let re = TICKS.as_ref()?;
    re.captures_iter(prompt.as_bytes())
        .filter_map(|c| c.get(1))
        .filter_map(|m| std::str::from_utf8(m.as_bytes()).ok())
        .map(|m| m.trim().trim_start_matches("$ ").to_string())
        .find(|cmd| {
            let first = cmd.split_whitespace().next().unwrap_or("");
            (RUNNERS.contains(&first) || first.starts_with("./"))
                && cmd.split_whitespace().count() >= 2
                || matches!(first, "pytest" | "make")
        })
}
