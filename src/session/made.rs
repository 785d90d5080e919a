//! What mm made of the files in a session, and when, against its
//! checkpoints: a rewind and the session diff count mm's changes only.

use super::Record;
use crate::protocol::CheckpointInfo;

/// What mm last made of each file, as a log recorded it.
pub fn made(records: &[Record]) -> std::collections::HashMap<String, String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Made { path, blob, .. } => Some((path.clone(), blob.clone())),
            _ => None,
        })
        .collect()
}

/// When mm changed each file, against the session's checkpoints: the
/// change's place (`seq`: the number of checkpoints up to the one that
/// holds the file as it was before it) and that checkpoint. A rewind to
/// a checkpoint undoes a file back to where mm first changed it after
/// that checkpoint; a file mm never changed since is the user's, left as
/// it is.
#[derive(Clone, Debug, Default)]
pub struct MadeFrom {
    changes: std::collections::HashMap<String, Vec<(usize, String)>>,
}

impl MadeFrom {
    /// Notes that mm changed `path` from the state checkpoint `before`
    /// holds; `checkpoints` are the session's so far, in order.
    pub fn note(&mut self, path: &str, before: &str, checkpoints: &[CheckpointInfo]) {
        let seq = checkpoints
            .iter()
            .rposition(|c| c.id == before)
            .map_or(checkpoints.len(), |i| i + 1);
        let list = self.changes.entry(path.to_string()).or_default();
        if list
            .last()
            .is_none_or(|(s, b)| (*s, b.as_str()) != (seq, before))
        {
            list.push((seq, before.to_string()));
        }
    }

    /// The checkpoint holding `path` as it was before mm first changed it
    /// after checkpoint number `from` (0-based); None when mm has not
    /// changed it since.
    pub fn base(&self, path: &str, from: usize) -> Option<&str> {
        self.changes
            .get(path)?
            .iter()
            .find(|(seq, _)| *seq > from)
            .map(|(_, id)| id.as_str())
    }

    /// Every change noted, as records for a log that is written anew (the
    /// checkpoints go before them).
    pub fn records(&self, made: &std::collections::HashMap<String, String>) -> Vec<Record> {
        let mut all: Vec<(usize, &String, &String)> = self
            .changes
            .iter()
            .flat_map(|(p, l)| l.iter().map(move |(seq, id)| (*seq, p, id)))
            .collect();
        all.sort();
        all.into_iter()
            .map(|(_, path, before)| Record::Made {
                path: path.clone(),
                blob: made.get(path).cloned().unwrap_or_default(),
                before: Some(before.clone()),
            })
            .collect()
    }

    pub fn has(&self, path: &str) -> bool {
        self.changes.contains_key(path)
    }

    pub fn clear(&mut self) {
        self.changes.clear();
    }
}

/// When mm changed each file, as a log recorded it (a change logged
/// without its checkpoint came after the last one before it).
pub fn made_from(records: &[Record]) -> MadeFrom {
    let mut from = MadeFrom::default();
    let mut seen: Vec<CheckpointInfo> = Vec::new();
    for r in records {
        match r {
            Record::Checkpoint { checkpoint } => seen.push(checkpoint.clone()),
            Record::Made { path, before, .. } => {
                let before = before.clone().or_else(|| seen.last().map(|c| c.id.clone()));
                if let Some(b) = before {
                    from.note(path, &b, &seen);
                }
            }
            _ => {}
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(id: &str, turn: u64) -> Record {
        Record::Checkpoint {
            checkpoint: CheckpointInfo {
                id: id.into(),
                turn,
                kind: crate::protocol::CheckpointKind::Turn,
                time: String::new(),
                label: String::new(),
                conversation: None,
            },
        }
    }

    fn made_rec(path: &str, before: Option<&str>) -> Record {
        Record::Made {
            path: path.into(),
            blob: "b".into(),
            before: before.map(str::to_string),
        }
    }

    #[test]
    fn a_file_goes_back_to_where_mm_first_changed_it_after_the_checkpoint() {
        let records = vec![
            cp("c1", 1),
            made_rec("a", Some("c1")),
            cp("c2", 2),
            // The user made b between turns; mm changed it in turn 2.
            made_rec("b", Some("c2")),
            cp("c3", 3),
            // A command's change, logged after the checkpoint taken after
            // it, names the one before it.
            cp("c4", 3),
            made_rec("c", Some("c3")),
            // An older log's record names no checkpoint: the last one.
            made_rec("d", None),
        ];
        let from = made_from(&records);
        assert_eq!(from.base("a", 0), Some("c1"));
        assert_eq!(
            from.base("b", 0),
            Some("c2"),
            "not past the user's own file"
        );
        assert_eq!(from.base("a", 1), None, "mm has not changed a since c2");
        assert_eq!(from.base("c", 2), Some("c3"));
        assert_eq!(from.base("c", 3), None, "the command came before c4");
        assert_eq!(from.base("d", 3), Some("c4"));
        assert_eq!(from.base("mine", 0), None, "the user's own file is left");
        // Written anew (a rewind of the conversation), the log says the same.
        let made = made(&records);
        let mut again = vec![cp("c1", 1), cp("c2", 2), cp("c3", 3), cp("c4", 3)];
        again.extend(from.records(&made));
        let back = made_from(&again);
        for (path, n) in [("a", 0), ("b", 0), ("a", 1), ("c", 2), ("c", 3), ("d", 3)] {
            assert_eq!(back.base(path, n), from.base(path, n), "{path} from {n}");
        }
    }
}
