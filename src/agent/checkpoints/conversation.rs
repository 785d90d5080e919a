//! A rewind of the conversation: cut back to before a turn, or brought
//! back whole, each in a new session log (the old one stays).

use super::*;

impl Agent {
    /// Cuts the conversation back to before `turn`, in a new session log
    /// (the old one stays, whole).
    pub(super) fn trim_conversation(&mut self, turn: u64) {
        let Some(&start) = self.turn_starts.get(turn.saturating_sub(1) as usize) else {
            return self.git_notice(
                Level::Error,
                format!("turn {turn} is not in this conversation"),
            );
        };
        let end = (1 + start).min(self.messages.len());
        let mut kept: Vec<crate::llm::Message> = self.messages[1..end].to_vec();
        let mut starts: Vec<usize> = self
            .turn_starts
            .iter()
            .copied()
            .filter(|s| *s < start)
            .collect();
        // A turn a compaction summarized: its messages come from the log,
        // which keeps them whole.
        if self.compacted() && start == 0 && turn > 1 {
            let root = self.tools.sandbox.root().to_path_buf();
            match crate::session::read_records(&root, self.log.id()) {
                Ok((_, records)) => {
                    let (all, all_starts) = crate::session::uncompacted(&records);
                    if let Some(&s) = all_starts.get(turn as usize - 1) {
                        kept = all[..s.min(all.len())].to_vec();
                        starts = all_starts.into_iter().filter(|t| *t < s).collect();
                    }
                }
                Err(e) => {
                    return self.git_notice(
                        Level::Error,
                        format!("cannot read the turns the compaction summarized: {e}"),
                    );
                }
            }
        }
        if let Some(old) = self.replace_conversation(kept, starts, None) {
            self.git_notice(
                Level::Info,
                format!(
                    "the conversation is back to before turn {turn}, in session {} ({old} stays as it was)",
                    self.log.id()
                ),
            );
        }
    }

    /// Brings back the conversation a rewind cut, from the log that holds
    /// it whole.
    pub(super) fn restore_conversation(&mut self, session: String) {
        let root = self.tools.sandbox.root().to_path_buf();
        let records = match crate::session::read_records(&root, &session) {
            Ok((_, r)) => r,
            Err(e) => {
                return self.git_notice(
                    Level::Error,
                    format!("cannot bring the conversation back: {e}"),
                );
            }
        };
        let kept = crate::session::messages(&records);
        let starts = crate::session::turn_starts(&records);
        let turns = starts.len();
        if self
            .replace_conversation(kept, starts, Some(&records))
            .is_some()
        {
            self.git_notice(
                Level::Info,
                format!(
                    "the conversation is back as it was before the rewind ({turns} turn{}), in session {}",
                    if turns == 1 { "" } else { "s" },
                    self.log.id()
                ),
            );
        }
    }

    /// Puts `kept` (with its turn starts) in place of the conversation, in
    /// a new session log; the old log stays whole. `told`: the log to
    /// show the front ends again (a conversation brought back); without
    /// it they drop the turns cut. Returns the old log's id, or None when
    /// the new log could not be written (said as an error).
    fn replace_conversation(
        &mut self,
        kept: Vec<crate::llm::Message>,
        starts: Vec<usize>,
        told: Option<&[Record]>,
    ) -> Option<String> {
        // What the user typed for each prompt kept (the message the model
        // got says more: the files attached, mm's hints), from the old log:
        // replays show the prompt as typed.
        let typed: std::collections::HashMap<String, String> =
            crate::session::read_records(self.tools.sandbox.root(), self.log.id())
                .map(|(_, records)| {
                    records
                        .into_iter()
                        .filter_map(|r| match r {
                            Record::Message {
                                message,
                                typed: Some(t),
                                ..
                            } => Some((message.text().to_string(), t)),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
        let written = SessionLog::create(
            self.tools.sandbox.root(),
            &self.settings.provider,
            &self.model,
        )
        .and_then(|mut log| {
            for (i, m) in kept.iter().enumerate() {
                if let Some(t) = starts.iter().position(|s| *s == i) {
                    log.append(&Record::Turn { turn: t as u64 + 1 })?;
                }
                match typed.get(m.text()) {
                    Some(t) => log.append_prompt(m, t)?,
                    None => log.append_message(m, None)?,
                }
            }
            for c in &self.checkpoints {
                log.append(&Record::Checkpoint {
                    checkpoint: c.clone(),
                })?;
            }
            // What mm made of the files (when, against the checkpoints)
            // and the "always" answers go on too.
            log.append_all(&self.made_from.records(&self.made))?;
            for (path, blob) in &self.made {
                if self.made_from.has(path) {
                    continue;
                }
                log.append(&Record::Made {
                    path: path.clone(),
                    blob: blob.clone(),
                    before: None,
                })?;
            }
            for key in self.tools.sandbox.remembered() {
                log.append(&Record::Always { key })?;
            }
            Ok(log)
        });
        let log = match written {
            Ok(l) => l,
            Err(e) => {
                self.git_notice(Level::Error, e.to_string());
                return None;
            }
        };
        self.messages.truncate(1);
        self.messages.extend(kept);
        self.reset_shed();
        self.turn_starts = starts;
        self.turn = self.turn_starts.len() as u64;
        let old = std::mem::replace(&mut self.log, log).id().to_string();
        let session = self.log.id().to_string();
        match told {
            None => self.bus.publish(AgentEvent::ConversationTrimmed {
                turn: self.turn + 1,
                session,
            }),
            Some(records) => {
                // The front ends start over and are told the whole
                // conversation, as a resume tells it.
                self.bus
                    .publish(AgentEvent::ConversationTrimmed { turn: 0, session });
                for ev in crate::session::replay::events(records) {
                    if !matches!(ev, AgentEvent::Notice { .. }) {
                        self.bus.publish(ev);
                    }
                }
            }
        }
        self.publish_context();
        Some(old)
    }
}
