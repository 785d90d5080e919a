//! The path jail for the file tools and the exec gate, and the
//! credential gate.
//!
//! A path is resolved the way the kernel would: component by component,
//! each symlink on the way replaced by its target (which must be inside
//! the root; a dangling one is refused, because writing through it would
//! create a file wherever it points), and `..` taken from where the path
//! really is, not from its text (`link/..` with `link -> .` is the root's
//! parent). Reserved names (`.git`, `.mm`) are then checked on every
//! component of the resolved path, so `gitlink -> .git` followed by
//! `gitlink/config` or a nested `sub/.git/config` is caught.

use std::path::{Component, Path, PathBuf};

mod git;
pub use git::*;

/// A path the file tools may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute path inside the root, symlinks resolved as far as the
    /// path exists.
    pub abs: PathBuf,
    /// Relative to the root, `/`-separated, for messages and receipts.
    pub rel: String,
}

/// Why a path is not one the tools may use. The words go to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("empty path")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    /// The path as shown (escaped).
    #[error("{0} contains a control character")]
    Control(String),
    #[error("{input} is outside the workspace ({root}){hint}")]
    OutsideRoot {
        input: String,
        root: String,
        /// What the model may have meant, when a file of the workspace
        /// ends the same way.
        hint: String,
    },
    #[error("{input} goes through a symlink that leaves the workspace (to {target})")]
    SymlinkLeaves { input: String, target: String },
    #[error("{0} goes through a dangling symlink")]
    DanglingSymlink(String),
    #[error("{0} leaves the workspace")]
    Leaves(String),
    #[error("{0} is outside the workspace")]
    Outside(String),
    #[error("the sandbox is read-only: no file may be written")]
    ReadOnly,
    #[error(
        "plan mode: nothing is written until the user approves a plan; end with the numbered plan"
    )]
    Planning,
    #[error("the workspace root itself cannot be written")]
    Root,
    /// A credential or a path mm keeps for itself.
    #[error("refused: {0}")]
    Reserved(String),
}

impl From<PathError> for String {
    fn from(e: PathError) -> String {
        e.to_string()
    }
}

/// The workspace's own path an absolute path outside it most likely
/// meant: its longest tail that names something in the workspace (a
/// small model wrote the workspace's parent folder in front of a file).
fn meant_inside(given: &Path, root: &Path) -> Option<String> {
    let parts: Vec<_> = given
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    (0..parts.len()).find_map(|skip| {
        let tail: PathBuf = parts[skip..].iter().collect();
        let tail_text = tail.to_str()?;
        (!tail_text.is_empty() && std::fs::symlink_metadata(root.join(&tail)).is_ok())
            .then(|| tail_text.to_string())
    })
}

/// Resolves `input` inside `root` (which must be canonical).
pub fn resolve(root: &Path, input: &str) -> Result<Resolved, PathError> {
    let input = input.trim();
    if input.is_empty() {
        return Err(PathError::Empty);
    }
    if input.contains('\0') {
        return Err(PathError::Nul);
    }
    if input.chars().any(char::is_control) {
        // A name with an escape sequence spoofs every listing it is in.
        return Err(PathError::Control(
            crate::untrusted::displayable(input).into_owned(),
        ));
    }
    let given = Path::new(input);
    let rel_input: PathBuf = if given.is_absolute() {
        match given.strip_prefix(root) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => {
                return Err(PathError::OutsideRoot {
                    input: input.to_string(),
                    root: root.display().to_string(),
                    hint: meant_inside(given, root)
                        .map(|rel| {
                            format!("; paths are relative to the workspace: did you mean {rel}?")
                        })
                        .unwrap_or_else(|| "; paths are relative to the workspace".into()),
                });
            }
        }
    } else {
        given.to_path_buf()
    };
    let mut cur = root.to_path_buf();
    // Once a component does not exist, the rest cannot be symlinks.
    let mut on_disk = true;
    for comp in rel_input.components() {
        match comp {
            Component::Normal(p) => {
                cur.push(p);
                if !on_disk {
                    continue;
                }
                match std::fs::symlink_metadata(&cur) {
                    Err(_) => on_disk = false,
                    Ok(meta) if meta.file_type().is_symlink() => {
                        match std::fs::canonicalize(&cur) {
                            Ok(target) if target.starts_with(root) => cur = target,
                            Ok(target) => {
                                return Err(PathError::SymlinkLeaves {
                                    input: input.to_string(),
                                    target: target.display().to_string(),
                                });
                            }
                            Err(_) => {
                                return Err(PathError::DanglingSymlink(input.to_string()));
                            }
                        }
                    }
                    Ok(_) => {}
                }
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if cur == root {
                    return Err(PathError::Leaves(input.to_string()));
                }
                cur.pop();
                // Back in a folder that exists (`new/x/../../out`, made
                // by `mkdir -p` first): what follows is on disk again, and
                // its links count.
                on_disk = std::fs::symlink_metadata(&cur).is_ok();
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Outside(input.to_string()));
            }
        }
    }
    let rel = match cur.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
        Ok(r) => r.to_string_lossy().replace('\\', "/"),
        Err(_) => return Err(PathError::Outside(input.to_string())),
    };
    Ok(Resolved { abs: cur, rel })
}

/// True when `path`, links followed, lies inside `within`.
pub fn resolves_inside(path: &Path, within: &Path) -> bool {
    match (std::fs::canonicalize(path), std::fs::canonicalize(within)) {
        (Ok(p), Ok(w)) => p.starts_with(w),
        _ => false,
    }
}

/// A regular file of at most 1 MiB as UTF-8 text (see `read_regular`).
pub fn read_small_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, 1024 * 1024)?)
        .map_err(|_| std::io::Error::other("is not UTF-8 text"))
}

/// Reads a regular file of at most `limit` bytes. Anything else (a FIFO,
/// a device, a socket) is refused at once: reading a FIFO a model made
/// froze mm, Ctrl-C included (issue 9). Opened non-blocking and checked on
/// the open descriptor, so a swap after a check cannot slip in.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    read_opened(file, limit, false)
}

/// The bytes of an open file when it is a regular file of at most
/// `limit` bytes (and, with `one_name`, has no other names).
fn read_opened(file: std::fs::File, limit: u64, one_name: bool) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "is not a regular file (a FIFO, device or socket)",
        ));
    }
    if one_name && meta.nlink() > 1 {
        return Err(std::io::Error::other(
            "has other names (hard links) now, which may lie outside the workspace",
        ));
    }
    if meta.len() > limit {
        return Err(std::io::Error::other(format!(
            "is {} bytes: too big to read",
            meta.len()
        )));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::other("grew too big while it was read"));
    }
    Ok(out)
}

/// Opens the folder `dir` one component at a time from `/`, with
/// `O_NOFOLLOW` on each: `dir` is a path `resolve` made (links resolved,
/// the root canonical), so a link met now is a folder swapped for one
/// after the check, and the open is refused instead of followed out of
/// the workspace. `create` makes missing folders (0755) on the way.
pub fn open_dir_strict(dir: &Path, create: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::errno::Errno;
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::{Mode, mkdirat};
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let swapped = |e: Errno| match e {
        Errno::ELOOP | Errno::ENOTDIR => std::io::Error::other(format!(
            "a folder on the way to {} is not one any more (a link was put in its place)",
            dir.display()
        )),
        e => std::io::Error::from(e),
    };
    let mut fd = open("/", flags, Mode::empty()).map_err(swapped)?;
    for comp in dir.components() {
        match comp {
            Component::RootDir => {}
            Component::Normal(name) => {
                let next = match openat(&fd, name, flags, Mode::empty()) {
                    Err(Errno::ENOENT) if create => {
                        match mkdirat(&fd, name, Mode::from_bits_truncate(0o755)) {
                            Ok(()) | Err(Errno::EEXIST) => {}
                            Err(e) => return Err(swapped(e)),
                        }
                        openat(&fd, name, flags, Mode::empty())
                    }
                    r => r,
                };
                fd = next.map_err(swapped)?;
            }
            _ => {
                return Err(std::io::Error::other(format!(
                    "{} is not a plain absolute path",
                    dir.display()
                )));
            }
        }
    }
    Ok(fd)
}

/// The folder a file lies in, opened strictly, and the file's name.
fn parent_strict(
    path: &Path,
    create: bool,
) -> std::io::Result<(std::os::fd::OwnedFd, std::ffi::OsString)> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other(format!(
            "{} has no folder",
            path.display()
        )));
    };
    Ok((open_dir_strict(parent, create)?, name.to_os_string()))
}

/// `read_regular` for a path the sandbox checked (`Resolved::abs`): no
/// link is followed on the way or at the end, and a file that has other
/// names by now is refused, so swapping a folder or the file for a link
/// (or a hard link) between the check and the read reads nothing outside.
pub fn read_checked(abs: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let (dir, name) = parent_strict(abs, false)?;
    let fd = openat(
        &dir,
        name.as_os_str(),
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        nix::errno::Errno::ELOOP => {
            std::io::Error::other("is a link now (it was not when checked)")
        }
        e => std::io::Error::from(e),
    })?;
    read_opened(std::fs::File::from(fd), limit, true)
}

/// `read_checked` as UTF-8 text, up to 8 MiB.
pub fn read_checked_text(abs: &Path) -> std::io::Result<String> {
    String::from_utf8(read_checked(abs, 8 << 20)?)
        .map_err(|_| std::io::Error::other("is not UTF-8 text"))
}

/// Writes `content` to `path` (a path the sandbox checked) through a
/// private temp file in the same folder and a rename, so a crash leaves
/// the old file or the new one. The folder is opened strictly (see
/// `open_dir_strict`, missing ones made) and the temp file and the rename
/// go through it: a folder swapped for a link after the check cannot send
/// the write outside. `mode` None keeps the old file's permissions (0644
/// for a new one).
pub fn write_checked(path: &Path, content: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{AtFlags, OFlag, openat, renameat};
    use nix::sys::stat::{Mode, SFlag, fchmod, fstatat};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::io::Write;
    let (dir, name) = parent_strict(path, true)?;
    let mode = mode.unwrap_or_else(|| {
        match fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG => {
                st.st_mode & 0o7777
            }
            _ => 0o644,
        }
    });
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let (tmp, fd) = (0..64u32)
        .find_map(|i| {
            let tmp = format!(
                ".mm-write-{}-{:08x}",
                std::process::id(),
                stamp.wrapping_add(i.wrapping_mul(0x9e37_79b9))
            );
            match openat(
                &dir,
                tmp.as_str(),
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o600),
            ) {
                Err(Errno::EEXIST) => None,
                r => Some(r.map(|fd| (tmp, fd))),
            }
        })
        .unwrap_or(Err(Errno::EEXIST))?;
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::from(fd);
        file.write_all(content)?;
        file.sync_all()?;
        fchmod(&file, Mode::from_bits_truncate(mode))?;
        renameat(&dir, tmp.as_str(), &dir, name.as_os_str())?;
        Ok(())
    })();
    if written.is_err() {
        let _ = unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
    }
    written
}

/// Removes the file (or link) `path` names, through its folder opened
/// strictly: a folder swapped for a link removes nothing outside.
pub fn remove_checked(path: &Path) -> std::io::Result<()> {
    use nix::unistd::{UnlinkatFlags, unlinkat};
    let (dir, name) = parent_strict(path, false)?;
    unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir).map_err(std::io::Error::from)
}

/// Makes `path` a symbolic link to `target` (what was there goes),
/// through its folder opened strictly.
pub fn symlink_checked(target: &Path, path: &Path) -> std::io::Result<()> {
    use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};
    let (dir, name) = parent_strict(path, true)?;
    let _ = unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir);
    symlinkat(target, &dir, name.as_os_str()).map_err(std::io::Error::from)
}

/// The largest ignore file a walk reads: a sparse `.gitignore` of 6 GB
/// was read as one line.
const MAX_IGNORE_FILE: u64 = 256 << 10;
/// The most bytes of ignore files a walk keeps compiled at once, along one
/// path (the walker holds the matchers of every folder above the one it
/// is in; a pattern costs it over a hundred times its bytes).
const MAX_IGNORE_PATH: u64 = 512 << 10;

/// The bytes of the ignore files a walk reads in `dir`.
fn ignore_bytes(dir: &Path) -> u64 {
    [".gitignore", ".ignore"]
        .iter()
        .filter_map(|n| std::fs::symlink_metadata(dir.join(n)).ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

/// The ignore files a directory walk reads in `dir`: when one is not a
/// regular file (a FIFO, a link) or is too big, reading it would block
/// or take all memory (git itself hangs on a FIFO named .gitignore).
fn special_ignore_file(dir: &Path) -> bool {
    [".gitignore", ".ignore", ".git/info/exclude"]
        .iter()
        .any(|n| {
            std::fs::symlink_metadata(dir.join(n))
                .is_ok_and(|m| (!m.is_file() && !m.is_dir()) || m.len() > MAX_IGNORE_FILE)
        })
}

/// The walker every listing and search uses: hidden files seen, .gitignore
/// honoured even outside git, `.git` and `.mm` left out, and a folder whose
/// ignore file is not a regular file never entered. When the start folder
/// or one above it has such a file, ignore files are not read at all.
///
/// The library's own `info/exclude` lookup is off: for a folder whose
/// `.git` is a file it follows `gitdir:` (from the process's working
/// folder) and `commondir` wherever they lead, links and `/dev/zero`
/// included. The exclude file of the repository the walk is in is added
/// instead, when it is a regular file of bounded size.
pub fn walk(base: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(base);
    let above: u64 = base.ancestors().skip(1).map(ignore_bytes).sum();
    let start = base.to_path_buf();
    b.hidden(false)
        .require_git(false)
        .git_exclude(false)
        .filter_entry(move |e| {
            let n = e.file_name();
            if n == ".git" || n == ".mm" {
                return false;
            }
            if !e.file_type().is_some_and(|t| t.is_dir()) {
                return true;
            }
            if special_ignore_file(e.path()) {
                return false;
            }
            // Ignore files along the path, together, within bounds: a
            // folder that would pass them is not entered.
            let along: u64 = e
                .path()
                .ancestors()
                .take_while(|a| a.starts_with(&start))
                .map(ignore_bytes)
                .sum();
            above + along <= MAX_IGNORE_PATH
        });
    if above > MAX_IGNORE_PATH || base.ancestors().any(special_ignore_file) {
        b.git_ignore(false).ignore(false).parents(false);
        return b;
    }
    let exclude = base
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok_and(|m| m.is_dir()))
        .map(|d| d.join(".git/info/exclude"));
    if let Some(exclude) = exclude
        && std::fs::symlink_metadata(&exclude).is_ok_and(|m| m.is_file())
    {
        let _ = b.add_ignore(exclude);
    }
    b
}

/// Credential-shaped paths: the file tools refuse them, the exec gate
/// asks, checkpoints leave them out.
pub fn credential_reason(rel: &str) -> Option<String> {
    let components: Vec<&str> = rel.split('/').collect();
    for dir in &components[..components.len().saturating_sub(1)] {
        // `.envs/.production/.postgres` (cookiecutter-django's layout).
        if matches!(
            *dir,
            ".ssh" | ".aws" | ".gnupg" | ".kube" | ".docker" | ".azure" | ".gcloud"
        ) || dir.to_ascii_lowercase().starts_with(".env")
        {
            return Some(format!("{rel} is inside {dir}/, which holds credentials"));
        }
    }
    let name = components.last().copied().unwrap_or("");
    is_credential_name(name).then(|| format!("{rel} looks like a credential file"))
}

/// A file name that looks like it holds a secret.
pub fn is_credential_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // Templates of secrets are documentation (`.env.example`).
    if [".example", ".sample", ".template", ".dist"]
        .iter()
        .any(|t| lower.ends_with(t))
    {
        return false;
    }
    lower.starts_with(".env")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_dsa")
        || lower.starts_with("id_ecdsa")
        || lower.starts_with("id_ed25519")
        || [
            ".pem",
            ".key",
            ".p12",
            ".pfx",
            ".keystore",
            ".jks",
            ".tfvars",
            ".tfstate",
            ".tfstate.backup",
        ]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || matches!(
            lower.as_str(),
            ".netrc"
                | ".git-credentials"
                | ".npmrc"
                | ".pypirc"
                | "credentials"
                | ".htpasswd"
                | ".dev.vars"
        )
        || [
            "credentials",
            "secrets",
            "secret",
            ".secrets",
            ".secret",
            "service-account",
            "service_account",
        ]
        .iter()
        .any(|stem| {
            lower.strip_prefix(stem).is_some_and(|rest| {
                matches!(
                    rest,
                    ".json" | ".yml" | ".yaml" | ".toml" | ".ini" | ".txt" | ".env"
                )
            })
        })
}

/// Parts of the workspace that belong to mm or git, not to the model,
/// checked on every component of a resolved relative path.
pub fn reserved_reason(rel: &str, write: bool) -> Option<String> {
    // At every depth: a `sub/.mm` is mm's own folder when mm runs in `sub`.
    let parts: Vec<&str> = rel.split('/').collect();
    if let Some(w) = parts
        .windows(2)
        .find(|w| w[0] == ".mm" && is_private_mm_entry(w[1]))
    {
        return Some(format!(
            ".mm/{} is mm's own record (session logs, traces, exports, logs): off limits",
            w[1]
        ));
    }
    if !write {
        return None;
    }
    if parts.contains(&".mm") {
        return Some(".mm/ is mm's own folder: the file tools do not write it".into());
    }
    // The Go agent's tools and commands load as mm's own: as `.mm/`.
    if parts
        .windows(2)
        .any(|w| w[0] == ".agent" && matches!(w[1], "tools" | "commands"))
    {
        return Some(format!(
            "{rel} is a tool or command mm loads (the Go agent's .agent/): the file tools do not write it"
        ));
    }
    if rel.split('/').any(|c| c == ".git") {
        return Some(format!(
            "{rel} is inside a .git folder: the file tools do not write git's internals"
        ));
    }
    None
}

/// What in a `.mm` folder is mm's record of the user's sessions, read by
/// no tool and no code mm runs: the session logs, the traces of requests,
/// exports, its logs and the answer it copied.
pub fn is_private_mm_entry(name: &str) -> bool {
    matches!(
        name,
        "sessions" | "traces" | "exports" | "outputs" | "copied.md"
    ) || name.ends_with(".log")
}

/// A file mm reads on its own account and sends to the model (AGENTS.md,
/// CLAUDE.md, a prompt override): where it really is, when it is a
/// regular file of one name inside `within` that the file tools could
/// read too — not credential-shaped, not in a git dir under any name, not
/// mm's records; else why not. A link inside the workspace to such a file
/// (`AGENTS.md -> .git/config`) is read no more than the file itself.
pub fn own_file(path: &Path, within: &Path) -> Result<PathBuf, String> {
    let shown = path.display();
    let real = std::fs::canonicalize(path).map_err(|e| format!("{shown}: {e}"))?;
    let within = std::fs::canonicalize(within).unwrap_or_else(|_| within.to_path_buf());
    let rel = real
        .strip_prefix(&within)
        .map_err(|_| "it links outside the workspace".to_string())?
        .to_string_lossy()
        .into_owned();
    if let Some(why) = credential_reason(&rel)
        .or_else(|| reserved_reason(&rel, false))
        .or_else(|| hard_link_reason(&rel, &real))
    {
        return Err(why);
    }
    let in_git = rel.split('/').any(|c| c == ".git")
        || real
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&within))
            .any(is_git_dir);
    if in_git {
        return Err(format!("{rel} is git's, not the project's"));
    }
    Ok(real)
}

/// A file with other names (hard links): where they lie cannot be seen,
/// so it is treated as outside the workspace (a hard link to a file
/// outside would read or change that file).
pub fn hard_link_reason(rel: &str, abs: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(abs).ok()?;
    (meta.is_file() && meta.nlink() > 1).then(|| {
        format!(
            "{rel} has {} names (hard links), and the others may lie outside the workspace",
            meta.nlink()
        )
    })
}

/// Whether the harness may look into a workspace file it found by a walk
/// (for names, line numbers, imports): what `read_file` would refuse for
/// its name or its other names is left out.
pub fn scannable(rel: &str, abs: &Path) -> bool {
    credential_reason(rel).is_none()
        && reserved_reason(rel, false).is_none()
        && hard_link_reason(rel, abs).is_none()
}

/// A shell glob (one path component) in globset's syntax, matching what
/// `sh` matches: braces and commas are plain characters there (globset
/// reads `{a,b}` as a choice), a backslash is a plain character (the lexer
/// has removed quoting). `[^…]` is refused: dash reads `^` as a character,
/// bash as "not" (the red team matched `[^-]*` to `--compress-program=sh`).
fn sh_glob(comp: &str) -> Result<String, String> {
    if comp.contains("[^") {
        return Err(format!("a glob the shells read differently ({comp})"));
    }
    let mut out = String::with_capacity(comp.len() + 8);
    for c in comp.chars() {
        match c {
            '{' | '}' | ',' | '\\' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The folder a glob lies in: its text up to the first component with a
/// glob character (`src/*/x` → `src`, `*` → ``).
pub fn glob_base(pattern: &str) -> String {
    let mut kept = Vec::new();
    for comp in pattern.split('/') {
        if comp.contains(['*', '?', '[']) {
            break;
        }
        kept.push(comp);
    }
    let joined = kept.join("/");
    if pattern.starts_with('/') && joined.is_empty() {
        "/".to_string()
    } else {
        joined
    }
}

/// The paths an unquoted glob would expand to, from `base` (absolute,
/// inside the workspace): Err when the expansion could reach `..` (a
/// component like `.*`) or is too big to check. An empty result means
/// the shell passes the word on as it is.
pub fn glob_matches(base: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    const MAX_MATCHES: usize = 2000;
    let (mut found, rest) = match pattern.strip_prefix('/') {
        Some(r) => (vec![PathBuf::from("/")], r),
        None => (vec![base.to_path_buf()], pattern),
    };
    for comp in rest.split('/').filter(|c| !c.is_empty()) {
        let is_glob = comp.contains(['*', '?', '[']);
        if !is_glob {
            for f in &mut found {
                f.push(comp);
            }
            continue;
        }
        if comp.starts_with('.') {
            return Err(format!("a glob that may match `..` ({pattern})"));
        }
        let matcher = globset::GlobBuilder::new(&sh_glob(comp)?)
            .literal_separator(true)
            .backslash_escape(false)
            .build()
            .map_err(|e| format!("a glob the gate cannot read ({pattern}: {e})"))?
            .compile_matcher();
        let mut next = Vec::new();
        for dir in &found {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name();
                // A name that is not UTF-8 cannot be checked as the text
                // the shell passes on.
                let Some(name) = name.to_str() else {
                    return Err(format!(
                        "a file name that is not UTF-8 where {pattern} looks"
                    ));
                };
                if name.starts_with('.') || !matcher.is_match(name) {
                    continue;
                }
                next.push(dir.join(name));
                if next.len() > MAX_MATCHES {
                    return Err(format!("a glob with too many matches to check ({pattern})"));
                }
            }
        }
        found = next;
    }
    // With no match at all the shell keeps the pattern: nothing to check.
    if found
        .iter()
        .all(|f| !f.exists() && std::fs::symlink_metadata(f).is_err())
    {
        return Ok(Vec::new());
    }
    found.retain(|f| std::fs::symlink_metadata(f).is_ok());
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_git_reads_are_redacted_however_they_are_spelt() {
        for (config, secret) in [
            (
                "[http]\n\tproxy = user:SECRET1@proxy.corp:8080\n",
                "SECRET1",
            ),
            (
                "[http \"https://github.com/\"]\n\tsslVerify = true ; see docs \\\n\textraheader = AUTHORIZATION: basic SECRET2\n",
                "SECRET2",
            ),
            (
                "[http \"https://a.example/x]y\"] extraheader = AUTHORIZATION: basic SECRET3\n",
                "SECRET3",
            ),
            (
                "[core] [http \"h\"] extraheader = AUTHORIZATION: basic SECRET4\n",
                "SECRET4",
            ),
            (
                "[remote \"o\"]\n\turl = https:\"//\"oauth2:SECRET5@github.com/o/r\n",
                "SECRET5",
            ),
            (
                "[url \"https:\\/\\/x-access-token:SECRET6@github.com/\"]\n\tinsteadOf = https://github.com/\n",
                "SECRET6",
            ),
            (
                "[credential]\n\thelper = /usr/local/bin/helper --token SECRET7\n",
                "SECRET7",
            ),
            (
                "[http]\n\tsslVerify = abc\\\\\n\textraheader = AUTHORIZATION: basic SECRET8\n",
                "SECRET8",
            ),
            (
                "\u{feff}[http] extraheader = AUTHORIZATION: basic SECRET9\n",
                "SECRET9",
            ),
        ] {
            let out = redact_git_config(config);
            assert!(!out.contains(secret), "{config:?} -> {out:?}");
        }
        // What holds no credential is left as it was.
        for plain in [
            "[remote \"o\"]\n\turl = git@github.com:o/r.git\n",
            "[core]\n\teditor = vim ; a comment \\\n[user]\n\tname = a\n",
            "[remote \"o\"]\n\turl = ssh://git@host/r.git\n",
        ] {
            assert_eq!(redact_git_config(plain), plain);
        }
        // A hook's shell, JSON and YAML forms (red-team round 14).
        let hook = "export DEPLOY_TOKEN=R14A\nlocal DB_PASSWORD=R14B\nreadonly API_SECRET=R14C\n  \"api_token\": \"R14D\",\napi_token: R14E\nname: plain\n{\"api_token\": \"R14F\"}\nset -x; TOKEN=R14G ./deploy\ncurl -u admin:R14H https://x\n";
        let out = redact_git_config(hook);
        assert!(!out.contains("R14"), "{out}");
        assert!(out.contains("name: plain"), "{out}");
    }

    #[test]
    fn a_git_file_that_is_a_fifo_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let f = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(read_git_text(&f));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("read_git_text waited on a FIFO");
        assert!(got.is_none());
        let text = dir.path().join("text");
        std::fs::write(&text, b"[user]\n\tname = Jos\xe9\n").unwrap();
        assert!(read_git_text(&text).unwrap().contains("name = Jos"));
    }

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        (dir, canon)
    }

    #[test]
    fn a_path_outside_that_ends_like_a_workspace_file_names_it() {
        let (_d, top) = root();
        let ws = top.join("work");
        std::fs::create_dir_all(ws.join("pkg")).unwrap();
        std::fs::write(ws.join("pkg/util.py"), "").unwrap();
        let parent = top.join("pkg/util.py");
        let e = resolve(&ws, parent.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("paths are relative to the workspace: did you mean pkg/util.py?"),
            "{e}"
        );
        let e = resolve(&ws, "/elsewhere/none.py").unwrap_err().to_string();
        assert!(e.ends_with("; paths are relative to the workspace"), "{e}");
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_d, root) = root();
        assert_eq!(resolve(&root, "a/b.rs").unwrap().rel, "a/b.rs");
        assert_eq!(resolve(&root, "./a/../b.rs").unwrap().rel, "b.rs");
        let abs = root.join("x.txt");
        assert_eq!(resolve(&root, abs.to_str().unwrap()).unwrap().rel, "x.txt");
        assert_eq!(resolve(&root, ".").unwrap().rel, ".");
    }

    #[test]
    fn climbing_out_fails() {
        let (_d, root) = root();
        for bad in ["../x", "a/../../x", "/etc/passwd", "/", "..", ""] {
            assert!(resolve(&root, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn symlinks_that_leave_fail_and_those_inside_pass() {
        let (_d, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.join("file-out")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.join("dangling")).unwrap();
        std::fs::create_dir(root.join("in")).unwrap();
        std::os::unix::fs::symlink(root.join("in"), root.join("alias")).unwrap();
        assert!(resolve(&root, "out/secret").is_err());
        assert!(resolve(&root, "out").is_err());
        assert!(resolve(&root, "file-out").is_err());
        assert!(resolve(&root, "dangling").is_err());
        assert_eq!(resolve(&root, "alias/ok.txt").unwrap().rel, "in/ok.txt");
    }

    #[test]
    fn dot_dot_is_taken_from_where_a_symlink_really_goes() {
        let (_d, root) = root();
        std::os::unix::fs::symlink(".", root.join("here")).unwrap();
        std::fs::create_dir(root.join("deep")).unwrap();
        std::os::unix::fs::symlink(root.join("deep"), root.join("d")).unwrap();
        // Lexically `here/..` is the root; really it is the root's parent.
        assert!(resolve(&root, "here/../x").is_err());
        assert_eq!(resolve(&root, "d/../x").unwrap().rel, "x");
    }

    #[test]
    fn reserved_names_are_caught_through_links_and_at_any_depth() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::os::unix::fs::symlink(".git", root.join("gitlink")).unwrap();
        let r = resolve(&root, "gitlink/config").unwrap();
        assert_eq!(r.rel, ".git/config");
        assert!(reserved_reason(&r.rel, true).is_some());
        assert!(reserved_reason("sub/.git/config", true).is_some());
        assert!(reserved_reason(".mm/sessions/x.jsonl", false).is_some());
        // A nested .mm is mm's own too (mm run in `sub`).
        assert!(reserved_reason("sub/.mm/sessions/x.jsonl", false).is_some());
        assert!(reserved_reason("sub/.mm/sessions", false).is_some());
        assert!(reserved_reason("sub/.mm/config.yaml", true).is_some());
        assert!(reserved_reason("a/b/.mm/tools/t.json", true).is_some());
        assert!(reserved_reason("sub/.mm/config.yaml", false).is_none());
        for private in [
            ".mm/traces/s1/0001.json",
            "sub/.mm/exports/s.md",
            ".mm/debug.log",
            ".mm/lsp.log",
            ".mm/copied.md",
        ] {
            assert!(reserved_reason(private, false).is_some(), "{private}");
        }
        assert!(reserved_reason(".mm/commands/x.md", false).is_none());
        assert!(reserved_reason(".agent/tools/t.json", true).is_some());
        assert!(reserved_reason("sub/.agent/commands/c.md", true).is_some());
        assert!(reserved_reason(".agent/notes.md", true).is_none());
        assert!(reserved_reason(".agent/tools/t.json", false).is_none());
        assert!(reserved_reason("sub/.mmx/sessions/x", true).is_none());
        assert!(reserved_reason(".git/config", false).is_none());
        assert!(reserved_reason("src/main.rs", true).is_none());
        assert!(reserved_reason("src/.github/x.yml", true).is_none());
    }

    #[test]
    fn a_token_in_a_git_config_is_found_and_replaced() {
        let text = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://oauth2:tok123@example.com/x.git\n[remote \"up\"]\n\turl = ssh://git@example.com/y.git\n[http \"https://example.com/\"]\n\textraheader = AUTHORIZATION: basic abc=\n";
        let r = redact_git_config(text);
        assert!(!r.contains("tok123") && !r.contains("basic abc"), "{r}");
        assert!(r.contains("url = https://***@example.com/x.git"), "{r}");
        // An ssh user name is no secret; the rest stays as it was.
        assert!(
            r.contains("ssh://git@example.com/y.git") && r.contains("bare = false"),
            "{r}"
        );
        let clean = "[remote \"origin\"]\n\turl = https://example.com/x.git\n";
        assert_eq!(redact_git_config(clean), clean);
        // A mail password (git send-email) and an API key by their names.
        let mail = "[sendemail]\n\tsmtpPass = hunter2\n[ai]\n\tapiKey = sk1\n";
        let r = redact_git_config(mail);
        assert!(!r.contains("hunter2") && !r.contains("sk1"), "{r}");

        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git")).unwrap();
        let config = d.path().join(".git/config");
        std::fs::write(&config, clean).unwrap();
        assert_eq!(git_secret_reason(".git/config", &config, None), None);
        std::fs::write(&config, text).unwrap();
        assert!(git_secret_reason(".git/config", &config, None).is_some());
        // A repository inside a folder that is merely named `objects`.
        std::fs::create_dir_all(d.path().join("objects/.git")).unwrap();
        let nested = d.path().join("objects/.git/config");
        std::fs::write(&nested, text).unwrap();
        assert!(git_secret_reason("objects/.git/config", &nested, None).is_some());
        // A git dir's own objects are not text.
        std::fs::create_dir_all(d.path().join(".git/objects/ab")).unwrap();
        let obj = d.path().join(".git/objects/ab/cd");
        std::fs::write(&obj, text).unwrap();
        assert_eq!(git_secret_reason(".git/objects/ab/cd", &obj, None), None);
        // Only git's own config files are read for it.
        std::fs::write(d.path().join("config"), text).unwrap();
        assert_eq!(
            git_secret_reason("config", &d.path().join("config"), None),
            None
        );
        // A value run on over lines, a key on its section's line.
        let odd = "[http] extraheader = AUTHORIZATION: basic one\n[http]\n\textraheader = \\\n  AUTHORIZATION: basic two\n[core]\n\tbare = false\n";
        let r = redact_git_config(odd);
        assert!(!r.contains("basic one") && !r.contains("basic two"), "{r}");
        assert!(r.contains("bare = false"), "{r}");
        // A credential helper with the password inline, a token setting, a
        // URL run on over lines.
        let more = "[credential]\n\thelper = \"!f() { echo password=pw9; }; f\"\n[github]\n\ttoken = tk9\n[remote \"o\"]\n\turl = https://oauth2:tok9\\\n@example.com/r.git\n[credential]\n\thelper = store\n";
        let r = redact_git_config(more);
        assert!(
            !r.contains("pw9") && !r.contains("tk9") && !r.contains("tok9"),
            "{r}"
        );
        assert!(r.contains("helper = store"), "{r}");
        // Includes: on the section's line, with a comment, and of includes.
        let inc = d.path().join("incs");
        std::fs::create_dir_all(inc.join("info")).unwrap();
        std::fs::write(inc.join("config"), "[include] path = info/a.conf ; ci\n").unwrap();
        std::fs::write(inc.join("info/a.conf"), "[include]\n\tpath = b\n").unwrap();
        std::fs::write(inc.join("info/b"), "x").unwrap();
        let files = repo_config_files(&inc);
        assert!(files.contains(&inc.join("info/b")), "{files:?}");
        // Every config of the repository: a submodule's folders deep, a
        // worktree's, the common dir's, an included file.
        let g = d.path().join(".git");
        for sub in [
            "modules/lib/foo",
            "modules/lib/foo/modules/inner",
            "worktrees/wt",
        ] {
            std::fs::create_dir_all(g.join(sub)).unwrap();
            std::fs::write(g.join(sub).join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(g.join(sub).join("config"), "").unwrap();
        }
        std::fs::write(g.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(g.join("worktrees/wt/config.worktree"), "").unwrap();
        std::fs::write(g.join("creds.inc"), "").unwrap();
        let files = repo_config_files(&g.join("worktrees/wt"));
        for want in [
            "config",
            "creds.inc",
            "modules/lib/foo/config",
            "modules/lib/foo/modules/inner/config",
            "worktrees/wt/config.worktree",
        ] {
            let want = std::fs::canonicalize(g.join(want)).unwrap();
            assert!(
                files
                    .iter()
                    .any(|f| std::fs::canonicalize(f).ok().as_ref() == Some(&want)),
                "{want:?} not in {files:?}"
            );
        }
        // A `commondir` that names its own git dir by ever longer
        // spellings is walked once: each file once.
        std::fs::write(g.join("commondir"), "worktrees/wt/../..\n").unwrap();
        std::fs::write(
            g.join("worktrees/wt/commondir"),
            "../../worktrees/wt/../..\n",
        )
        .unwrap();
        let files = repo_config_files(&g);
        let mut unique = files.clone();
        unique.dedup();
        assert_eq!(files, unique);
        assert!(files.len() < 30, "{} files: {files:?}", files.len());
        std::fs::remove_file(g.join("commondir")).unwrap();
        // A git dir under another name is known by where it lies.
        let sep = d.path().join("repo.d");
        std::fs::create_dir_all(&sep).unwrap();
        std::fs::write(sep.join("config"), text).unwrap();
        assert!(git_secret_reason("repo.d/config", &sep.join("config"), Some(&sep)).is_some());
        assert!(git_setting_is_secret(
            "http.https://example.com/.extraheader",
            "x"
        ));
        assert!(!git_setting_is_secret(
            "remote.origin.url",
            "https://example.com/x"
        ));
    }

    #[test]
    fn credential_shapes_are_caught() {
        for bad in [
            ".env",
            ".env.local",
            "config/.env.production",
            "server.pem",
            "keys/tls.key",
            "id_rsa",
            "id_ed25519.pub",
            ".ssh/config",
            "home/.aws/credentials",
            ".netrc",
            ".git-credentials",
            ".envs/.production/.postgres",
            "credentials.json",
            "deploy/secrets.yaml",
            "service-account.json",
        ] {
            assert!(credential_reason(bad).is_some(), "{bad}");
        }
        for fine in [
            ".env.example",
            "config/.env.sample",
            "src/env.rs",
            "environment.md",
            "keyboard.rs",
            "README.md",
            "id_test.py",
            "src/credentials.py",
            "docs/secrets.md",
        ] {
            assert!(credential_reason(fine).is_none(), "{fine}");
        }
    }

    #[test]
    fn only_regular_files_are_read() {
        let (_d, root) = root();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        assert_eq!(read_regular(&root.join("a.txt"), 100).unwrap(), b"hello");
        assert!(read_regular(&root.join("a.txt"), 3).is_err());
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = std::time::Instant::now();
        assert!(read_regular(&root.join("fifo"), 100).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(read_regular(&root, 100).is_err());
    }

    /// What a process beside mm (a language server in the fence) can do
    /// between the sandbox's check and the read or write: swap a folder
    /// or the file itself for a link out of the workspace. The checked
    /// calls then read, write and remove nothing outside.
    #[test]
    fn a_link_swapped_in_after_the_check_is_not_followed() {
        let (_o, out) = root();
        let (_d, root) = root();
        std::fs::write(out.join("n.txt"), "SECRET-OUT").unwrap();
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/n.txt"), "mine").unwrap();
        let r = resolve(&root, "notes/n.txt").unwrap();
        assert_eq!(read_checked(&r.abs, 100).unwrap(), b"mine");
        // The folder becomes a link out.
        std::fs::rename(root.join("notes"), root.join("kept")).unwrap();
        std::os::unix::fs::symlink(&out, root.join("notes")).unwrap();
        assert_eq!(
            read_regular(&r.abs, 100).unwrap(),
            b"SECRET-OUT",
            "the race is real"
        );
        let e = read_checked(&r.abs, 100).unwrap_err();
        assert!(e.to_string().contains("a link was put in its place"), "{e}");
        assert!(write_checked(&r.abs, b"pwned", None).is_err());
        assert!(remove_checked(&r.abs).is_err());
        assert!(symlink_checked(Path::new("/etc/passwd"), &r.abs).is_err());
        assert_eq!(
            std::fs::read_to_string(out.join("n.txt")).unwrap(),
            "SECRET-OUT"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
        // The file itself becomes a link out, or a second name of a file.
        std::fs::remove_file(root.join("notes")).unwrap();
        std::fs::rename(root.join("kept"), root.join("notes")).unwrap();
        std::fs::remove_file(root.join("notes/n.txt")).unwrap();
        std::os::unix::fs::symlink(out.join("n.txt"), root.join("notes/n.txt")).unwrap();
        assert!(read_checked(&r.abs, 100).is_err());
        std::fs::remove_file(root.join("notes/n.txt")).unwrap();
        std::fs::hard_link(out.join("n.txt"), root.join("notes/n.txt")).unwrap();
        assert!(read_checked(&r.abs, 100).is_err());
        // Writing replaces the name, never the file it links to.
        write_checked(&r.abs, b"new", None).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("n.txt")).unwrap(),
            "SECRET-OUT"
        );
        assert_eq!(read_checked(&r.abs, 100).unwrap(), b"new");
        // Missing folders are made; the old mode is kept; no temp file stays.
        let deep = resolve(&root, "a/b/c.txt").unwrap();
        write_checked(&deep.abs, b"x", None).unwrap();
        std::fs::set_permissions(
            &deep.abs,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        write_checked(&deep.abs, b"y", None).unwrap();
        let meta = std::fs::metadata(&deep.abs).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o700
        );
        assert_eq!(std::fs::read_dir(root.join("a/b")).unwrap().count(), 1);
        remove_checked(&deep.abs).unwrap();
        assert!(!deep.abs.exists());
    }

    fn walked(root: &Path) -> Vec<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let base = root.to_path_buf();
        std::thread::spawn(move || {
            let seen: Vec<String> = walk(&base)
                .build()
                .flatten()
                .map(|e| {
                    e.path()
                        .strip_prefix(&base)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            let _ = tx.send(seen);
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the walk finished")
    }

    /// Red-team rounds 23 and 24: a `.git` file pointing at a git dir
    /// whose `commondir` is a link to `/dev/zero`, or names a folder whose
    /// `info/exclude` is a FIFO: the library read the one as a line
    /// without end and waited on the other. Neither is opened now, and
    /// the folder is walked as any other.
    #[test]
    fn a_walk_does_not_follow_a_git_file_to_its_commondir() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("gd")).unwrap();
        std::fs::create_dir_all(root.join("common/info")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        std::fs::write(
            root.join("sub/.git"),
            format!("gitdir: {}\n", root.join("gd").display()),
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("gd/commondir")).unwrap();
        let seen = walked(&root);
        assert!(seen.contains(&"b.txt".to_string()), "{seen:?}");
        assert!(seen.contains(&"sub/a.txt".to_string()), "{seen:?}");
        std::fs::remove_file(root.join("gd/commondir")).unwrap();
        std::fs::write(
            root.join("gd/commondir"),
            format!("{}\n", root.join("common").display()),
        )
        .unwrap();
        nix::unistd::mkfifo(
            &root.join("common/info/exclude"),
            nix::sys::stat::Mode::S_IRWXU,
        )
        .unwrap();
        let seen = walked(&root);
        assert!(seen.contains(&"sub/a.txt".to_string()), "{seen:?}");
    }

    /// Red-team round 26: nested ignore files of 1 MiB each, each under
    /// the cap, took 2.2 GB compiled at depth 12 (the walker keeps every
    /// folder's above it). Past 512 KiB along a path, a folder is not
    /// entered.
    #[test]
    fn a_walk_bounds_the_ignore_files_along_a_path() {
        let (_d, root) = root();
        let mut dir = root.clone();
        let big = "x\n".repeat(100 << 10);
        for k in 0..4 {
            dir = dir.join(format!("d{k}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(".gitignore"), &big).unwrap();
            std::fs::write(dir.join("f.txt"), "").unwrap();
        }
        let seen = walked(&root);
        // 200 KiB, 400 KiB: entered; 600 KiB: not.
        assert!(seen.contains(&"d0/d1/f.txt".to_string()), "{seen:?}");
        assert!(!seen.iter().any(|p| p.starts_with("d0/d1/d2")), "{seen:?}");
    }

    /// Red-team round 24: a sparse `.gitignore` of 6 GB was read as one
    /// line. A folder with an ignore file over 256 KiB is not walked into.
    #[test]
    fn a_walk_does_not_read_a_huge_ignore_file() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        let f = std::fs::File::create(root.join("sub/.gitignore")).unwrap();
        f.set_len(6 << 30).unwrap();
        let seen = walked(&root);
        assert!(seen.contains(&"b.txt".to_string()), "{seen:?}");
        assert!(!seen.contains(&"sub/a.txt".to_string()), "{seen:?}");
    }

    /// The repository's own `info/exclude` still hides what it names.
    #[test]
    fn a_walk_honours_the_repositorys_exclude_file() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "local.txt\n").unwrap();
        std::fs::write(root.join("local.txt"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        let seen = walked(&root);
        assert!(seen.contains(&"b.txt".to_string()), "{seen:?}");
        assert!(!seen.contains(&"local.txt".to_string()), "{seen:?}");
    }

    #[test]
    fn a_walk_never_opens_a_fifo_named_like_an_ignore_file() {
        let (_d, root) = root();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        nix::unistd::mkfifo(&root.join("sub/.gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = std::time::Instant::now();
        let seen: Vec<_> = walk(&root).build().flatten().collect();
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(seen.iter().any(|e| e.path().ends_with("b.txt")));
        nix::unistd::mkfifo(&root.join(".gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let seen: Vec<_> = walk(&root).max_depth(Some(1)).build().flatten().collect();
        assert!(seen.iter().any(|e| e.path().ends_with("b.txt")));
    }

    #[test]
    fn a_glob_over_a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let (_d, root) = root();
        let name = std::ffi::OsStr::from_bytes(b"k\xff");
        std::os::unix::fs::symlink("/etc/passwd", root.join(name)).unwrap();
        assert!(glob_matches(&root, "k*").is_err());
    }

    #[test]
    fn globs_expand_like_the_shell_and_refuse_dot_dot() {
        let (_d, root) = root();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::fs::write(root.join("src/b.rs"), "").unwrap();
        std::fs::write(root.join("src/.hidden.rs"), "").unwrap();
        let mut m = glob_matches(&root, "src/*.rs").unwrap();
        m.sort();
        assert_eq!(m, vec![root.join("src/a.rs"), root.join("src/b.rs")]);
        assert!(glob_matches(&root, "*.py").unwrap().is_empty());
        assert!(glob_matches(&root, ".*/x").is_err());
        assert!(glob_matches(&root, "[^-]*").is_err());
        std::fs::write(root.join("x{a}"), "").unwrap();
        std::fs::write(root.join("xa"), "").unwrap();
        assert_eq!(
            glob_matches(&root, "*{a}").unwrap(),
            vec![root.join("x{a}")]
        );
        assert_eq!(
            glob_matches(&root, "*/a.rs").unwrap(),
            vec![root.join("src/a.rs")]
        );
    }
}
