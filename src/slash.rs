//! The built-in slash commands, once for every face: their names and
//! aliases, what they take, what they do, where they exist (the TUI, the
//! line REPL, an editor over ACP) and whether they answer during a turn.
//! The TUI's palette and help, the REPL's `/help`, ACP's offered
//! commands and the names a custom command may not take all come from
//! [`Slash::ALL`]; each face matches on the enum, so a new command is a
//! variant here and an arm where it runs.

/// Where a command exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    Tui,
    Repl,
    Acp,
}

/// A built-in slash command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slash {
    Help,
    New,
    Sessions,
    Theme,
    Keymap,
    Mouse,
    Tree,
    Diff,
    Rewind,
    Undo,
    Stats,
    Cost,
    Compact,
    Mcp,
    Skills,
    Agents,
    Init,
    Plan,
    Model,
    Ctx,
    Copy,
    Export,
    Diagnostics,
    Commit,
    Quit,
}

use Face::{Acp, Repl, Tui};

/// One command's card.
struct Card {
    slash: Slash,
    name: &'static str,
    aliases: &'static [&'static str],
    /// What follows the name, as `/help` shows it (`""`: nothing).
    args: &'static str,
    about: &'static str,
    faces: &'static [Face],
    /// It only reads the session's state: it answers at once while a turn
    /// runs instead of waiting for the turn's end.
    glance: bool,
}

const ALL3: &[Face] = &[Tui, Repl, Acp];
const LOCAL: &[Face] = &[Tui, Repl];
const TUI: &[Face] = &[Tui];

/// The cards, in the order of `Slash::ALL` (a test holds them to it).
const CARDS: &[Card] = &[
    Card {
        slash: Slash::Help,
        name: "help",
        aliases: &["?"],
        args: "",
        about: "keys and commands",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::New,
        name: "new",
        aliases: &[],
        args: "",
        about: "start a new session (the current one stays in .mm/sessions)",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Sessions,
        name: "sessions",
        aliases: &[],
        args: "",
        about: "this workspace's sessions (the TUI: pick one to resume here)",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Theme,
        name: "theme",
        aliases: &[],
        args: "[NAME]",
        about: "switch theme: dark | light | high-contrast",
        faces: TUI,
        glance: false,
    },
    Card {
        slash: Slash::Keymap,
        name: "keymap",
        aliases: &[],
        args: "[NAME]",
        about: "switch keymap: default | vim | emacs",
        faces: TUI,
        glance: false,
    },
    Card {
        slash: Slash::Mouse,
        name: "mouse",
        aliases: &[],
        args: "",
        about: "mouse capture on/off (off: select text with the terminal)",
        faces: TUI,
        glance: false,
    },
    Card {
        slash: Slash::Tree,
        name: "tree",
        aliases: &[],
        args: "",
        about: "show or hide the file tree",
        faces: TUI,
        glance: false,
    },
    Card {
        slash: Slash::Diff,
        name: "diff",
        aliases: &[],
        args: "",
        about: "the session's changes since it began",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Rewind,
        name: "rewind",
        aliases: &[],
        args: "",
        about: "go back to a checkpoint: files, conversation or both",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Undo,
        name: "undo",
        aliases: &[],
        args: "",
        about: "revert the last edit",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Stats,
        name: "stats",
        aliases: &[],
        args: "",
        about: "requests, tokens, cache share and speeds; the window; the cost",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Cost,
        name: "cost",
        aliases: &[],
        args: "",
        about: "the session's tokens and what they cost",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Compact,
        name: "compact",
        aliases: &[],
        args: "[FOCUS]",
        about: "summarize the conversation so far (FOCUS: what to keep above all)",
        faces: ALL3,
        glance: false,
    },
    Card {
        slash: Slash::Mcp,
        name: "mcp",
        aliases: &[],
        args: "",
        about: "the MCP servers, how each stands, and their tools",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Skills,
        name: "skills",
        aliases: &[],
        args: "",
        about: "the skills the model may load",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Agents,
        name: "agents",
        aliases: &[],
        args: "",
        about: "the roles a sub-task (the task tool) may work in",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Init,
        name: "init",
        aliases: &[],
        args: "",
        about: "write a starting AGENTS.md from a look at the repository",
        faces: ALL3,
        glance: false,
    },
    Card {
        slash: Slash::Plan,
        name: "plan",
        aliases: &[],
        args: "REQUEST",
        about: "plan first: the model looks (read-only) and proposes numbered steps; approve them to carry them out",
        faces: ALL3,
        glance: false,
    },
    Card {
        slash: Slash::Model,
        name: "model",
        aliases: &[],
        args: "[NAME]",
        about: "the server's models; NAME: switch to it from the next request",
        faces: ALL3,
        glance: false,
    },
    Card {
        slash: Slash::Ctx,
        name: "ctx",
        aliases: &[],
        args: "[MODE]",
        about: "how requests are made (MODE: compact | rebuild) and what each sends",
        faces: ALL3,
        glance: true,
    },
    Card {
        slash: Slash::Copy,
        name: "copy",
        aliases: &[],
        args: "[N]",
        about: "copy the last answer (N: the N-th counting back)",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Export,
        name: "export",
        aliases: &[],
        args: "[PATH]",
        about: "write the session as Markdown (default .mm/exports/; .jsonl: events)",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Diagnostics,
        name: "diagnostics",
        aliases: &[],
        args: "",
        about: "the language servers' errors and warnings (F8); Enter opens one",
        faces: TUI,
        glance: false,
    },
    Card {
        slash: Slash::Commit,
        name: "commit",
        aliases: &[],
        args: "",
        about: "commit the session's changes with a message the model writes",
        faces: LOCAL,
        glance: false,
    },
    Card {
        slash: Slash::Quit,
        name: "quit",
        aliases: &["exit", "q"],
        args: "",
        about: "leave (also Ctrl-D)",
        faces: LOCAL,
        glance: false,
    },
];

impl Slash {
    /// Every command, in the order help lists them.
    pub const ALL: &'static [Slash] = &[
        Slash::Help,
        Slash::New,
        Slash::Sessions,
        Slash::Theme,
        Slash::Keymap,
        Slash::Mouse,
        Slash::Tree,
        Slash::Diff,
        Slash::Rewind,
        Slash::Undo,
        Slash::Stats,
        Slash::Cost,
        Slash::Compact,
        Slash::Mcp,
        Slash::Skills,
        Slash::Agents,
        Slash::Init,
        Slash::Plan,
        Slash::Model,
        Slash::Ctx,
        Slash::Copy,
        Slash::Export,
        Slash::Diagnostics,
        Slash::Commit,
        Slash::Quit,
    ];

    fn card(self) -> &'static Card {
        let card = &CARDS[self as usize];
        debug_assert_eq!(card.slash, self, "CARDS is out of order");
        card
    }

    /// The name, without `/`.
    pub fn name(self) -> &'static str {
        self.card().name
    }

    /// What it does, in one line.
    pub fn about(self) -> &'static str {
        self.card().about
    }

    /// What follows the name (`[FOCUS]`), or `""`.
    pub fn args(self) -> &'static str {
        self.card().args
    }

    pub fn on(self, face: Face) -> bool {
        self.card().faces.contains(&face)
    }

    /// It answers at once during a turn (it only reads).
    pub fn glance(self) -> bool {
        self.card().glance
    }

    /// The command a name (without `/`, an alias too) stands for.
    pub fn named(name: &str) -> Option<Slash> {
        Slash::ALL
            .iter()
            .copied()
            .find(|s| s.name() == name || s.card().aliases.contains(&name))
    }

    /// `/NAME ARGS` → the command and what follows it (trimmed). None for
    /// text that is not a built-in command.
    pub fn parse(line: &str) -> Option<(Slash, &str)> {
        let rest = line.trim().strip_prefix('/')?;
        let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        Some((Slash::named(name)?, arg.trim()))
    }

    /// Whether a name (without `/`) is a built-in's or an alias of one: a
    /// custom command may not take it, on any face.
    pub fn is_built_in(name: &str) -> bool {
        Slash::named(name).is_some()
    }

    /// The commands of one face, in help order.
    pub fn of(face: Face) -> impl Iterator<Item = Slash> {
        Slash::ALL.iter().copied().filter(move |s| s.on(face))
    }

    /// `/name [ARGS]`, as help lists it.
    pub fn usage(self) -> String {
        match self.args() {
            "" => format!("/{}", self.name()),
            a => format!("/{} {a}", self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_its_own_card_in_order() {
        assert_eq!(CARDS.len(), Slash::ALL.len());
        for (i, s) in Slash::ALL.iter().enumerate() {
            assert_eq!(CARDS[i].slash, *s);
            assert_eq!(*s as usize, i);
        }
    }

    #[test]
    fn names_and_aliases_are_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for s in Slash::ALL {
            let card = s.card();
            for n in std::iter::once(card.name).chain(card.aliases.iter().copied()) {
                assert!(seen.insert(n), "{n} is taken twice");
                assert_eq!(Slash::named(n), Some(*s));
                assert!(!n.contains(char::is_whitespace));
            }
            assert!(!card.faces.is_empty(), "{} is on no face", card.name);
            assert!(!card.about.is_empty());
        }
    }

    #[test]
    fn a_line_parses_to_its_command_and_argument() {
        assert_eq!(
            Slash::parse("/compact  keep the plan "),
            Some((Slash::Compact, "keep the plan"))
        );
        assert_eq!(Slash::parse("/q"), Some((Slash::Quit, "")));
        assert_eq!(Slash::parse("  /?"), Some((Slash::Help, "")));
        assert_eq!(Slash::parse("/review src"), None);
        assert_eq!(Slash::parse("stats"), None);
        assert!(Slash::is_built_in("exit"));
        assert!(!Slash::is_built_in("review"));
    }

    #[test]
    fn only_what_reads_answers_during_a_turn() {
        let glance: Vec<&str> = Slash::ALL
            .iter()
            .filter(|s| s.glance())
            .map(|s| s.name())
            .collect();
        assert_eq!(glance, ["stats", "cost", "mcp", "skills", "agents", "ctx"]);
        // An editor has its own ways to leave and to look at changes.
        let acp: Vec<&str> = Slash::of(Face::Acp).map(super::Slash::name).collect();
        assert!(
            !acp.contains(&"quit") && !acp.contains(&"rewind"),
            "{acp:?}"
        );
        assert!(acp.contains(&"compact"), "{acp:?}");
    }
}
