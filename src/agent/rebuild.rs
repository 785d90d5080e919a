//! `contextMode: rebuild` (`-ctx rebuild`, `/ctx rebuild`): each request
//! is made afresh from the conversation instead of sending all of it.
//!
//! A request is the system prompt, the recent turns (the running one
//! always whole), with every file read that a later write or a later full
//! read of the same file made stale left out, and a short session-state
//! block after the newest message: the requests whose dialogue is left
//! out, the files mm changed, the last check mm ran. Older turns are left
//! out in large steps (down to a smaller share of the window once the
//! dialogue passes a larger one) so the server's prompt cache stays
//! useful for several turns between cuts. Nothing is deleted: the log
//! keeps every message, and `/ctx compact` sends the whole conversation
//! again.

use std::collections::{HashMap, HashSet};

use super::Agent;
use crate::config::ContextMode;
use crate::llm::{Message, Role};
use crate::protocol::TestReport;
use crate::toolname::ToolName;

/// Older turns are left out once the request passes this share of the
/// window…
const CUT_AT_SHARE: f64 = 0.5;
/// …down to this share (or to the running turn alone).
const CUT_TO_SHARE: f64 = 0.3;
/// Without a known window: turns kept before a cut, and kept after one.
const CUT_AT_TURNS: usize = 6;
const CUT_TO_TURNS: usize = 3;
/// Earlier requests named in the state block, and characters of each.
const EARLIER_SHOWN: usize = 5;
const EARLIER_CHARS: usize = 200;
/// The session's first request is the goal: kept longer.
const GOAL_CHARS: usize = 600;
/// Changed files named in the state block.
const FILES_SHOWN: usize = 20;

/// What the model sees in place of a stale read.
const STALE: &str = "[file contents left out: the file changed, or was read again, after this read; read it again if you need it]";

/// A file tool call: its name and the path it names.
fn file_call(name: &str, arguments: &str) -> Option<(String, bool)> {
    if !(name == ToolName::ReadFile || crate::toolname::edits(name)) {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let path = args.get(crate::toolname::arg::PATH)?.as_str()?;
    let path = path.trim().trim_start_matches("./").to_string();
    // A read of part of a file does not stand for all of it.
    let whole = name != ToolName::ReadFile
        || (args.get(crate::toolname::arg::OFFSET).is_none()
            && args.get(crate::toolname::arg::LIMIT).is_none());
    Some((path, whole))
}

/// How a file attached to a request begins (`with_attachments`).
const ATTACHED_TAIL: &str = " as it is now, for context; it counts as read]\n";

/// The files attached to a request: (path, where its block starts, where
/// its body starts), in order.
fn attachments(text: &str) -> Vec<(&str, usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(ATTACHED_TAIL) {
        let tail = at + found;
        at = tail + ATTACHED_TAIL.len();
        if let Some(open) = text[..tail].rfind("\n\n[") {
            let path = &text[open + 3..tail];
            if !path.contains('\n') {
                out.push((path, open, at));
            }
        }
    }
    out
}

/// A request with the bodies of the attached files in `stale` left out.
fn without_attached(text: &str, stale: &HashSet<String>) -> String {
    let blocks = attachments(text);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (k, (path, _, body)) in blocks.iter().enumerate() {
        if !stale.contains(*path) {
            continue;
        }
        // The last file's body ends where mm's own notes on the request
        // begin (what it ran before the model's first look, a hook).
        let end = blocks.get(k + 1).map_or_else(
            || {
                ["\n\n[mm ", "\n\nNo tool call is needed"]
                    .iter()
                    .filter_map(|m| text[*body..].find(m).map(|i| body + i))
                    .min()
                    .unwrap_or(text.len())
            },
            |b| b.1,
        );
        out.push_str(&text[copied..*body]);
        out.push_str(STALE);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// What later messages made stale: tool results (by index) and files
/// attached to requests (by index, the paths).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Stale {
    pub results: HashSet<usize>,
    pub attached: HashMap<usize, HashSet<String>>,
}

/// The file reads made stale by a later write that went through (its call
/// id in `ok`) or a later whole read of the same file: read_file results,
/// and files attached to a request. Only messages from `from` on count.
pub(super) fn stale_reads(messages: &[Message], from: usize, ok: &HashSet<String>) -> Stale {
    // An id used by more than one call (a server that sends none, or
    // reuses them) says nothing sure about which call went through: such
    // calls never make anything stale.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut reused: HashSet<&str> = HashSet::new();
    for m in &messages[from.min(messages.len())..] {
        for c in &m.tool_calls {
            if !seen.insert(c.id.as_str()) {
                reused.insert(c.id.as_str());
            }
        }
    }
    // The calls of the assistant message the results answer:
    // id → (tool, path, whole).
    let mut calls: HashMap<&str, (&str, String, bool)> = HashMap::new();
    let mut stale = Stale::default();
    // The reads of each path still standing, by message index.
    let mut open_reads: HashMap<String, Vec<usize>> = HashMap::new();
    let close = |stale: &mut Stale, path: &str, reads: &mut Vec<usize>| {
        for i in reads.drain(..) {
            if messages[i].role == Role::User {
                stale
                    .attached
                    .entry(i)
                    .or_default()
                    .insert(path.to_string());
            } else {
                stale.results.insert(i);
            }
        }
    };
    for (i, m) in messages.iter().enumerate().skip(from) {
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            calls.clear();
            for c in &m.tool_calls {
                if let Some((path, whole)) = file_call(&c.name, &c.arguments)
                    && !reused.contains(c.id.as_str())
                {
                    calls.insert(c.id.as_str(), (c.name.as_str(), path, whole));
                }
            }
            continue;
        }
        if m.role == Role::User {
            for (path, _, _) in attachments(m.text()) {
                open_reads.entry(path.to_string()).or_default().push(i);
            }
            continue;
        }
        if m.role != Role::Tool {
            continue;
        }
        let Some((name, path, whole)) = m.tool_call_id.as_deref().and_then(|id| calls.get(id))
        else {
            continue;
        };
        let id = m.tool_call_id.as_deref().unwrap_or_default();
        match *name {
            n if n == ToolName::ReadFile => {
                let reads = open_reads.entry(path.clone()).or_default();
                // A long file read without a range shows only its start.
                let whole = *whole && !m.text().contains("lines shown; read on with offset");
                if whole && ok.contains(id) {
                    close(&mut stale, path, reads);
                }
                reads.push(i);
            }
            _ if ok.contains(id) => {
                if let Some(reads) = open_reads.get_mut(path) {
                    close(&mut stale, path, reads);
                }
            }
            _ => {}
        }
    }
    stale
}

/// One line of a request, cut to `chars` characters.
fn cut_line(text: &str, chars: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = line.chars().take(chars).collect();
    if out.len() < line.len() || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

/// How a check came out, in a few words.
fn check_words(r: &TestReport) -> String {
    let verdict = match r.passed {
        Some(true) => "passed",
        Some(false) => "failed",
        None => "could not run",
    };
    let summary = r.summary.trim();
    if summary.is_empty() {
        format!("`{}` {verdict}", r.command)
    } else {
        format!("`{}` {verdict} ({})", r.command, cut_line(summary, 160))
    }
}

impl Agent {
    /// The conversation as a rebuilt request sends it.
    pub(super) fn rebuilt(&self) -> Vec<Message> {
        let n = self.messages.len();
        let from = self.rebuild_from.max(self.shed_from()).clamp(1, n.max(1));
        let stale = stale_reads(&self.messages, from, &self.ok_calls);
        let mut out = Vec::with_capacity(n + 1 - from);
        out.extend(self.messages.first().cloned());
        for i in from..n {
            let m = &self.messages[i];
            if let Some(p) = self.shed_placeholder(i) {
                let mut m = m.clone();
                m.content = Some(p);
                out.push(m);
            } else if stale.results.contains(&i) {
                let mut m = m.clone();
                m.content = Some(STALE.to_string());
                out.push(m);
            } else if let Some(paths) = stale.attached.get(&i) {
                let mut m = m.clone();
                m.content = Some(without_attached(m.text(), paths));
                out.push(m);
            } else {
                out.push(m.clone());
            }
        }
        // After the newest message: what changes often goes last, so the
        // server's cache holds everything before it.
        let has_dialogue = out.len() > 1;
        if let Some(state) = self.state_block(from)
            && has_dialogue
            && let Some(last) = out
                .last_mut()
                .filter(|m| matches!(m.role, Role::User | Role::Tool))
        {
            let text = last.content.get_or_insert_with(String::new);
            text.push_str("\n\n");
            text.push_str(&state);
        }
        out
    }

    /// The session-state block, when it says something the dialogue sent
    /// does not: requests left out, files changed, the last check.
    fn state_block(&self, from: usize) -> Option<String> {
        let mut lines = Vec::new();
        let earlier: Vec<&Message> = self
            .turn_starts
            .iter()
            .map(|s| s + 1)
            .filter(|&i| i < from)
            .filter_map(|i| self.messages.get(i))
            .filter(|m| m.role == Role::User)
            .collect();
        if let Some((first, rest)) = earlier.split_first() {
            lines.push(format!(
                "- the session began with this request: {}",
                cut_line(first.text(), GOAL_CHARS)
            ));
            let shown: Vec<String> = rest
                .iter()
                .rev()
                .take(EARLIER_SHOWN)
                .rev()
                .map(|m| format!("\"{}\"", cut_line(m.text(), EARLIER_CHARS)))
                .collect();
            if !shown.is_empty() {
                lines.push(format!(
                    "- later requests whose dialogue is left out: {}",
                    shown.join("; ")
                ));
            }
        }
        if !self.made.is_empty() {
            let mut files: Vec<String> = self
                .made
                .iter()
                .map(|(p, blob)| {
                    if blob.is_empty() {
                        format!("{p} (deleted)")
                    } else {
                        p.clone()
                    }
                })
                .collect();
            files.sort();
            let more = files.len().saturating_sub(FILES_SHOWN);
            files.truncate(FILES_SHOWN);
            let mut text = format!("- files changed this session: {}", files.join(", "));
            if more > 0 {
                text.push_str(&format!(" and {more} more"));
            }
            lines.push(text);
        }
        if let Some(r) = &self.last_check {
            lines.push(format!("- the last check mm ran: {}", check_words(r)));
        }
        (!lines.is_empty()).then(|| format!("[mm: session state]\n{}", lines.join("\n")))
    }

    /// Before a rebuilt request: leaves older turns out when the request
    /// has grown past its share of the window.
    pub(super) fn advance_rebuild(&mut self) {
        if self.ctx_mode != ContextMode::Rebuild {
            return;
        }
        let current = self.turn_starts.last().map_or(1, |s| s + 1);
        let from = self.rebuild_from.max(1);
        let later: Vec<usize> = self
            .turn_starts
            .iter()
            .map(|s| s + 1)
            .filter(|&s| s > from && s <= current)
            .collect();
        if later.is_empty() {
            return;
        }
        match self.context_window {
            Some(w) => {
                let at = (w as f64 * CUT_AT_SHARE) as u64;
                let to = (w as f64 * CUT_TO_SHARE) as u64;
                if self.tokens_of(&self.rebuilt()) <= at {
                    return;
                }
                for s in later {
                    self.rebuild_from = s;
                    if self.tokens_of(&self.rebuilt()) <= to {
                        break;
                    }
                }
            }
            None => {
                // `later` holds the kept turns after the first kept one.
                if later.len() >= CUT_AT_TURNS {
                    self.rebuild_from = later[later.len() - CUT_TO_TURNS];
                }
            }
        }
    }

    /// The conversation as a request in `mode` would send it now.
    pub(super) fn view_as(&self, mode: ContextMode) -> Vec<Message> {
        match mode {
            ContextMode::Rebuild => self.rebuilt(),
            ContextMode::Compact => self.plain_view().into_owned(),
        }
    }

    /// The next request's tokens in each mode: (compact, rebuild).
    pub(super) fn both_modes(&self) -> (u64, u64) {
        (
            self.tokens_of(&self.view_as(ContextMode::Compact)),
            self.tokens_of(&self.view_as(ContextMode::Rebuild)),
        )
    }

    /// `both_modes`, knowing the size in bytes of `view` sent with the
    /// tools (the request being sent): a mode whose view is the same is
    /// not serialised again, nor the second when both views are one.
    pub(super) fn both_modes_given(&self, view: &[Message], bytes: Option<usize>) -> (u64, u64) {
        let compact = self.view_as(ContextMode::Compact);
        let rebuild = self.view_as(ContextMode::Rebuild);
        let known = |v: &[Message]| {
            bytes
                .filter(|_| v == view)
                .map(|b| (b as f64 / self.bytes_per_token).round() as u64)
        };
        let a = known(&compact).unwrap_or_else(|| self.tokens_of(&compact));
        let b = if rebuild == compact {
            a
        } else {
            known(&rebuild).unwrap_or_else(|| self.tokens_of(&rebuild))
        };
        (a, b)
    }

    /// Forgets which turns rebuilt requests leave out.
    pub(super) fn reset_rebuild(&mut self) {
        self.rebuild_from = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str, name: &str, args: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        });
        m
    }

    #[test]
    fn a_read_goes_stale_after_a_write_that_went_through() {
        let msgs = vec![
            Message::system("s"),
            Message::user("fix a.py"),
            call("r1", "read_file", r#"{"path":"a.py"}"#),
            Message::tool_result("r1", "1: x = 1"),
            call(
                "w1",
                "edit_file",
                r#"{"path":"./a.py","old_string":"1","replacement":"2"}"#,
            ),
            Message::tool_result("w1", "no match"),
            call("r2", "read_file", r#"{"path":"b.py","offset":3}"#),
            Message::tool_result("r2", "3: y"),
        ];
        // The edit failed: the read still stands.
        let ok: HashSet<String> = ["r1", "r2"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(stale_reads(&msgs, 1, &ok), Stale::default());
        // It went through: the read is stale; the other file's is not.
        let ok: HashSet<String> = ["r1", "w1", "r2"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(stale_reads(&msgs, 1, &ok).results, HashSet::from([3]));
    }

    #[test]
    fn a_whole_read_supersedes_an_earlier_one_and_a_part_does_not() {
        let msgs = vec![
            Message::system("s"),
            call("r1", "read_file", r#"{"path":"a.py"}"#),
            Message::tool_result("r1", "all"),
            call("r2", "read_file", r#"{"path":"a.py","offset":5,"limit":3}"#),
            Message::tool_result("r2", "part"),
            call("r3", "read_file", r#"{"path":"a.py"}"#),
            Message::tool_result("r3", "all again"),
        ];
        let ok: HashSet<String> = ["r1", "r2", "r3"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(stale_reads(&msgs, 1, &ok).results, HashSet::from([2, 4]));
        let ok: HashSet<String> = ["r1", "r2"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(
            stale_reads(&msgs, 1, &ok),
            Stale::default(),
            "a failed read supersedes nothing"
        );
    }

    #[test]
    fn an_attached_file_goes_stale_and_only_its_body_is_left_out() {
        let request = "fix a.py\n\n[files in the workspace]\na.py\nb.py\n\n[a.py as it is now, for context; it counts as read]\n1\tx = 1\n\n[b.py as it is now, for context; it counts as read]\n1\ty = 2\n";
        let msgs = vec![
            Message::system("s"),
            Message::user(request),
            call("w1", "write_file", r#"{"path":"a.py","content":"x = 2\n"}"#),
            Message::tool_result("w1", "wrote a.py"),
        ];
        let ok: HashSet<String> = ["w1".to_string()].into();
        let stale = stale_reads(&msgs, 1, &ok);
        assert_eq!(
            stale.attached.get(&1),
            Some(&HashSet::from(["a.py".to_string()]))
        );
        let text = without_attached(request, &stale.attached[&1]);
        assert!(!text.contains("x = 1") && text.contains("y = 2"), "{text}");
        assert!(text.starts_with("fix a.py\n\n[files in the workspace]"));
        assert!(text.contains(
            "[a.py as it is now, for context; it counts as read]\n[file contents left out"
        ));
        // mm's notes after the last file stay.
        let noted = format!("{request}\n\n[mm ran `pytest` before you start: it failed]");
        let stale_b: HashSet<String> = ["b.py".to_string()].into();
        let text = without_attached(&noted, &stale_b);
        assert!(
            !text.contains("y = 2") && text.contains("[mm ran `pytest`"),
            "{text}"
        );
    }

    #[test]
    fn reused_ids_and_partial_whole_reads_make_nothing_stale() {
        // A server that numbers every round's calls from call_0.
        let msgs = vec![
            Message::system("s"),
            call("call_0", "read_file", r#"{"path":"a.py"}"#),
            Message::tool_result("call_0", "1: x"),
            call("call_0", "write_file", r#"{"path":"a.py","content":"y"}"#),
            Message::tool_result("call_0", "error: refused"),
        ];
        let ok: HashSet<String> = ["call_0".to_string()].into();
        assert_eq!(stale_reads(&msgs, 1, &ok), Stale::default());
        // A read without a range that showed only the start of a long file
        // does not stand for the earlier read of its end.
        let msgs = vec![
            Message::system("s"),
            call("r1", "read_file", r#"{"path":"big.py","offset":800}"#),
            Message::tool_result("r1", "800: tail"),
            call("r2", "read_file", r#"{"path":"big.py"}"#),
            Message::tool_result(
                "r2",
                "(500 of 900 lines shown; read on with offset=501)\n1: head",
            ),
        ];
        let ok: HashSet<String> = ["r1", "r2"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(stale_reads(&msgs, 1, &ok), Stale::default());
    }

    #[test]
    fn lines_are_cut_and_marked() {
        assert_eq!(cut_line("fix it", 10), "fix it");
        assert_eq!(cut_line("fix it\nplease", 10), "fix it…");
        assert_eq!(cut_line("abcdefghijkl", 5), "abcde…");
    }
}
