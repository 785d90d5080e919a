//! What the TUI's slash commands do. A new command is a line in the
//! table (`slash`) and an arm in `command`; nothing else changes.

use super::app::App;
use super::component::Handled;
use super::keymap::{self, GlobalAction};
use super::panes::overlays::{Overlay, Place, PlaceList};
use super::panes::rewind::RewindOverlay;
use super::theme;
use crate::protocol::Op;

use super::slash::COMMANDS;
pub use crate::protocol::parse_ask;

impl App {
    /// A slash command typed in the composer.
    pub fn command(&mut self, line: &str) {
        let mut parts = line.split_whitespace();
        let name = parts.next().unwrap_or("");
        let arg = parts.next();
        if let Some((name, args)) = crate::commands::parse(line, &self.status.info.commands)
            .filter(|(n, _)| !COMMANDS.iter().any(|(c, _)| c.strip_prefix('/') == Some(n)))
        {
            self.submit(Op::RunCommand {
                name,
                args: args.to_string(),
            });
            return;
        }
        if let Some((agent, with_context, prompt)) = parse_ask(line)
            && self.status.info.agents.iter().any(|(n, _)| *n == agent)
        {
            if prompt.is_empty() {
                self.flash(format!("usage: {name} PROMPT"));
            } else {
                self.submit(Op::AskAgent {
                    name: agent,
                    prompt,
                    with_context,
                });
            }
            return;
        }
        match name {
            "/quit" | "/exit" | "/q" => self.global(GlobalAction::Quit),
            "/help" | "/?" => self.overlays.push(Overlay::help()),
            "/new" => {
                self.submit(Op::NewSession);
            }
            "/sessions" => self.jobs.list_sessions(),
            "/theme" => match arg {
                Some(n) => match theme::load(n, &self.root, self.theme.depth) {
                    Ok(t) => {
                        self.theme = t;
                        self.transcript.invalidate();
                        self.flash(format!("theme {n}"));
                    }
                    Err(e) => self.flash(e.to_string()),
                },
                None => self.flash(format!(
                    "theme {} (shipped: dark, light, high-contrast)",
                    self.theme.name
                )),
            },
            "/keymap" => match arg {
                Some(n) => match keymap::load(n, &self.root) {
                    Ok(k) => {
                        self.keymap = k;
                        self.flash(format!("keymap {n}"));
                    }
                    Err(e) => self.flash(e.to_string()),
                },
                None => self.flash(format!(
                    "keymap {} (shipped: default, vim, emacs)",
                    self.keymap.name
                )),
            },
            "/mouse" => self.toggle_mouse(),
            "/tree" => self.global(GlobalAction::ToggleTree),
            "/rewind" => {
                self.overlays
                    .push(Overlay::Rewind(RewindOverlay::default()));
                self.show_diff = true;
                self.submit(Op::ListCheckpoints);
            }
            "/diff" => {
                self.submit(Op::SessionDiff { from: None });
            }
            "/commit" => {
                self.submit(Op::ProposeCommit);
            }
            "/undo" => {
                self.submit(Op::Undo);
            }
            "/stats" => {
                self.submit(Op::Stats);
            }
            "/cost" => {
                self.submit(Op::Cost);
            }
            "/mcp" => {
                self.submit(Op::Mcp);
            }
            "/skills" => {
                self.submit(Op::Skills);
            }
            "/init" => {
                self.submit(Op::Init);
            }
            "/model" => {
                let name = arg
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string);
                self.submit(Op::Model { name });
            }
            "/ctx" => match arg.map(|a| (a, crate::config::ContextMode::parse(a))) {
                Some((a, None)) => self.flash(format!(
                    "/ctx takes compact or rebuild, not {}",
                    crate::untrusted::displayable(a)
                )),
                parsed => {
                    let mode = parsed.and_then(|(_, m)| m);
                    self.submit(Op::Ctx { mode });
                }
            },
            "/compact" => {
                let focus = line
                    .trim()
                    .strip_prefix("/compact")
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_string);
                self.flash("compacting the conversation…".to_string());
                self.submit(Op::Compact { focus });
            }
            "/diagnostics" => self.show_diagnostics(),
            "/copy" => self.copy_answer(arg),
            "/export" => {
                self.submit(Op::Export {
                    path: arg.map(str::to_string),
                });
            }
            other => self.flash(format!("unknown command {other}; /help lists them")),
        }
    }

    /// `/copy [N]`: the last answer, or the N-th counting back.
    fn copy_answer(&mut self, arg: Option<&str>) {
        let n = match arg.map(str::parse::<usize>) {
            None => 1,
            Some(Ok(n)) if n >= 1 => n,
            _ => return self.flash("usage: /copy [N] (1 is the last answer, 2 the one before)"),
        };
        let h = match self.transcript.answer_back(n) {
            Ok(text) => Handled::Copy {
                what: if n == 1 {
                    "the last answer".to_string()
                } else {
                    format!("answer {n} back")
                },
                text: text.to_string(),
            },
            Err(count) => Handled::Flash(format!(
                "no answer {n} back: the transcript has {count} answer(s)"
            )),
        };
        self.handled(h);
    }

    /// Every diagnostic of the workspace, errors first.
    pub(super) fn show_diagnostics(&mut self) {
        let mut items: Vec<Place> = self
            .diags
            .iter()
            .flat_map(|(path, list)| {
                list.iter().map(move |d| Place {
                    path: path.clone(),
                    line: d.line,
                    col: d.col,
                    text: match &d.source {
                        Some(s) => format!("{} ({s})", d.message),
                        None => d.message.clone(),
                    },
                    level: Some(d.level),
                })
            })
            .collect();
        items.sort_by_key(|p| {
            (
                p.level != Some(crate::protocol::DiagLevel::Error),
                p.path.clone(),
                p.line,
            )
        });
        self.overlays
            .push(Overlay::Places(PlaceList::new("diagnostics".into(), items)));
    }
}

#[cfg(test)]
mod built_in {
    /// A custom command may not take a name the TUI uses.
    #[test]
    fn every_tui_command_is_built_in() {
        for (c, _) in crate::tui::slash::all(&[]) {
            let name = c.trim_start_matches('/');
            assert!(crate::commands::BUILT_IN.contains(&name), "{name}");
        }
    }
}
