//! Trying a change without touching the workspace: a copy of the
//! workspace's files in a temporary folder outside it, the change written
//! there, and a check run there in the fence (`Sandbox::scratch_command`).
//! The harness tries candidate changes this way and writes only the one
//! whose check passes, through the usual write (and its approval).
//!
//! What the copy leaves out: `.git`, `.mm`, what `.gitignore` ignores
//! and files with other names (hard links). The check's fence mounts the
//! copy where the workspace is, with the workspace's own masks over it,
//! and the folders a check needs and never changes (`node_modules`,
//! `.venv`, `venv`: `fence::COPY_LINKED`) from the workspace, read-only.
//! Each candidate gets a fresh copy. A workspace of more than
//! `MAX_FILES` files or `MAX_BYTES` bytes is not copied.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ToolEnv;
use super::bash::Finished;

const MAX_FILES: usize = 3000;
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// A copy of the workspace, removed when dropped.
pub struct Scratch {
    dir: tempfile::TempDir,
}

/// Copies the workspace; None when it is too big, a copy fails, or there
/// is no fence to run anything in.
pub fn copy(env: &ToolEnv) -> Option<Scratch> {
    if !env.sandbox.fence().is_on() {
        return None;
    }
    let root = env.sandbox.root();
    let dir = tempfile::Builder::new()
        .prefix("mm-scratch-")
        .tempdir()
        .ok()?;
    let (mut files, mut bytes) = (0usize, 0u64);
    for entry in crate::paths::walk(root).build().flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = dir.path().join(rel);
        if kind.is_dir() {
            std::fs::create_dir_all(&target).ok()?;
        } else if kind.is_file() {
            // A file with another name may be one outside the workspace,
            // which the fence hides: the copy would not be hidden.
            if entry
                .metadata()
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::nlink(&m) > 1)
            {
                continue;
            }
            files += 1;
            bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
            if files > MAX_FILES || bytes > MAX_BYTES {
                return None;
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).ok()?;
            }
            std::fs::copy(entry.path(), &target).ok()?;
        }
    }
    Some(Scratch { dir })
}

impl Scratch {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where `rel` is in the copy: None for a path that is not a plain
    /// relative one.
    fn at(&self, rel: &str) -> Option<PathBuf> {
        let p = Path::new(rel);
        let plain = p
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        (plain && !rel.is_empty()).then(|| self.dir.path().join(p))
    }

    /// Writes `content` to `rel` in the copy, never through a link: a
    /// check that ran in the copy could have put one on the way.
    pub fn write(&mut self, rel: &str, content: &str) -> bool {
        let Some(path) = self.at(rel) else {
            return false;
        };
        let linked = path
            .ancestors()
            .take_while(|a| a.starts_with(self.dir.path()) && *a != self.dir.path())
            .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()));
        if linked {
            return false;
        }
        if let Some(parent) = path.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            return false;
        }
        std::fs::write(&path, content).is_ok()
    }

    /// Runs `command` in the copy, in the fence.
    pub async fn run(
        &self,
        env: &ToolEnv,
        command: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<Finished> {
        let cmd = env.sandbox.scratch_command(self.dir.path(), command)?;
        super::bash::run(cmd, timeout, cancel).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_into_the_copy_never_follows_a_link() {
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("target.txt"), "untouched\n").unwrap();
        let mut sc = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        // What a check run in the copy could leave: a file, or a folder
        // on the way, made a link out of it.
        std::os::unix::fs::symlink(out.path().join("target.txt"), sc.path().join("calc.py"))
            .unwrap();
        std::os::unix::fs::symlink(out.path(), sc.path().join("pkg")).unwrap();
        assert!(!sc.write("calc.py", "def add(a, b): ...\n"));
        assert!(!sc.write("pkg/mod.py", "x = 1\n"));
        assert_eq!(
            std::fs::read_to_string(out.path().join("target.txt")).unwrap(),
            "untouched\n"
        );
        assert!(!out.path().join("mod.py").exists());
        assert!(sc.write("ok.py", "x = 1\n"));
        assert!(sc.write("new/dir/ok.py", "x = 1\n"));
    }
}
