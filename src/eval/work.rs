//! A run's work tree: the case's files copied in, its setup and its check run
//! (in the fence when the runs are, with the answer as a file), and the shell
//! that runs them with programs from absolute PATH entries only.

use super::*;

/// A fresh work tree: the case's files, its setup, one commit. The setup
/// runs where the case's check does (in the fence when the runs are
/// fenced); neither the case's files nor its setup may bring a `.git`,
/// whose hooks and config mm's own commit would run.
pub(super) async fn prepare(case: &Case, work: &Path, fenced: bool) -> Result<(), String> {
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let files = case.files.clone();
    // `files` is a folder of the case, not a link to one elsewhere (a
    // case's `files -> ~/.config/gh` put the home's token in the work tree).
    if std::fs::symlink_metadata(&files).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!(
            "{} is a link: a case's files are a folder of its own",
            files.display()
        ));
    }
    if files.is_dir() {
        copy_tree(&files, work).map_err(|e| format!("copying {}: {e}", files.display()))?;
    }
    if let Some(setup) = &case.file.setup {
        run_case_script(setup, work, fenced, None).await?;
    }
    if std::fs::symlink_metadata(work.join(".git")).is_ok() {
        return Err(
            "the case's setup made a .git: mm makes the repository itself (git: true)".into(),
        );
    }
    if case.file.git {
        shell(
            "git init -q && git add -A && git -c core.hooksPath=/dev/null -c user.name=mm-eval -c user.email=eval@mm.invalid commit -qm setup --allow-empty --no-verify",
            work,
            &[],
        )
        .await?;
    }
    Ok(())
}

/// The case's check, on the work tree. It runs the code the model wrote
/// (`python3 -c 'import calc …'`), so where the runs were fenced it runs
/// in the fence too, with the answer in a file of the fence's own /tmp
/// (outside it, in `file`).
pub(super) async fn check(
    case: &Case,
    work: &Path,
    file: &Path,
    answer: &str,
    fenced: bool,
) -> bool {
    run_case_script(&case.file.check, work, fenced, Some((file, answer)))
        .await
        .is_ok()
}

/// Runs a case's script (its setup or check) in the work tree: in the
/// fence when the runs were fenced, as unasked code does in `-auto` (no
/// credential, no home, nothing written outside the work tree, no
/// network); outside it otherwise. `answer`: the answer's file outside
/// the fence and its text, as `$MM_EVAL_ANSWER`. No fence on this
/// machine: the script does not run.
pub(super) async fn run_case_script(
    script: &str,
    work: &Path,
    fenced: bool,
    answer: Option<(&Path, &str)>,
) -> Result<(), String> {
    const ANSWER: &str = "/tmp/mm-eval-answer.txt";
    if !fenced {
        let env: Vec<(&str, &std::ffi::OsStr)> = answer
            .map(|(file, _)| ("MM_EVAL_ANSWER", file.as_os_str()))
            .into_iter()
            .collect();
        return shell(script, work, &env).await;
    }
    let fence = crate::sandbox::fence::Fence::detect_in(work).await;
    if !fence.is_on() {
        return Err("no OS fence here to run the case's script in (add -unfenced)".into());
    }
    let sandbox =
        crate::sandbox::Sandbox::with_fence(work, crate::config::SandboxMode::Auto, fence, false)
            .map_err(|e| e.to_string())?;
    let plan = sandbox
        .unattended_plan()
        .ok_or("the fence cannot run the case's script")?;
    let script = match answer {
        Some(_) => format!(
            "printf '%s' \"$MM_EVAL_ANSWER_TEXT\" > {ANSWER}; MM_EVAL_ANSWER={ANSWER}; export MM_EVAL_ANSWER; unset MM_EVAL_ANSWER_TEXT\n{script}"
        ),
        None => script.to_string(),
    };
    let mut cmd = sandbox.command("sh", &["-c", &script], sandbox.root(), plan);
    if let Some((_, text)) = answer {
        cmd.env("MM_EVAL_ANSWER_TEXT", text);
    }
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    finish(cmd, &script).await
}

/// Runs a case's script to its end (300 s at most): Ok when it exits 0,
/// else what it said on stderr.
pub(super) async fn finish(mut cmd: tokio::process::Command, script: &str) -> Result<(), String> {
    let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
        .await
        .map_err(|_| format!("`{script}` ran over 300s"))?
        .map_err(|e| format!("`{script}`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

pub(super) async fn shell(
    script: &str,
    cwd: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<(), String> {
    // `sh`, and the programs it starts, from where the user put them: a
    // relative PATH entry (`node_modules/.bin`) would be the case's files.
    let sh = crate::sandbox::host::program("sh").ok_or("no `sh` found on PATH")?;
    let mut cmd = tokio::process::Command::new(sh);
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    crate::sandbox::env::apply(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    finish(cmd, script).await
}

pub(super) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        // The case's own `.git` (hooks, config) never comes along, nor a
        // project's `.mm` (its sessions and traces).
        if entry.file_name() == ".git" || (entry.file_name() == ".mm" && from.join(".git").exists())
        {
            continue;
        }
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
