//! What an "always" answer covers. The narrowest useful scope: one
//! subcommand of a build tool (`cargo test …`), one script (`npm run build
//! …`), the verb of a plain tool (`mkdir …`), and never more than the exact
//! command line for what can do anything (shells, interpreters, `rm`, `git`,
//! package installs). Measured before issue 9: "always" on `rm -f x.o`
//! allowed a later `rm -rf dir`, and on `python x.py` all code.

use super::policy::is_assignment;
use super::shell;

/// Commands whose "always" is never wider than the exact command line:
/// interpreters and shells run anything, these delete or move files, and
/// these reach the network or other machines.
const EXACT_ONLY: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "fish",
    "dash",
    "ksh",
    "csh",
    "tcsh",
    "python",
    "python3",
    "python2",
    "node",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "R",
    "Rscript",
    "java",
    "osascript",
    "pwsh",
    "powershell",
    "rm",
    "rmdir",
    "mv",
    "cp",
    "dd",
    "ln",
    "install",
    "chmod",
    "chown",
    "chgrp",
    "truncate",
    "shred",
    "tee",
    "sed",
    "awk",
    "gawk",
    "xargs",
    "find",
    "env",
    "sudo",
    "su",
    "doas",
    "eval",
    "exec",
    "source",
    ".",
    "nohup",
    "timeout",
    "nice",
    "watch",
    "time",
    "strace",
    "curl",
    "wget",
    "ssh",
    "scp",
    "rsync",
    "nc",
    "ncat",
    "socat",
    "kill",
    "pkill",
    "killall",
    "docker",
    "podman",
    "kubectl",
    "npx",
    "bunx",
    "pipx",
    "uvx",
    "crontab",
    "systemctl",
    "service",
    "mount",
    "umount",
    "git",
];

/// Tools that write only the files they are given and run nothing, by
/// any option: their "always" covers the verb (`mkdir …`), for operands
/// inside the workspace (the sandbox checks). Left out: `sort`
/// (`--compress-program`, `-o`), `rg` (`--pre`), `tree` (`-o`), `date`
/// (`-s`), `file` (`-C`), `diff` (`-l` runs pr), `uniq` (an output operand),
/// `jq` (its program can `import` a module from any folder).
const PLAIN_TOOLS: &[&str] = &[
    "mkdir",
    "touch",
    "echo",
    "printf",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "cut",
    "tr",
    "nl",
    "du",
    "df",
    "stat",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "pwd",
    "which",
    "true",
    "false",
    "test",
    "seq",
    "sleep",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
];

/// True when `key` covers a plain tool's every use (its operands must then
/// be checked each time).
pub fn is_verb_key(key: &str) -> bool {
    PLAIN_TOOLS.contains(&split(key).0)
}

/// Package managers and build tools: "always" covers one subcommand
/// (`cargo test …`), a script run covers that script (`npm run build …`),
/// and installs and publishes are never wider than the exact command.
const WITH_SUBCOMMANDS: &[&str] = &[
    "cargo", "npm", "pnpm", "yarn", "go", "pip", "pip3", "uv", "poetry", "gem", "bundle",
    "composer", "apt", "apt-get", "brew", "conda", "mvn", "gradle", "dotnet", "swift", "make",
    "just", "mix", "stack", "cabal", "meson", "cmake",
];

const INSTALL_LIKE: &[&str] = &[
    "install",
    "i",
    "add",
    "remove",
    "rm",
    "uninstall",
    "publish",
    "exec",
    "x",
    "dlx",
    "link",
    "update",
    "upgrade",
    "ci",
    "get",
    "login",
    "logout",
    "config",
    "set",
    "sync",
    "owner",
    "yank",
    "login",
];

/// What "always" remembers for a command: a prefix (`cargo test`, `npm run
/// build`, `mkdir`) when the command is one plain simple command whose verb
/// allows one, with the options it was given in brackets (`mkdir [-p]`),
/// else the exact command line, marked with a leading `=`.
pub fn key(command: &str) -> String {
    let exact = format!("={}", command.trim());
    let Ok(simples) = shell::parse(command) else {
        return exact;
    };
    let [one] = simples.as_slice() else {
        return exact;
    };
    if !one.redirects.is_empty() || one.words.iter().any(|w| !w.literal()) {
        return exact;
    }
    let words: Vec<&str> = one.words.iter().map(|w| w.text.as_str()).collect();
    let Some((&verb, rest)) = words.split_first() else {
        return exact;
    };
    if verb.contains('/') || is_assignment(verb) || EXACT_ONLY.contains(&verb) {
        return exact;
    }
    // Options are words before `--` that start with `-` or `+`: the
    // scope covers those and no other (`jq -n` is not `jq -L/elsewhere`).
    let mut options: Vec<&str> = Vec::new();
    let mut plain: Vec<&str> = Vec::new();
    let mut ended = false;
    for &w in rest {
        if !ended && w == "--" {
            ended = true;
        } else if !ended && (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 {
            options.push(w);
        } else {
            plain.push(w);
        }
    }
    options.sort_unstable();
    options.dedup();
    let with = |base: String| {
        if options.is_empty() {
            base
        } else {
            format!("{base} [{}]", options.join(" "))
        }
    };
    if PLAIN_TOOLS.contains(&verb) {
        return with(verb.to_string());
    }
    if !WITH_SUBCOMMANDS.contains(&verb) {
        // Unknown tools may run programs through an option (`tar
        // --checkpoint-action=exec=…`): their "always" is the exact line.
        return exact;
    }
    let mut plain = plain.into_iter();
    match plain.next() {
        None if rest.is_empty() => verb.to_string(),
        None => exact,
        Some(sub) if INSTALL_LIKE.contains(&sub) => exact,
        // Every word of `make` and `just` is a target or a variable
        // (`make test SHELL=/x`): the scope is one target and nothing else.
        Some(_) if matches!(verb, "make" | "just") && !plain.as_slice().is_empty() => exact,
        Some(sub) if is_assignment(sub) => exact,
        Some(sub) if matches!(sub, "run" | "run-script") => match plain.next() {
            Some(script) => with(format!("{verb} {sub} {script}")),
            None => exact,
        },
        Some(sub) => with(format!("{verb} {sub}")),
    }
}

/// A key's command part and the options it covers.
fn split(key: &str) -> (&str, Vec<&str>) {
    match key.strip_suffix(']').and_then(|k| k.split_once(" [")) {
        Some((base, opts)) if !key.starts_with('=') => (base, opts.split(' ').collect()),
        _ => (key, Vec::new()),
    }
}

/// True when a remembered "always" key covers the key of a command: the
/// same exact line, or the same prefix with no option it was not granted
/// with.
pub fn covers(granted: &str, wanted: &str) -> bool {
    if granted == wanted {
        return true;
    }
    if granted.starts_with('=') || wanted.starts_with('=') {
        return false;
    }
    let (gb, go) = split(granted);
    let (wb, wo) = split(wanted);
    gb == wb && wo.iter().all(|o| go.contains(o))
}

/// True when `command` falls under a remembered "always" key.
pub fn matches(command: &str, key: &str) -> bool {
    covers(key, &self::key(command))
}

/// The scope of an "always" answer in words, for the approval question.
pub fn describe(key: &str) -> String {
    if key.starts_with('=') {
        return "this exact command".to_string();
    }
    match split(key) {
        (base, opts) if opts.is_empty() => format!("`{base} …` commands (no options)"),
        (base, opts) => format!("`{base} …` commands (options: {})", opts.join(" ")),
    }
}

/// An "always" key as the user would say it.
pub fn words(key: &str) -> String {
    match key.strip_prefix("file:") {
        Some(path) => format!("every change to {path}"),
        None => match key.strip_prefix('=') {
            Some(cmd) => format!("`{cmd}`"),
            None => describe(key),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_keys_are_never_the_bare_verb_for_dangerous_tools() {
        assert_eq!(key("cargo test --lib"), "cargo test [--lib]");
        assert_eq!(key("npm run build"), "npm run build");
        assert_eq!(key("npm install left-pad"), "=npm install left-pad");
        assert_eq!(key("mkdir -p out"), "mkdir [-p]");
        assert_eq!(key("sort -o x y"), "=sort -o x y");
        assert!(is_verb_key("mkdir") && !is_verb_key("cargo test"));
        assert!(is_verb_key("mkdir [-p]"));
        assert_eq!(key("rm -f a.o"), "=rm -f a.o");
        assert_eq!(
            key("tar cf x.tar --checkpoint-action=exec=sh a"),
            "=tar cf x.tar --checkpoint-action=exec=sh a"
        );
        assert_eq!(key("python x.py"), "=python x.py");
        assert_eq!(key("git push"), "=git push");
        assert_eq!(key("echo hi > out.txt"), "=echo hi > out.txt");
        assert_eq!(key("make && rm -rf /"), "=make && rm -rf /");
        assert!(!matches("cargo test --release", "cargo test"));
        assert!(matches(
            "cargo test --lib",
            &key("cargo test --release --lib")
        ));
        assert!(matches("cargo test", &key("cargo test --lib")));
        assert!(!matches("cargo build", "cargo test"));
        assert!(!matches("cargo test > /etc/x", "cargo test"));
        assert!(!matches("cargo test; rm -rf ~", "cargo test"));
        assert!(!matches("rm -rf dir", &key("rm -f x.o")));
        assert!(matches("rm -f x.o", &key("rm -f x.o")));
        assert!(!matches("npm run deploy", "npm run build"));
        assert_eq!(
            describe("cargo test"),
            "`cargo test …` commands (no options)"
        );
        assert_eq!(
            describe("cargo test [--lib]"),
            "`cargo test …` commands (options: --lib)"
        );
        assert_eq!(describe("=rm x"), "this exact command");
    }

    #[test]
    fn an_always_scope_covers_only_the_options_it_was_granted_with() {
        let granted = key("mkdir -p a");
        assert_eq!(granted, "mkdir [-p]");
        assert!(matches("mkdir -p b", &granted));
        assert!(matches("mkdir c", &granted));
        assert!(!matches("mkdir -p -m 777 c", &granted));
        // jq's program can import a module from any folder (red-team
        // round 30): its "always" is the exact line.
        assert_eq!(key("jq -n 1"), "=jq -n 1");
        assert!(!matches(
            r#"jq -n 'import "config" as $c {search: "~/.docker"}; $c'"#,
            &key("jq -n 1")
        ));
        // `make test` covers that target, not another or a variable.
        assert_eq!(key("make test"), "make test");
        assert!(!matches("make test pwn", &key("make test")));
        assert!(!matches("make test SHELL=/tmp/sh", &key("make test")));
        assert!(!matches("make SHELL=/tmp/sh", &key("make")));
        // After `--` a word is an operand, whatever it looks like.
        assert_eq!(key("touch -- -x"), "touch");
        assert!(matches("npm run build", &key("npm run build -- --watch")));
        assert!(!matches(
            "npm run build --foreground-scripts",
            &key("npm run build")
        ));
        // A key stored before options were kept still means no options.
        assert!(matches("mkdir out", "mkdir"));
        assert!(!matches("mkdir -m 777 out", "mkdir"));
    }
}
