//! The `bash` tool's runner: the command the sandbox built (`/bin/sh -c`,
//! in the fence where there is one, secrets scrubbed, a session of its
//! own), stdin closed, a hard timeout that kills the whole tree, and
//! output bounded in memory while it runs (head and tail kept: the start
//! says what ran, the end says how it failed).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::sandbox::procs;

/// Bytes kept from the start and the end of a command's output.
pub const HEAD_BYTES: usize = 4 * 1024;
pub const TAIL_BYTES: usize = 8 * 1024;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Output kept within a fixed size however much the command prints.
#[derive(Debug, Default)]
pub struct BoundedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
}

impl BoundedOutput {
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < HEAD_BYTES {
            let n = (HEAD_BYTES - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        for &b in bytes {
            if self.tail.len() == TAIL_BYTES {
                self.tail.pop_front();
                self.dropped += 1;
            }
            self.tail.push_back(b);
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!(
                "\n[… {} bytes of output omitted …]\n",
                self.dropped
            ));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// How a command ended.
#[derive(Debug)]
pub struct Finished {
    pub output: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub elapsed: Duration,
}

/// Runs a command the sandbox built (`Sandbox::command`): stdin closed,
/// output bounded, killed with everything it started on timeout, cancel,
/// or when this future is dropped.
pub async fn run(
    cmd: tokio::process::Command,
    timeout: Duration,
    cancel: &CancellationToken,
) -> std::io::Result<Finished> {
    run_with_input(cmd, None, timeout, cancel).await
}

/// As `run`, with `input` written to the command's stdin (then closed).
pub async fn run_with_input(
    mut cmd: tokio::process::Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> std::io::Result<Finished> {
    let started = Instant::now();
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true)
    .env("PAGER", "cat")
    .env("GIT_PAGER", "cat")
    .env("GIT_TERMINAL_PROMPT", "0");
    let mut child = cmd.spawn()?;
    let group = child.id().and_then(procs::Group::register);
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A program that does not read its input is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let buf = Arc::new(Mutex::new(BoundedOutput::default()));
    let out_task = child
        .stdout
        .take()
        .map(|s| tokio::spawn(pump(s, buf.clone())));
    let err_task = child
        .stderr
        .take()
        .map(|s| tokio::spawn(pump(s, buf.clone())));

    let mut timed_out = false;
    let mut cancelled = false;
    let status = tokio::select! {
        s = child.wait() => Some(s?),
        _ = tokio::time::sleep(timeout) => { timed_out = true; None }
        _ = cancel.cancelled() => { cancelled = true; None }
    };
    // Whatever the shell left running (or all of it, on timeout/cancel) is
    // killed with its group, so nothing keeps the pipes open.
    let grace = if status.is_some() {
        Duration::from_millis(200)
    } else {
        Duration::ZERO
    };
    let pumps = async {
        if let Some(t) = out_task {
            let _ = t.await;
        }
        if let Some(t) = err_task {
            let _ = t.await;
        }
    };
    tokio::pin!(pumps);
    if tokio::time::timeout(grace, &mut pumps).await.is_err() || status.is_none() {
        if let Some(g) = &group {
            g.kill();
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut pumps).await;
    }
    let exit_code = match status {
        Some(s) => s.code(),
        None => {
            let _ = child.wait().await;
            None
        }
    };
    drop(group);
    let output = buf.lock().map(|b| b.render()).unwrap_or_default();
    Ok(Finished {
        output,
        exit_code,
        timed_out,
        cancelled,
        elapsed: started.elapsed(),
    })
}

async fn pump(mut r: impl AsyncRead + Unpin, buf: Arc<Mutex<BoundedOutput>>) {
    let mut chunk = [0u8; 8192];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut b) = buf.lock() {
                    b.push(&chunk[..n]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_bounded_with_head_and_tail() {
        let mut b = BoundedOutput::default();
        b.push(b"START\n");
        for _ in 0..10_000 {
            b.push(b"middle line\n");
        }
        b.push(b"END\n");
        let r = b.render();
        assert!(r.starts_with("START\n"));
        assert!(r.ends_with("END\n"));
        assert!(r.contains("bytes of output omitted"));
        assert!(r.len() < HEAD_BYTES + TAIL_BYTES + 100);
    }

    fn sh(dir: &std::path::Path, command: &str) -> tokio::process::Command {
        let sb = crate::sandbox::Sandbox::new(dir, crate::config::SandboxMode::Workspace).unwrap();
        sb.command("/bin/sh", &["-c", command], dir, sb.approved_plan())
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_tree() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let f = run(
            sh(dir.path(), &cmd),
            Duration::from_millis(300),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert!(f.timed_out);
        assert!(f.elapsed < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "the background child survived the kill");
    }

    #[tokio::test]
    async fn stdin_is_closed_and_exit_codes_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = run(
            sh(dir.path(), "cat; echo done; exit 3"),
            Duration::from_secs(5),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(f.exit_code, Some(3));
        assert_eq!(f.output.trim(), "done");
    }

    #[tokio::test]
    async fn secrets_do_not_reach_the_command() {
        // What the command gets is the scrubbed environment, whole.
        let dir = tempfile::tempdir().unwrap();
        let f = run(
            sh(dir.path(), "env"),
            Duration::from_secs(5),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert!(f.output.contains("PATH="));
        let given: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("MM_TEST_API_KEY", "hunter2"),
            ("PATH", "/usr/bin:.:node_modules/.bin"),
            ("LANG", "C.UTF-8"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let kept = crate::sandbox::env::scrub(given.into_iter());
        let text = format!("{kept:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("\"PATH\", \"/usr/bin\""), "{text}");
        assert!(text.contains("LANG"), "{text}");
    }
}
