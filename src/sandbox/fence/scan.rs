//! The workspace walk: what in it needs a mount of its own (credential
//! files, files with other names, `.mm` folders and their records, nested
//! git dirs), each folder's listing kept and read again only when it
//! changed.

use super::*;

/// What in the workspace needs a mount of its own in the fence.
#[derive(Default)]
pub(super) struct Found {
    /// Credential files (`.env*`, keys).
    pub(super) secrets: Vec<PathBuf>,
    /// Files with more than one name.
    pub(super) linked: Vec<PathBuf>,
    /// `.mm` folders, the root's too.
    pub(super) mm: Vec<PathBuf>,
    /// mm's records in them.
    pub(super) private: Vec<PathBuf>,
    /// Git dirs below the root (a nested repository's, under any name).
    pub(super) git_dirs: Vec<PathBuf>,
    /// Every entry was looked at.
    pub(super) complete: bool,
}

/// Entries read afresh in one walk before mm gives up on a workspace: code
/// nobody approved does not run in one it could not look through. What a
/// walk read is kept, so the next walk goes on from there.
pub(super) const MAX_SCANNED: usize = 1_000_000;

/// mm's records in the `.mm` folder `mm`.
pub(super) fn private_records(mm: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(mm)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|i| crate::paths::is_private_mm_entry(&i.file_name().to_string_lossy()))
        .map(|i| i.path())
        .collect()
}

/// What one folder held when it was last read, and the stamp that says
/// whether it still does: a name added, removed or renamed in a folder
/// changes its mtime and ctime (ctime no program can set back), and a
/// folder put in another's place has another inode.
pub(super) struct DirScan {
    pub(super) stamp: (i64, i64, i64, i64, u64),
    pub(super) subdirs: Vec<PathBuf>,
    pub(super) secrets: Vec<PathBuf>,
    pub(super) linked: Vec<PathBuf>,
    /// The names of its other regular files: a name made for one
    /// elsewhere changes the file's link count, not this folder's stamp,
    /// so a kept walk looks at each again (names, not paths: a large
    /// workspace keeps one a file).
    pub(super) files: Vec<std::ffi::OsString>,
    pub(super) private: Vec<PathBuf>,
    pub(super) mm: bool,
    /// It holds HEAD, objects and refs: a git dir.
    pub(super) git: bool,
    /// Entries read.
    pub(super) entries: usize,
}

/// The folders of the last few workspaces walked (scratch copies come and
/// go; the workspace stays).
pub(super) type ScanCache = Vec<(PathBuf, std::collections::HashMap<PathBuf, DirScan>)>;
pub(super) static SCANS: std::sync::Mutex<ScanCache> = std::sync::Mutex::new(Vec::new());
pub(super) const CACHED_ROOTS: usize = 4;

pub(super) fn dir_stamp(m: &std::fs::Metadata) -> (i64, i64, i64, i64, u64) {
    use std::os::unix::fs::MetadataExt;
    (
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
    )
}

/// Reads one folder of the workspace for what `Found` holds.
pub(super) fn read_folder(
    root: &Path,
    dir: &Path,
    stamp: (i64, i64, i64, i64, u64),
) -> Option<DirScan> {
    use std::os::unix::fs::MetadataExt;
    let rd = std::fs::read_dir(dir).ok()?;
    let root_git = root.join(".git");
    let mm = dir != root && dir.file_name() == Some(std::ffi::OsStr::new(".mm"));
    let mut out = DirScan {
        stamp,
        subdirs: Vec::new(),
        secrets: Vec::new(),
        linked: Vec::new(),
        files: Vec::new(),
        private: Vec::new(),
        mm,
        git: false,
        entries: 0,
    };
    let (mut head, mut objects, mut refs) = (false, false, false);
    let (mut commondir, mut config) = (false, false);
    for e in rd.flatten() {
        out.entries += 1;
        let Ok(ft) = e.file_type() else { continue };
        match e.file_name().to_str() {
            // git asks only that HEAD be read and objects and refs be
            // searchable: a link or an executable file passes too.
            Some("HEAD") => head |= !ft.is_dir(),
            Some("objects") => objects = true,
            Some("refs") => refs = true,
            Some("commondir") => commondir |= ft.is_file(),
            Some("config") => config |= ft.is_file(),
            _ => {}
        }
        let p = e.path();
        if mm && crate::paths::is_private_mm_entry(&e.file_name().to_string_lossy()) {
            out.private.push(p.clone());
        }
        let Ok(rel) = p.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy();
        if ft.is_dir() {
            // The repository's own git dir is guarded apart; a `.git` or
            // `.mm` below is walked like any folder (code can move a
            // folder there).
            if p == root_git {
                continue;
            }
            // A folder whose name makes its files credentials (`.ssh`,
            // `.envs`) is hidden whole: as a mount point it cannot be
            // renamed into an ordinary one.
            if crate::paths::credential_reason(&format!("{rel}/x")).is_some() {
                out.secrets.push(p);
                continue;
            }
            out.subdirs.push(p);
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        if crate::paths::credential_reason(&rel).is_some() {
            out.secrets.push(p);
        } else if e.metadata().is_ok_and(|m| m.nlink() > 1) {
            out.linked.push(p);
        } else {
            out.files.push(e.file_name());
        }
    }
    // As `paths::is_git_dir` judges.
    out.git = (head && (objects || commondir)) || (objects && refs && config);
    Some(out)
}

/// A walk of the whole workspace (not into the root's `.git`) for what
/// `Found` holds. Nothing the workspace says is taken into account (a
/// `.gitignore` is code's to change): every folder is walked. A folder
/// whose stamp is what it was at the last walk is not read again (one
/// `lstat` instead of a read and an `lstat` an entry); one changed in the
/// last two seconds always is (a change within the clock's resolution
/// would not show). Up to `MAX_SCANNED` entries are read afresh a walk.
pub(super) fn scan(root: &Path) -> Found {
    use std::os::unix::fs::MetadataExt;
    let mut found = Found::default();
    let mut scans = SCANS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = match scans.iter().position(|(r, _)| r == root) {
        Some(i) => {
            let e = scans.remove(i);
            scans.push(e);
            scans.len() - 1
        }
        None => {
            if scans.len() >= CACHED_ROOTS {
                scans.remove(0);
            }
            scans.push((root.to_path_buf(), std::collections::HashMap::new()));
            scans.len() - 1
        }
    };
    let cache = &mut scans[at].1;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut stack = vec![root.to_path_buf()];
    let mut visited = std::collections::HashSet::new();
    let mut fresh = 0usize;
    while let Some(dir) = stack.pop() {
        let stamp = std::fs::symlink_metadata(&dir)
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .map(|m| dir_stamp(&m));
        let cached = stamp.and_then(|st| cache.get(&dir).filter(|c| c.stamp == st));
        if let Some(c) = cached {
            // A name made elsewhere since the folder was read.
            found.linked.extend(
                c.files
                    .iter()
                    .map(|f| dir.join(f))
                    .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.nlink() > 1)),
            );
        }
        let scanned;
        let entry = match cached {
            Some(c) => c,
            None => {
                let read = stamp.and_then(|st| read_folder(root, &dir, st));
                let Some(read) = read else {
                    // A folder mm cannot read (code made it so, `chmod
                    // 000`) may hold anything: it is hidden whole. The
                    // root must be read.
                    cache.remove(&dir);
                    if dir == root {
                        return found;
                    }
                    found.secrets.push(dir);
                    continue;
                };
                fresh += read.entries + 1;
                if fresh > MAX_SCANNED {
                    return found;
                }
                let recent = read.stamp.0.max(read.stamp.2) >= now - 2;
                if recent {
                    cache.remove(&dir);
                    scanned = read;
                    &scanned
                } else {
                    cache.insert(dir.clone(), read);
                    match cache.get(&dir) {
                        Some(c) => c,
                        None => continue,
                    }
                }
            }
        };
        if entry.git {
            found.git_dirs.push(dir.clone());
        }
        if entry.mm {
            found.mm.push(dir.clone());
            found.private.extend(entry.private.iter().cloned());
        }
        found.secrets.extend(entry.secrets.iter().cloned());
        found.linked.extend(entry.linked.iter().cloned());
        stack.extend(entry.subdirs.iter().cloned());
        visited.insert(dir);
    }
    // Folders gone since the last walk.
    cache.retain(|d, _| visited.contains(d));
    found.linked = outside_named(root, std::mem::take(&mut found.linked));
    found.complete = true;
    found
}

/// The files of `linked` (each had more than one name when its folder
/// was read) with a name the walk did not see: every name of a file
/// cargo links within `target/` is in the workspace, so writing it
/// reaches nothing outside, and its mount would only make the next
/// build fail (EBUSY). Each is looked at afresh: a name made since
/// counts. A name in a place mounted read-only of its own (`.mm/`,
/// `.agent/tools/`, `.gitmodules`) does not count as seen: a second
/// name elsewhere would write through that mount.
pub(super) fn outside_named(root: &Path, linked: Vec<PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // (dev, inode) -> (links, names seen that count, names).
    let mut names: std::collections::HashMap<(u64, u64), (u64, u64, Vec<PathBuf>)> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for p in linked {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_file() => {
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy();
                let guarded = crate::paths::reserved_reason(&rel, true).is_some()
                    || p.file_name() == Some(std::ffi::OsStr::new(".gitmodules"));
                let e = names
                    .entry((m.dev(), m.ino()))
                    .or_insert((m.nlink(), 0, Vec::new()));
                e.0 = e.0.max(m.nlink());
                if !guarded {
                    e.1 += 1;
                }
                e.2.push(p);
            }
            // Gone or changed since: masked as it was found.
            _ => out.push(p),
        }
    }
    for (nlink, seen, paths) in names.into_values() {
        if seen < nlink {
            out.extend(paths);
        }
    }
    out.sort();
    out
}
