//! The agent's events as ACP `session/update`s.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Diff, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};

use crate::protocol::{AgentEvent, ApprovalKind, ApprovalRequest, ChangeKind, Level, ToolStatus};

/// The most of a tool's output a client is sent (the model saw it all).
const OUTPUT_CAP: usize = 8_000;

/// Remembers what each tool call has shown so far: updates replace a
/// call's content, so a diff stays beside the output that follows it.
#[derive(Default)]
pub struct Mapper {
    /// The workspace, to make paths absolute as ACP wants them.
    pub root: PathBuf,
    calls: HashMap<String, Call>,
}

#[derive(Default)]
struct Call {
    name: String,
    diffs: Vec<ToolCallContent>,
    /// An asked agent's steps so far.
    steps: Vec<String>,
}

impl Call {
    fn content(&self) -> Vec<ToolCallContent> {
        let mut c = self.diffs.clone();
        if !self.steps.is_empty() {
            c.push(ToolCallContent::Content(Content::new(text(
                self.steps.join("\n"),
            ))));
        }
        c
    }
}

pub fn kind(name: &str) -> ToolKind {
    use crate::toolname::{Kind, ToolName};
    match ToolName::parse(name).map(ToolName::kind) {
        Some(Kind::Read) => ToolKind::Read,
        Some(Kind::Search) => ToolKind::Search,
        Some(Kind::Edit) => ToolKind::Edit,
        Some(Kind::Execute) => ToolKind::Execute,
        Some(Kind::Think) => ToolKind::Think,
        Some(Kind::Fetch) => ToolKind::Fetch,
        None => ToolKind::Other,
    }
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s))
}

/// Text the editor shows as the agent's reply.
/// Text as a content block (a tool call's content).
pub fn said_block(s: String) -> ContentBlock {
    text(s)
}

pub fn said(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text))
}

fn chunk(s: impl Into<String>) -> ContentChunk {
    ContentChunk::new(text(s))
}

fn cap(s: &str) -> String {
    if s.len() <= OUTPUT_CAP {
        return s.to_string();
    }
    let mut end = OUTPUT_CAP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &s[..end], s.len() - end)
}

impl Mapper {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            calls: HashMap::new(),
        }
    }

    fn title(name: &str, summary: &str) -> String {
        if summary.is_empty() {
            name.to_string()
        } else {
            format!("{name} {summary}")
        }
    }

    fn locations(&self, arguments: &str) -> Vec<ToolCallLocation> {
        let Ok(serde_json::Value::Object(args)) = serde_json::from_str(arguments) else {
            return Vec::new();
        };
        let Some(path) = args
            .get(crate::toolname::arg::PATH)
            .and_then(|v| v.as_str())
        else {
            return Vec::new();
        };
        // Only a place inside the workspace: an editor that follows the
        // agent opens it.
        let p = std::path::Path::new(path.trim());
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Vec::new();
        }
        let mut loc = ToolCallLocation::new(self.root.join(p));
        if let Some(line) = args
            .get("line")
            .and_then(serde_json::Value::as_u64)
            .filter(|l| *l > 0)
        {
            loc = loc.line(u32::try_from(line).unwrap_or(u32::MAX));
        }
        vec![loc]
    }

    fn diff(&self, change: &crate::protocol::FileChange) -> ToolCallContent {
        let old = (change.kind != ChangeKind::Created).then(|| change.before.to_string());
        ToolCallContent::Diff(
            Diff::new(self.root.join(&change.path), change.after.to_string()).old_text(old),
        )
    }

    /// The call a permission request is about, with what it would do.
    pub fn permission_call(&mut self, request: &ApprovalRequest) -> ToolCallUpdate {
        let fields = match &request.kind {
            ApprovalKind::Exec {
                command, reason, ..
            } => ToolCallUpdateFields::new()
                .title({
                    // One line in the title; all of it in the content.
                    let first = command.lines().next().unwrap_or("");
                    let more = if command.lines().count() > 1 {
                        " …"
                    } else {
                        ""
                    };
                    format!("Run: {}{more}", first.replace('`', "'"))
                })
                .kind(ToolKind::Execute)
                .content(vec![ToolCallContent::Content(Content::new(text(format!(
                    "{command}\n\n{reason}"
                ))))]),
            ApprovalKind::Edit { change } => ToolCallUpdateFields::new()
                .title(format!("Edit {}", change.path))
                .kind(ToolKind::Edit)
                .locations(vec![ToolCallLocation::new(self.root.join(&change.path))])
                .content(vec![self.diff(change)]),
        };
        ToolCallUpdate::new(request.call_id.clone(), fields)
    }

    /// A call that runs: its title, locations and input (its card, when
    /// replayed history never said it started).
    fn running(
        &mut self,
        call_id: &str,
        name: &str,
        summary: &str,
        arguments: &str,
    ) -> Vec<SessionUpdate> {
        let raw = serde_json::from_str::<serde_json::Value>(arguments).ok();
        let locations = self.locations(arguments);
        if !self.calls.contains_key(call_id) {
            // Replayed history has no "started".
            self.calls.insert(
                call_id.to_string(),
                Call {
                    name: name.to_string(),
                    ..Call::default()
                },
            );
            return vec![SessionUpdate::ToolCall(
                ToolCall::new(call_id.to_string(), Self::title(name, summary))
                    .kind(kind(name))
                    .status(ToolCallStatus::InProgress)
                    .locations(locations)
                    .raw_input(raw),
            )];
        }
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new()
                .title(Self::title(name, summary))
                .status(ToolCallStatus::InProgress)
                .locations(locations)
                .raw_input(raw),
        ))]
    }

    /// A call that ended: its steps and diffs, its output, its status.
    fn finished(
        &mut self,
        call_id: &str,
        name: &str,
        summary: &str,
        status: ToolStatus,
        output: &str,
    ) -> Vec<SessionUpdate> {
        let call = self.calls.remove(call_id).unwrap_or_default();
        let mut content = call.content();
        if !output.is_empty() {
            content.push(ToolCallContent::Content(Content::new(text(cap(output)))));
        }
        let st = match status {
            ToolStatus::Ok => ToolCallStatus::Completed,
            _ => ToolCallStatus::Failed,
        };
        let name = if call.name.is_empty() {
            name
        } else {
            &call.name
        };
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new()
                .title(Self::title(name, summary))
                .status(st)
                .content(content)
                .raw_output(serde_json::Value::String(cap(output))),
        ))]
    }

    /// The updates one event makes; `history` when a loaded session is
    /// replayed (the user's prompts are sent back too).
    pub fn updates(&mut self, ev: &AgentEvent, history: bool) -> Vec<SessionUpdate> {
        match ev {
            AgentEvent::TurnStarted { prompt, .. } if history => {
                vec![SessionUpdate::UserMessageChunk(chunk(prompt.clone()))]
            }
            AgentEvent::Token { text: t, .. } => {
                vec![SessionUpdate::AgentMessageChunk(chunk(t.clone()))]
            }
            AgentEvent::Reasoning { text: t, .. } => {
                vec![SessionUpdate::AgentThoughtChunk(chunk(t.clone()))]
            }
            AgentEvent::ToolCallStarted { call_id, name, .. } => {
                self.calls.insert(
                    call_id.clone(),
                    Call {
                        name: name.clone(),
                        ..Call::default()
                    },
                );
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(call_id.clone(), name.clone())
                        .kind(kind(name))
                        .status(ToolCallStatus::Pending),
                )]
            }
            AgentEvent::ToolCallRunning {
                call_id,
                name,
                summary,
                arguments,
                ..
            } => self.running(call_id, name, summary, arguments),
            AgentEvent::FileChanged {
                call_id, change, ..
            } => {
                let d = self.diff(change);
                let call = self.calls.entry(call_id.clone()).or_default();
                call.diffs.push(d);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new().content(call.content()),
                ))]
            }
            AgentEvent::ToolProgress {
                call_id, text: t, ..
            } => {
                let call = self.calls.entry(call_id.clone()).or_default();
                call.steps.push(t.clone());
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new().content(call.content()),
                ))]
            }
            AgentEvent::ToolCallFinished {
                call_id,
                name,
                summary,
                status,
                output,
                ..
            } => self.finished(call_id, name, summary, *status, output),
            AgentEvent::Notice {
                level: Level::Warning | Level::Error,
                text: t,
                ..
            } => {
                vec![SessionUpdate::AgentThoughtChunk(chunk(format!(
                    "\n[mm: {t}]\n"
                )))]
            }
            AgentEvent::Compacted {
                replaced,
                tokens_before,
                tokens_after,
                ..
            } => vec![SessionUpdate::AgentThoughtChunk(chunk(format!(
                "\n[mm: compacted: {replaced} earlier messages sent as a summary from here on (~{tokens_before} → ~{tokens_after} tokens)]\n"
            )))],
            // A plan (from `update_plan`, or the steps of one being
            // carried out): the client's plan view, whole each time.
            AgentEvent::Plan { steps, .. } => vec![plan_update(steps)],
            AgentEvent::Receipt {
                written,
                commands,
                notes,
                ..
            } if !written.is_empty() || *commands > 0 => {
                vec![SessionUpdate::AgentMessageChunk(chunk(format!(
                    "\n\n— {}",
                    crate::protocol::receipt_text(written, *commands, notes)
                )))]
            }
            _ => Vec::new(),
        }
    }
}

/// A plan (from `update_plan`, or the steps of one being carried out):
/// the client's plan view, whole each time.
fn plan_update(steps: &[crate::protocol::PlanStep]) -> SessionUpdate {
    use crate::protocol::StepStatus;
    use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};
    let entries = steps
        .iter()
        .map(|s| {
            let status = match s.status {
                StepStatus::Pending => PlanEntryStatus::Pending,
                StepStatus::InProgress => PlanEntryStatus::InProgress,
                StepStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(s.step.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}
