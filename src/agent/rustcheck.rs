//! The request's examples as checks on a Rust crate. A check cannot be a
//! script on stdin here: mm writes a small program in a temporary folder
//! outside the workspace that depends on the crate by path, builds it
//! with cargo (offline) and runs it. Each check compares the call's
//! `Debug` text with the expected value, so the value needs no type; a
//! check that does not compile (an argument of the wrong type, a private
//! function) is left out by its line in the compiler's errors, as a
//! Python check that does not parse is.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::examples::{Example, Expect};
use super::harness;

/// The crate a source file belongs to, as the check program uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crate {
    /// The crate's folder, relative to the workspace ("" at its root).
    pub dir: String,
    /// The package name in its `Cargo.toml`.
    pub package: String,
    /// The module of the file (`geo::shapes`), when it is not the root.
    pub module: Option<String>,
}

/// The package name of a `Cargo.toml`: the `name` of its `[package]`.
fn package_name(toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((key, value)) = t.split_once('=') else {
            continue;
        };
        if key.trim() == "name" {
            let name = value.trim().trim_matches('"');
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            return ok.then(|| name.to_string());
        }
    }
    None
}

/// The library crate `file` (relative to `root`) is part of, when it has
/// one: the nearest `Cargo.toml` above it inside the workspace, with a
/// `src/lib.rs`, and the file under that `src/`.
pub fn crate_of(root: &Path, file: &str) -> Option<Crate> {
    // The workspace's path becomes a TOML string in the program's
    // manifest.
    if root
        .to_string_lossy()
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        return None;
    }
    let rel = Path::new(file);
    let mut dir = rel.parent();
    while let Some(d) = dir {
        let toml = root.join(d).join("Cargo.toml");
        // The workspace's code may have put anything there (a FIFO read
        // forever, red-team round 28): a regular file, read without
        // following a link, or no crate.
        match std::fs::symlink_metadata(&toml) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                dir = d.parent();
                continue;
            }
            Ok(m) if m.is_file() => {}
            _ => return None,
        }
        if let Ok(text) = crate::paths::read_checked_text(&toml) {
            let package = package_name(&text)?;
            if !root.join(d).join("src/lib.rs").is_file() {
                return None;
            }
            let in_src = rel.strip_prefix(d).ok()?.strip_prefix("src").ok()?;
            let mut parts: Vec<String> = in_src
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            let ident = |p: &String| {
                !p.is_empty()
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !p.starts_with(|c: char| c.is_ascii_digit())
            };
            if !parts.iter().all(ident) || parts.first().is_some_and(|p| p == "main") {
                return None;
            }
            // The folder goes into a shell command and a TOML string:
            // plain names only.
            let dir = d.to_string_lossy().into_owned();
            if !dir
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
            {
                return None;
            }
            return Some(Crate {
                dir,
                package,
                module: (!parts.is_empty()).then(|| parts.join("::")),
            });
        }
        return None;
    }
    None
}

/// The expected value as the `Debug` text of the value it writes, or
/// None when it is not a plain value (an expression, a variable, another
/// language's word): `Some("IV".to_string())` is `Some("IV")`,
/// `vec![1, 2]` is `[1, 2]`, `1994u32` is `1994`.
pub fn want(value: &str) -> Option<String> {
    static FROM: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r#"String::from\(("(?:[^"\\]|\\.)*")\)"#).ok());
    static SUFFIX: LazyLock<Option<Regex>> = LazyLock::new(|| {
        harness::regex(r"(\d)_?(?:u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64)\b")
            .ok()
    });
    static STRING: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)+'"#).ok());
    static WORD: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r"[A-Za-z_][A-Za-z0-9_]*").ok());
    let mut v = value.trim().trim_matches('`').trim().to_string();
    for (from, to) in [
        (".to_string()", ""),
        (".to_owned()", ""),
        (".into()", ""),
        ("vec![", "["),
        ("&\"", "\""),
        ("&[", "["),
    ] {
        v = v.replace(from, to);
    }
    v = FROM.as_ref()?.replace_all(&v, "$1").into_owned();
    v = SUFFIX.as_ref()?.replace_all(&v, "$1").into_owned();
    // Only literals and the words of a plain value may be left.
    let bare = STRING.as_ref()?.replace_all(&v, "\"\"");
    let plain = WORD.as_ref()?.find_iter(&bare).all(|w| {
        matches!(
            w.as_str(),
            "Some" | "None" | "Ok" | "Err" | "true" | "false" | "e"
        ) || bare[..w.start()].ends_with(|c: char| c.is_ascii_digit())
    }) && bare
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || "\"\"'()[],.- \t".contains(c));
    (plain && !v.is_empty()).then_some(v)
}

/// A Rust string literal of `s`.
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// The marker that ends each line of the program a check or an import
/// is on, so a compiler error on that line says which to leave out.
const CHECK_MARK: &str = "// mm-check ";
const USE_MARK: &str = "// mm-use ";

/// The check program: imports the crate (and the file's module), runs
/// each check on its own line, prints one `FAILED:` line a failure; exit
/// 1 on a failure, 3 when no check ran, 0 when all pass. `skip_checks`
/// and `skip_uses` are lines left out after a build named them.
pub fn program(
    krate: &Crate,
    checks: &[Example],
    skip_checks: &[usize],
    skip_uses: &[usize],
) -> String {
    let mut s = String::from(
        "#![allow(unused_imports, unused_parens, clippy::all)]\nuse std::panic::{AssertUnwindSafe, catch_unwind};\n",
    );
    let mut uses = vec!["use checked::*;".to_string()];
    if let Some(m) = &krate.module {
        uses.push(format!("use checked::{m}::*;"));
    }
    for (i, u) in uses.iter().enumerate() {
        if !skip_uses.contains(&i) {
            s.push_str(&format!("{u} {USE_MARK}{i}\n"));
        }
    }
    s.push_str(concat!(
        "struct Tally { checked: u32, failed: u32 }\n",
        "fn squash(s: &str) -> String { s.chars().filter(|c| !c.is_whitespace()).collect() }\n",
        "fn same(got: &str, want: &str) -> bool {\n",
        "    let (g, w) = (squash(got), squash(want));\n",
        "    g == w || matches!((g.parse::<f64>(), w.parse::<f64>()), (Ok(a), Ok(b)) if a == b)\n",
        "}\n",
        "fn why(e: Box<dyn std::any::Any + Send>) -> String {\n",
        "    e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned()).unwrap_or_default()\n",
        "}\n",
        "fn check(t: &mut Tally, shown: &str, want: &str, f: impl FnOnce() -> String) {\n",
        "    t.checked += 1;\n",
        "    match catch_unwind(AssertUnwindSafe(f)) {\n",
        "        Ok(got) if same(&got, want) => {}\n",
        "        Ok(got) => { t.failed += 1; println!(\"FAILED: {shown}  (it gives {got})\"); }\n",
        "        Err(e) => { t.failed += 1; println!(\"FAILED: {shown}  (it panics: {})\", why(e)); }\n",
        "    }\n",
        "}\n",
        "fn check_panics(t: &mut Tally, shown: &str, f: impl FnOnce() -> String) {\n",
        "    t.checked += 1;\n",
        "    if let Ok(got) = catch_unwind(AssertUnwindSafe(f)) { t.failed += 1; println!(\"FAILED: {shown}  (it gives {got})\"); }\n",
        "}\n",
        "fn main() {\n",
        "    std::panic::set_hook(Box::new(|_| {}));\n",
        "    let mut t = Tally { checked: 0, failed: 0 };\n",
    ));
    for (i, c) in checks.iter().enumerate() {
        if skip_checks.contains(&i) {
            continue;
        }
        let line = match &c.expect {
            Expect::Value(v) => {
                let Some(w) = want(v) else {
                    continue;
                };
                let shown = format!("assert_eq!({}, {v})", c.call);
                format!(
                    "    check(&mut t, {}, {}, || format!(\"{{:?}}\", {}));",
                    lit(&shown),
                    lit(&w),
                    c.call
                )
            }
            Expect::Raises(_) => {
                let shown = format!("{} panics", c.call);
                format!(
                    "    check_panics(&mut t, {}, || format!(\"{{:?}}\", {}));",
                    lit(&shown),
                    c.call
                )
            }
        };
        // A call that spans lines would hide which check failed to build.
        if c.call.contains('\n') {
            continue;
        }
        s.push_str(&format!("{line} {CHECK_MARK}{i}\n"));
    }
    s.push_str(
        "    std::process::exit(if t.checked == 0 { 3 } else if t.failed > 0 { 1 } else { 0 });\n}\n",
    );
    s
}

/// The shell command that builds the program in a temporary folder
/// (nothing is written to the workspace) and runs it. A build that
/// fails prints its errors as `FAILED:` lines, the workspace's paths
/// made relative.
pub fn command(krate: &Crate, program: &str) -> String {
    let dir = if krate.dir.is_empty() {
        String::new()
    } else {
        format!("/{}", krate.dir)
    };
    format!(
        concat!(
            "d=$(mktemp -d) || exit 3\n",
            "mkdir -p \"$d/src\" || exit 3\n",
            "printf '[package]\\nname = \"mm-request-checks\"\\nversion = \"0.0.0\"\\nedition = \"2021\"\\n[dependencies]\\nchecked = {{ path = \"%s\", package = \"{package}\" }}\\n[workspace]\\n' \"$PWD{dir}\" > \"$d/Cargo.toml\"\n",
            "cat > \"$d/src/main.rs\" <<'MM_REQUEST_CHECKS'\n{program}MM_REQUEST_CHECKS\n",
            "if ! out=$(CARGO_TARGET_DIR=\"$d/target\" cargo build --offline -q --manifest-path \"$d/Cargo.toml\" 2>&1); then\n",
            "  printf '%s\\n' \"$out\" | grep -E '^error|^ *--> ' | sed \"s|$PWD/||\" | sed 's/^/FAILED: /' | head -40\n",
            "  rm -rf \"$d\"; exit 1\n",
            "fi\n",
            "\"$d/target/debug/mm-request-checks\"; s=$?\n",
            "rm -rf \"$d\"; exit $s"
        ),
        package = krate.package,
        dir = dir,
        program = program,
    )
}

/// The checks and imports of `program` that a failed build's errors
/// point at (`--> src/main.rs:LINE`): (check indexes, import indexes).
/// Errors elsewhere (in the crate itself) point at none.
pub fn bad_lines(output: &str, program: &str) -> (Vec<usize>, Vec<usize>) {
    static AT: LazyLock<Option<Regex>> =
        LazyLock::new(|| harness::regex(r"--> src/main\.rs:(\d+):").ok());
    let lines: Vec<&str> = program.lines().collect();
    let (mut checks, mut uses) = (Vec::new(), Vec::new());
    let Some(re) = AT.as_ref() else {
        return (checks, uses);
    };
    for c in re.captures_iter(output) {
        let Some(line) = c[1]
            .parse::<usize>()
            .ok()
            .and_then(|n| lines.get(n.checked_sub(1)?))
        else {
            continue;
        };
        let mark = |m: &str| {
            line.rsplit_once(m)
                .and_then(|(_, n)| n.trim().parse::<usize>().ok())
        };
        if let Some(i) = mark(CHECK_MARK) {
            if !checks.contains(&i) {
                checks.push(i);
            }
        } else if let Some(i) = mark(USE_MARK)
            && !uses.contains(&i)
        {
            uses.push(i);
        }
    }
    (checks, uses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_values_read_as_debug_text_or_not_at_all() {
        assert_eq!(want("Some(1994)").as_deref(), Some("Some(1994)"));
        assert_eq!(want("None").as_deref(), Some("None"));
        assert_eq!(
            want("Some(\"IV\".to_string())").as_deref(),
            Some("Some(\"IV\")")
        );
        assert_eq!(want("vec![1u32, 2]").as_deref(), Some("[1, 2]"));
        assert_eq!(
            want("Ok(String::from(\"a b\"))").as_deref(),
            Some("Ok(\"a b\")")
        );
        assert_eq!(want("-2.5").as_deref(), Some("-2.5"));
        assert_eq!(want("1e3").as_deref(), Some("1e3"));
        // Not a plain value: an expression, a variable, Python's words.
        assert_eq!(want("to_roman(4)"), None);
        assert_eq!(want("n + 1"), None);
        assert_eq!(want("True"), None);
        assert_eq!(want("the numeral"), None);
    }

    #[test]
    fn the_crate_and_module_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("geo/src/shapes")).unwrap();
        std::fs::write(
            root.join("geo/Cargo.toml"),
            "[package]\nname = \"geo-kit\"\nversion = \"0.1.0\"\n\n[dependencies]\nname = \"x\"\n",
        )
        .unwrap();
        std::fs::write(root.join("geo/src/lib.rs"), "pub mod shapes;\n").unwrap();
        let c = crate_of(root, "geo/src/shapes/circle.rs").unwrap();
        assert_eq!(c.dir, "geo");
        assert_eq!(c.package, "geo-kit");
        assert_eq!(c.module.as_deref(), Some("shapes::circle"));
        assert_eq!(crate_of(root, "geo/src/lib.rs").unwrap().module, None);
        assert_eq!(
            crate_of(root, "geo/src/shapes/mod.rs")
                .unwrap()
                .module
                .as_deref(),
            Some("shapes")
        );
        // No library to depend on: no checks.
        std::fs::remove_file(root.join("geo/src/lib.rs")).unwrap();
        assert_eq!(crate_of(root, "geo/src/shapes/circle.rs"), None);
        assert_eq!(crate_of(root, "loose.rs"), None);
        // A FIFO where a Cargo.toml goes is no crate, and no wait.
        std::fs::create_dir_all(root.join("f/src")).unwrap();
        nix::unistd::mkfifo(&root.join("f/Cargo.toml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(root.join("f/src/lib.rs"), "").unwrap();
        assert_eq!(crate_of(root, "f/src/lib.rs"), None);
        // A folder name that is shell or TOML syntax: no checks.
        let odd = root.join("$(touch x)\"");
        std::fs::create_dir_all(odd.join("src")).unwrap();
        std::fs::write(odd.join("Cargo.toml"), "[package]\nname = \"odd\"\n").unwrap();
        std::fs::write(odd.join("src/lib.rs"), "").unwrap();
        assert_eq!(crate_of(root, "$(touch x)\"/src/lib.rs"), None);
    }

    fn value(call: &str, v: &str) -> Example {
        Example {
            call: call.into(),
            expect: Expect::Value(v.into()),
        }
    }

    /// Builds and runs the check program against a real crate with cargo,
    /// as mm does (outside the fence here).
    #[test]
    fn checks_run_against_a_real_crate_and_a_bad_check_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"half-way\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/lib.rs"),
            "pub fn half(n: u32) -> Option<u32> {\n    if n % 2 == 0 { Some(n / 2) } else { None }\n}\npub fn name(n: u32) -> String {\n    if n == 0 { panic!(\"zero\") }\n    format!(\"n{n}\")\n}\n",
        )
        .unwrap();
        let krate = crate_of(root, "src/lib.rs").unwrap();
        let checks = vec![
            value("half(4)", "Some(2)"),
            value("half(3)", "Some(1)"),
            // Does not compile: a string where a number goes.
            value("half(\"x\")", "None"),
            value("name(7)", "\"n7\".to_string()"),
            value("name(0)", "\"n0\""),
        ];
        let run = |program: &str| {
            let out = std::process::Command::new("sh")
                .args(["-c", &command(&krate, program)])
                .current_dir(root)
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let first = program(&krate, &checks, &[], &[]);
        let (code, out) = run(&first);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.starts_with("FAILED: error"), "{out}");
        let (bad, uses) = bad_lines(&out, &first);
        assert_eq!((bad.clone(), uses), (vec![2], vec![]), "{out}");
        let (code, out) = run(&program(&krate, &checks, &bad, &[]));
        assert_eq!(code, Some(1), "{out}");
        let failed: Vec<&str> = out.lines().collect();
        assert_eq!(
            failed,
            [
                "FAILED: assert_eq!(half(3), Some(1))  (it gives None)",
                "FAILED: assert_eq!(name(0), \"n0\")  (it panics: zero)"
            ],
            "{out}"
        );
        // Nothing was written to the workspace.
        assert!(!root.join("target").exists() && !root.join("Cargo.lock").exists());
    }
}
