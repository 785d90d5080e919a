//! Key bindings: `keymaps/*.toml` compiled in (default, vim, emacs),
//! partial overrides from `~/.config/mm/keymaps/`. A repository's
//! `.mm/keymaps/` is not read: what a key answers (an approval, a
//! rewind's "overwrite?") is the user's alone (red-team rounds 15, 16).
//! A section per place in the UI, an action per line, one key or a list.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{ConfigError, line_col};
pub use crate::tui::keys::{Key, KeyCodeKey};

pub const SHIPPED: &[(&str, &str)] = &[
    ("default", include_str!("../../keymaps/default.toml")),
    ("vim", include_str!("../../keymaps/vim.toml")),
    ("emacs", include_str!("../../keymaps/emacs.toml")),
];

/// The trait every scope's action enum implements (generated below).
pub trait Action: Sized + Copy + 'static {
    const SCOPE: Scope;
    fn from_name(name: &str) -> Option<Self>;
    fn name(self) -> &'static str;
}

/// One table makes the scopes, their names and help, and an action enum
/// per scope that handlers match exhaustively.
macro_rules! keymap_table {
    ($(
        $(#[$doc:meta])*
        $scope:ident $sname:literal $enum:ident {
            $($act:ident $aname:literal $help:literal),* $(,)?
        }
    )*) => {
        /// Where a binding applies. Overlays first, then the focused pane,
        /// then global.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Scope { $($scope),* }

        impl Scope {
            pub const ALL: &[Scope] = &[$(Scope::$scope),*];

            pub fn name(self) -> &'static str {
                match self { $(Scope::$scope => $sname),* }
            }

            /// The actions a section may bind, with what they do.
            pub fn actions(self) -> &'static [(&'static str, &'static str)] {
                match self { $(Scope::$scope => &[$(($aname, $help)),*]),* }
            }
        }

        $(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub enum $enum { $($act),* }

            impl Action for $enum {
                const SCOPE: Scope = Scope::$scope;
                fn from_name(name: &str) -> Option<Self> {
                    match name { $($aname => Some(Self::$act),)* _ => None }
                }
                fn name(self) -> &'static str {
                    match self { $(Self::$act => $aname),* }
                }
            }
        )*
    };
}

keymap_table! {
    /// Keys that work wherever the focus is.
    Global "global" GlobalAction {
        Cancel "cancel" "cancel the running turn; twice in a row quits",
        Quit "quit" "quit",
        Suspend "suspend" "suspend (fg resumes)",
        FocusNext "focus_next" "focus the next pane",
        FocusPrev "focus_prev" "focus the previous pane",
        ToggleTree "toggle_tree" "show or hide the file tree",
        ToggleDiff "toggle_diff" "show or hide the diff pane",
        ToggleMouse "toggle_mouse" "mouse capture on/off (off: the terminal selects text)",
        Help "help" "this help",
        Palette "palette" "slash-command palette",
        Diagnostics "diagnostics" "the language servers' errors and warnings",
    }
    Transcript "transcript" TranscriptAction {
        ScrollUp "scroll_up" "scroll up a line",
        ScrollDown "scroll_down" "scroll down a line",
        PageUp "page_up" "scroll up a page",
        PageDown "page_down" "scroll down a page",
        Top "top" "go to the top",
        Bottom "bottom" "go to the end and follow new output",
        SelectPrev "select_prev" "select the previous cell",
        SelectNext "select_next" "select the next cell",
        Toggle "toggle" "expand or collapse the selected cell",
        Copy "copy" "copy the selected cell to the clipboard",
        CopyCode "copy_code" "copy the selected cell's code block (again: the next one)",
        OpenChild "open_child" "open the selected helper's (task, ask_agent) own transcript",
        Help "help" "this help",
    }
    Diff "diff" DiffAction {
        ScrollUp "scroll_up" "scroll up a line",
        ScrollDown "scroll_down" "scroll down a line",
        PageUp "page_up" "scroll up a page",
        PageDown "page_down" "scroll down a page",
        NextFile "next_file" "next file",
        PrevFile "prev_file" "previous file",
        NextHunk "next_hunk" "next hunk",
        PrevHunk "prev_hunk" "previous hunk",
        CloseReview "close_review" "back from a review (/diff, rewind preview) to the live diff",
        Help "help" "this help",
    }
    Tree "tree" TreeAction {
        Up "up" "previous entry",
        Down "down" "next entry",
        Open "open" "open the file, or open/close the folder",
        Expand "expand" "open the folder",
        Collapse "collapse" "close the folder",
        StartFilter "start_filter" "start a filter: every letter typed is part of the name",
        ClearFilter "clear_filter" "clear the filter (type to filter)",
        DeleteFilter "delete_filter" "delete the filter's last character",
    }
    Composer "composer" ComposerAction {
        Send "send" "send (queued while the agent works)",
        Newline "newline" "new line",
        HistoryPrev "history_prev" "previous message (on the first line)",
        HistoryNext "history_next" "next message (on the last line)",
        Complete "complete" "complete a /command or @file",
        PageUp "page_up" "scroll the transcript up a page",
        PageDown "page_down" "scroll the transcript down a page",
        Top "top" "the transcript's top (with nothing typed)",
        Bottom "bottom" "the transcript's end, following it (with nothing typed)",
        KillLine "kill_line" "delete from the cursor to the start of the line (ctrl-y puts it back)",
        Clear "clear" "twice in a row: clear the message (ctrl-y puts it back)",
    }
    Approval "approval" ApprovalAction {
        Yes "yes" "allow",
        No "no" "refuse (type a reason for the model, Enter sends)",
        Always "always" "allow this command prefix or file for the session",
        Defer "defer" "look around first; the request waits",
        ToggleHunk "toggle_hunk" "accept or reject the selected hunk",
        NextHunk "next_hunk" "next hunk",
        PrevHunk "prev_hunk" "previous hunk",
    }
    Viewer "viewer" ViewerAction {
        Close "close" "close the viewer",
        ScrollUp "scroll_up" "cursor up a line",
        ScrollDown "scroll_down" "cursor down a line",
        Left "left" "cursor left",
        Right "right" "cursor right",
        WordNext "word_next" "next word",
        WordPrev "word_prev" "previous word",
        LineStart "line_start" "start of the line",
        LineEnd "line_end" "end of the line",
        PageUp "page_up" "page up",
        PageDown "page_down" "page down",
        Top "top" "top",
        Bottom "bottom" "bottom",
        Definition "definition" "go to the definition of the symbol under the cursor",
        References "references" "list the references to the symbol under the cursor",
        Back "back" "back to where you came from",
        Help "help" "every key",
    }
    /// A list of places: references, diagnostics.
    Places "places" PlacesAction {
        Up "up" "previous place",
        Down "down" "next place",
        PageUp "page_up" "page up",
        PageDown "page_down" "page down",
        Open "open" "open the place in the viewer",
        Back "back" "back to where you came from",
    }
    Rewind "rewind" RewindAction {
        Up "up" "previous checkpoint (the diff pane previews it)",
        Down "down" "next checkpoint",
        Choose "choose" "rewind to the selected checkpoint: then say what to restore",
        Code "code" "restore the files only",
        Conversation "conversation" "restore the conversation only",
        Both "both" "restore the files and the conversation",
        Overwrite "overwrite" "yes, overwrite the files changed outside mm",
        Keep "keep" "no, keep them (back to the list)",
        Cancel "cancel" "one step back; closes from the list",
    }
    Commit "commit" CommitAction {
        Save "save" "commit with the message as edited",
        Cancel "cancel" "do not commit",
    }
    Plan "plan" PlanAction {
        Run "run" "carry out the proposed plan",
        Edit "edit" "edit the plan's steps",
        Save "save" "carry out the plan as edited",
        Cancel "cancel" "set the plan aside (while editing: stop editing)",
    }
    Help "help" HelpAction {
        ScrollUp "scroll_up" "scroll up",
        ScrollDown "scroll_down" "scroll down",
        PageUp "page_up" "page up",
        PageDown "page_down" "page down",
        Close "close" "close this help (so does any other key)",
    }
}

impl Scope {
    fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.iter().copied().find(|s| s.name() == name)
    }
}

/// A resolved keymap.
#[derive(Clone, Debug, Default)]
pub struct Keymap {
    pub name: String,
    /// (scope, action) -> keys, in file order.
    bindings: BTreeMap<(Scope, String), Vec<Key>>,
}

impl Keymap {
    /// The action bound to `key` in `scope` (not falling back to global).
    pub fn action(&self, scope: Scope, key: Key) -> Option<&str> {
        self.bindings
            .iter()
            .find(|((s, _), keys)| *s == scope && keys.contains(&key))
            .map(|((_, a), _)| a.as_str())
    }

    /// The typed action bound to `key` in the action's scope.
    pub fn lookup<A: Action>(&self, key: Key) -> Option<A> {
        self.action(A::SCOPE, key).and_then(A::from_name)
    }

    /// The keys of a typed action in words ("ctrl-s / f2").
    pub fn keys_of<A: Action>(&self, action: A) -> String {
        self.describe(A::SCOPE, action.name())
    }

    pub fn keys(&self, scope: Scope, action: &str) -> &[Key] {
        self.bindings
            .get(&(scope, action.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// "ctrl-c" style text of the keys of an action, for hints and help.
    pub fn describe(&self, scope: Scope, action: &str) -> String {
        self.keys(scope, action)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

type Sections =
    BTreeMap<toml::Spanned<String>, BTreeMap<toml::Spanned<String>, toml::Spanned<toml::Value>>>;

struct KeymapFile {
    inherits: Option<String>,
    bindings: Vec<((Scope, String), Vec<Key>)>,
}

fn parse_file(path: &Path, text: &str) -> Result<KeymapFile, ConfigError> {
    let err = |offset: Option<usize>, message: String| ConfigError {
        file: path.to_path_buf(),
        position: offset.map(|o| line_col(text, o)),
        message,
    };
    let mut table: toml::Table = toml::from_str(text)
        .map_err(|e| err(e.span().map(|s| s.start), e.message().trim().to_string()))?;
    let inherits = match table.remove("inherits") {
        None => None,
        Some(toml::Value::String(s)) => Some(s),
        Some(_) => return Err(err(None, "inherits must be a keymap name".into())),
    };
    // Parse again with spans, the `inherits` line blanked out in place so
    // every offset still points into `text`.
    let without: String = text
        .split_inclusive('\n')
        .map(|l| {
            if l.trim_start().starts_with("inherits") {
                l.chars().map(|c| if c == '\n' { c } else { ' ' }).collect()
            } else {
                l.to_string()
            }
        })
        .collect();
    let sections: Sections = toml::from_str(&without)
        .map_err(|e| err(e.span().map(|s| s.start), e.message().trim().to_string()))?;
    let mut bindings = Vec::new();
    for (section, actions) in sections {
        let Some(scope) = Scope::parse(section.get_ref()) else {
            let names: Vec<&str> = Scope::ALL.iter().map(|s| s.name()).collect();
            let best = crate::config::file::closest(section.get_ref(), &names).unwrap_or("global");
            return Err(err(
                Some(section.span().start),
                format!(
                    "unknown section [{}]; the closest is [{best}]",
                    section.get_ref()
                ),
            ));
        };
        let valid: Vec<&str> = scope.actions().iter().map(|(a, _)| *a).collect();
        for (action, keys) in actions {
            if !valid.contains(&action.get_ref().as_str()) {
                let best = crate::config::file::closest(action.get_ref(), &valid).unwrap_or("");
                return Err(err(
                    Some(action.span().start),
                    format!(
                        "unknown action {:?} in [{}]; the closest is {best:?}",
                        action.get_ref(),
                        scope.name()
                    ),
                ));
            }
            let at = Some(keys.span().start);
            let specs: Vec<&toml::Value> = match keys.get_ref() {
                toml::Value::Array(v) => v.iter().collect(),
                one => vec![one],
            };
            let mut parsed = Vec::new();
            for spec in specs {
                let Some(text) = spec.as_str() else {
                    return Err(err(at, "a key must be a string, like \"ctrl-c\"".into()));
                };
                parsed.push(Key::parse(text).map_err(|m| err(at, m))?);
            }
            bindings.push(((scope, action.into_inner()), parsed));
        }
    }
    Ok(KeymapFile { inherits, bindings })
}

fn user_dirs() -> Vec<PathBuf> {
    crate::config::user_config_dir()
        .map(|d| d.join("keymaps"))
        .into_iter()
        .collect()
}

fn shipped(name: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Loads a keymap by name: its chain of `inherits` among the shipped
/// files, then the user's files over it.
pub fn load(name: &str) -> Result<Keymap, ConfigError> {
    load_from(name, &user_dirs())
}

/// As `load`, with the user's files looked for in `dirs`.
fn load_from(name: &str, dirs: &[PathBuf]) -> Result<Keymap, ConfigError> {
    let mut user = Vec::new();
    let mut last_file = PathBuf::from(format!("keymaps/{name}.toml"));
    for dir in dirs {
        let path = dir.join(format!("{name}.toml"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            user.push(parse_file(&path, &text)?);
            last_file = path;
        }
    }
    let mut chain: Vec<KeymapFile> = Vec::new();
    let mut next = if shipped(name).is_some() {
        Some(name.to_string())
    } else {
        user.iter().rev().find_map(|f| f.inherits.clone())
    };
    if next.is_none() && user.is_empty() {
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        return Err(ConfigError {
            file: PathBuf::from(format!("keymaps/{name}.toml")),
            position: None,
            message: format!(
                "no keymap named {name:?}; shipped keymaps: {} (or add {name}.toml under ~/.config/mm/keymaps/)",
                names.join(", ")
            ),
        });
    }
    let mut seen = 0;
    while let Some(n) = next.take() {
        seen += 1;
        let Some(text) = shipped(&n).filter(|_| seen < 8) else {
            break;
        };
        let f = parse_file(Path::new(&format!("keymaps/{n}.toml")), text)?;
        next = f.inherits.clone();
        chain.push(f);
    }
    if chain.is_empty() {
        chain.push(parse_file(Path::new("keymaps/default.toml"), SHIPPED[0].1)?);
    }
    let mut bindings = BTreeMap::new();
    for f in chain.into_iter().rev().chain(user) {
        for (k, v) in f.bindings {
            bindings.insert(k, v);
        }
    }
    // A key bound to two actions of one scope would do whichever sorts
    // first: say so instead.
    let mut taken: BTreeMap<(Scope, Key), &str> = BTreeMap::new();
    for ((scope, action), keys) in &bindings {
        for key in keys {
            if let Some(other) = taken.insert((*scope, *key), action.as_str()) {
                return Err(ConfigError {
                    file: last_file,
                    position: None,
                    message: format!(
                        "{} is bound to both {other} and {action} in [{}]; bind it to one",
                        key,
                        scope.name()
                    ),
                });
            }
        }
    }
    Ok(Keymap {
        name: name.to_string(),
        bindings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_keymap_parses_and_binds_every_action() {
        for (name, _) in SHIPPED {
            let k = load_from(name, &[]).unwrap();
            for scope in Scope::ALL {
                for (action, _) in scope.actions() {
                    assert!(
                        !k.keys(*scope, action).is_empty(),
                        "{name}: [{}] {action}",
                        scope.name()
                    );
                }
            }
        }
    }

    #[test]
    fn vim_inherits_and_changes_the_default() {
        let vim = load_from("vim", &[]).unwrap();
        let ctrl_d = Key::parse("ctrl-d").unwrap();
        assert_eq!(vim.action(Scope::Transcript, ctrl_d), Some("page_down"));
        assert_eq!(
            vim.action(Scope::Global, Key::parse("ctrl-c").unwrap()),
            Some("cancel")
        );
        let shift_g = Key::parse("G").unwrap();
        assert_eq!(shift_g, Key::parse("shift-g").unwrap());
        assert_eq!(vim.action(Scope::Transcript, shift_g), Some("bottom"));
    }

    #[test]
    fn user_files_override_part_of_a_keymap() {
        let dir = tempfile::tempdir().unwrap();
        let maps = dir.path().join(".mm/keymaps");
        std::fs::create_dir_all(&maps).unwrap();
        std::fs::write(
            maps.join("default.toml"),
            "[global]\nhelp = [\"f1\", \"ctrl-h\"]\n",
        )
        .unwrap();
        let k = load_from("default", std::slice::from_ref(&maps)).unwrap();
        assert_eq!(
            k.action(Scope::Global, Key::parse("ctrl-h").unwrap()),
            Some("help")
        );
        assert_eq!(
            k.action(Scope::Global, Key::parse("ctrl-c").unwrap()),
            Some("cancel")
        );
    }

    /// Red-team round 15: a cloned repository's keymap bound `n` to
    /// "always" too, and "always" sorted first, so refusing approved. A
    /// repository's keymaps are no longer read at all (`load` looks only
    /// in the user's folder); in the user's own, a key bound to two
    /// actions of one section is an error.
    #[test]
    fn no_key_does_two_things_in_one_section() {
        let dir = tempfile::tempdir().unwrap();
        let maps = dir.path().join("keymaps");
        std::fs::create_dir_all(&maps).unwrap();
        std::fs::write(
            maps.join("default.toml"),
            "[approval]\nalways = [\"a\", \"n\"]\n",
        )
        .unwrap();
        let e = load_from("default", std::slice::from_ref(&maps)).unwrap_err();
        assert!(e.file.ends_with("keymaps/default.toml"), "{e}");
        assert!(
            e.message.contains("n is bound to both") && e.message.contains("[approval]"),
            "{e}"
        );
        std::fs::write(
            maps.join("default.toml"),
            "[global]\nhelp = [\"f1\", \"ctrl-c\"]\n",
        )
        .unwrap();
        let e = load_from("default", std::slice::from_ref(&maps)).unwrap_err();
        assert!(
            e.message.contains("ctrl-c is bound to both") && e.message.contains("[global]"),
            "{e}"
        );
        assert!(user_dirs().iter().all(|d| !d.starts_with(dir.path())));
    }

    #[test]
    fn a_broken_keymap_names_file_line_and_col() {
        let dir = tempfile::tempdir().unwrap();
        let maps = dir.path().join(".mm/keymaps");
        std::fs::create_dir_all(&maps).unwrap();
        std::fs::write(
            maps.join("default.toml"),
            "[global]\nhelp = \"f1\"\nqiut = \"ctrl-q\"\n",
        )
        .unwrap();
        let e = load_from("default", std::slice::from_ref(&maps)).unwrap_err();
        assert_eq!(e.position, Some((3, 1)), "{e}");
        assert!(e.message.contains("\"quit\""), "{e}");
        std::fs::write(
            maps.join("default.toml"),
            "[global]\nhelp = \"ctrl-banana\"\n",
        )
        .unwrap();
        let e = load_from("default", std::slice::from_ref(&maps)).unwrap_err();
        assert_eq!(e.position, Some((2, 8)), "{e}");
        std::fs::write(maps.join("default.toml"), "[globl]\n").unwrap();
        let e = load_from("default", std::slice::from_ref(&maps)).unwrap_err();
        assert!(e.message.contains("[global]"), "{e}");
    }
}
