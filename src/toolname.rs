//! The model's built-in tools by name, and the names of their arguments:
//! one place for what the agent, the harness, the TUI's live diff, ACP's
//! tool kinds and the printer otherwise spelt out as strings. A tool the
//! model calls by a name not here (an MCP server's `server__tool`, a
//! command tool from `.mm/tools/`) is none of these: `ToolName::parse`
//! says None.

/// A built-in tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolName {
    ReadFile,
    ListDir,
    Glob,
    Grep,
    WriteFile,
    EditFile,
    Bash,
    LspDefinition,
    LspReferences,
    LspHover,
    LspWorkspaceSymbols,
    ReadSkill,
    AskAgent,
    Task,
    FetchContent,
    UpdatePlan,
}

/// What a tool does, as an editor groups calls (ACP's tool kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Search,
    Edit,
    Execute,
    Think,
    Fetch,
}

/// The names of the built-in tools' arguments.
pub mod arg {
    pub const PATH: &str = "path";
    pub const CONTENT: &str = "content";
    pub const OLD_STRING: &str = "old_string";
    pub const REPLACEMENT: &str = "replacement";
    pub const REPLACE_ALL: &str = "replace_all";
    pub const COMMAND: &str = "command";
    pub const PATTERN: &str = "pattern";
    pub const QUERY: &str = "query";
    pub const OFFSET: &str = "offset";
    pub const LIMIT: &str = "limit";
    pub const AGENT: &str = "agent";
    pub const ROLE: &str = "role";
    pub const PROMPT: &str = "prompt";
}

impl ToolName {
    pub const ALL: &'static [ToolName] = &[
        ToolName::ReadFile,
        ToolName::ListDir,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::Bash,
        ToolName::LspDefinition,
        ToolName::LspReferences,
        ToolName::LspHover,
        ToolName::LspWorkspaceSymbols,
        ToolName::ReadSkill,
        ToolName::AskAgent,
        ToolName::Task,
        ToolName::FetchContent,
        ToolName::UpdatePlan,
    ];

    /// The name the model calls it by.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::ReadFile => "read_file",
            ToolName::ListDir => "list_dir",
            ToolName::Glob => "glob",
            ToolName::Grep => "grep",
            ToolName::WriteFile => "write_file",
            ToolName::EditFile => "edit_file",
            ToolName::Bash => "bash",
            ToolName::LspDefinition => "lsp_definition",
            ToolName::LspReferences => "lsp_references",
            ToolName::LspHover => "lsp_hover",
            ToolName::LspWorkspaceSymbols => "lsp_workspace_symbols",
            ToolName::ReadSkill => "read_skill",
            ToolName::AskAgent => "ask_agent",
            ToolName::Task => "task",
            ToolName::FetchContent => "fetch_content",
            ToolName::UpdatePlan => "update_plan",
        }
    }

    /// The built-in tool a called name stands for.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.iter().copied().find(|t| t.as_str() == name)
    }

    pub fn kind(self) -> Kind {
        match self {
            ToolName::ReadFile | ToolName::ListDir | ToolName::LspHover | ToolName::ReadSkill => {
                Kind::Read
            }
            ToolName::Glob
            | ToolName::Grep
            | ToolName::LspDefinition
            | ToolName::LspReferences
            | ToolName::LspWorkspaceSymbols => Kind::Search,
            ToolName::WriteFile | ToolName::EditFile => Kind::Edit,
            ToolName::Bash => Kind::Execute,
            ToolName::AskAgent | ToolName::Task | ToolName::UpdatePlan => Kind::Think,
            ToolName::FetchContent => Kind::Fetch,
        }
    }

    /// It writes a file of the workspace (`write_file`, `edit_file`).
    pub fn edits(self) -> bool {
        self.kind() == Kind::Edit
    }

    /// It only looks at the workspace: it changes nothing.
    pub fn only_looks(self) -> bool {
        matches!(self.kind(), Kind::Read | Kind::Search)
    }

    /// The argument a one-line summary of a call shows.
    pub fn key_arg(self) -> &'static str {
        match self {
            ToolName::Bash => arg::COMMAND,
            ToolName::Glob | ToolName::Grep => arg::PATTERN,
            ToolName::LspWorkspaceSymbols => arg::QUERY,
            _ => arg::PATH,
        }
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `call.name == ToolName::Bash`.
impl PartialEq<ToolName> for str {
    fn eq(&self, other: &ToolName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<ToolName> for &str {
    fn eq(&self, other: &ToolName) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<ToolName> for std::borrow::Cow<'_, str> {
    fn eq(&self, other: &ToolName) -> bool {
        self.as_ref() == other.as_str()
    }
}

impl PartialEq<ToolName> for String {
    fn eq(&self, other: &ToolName) -> bool {
        self == other.as_str()
    }
}

/// Whether `name` is one of the tools that write a file.
pub fn edits(name: &str) -> bool {
    ToolName::parse(name).is_some_and(ToolName::edits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_none_is_taken_twice() {
        let mut seen = std::collections::BTreeSet::new();
        for t in ToolName::ALL {
            assert!(seen.insert(t.as_str()), "{t} twice");
            assert_eq!(ToolName::parse(t.as_str()), Some(*t));
        }
        assert_eq!(ToolName::parse("github__create_issue"), None);
        let called = String::from("edit_file");
        assert!("bash" == ToolName::Bash && called == ToolName::EditFile);
        assert!(edits("write_file") && !edits("read_file") && !edits("bash"));
        assert!(ToolName::LspHover.only_looks() && !ToolName::Bash.only_looks());
        assert_eq!(ToolName::Grep.key_arg(), "pattern");
    }
}
