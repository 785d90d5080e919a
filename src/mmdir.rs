//! mm's own folder in a workspace, `.mm/`, and what mm writes in it
//! (session logs, the language servers' log, the clipboard fallback):
//! every folder and file is opened relative to its parent's descriptor
//! with `O_NOFOLLOW`, so a symlink planted in a cloned repository
//! (`.mm -> ~`, `.mm/lsp.log -> ~/.bashrc`) cannot make mm write outside
//! the workspace (issue 9: it appended to files outside).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};

/// An open folder, reached without following a symlink at its last step.
#[derive(Debug)]
pub struct MmDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// How a file in the folder is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// Read only.
    Read,
    /// Read and write, existing.
    Update,
    /// Append, created when missing.
    Append,
    /// Created; fails when it exists.
    CreateNew,
    /// Created or emptied.
    Replace,
}

fn refused(path: &Path, e: Errno) -> io::Error {
    if e == Errno::ELOOP || e == Errno::ENOTDIR {
        return io::Error::other(format!(
            "{} is a symlink (or not a folder): mm does not write through it",
            path.display()
        ));
    }
    io::Error::other(format!("{}: {}", path.display(), e.desc()))
}

impl MmDir {
    /// Opens the folder `dir` (creating it, mode 0700), refusing it when it
    /// is a symlink. Its parent is opened as it is (the workspace root).
    pub fn open(dir: &Path) -> io::Result<MmDir> {
        let parent = dir.parent().unwrap_or(Path::new("/"));
        let name = dir
            .file_name()
            .ok_or_else(|| io::Error::other(format!("{} has no name", dir.display())))?;
        let pfd = nix::fcntl::open(
            parent,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| refused(parent, e))?;
        Self::child(&pfd, Path::new(name), dir.to_path_buf())
    }

    fn child(parent: &impl AsFd, name: &Path, path: PathBuf) -> io::Result<MmDir> {
        match mkdirat(parent, name, Mode::from_bits_truncate(0o700)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(refused(&path, e)),
        }
        let fd = openat(
            parent,
            name,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| refused(&path, e))?;
        Ok(MmDir { fd, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A subfolder (created when missing), never through a symlink.
    pub fn subdir(&self, name: &str) -> io::Result<MmDir> {
        Self::child(&self.fd, Path::new(name), self.path.join(name))
    }

    /// A file in this folder, never through a symlink, mode 0600 when it
    /// is created. Only regular files open (a FIFO would block mm).
    pub fn file(&self, name: &str, how: Open) -> io::Result<File> {
        let base = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let flags = base
            | match how {
                Open::Read => OFlag::O_RDONLY,
                Open::Update => OFlag::O_RDWR,
                Open::Append => OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT,
                Open::CreateNew => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
                // Emptied once it is known to be a file of one name.
                Open::Replace => OFlag::O_WRONLY | OFlag::O_CREAT,
            };
        let path = self.path.join(name);
        let fd = openat(&self.fd, name, flags, Mode::from_bits_truncate(0o600)).map_err(|e| {
            if e == Errno::EEXIST {
                io::Error::from(io::ErrorKind::AlreadyExists)
            } else if e == Errno::ENOENT {
                io::Error::from(io::ErrorKind::NotFound)
            } else {
                refused(&path, e)
            }
        })?;
        let file = File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        // A file with other names may be one outside the workspace.
        if how != Open::Read && std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            return Err(io::Error::other(format!(
                "{} has other names (a hard link): mm does not write through it",
                path.display()
            )));
        }
        if how == Open::Replace {
            file.set_len(0)?;
        }
        // Back to blocking I/O for a regular file.
        nix::fcntl::fcntl(
            &file,
            nix::fcntl::FcntlArg::F_SETFL(flags.difference(OFlag::O_NONBLOCK) & OFlag::O_APPEND),
        )
        .map_err(|e| refused(&path, e))?;
        Ok(file)
    }

    /// Writes `bytes` to `name` (created or replaced).
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let mut f = self.file(name, Open::Replace)?;
        f.write_all(bytes)
    }

    /// Reads `name` whole.
    pub fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut f = self.file(name, Open::Read)?;
        let mut out = Vec::new();
        f.read_to_end(&mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_symlink_is_never_followed() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("bashrc");
        std::fs::write(&target, "mine\n").unwrap();
        let mm = MmDir::open(&ws.path().join(".mm")).unwrap();
        std::os::unix::fs::symlink(&target, ws.path().join(".mm/lsp.log")).unwrap();
        assert!(mm.file("lsp.log", Open::Append).is_err());
        assert!(mm.write("lsp.log", b"x").is_err());
        std::os::unix::fs::symlink(outside.path(), ws.path().join(".mm/sessions")).unwrap();
        assert!(mm.subdir("sessions").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);

        let ws2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws2.path().join(".mm")).unwrap();
        let e = MmDir::open(&ws2.path().join(".mm")).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    #[test]
    fn a_file_with_other_names_is_not_written_nor_emptied() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("bashrc");
        std::fs::write(&target, "mine\n").unwrap();
        let mm = MmDir::open(&ws.path().join(".mm")).unwrap();
        std::fs::hard_link(&target, ws.path().join(".mm/results.jsonl")).unwrap();
        assert!(mm.file("results.jsonl", Open::Append).is_err());
        assert!(mm.write("results.jsonl", b"x").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
        assert_eq!(mm.read("results.jsonl").unwrap(), b"mine\n");
        mm.write("fresh", b"one").unwrap();
        mm.write("fresh", b"2").unwrap();
        assert_eq!(mm.read("fresh").unwrap(), b"2");
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let ws = tempfile::tempdir().unwrap();
        let mm = MmDir::open(&ws.path().join(".mm")).unwrap();
        nix::unistd::mkfifo(&ws.path().join(".mm/copied.md"), Mode::S_IRWXU).unwrap();
        assert!(mm.write("copied.md", b"x").is_err());
        assert!(mm.read("copied.md").is_err());
    }

    #[test]
    fn files_are_private_and_append_appends() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let ws = tempfile::tempdir().unwrap();
        let mm = MmDir::open(&ws.path().join(".mm")).unwrap();
        mm.file("log", Open::Append)
            .unwrap()
            .write_all(b"a")
            .unwrap();
        mm.file("log", Open::Append)
            .unwrap()
            .write_all(b"b")
            .unwrap();
        assert_eq!(mm.read("log").unwrap(), b"ab");
        let mode = std::fs::metadata(ws.path().join(".mm/log"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(mm.file("log", Open::CreateNew).is_err());
    }
}
