//! What a git command would find from a folder, read without running git: the
//! repository it opens, the settings of its own config that run programs, and
//! control files that are not regular files (a FIFO would hang git).

use super::*;

/// What the gate needs to know of the repository a git command would use
/// from `dir`.
#[derive(Debug, Default)]
pub struct RepoFacts {
    /// Settings from the repository itself (its `.git/config`, a worktree's
    /// config, what they include), not the user's own files: names
    /// lower-cased.
    pub settings: Vec<(String, String)>,
    /// Its work tree (None: bare).
    pub workdir: Option<PathBuf>,
    /// Tracked paths that look like credentials.
    pub tracked_credentials: Vec<String>,
    /// Where else git reads this repository from: the common dir a
    /// `commondir` file names, the object stores `objects/info/alternates`
    /// lists.
    pub elsewhere: Vec<PathBuf>,
    /// Its `info/attributes` (or the common dir's) has a line: git reads it
    /// whatever `attr.tree` says, and it can send files to a filter or a
    /// textconv the user's own config defines.
    pub info_attributes: bool,
    /// Tracked files of the work tree with more than one name: `git diff`
    /// prints what another name, perhaps outside, holds.
    pub linked_tracked: Vec<String>,
    /// It has notes (a `refs/notes/` ref, or `core.notesRef` or
    /// `notes.displayRef` set): `git log` prints them, and a note can be
    /// any blob.
    pub notes: bool,
    /// Its objects come from another store too (`objects/info/alternates`,
    /// or an `objects` folder that is a link): what that store's
    /// repositories track can be printed here, whatever this index says.
    pub borrows_objects: bool,
}

/// Looks at the repository that holds `dir`: None when there is none.
/// Err when something there looks like a repository git2 cannot open
/// (the git command line may still open it, and nothing could be said
/// of its settings).
pub fn inspect(dir: &Path) -> Result<Option<RepoFacts>> {
    // Before libgit2 opens anything: it opens git's files blocking.
    if let Some(why) = blocking_file(dir) {
        return Err(GitError::Other(why));
    }
    let repo = match Repository::discover(dir) {
        Ok(r) => r,
        Err(e) if dir.ancestors().any(looks_like_git) => return Err(e.into()),
        Err(_) => return Ok(None),
    };
    // libgit2 and git must mean the same repository: git passes over a
    // `.git` whose HEAD it cannot read and goes on up, to a repository
    // whose settings nobody looked at.
    let same = |a: &Path, b: &Path| {
        std::fs::canonicalize(a)
            .ok()
            .is_some_and(|a| std::fs::canonicalize(b).ok() == Some(a))
    };
    match git_would_open(dir) {
        Some(g) if same(&g, repo.path()) => {}
        other => {
            return Err(GitError::Other(format!(
                "git would use {} where mm looked at {}",
                other.map_or("no repository".into(), |g| g.display().to_string()),
                repo.path().display()
            )));
        }
    }
    let mut facts = RepoFacts {
        workdir: repo.workdir().map(Path::to_path_buf),
        ..RepoFacts::default()
    };
    let git_dir = repo.path().to_path_buf();
    // libgit2 trims these files' lines and git does not: a value with
    // spaces around it names one place to mm and another to git (`c `
    // with a planted config beside the harmless `c`). Nothing is said of
    // such a repository.
    let odd = |what: &str| {
        GitError::Other(format!(
            "the repository's {what} has spaces around a path, which git and mm would read apart"
        ))
    };
    control_text(&git_dir.join("HEAD"))?;
    if let Some(c) = control_text(&git_dir.join("commondir"))? {
        let line = git_line(&c);
        if line != line.trim() {
            return Err(odd("commondir"));
        }
        facts.elsewhere.push(git_dir.join(line));
    }
    let common = repo.commondir().to_path_buf();
    for g in [&git_dir, &common] {
        if let Some(a) = control_text(&g.join("info/attributes"))? {
            // Anything but git's own white space counts: what looks like a
            // comment to mm may not to git (`\u{a0}#*.txt diff=x`).
            facts.info_attributes |= !a.chars().all(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        }
        let objects = g.join("objects");
        if std::fs::symlink_metadata(&objects).is_ok_and(|m| m.file_type().is_symlink()) {
            facts.borrows_objects = true;
            facts.elsewhere.push(objects.clone());
        }
        if let Some(list) = control_text(&objects.join("info/alternates"))? {
            for l in list.lines().map(|l| l.trim_end_matches('\r')) {
                if l.trim().is_empty() || l.starts_with('#') {
                    continue;
                }
                if l != l.trim() {
                    return Err(odd("objects/info/alternates"));
                }
                facts.borrows_objects = true;
                facts.elsewhere.push(objects.join(l));
            }
        }
    }
    // The user's own git config is judged too when it lies in the work
    // tree (mm run in a home folder kept in git, `XDG_CONFIG_HOME` inside
    // the project): a command could have written it.
    let inside_work_tree = |p: Option<PathBuf>| {
        let (Some(p), Some(w)) = (p, facts.workdir.as_deref()) else {
            return false;
        };
        let w = std::fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf());
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        p.starts_with(w)
    };
    let global_inside = inside_work_tree(git2::Config::find_global().ok());
    let xdg_inside = inside_work_tree(git2::Config::find_xdg().ok());
    let config = repo.config()?;
    let mut entries = config.entries(None)?;
    while let Some(e) = entries.next() {
        let e = e?;
        let judged = match e.level() {
            git2::ConfigLevel::Local | git2::ConfigLevel::Worktree | git2::ConfigLevel::App => true,
            git2::ConfigLevel::Global => global_inside,
            git2::ConfigLevel::XDG => xdg_inside,
            _ => false,
        };
        if judged {
            // A name or value that is not UTF-8 is still judged (lossily):
            // `[diff "\xfe"] textconv = …` runs for git all the same.
            facts.settings.push((
                String::from_utf8_lossy(e.name_bytes()).to_ascii_lowercase(),
                String::from_utf8_lossy(e.value_bytes()).into_owned(),
            ));
        }
    }
    facts.notes = repo
        .references_glob("refs/notes/*")
        .map_or(true, |mut refs| refs.next().is_some())
        || config.get_entry("core.notesref").is_ok()
        || config.get_entry("notes.displayref").is_ok();
    tracked(&repo, &git_dir, &mut facts)?;
    Ok(Some(facts))
}

/// What the repository's index says that the gate needs: tracked files
/// with other names, tracked credential-shaped files.
fn tracked(repo: &Repository, git_dir: &Path, facts: &mut RepoFacts) -> Result<()> {
    // An index mm cannot read (split, sparse) says nothing of what is
    // tracked: nothing is said of the repository then (the gate asks).
    if facts.workdir.is_some() || git_dir.join("index").exists() {
        let index = repo.index().map_err(|e| {
            GitError::Other(format!("the repository's index cannot be read by mm ({e})"))
        })?;
        for entry in index.iter() {
            let path = String::from_utf8_lossy(&entry.path).into_owned();
            if let Some(w) = &facts.workdir {
                use std::os::unix::ffi::OsStrExt;
                use std::os::unix::fs::MetadataExt;
                // By its bytes: a name that is not UTF-8 is still the file.
                let on_disk = w.join(std::ffi::OsStr::from_bytes(&entry.path));
                if std::fs::symlink_metadata(on_disk).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
                    facts.linked_tracked.push(path.clone());
                }
            }
            if crate::paths::credential_reason(&path).is_some() {
                facts.tracked_credentials.push(path);
            }
        }
    }
    Ok(())
}

/// The top of the work tree of the repository that holds `dir` (None:
/// none, or bare).
pub fn work_tree_of(dir: &Path) -> Option<PathBuf> {
    let repo = Repository::discover(dir).ok()?;
    repo.workdir().map(Path::to_path_buf)
}

/// The paths of the submodules the repository at `root` records in its
/// index (gitlinks), relative to it: a `.git` made there later is one git
/// honours when it looks into submodules.
pub fn submodule_paths(root: &Path) -> Vec<String> {
    let Ok(repo) = Repository::open(root) else {
        return Vec::new();
    };
    let Ok(index) = repo.index() else {
        return Vec::new();
    };
    index
        .iter()
        .filter(|e| e.mode == 0o160000)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect()
}

/// A small file git keeps (`commondir`, `HEAD`, a `.git` pointer) as
/// text: a regular file of at most 64 KiB, opened without waiting (a
/// workspace can plant a link to `/dev/zero` or a FIFO in its place).
pub(super) fn small_text(path: &Path) -> Option<String> {
    let bytes = crate::paths::read_regular(path, 64 << 10).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A file git reads to the end whenever it opens the repository
/// (`commondir`, `objects/info/alternates`, `HEAD`): None when there is
/// none, Err when something is there that is not a small regular file.
/// git itself would read a link to `/dev/zero` or a FIFO there forever.
pub(super) fn control_text(path: &Path) -> Result<Option<String>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    match crate::paths::read_regular(path, 64 << 10) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        // A link to nothing: git finds no file there either.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(GitError::Other(format!(
            "the repository's {} {e}",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        ))),
    }
}

/// What a path is when it is something git would wait on forever if it
/// opened it: a FIFO, a socket or a device (a link followed). None for a
/// regular file, a folder, or nothing.
pub(super) fn blocking_kind(p: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).ok()?;
    let t = std::fs::metadata(p).ok()?.file_type();
    if t.is_file() || t.is_dir() {
        None
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    }
}

/// The first file in git dir `g` that would block git or libgit2 when
/// they open it (a FIFO, a socket, a device, a link to one): every file
/// of the git dir is looked at, loose objects, logs and state folders
/// included, since git opens many. More than `MAX` entries: that, as a
/// reason of its own (a budget that ran out says so; it does not pass).
pub(super) fn blocking_control_file(g: &Path) -> Option<(PathBuf, &'static str)> {
    const MAX: usize = 200_000;
    let mut seen = 0;
    let mut stack: Vec<PathBuf> = vec![g.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX {
                return Some((g.to_path_buf(), "more files than mm looks through"));
            }
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                _ => {
                    if let Some(kind) = blocking_kind(&p) {
                        return Some((p, kind));
                    }
                }
            }
        }
    }
    None
}

/// Why git (or libgit2) would wait forever on the repository it finds
/// from `dir`: a file of a git dir on the way up (the one git settles on
/// and every one it looks at before) that is a FIFO, a socket or a
/// device, or a link to one. None when there is none.
pub fn blocking_file(dir: &Path) -> Option<String> {
    let say = |(p, kind): (PathBuf, &str)| {
        format!(
            "the repository's {} is {kind}, which git would wait on forever (or mm cannot tell)",
            p.display()
        )
    };
    for d in dir.ancestors() {
        let dot = d.join(".git");
        let mut dirs: Vec<PathBuf> = Vec::new();
        match std::fs::metadata(&dot) {
            Ok(m) if m.is_dir() => dirs.push(dot),
            Ok(m) if m.is_file() => {
                if let Some(t) = small_text(&dot)
                    && let Some(g) = git_line(&t).strip_prefix("gitdir: ")
                {
                    dirs.push(d.join(g));
                }
            }
            _ => {}
        }
        dirs.push(d.to_path_buf());
        for g in dirs {
            let laid_out = ["HEAD", "objects", "refs", "commondir"]
                .iter()
                .any(|f| std::fs::symlink_metadata(g.join(f)).is_ok());
            if !laid_out {
                continue;
            }
            if let Some(found) = blocking_control_file(&g) {
                return Some(say(found));
            }
            if let Some(c) = small_text(&g.join("commondir"))
                && let Some(found) = blocking_control_file(&g.join(git_line(&c)))
            {
                return Some(say(found));
            }
            if is_git_directory(&g) {
                return None;
            }
        }
    }
    None
}

/// A work-tree file git reads on its own (`.gitignore` in the folders it
/// goes into, `.gitattributes`, `.mailmap`, `.gitmodules`) that would
/// block it, under `workdir`. The walk goes where git goes (what the
/// ignore files leave out is passed over) and reads no ignore file that
/// would block; more than `MAX` entries is a reason of its own.
pub fn blocking_worktree_file(workdir: &Path) -> Option<String> {
    use std::sync::{Arc, Mutex};
    const MAX: usize = 200_000;
    const NAMES: &[&str] = &[
        ".gitignore",
        ".gitattributes",
        ".mailmap",
        ".gitmodules",
        ".ignore",
    ];
    let say = |p: &Path, kind: &str| {
        format!(
            "{} is {kind}: git would wait on it forever, or mm cannot check it",
            p.display()
        )
    };
    for n in NAMES {
        let p = workdir.join(n);
        if let Some(kind) = blocking_kind(&p) {
            return Some(say(&p, kind));
        }
    }
    let found: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let seen = found.clone();
    let walk = ignore::WalkBuilder::new(workdir)
        .hidden(false)
        .require_git(false)
        .git_exclude(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.depth() > 0 && e.file_name() == ".git" {
                return false;
            }
            let p = e.path();
            let dir = e.file_type().is_some_and(|t| t.is_dir());
            let bad = if dir {
                // Looked at before the walker reads them; one too big to
                // compile is not read either (and not passed over).
                NAMES.iter().find_map(|n| {
                    let f = p.join(n);
                    blocking_kind(&f).map(|k| (f.clone(), k)).or_else(|| {
                        std::fs::symlink_metadata(&f)
                            .is_ok_and(|m| m.len() > 256 << 10)
                            .then_some((f, "over 256 KiB"))
                    })
                })
            } else {
                None
            };
            match bad {
                Some((f, kind)) => {
                    if let Ok(mut s) = seen.lock() {
                        s.get_or_insert_with(|| say(&f, kind));
                    }
                    false
                }
                None => true,
            }
        })
        .build();
    for (n, _) in walk.enumerate() {
        if n > MAX {
            return Some(format!(
                "{} holds more files than mm looks through for what would block git",
                workdir.display()
            ));
        }
        if found.lock().is_ok_and(|f| f.is_some()) {
            break;
        }
    }
    found.lock().ok().and_then(|f| f.clone())
}

/// A file of git's as git takes its value: the trailing line ends (`\n`,
/// `\r`) dropped, nothing else.
pub(super) fn git_line(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// The git directory the git command line finds from `dir`, by its own
/// rules (setup.c): in each folder up from `dir`, a `.git` file names it;
/// a `.git` folder or the folder itself counts only when it has `objects`,
/// `refs` (in its common dir for a worktree) and a HEAD git can read.
pub(super) fn git_would_open(dir: &Path) -> Option<PathBuf> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        match std::fs::metadata(&dot) {
            Ok(m) if m.is_file() => {
                // As setup.c reads it: trailing line ends dropped, then
                // `gitdir: ` and the path as it stands, spaces and all.
                let text = small_text(&dot)?;
                let g = git_line(&text).strip_prefix("gitdir: ")?.to_string();
                return Some(d.join(g));
            }
            Ok(m) if m.is_dir() && is_git_directory(&dot) => return Some(dot),
            _ => {}
        }
        if is_git_directory(d) {
            return Some(d.to_path_buf());
        }
    }
    None
}

/// git's `is_git_directory`: objects and refs (where `commondir` says)
/// and a HEAD that is a symbolic ref under refs/ or an object id.
pub(super) fn is_git_directory(g: &Path) -> bool {
    let common = small_text(&g.join("commondir"))
        .map(|c| g.join(git_line(&c)))
        .unwrap_or_else(|| g.to_path_buf());
    // git asks `access(X_OK)` of them: a folder, or an executable file
    // (which libgit2 passes over: the two then mean different
    // repositories, and the gate refuses).
    let searchable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .is_ok_and(|m| m.is_dir() || (m.is_file() && m.permissions().mode() & 0o111 != 0))
    };
    if !searchable(&common.join("objects")) || !searchable(&common.join("refs")) {
        return false;
    }
    let head = g.join("HEAD");
    if let Ok(t) = std::fs::read_link(&head) {
        return t.starts_with("refs/");
    }
    let Some(text) = small_text(&head) else {
        return false;
    };
    match text.strip_prefix("ref:") {
        Some(r) => r.trim_start().starts_with("refs/"),
        None => {
            let id = text.trim_end();
            (id.len() == 40 || id.len() == 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
        }
    }
}

/// A `.git` in `d`, or `d` shaped like a git directory (a bare repository).
pub(super) fn looks_like_git(d: &Path) -> bool {
    d.join(".git").exists()
        || (d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir())
}
