//! The plan a `/plan` turn proposed, over the panes: its numbered steps;
//! Enter carries it out, `e` edits it in place (the steps as text, one a
//! line) and Esc sets it aside. What is sent is the plan as the user left
//! it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use ratatui_textarea::TextArea;

use super::rewind::first_key;
use crate::protocol::Op;
use crate::tui::component::Handled;
use crate::tui::keymap::{Keymap, PlanAction};
use crate::tui::theme::Theme;

pub struct PlanOverlay {
    pub area: TextArea<'static>,
    /// Keys go to the text (but for save and cancel).
    pub editing: bool,
}

impl PlanOverlay {
    pub fn new(steps: &[String]) -> Self {
        let text = crate::agent::planning::numbered(steps);
        let mut area = TextArea::new(text.lines().map(str::to_string).collect());
        area.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        area.move_cursor(ratatui_textarea::CursorMove::Bottom);
        area.move_cursor(ratatui_textarea::CursorMove::End);
        Self {
            area,
            editing: false,
        }
    }

    /// The steps as the text now reads: its numbered lines, or failing
    /// those every line that is not blank.
    pub fn steps(&self) -> Vec<String> {
        let text = self.area.lines().join("\n");
        let steps = crate::agent::planning::steps_of(&text);
        if steps.is_empty() {
            return text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
        }
        steps
    }

    fn run(&self) -> Handled {
        let steps = self.steps();
        if steps.is_empty() {
            return Handled::Flash("the plan is empty: Esc sets it aside".into());
        }
        Handled::SendClose(Op::RunPlan { steps })
    }

    pub fn handle_key(
        &mut self,
        action: Option<PlanAction>,
        ev: crossterm::event::KeyEvent,
    ) -> Handled {
        if self.editing {
            return match action {
                Some(PlanAction::Save) => self.run(),
                Some(PlanAction::Cancel) => {
                    self.editing = false;
                    Handled::Consumed
                }
                _ => {
                    self.area.input(ev);
                    Handled::Consumed
                }
            };
        }
        match action {
            Some(PlanAction::Run | PlanAction::Save) => self.run(),
            Some(PlanAction::Edit) => {
                self.editing = true;
                Handled::Consumed
            }
            Some(PlanAction::Cancel) => Handled::Close,
            None => Handled::Consumed,
        }
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, th: &Theme, keys: &Keymap) {
        let inner = super::frame::frame(area, buf, th, " the plan ".into());
        let foot_y = inner.y + inner.height.saturating_sub(1);
        let body = Rect {
            height: inner.height.saturating_sub(2),
            ..inner
        };
        if self.editing {
            self.area.set_style(Style::new().fg(th.text));
            self.area
                .set_cursor_style(Style::new().add_modifier(Modifier::REVERSED));
            (&self.area).render(body, buf);
        } else {
            let lines: Vec<Line<'static>> = self
                .area
                .lines()
                .iter()
                .map(|l| {
                    Line::styled(
                        crate::untrusted::displayable(l).into_owned(),
                        Style::new().fg(th.text),
                    )
                })
                .collect();
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .render(body, buf);
        }
        let foot = if self.editing {
            format!(
                "edit the steps, one a line · {} carries them out · {} stops editing",
                first_key(keys, PlanAction::Save),
                first_key(keys, PlanAction::Cancel)
            )
        } else {
            format!(
                "{} carries it out · {} edits it · {} sets it aside (nothing is changed)",
                first_key(keys, PlanAction::Run),
                first_key(keys, PlanAction::Edit),
                first_key(keys, PlanAction::Cancel)
            )
        };
        Paragraph::new(Line::styled(foot, Style::new().fg(th.accent))).render(
            Rect {
                y: foot_y,
                height: 1,
                ..inner
            },
            buf,
        );
    }
}
