//! The TUI's list of slash commands: what the palette, completion and F1
//! show, from the one table in `crate::slash`. It uses nothing of the
//! app, so the panes that list the commands do not reach back up to it;
//! what each command does is in `commands`.

use crate::slash::{Face, Slash};

/// The built-in commands, then `extra` (`/ask-NAME` for each agent under
/// `mmConfigs`, the custom commands: `protocol::extra_commands`).
pub fn all(extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Slash::of(Face::Tui)
        .map(|s| {
            let about = match s.args() {
                "" => s.about().to_string(),
                _ => format!("{} · {}", s.about(), s.usage()),
            };
            (format!("/{}", s.name()), about)
        })
        .collect();
    v.extend(extra.iter().cloned());
    v
}
