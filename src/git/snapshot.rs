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
    /// FIFO), files with other names (hard links), files in a folder laid
    /// out as a git dir, and credential-shaped files (`.env`, keys), which
    /// must not land in the user's object store.
    pub(super) fn snapshot_tree(&mut self) -> Result<Oid> {
        let workdir = self
            .repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        let spec = self.pathspec();
        // Whether a folder is laid out as a git dir, each asked once.
        let git_dirs: std::cell::RefCell<std::collections::HashMap<std::path::PathBuf, bool>> =
            Default::default();
        let in_git_dir = |path: &Path| -> bool {
            path.ancestors().skip(1).any(|a| {
                if a.as_os_str().is_empty() {
                    return false;
                }
                if let Some(&known) = git_dirs.borrow().get(a) {
                    return known;
                }
                let is = crate::paths::is_git_dir(&workdir.join(a));
                git_dirs.borrow_mut().insert(a.to_path_buf(), is);
                is
            })
        };
        let left_out = |path: &Path| -> i32 {
            if crate::paths::credential_reason(&path.to_string_lossy()).is_some() {
                return 1;
            }
            // A folder git would keep as a nested repository (`sub/`, with
            // a `.git` in it) that is none (a planted `.git` file leading
            // nowhere): libgit2 fails the whole snapshot on it, so it is
            // left out.
            if path.as_os_str().as_encoded_bytes().ends_with(b"/")
                && git2::Repository::open(workdir.join(path)).is_err()
            {
                return 1;
            }
            match std::fs::symlink_metadata(workdir.join(path)) {
                Ok(m) if m.is_file() && m.len() > MAX_FILE_BYTES => 1,
                Ok(m) if !m.is_file() && !m.file_type().is_symlink() && !m.is_dir() => 1,
                // A file with other names may be one outside the workspace.
                Ok(m) if m.is_file() && std::os::unix::fs::MetadataExt::nlink(&m) > 1 => 1,
                // A repository's insides under another name than `.git`
                // (a bare mirror, a git dir laid out in a folder): its
                // config holds tokens, and it is not the project's.
                _ if in_git_dir(path) => 1,
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

    /// The rest of a snapshot with many new files, without git's per-file
    /// work (libgit2's `add_all` looks up attributes and filters for every
    /// file: most of 36 s for 100,000): what differs between the index and
    /// the work tree is listed once, each file is written as it is on disk
    /// into memory through a second handle on the repository, the index is
    /// rebuilt in path order (an insert in the middle moves every entry
    /// after it), and the objects go to disk as one pack.
    fn bulk_snapshot(&mut self, spec: &str, left_out: &dyn Fn(&Path) -> i32) -> Result<Oid> {
        use std::collections::BTreeMap;
        let workdir = self
            .repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        let bulk = Repository::open(self.repo.path())?;
        // The second handle's object store is memory only: a write there
        // first asks every backend whether the object exists, and a miss
        // in the repository's packs rescans their folder — once a file.
        // The index holds every entry, so writing the trees reads nothing.
        let odb = git2::Odb::new()?;
        let _mempack = odb.add_new_mempack_backend(1000)?;
        bulk.set_odb(&odb)?;
        let mut opts = git2::DiffOptions::new();
        opts.pathspec(spec)
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_typechange(true)
            .ignore_submodules(true);
        let diff = self
            .repo
            .diff_index_to_workdir(Some(&self.index), Some(&mut opts))?;
        // Entries by (path, stage), as the index orders them.
        let stage = |e: &git2::IndexEntry| (e.flags >> 12) & 3;
        let mut entries: BTreeMap<(Vec<u8>, u16), git2::IndexEntry> = self
            .index
            .iter()
            .map(|e| ((e.path.clone(), stage(&e)), e))
            .collect();
        let mut written = Vec::new();
        for d in diff.deltas() {
            let Some(rel) = d.new_file().path().or_else(|| d.old_file().path()) else {
                continue;
            };
            let key = rel.as_os_str().as_encoded_bytes().to_vec();
            let drop_all = |entries: &mut BTreeMap<(Vec<u8>, u16), git2::IndexEntry>| {
                for s in 0..4 {
                    entries.remove(&(key.clone(), s));
                }
            };
            match d.status() {
                git2::Delta::Deleted => drop_all(&mut entries),
                git2::Delta::Untracked
                | git2::Delta::Modified
                | git2::Delta::Typechange
                | git2::Delta::Added => {
                    if left_out(rel) != 0 {
                        continue;
                    }
                    if let Some(entry) = entry_of(&odb, &workdir, rel, &key)? {
                        written.push(entry.id);
                        drop_all(&mut entries);
                        entries.insert((key.clone(), 0), entry);
                    }
                }
                _ => {}
            }
        }
        let mut index = git2::Index::new()?;
        for e in entries.values() {
            index.add(e)?;
        }
        bulk.set_index(&mut index)?;
        // Every blob was just written: libgit2 need not look each one up
        // again before it writes the trees (a process-wide switch, put
        // back at once).
        git2::opts::strict_object_creation(false);
        let tree = index.write_tree_to(&bulk);
        git2::opts::strict_object_creation(true);
        let tree = tree?;
        pack_into(&bulk, &self.repo, written, tree)?;
        // The store's own handle looks for the new pack, and takes the new
        // index. libgit2 gives an index one owner and clears it whenever a
        // repository lets go of it: the bulk handle lets go first.
        self.repo.odb()?.refresh()?;
        bulk.set_index(&mut git2::Index::new()?)?;
        self.repo.set_index(&mut index)?;
        self.index = index;
        Ok(tree)
    }
}

/// The index entry of the file at `rel` as it is now, its blob written to
/// `odb`; None when it is gone, unreadable, or neither a file nor a link.
fn entry_of(
    odb: &git2::Odb<'_>,
    workdir: &Path,
    rel: &Path,
    key: &[u8],
) -> Result<Option<git2::IndexEntry>> {
    use std::os::unix::fs::MetadataExt;
    let abs = workdir.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&abs) else {
        return Ok(None);
    };
    let link = meta.file_type().is_symlink();
    let content = if link {
        match std::fs::read_link(&abs) {
            Ok(t) => t.as_os_str().as_encoded_bytes().to_vec(),
            Err(_) => return Ok(None),
        }
    } else if meta.is_file() {
        // Opened without following a link anywhere on the way, and only
        // while it has one name: what was checked above is what is read.
        match crate::paths::read_checked(&abs, MAX_FILE_BYTES) {
            Ok(c) => c,
            Err(_) => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let id = odb.write(git2::ObjectType::Blob, &content)?;
    let mode = if link {
        0o120000
    } else if meta.mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    };
    let time = |s: i64, ns: i64| git2::IndexTime::new(s as i32, ns as u32);
    Ok(Some(git2::IndexEntry {
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        dev: meta.dev() as u32,
        ino: meta.ino() as u32,
        mode,
        uid: meta.uid(),
        gid: meta.gid(),
        file_size: meta.len() as u32,
        id,
        flags: key.len().min(0xfff) as u16,
        flags_extended: 0,
        path: key.to_vec(),
    }))
}

/// Writes what a bulk pass made in `bulk`'s memory store (the files'
/// blobs, the tree `tree` and the trees under it; a tree already on disk
/// is only a duplicate) to `repo`'s store as one pack.
fn pack_into(bulk: &Repository, repo: &Repository, written: Vec<Oid>, tree: Oid) -> Result<()> {
    let mut pack = bulk.packbuilder()?;
    for id in written {
        pack.insert_object(id, None)?;
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
    let disk = repo.odb()?;
    let mut writer = disk.packwriter()?;
    writer
        .write_all(&bytes)
        .map_err(|e| super::GitError::Other(format!("writing a pack: {e}")))?;
    writer.commit()?;
    Ok(())
}

/// New files a snapshot writes as loose objects before it writes a pack.
pub(super) const BULK: usize = 512;
