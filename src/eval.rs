//! `mm -eval CASES -runs N`: runs each case in a fresh copy of its
//! workspace with a fresh headless mm, and judges the work tree with the
//! case's check command — never the model's prose.
//!
//! A case is a folder with a `case.yaml` (prompt, check, optional setup,
//! sandbox, max_rounds, timeout) and a `files/` folder copied into the
//! workspace. A question's check reads the answer from the file named by
//! `$MM_EVAL_ANSWER`; every check runs in the work tree.

mod work;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::Cli;
use crate::untrusted::displayable;
use work::*;

/// One case as its `case.yaml` declares it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// What the user asks.
    pub prompt: String,
    /// Shell command run in the work tree afterwards; exit 0 is a pass.
    pub check: String,
    /// What the case measures (free text, shown in the table).
    #[serde(default)]
    pub class: Option<String>,
    /// Shell command run in the fresh work tree before mm starts.
    #[serde(default)]
    pub setup: Option<String>,
    /// read-only, workspace or full.
    #[serde(default)]
    pub sandbox: Option<String>,
    #[serde(default)]
    pub max_rounds: Option<u32>,
    /// Seconds before the run is stopped and counted as failed.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Make the work tree a git repository with one commit (default true).
    #[serde(default = "yes")]
    pub git: bool,
    /// The case was written before the eval was split and mm was tuned on
    /// it: it belongs to the dev half, whatever its name.
    #[serde(default)]
    pub tuned: bool,
}

/// Which half of the eval a case is in. mm is tuned on the dev half only;
/// the held-out half's rate is the one that counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    Dev,
    HeldOut,
}

impl Half {
    pub fn as_str(self) -> &'static str {
        match self {
            Half::Dev => "dev",
            Half::HeldOut => "held-out",
        }
    }

    /// The fixed rule: a case marked `tuned` is dev; every other case is
    /// dev when the FNV-1a hash of its folder name is divisible by 3, and
    /// held out otherwise (the tuned cases make up the rest of dev).
    pub fn of(name: &str, tuned: bool) -> Half {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        if tuned || h.is_multiple_of(3) {
            Half::Dev
        } else {
            Half::HeldOut
        }
    }
}

fn yes() -> bool {
    true
}

/// A case and where it lives.
pub struct Case {
    pub name: String,
    pub dir: PathBuf,
    pub file: CaseFile,
    pub half: Half,
    /// What is copied into the work tree: the case's `files/`, or for a
    /// case of the Go agent's `evals.json`, the project it runs in.
    pub files: PathBuf,
}

/// One case of the Go agent's `evals.json` (a JSON array of these).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GoCase {
    name: String,
    prompt: String,
    check: String,
}

/// The Go agent's eval file: each case runs in a copy of `project` (its
/// `.git` and `.mm` left out, made a repository of its own).
fn load_go_cases(path: &Path, project: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let list: Vec<GoCase> = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
    if list.is_empty() {
        return Err(format!("{}: no case in it", path.display()));
    }
    // A name becomes a folder of the run: letters, digits, `-`, `_`, `.`
    // only (`../x` or `/home/x` would put the run, and its clean-up,
    // elsewhere).
    if let Some(bad) = list.iter().find(|g| {
        g.name.is_empty()
            || g.name.starts_with('.')
            || !g
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    }) {
        return Err(format!(
            "{}: case name {:?}: a name is letters, digits, -, _ and . (not first)",
            path.display(),
            bad.name
        ));
    }
    Ok(list
        .into_iter()
        .map(|g| Case {
            half: Half::of(&g.name, false),
            name: g.name,
            dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            files: project.to_path_buf(),
            file: CaseFile {
                prompt: g.prompt,
                check: g.check,
                class: None,
                setup: None,
                sandbox: None,
                max_rounds: None,
                timeout: None,
                git: true,
                tuned: false,
            },
        })
        .collect())
}

/// Reads one case folder, or every case folder inside `path`.
pub fn load_cases(path: &Path) -> Result<Vec<Case>, String> {
    if path.is_file() && path.extension().is_some_and(|e| e == "json") {
        let project = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?;
        return load_go_cases(path, &project);
    }
    let one = path.join("case.yaml");
    if one.is_file() {
        return Ok(vec![load_case(path)?]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("case.yaml").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(format!(
            "{}: no case.yaml in it or in its folders",
            path.display()
        ));
    }
    dirs.iter().map(|d| load_case(d)).collect()
}

fn load_case(dir: &Path) -> Result<Case, String> {
    let path = dir.join("case.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: CaseFile = serde_saphyr::from_str(&text)
        .map_err(|e| crate::config::file::describe(&path, &e).to_string())?;
    if let Some(s) = &file.sandbox
        && crate::config::SandboxMode::parse(s).is_none()
    {
        return Err(format!(
            "{}: sandbox {s:?} is not read-only, workspace, auto or full",
            path.display()
        ));
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    Ok(Case {
        half: Half::of(&name, file.tuned),
        name,
        dir: dir.to_path_buf(),
        files: dir.join("files"),
        file,
    })
}

/// What one run of one case gave.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub pass: bool,
    pub outcome: String,
    pub exit: Option<i32>,
    pub secs: f64,
    pub requests: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub completion_tokens: u64,
    pub tests: Option<String>,
    /// Whether the harness's last test run passed (None: none ran).
    pub tests_passed: Option<bool>,
    pub flagged: Vec<String>,
    /// The kept work tree of a failed run.
    pub kept: Option<PathBuf>,
    pub note: Option<String>,
}

/// Runs `mm -eval` as the flags say and returns the exit code.
pub async fn run(cli: &Cli, cases_path: &Path) -> i32 {
    if cli.no_net && (cli.yolo || cli.unfenced) {
        eprintln!(
            "mm: eval: -no-net needs the fence, and {} runs commands outside it",
            if cli.yolo { "-yolo" } else { "-unfenced" }
        );
        return 2;
    }
    let cases = match load_cases(cases_path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mm: eval: {}", displayable(&e.clone()));
            return 2;
        }
    };
    let cases: Vec<Case> = match cli.half.as_deref() {
        Some("dev") => cases.into_iter().filter(|c| c.half == Half::Dev).collect(),
        Some("held-out") => cases
            .into_iter()
            .filter(|c| c.half == Half::HeldOut)
            .collect(),
        _ => cases,
    };
    if cases.is_empty() {
        eprintln!("mm: eval: no case in that half");
        return 2;
    }
    let runs = cli.runs.unwrap_or(1).max(1);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("mm: eval: cannot find mm's own binary: {e}");
            return 1;
        }
    };
    let base = match tempfile::Builder::new().prefix("mm-eval-").tempdir() {
        Ok(d) => d.keep(),
        Err(e) => {
            eprintln!("mm: eval: cannot make a temporary folder: {e}");
            return 1;
        }
    };
    let out_file = std::env::current_dir()
        .map(|d| d.join(".mm").join("eval-results.jsonl"))
        .ok();
    let started = Instant::now();
    let date = jiff::Timestamp::now().to_string();
    let harness = !cli.no_harness;
    let ctx = cli.ctx.map(super::protocol::ContextMode::as_str);
    let off = harness_off(cli);
    eprintln!(
        "mm: eval: {} case(s) × {runs} run(s), harness {}{}, context mode {}; work trees under {}",
        cases.len(),
        if harness { "on" } else { "off" },
        off.as_deref()
            .map(|o| format!(" (off: {o})"))
            .unwrap_or_default(),
        ctx.unwrap_or("as configured"),
        base.display()
    );
    let mut table: Vec<(&Case, Vec<RunResult>)> = Vec::new();
    for case in &cases {
        let mut results = Vec::new();
        for n in 1..=runs {
            let r = run_once(cli, &exe, case, n, &base).await;
            eprintln!(
                "  {:<28} run {n}: {} {:>5.0}s  {} req  prompt {} (cached {}) gen {}{}{}",
                displayable(&case.name),
                if r.pass { "PASS" } else { "fail" },
                r.secs,
                r.requests,
                r.prompt_tokens,
                r.cached_tokens,
                r.completion_tokens,
                r.tests
                    .as_deref()
                    .map(|t| format!("  tests: {}", displayable(t)))
                    .unwrap_or_default(),
                r.kept
                    .as_deref()
                    .map(|k| format!("  kept {}", displayable(&k.display().to_string())))
                    .unwrap_or_default(),
            );
            // A case's files, its setup's output and mm's report are
            // not mm's own words: no escape byte reaches the terminal.
            if let Some(note) = &r.note {
                eprintln!("      {}", displayable(note));
            }
            if let Some(path) = &out_file {
                append_jsonl(
                    path,
                    &result_json(case, n, &r, &date, harness, off.as_deref(), ctx),
                );
            }
            results.push(r);
        }
        table.push((case, results));
    }
    let summary = summarize(&table, started.elapsed(), harness, off.as_deref(), ctx);
    if cli.json {
        println!("{}", crate::untrusted::json_line(&summary.json));
    } else {
        print!("{}", displayable(&summary.text));
    }
    if let Some(path) = &out_file {
        eprintln!("mm: eval: results appended to {}", path.display());
    }
    0
}

struct Summary {
    text: String,
    json: Value,
}

fn summarize(
    table: &[(&Case, Vec<RunResult>)],
    wall: Duration,
    harness: bool,
    off: Option<&str>,
    ctx: Option<&str>,
) -> Summary {
    let mut text = String::new();
    let mut cases_json = Vec::new();
    let (mut prompt, mut cached, mut gen_tokens) = (0u64, 0u64, 0u64);
    for (case, results) in table {
        let p = results.iter().filter(|r| r.pass).count();
        let secs: f64 = results.iter().map(|r| r.secs).sum();
        let n = results.len().max(1);
        prompt += results.iter().map(|r| r.prompt_tokens).sum::<u64>();
        cached += results.iter().map(|r| r.cached_tokens).sum::<u64>();
        gen_tokens += results.iter().map(|r| r.completion_tokens).sum::<u64>();
        text.push_str(&format!(
            "{:<30} {:<8} {p}/{}  {:>5.0}s a run\n",
            displayable(&case.name),
            case.half.as_str(),
            results.len(),
            secs / n as f64
        ));
        cases_json.push(json!({
            "case": case.name,
            "half": case.half.as_str(),
            "class": case.file.class,
            "passed": p,
            "runs": results.len(),
            "secs": secs,
        }));
    }
    let tally = |keep: &dyn Fn(&Case) -> bool| {
        let runs: Vec<&RunResult> = table
            .iter()
            .filter(|(c, _)| keep(c))
            .flat_map(|(_, r)| r.iter())
            .collect();
        Tally::of(&runs)
    };
    let all = tally(&|_| true);
    let dev = tally(&|c| c.half == Half::Dev);
    let held = tally(&|c| c.half == Half::HeldOut);
    let mut classes: Vec<String> = table
        .iter()
        .map(|(c, _)| c.file.class.clone().unwrap_or_default())
        .collect();
    classes.sort();
    classes.dedup();
    let mut class_json = Vec::new();
    if classes.len() > 1 {
        text.push_str("by class:\n");
        for class in &classes {
            let t = tally(&|c| c.file.class.clone().unwrap_or_default() == *class);
            text.push_str(&format!("  {:<44} {}\n", displayable(class), t.words()));
            class_json.push(json!({"class": class, "passed": t.passed, "runs": t.runs}));
        }
    }
    for (name, t) in [("held-out", &held), ("dev", &dev)] {
        if t.runs > 0 {
            text.push_str(&format!("{name:<9} {}\n", t.words()));
        }
    }
    text.push_str(&format!(
        "overall   {}, harness {}{}{}, {:.0}s; tokens: prompt {prompt} (cached {cached}), generated {gen_tokens}\n",
        all.words(),
        if harness { "on" } else { "off" },
        off.map(|o| format!(" (off: {o})")).unwrap_or_default(),
        ctx.map(|c| format!(", context mode {c}")).unwrap_or_default(),
        wall.as_secs_f64()
    ));
    Summary {
        text,
        json: json!({
            "passed": all.passed,
            "runs": all.runs,
            "rate": all.rate(),
            "median_solved_secs": all.median_solved,
            "held_out": held.json(),
            "dev": dev.json(),
            "classes": class_json,
            "harness": harness,
            "harness_off": off,
            "context_mode": ctx,
            "secs": wall.as_secs_f64(),
            "usage": {"prompt": prompt, "cached": cached, "completion": gen_tokens},
            "cases": cases_json,
        }),
    }
}

/// Passes among some runs, and the median wall time of those that passed.
struct Tally {
    passed: usize,
    runs: usize,
    median_solved: Option<f64>,
}

impl Tally {
    fn of(runs: &[&RunResult]) -> Tally {
        let mut solved: Vec<f64> = runs.iter().filter(|r| r.pass).map(|r| r.secs).collect();
        solved.sort_by(f64::total_cmp);
        let median_solved = match solved.len() {
            0 => None,
            n if n % 2 == 1 => Some(solved[n / 2]),
            n => Some((solved[n / 2 - 1] + solved[n / 2]) / 2.0),
        };
        Tally {
            passed: solved.len(),
            runs: runs.len(),
            median_solved,
        }
    }

    fn rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            100.0 * self.passed as f64 / self.runs as f64
        }
    }

    fn words(&self) -> String {
        format!(
            "{}/{} ({:.0}%){}",
            self.passed,
            self.runs,
            self.rate(),
            self.median_solved
                .map(|m| format!(", median {m:.0}s a solved run"))
                .unwrap_or_default()
        )
    }

    fn json(&self) -> Value {
        json!({
            "passed": self.passed,
            "runs": self.runs,
            "rate": self.rate(),
            "median_solved_secs": self.median_solved,
        })
    }
}

/// The harness behaviours the eval's runs have off (`-harness-off`).
fn harness_off(cli: &Cli) -> Option<String> {
    cli.harness_off.clone().filter(|o| !o.trim().is_empty())
}

fn result_json(
    case: &Case,
    n: u32,
    r: &RunResult,
    date: &str,
    harness: bool,
    off: Option<&str>,
    ctx: Option<&str>,
) -> Value {
    json!({
        "date": date,
        "case": case.name,
        "half": case.half.as_str(),
        "class": case.file.class,
        "run": n,
        "pass": r.pass,
        "outcome": r.outcome,
        "exit": r.exit,
        "secs": r.secs,
        "requests": r.requests,
        "usage": {"prompt": r.prompt_tokens, "cached": r.cached_tokens, "completion": r.completion_tokens},
        "tests": r.tests,
        "tests_passed": r.tests_passed,
        "flagged": r.flagged,
        "harness": harness,
        "harness_off": off,
        "context_mode": ctx,
    })
}

/// Appends a line to `.mm/eval-results.jsonl`, never through a link nor
/// into a file with other names (a cloned repository's
/// `.mm/eval-results.jsonl -> ~/.bashrc` was appended to).
fn append_jsonl(path: &Path, value: &Value) {
    use std::io::Write;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let written = crate::mmdir::MmDir::open(dir)
        .and_then(|d| d.file(name, crate::mmdir::Open::Append))
        .and_then(|mut f| writeln!(f, "{value}"));
    if let Err(e) = written {
        eprintln!(
            "mm: eval: cannot append to {}: {}",
            path.display(),
            displayable(&e.to_string())
        );
    }
}

/// The arguments of the mm run under test, from the eval's own flags.
fn child_args(cli: &Cli, case: &Case, work: &Path) -> Vec<String> {
    let mut args = vec![
        "-p".to_string(),
        case.file.prompt.clone(),
        "-json".into(),
        "-cwd".into(),
        work.display().to_string(),
    ];
    if let Some(c) = &cli.config {
        let abs = std::fs::canonicalize(c).unwrap_or_else(|_| c.clone());
        args.push(abs.display().to_string());
    }
    for (flag, value) in [
        ("-provider", cli.provider.clone()),
        ("-model", cli.model.clone()),
        ("-url", cli.url.clone()),
        ("-ctx", cli.ctx.map(|m| m.as_str().to_string())),
        ("-max-requests", cli.max_requests.map(|n| n.to_string())),
        (
            "-max-rounds",
            case.file
                .max_rounds
                .or(cli.max_rounds)
                .map(|n| n.to_string()),
        ),
        (
            "-sandbox",
            // Unattended: never asked, every command in the fence,
            // unless the case or the command line says otherwise.
            case.file
                .sandbox
                .clone()
                .or(cli.sandbox.map(|s| s.as_str().to_string()))
                .or(cli.auto.then(|| "auto".to_string()))
                .or((!cli.yolo && !cli.unfenced).then(|| "auto".to_string())),
        ),
    ] {
        if let Some(v) = value {
            args.push(flag.into());
            args.push(v);
        }
    }
    if cli.unfenced {
        args.push("-unfenced".into());
    }
    if cli.no_net {
        args.push("-no-net".into());
    }
    if cli.no_harness {
        args.push("-no-harness".into());
    }
    if let Some(f) = cli.edit_format {
        args.push("-edit-format".into());
        args.push(f.as_str().into());
    }
    if let Some(off) = harness_off(cli) {
        args.push("-harness-off".into());
        args.push(off);
    }
    if cli.yolo {
        args.push("-yolo".into());
    }
    args
}

async fn run_once(cli: &Cli, exe: &Path, case: &Case, n: u32, base: &Path) -> RunResult {
    let slot = base.join(format!("{}-{n}", case.name));
    let work = slot.join("work");
    let mut r = RunResult::default();
    // The run's folder is one folder of the eval's own, whatever the name.
    if slot.parent() != Some(base)
        || slot
            .file_name()
            .is_none_or(|f| f.to_string_lossy().starts_with('.'))
    {
        r.outcome = "refused".into();
        r.note = Some(format!(
            "the case name {:?} is not a folder name",
            case.name
        ));
        return r;
    }
    let fenced = !(cli.yolo || cli.unfenced);
    // A case may not take its runs out of the fence by itself: `full`
    // needs the eval's own `-yolo` or `-sandbox full`.
    if case.file.sandbox.as_deref() == Some("full")
        && !(cli.yolo || cli.sandbox == Some(crate::config::SandboxMode::Full))
    {
        r.outcome = "refused".into();
        r.note = Some(
            "the case asks for sandbox: full (commands outside the fence); run the eval with -sandbox full to allow it".into(),
        );
        return r;
    }
    if let Err(e) = prepare(case, &work, fenced).await {
        r.outcome = "setup-failed".into();
        r.note = Some(e);
        r.kept = Some(work);
        return r;
    }
    let log_path = slot.join("mm.log");
    let answer_path = slot.join("answer.txt");
    let stderr = std::fs::File::create(&log_path)
        .map(std::process::Stdio::from)
        .unwrap_or_else(|_| std::process::Stdio::null());
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(child_args(cli, case, &work))
        .current_dir(&work)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true);
    let limit = Duration::from_secs(case.file.timeout.unwrap_or(900));
    let t0 = Instant::now();
    // A session of its own, registered: when the eval is stopped (Ctrl-C,
    // a signal) the run and everything it started stop with it.
    crate::sandbox::procs::own_session(&mut cmd);
    let output = match cmd.spawn() {
        Ok(child) => {
            let _group = child.id().and_then(crate::sandbox::procs::Group::register);
            tokio::time::timeout(limit, child.wait_with_output()).await
        }
        Err(e) => {
            r.outcome = "not-started".into();
            r.note = Some(format!("cannot start {}: {e}", exe.display()));
            return r;
        }
    };
    r.secs = t0.elapsed().as_secs_f64();
    let (stdout, exit) = match output {
        Ok(Ok(o)) => (o.stdout, o.status.code()),
        Ok(Err(e)) => {
            r.outcome = "failed".into();
            r.note = Some(format!("mm failed: {e}"));
            (Vec::new(), None)
        }
        Err(_) => {
            r.outcome = "timeout".into();
            r.note = Some(format!("stopped after {}s", limit.as_secs()));
            (Vec::new(), None)
        }
    };
    r.exit = exit;
    let reply: Value = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
    let answer = reply["answer"].as_str().unwrap_or("").to_string();
    if r.outcome.is_empty() {
        r.outcome = reply["outcome"].as_str().unwrap_or("no-json").to_string();
    }
    r.requests = reply["requests"].as_u64().unwrap_or(0);
    r.prompt_tokens = reply["usage"]["prompt"].as_u64().unwrap_or(0);
    r.cached_tokens = reply["usage"]["cached"].as_u64().unwrap_or(0);
    r.completion_tokens = reply["usage"]["completion"].as_u64().unwrap_or(0);
    // A run stopped before its result (the time limit): its requests are
    // in its session log.
    if reply.is_null() {
        (
            r.requests,
            r.prompt_tokens,
            r.cached_tokens,
            r.completion_tokens,
        ) = logged_usage(&work);
    }
    r.tests = reply["tests"]["summary"].as_str().map(str::to_string);
    r.tests_passed = reply["tests"]["passed"].as_bool();
    r.flagged = reply["unbacked_claims"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::write(&answer_path, &answer);
    r.pass = check(case, &work, &answer_path, &answer, fenced).await;
    if r.pass {
        let _ = std::fs::remove_dir_all(&slot);
    } else {
        r.kept = Some(slot);
    }
    r
}

/// The requests of the newest session in `work` and their tokens
/// (prompt, cached, completion), from its log.
fn logged_usage(work: &Path) -> (u64, u64, u64, u64) {
    let Some(newest) = crate::session::list(work).into_iter().next() else {
        return (0, 0, 0, 0);
    };
    let Ok((_, records)) = crate::session::read_records(work, &newest.id) else {
        return (0, 0, 0, 0);
    };
    records
        .iter()
        .fold((0, 0, 0, 0), |(n, p, c, g), r| match r {
            crate::session::Record::Request {
                prompt,
                cached,
                completion,
                ..
            } => (n + 1, p + prompt, c + cached, g + completion),
            _ => (n, p, c, g),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_runs_requests_are_read_from_its_session_log() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join(".mm/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let id = "20261207-030000-abcdef";
        let lines = [
            format!(
                r#"{{"type":"header","version":1,"id":"{id}","created":"2026-12-07T03:00:00Z","cwd":"/x","provider":"local","model":"m"}}"#
            ),
            r#"{"type":"turn","turn":1}"#.to_string(),
            r#"{"type":"request","turn":1,"round":1,"prompt":1800,"cached":0,"completion":22,"ms":9000}"#.to_string(),
            r#"{"type":"request","turn":1,"round":2,"prompt":1900,"cached":1800,"completion":30,"ms":4000}"#.to_string(),
        ];
        std::fs::write(
            sessions.join(format!("{id}.jsonl")),
            lines.join("\n") + "\n",
        )
        .unwrap();
        assert_eq!(logged_usage(dir.path()), (2, 3700, 1800, 52));
        assert_eq!(logged_usage(&dir.path().join("none")), (0, 0, 0, 0));
    }

    #[test]
    fn every_shipped_case_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
        let cases = load_cases(&dir).unwrap();
        assert!(cases.len() >= 15, "{} cases", cases.len());
        for c in &cases {
            assert!(!c.file.prompt.trim().is_empty(), "{}", c.name);
            assert!(c.dir.join("files").is_dir(), "{} has no files/", c.name);
        }
    }

    #[test]
    fn a_bad_case_names_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("case.yaml"),
            "prompt: hi\ncheck: true\nrunz: 3\n",
        )
        .unwrap();
        let e = load_cases(dir.path()).err().unwrap();
        assert!(e.contains("case.yaml:3:"), "{e}");
    }

    /// The Go agent's `evals.json`: each case runs in a copy of the
    /// project, without its `.git` and `.mm`.
    #[tokio::test]
    async fn the_go_agents_eval_file_runs_in_a_copy_of_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join(".mm/sessions")).unwrap();
        std::fs::write(project.join("calc.py"), "x = 1\n").unwrap();
        let file = dir.path().join("evals.json");
        std::fs::write(
            &file,
            r#"[{"name": "fix-add", "prompt": "fix add", "check": "grep -q 'x = 1' calc.py"}]"#,
        )
        .unwrap();
        let cases = load_go_cases(&file, &project).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].name, "fix-add");
        let work = dir.path().join("work");
        prepare(&cases[0], &work, false).await.unwrap();
        assert!(work.join("calc.py").is_file() && work.join(".git").is_dir());
        assert!(!work.join(".mm").exists());
        let answer = dir.path().join("answer.txt");
        assert!(check(&cases[0], &work, &answer, "", false).await);
        for name in ["../x", "/tmp/x", "a/b", ".x", ""] {
            std::fs::write(
                &file,
                format!(r#"[{{"name": {name:?}, "prompt": "p", "check": "true"}}]"#),
            )
            .unwrap();
            let e = load_go_cases(&file, &project).err().unwrap();
            assert!(e.contains("case name"), "{name}: {e}");
        }
        std::fs::write(&file, r#"[{"name": "x", "prompt": "p"}]"#).unwrap();
        let e = load_go_cases(&file, &project).err().unwrap();
        assert!(e.contains("evals.json:1:") && e.contains("check"), "{e}");
    }

    #[tokio::test]
    async fn a_check_judges_the_work_tree_and_the_answer_file() {
        let dir = tempfile::tempdir().unwrap();
        let case_dir = dir.path().join("c");
        std::fs::create_dir_all(case_dir.join("files")).unwrap();
        std::fs::write(case_dir.join("files/a.txt"), "one\n").unwrap();
        std::fs::write(
            case_dir.join("case.yaml"),
            "prompt: x\ncheck: grep -q one a.txt && grep -q 42 \"$MM_EVAL_ANSWER\"\n",
        )
        .unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work");
        prepare(&case, &work, false).await.unwrap();
        assert!(work.join(".git").is_dir());
        // Unfenced (-yolo, -unfenced): the answer file beside the work tree.
        let answer = dir.path().join("answer.txt");
        std::fs::write(&answer, "it is 42").unwrap();
        assert!(check(&case, &work, &answer, "it is 42", false).await);
        std::fs::write(&answer, "it is 41").unwrap();
        assert!(!check(&case, &work, &answer, "it is 41", false).await);
    }

    /// The check runs the model's code: where the runs were fenced, it
    /// runs in the fence, and what it writes outside the work tree is
    /// thrown away (red-team round 14: it ran with the real home).
    #[tokio::test]
    async fn a_fenced_check_runs_in_the_fence_with_the_answer() {
        if !crate::sandbox::fence::Fence::detect().await.is_on() {
            assert!(
                std::env::var_os("MM_REQUIRE_FENCE").is_none(),
                "no working fence here"
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let case_dir = dir.path().join("c");
        std::fs::create_dir_all(case_dir.join("files")).unwrap();
        std::fs::write(case_dir.join("files/a.txt"), "one\n").unwrap();
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let marker = format!("mm-eval-escaped-{}", std::process::id());
        std::fs::write(
            case_dir.join("case.yaml"),
            format!(
                "prompt: x\ncheck: touch \"$HOME/{marker}\"; touch /tmp/{marker}; grep -q one a.txt && grep -q 42 \"$MM_EVAL_ANSWER\"\n"
            ),
        )
        .unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work");
        prepare(&case, &work, true).await.unwrap();
        assert!(
            check(
                &case,
                &work,
                Path::new("/nonexistent"),
                "it's 42, with a ' and a \"",
                true
            )
            .await
        );
        assert!(!check(&case, &work, Path::new("/nonexistent"), "it is 41", true).await);
        assert!(
            !Path::new(&home).join(&marker).exists(),
            "wrote the real home"
        );
        assert!(
            !Path::new("/tmp").join(&marker).exists(),
            "wrote the real /tmp"
        );
    }

    /// Red-team round 15: a case's own `.git` (a hook) came along with its
    /// files, and mm's commit ran the hook outside the fence; a setup
    /// that makes one is refused, and a fenced setup writes no home.
    #[tokio::test]
    async fn a_case_brings_no_git_dir_and_its_setup_runs_in_the_fence() {
        let dir = tempfile::tempdir().unwrap();
        let case_dir = dir.path().join("c");
        let marker = dir.path().join("hook-ran");
        std::fs::create_dir_all(case_dir.join("files/.git/hooks")).unwrap();
        std::fs::write(case_dir.join("files/a.txt"), "one\n").unwrap();
        std::fs::write(
            case_dir.join("files/.git/hooks/pre-commit"),
            format!("#!/bin/sh\ntouch {}\n", marker.display()),
        )
        .unwrap();
        std::fs::write(case_dir.join("case.yaml"), "prompt: x\ncheck: true\n").unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work");
        prepare(&case, &work, false).await.unwrap();
        assert!(!marker.exists(), "the case's hook ran");
        assert!(!work.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(work.join("a.txt")).unwrap(),
            "one\n"
        );

        std::fs::write(
            case_dir.join("case.yaml"),
            "prompt: x\nsetup: mkdir -p .git/hooks && printf x > .git/HEAD\ncheck: true\n",
        )
        .unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work2");
        let e = prepare(&case, &work, false).await.unwrap_err();
        assert!(e.contains(".git"), "{e}");

        if !crate::sandbox::fence::Fence::detect().await.is_on() {
            return;
        }
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let name = format!("mm-eval-setup-{}", std::process::id());
        std::fs::write(
            case_dir.join("case.yaml"),
            format!("prompt: x\nsetup: touch \"$HOME/{name}\"; echo made > b.txt\ncheck: true\n"),
        )
        .unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work3");
        prepare(&case, &work, true).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(work.join("b.txt")).unwrap(),
            "made\n"
        );
        assert!(
            !Path::new(&home).join(&name).exists(),
            "the setup wrote the home"
        );
    }

    /// Red-team round 15: a case's class reached the terminal with its
    /// escape bytes (it is the case author's text, not mm's).
    #[test]
    fn a_case_s_words_are_shown_without_their_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let mut cases = Vec::new();
        for (name, class) in [("a", "\\e]0;pwned\\a"), ("b", "\\e[2Jplain")] {
            let case_dir = dir.path().join(name);
            std::fs::create_dir_all(&case_dir).unwrap();
            std::fs::write(
                case_dir.join("case.yaml"),
                format!("prompt: x\ncheck: true\nclass: \"{class}\"\n"),
            )
            .unwrap();
            cases.push(load_case(&case_dir).unwrap());
        }
        assert!(cases[0].file.class.as_deref().unwrap().contains('\x1b'));
        let table: Vec<(&Case, Vec<RunResult>)> = cases
            .iter()
            .map(|c| (c, vec![RunResult::default()]))
            .collect();
        let summary = summarize(&table, Duration::from_secs(1), true, None, None);
        assert!(summary.text.contains("by class"), "{}", summary.text);
        assert!(!summary.text.contains('\x1b'), "{:?}", summary.text);
        assert!(!summary.text.contains('\x07'), "{:?}", summary.text);
    }

    /// Red-team round 16: a case's `files` linked to a folder of the
    /// home put its token in the work tree, where the model read it.
    #[tokio::test]
    async fn a_case_s_files_are_a_folder_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("home-config");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("hosts.yml"), "oauth_token: SECRET\n").unwrap();
        let case_dir = dir.path().join("c");
        std::fs::create_dir_all(&case_dir).unwrap();
        std::os::unix::fs::symlink(&elsewhere, case_dir.join("files")).unwrap();
        std::fs::write(case_dir.join("case.yaml"), "prompt: x\ncheck: true\n").unwrap();
        let case = load_case(&case_dir).unwrap();
        let work = dir.path().join("work");
        let e = prepare(&case, &work, false).await.unwrap_err();
        assert!(e.contains("is a link"), "{e}");
        assert!(!work.join("hosts.yml").exists());
    }

    /// Red-team round 16: a case's own `sandbox: full` took its runs out
    /// of the fence; it needs the eval's `-sandbox full` (or `-yolo`).
    #[tokio::test]
    async fn a_case_cannot_take_its_runs_out_of_the_fence_by_itself() {
        let dir = tempfile::tempdir().unwrap();
        let case_dir = dir.path().join("c");
        std::fs::create_dir_all(&case_dir).unwrap();
        std::fs::write(
            case_dir.join("case.yaml"),
            "prompt: x\ncheck: true\nsandbox: full\n",
        )
        .unwrap();
        let case = load_case(&case_dir).unwrap();
        let args = |extra: &[&str]| {
            let mut v: Vec<std::ffi::OsString> = vec!["mm".into(), "-eval".into(), "c".into()];
            v.extend(extra.iter().map(Into::into));
            Cli::try_parse_args(v).unwrap()
        };
        let base = dir.path().join("runs");
        let r = run_once(&args(&[]), Path::new("/bin/true"), &case, 1, &base).await;
        assert_eq!(r.outcome, "refused", "{:?}", r.note);
        assert!(!base.join("c-1/work").exists(), "nothing was prepared");
        let r = run_once(
            &args(&["-sandbox", "full"]),
            Path::new("/bin/true"),
            &case,
            1,
            &base,
        )
        .await;
        assert_ne!(r.outcome, "refused", "{:?}", r.note);
    }
}
