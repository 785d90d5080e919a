//! What the TUI's slash commands do. A new command is a variant of
//! `crate::slash::Slash` and an arm in `command`; nothing else changes.

use super::app::App;
use super::component::Handled;
use super::keymap::{self, GlobalAction};
use super::panes::overlays::{Overlay, Place, PlaceList};
use super::panes::rewind::RewindOverlay;
use super::theme;
use crate::protocol::Op;

pub use crate::protocol::parse_ask;
use crate::slash::{Face, Slash};

impl App {
    /// A slash command typed in the composer.
    pub fn command(&mut self, line: &str) {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some((name, args)) = crate::commands::parse(line, &self.status.info.commands)
            .filter(|(n, _)| !Slash::is_built_in(n))
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
        let Some((slash, rest)) = Slash::parse(line).filter(|(s, _)| s.on(Face::Tui)) else {
            return self.flash(format!(
                "unknown command {}; /help lists them",
                crate::untrusted::displayable(name)
            ));
        };
        // The first word after the name, for commands that take one.
        let arg = rest.split_whitespace().next();
        match slash {
            Slash::Quit => self.global(GlobalAction::Quit),
            Slash::Help => self.overlays.push(Overlay::help()),
            Slash::New => {
                self.submit(Op::NewSession);
            }
            Slash::Sessions => self.jobs.list_sessions(),
            Slash::Theme => match arg {
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
            Slash::Keymap => match arg {
                Some(n) => match keymap::load(n) {
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
            Slash::Mouse => self.toggle_mouse(),
            Slash::Tree => self.global(GlobalAction::ToggleTree),
            Slash::Rewind => {
                self.overlays
                    .push(Overlay::Rewind(RewindOverlay::default()));
                self.show_diff = true;
                self.submit(Op::ListCheckpoints);
            }
            Slash::Diff => {
                self.submit(Op::SessionDiff { from: None });
            }
            Slash::Commit => {
                self.submit(Op::ProposeCommit);
            }
            Slash::Undo => {
                self.submit(Op::Undo);
            }
            Slash::Stats => {
                self.submit(Op::Stats);
            }
            Slash::Cost => {
                self.submit(Op::Cost);
            }
            Slash::Mcp => {
                self.submit(Op::Mcp);
            }
            Slash::Skills => {
                self.submit(Op::Skills);
            }
            Slash::Agents => {
                self.submit(Op::Agents);
            }
            Slash::Init => {
                self.submit(Op::Init);
            }
            Slash::Plan if rest.trim().is_empty() => {
                self.flash("usage: /plan REQUEST (the model looks, read-only, and proposes steps)");
            }
            Slash::Plan if self.working => {
                self.flash("a turn is running: /plan when it ends");
            }
            Slash::Plan => {
                self.transcript.follow();
                self.start_turn(Op::Plan {
                    text: rest.trim().to_string(),
                });
            }
            Slash::Model => {
                let name = arg
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string);
                self.submit(Op::Model { name });
            }
            Slash::Ctx => match arg.map(|a| (a, crate::config::ContextMode::parse(a))) {
                Some((a, None)) => self.flash(format!(
                    "/ctx takes compact or rebuild, not {}",
                    crate::untrusted::displayable(a)
                )),
                parsed => {
                    let mode = parsed.and_then(|(_, m)| m);
                    self.submit(Op::Ctx { mode });
                }
            },
            Slash::Compact => {
                let focus = Some(rest.to_string()).filter(|f| !f.is_empty());
                self.flash("compacting the conversation…".to_string());
                self.submit(Op::Compact { focus });
            }
            Slash::Diagnostics => self.show_diagnostics(),
            Slash::Copy => self.copy_answer(arg),
            Slash::Export => {
                self.submit(Op::Export {
                    path: arg.map(str::to_string),
                });
            }
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
            assert!(crate::slash::Slash::is_built_in(name), "{name}");
        }
    }
}
