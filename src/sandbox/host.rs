//! Programs mm itself starts on the host — the fence, the interpreters of
//! its probes, language servers — are found only where the user put them:
//! absolute PATH entries outside the workspace, then the system's own
//! folders. A workspace PATH entry (an activated `.venv/bin`, `.`,
//! `./node_modules/.bin`) holds what the project, or the model, wrote there.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The workspaces of this process (canonical); PATH entries under any of
/// them are the project's.
fn workspaces() -> &'static Mutex<Vec<PathBuf>> {
    static ROOTS: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    ROOTS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Marks `root` (canonical) as a workspace whose folders are never
/// searched for mm's own programs.
pub fn add_workspace(root: &Path) {
    if let Ok(mut roots) = workspaces().lock()
        && !roots.iter().any(|r| r == root)
    {
        roots.push(root.to_path_buf());
    }
}

const SYSTEM: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

/// True when `p` (links resolved where they can be) lies in a workspace of
/// this process.
pub fn in_workspace(p: &Path) -> bool {
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    workspaces()
        .lock()
        .map(|r| r.iter().any(|w| w != Path::new("/") && real.starts_with(w)))
        .unwrap_or(false)
}

/// The folders searched for mm's own programs, in order.
pub fn dirs() -> Vec<PathBuf> {
    let project: Vec<PathBuf> = workspaces().lock().map(|r| r.clone()).unwrap_or_default();
    dirs_of(&std::env::var_os("PATH").unwrap_or_default(), &project)
}

/// The folders of `path` (then the system's) that are absolute and,
/// links resolved, outside every folder of `project`.
fn dirs_of(path: &std::ffi::OsStr, project: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for d in std::env::split_paths(path).chain(SYSTEM.iter().map(PathBuf::from)) {
        if !d.is_absolute() {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&d) else {
            continue;
        };
        // `/` as a workspace would make every folder the project's.
        if project
            .iter()
            .any(|p| p != Path::new("/") && real.starts_with(p))
            || out.contains(&real)
        {
            continue;
        }
        out.push(real);
    }
    out
}

/// `name` (no `/`) in `dirs`, an executable file, by its absolute path.
pub fn program(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

pub fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_path_entry_is_never_searched() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let bin = root.join(".venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("mm-host-test-prog");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(&bin, dir.path().join("link")).unwrap();
        let path = std::env::join_paths([
            bin.clone(),
            PathBuf::from("."),
            root.join("link"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        // Outside any workspace the venv is searched first…
        assert_eq!(dirs_of(&path, &[])[0], bin);
        // …inside it, neither it, a relative entry nor a link to it is.
        let kept = dirs_of(&path, std::slice::from_ref(&root));
        assert!(kept.iter().all(|d| !d.starts_with(&root)), "{kept:?}");
        assert_eq!(kept[0], std::fs::canonicalize("/usr/bin").unwrap());
        add_workspace(&root);
        assert_eq!(program("mm-host-test-prog"), None);
        assert!(program("sh").is_some_and(|p| p.is_absolute()));
        assert_eq!(program("../sh"), None);
    }
}
