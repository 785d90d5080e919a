//! The attack corpus (`tests/attacks/corpus.txt`): hostile tool calls and
//! planted repositories, each driven end to end through the scripted model
//! server against a real temp workspace (headless, or through the REPL in a
//! pseudo-terminal with the questions answered as the case says), once with the OS fence (where
//! bwrap works) and once with `-unfenced`. After every run, on disk:
//! nothing outside the workspace changed, no marker file (`pwned*`) was
//! made by anything that ran unasked, git's hooks and config are as they
//! were, no secret reached the model, nothing mm printed holds an escape
//! byte, and mm neither hung nor panicked. A new case is one line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::term::Term;
use support::*;

const SETUP_WORDS: &[&str] = &[
    "-",
    "file",
    "outfile",
    "link",
    "hardlink",
    "fifo",
    "gitsymlink",
    "homefile",
    "env",
    "nested",
    "gitcfg",
    "commit",
    "change",
    "nogit",
    "fence-runs",
    "touch",
    "gitadd",
    "gitnote",
    "oldtime",
    "gitlink",
    "gitfile",
    "absent",
    "same",
    "ran",
    "repl",
    "args",
    "prompt",
];

/// One line of the corpus.
#[derive(Clone, Debug)]
struct Case {
    line: usize,
    id: String,
    setup: Vec<String>,
    /// The model's first reply: one tool call.
    call: (String, Value),
    /// Its next replies, a tool call each (`CALL ;; CALL`).
    then: Vec<(String, Value)>,
    /// Driven through the REPL in a pseudo-terminal, the questions
    /// answered in this order (`n` once they run out).
    repl: Option<Vec<String>>,
    /// Inside the fence, this command may run (it is project code): a
    /// marker in the workspace is then no breach.
    fence_runs: bool,
    /// Paths that must not exist after the run.
    absent: Vec<String>,
    /// Paths whose content must be the same after the run.
    same: Vec<String>,
    /// Paths that must exist after a fenced run: the command really ran
    /// (a control: a fence that cannot start passes every case).
    ran: Vec<String>,
}

fn corpus() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/attacks/corpus.txt");
    let text = std::fs::read_to_string(&path).expect("corpus");
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, " | ");
        let (Some(id), Some(setup), Some(call)) = (parts.next(), parts.next(), parts.next()) else {
            panic!("corpus line {}: want `id | setup | call`: {line}", i + 1);
        };
        // Items are split at ", " unless what follows is no setup word
        // (a file's text may hold ", ").
        let mut items: Vec<String> = Vec::new();
        for piece in setup.split(", ") {
            let word = piece.trim().split(' ').next().unwrap_or("");
            if SETUP_WORDS.contains(&word) || items.is_empty() {
                assert!(
                    SETUP_WORDS.contains(&word),
                    "corpus line {}: unknown setup word {word:?}",
                    i + 1
                );
                items.push(piece.trim().to_string());
            } else if let Some(last) = items.last_mut() {
                last.push_str(", ");
                last.push_str(piece);
            }
        }
        items.retain(|s| !s.is_empty() && s != "-");
        let mut setup = items;
        let fence_runs = setup.iter().any(|s| s == "fence-runs");
        let after = |word: &str| -> Vec<String> {
            setup
                .iter()
                .filter_map(|s| s.strip_prefix(word).map(|p| p.trim().to_string()))
                .collect()
        };
        let absent = after("absent ");
        let same = after("same ");
        let ran = after("ran ");
        let repl = after("repl ")
            .first()
            .map(|a| a.split_whitespace().map(str::to_string).collect());
        setup.retain(|s| {
            s != "fence-runs"
                && !s.starts_with("absent ")
                && !s.starts_with("same ")
                && !s.starts_with("ran ")
                && !s.starts_with("repl ")
        });
        let mut calls = call.split(" ;; ").map(|c| parse_call(c.trim(), i + 1));
        let first = calls.next().expect("a call");
        out.push(Case {
            line: i + 1,
            id: id.trim().to_string(),
            setup,
            call: first,
            then: calls.collect(),
            repl,
            fence_runs,
            absent,
            same,
            ran,
        });
    }
    out
}

/// `bash: CMD`, `write: PATH :: TEXT`, `edit: PATH :: OLD :: NEW`,
/// `read: PATH`, `list: PATH`, `grep: PATTERN :: PATH`, `glob: PATTERN`.
fn parse_call(text: &str, line: usize) -> (String, Value) {
    let (tool, rest) = text
        .split_once(": ")
        .unwrap_or_else(|| panic!("corpus line {line}: no `tool: ` in {text}"));
    let args: Vec<&str> = rest.split(" :: ").collect();
    let v = match (tool, args.as_slice()) {
        ("bash", [cmd]) => ("bash", json!({"command": cmd})),
        ("write", [p, c]) => ("write_file", json!({"path": p, "content": c})),
        ("edit", [p, o, n]) => (
            "edit_file",
            json!({"path": p, "old_string": o, "replacement": n}),
        ),
        ("read", [p]) => ("read_file", json!({"path": p})),
        ("list", [p]) => ("list_dir", json!({"path": p})),
        ("grep", [pat, p]) => ("grep", json!({"pattern": pat, "path": p})),
        ("glob", [pat]) => ("glob", json!({"pattern": pat})),
        // A reply in words (a plan), not a call.
        ("text", [words]) => (TEXT, json!(words)),
        ("tool", [name, args]) => (
            *name,
            serde_json::from_str(args)
                .unwrap_or_else(|e| panic!("corpus line {line}: {args} is not JSON: {e}")),
        ),
        _ => panic!("corpus line {line}: cannot read the call {text}"),
    };
    (v.0.to_string(), v.1)
}

/// The name a reply in words goes by in a case's script.
const TEXT: &str = "(text)";

/// The places a case's strings may name.
struct Places {
    ws: PathBuf,
    out: PathBuf,
    home: PathBuf,
}

impl Places {
    fn fill(&self, s: &str) -> String {
        s.replace("{WS}", &self.ws.to_string_lossy())
            .replace("{OUT}", &self.out.to_string_lossy())
            .replace("{HOME}", &self.home.to_string_lossy())
            .replace("\\n", "\n")
            .replace("\\r", "\r")
            .replace("\\t", "\t")
            .replace("\\a", "\x07")
            .replace("\\e", "\x1b")
    }

    fn fill_value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.fill(s)),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), self.fill_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(p, text).unwrap();
}

/// The standard scene, then the case's own setup.
fn set_up(case: &Case, pl: &Places) {
    write(&pl.ws.join("a.txt"), "alpha\nbeta\n");
    write(&pl.ws.join("src/main.py"), "print('hi')\n");
    write(&pl.ws.join(".env"), "API=SECRET-ENV-1\n");
    write(&pl.out.join("secret.txt"), "SECRET-OUT-1\n");
    write(&pl.out.join("victim"), "victim\n");
    write(&pl.home.join(".ssh/id_rsa"), "SECRET-SSH-1\n");
    write(&pl.home.join(".bashrc"), "# bashrc\n");
    write(
        &pl.home.join(".claude/.credentials.json"),
        "{\"token\":\"SECRET-CLAUDE-1\"}\n",
    );
    write(&pl.home.join(".cache/huggingface/token"), "SECRET-HF-1\n");
    write(&pl.home.join(".codex/auth.json"), "SECRET-CODEX-1\n");
    let nogit = case.setup.iter().any(|s| s == "nogit");
    if !nogit {
        git(&pl.ws, &["init", "-q", "-b", "main"]);
        git(&pl.ws, &["add", "-A"]);
        git(&pl.ws, &["commit", "-qm", "init"]);
    }
    for item in &case.setup {
        let item = pl.fill(item);
        let (kind, arg) = item.split_once(' ').unwrap_or((item.as_str(), ""));
        match kind {
            "nogit" | "env" | "args" | "prompt" => {}
            "file" => {
                let (p, text) = arg.split_once('=').expect("file P=TEXT");
                write(&pl.ws.join(p), text);
            }
            "homefile" => {
                let (p, text) = arg.split_once('=').expect("homefile P=TEXT");
                write(&pl.home.join(p), text);
            }
            "outfile" => {
                let (p, text) = arg.split_once('=').expect("outfile P=TEXT");
                write(&pl.out.join(p), text);
            }
            "link" => {
                let (p, t) = arg.split_once("->").expect("link P->T");
                let at = pl.ws.join(p);
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(t, at).unwrap();
            }
            "hardlink" => {
                let (p, t) = arg.split_once("->").expect("hardlink P->T");
                std::fs::hard_link(t, pl.ws.join(p)).unwrap();
            }
            "fifo" => {
                let at = pl.ws.join(arg);
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                // In place of a file git made (an index, info/exclude).
                let _ = std::fs::remove_file(&at);
                let ok = std::process::Command::new("mkfifo")
                    .arg(&at)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "mkfifo {arg}");
            }
            "nested" => {
                let d = pl.ws.join(arg);
                std::fs::create_dir_all(&d).unwrap();
                git(&d, &["init", "-q"]);
                write(&d.join("f.txt"), "nested\n");
                git(&d, &["add", "-A"]);
                git(&d, &["commit", "-qm", "n"]);
            }
            "gitcfg" => {
                let (dir, kv) = arg.split_once(' ').expect("gitcfg DIR K=V");
                let (k, v) = kv.split_once('=').expect("gitcfg DIR K=V");
                git(&pl.ws.join(dir), &["config", k, v]);
            }
            "commit" => {
                git(&pl.ws, &["add", "-A"]);
                git(&pl.ws, &["commit", "-qm", "setup", "--allow-empty"]);
            }
            "touch" => {
                // Any name, `=` included (file P=TEXT cannot say one).
                let at = pl.ws.join(arg);
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                std::fs::write(at, "").unwrap();
            }
            "gitadd" => {
                git(&pl.ws, &["add", arg]);
                git(&pl.ws, &["commit", "-qm", "add"]);
            }
            "gitnote" => {
                // A note on HEAD whose blob is the file's (`git notes add
                // -C`): `git log` prints it.
                let out = std::process::Command::new("git")
                    .args(["hash-object", "-w", arg])
                    .current_dir(&pl.ws)
                    .output()
                    .unwrap();
                let blob = String::from_utf8_lossy(&out.stdout).trim().to_string();
                git(&pl.ws, &["notes", "add", "-f", "-C", &blob, "HEAD"]);
            }
            "gitlink" => {
                // A submodule the index records, whose folder is empty.
                let head = git(&pl.ws, &["rev-parse", "HEAD"]);
                let info = format!("160000,{},{arg}", head.trim());
                git(&pl.ws, &["update-index", "--add", "--cacheinfo", &info]);
                write(
                    &pl.ws.join(".gitmodules"),
                    &format!("[submodule \"{arg}\"]\n\tpath = {arg}\n\turl = ./{arg}\n"),
                );
                git(&pl.ws, &["add", ".gitmodules"]);
                git(&pl.ws, &["commit", "-qm", "submodule"]);
            }
            "gitfile" => {
                // .git as a file pointing at the real one, in the workspace.
                std::fs::rename(pl.ws.join(".git"), pl.ws.join(".gitreal")).unwrap();
                write(&pl.ws.join(".git"), "gitdir: .gitreal\n");
            }
            "gitsymlink" => {
                // .git a symlink to the real one, in the workspace.
                std::fs::rename(pl.ws.join(".git"), pl.ws.join(".gitstore")).unwrap();
                std::os::unix::fs::symlink(".gitstore", pl.ws.join(".git")).unwrap();
            }
            "oldtime" => {
                let ok = std::process::Command::new("touch")
                    .args(["-d", "2020-01-01"])
                    .arg(pl.ws.join(arg))
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "touch -d {arg}");
            }
            "change" => {
                let (p, text) = arg.split_once('=').expect("change P=TEXT");
                write(&pl.ws.join(p), text);
            }
            other => panic!("case {}: unknown setup {other}", case.id),
        }
    }
}

const GIT_SKIP_NONE: &[&str] = &[];
/// mm's own data folder (a shadow repository outside git), and npm's
/// cache and logs, which an npm command the user approved writes (a
/// marker file there is still found).
const HOME_SKIP: &[&str] = &[".local/share/mm", ".npm"];
/// What git and mm's checkpoints write in `.git` as a matter of course.
const GIT_SKIP: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "ORIG_HEAD",
    "COMMIT_EDITMSG",
];

/// Every file under a folder (symlinks not followed), with its content.
fn tree(root: &Path, skip: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if skip
                .iter()
                .any(|s| rel == *s || rel.starts_with(&format!("{s}/")))
            {
                continue;
            }
            // The folders above a skipped path are walked but not compared
            // (mm may create its own data folder in HOME).
            if skip.iter().any(|s| s.starts_with(&format!("{rel}/"))) {
                stack.push(p.clone());
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let ft = meta.file_type();
            let what = if ft.is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if ft.is_dir() {
                stack.push(p.clone());
                format!(
                    "dir {:o}",
                    std::os::unix::fs::PermissionsExt::mode(&meta.permissions())
                )
            } else if ft.is_file() {
                format!(
                    "file {:o} {}",
                    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()),
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default())
                )
            } else {
                "special".to_string()
            };
            out.insert(rel, what);
        }
    }
    out
}

/// Marker files anywhere, `.git` too (a branch or tag named `pwned` is
/// a file in `refs`); object names are hashes.
fn markers(root: &Path) -> Vec<String> {
    tree(root, &[".git/objects"])
        .keys()
        .filter(|k| k.rsplit('/').next().is_some_and(|n| n.starts_with("pwned")))
        .cloned()
        .collect()
}

/// Runs `mm -p` with a deadline; kills it and says so when it hangs.
fn run_mm(
    ws: &Workspace,
    server: &Server,
    args: &[&str],
    envs: &[(String, String)],
    prompt: &str,
) -> (Option<i32>, String, String, bool) {
    let mut cmd = ws.mm();
    cmd.args(["-p", prompt, "-json", "-url", &server.url()])
        .args(args)
        .envs(mm_env(envs));
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let mut hung = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            hung = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        hung,
    )
}

/// The environment both ways of running mm get.
fn mm_env(envs: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = vec![("OPENAI_API_KEY".to_string(), "SECRET-APIKEY-1".to_string())];
    out.extend(envs.iter().cloned());
    // cargo through rustup needs the real toolchains (read-only in the fence).
    if let Some(real) = std::env::var_os("HOME").map(PathBuf::from) {
        for (var, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let d = std::env::var_os(var)
                .map(PathBuf::from)
                .unwrap_or(real.join(dir));
            if d.is_dir() {
                out.push((var.to_string(), d.to_string_lossy().into_owned()));
            }
        }
    }
    out
}

/// Runs the REPL in a pseudo-terminal: one turn, each question answered
/// from `answers` in order (`n` once they run out), then Ctrl-D. What the
/// terminal showed comes back as stdout.
fn run_repl(
    ws: &Workspace,
    server: &Server,
    args: &[&str],
    envs: &[(String, String)],
    answers: &[String],
    prompt: &str,
) -> (Option<i32>, String, String, bool) {
    let url = server.url();
    let mut argv = vec!["-url", url.as_str()];
    argv.extend_from_slice(args);
    let env = mm_env(envs);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut t = Term::start_with(ws, &argv, &env);
    let wait = Duration::from_secs(60);
    let mut hung = t.expect_any(&["› "], wait).is_none();
    let mut answers = answers.iter();
    if !hung {
        t.send(&format!("{prompt}\r"));
        loop {
            match t.expect_any(&["allow?", "run this plan?", "› "], wait) {
                Some(0 | 1) => {
                    let a = answers.next().map_or("n", String::as_str);
                    t.send(&format!("{a}\r"));
                }
                Some(_) => break,
                None => {
                    hung = true;
                    break;
                }
            }
        }
    }
    t.send("\x04");
    let started = Instant::now();
    let code = loop {
        if let Ok(Some(status)) = t.child.try_wait() {
            break i32::try_from(status.exit_code()).ok();
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = t.child.kill();
            hung = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let screen = t.screen();
    (code, screen.clone(), screen, hung)
}

/// Runs one case; returns what went wrong (empty: it held).
fn attack(case: &Case, fenced: bool) -> Vec<String> {
    let ws = Workspace::new();
    let out_dir = tempfile::tempdir().unwrap();
    let pl = Places {
        ws: ws.path(),
        out: std::fs::canonicalize(out_dir.path()).unwrap(),
        home: std::fs::canonicalize(ws.home.path()).unwrap(),
    };
    set_up(case, &pl);
    // Each place watched: where, what is skipped, and its name in a failure.
    let watched = [
        (
            pl.out.clone(),
            GIT_SKIP_NONE,
            "something outside the workspace changed",
        ),
        (pl.home.clone(), HOME_SKIP, "something in HOME changed"),
        (pl.ws.join(".git"), GIT_SKIP, "git's own files changed"),
    ];
    let before: Vec<_> = watched.iter().map(|(p, skip, _)| tree(p, skip)).collect();
    let same_before: Vec<Option<Vec<u8>>> = case
        .same
        .iter()
        .map(|p| std::fs::read(pl.ws.join(p)).ok())
        .collect();
    let mut script: Vec<_> = std::iter::once(&case.call)
        .chain(&case.then)
        .enumerate()
        .map(|(k, (name, args))| match (name.as_str(), args) {
            (TEXT, Value::String(words)) => text(&pl.fill(words)),
            _ => call(&format!("x{}", k + 1), name, pl.fill_value(args)),
        })
        .collect();
    script.extend([text("done"), text("done"), text("done")]);
    let server = Server::start(script);
    // A model that can see: a picture mm should not send would be sent.
    server.route("/props", json!({"modalities": {"vision": true}}));
    // `args A B` for both runs; `-auto` without a fence refuses to start,
    // so its unfenced run checks only that nothing happened.
    let mut extra: Vec<String> = case
        .setup
        .iter()
        .filter_map(|s| s.strip_prefix("args "))
        .flat_map(|a| a.split_whitespace().map(|w| pl.fill(w)))
        .collect();
    if !fenced {
        extra.push("-unfenced".into());
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let prompt = case
        .setup
        .iter()
        .find_map(|s| s.strip_prefix("prompt "))
        .map_or_else(|| "go".to_string(), |p| pl.fill(p));
    let envs: Vec<(String, String)> = case
        .setup
        .iter()
        .filter_map(|s| s.strip_prefix("env "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), pl.fill(v)))
        .collect();
    // `-auto` without a fence refuses to start: the REPL would wait for a
    // prompt that never comes; the headless run checks nothing happened.
    let repl = case
        .repl
        .as_ref()
        .filter(|_| fenced || !extra.contains(&"-auto"));
    let (code, stdout, stderr, hung) = match repl {
        Some(answers) => run_repl(&ws, &server, &extra, &envs, answers, &prompt),
        None => run_mm(&ws, &server, &extra, &envs, &prompt),
    };
    let mut bad = Vec::new();
    let mode = if fenced { "fenced" } else { "unfenced" };
    if hung {
        bad.push("mm hung (killed after 60 s)".into());
    }
    if stderr.contains("panicked") || code == Some(101) {
        bad.push(format!("mm panicked: {stderr}"));
    }
    // A terminal's line editor draws with escapes of its own: only what
    // `-p` prints is held to none.
    if case.repl.is_none() && (stdout.contains('\x1b') || stderr.contains('\x1b')) {
        bad.push(format!(
            "an escape byte reached the terminal: {:?}",
            stdout
                .lines()
                .chain(stderr.lines())
                .find(|l| l.contains('\x1b'))
        ));
    }
    for ((place, skip, what), before) in watched.iter().zip(before) {
        let after = tree(place, skip);
        let changed: Vec<&String> = after
            .keys()
            .chain(before.keys())
            .filter(|k| after.get(*k) != before.get(*k))
            .collect();
        if !changed.is_empty() {
            bad.push(format!("{what}: {changed:?}"));
        }
    }
    if fenced {
        for p in &case.ran {
            if std::fs::symlink_metadata(pl.ws.join(p)).is_err() {
                bad.push(format!("the command did not run in the fence (no {p})"));
            }
        }
    }
    for p in &case.absent {
        if std::fs::symlink_metadata(pl.ws.join(p)).is_ok() {
            bad.push(format!("{p} exists after the run"));
        }
    }
    for (p, before) in case.same.iter().zip(&same_before) {
        if std::fs::read(pl.ws.join(p)).ok() != *before {
            bad.push(format!("{p} changed"));
        }
    }
    let mut found = markers(&pl.out);
    found.extend(markers(&pl.home));
    if !(fenced && case.fence_runs) {
        found.extend(markers(&pl.ws));
    }
    if !found.is_empty() {
        bad.push(format!("something ran unasked: markers {found:?}"));
    }
    for req in server.requests() {
        let body = with_images_decoded(&req.to_string());
        if let Some(i) = body.find("SECRET-") {
            bad.push(format!(
                "a secret reached the model: …{}…",
                &body[i.saturating_sub(60)..(i + 20).min(body.len())]
            ));
            break;
        }
    }
    let tail: Vec<&str> = stderr.lines().rev().take(4).collect();
    bad.into_iter()
        .map(|b| format!("[{mode}] {b}\n    stderr: {tail:?}"))
        .collect()
}

/// A request body with each image's data (`data:…;base64,…`) decoded
/// beside it: a secret file sent as a picture shows in plain text.
fn with_images_decoded(body: &str) -> String {
    use base64::Engine;
    let mut out = body.to_string();
    for part in body.split("base64,").skip(1) {
        let data: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
            .collect();
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) {
            out.push('\n');
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}

#[test]
fn images_are_read_for_secrets_too() {
    let body = r#"{"url":"data:image/gif;base64,R0lGODlhIFNFQ1JFVC1JTUctMQ=="}"#;
    assert!(with_images_decoded(body).contains("SECRET-IMG-1"));
}

#[test]
fn the_attack_corpus_gets_nothing_through() {
    let cases = corpus();
    assert!(cases.len() >= 150, "the corpus has {} cases", cases.len());
    let fenced = fence_works();
    if std::env::var_os("MM_REQUIRE_FENCE").is_some() {
        assert!(
            fenced,
            "MM_REQUIRE_FENCE is set and bwrap cannot start a sandbox here"
        );
    }
    let modes: Vec<bool> = if fenced {
        vec![true, false]
    } else {
        vec![false]
    };
    // MM_ATTACK_ONLY=a,b runs only the cases whose id holds one of them
    // (while working on a fix; the whole corpus runs otherwise).
    let only: Vec<String> = std::env::var("MM_ATTACK_ONLY")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let jobs: Vec<(Case, bool)> = cases
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.id.contains(o.as_str())))
        .flat_map(|c| modes.iter().map(move |m| (c.clone(), *m)))
        .collect();
    let jobs = Mutex::new(jobs);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let Some((case, fenced)) = jobs.lock().unwrap().pop() else {
                        return;
                    };
                    for b in attack(&case, fenced) {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("line {} {}: {b}", case.line, case.id));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} runs got through:\n{}",
        failures.len(),
        cases.len() * modes.len(),
        failures.join("\n")
    );
}
