//! Paths in and around git's own folder: where it is, which of its files
//! hold secrets, how a config is shown redacted, and layouts mm refuses.

use super::*;

/// The git dir the workspace's `.git` names: the folder itself, where a
/// `.git` link leads, or the one a `.git` file (a worktree, a separate git
/// dir) points to — wherever it lies.
pub fn git_dir_of(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => Some(dot_git),
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(&dot_git).ok().filter(|g| g.is_dir())
        }
        Ok(m) if m.is_file() => std::fs::read_to_string(&dot_git)
            .ok()
            .and_then(|t| {
                t.trim()
                    .strip_prefix("gitdir:")
                    .map(|g| root.join(g.trim()))
            })
            .and_then(|g| std::fs::canonicalize(g).ok())
            .filter(|g| g.is_dir()),
        _ => None,
    }
}

/// A folder git would take for a git dir (or a common dir).
pub fn is_git_dir(p: &Path) -> bool {
    // git asks only that HEAD be read and objects and refs be searchable:
    // a link, or an executable file, passes too.
    let head = std::fs::symlink_metadata(p.join("HEAD")).is_ok_and(|m| !m.is_dir());
    let objects = std::fs::symlink_metadata(p.join("objects")).is_ok();
    // A linked worktree's git dir has a `commondir` instead of objects;
    // the common dir may have no HEAD.
    (head && (objects || p.join("commondir").is_file()))
        || (objects
            && std::fs::symlink_metadata(p.join("refs")).is_ok()
            && p.join("config").is_file())
}

/// Biggest git file whose text is looked through for a credential; one
/// bigger counts as holding one.
pub const GIT_TEXT_MAX: u64 = 16 << 20;

/// A path on a kernel file system (`/proc`, `/sys`, `/dev`), where files
/// that say they are regular may block when read (`/proc/kmsg`) or be as
/// big as memory (`/proc/self/pagemap`): never a git setting to look at.
pub fn is_kernel_file(p: &Path) -> bool {
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    ["/proc", "/sys", "/dev"]
        .iter()
        .any(|k| real.starts_with(k) || p.starts_with(k))
}

/// At most `GIT_TEXT_MAX` bytes of `p` as text (bytes that are not UTF-8
/// read as U+FFFD: a Latin-1 `user.name` beside a token must not hide the
/// token); None when it is longer or a kernel file.
pub fn read_git_text(p: &Path) -> Option<String> {
    use std::io::Read;
    if is_kernel_file(p) {
        return None;
    }
    use std::os::unix::fs::OpenOptionsExt;
    // Without blocking, and a regular file by what was opened: a path
    // swapped for a FIFO or a kernel file after the look above is not
    // waited on.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(p)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(GIT_TEXT_MAX + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > GIT_TEXT_MAX {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why the model may not read the resolved path `r` of the workspace
/// `root`, by the file tools' rule (a credential, mm's records, a file
/// with other names, git's files that hold a token), if it may not.
/// Whatever reads for the model on its behalf (a language server's
/// locations, a skill's files in the workspace) holds to it too.
pub fn read_refusal(root: &Path, r: &Resolved) -> Option<String> {
    credential_reason(&r.rel)
        .or_else(|| reserved_reason(&r.rel, false))
        .or_else(|| hard_link_reason(&r.rel, &r.abs))
        .or_else(|| git_secret_reason(&r.rel, &r.abs, git_dir_of(root).as_deref()))
}

/// A file of git's (in a `.git` folder, or in the git dir `git`) that
/// holds a credential: a remote URL with a token or password in it
/// (`https://oauth2:TOKEN@host/…`) or an `extraheader` (CI checkouts keep
/// `AUTHORIZATION: basic …` in the config) — a config, a worktree's, an
/// included file, `FETCH_HEAD`. The file tools refuse it and code nobody
/// approved sees [`redact_git_config`]'s copy of it instead.
pub fn git_secret_reason(rel: &str, abs: &Path, git: Option<&Path>) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    // A git dir's objects are compressed and its index is binary: no text
    // to look at. (A folder that happens to be named `objects` is not
    // that: `objects/.git/config` is a repository's config.)
    let git_objects = abs.ancestors().skip(1).take(parts.len()).any(|a| {
        a.file_name() == Some(std::ffi::OsStr::new("objects"))
            && a.parent().is_some_and(|g| {
                g.file_name() == Some(std::ffi::OsStr::new(".git")) || is_git_dir(g)
            })
    });
    if git_objects || parts.last() == Some(&"index") {
        return None;
    }
    let in_git = parts.contains(&".git")
        || git.is_some_and(|g| abs.starts_with(g))
        // A git dir under any name (a nested repository's separate one).
        || abs
            .ancestors()
            .skip(1)
            .take(parts.len())
            .any(is_git_dir);
    if !in_git {
        return None;
    }
    git_text_holds_secret(abs)
        .then(|| format!("{rel} holds a credential (a token in a URL or a header)"))
}

/// The file's text holds what [`redact_git_config`] replaces (or it is too
/// big to look through). Not a file, or not text: no.
pub fn git_text_holds_secret(abs: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(abs) else {
        return false;
    };
    // (A kernel file is never read: `read_git_text` refuses it, and the
    // fence skips it before asking.)
    if !meta.is_file() {
        return false;
    }
    if meta.len() > GIT_TEXT_MAX {
        return true;
    }
    // Every unasked command asks again about the same files: a file whose
    // stamp has not changed is not read again.
    use std::os::unix::fs::MetadataExt;
    type Seen = std::collections::HashMap<PathBuf, ((i64, i64, i64, i64, u64, u64), bool)>;
    static SEEN: std::sync::Mutex<Option<Seen>> = std::sync::Mutex::new(None);
    let stamp = (
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.ino(),
        meta.len(),
    );
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let seen = seen.get_or_insert_with(Default::default);
    if let Some((st, holds)) = seen.get(abs)
        && *st == stamp
    {
        return *holds;
    }
    // Not read whole: a file can grow past its size between the look and
    // the read. One that turns out too big holds one, as above.
    let holds = match read_git_text(abs) {
        Some(t) => redact_git_config(&t) != t,
        None => std::fs::metadata(abs).is_ok_and(|m| m.len() > GIT_TEXT_MAX),
    };
    if seen.len() > 20_000 {
        seen.clear();
    }
    seen.insert(abs.to_path_buf(), (stamp, holds));
    holds
}

/// The text files of the repository whose git dir is `git` that may hold
/// a credential: every file in it but its objects and index (configs of
/// any size, the rest up to 64 KiB) — worktrees' and submodules' at any
/// depth included — the common dir a `commondir` file names (a linked
/// worktree's, outside the workspace too), and every file a config
/// includes (`path = …`, followed from the file that names it).
pub fn repo_config_files(git: &Path) -> Vec<PathBuf> {
    const SMALL: u64 = 64 << 10;
    const MAX_FILES: usize = 5000;
    let mut out: Vec<PathBuf> = Vec::new();
    if is_kernel_file(git) {
        return Vec::new();
    }
    let mut gits = vec![std::fs::canonicalize(git).unwrap_or_else(|_| git.to_path_buf())];
    let mut walked: Vec<PathBuf> = Vec::new();
    while let Some(g) = gits.pop() {
        if walked.contains(&g) || walked.len() > 100 {
            continue;
        }
        walked.push(g.clone());
        let mut stack = vec![g.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if out.len() >= MAX_FILES {
                    break;
                }
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name();
                let p = e.path();
                if ft.is_dir() {
                    // A git dir's objects are compressed and its refs hold
                    // object names only (a submodule may be named either).
                    let internal = (name == "objects" || name == "refs")
                        && (d.join("HEAD").is_file() || d.join("commondir").is_file() || d == g);
                    if !internal {
                        stack.push(p);
                    }
                    continue;
                }
                let Ok(m) = e.metadata() else { continue };
                if !m.is_file() || name == "index" {
                    continue;
                }
                // Where it really is: a `commondir` naming its own git dir
                // by another spelling would be walked again and again.
                if name == "commondir"
                    && let Some(c) = read_git_text(&p)
                    && let Ok(common) = std::fs::canonicalize(d.join(c.trim()))
                    && !is_kernel_file(&common)
                {
                    gits.push(common);
                }
                // Reflogs keep the command lines of `git pull URL`, and an
                // active repository's outgrow the small-file size.
                let log = d.strip_prefix(&g).is_ok_and(|r| r.starts_with("logs"));
                if name.to_string_lossy().starts_with("config") || m.len() <= SMALL || log {
                    out.push(p);
                }
            }
        }
    }
    // What the configs include, and what that includes.
    let mut k = 0;
    while k < out.len() && out.len() < MAX_FILES {
        let f = out[k].clone();
        k += 1;
        let Some(text) = read_git_text(&f) else {
            continue;
        };
        for line in logical_lines(&text) {
            let Some((key, value)) = setting(&line) else {
                continue;
            };
            if !key.eq_ignore_ascii_case("path") {
                continue;
            }
            let v = value.trim().trim_matches('"');
            let target = if v.starts_with('~') {
                let Some(h) = std::env::var_os("HOME") else {
                    continue;
                };
                match tilde(v, Path::new(&h)) {
                    Some(p) => p,
                    None => continue,
                }
            } else {
                f.parent().map_or_else(|| PathBuf::from(v), |d| d.join(v))
            };
            if target.is_file() && !is_kernel_file(&target) && !out.contains(&target) {
                out.push(target);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A config's lines as git reads them: a line ending in a backslash runs
/// on into the next (joined here without it).
pub(crate) fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for raw in text.lines() {
        match raw.strip_suffix('\\').filter(|_| continues(raw)) {
            Some(part) => cur.push_str(part),
            None => {
                cur.push_str(raw);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `key` and `value` of a config line (a `[section]` in front of the key
/// on the same line passed over; a comment after an unquoted value cut).
pub(crate) fn setting(line: &str) -> Option<(String, String)> {
    // git passes over a byte-order mark.
    let mut rest = line
        .trim_start()
        .trim_start_matches('\u{feff}')
        .trim_start();
    // Headers in front (`[core] [http "https://a/x]y"] key = …`), their
    // quoted names read whole.
    while rest.starts_with('[') {
        let mut quoted = false;
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = !quoted,
                ']' if !quoted => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        rest = rest[end? + 1..].trim_start();
    }
    let (key, value) = rest.split_once('=')?;
    let value = value.trim();
    let value = if value.starts_with('"') {
        value.to_string()
    } else {
        value
            .split([';', '#'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    Some((key.trim().to_string(), value))
}

/// A git setting whose value is a credential: an `extraheader`, or a URL
/// with a token or password in it.
pub fn git_setting_is_secret(name: &str, value: &str) -> bool {
    setting_is_secret(name, value) || redact_git_config(value) != value
}

/// `text` (a git config) with every credential replaced by `***`: the
/// user-info of a URL (any scheme but ssh, whose user name is no secret),
/// the value of a setting whose name says it holds one (`extraheader`,
/// `*token*`, `*password*`, `*secret*`) and an inline credential helper
/// (`helper = !f() { echo password=…; }; f`). A line continued with a
/// backslash is read whole; a line with a credential is written back as
/// one line.
pub fn redact_git_config(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut raw = String::new();
    for piece in text.split_inclusive('\n') {
        raw.push_str(piece);
        if continues(piece) {
            continue;
        }
        out.push_str(&redact_config_line(&raw));
        raw.clear();
    }
    if !raw.is_empty() {
        out.push_str(&redact_config_line(&raw));
    }
    out
}

/// A config line that runs on into the next, as git reads it: one ending
/// in a backslash outside a comment (`; …\` and `# …\` end there).
pub(crate) fn continues(piece: &str) -> bool {
    let line = piece.trim_end_matches(['\n', '\r']);
    if !line.ends_with('\\') {
        return false;
    }
    let mut quoted = false;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ';' | '#' if !quoted => return false,
            _ => {}
        }
    }
    // `\\` at the end is a backslash, not a continuation.
    escaped
}

/// What git reads of a line: quotes gone, `\x` as `x`. Credentials are
/// looked for in this too (`https:"//"u:T@h`, `[url "https:\/\/u:T@h/"]`).
pub(crate) fn as_git_reads(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut escaped = false;
    for c in line.chars() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            '"' => {}
            _ => out.push(c),
        }
    }
    out
}

/// One logical line of a config (with its continuations and its newline).
pub(crate) fn redact_config_line(raw: &str) -> String {
    static URL: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@").ok()
    });
    let ending = if raw.ends_with('\n') { "\n" } else { "" };
    let joined = raw
        .trim_end_matches(['\n', '\r'])
        .replace("\\\r\n", "")
        .replace("\\\n", "");
    if let Some((key, value)) = setting(&joined)
        && setting_is_secret(shell_name(&key), &value)
    {
        let cut = joined.find('=').map_or(joined.len(), |i| i + 1);
        return format!("{} ***{ending}", &joined[..cut]);
    }
    // A hook or another script of the git dir: `"api_token": "…"` (JSON)
    // and `api_token: …` (YAML) hold a credential the same way.
    static COLON: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"^\s*"?([A-Za-z][A-Za-z0-9._-]*)"?\s*:\s*\S"#).ok()
    });
    if let Some(c) = COLON.as_ref().and_then(|re| re.captures(&joined))
        && !joined.contains("://")
        && setting_is_secret(&c[1], "")
    {
        let cut = joined.find(':').map_or(joined.len(), |i| i + 1);
        return format!("{} ***{ending}", &joined[..cut]);
    }
    if let Some(scripted) = redact_script_line(&joined) {
        return format!("{scripted}{ending}");
    }
    let Some(re) = URL.as_ref() else {
        return raw.to_string();
    };
    let redacted = re.replace_all(&joined, |c: &regex::Captures| {
        let scheme = c[1].to_ascii_lowercase();
        if scheme.starts_with("ssh") || scheme.starts_with("git+ssh") {
            c[0].to_string()
        } else {
            format!("{}***@", &c[1])
        }
    });
    // A credential only git's reading shows (quotes or escapes in the
    // way), or a user and password with no scheme (`http.proxy =
    // user:pass@proxy:8080`): the line goes whole.
    let read = as_git_reads(&redacted);
    static BARE: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|[=\s])[A-Za-z0-9._~%+-]+:[^\s/@]+@[A-Za-z0-9.-]").ok()
    });
    let hidden = re.is_match(&read)
        && re.captures_iter(&read).any(|c| {
            let scheme = c[1].to_ascii_lowercase();
            !scheme.starts_with("ssh") && !scheme.starts_with("git+ssh") && !c[0].ends_with("***@")
        });
    let bare = BARE.as_ref().is_some_and(|b| b.is_match(&read)) && !read.contains("://");
    if hidden || bare {
        let t = joined.trim_start();
        return if t.starts_with('[') {
            format!("[mm-redacted]{ending}")
        } else {
            let cut = joined.find('=').map_or(joined.len(), |i| i + 1);
            format!("{} ***{ending}", &joined[..cut])
        };
    }
    if redacted == joined {
        raw.to_string()
    } else {
        format!("{redacted}{ending}")
    }
}

/// A line of a hook (a script in the git dir) with its credentials as
/// `***`: `"api_token": "…"` anywhere in it, a `DEPLOY_TOKEN=…` after a
/// `;` or `&&`, `curl -u user:password`; None when it holds none.
pub(crate) fn redact_script_line(line: &str) -> Option<String> {
    use std::sync::LazyLock;
    static JSON: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r#""([A-Za-z][A-Za-z0-9._-]*)"(\s*:\s*)"[^"]*""#).ok());
    static ASSIGN: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r"(^|[;&|(\s])([A-Za-z_][A-Za-z0-9_]*)=(\S+)").ok());
    static USER: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r"(\s(?:-u|--user)[\s=]+)[^\s:]+:\S+").ok());
    let (json, assign, user) = (JSON.as_ref()?, ASSIGN.as_ref()?, USER.as_ref()?);
    let out = json.replace_all(line, |c: &regex::Captures| {
        if setting_is_secret(&c[1], "") {
            format!("\"{}\"{}\"***\"", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    let out = assign.replace_all(&out, |c: &regex::Captures| {
        if setting_is_secret(&c[2], "") {
            format!("{}{}=***", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    let out = user.replace_all(&out, "${1}***");
    (out != line).then(|| out.into_owned())
}

/// The variable a shell line assigns (`export DEPLOY_TOKEN`, `local
/// DB_PASSWORD`, `readonly X`, `declare -x Y`): its name, for a hook in a
/// git dir; anything else as it is.
pub(crate) fn shell_name(key: &str) -> &str {
    let mut words = key.split_whitespace();
    match words.next() {
        Some("export" | "local" | "readonly" | "declare" | "typeset") => {
            words.rfind(|w| !w.starts_with('-')).unwrap_or(key)
        }
        _ => key,
    }
}

/// A setting whose name says its value is a credential.
pub(crate) fn setting_is_secret(key: &str, value: &str) -> bool {
    // A config key is a name (`token`, `http.extraheader`), not a line of a
    // script (`my ($v, $token) = …` in a hook sample).
    let name = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | ':'));
    if !name {
        return false;
    }
    let k = key.to_ascii_lowercase();
    k.ends_with("extraheader")
        || ["token", "pass", "secret", "apikey", "api-key", "api_key"]
            .iter()
            .any(|w| k.contains(w))
        // An inline helper (`!f() { echo password=…; }`), or one given
        // arguments (`/usr/bin/helper --token …`).
        || (k.ends_with("helper")
            && (value.trim_start().trim_start_matches('"').starts_with('!')
                || value.split_whitespace().count() > 1))
}

/// Names git looks for in a git dir.
pub(crate) const GIT_DIR_PARTS: [&str; 6] = [
    "HEAD",
    "config",
    "commondir",
    "objects",
    "refs",
    "packed-refs",
];

/// Why the file tools may not write `rel`: it lies in a folder laid out
/// as a git dir (under any name: `vendor/lib.git`), or writing it would
/// make one (a `HEAD` beside an `objects`, a `refs/…` beside `objects`
/// and a `config`): git would run what such a folder's config names the
/// next time the user runs git there.
pub fn git_layout_reason(root: &Path, rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    for k in 0..parts.len() {
        let dir = root.join(parts[..k].join("/"));
        if k > 0 && is_git_dir(&dir) {
            return Some(format!(
                "{} is laid out as a git dir: the file tools do not write git's internals",
                parts[..k].join("/")
            ));
        }
        let child = parts[k];
        // The folder's git parts once this one is there, read as
        // `is_git_dir` reads them.
        let has = |name: &str| name == child || std::fs::symlink_metadata(dir.join(name)).is_ok();
        let would = (has("HEAD") && (has("objects") || has("commondir")))
            || (has("objects") && has("refs") && has("config"));
        if GIT_DIR_PARTS.contains(&child) && would {
            let at = if k == 0 {
                ".".to_string()
            } else {
                parts[..k].join("/")
            };
            return Some(format!(
                "writing {rel} would lay {at} out as a git dir (it has git's other parts): the file tools do not"
            ));
        }
    }
    None
}

/// A git config path that starts with `~`, as git expands it: `~` and
/// `~/x` (any number of slashes: `~//x` is `$HOME/x`, not `/x`) from
/// `home`, `~user/x` from that user's home. None when it does not start
/// with `~` or names no user.
pub fn tilde(value: &str, home: &Path) -> Option<PathBuf> {
    let rest = value.strip_prefix('~')?;
    let (user, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let base = if user.is_empty() {
        home.to_path_buf()
    } else {
        nix::unistd::User::from_name(user).ok()??.dir
    };
    let path = path.trim_start_matches('/');
    Some(if path.is_empty() {
        base
    } else {
        base.join(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tilde_path_is_expanded_as_git_does() {
        let home = Path::new("/home/u");
        assert_eq!(tilde("~", home), Some(PathBuf::from("/home/u")));
        assert_eq!(tilde("~/a/b", home), Some(PathBuf::from("/home/u/a/b")));
        assert_eq!(
            tilde("~//proj/x", home),
            Some(PathBuf::from("/home/u/proj/x"))
        );
        assert_eq!(tilde("~root/x", home), Some(PathBuf::from("/root/x")));
        assert_eq!(tilde("~no-such-user-mm/x", home), None);
        assert_eq!(tilde("/abs", home), None);
    }
}
