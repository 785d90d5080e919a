//! Every process mm starts (shell commands, language servers) leads a
//! session and process group of its own, and is registered here until it
//! ends, so that every way out of mm (a turn's end, Ctrl-C, SIGTERM,
//! SIGHUP, a panic) can kill what is still running: a killed mm once left
//! a command running on (issue 9).

use std::collections::HashSet;
use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

static GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);
/// Groups led by an mm this one asked: told to stop first (SIGTERM), so
/// that it kills what it started, before the SIGKILL.
static GRACEFUL: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Kills its process group when dropped, and unregisters it.
#[derive(Debug)]
pub struct Group(i32);

impl Group {
    /// Registers the group led by `pid` (a child started with `setsid`).
    pub fn register(pid: u32) -> Option<Group> {
        let pgid = i32::try_from(pid).ok().filter(|p| *p > 1)?;
        if let Ok(mut g) = GROUPS.lock() {
            g.get_or_insert_with(HashSet::new).insert(pgid);
        }
        Some(Group(pgid))
    }

    /// Registers the group of an asked mm: on the way out it gets a
    /// SIGTERM and a moment to end its own commands before the SIGKILL.
    pub fn register_graceful(pid: u32) -> Option<Group> {
        let g = Self::register(pid)?;
        if let Ok(mut s) = GRACEFUL.lock() {
            s.get_or_insert_with(HashSet::new).insert(g.0);
        }
        Some(g)
    }

    /// Kills the whole group now (what the shell left running included).
    pub fn kill(&self) {
        let _ = killpg(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        for reg in [&GROUPS, &GRACEFUL] {
            if let Ok(mut g) = reg.lock()
                && let Some(set) = g.as_mut()
            {
                set.remove(&self.0);
            }
        }
    }
}

/// Kills every registered group (on the way out of the process). Asked
/// mm's are told first and given up to 2 s to end their own commands.
pub fn kill_all() {
    let graceful: Vec<i32> = GRACEFUL
        .lock()
        .map(|g| g.iter().flatten().copied().collect())
        .unwrap_or_default();
    for pgid in &graceful {
        let _ = killpg(Pid::from_raw(*pgid), Signal::SIGTERM);
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while graceful
        .iter()
        .any(|p| nix::sys::signal::kill(Pid::from_raw(*p), None).is_ok())
        && std::time::Instant::now() < until
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let groups: Vec<i32> = match GROUPS.lock() {
        Ok(g) => g.iter().flatten().copied().collect(),
        Err(_) => return,
    };
    for pgid in groups {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Makes `cmd`'s child the leader of a new session: its own process group
/// (so the group can be killed whole) and no controlling terminal (so it
/// cannot read the user's keys or push input into mm's terminal). It gets
/// the signals mm keeps for its exit watcher back.
#[allow(unsafe_code)] // the SAFETY notes below say why
pub fn own_session(cmd: &mut tokio::process::Command) {
    // SAFETY: setsid and sigprocmask are async-signal-safe and touch no
    // memory of the parent; they run in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_SETMASK,
                Some(&nix::sys::signal::SigSet::empty()),
                None,
            )
            .map_err(std::io::Error::from)?;
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
}

/// Marks every descriptor from `first` up close-on-exec, so a program mm
/// starts inherits none of them (one mm's parent left open included).
/// Async-signal-safe: for use between fork and exec.
#[allow(unsafe_code)] // the SAFETY notes below say why
pub fn close_on_exec_from(first: i32) {
    let Ok(low) = u32::try_from(first) else {
        return;
    };
    // SAFETY: close_range only changes descriptor flags; it takes no
    // pointers.
    let done =
        unsafe { nix::libc::close_range(low, u32::MAX, nix::libc::CLOSE_RANGE_CLOEXEC as i32) };
    if done == 0 {
        return;
    }
    // Kernels before 5.11: one at a time, as far as the limit goes.
    for fd in first..4096 {
        // SAFETY: fcntl on a descriptor number that may be closed: EBADF.
        unsafe {
            nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
        }
    }
}

/// SIGTERM and SIGHUP (a closed terminal, `kill`, a CI timeout) end mm at
/// once, but never leave what it started running: a thread of its own
/// waits for them (so a stuck read elsewhere cannot delay it), kills every
/// registered process group, runs `restore` (the terminal) and exits with
/// 128 + the signal. Call before any other thread starts: they inherit the
/// blocked signals, and only this thread takes them.
pub fn watch_exit_signals(restore: fn()) {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    if sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None).is_err() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("mm-exit-signals".into())
        .spawn(move || {
            if let Ok(sig) = set.wait() {
                kill_all();
                restore();
                std::process::exit(128 + sig as i32);
            }
        });
    if spawned.is_err() {
        let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropping_the_group_kills_what_a_command_left_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("(sleep 1; touch {}) & sleep 30", marker.display()));
        own_session(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let group = Group::register(child.id().unwrap()).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        // kill_all is tested end to end (SIGTERM to mm): here it would kill
        // the other tests' commands too.
        drop(group);
        let status = child.wait().await.unwrap();
        assert!(!status.success());
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the background child survived");
    }
}
