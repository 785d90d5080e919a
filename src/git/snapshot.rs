//! Writing the work tree into a tree object through the private index.
//! The index keeps stat data between snapshots, so after the first one
//! only files that changed are read again.

use std::path::Path;

use git2::{IndexAddOption, Oid};

use super::{MAX_FILE_BYTES, Result, Store};

impl Store {
    /// Pathspec of the workspace inside the repository.
    pub(super) fn pathspec(&self) -> String {
        if self.prefix.is_empty() {
            "*".to_string()
        } else {
            format!("{}*", self.prefix)
        }
    }

    /// The tree of the work tree as it is now (untracked, not ignored files
    /// included). Left out, and so never restored or deleted by a rewind:
    /// files over `MAX_FILE_BYTES`, anything but files and symlinks (a
    /// FIFO), and credential-shaped files (`.env`, keys), which must not
    /// land in the user's object store.
    pub(super) fn snapshot_tree(&mut self) -> Result<Oid> {
        let workdir = self
            .repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        let spec = self.pathspec();
        let mut left_out = |path: &Path, _: &[u8]| -> i32 {
            if crate::paths::credential_reason(&path.to_string_lossy()).is_some() {
                return 1;
            }
            match std::fs::symlink_metadata(workdir.join(path)) {
                Ok(m) if m.is_file() && m.len() > MAX_FILE_BYTES => 1,
                Ok(m) if !m.is_file() && !m.file_type().is_symlink() && !m.is_dir() => 1,
                _ => 0,
            }
        };
        self.index.add_all(
            [spec.as_str()],
            IndexAddOption::DEFAULT,
            Some(&mut left_out),
        )?;
        // Files deleted from the work tree leave the index too.
        self.index
            .update_all([spec.as_str()], Some(&mut left_out))?;
        Ok(self.index.write_tree_to(&self.repo)?)
    }
}
