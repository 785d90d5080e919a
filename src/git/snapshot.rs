//! Writing the work tree into a tree object through the private index.
//! The index keeps stat data between snapshots, so after the first one
//! only files that changed are read again.

use std::path::Path;

use std::io::Write;

use git2::{IndexAddOption, Oid, Repository};

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
        let left_out = |path: &Path| -> i32 {
            if crate::paths::credential_reason(&path.to_string_lossy()).is_some() {
                return 1;
            }
            match std::fs::symlink_metadata(workdir.join(path)) {
                Ok(m) if m.is_file() && m.len() > MAX_FILE_BYTES => 1,
                Ok(m) if !m.is_file() && !m.file_type().is_symlink() && !m.is_dir() => 1,
                _ => 0,
            }
        };
        // A few new files become loose objects as git writes them; past
        // `BULK` the walk stops and starts again writing into memory, and
        // everything goes to disk as one pack (a loose object is a file
        // of its own: 100,000 of them took minutes).
        let mut added = 0usize;
        let mut counting = |path: &Path, _: &[u8]| -> i32 {
            let r = left_out(path);
            if r == 0 {
                added += 1;
                if added > BULK {
                    return -1;
                }
            }
            r
        };
        let first = self.index.add_all(
            [spec.as_str()],
            IndexAddOption::DEFAULT,
            Some(&mut counting),
        );
        match first {
            Ok(()) => {
                // Files deleted from the work tree leave the index too.
                self.index
                    .update_all([spec.as_str()], Some(&mut |p: &Path, _: &[u8]| left_out(p)))?;
                Ok(self.index.write_tree_to(&self.repo)?)
            }
            Err(_) if added > BULK => self.bulk_snapshot(&spec, &left_out),
            Err(e) => Err(e.into()),
        }
    }

    /// The rest of a snapshot with many new files: objects written into
    /// memory through a second handle on the same repository, then one
    /// pack. The index is the store's own again afterwards.
    fn bulk_snapshot(&mut self, spec: &str, left_out: &dyn Fn(&Path) -> i32) -> Result<Oid> {
        let bulk = Repository::open(self.repo.path())?;
        let odb = bulk.odb()?;
        let _mempack = odb.add_new_mempack_backend(1000)?;
        bulk.set_index(&mut self.index)?;
        let written = (|| -> Result<Oid> {
            let mut added: Vec<std::path::PathBuf> = Vec::new();
            let mut cb = |p: &Path, _: &[u8]| {
                let r = left_out(p);
                if r == 0 {
                    added.push(p.to_path_buf());
                }
                r
            };
            self.index
                .add_all([spec], IndexAddOption::DEFAULT, Some(&mut cb))?;
            self.index
                .update_all([spec], Some(&mut |p: &Path, _: &[u8]| left_out(p)))?;
            let tree = self.index.write_tree_to(&bulk)?;
            // The pack holds what this pass wrote: the new files' blobs and
            // the trees (a tree already on disk is only a duplicate).
            let mut pack = bulk.packbuilder()?;
            for p in &added {
                if let Some(e) = self.index.get_path(p, 0) {
                    pack.insert_object(e.id, None)?;
                }
            }
            pack.insert_object(tree, None)?;
            let mut trees = Vec::new();
            bulk.find_tree(tree)?
                .walk(git2::TreeWalkMode::PreOrder, |_, e| {
                    if e.kind() == Some(git2::ObjectType::Tree) {
                        trees.push(e.id());
                    }
                    git2::TreeWalkResult::Ok
                })?;
            for t in trees {
                pack.insert_object(t, None)?;
            }
            let mut bytes = git2::Buf::new();
            pack.write_buf(&mut bytes)?;
            let mut writer = odb.packwriter()?;
            writer
                .write_all(&bytes)
                .map_err(|e| super::GitError::Other(format!("writing a pack: {e}")))?;
            writer.commit()?;
            // The store's own handle looks for the new pack.
            self.repo.odb()?.refresh()?;
            Ok(tree)
        })();
        // libgit2 gives an index one owner, and clears it whenever a
        // repository lets go of it (setting the same index again included):
        // the bulk handle lets go first, then the store's takes it back.
        bulk.set_index(&mut git2::Index::new()?)?;
        self.repo.set_index(&mut git2::Index::new()?)?;
        self.repo.set_index(&mut self.index)?;
        written
    }
}

/// New files a snapshot writes as loose objects before it writes a pack.
pub(super) const BULK: usize = 512;
