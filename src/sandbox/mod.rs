//! The only module that decides permission: the path jail and credential
//! gate for the file tools, the exec policy for `bash`, and the mode.
//!
//! | mode        | read | write, edit    | allowlisted exec | other exec |
//! |-------------|------|----------------|------------------|------------|
//! | read-only   | yes  | no             | yes              | no         |
//! | workspace   | yes  | inside root    | yes              | asks       |
//! | full        | yes  | inside root    | yes              | yes        |
//!
//! The front end only collects an answer; the sandbox that asked applies
//! it, so "always" is remembered here, for this session.

pub mod path;
pub mod policy;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use path::Resolved;

use crate::config::SandboxMode;

/// What the sandbox says about a shell command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecDecision {
    Allow,
    /// Ask the user; `key` is what "always" would remember.
    Ask {
        reason: String,
        key: String,
    },
    Deny {
        reason: String,
    },
}

pub struct Sandbox {
    root: PathBuf,
    mode: SandboxMode,
    always: Mutex<BTreeSet<String>>,
}

impl Sandbox {
    /// `root` is canonicalised here; it must exist.
    pub fn new(root: &Path, mode: SandboxMode) -> std::io::Result<Self> {
        Ok(Self {
            root: std::fs::canonicalize(root)?,
            mode,
            always: Mutex::new(BTreeSet::new()),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// A path the file tools may read.
    pub fn check_read(&self, input: &str) -> Result<Resolved, String> {
        let r = path::resolve(&self.root, input)?;
        self.gate(&r, false)?;
        Ok(r)
    }

    /// A path the file tools may write.
    pub fn check_write(&self, input: &str) -> Result<Resolved, String> {
        if self.mode == SandboxMode::ReadOnly {
            return Err("the sandbox is read-only: no file may be written".into());
        }
        let r = path::resolve(&self.root, input)?;
        if r.rel == "." {
            return Err("the workspace root itself cannot be written".into());
        }
        self.gate(&r, true)?;
        Ok(r)
    }

    fn gate(&self, r: &Resolved, write: bool) -> Result<(), String> {
        if let Some(why) = path::credential_reason(&r.rel) {
            return Err(format!("refused: {why}"));
        }
        if let Some(why) = path::reserved_reason(&r.rel, write) {
            return Err(format!("refused: {why}"));
        }
        // A symlink inside the root may point at a credential file.
        if let Ok(target) = std::fs::canonicalize(&r.abs)
            && let Ok(rel) = target.strip_prefix(&self.root)
        {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if let Some(why) = path::credential_reason(&rel) {
                return Err(format!("refused: {} points to {rel}: {why}", r.rel));
            }
        }
        Ok(())
    }

    /// Judges a shell command under the current mode.
    pub fn check_exec(&self, command: &str) -> ExecDecision {
        let reason = match policy::judge(command) {
            policy::Judgement::ReadOnly => return ExecDecision::Allow,
            policy::Judgement::NotAllowlisted(reason) => reason,
        };
        match self.mode {
            SandboxMode::Full => ExecDecision::Allow,
            SandboxMode::ReadOnly => ExecDecision::Deny {
                reason: format!(
                    "the sandbox is read-only and this command is not on the read-only list ({reason})"
                ),
            },
            SandboxMode::Workspace => {
                if self.is_always_command(command) {
                    return ExecDecision::Allow;
                }
                ExecDecision::Ask {
                    reason,
                    key: policy::always_key(command),
                }
            }
        }
    }

    /// True when "always" was answered for exactly this key (a file).
    pub fn is_always(&self, key: &str) -> bool {
        self.always.lock().map(|s| s.contains(key)).unwrap_or(false)
    }

    fn is_always_command(&self, command: &str) -> bool {
        let Ok(set) = self.always.lock() else {
            return false;
        };
        set.iter().any(|key| policy::matches_always(command, key))
    }

    /// Remembers an "always" answer for the rest of the session.
    pub fn remember(&self, key: &str) {
        if let Ok(mut set) = self.always.lock() {
            set.insert(key.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(mode: SandboxMode) -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let s = Sandbox::new(dir.path(), mode).unwrap();
        (dir, s)
    }

    #[test]
    fn modes_decide_what_is_not_allowlisted() {
        let (_d, ro) = sandbox(SandboxMode::ReadOnly);
        assert_eq!(ro.check_exec("ls"), ExecDecision::Allow);
        assert!(matches!(ro.check_exec("rm x"), ExecDecision::Deny { .. }));
        assert!(ro.check_write("a.txt").is_err());
        let (_d, ws) = sandbox(SandboxMode::Workspace);
        assert!(matches!(ws.check_exec("rm x"), ExecDecision::Ask { .. }));
        assert!(ws.check_write("a.txt").is_ok());
        let (_d, full) = sandbox(SandboxMode::Full);
        assert_eq!(full.check_exec("rm x"), ExecDecision::Allow);
        assert!(full.check_write("../a.txt").is_err());
    }

    #[test]
    fn always_applies_to_the_prefix_it_was_given_for() {
        let (_d, ws) = sandbox(SandboxMode::Workspace);
        let ExecDecision::Ask { key, .. } = ws.check_exec("cargo test --lib") else {
            panic!("should ask");
        };
        ws.remember(&key);
        assert_eq!(ws.check_exec("cargo test"), ExecDecision::Allow);
        assert!(matches!(
            ws.check_exec("cargo build"),
            ExecDecision::Ask { .. }
        ));
        assert!(matches!(
            ws.check_exec("cargo test && rm -rf ."),
            ExecDecision::Ask { .. }
        ));
    }

    #[test]
    fn credentials_are_refused_even_through_a_symlink() {
        let (d, ws) = sandbox(SandboxMode::Workspace);
        std::fs::write(d.path().join(".env"), "KEY=1").unwrap();
        std::os::unix::fs::symlink(d.path().join(".env"), d.path().join("notes.txt")).unwrap();
        assert!(ws.check_read(".env").is_err());
        assert!(ws.check_read("notes.txt").is_err());
        assert!(ws.check_write("deploy/id_ed25519").is_err());
    }
}
