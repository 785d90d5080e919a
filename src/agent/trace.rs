//! `trace: true` or `AGENT_TRACE=1` (the Go mm's feature): every request
//! and what came back, one file each, `.mm/traces/<session>/NNNN.json`,
//! mode 0600. The key is never written.

use serde_json::{Value, json};

use super::Agent;
use crate::llm::{LlmError, Streamed};
use crate::mmdir::MmDir;
use crate::protocol::Level;

impl Agent {
    /// Writes one request and its outcome, when tracing is on.
    pub(super) fn trace(&mut self, body: &Value, result: &Result<Streamed, LlmError>, ms: u64) {
        if !self.settings.trace || self.trace_failed {
            return;
        }
        self.trace_seq += 1;
        let response = match result {
            Ok(s) => json!({
                "content": s.reply.content,
                "reasoning": s.reply.reasoning,
                "tool_calls": s.reply.calls.iter().map(|c| json!({
                    "id": c.id,
                    "name": c.name,
                    "arguments": c.arguments,
                })).collect::<Vec<_>>(),
                "finish_reason": s.reply.finish_reason,
                "usage": s.reply.usage,
                "first_token_ms": s.first_token_ms,
            }),
            Err(e) => json!({ "error": e.to_string() }),
        };
        let mut headers = json!({
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        });
        if self.settings.api_key.is_some() {
            headers["Authorization"] = json!("Bearer [not written]");
        }
        let doc = json!({
            "n": self.trace_seq,
            "url": format!("{}/chat/completions", self.client.base_url()),
            "headers": headers,
            "ms": ms,
            "request": body,
            "response": response,
        });
        let root = self.tools.sandbox.root().join(".mm");
        let written = MmDir::open(&root)
            .and_then(|mm| mm.subdir("traces"))
            .and_then(|t| t.subdir(self.log.id()))
            .and_then(|d| {
                let text = serde_json::to_vec_pretty(&doc).map_err(std::io::Error::other)?;
                d.write(&format!("{:04}.json", self.trace_seq), &text)
            });
        if let Err(e) = written {
            self.trace_failed = true;
            self.notice(
                Level::Warning,
                format!(
                    "cannot write the trace in .mm/traces: {e}; tracing is off for this session"
                ),
            );
        }
    }
}
