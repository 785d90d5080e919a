//! The user's own config and records inside a workspace: mm's and git's
//! config files (and what git's includes name), mm's data folder, the Go
//! agent's; the file tools neither read nor write them.

use super::*;

/// The user's own mm and git config (and the files git's includes), mm's
/// own records (its data folder: sessions started, "always" answers,
/// trusted configs), the Go agent's `~/.agent`, and what the fence masks
/// in the home folder, when the workspace holds them (mm run in a home
/// folder, `XDG_CONFIG_HOME` inside the project): the file tools neither
/// read nor write them (a `yolo: true`, an MCP server or a forged trust
/// written there would run at mm's next start).
pub(super) fn own_config_reason(abs: &Path) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let own = [crate::config::user_config_dir(), crate::config::data_dir()];
    own_config_reason_in(abs, home, xdg, own.into_iter().flatten().collect())
}

pub(super) fn own_config_reason_in(
    abs: &Path,
    home: Option<PathBuf>,
    xdg: Option<PathBuf>,
    mm_own: Vec<PathBuf>,
) -> Option<String> {
    let own = own_places(home.as_deref(), xdg, mm_own);
    let canon = |p: &Path| resolve_loose(p, 0);
    let at = canon(abs);
    if let Some(m) = home.and_then(|h| fence::masked_home_path_in(&at, h)) {
        return Some(format!(
            "{} is kept from everything mm runs (credentials, histories, other agents' records), and its tools do not touch it either",
            m.display()
        ));
    }
    own.iter().find(|o| at.starts_with(canon(o))).map(|o| {
        format!(
            "{} is your own configuration, which mm's tools do not touch",
            o.display()
        )
    })
}

/// The user's own configuration, wherever it lies: mm's folders (`mm_own`),
/// the Go agent's `~/.agent`, git's global config files (the XDG `git`
/// folder whole: its `ignore` and `attributes` are git's too), the files
/// they include and the places they name that git runs or reads
/// (`core.hooksPath`, `core.attributesFile`, `core.excludesFile`).
pub(super) fn own_places(
    home: Option<&Path>,
    xdg: Option<PathBuf>,
    mm_own: Vec<PathBuf>,
) -> Vec<PathBuf> {
    let xdg = xdg.or_else(|| home.map(|h| h.join(".config")));
    let mut own = mm_own;
    // `GIT_CONFIG_GLOBAL` in mm's environment names the file the user's
    // git reads instead of `~/.gitconfig` (red-team round 35).
    let global = std::env::var_os("GIT_CONFIG_GLOBAL").map(PathBuf::from);
    let git_files = git_config_files(home, xdg.clone(), global);
    if let Some(h) = home {
        own.push(h.join(".agent"));
        let mut named = Vec::new();
        for f in &git_files {
            git_config_places(f, h, 0, &mut named);
        }
        own.extend(named);
    }
    own.extend(git_files.iter().map(|f| match f.ends_with("git/config") {
        true => f.parent().map_or_else(|| f.clone(), Path::to_path_buf),
        false => f.clone(),
    }));
    own
}

/// The user's git config files: `~/.gitconfig`, the XDG one, and the
/// file `GIT_CONFIG_GLOBAL` names (`global`, when absolute).
pub(super) fn git_config_files(
    home: Option<&Path>,
    xdg: Option<PathBuf>,
    global: Option<PathBuf>,
) -> Vec<PathBuf> {
    home.map(|h| h.join(".gitconfig"))
        .into_iter()
        .chain(xdg.map(|x| x.join("git/config")))
        .chain(global.filter(|g| g.is_absolute()))
        .collect()
}

/// How deep git follows includes.
const GIT_INCLUDE_DEPTH: u8 = 10;

/// The files a git config file includes (`[include] path`, `[includeIf
/// …] path`, every condition taken as met; `~/` from `home`, a relative
/// path from the including file's folder), and theirs, as deep as git
/// goes; and the places its `core.hooksPath`, `core.attributesFile` and
/// `core.excludesFile` name (absolute or from `~/`). Read as git reads a
/// config: a header with a key on its line, a byte-order mark, quotes,
/// escapes, comments after a value, lines run on with `\`.
pub(super) fn git_config_places(file: &Path, home: &Path, depth: u8, out: &mut Vec<PathBuf>) {
    let Ok(text) = crate::paths::read_regular(file, 1 << 20) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let mut section = String::new();
    for line in crate::paths::logical_lines(&text) {
        let mut rest = line
            .trim_start()
            .trim_start_matches('\u{feff}')
            .trim_start();
        while rest.starts_with('[') {
            let Some(end) = header_end(rest) else {
                break;
            };
            section = rest[1..end]
                .trim_start()
                .split([' ', '\t', '"', '.'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            rest = rest[end + 1..].trim_start();
        }
        let Some((key, raw)) = rest.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let include = matches!(section.as_str(), "include" | "includeif") && key == "path";
        let named = section == "core"
            && matches!(
                key.as_str(),
                "hookspath" | "attributesfile" | "excludesfile"
            );
        if !include && !named {
            continue;
        }
        let value = config_value(raw);
        let path = if let Some(p) = crate::paths::tilde(&value, home) {
            p
        } else if Path::new(&value).is_absolute() {
            PathBuf::from(&value)
        } else if include && !value.is_empty() {
            match file.parent() {
                Some(dir) => dir.join(&value),
                None => PathBuf::from(&value),
            }
        } else {
            // A relative hooks path is the repository's own.
            continue;
        };
        if out.contains(&path) {
            continue;
        }
        out.push(path.clone());
        if include && depth + 1 < GIT_INCLUDE_DEPTH {
            git_config_places(&path, home, depth + 1, out);
        }
    }
}

/// Where a `[section "sub"]` header that starts `line` ends (its `]`),
/// quoted names read whole.
pub(super) fn header_end(line: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// A config value as git reads it: quotes joined away, escapes made,
/// cut at a comment outside quotes, outer white space dropped.
pub(super) fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut space = String::new();
    let mut quoted = false;
    let mut chars = raw.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push_str(&std::mem::take(&mut space));
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => {
                        out.pop();
                    }
                    Some(x) => out.push(x),
                    None => {}
                }
            }
            '"' => {
                out.push_str(&std::mem::take(&mut space));
                quoted = !quoted;
            }
            ';' | '#' if !quoted => break,
            c if c.is_whitespace() && !quoted => space.push(c),
            c => {
                out.push_str(&std::mem::take(&mut space));
                out.push(c);
            }
        }
    }
    out
}

impl Sandbox {
    /// The first of the user's own config places (see `own_config_reason`)
    /// that lies in the workspace, made or not: code that can write the
    /// workspace could write it.
    pub fn holds_own_config(&self) -> Option<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        let own = [crate::config::user_config_dir(), crate::config::data_dir()];
        holds_own_config_in(&self.root, home, xdg, own.into_iter().flatten().collect())
    }
}

pub(super) fn holds_own_config_in(
    root: &Path,
    home: Option<PathBuf>,
    xdg: Option<PathBuf>,
    own: Vec<PathBuf>,
) -> Option<PathBuf> {
    own_places(home.as_deref(), xdg, own)
        .into_iter()
        .find(|p| resolve_loose(p, 0).starts_with(root))
}

/// `p` with every link followed that can be, dangling ones too, and the
/// part that does not exist yet kept as written: `~/.config/mm` as a link
/// to a folder not made yet is where a write there would go.
pub(super) fn resolve_loose(p: &Path, depth: u8) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    if depth < 16
        && let Ok(t) = std::fs::read_link(p)
    {
        let t = match p.parent() {
            Some(parent) if t.is_relative() => parent.join(t),
            _ => t,
        };
        return resolve_loose(&t, depth + 1);
    }
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => resolve_loose(parent, depth + 1).join(name),
        _ => p.to_path_buf(),
    }
}
