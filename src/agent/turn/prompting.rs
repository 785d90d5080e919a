//! What goes to the model besides the request: files attached, the README's
//! head, errors left in files, and the nudges after a round.

use super::*;

impl Agent {
    /// The prompt with the files it names attached: a small model that
    /// sees the file first edits what is there instead of guessing.
    /// The request with the workspace overview (first turn) and the files
    /// it names attached; and those files' paths.
    pub(in crate::agent) fn with_attachments(&self, prompt: &str) -> (String, Vec<String>) {
        let mut text = prompt.to_string();
        let first_of_session = !self.messages.iter().any(|m| m.role == Role::User);
        if first_of_session
            && !self.specs.is_empty()
            && let Some(files) = tools::fs::workspace_overview(&self.tools.sandbox)
        {
            text.push_str(&format!("\n\n[files in the workspace]\n{files}"));
        }
        let attached = tools::fs::attach_mentioned(&self.tools, prompt);
        if attached.is_empty() {
            return (text, Vec::new());
        }
        let names: Vec<&str> = attached.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(Level::Info, format!("attached {}", names.join(", ")));
        if let Some(lsp) = &self.tools.lsp {
            // Attached counts as read: the server learns the file as it is,
            // so errors an edit brings can be told from old ones.
            for (rel, _) in &attached {
                let abs = self.tools.sandbox.root().join(rel);
                if crate::lsp::language_of(&abs).is_some()
                    && let Ok(content) = crate::paths::read_checked_text(&abs)
                {
                    let lsp = lsp.clone();
                    tokio::spawn(async move { lsp.opened(&abs, &content).await });
                }
            }
        }
        for (path, body) in &attached {
            text.push_str(&format!(
                "\n\n[{path} as it is now, for context; it counts as read]\n{body}"
            ));
        }
        (text, attached.into_iter().map(|(p, _)| p).collect())
    }

    /// Images an editor sent with the next prompt.
    pub fn images_with_next(&mut self, images: Vec<crate::llm::Image>) {
        self.images_next = images;
    }

    /// The pictures that go with the prompt: those an editor sent with it
    /// and those it names.
    pub(in crate::agent) fn prompt_images(&mut self, prompt: &str) -> Vec<crate::llm::Image> {
        let mut images = std::mem::take(&mut self.images_next);
        for img in tools::fs::images_mentioned(&self.tools, prompt) {
            if !images.iter().any(|i| i.data == img.data) {
                images.push(img);
            }
        }
        images
    }

    /// The workspace's README (its first 4 KiB, the cut said), for a
    /// question about the project.
    pub(in crate::agent) fn readme_head(&self) -> Option<(String, String)> {
        const HEAD: usize = 4096;
        let name = [
            "README.md",
            "README",
            "README.rst",
            "README.txt",
            "readme.md",
        ]
        .into_iter()
        .find(|n| self.content_now(n).is_some())?;
        let body = self.content_now(name)?;
        if body.len() <= HEAD {
            return Some((name.to_string(), body));
        }
        let mut cut = HEAD;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = &body[..cut];
        let head = &head[..head.rfind('\n').unwrap_or(head.len())];
        let lines = head.lines().count();
        Some((
            name.to_string(),
            format!(
                "{head}\n[… the first {lines} lines; read_file {name} offset={} for the rest]",
                lines + 1
            ),
        ))
    }

    /// The turn ends with errors its edits brought: the user hears it,
    /// whatever the model's answer says.
    pub(in crate::agent) fn warn_left_errors(&self, st: &TurnState) {
        let mut left: Vec<String> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .map(|(p, c)| format!("{p} ({} error(s))", c.errors))
            .collect();
        if left.is_empty() {
            return;
        }
        left.sort();
        self.notice(
            Level::Warning,
            format!(
                "the language server still reports errors this turn brought: {}",
                left.join(", ")
            ),
        );
    }

    /// What to tell a model that stopped on a promise, or claimed a change
    /// this turn never made.
    pub(in crate::agent) fn nudge_for(&self, st: &mut TurnState) -> Option<String> {
        let can_edit = self.specs.iter().any(|s| s.name == ToolName::EditFile);
        if let Some(text) = self.lsp_follow_up(st) {
            return Some(text);
        }
        if can_edit && st.written.is_empty() && batch::claims_a_change(&st.answer) {
            self.notice(
                Level::Warning,
                "the model says it changed something, but no file was written in this turn; asking it to act or correct itself",
            );
            return Some(
                "You said you changed something, but no file was written in this turn: no write_file or edit_file call succeeded. Make the change now with a tool call, or say plainly that nothing was changed.".into(),
            );
        }
        if batch::announces_next_step(&st.answer) {
            self.notice(
                Level::Info,
                "the model announced a step without taking it; asking it to go on",
            );
            return Some(
                "Go on: take that step now with a tool call. If the task is already finished, give your final answer.".into(),
            );
        }
        None
    }

    /// Errors the language server reports that this turn's edits brought,
    /// said once a turn.
    pub(in crate::agent) fn lsp_follow_up(&self, st: &mut TurnState) -> Option<String> {
        if st.told_errors {
            return None;
        }
        let mut broken: Vec<(&String, &crate::lsp::Check)> = st
            .checks
            .iter()
            .filter(|(p, c)| turn_new_errors(st, p, c) > 0)
            .collect();
        if broken.is_empty() {
            return None;
        }
        broken.sort_by_key(|(p, _)| p.as_str());
        let names: Vec<&str> = broken.iter().map(|(p, _)| p.as_str()).collect();
        self.notice(
            Level::Warning,
            format!(
                "errors this turn brought into {} (language server or parser); asking the model to fix them",
                names.join(", ")
            ),
        );
        let reports: Vec<&str> = broken.iter().map(|(_, c)| c.text.as_str()).collect();
        let text = format!(
            "Your changes left errors (from the language server or the parser):\n{}\nFix them now with edit_file, or explain why they are not real problems.",
            reports.join("\n")
        );
        st.told_errors = true;
        Some(text)
    }
}
