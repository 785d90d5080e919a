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
        if let Some(old) = self.replace_conversation(kept, starts, Kept::Before(turn)) {
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
            .replace_conversation(kept, starts, Kept::All(&records))
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
    /// a new session log; the old log stays whole. The new log holds the
    /// old one's records of the turns kept (prompts as typed, receipts,
    /// mm's own runs, plans), so a replay, an export or the transcript
    /// printed on exit shows them as they happened; failing that, the
    /// messages alone. Returns the old log's id, or None when the new log
    /// could not be written (said as an error).
    fn replace_conversation(
        &mut self,
        kept: Vec<crate::llm::Message>,
        starts: Vec<usize>,
        from: Kept<'_>,
    ) -> Option<String> {
        let current = crate::session::read_records(self.tools.sandbox.root(), self.log.id())
            .map(|(_, r)| r)
            .unwrap_or_default();
        let source: &[Record] = match from {
            Kept::All(records) => records,
            Kept::Before(_) => &current,
        };
        let copied = carried(source, from.before()).filter(|c| {
            let (messages, turns) = crate::session::conversation(c);
            messages == kept && turns == starts
        });
        // What the user typed for each prompt kept (the message the model
        // got says more: the files attached, mm's hints): replays show
        // the prompt as typed.
        let typed: std::collections::HashMap<String, String> = current
            .iter()
            .chain(source)
            .filter_map(|r| match r {
                Record::Message {
                    message,
                    typed: Some(t),
                    ..
                } => Some((message.text().to_string(), t.clone())),
                _ => None,
            })
            .collect();
        let written = SessionLog::create(
            self.tools.sandbox.root(),
            &self.settings.provider,
            &self.model,
        )
        .and_then(|mut log| {
            match &copied {
                Some(records) => log.append_all(records)?,
                None => {
                    for (i, m) in kept.iter().enumerate() {
                        if let Some(t) = starts.iter().position(|s| *s == i) {
                            log.append(&Record::Turn { turn: t as u64 + 1 })?;
                        }
                        match typed.get(m.text()) {
                            Some(t) => log.append_prompt(m, t)?,
                            None => log.append_message(m, None)?,
                        }
                    }
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
        match from {
            Kept::Before(_) => self.bus.publish(AgentEvent::ConversationTrimmed {
                turn: self.turn + 1,
                session,
            }),
            Kept::All(records) => {
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

/// Which turns a new log keeps of the conversation.
#[derive(Clone, Copy)]
enum Kept<'a> {
    /// Those before this turn, from the session's own log.
    Before(u64),
    /// All of them, from this log (a conversation brought back): the
    /// front ends are told it again.
    All(&'a [Record]),
}

impl Kept<'_> {
    fn before(&self) -> Option<u64> {
        match self {
            Kept::Before(t) => Some(*t),
            Kept::All(_) => None,
        }
    }
}

/// The records of `records` that tell the conversation up to the
/// `before`-th turn (all of it when None): prompts, answers, tool calls
/// and results, receipts, mm's own runs, plans, compactions, titles.
/// Not the header, checkpoints, what mm made of files or "always"
/// answers: the new log gets those from the session as it is now. None
/// when the log has fewer turns than that.
fn carried(records: &[Record], before: Option<u64>) -> Option<Vec<Record>> {
    let mut turns = 0u64;
    let mut out = Vec::new();
    for r in records {
        if let Record::Turn { .. } = r {
            turns += 1;
            if before == Some(turns) {
                return Some(out);
            }
        }
        match r {
            Record::Header { .. }
            | Record::Checkpoint { .. }
            | Record::Made { .. }
            | Record::Always { .. } => {}
            other => out.push(other.clone()),
        }
    }
    before.is_none().then_some(out)
}
