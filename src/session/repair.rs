//! Reading a log back after a crash. Appends are whole lines, so a crash
//! can only tear the last one: it is cut back to the last good boundary,
//! and a complete last record that lost its newline gets one. Damage
//! anywhere else is an error and the file is left alone.

use std::collections::HashSet;
use std::path::Path;

use super::{Record, SessionError};
use crate::llm::{Message, Role};

/// What a resume repaired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repair {
    pub torn_bytes: usize,
    /// Ids of tool calls answered "outcome unknown".
    pub closed_calls: Vec<String>,
    /// The last prompt had no answer and was given one saying so.
    pub answered_prompt: bool,
}

pub struct Parsed {
    pub records: Vec<Record>,
    /// Cut the file to this length (a torn last line).
    pub truncate_to: Option<u64>,
    /// The last record is whole but has no newline.
    pub needs_newline: bool,
    pub torn_bytes: usize,
}

pub fn parse(path: &Path, bytes: &[u8]) -> Result<Parsed, SessionError> {
    let mut records = Vec::new();
    let mut pos = 0;
    let mut line_no = 0;
    let mut truncate_to = None;
    let mut needs_newline = false;
    let mut torn_bytes = 0;
    while pos < bytes.len() {
        line_no += 1;
        let (line, next, terminated) = match bytes[pos..].iter().position(|&b| b == b'\n') {
            Some(i) => (&bytes[pos..pos + i], pos + i + 1, true),
            None => (&bytes[pos..], bytes.len(), false),
        };
        let parsed = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str::<Record>(s).map_err(|e| e.to_string()));
        match parsed {
            Ok(rec) => {
                records.push(rec);
                if !terminated {
                    needs_newline = true;
                }
            }
            Err(_) if !terminated => {
                truncate_to = Some(pos as u64);
                torn_bytes = line.len();
            }
            Err(_) if line.iter().all(u8::is_ascii_whitespace) => {}
            Err(reason) => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    reason,
                });
            }
        }
        pos = next;
    }
    Ok(Parsed {
        records,
        truncate_to,
        needs_newline,
        torn_bytes,
    })
}

/// The assistant message owed to a prompt that was never answered (the
/// log ends on a user message), if it does.
pub fn unanswered_prompt(records: &[Record]) -> Option<Message> {
    let last = records.iter().rev().find_map(|r| match r {
        Record::Message { message, .. } => Some(message),
        _ => None,
    })?;
    (last.role == Role::User).then(|| {
        Message::assistant(
            "(no answer: the session stopped before the reply to this message was recorded)",
        )
    })
}

/// The answers owed to the last batch whose results never arrived.
pub fn unanswered(records: &[Record]) -> Vec<Message> {
    let msgs: Vec<&Message> = records
        .iter()
        .filter_map(|r| match r {
            Record::Message { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    let Some(last_batch) = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return Vec::new();
    };
    let answered: HashSet<&str> = msgs[last_batch + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    msgs[last_batch]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| {
            Message::tool_result(
                &c.id,
                "outcome unknown: the session stopped before this call's result was recorded; check before redoing",
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn line(rec: &Record) -> String {
        format!("{}\n", serde_json::to_string(rec).unwrap())
    }

    fn user(text: &str) -> Record {
        Record::Message {
            message: Message::user(text),
            status: None,
            typed: None,
        }
    }

    #[test]
    fn a_torn_last_line_is_cut_back() {
        let mut bytes = line(&user("a")).into_bytes();
        let good = bytes.len();
        bytes.extend_from_slice(br#"{"type":"message","role":"us"#);
        let p = parse(Path::new("x"), &bytes).unwrap();
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.truncate_to, Some(good as u64));
        assert!(p.torn_bytes > 0);
    }

    #[test]
    fn a_whole_last_record_without_newline_is_kept() {
        let mut text = line(&user("a"));
        text.push_str(&serde_json::to_string(&user("b")).unwrap());
        let p = parse(Path::new("x"), text.as_bytes()).unwrap();
        assert_eq!(p.records.len(), 2);
        assert!(p.needs_newline);
        assert_eq!(p.truncate_to, None);
    }

    #[test]
    fn damage_in_the_middle_is_an_error() {
        let text = format!("{}garbage\n{}", line(&user("a")), line(&user("b")));
        let e = parse(Path::new("x"), text.as_bytes()).err().unwrap();
        assert!(matches!(e, SessionError::Corrupt { line: 2, .. }));
    }

    #[test]
    fn an_open_batch_is_closed_call_by_call() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let records = vec![
            user("go"),
            Record::Message {
                message: Message {
                    role: Role::Assistant,
                    content: None,
                    reasoning: None,
                    tool_calls: vec![call("a"), call("b")],
                    tool_call_id: None,
                    replay: Vec::new(),
                    images: Vec::new(),
                },
                status: None,
                typed: None,
            },
            Record::Message {
                message: Message::tool_result("a", "done"),
                status: None,
                typed: None,
            },
        ];
        let owed = unanswered(&records);
        assert_eq!(owed.len(), 1);
        assert_eq!(owed[0].tool_call_id.as_deref(), Some("b"));
        assert!(owed[0].text().contains("outcome unknown"));
    }
}
