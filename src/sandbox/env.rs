//! The environment a child process gets: mm's own, without anything that
//! looks like a secret (API keys reached language servers before issue 9),
//! and, for commands run without asking, git's program-running settings
//! turned off.

use std::ffi::OsString;

/// Environment variables that look like secrets are not passed on.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const MARKERS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASS",
        "CRED",
        "AUTH",
        "COOKIE",
        "SESSION",
        "JWT",
        "WEBHOOK",
        "DSN",
        "CONNECTION_STRING",
        "CONN_STR",
        "PRIVATE",
        "SIGNATURE",
        "SERVICE_ACCOUNT",
        "PEM",
        "KUBE_CONFIG",
        "KUBECONFIG_DATA",
        "BEARER",
    ];
    // Whole words of the name: `GH_PAT`, `SMTP_PW`, `LDAP_BINDPW` (as a
    // part of a word, PATH and PWD are no secrets).
    const WORDS: &[&str] = &["PAT", "PW", "PWD", "APIKEY"];
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    MARKERS.iter().any(|m| upper.contains(m))
        || (!matches!(upper.as_str(), "PWD" | "OLDPWD")
            && (words.iter().any(|w| WORDS.contains(w))
                || words.last().is_some_and(|w| w.ends_with("PW"))))
        || upper.starts_with("AWS_")
        || upper.starts_with("AZURE_")
        || upper.starts_with("GOOGLE_APPLICATION")
        || upper == "DATABASE_URL"
        || upper == "SSH_AUTH_SOCK"
}

/// Variables that change where a shell goes or what it runs first:
/// `cd dir` follows CDPATH to a folder outside the workspace, and ENV or
/// BASH_ENV name a file a shell sources before the command.
const SHELL_STEERING: &[&str] = &["CDPATH", "ENV", "BASH_ENV"];

/// git's variables that say which repository, work tree, index, objects or
/// config a git command uses, or which program it runs (`GIT_DIR`,
/// `GIT_WORK_TREE`, `GIT_EXTERNAL_DIFF`…): a command's git must open the
/// repository the gate looked at. Only who wrote a commit, and when,
/// passes.
fn steers_git(name: &str) -> bool {
    name.starts_with("GIT_")
        && !matches!(
            name,
            "GIT_AUTHOR_NAME"
                | "GIT_AUTHOR_EMAIL"
                | "GIT_AUTHOR_DATE"
                | "GIT_COMMITTER_NAME"
                | "GIT_COMMITTER_EMAIL"
                | "GIT_COMMITTER_DATE"
        )
}

/// mm's environment without secrets, and with a PATH of absolute
/// folders only: `.` or `node_modules/.bin` in PATH would make `ls` or
/// `python3` a program from the workspace.
/// Values mm itself holds as secrets (the API key it sends, read from
/// whatever variable `apiKeyEnv` names): any variable holding one is
/// left out, whatever its name.
static MARKED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Marks a value as a secret for every scrub from now on (values shorter
/// than 8 bytes are too common to match on).
pub fn mark_secret(value: &str) {
    if value.len() < 8 {
        return;
    }
    if let Ok(mut m) = MARKED.lock()
        && !m.iter().any(|v| v == value)
    {
        m.push(value.to_string());
    }
}

fn marked() -> Vec<String> {
    MARKED.lock().map(|m| m.clone()).unwrap_or_default()
}

pub fn scrubbed() -> Vec<(OsString, OsString)> {
    scrub(std::env::vars_os())
}

/// A value shaped like a credential, whatever its variable is called: a
/// token with a known issuer's prefix, a URL with a password in it.
pub fn is_secret_value(v: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "sk-",
        "sk_live_",
        "sk_test_",
        "rk_test_",
        "whsec_",
        "rk_live_",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xapp-",
        "hf_",
        "AKIA",
        "ASIA",
        "AIza",
        "npm_",
        "pypi-",
        "ya29.",
        "SG.",
        "dop_v1_",
        "shpat_",
    ];
    let token = v.len() >= 20 && !v.contains(char::is_whitespace);
    if token && PREFIXES.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    // A JSON web token: three base64url parts, the first a JSON header.
    if token && v.starts_with("eyJ") && v.matches('.').count() == 2 {
        return true;
    }
    // `password=…` in a connection string, an Azure account key, a signed
    // URL's signature; a chat service's webhook URL.
    let lower = v.to_ascii_lowercase();
    const INSIDE: &[&str] = &[
        "password=",
        "pwd=",
        "accountkey=",
        "sharedaccesskey=",
        "sharedaccesssignature=",
        "sig=",
        "x-amz-signature=",
        "hooks.slack.com/",
        "discord.com/api/webhooks/",
        "discordapp.com/api/webhooks/",
        "webhook.office.com/",
    ];
    if INSIDE.iter().any(|m| lower.contains(m)) {
        return true;
    }
    // A key in PEM, a service account's JSON, an authorization header.
    if v.contains("-----BEGIN") || v.contains("\"private_key\"") || lower.starts_with("bearer ") {
        return true;
    }
    // scheme://user:password@host, or a long user alone (a key: Sentry's
    // DSN, a token in a git URL).
    v.split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?', '#']).next())
        .and_then(|authority| authority.rsplit_once('@'))
        .is_some_and(|(user, _)| match user.split_once(':') {
            Some((_, pw)) => !pw.is_empty(),
            None => user.len() >= 12,
        })
}

/// `vars` without secrets and shell-steering variables, PATH absolute. A
/// secret goes by its name, by its shape, and by its value: a variable
/// holding what a secret-named one holds (`DEPLOY=$API_KEY`) goes too.
pub fn scrub(vars: impl Iterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    let vars: Vec<(OsString, OsString)> = vars.collect();
    let mut secrets: Vec<String> = vars
        .iter()
        .filter(|(k, v)| is_secret_var(&k.to_string_lossy()) && v.len() >= 8)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .collect();
    secrets.extend(marked());
    let holds_secret = |v: &OsString| {
        let v = v.to_string_lossy();
        secrets.iter().any(|s| v.contains(s.as_str()))
    };
    vars.iter()
        .filter(|(k, v)| {
            let k = k.to_string_lossy();
            !is_secret_var(&k)
                && !SHELL_STEERING.contains(&k.as_ref())
                && !steers_git(&k)
                // The asking mm's request tally (`llm::client::TALLY_VAR`):
                // what mm runs does not add to it.
                && k != "MM_REQUEST_TALLY"
                && !holds_secret(v)
                && !is_secret_value(&v.to_string_lossy())
        })
        // An empty or relative entry is the folder a command runs in: the
        // workspace's programs, or its libraries for every program.
        .map(|(k, v)| match k.to_str() {
            Some("PATH") => (k.clone(), absolute_only(v)),
            // iconv loads its modules from `GCONV_PATH` (a commit in an odd
            // encoding makes `git log` call it).
            Some("LD_LIBRARY_PATH" | "GCONV_PATH") => (k.clone(), loader_list(v, true)),
            Some("LD_PRELOAD" | "LD_AUDIT") => (k.clone(), loader_list(v, false)),
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

/// A list the dynamic loader reads (`LD_LIBRARY_PATH`, `LD_PRELOAD`,
/// `LD_AUDIT`) without what would load the project's code into every
/// program: empty and relative entries (the folder a command runs in) and
/// entries in a workspace. A bare library name stays in a list of
/// libraries (it is looked for in the folders kept and the system's); a
/// list of `folders` keeps absolute ones only. Split where the loader
/// splits (`;` too), and nothing under `/proc` or `/dev/fd`, which name
/// another place in each process (`/proc/self/cwd/lib`).
fn loader_list(v: &std::ffi::OsStr, folders: bool) -> OsString {
    let text = v.to_string_lossy();
    let kept: Vec<&str> = text
        .split([':', ';', ' ', '\t', '\n'])
        .filter(|e| !e.is_empty())
        .filter(|e| {
            let p = std::path::Path::new(e);
            match folders || e.contains('/') {
                // `..` folded first (`/../proc/self/cwd` is /proc), and
                // the place a link leads to judged too; an entry that
                // does not resolve (nothing there yet) goes.
                true => {
                    let folded = fold_dots(p);
                    let real = std::fs::canonicalize(p);
                    p.is_absolute()
                        && real.as_ref().is_ok_and(|r| !per_process(r))
                        && !per_process(&folded)
                        && !super::host::in_workspace(p)
                }
                false => true,
            }
        })
        .collect();
    OsString::from(kept.join(":"))
}

/// A path under `/proc` or `/dev/fd`: another place in each process.
fn per_process(p: &std::path::Path) -> bool {
    p.starts_with("/proc") || p.starts_with("/dev/fd")
}

/// `p` with `.` and `..` folded by their spelling (`/usr/../proc` is
/// `/proc`; `..` at the root stays at the root, as the kernel has it).
fn fold_dots(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A PATH value with its relative entries dropped.
fn absolute_only(path: &std::ffi::OsStr) -> OsString {
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(path)
        .filter(|p| p.is_absolute())
        .collect();
    std::env::join_paths(kept).unwrap_or_else(|_| path.to_os_string())
}

/// Puts the scrubbed environment on a command, replacing its own.
/// Python writes no bytecode caches: a test run right after an edit in
/// the same second (same size, same mtime) would import the stale one.
pub fn apply(cmd: &mut tokio::process::Command) {
    cmd.env_clear();
    for (k, v) in scrubbed() {
        cmd.env(k, v);
    }
    cmd.env("PYTHONDONTWRITEBYTECODE", "1");
}

/// Settings given to git on its command line (`GIT_CONFIG_COUNT`), which
/// win over every config file: a repository's config cannot make a read
/// command start a program (fsmonitor, hooks, a pager). Settings git has
/// no "off" for (diff.external, textconv) are checked by the gate instead.
pub const GIT_GUARD: &[(&str, &str)] = &[
    // Submodules are repositories with settings of their own that git
    // would honour when it looks into them (a clean filter ran on a plain
    // `git status`): it does not look into them.
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("diff.submodule", "short"),
    // A bare repository found by walking up (one a model wrote) is not
    // opened unless named.
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    // Verifying a signature runs a program the repository picks with
    // `gpg.format` (`ssh-keygen`, `gpgsm`, `gpg`), on `log.showSignature`
    // or a `%G` placeholder (red-team round 19): none runs.
    ("log.showSignature", "false"),
    // The work tree's `.gitattributes` is not read: it can send every file
    // to a textconv or filter the user's own config defines (a PDF
    // converter, git-lfs), which would then run on the repository's
    // bytes (red-team round 19). git 2.46+; `GIT_ATTR_SOURCE` below for
    // 2.40+. The empty tree: no attributes at all.
    ("attr.tree", EMPTY_TREE),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    // A repository's own `protocol.<name>.allow` beats the general one.
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.fd.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
];

/// git's empty tree, which every git knows without its object.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The environment variables that carry `GIT_GUARD`.
pub fn git_guard() -> Vec<(String, String)> {
    let mut v = vec![
        ("GIT_CONFIG_COUNT".to_string(), GIT_GUARD.len().to_string()),
        ("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()),
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
        // A missing object is not fetched from a promisor remote (git 2.44+).
        ("GIT_NO_LAZY_FETCH".to_string(), "1".to_string()),
        ("GIT_ATTR_SOURCE".to_string(), EMPTY_TREE.to_string()),
    ];
    for (i, (k, val)) in GIT_GUARD.iter().enumerate() {
        v.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
        v.push((format!("GIT_CONFIG_VALUE_{i}"), val.to_string()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_is_not_pointed_at_another_repository() {
        let vars = [
            ("GIT_DIR", "/home/u/dotfiles.git"),
            ("GIT_WORK_TREE", "/home/u"),
            ("GIT_EXTERNAL_DIFF", "/tmp/x"),
            ("GIT_CONFIG_GLOBAL", "/tmp/evil"),
            ("GIT_COMMITTER_NAME", "Ada"),
            ("HOME", "/home/u"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> = scrub(vars.into_iter())
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept, ["GIT_COMMITTER_NAME", "HOME"]);
    }

    #[test]
    fn the_loader_is_not_pointed_at_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let w = std::fs::canonicalize(ws.path()).unwrap();
        crate::sandbox::host::add_workspace(&w);
        let lib = w.join("lib");
        let list = format!("/usr/lib::lib:{}", lib.display());
        assert_eq!(loader_list(std::ffi::OsStr::new(&list), true), "/usr/lib");
        let pre = format!("./hook.so {}/hook.so libfast.so", w.display());
        assert_eq!(loader_list(std::ffi::OsStr::new(&pre), false), "libfast.so");
        // Red-team round 33: `;` is a separator to the loader, and
        // `/proc/self/cwd` is the workspace in a command run there.
        assert_eq!(
            loader_list(
                std::ffi::OsStr::new("/usr/local/lib;lib:/proc/self/cwd/lib"),
                true
            ),
            "/usr/local/lib"
        );
        // Round 34: `..` leads into /proc as well, and an entry that
        // does not resolve from here may resolve from where a command runs.
        assert_eq!(
            loader_list(
                std::ffi::OsStr::new(
                    "/../proc/self/cwd/lib:/usr/../proc/self/cwd/lib:/usr/lib:/no/such/mm-lib"
                ),
                true
            ),
            "/usr/lib"
        );
        assert_eq!(
            loader_list(
                std::ffi::OsStr::new("/usr/../proc/self/cwd/lib/hook.so libfast.so"),
                false
            ),
            "libfast.so"
        );
        // iconv's modules are looked for the same way.
        let gconv = format!("{}/gconv:/usr/lib", w.display());
        let vars = scrub([(OsString::from("GCONV_PATH"), OsString::from(gconv))].into_iter());
        assert_eq!(
            vars,
            [(OsString::from("GCONV_PATH"), OsString::from("/usr/lib"))]
        );
    }

    #[test]
    fn relative_path_entries_are_dropped() {
        let path = absolute_only(std::ffi::OsStr::new("/usr/bin:.::node_modules/.bin:/bin"));
        assert_eq!(path, OsString::from("/usr/bin:/bin"));
    }

    #[test]
    fn secret_looking_variables_are_scrubbed() {
        for s in [
            "OPENAI_API_KEY",
            "MM_API_KEY",
            "GITHUB_TOKEN",
            "AWS_REGION",
            "DB_PASSWORD",
            "MY_SECRET",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret_var(s), "{s}");
        }
        for ok in [
            "PATH",
            "HOME",
            "LANG",
            "CARGO_HOME",
            "TERM",
            "PWD",
            "OLDPWD",
            "PATHEXT",
        ] {
            assert!(!is_secret_var(ok), "{ok}");
        }
        for s in [
            "DB_PASS",
            "GH_PAT",
            "SMTP_PW",
            "PGPASSWORD",
            "MY_APIKEY",
            "GPG_PASSPHRASE",
            "SSHPASS",
            "DBPASS",
            "LDAP_BINDPW",
            "DB_CREDS",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "CI_JOB_JWT",
        ] {
            assert!(is_secret_var(s), "{s}");
        }
        for v in [
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefgh",
            "sk_test_0123456789abcdefghijkl",
            "host=db user=app password=hunter2",
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==",
            "https://0123456789abcdef0123@o1.ingest.sentry.io/5",
            "https://hooks.slack.com/services/T0/B0/xyz",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
            "{\"type\":\"service_account\",\"private_key\":\"x\"}",
            "Bearer abc.def",
            "https://SECRET-gw-key@host/x",
        ] {
            assert!(is_secret_value(v), "{v}");
        }
        for v in [
            "https://example.com/a",
            "git@github.com:a/b.git",
            "C.UTF-8",
            "/usr/bin:/bin",
        ] {
            assert!(!is_secret_value(v), "{v}");
        }
    }

    #[test]
    fn secrets_go_by_shape_and_by_value_whatever_their_name() {
        let vars = [
            ("API_KEY", "abcdefgh12345678"),
            ("DEPLOY", "abcdefgh12345678"),
            ("GHX", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            ("REDIS", "redis://user:hunter2@cache:6379/0"),
            ("SITE", "https://example.com/a@b"),
            ("LANG", "C.UTF-8"),
            ("MM_REQUEST_TALLY", "/tmp/.tmpAbc"),
        ];
        let kept: Vec<String> = scrub(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .into_iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
        assert_eq!(kept, ["SITE", "LANG"]);
        assert!(!is_secret_value("sk-short"));
        assert!(!is_secret_value("/usr/share/ssh:x@y"));
    }

    #[test]
    fn the_git_guard_numbers_every_setting() {
        let g = git_guard();
        let count: usize = g[0].1.parse().unwrap();
        assert_eq!(count, GIT_GUARD.len());
        assert!(
            g.iter()
                .any(|(k, v)| k == &format!("GIT_CONFIG_KEY_{}", count - 1) && !v.is_empty())
        );
    }
}
