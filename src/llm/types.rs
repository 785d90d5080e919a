//! Conversation messages as mm keeps them (in memory and in the session
//! log), and their translation to the chat-completions wire format.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One tool call as the model made it; `arguments` is JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A text part and an image part for each image, each image named by its
/// placeholder (see `images`).
pub fn image_parts(text: &str, images: &[super::images::Image]) -> Vec<Value> {
    let mut parts = vec![json!({"type": "text", "text": text})];
    for img in images {
        parts.push(json!({"type": "image_url", "image_url": {"url": img.placeholder()}}));
    }
    parts
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Provider items sent back as they came with this message (signed
    /// thinking blocks, reasoning items): see `Reply::replay`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay: Vec<Value>,
    /// Images that go with the text (a user's prompt, a `read_file`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::images::Image>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text.into())
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text.into())
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, text.into())
    }

    pub fn tool_result(call_id: &str, text: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: Some(text.into()),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.to_string()),
            replay: Vec::new(),
            images: Vec::new(),
        }
    }

    fn plain(role: Role, text: String) -> Self {
        Message {
            role,
            content: Some(text),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            replay: Vec::new(),
            images: Vec::new(),
        }
    }

    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// The message as a chat-completions request expects it.
    /// `replay_reasoning`: DeepSeek answers 400 unless every assistant
    /// message carries `reasoning_content` when tools are in play.
    pub fn to_wire(&self, replay_reasoning: bool) -> Value {
        let role = match self.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut m = serde_json::Map::new();
        m.insert("role".into(), json!(role));
        match self.role {
            Role::Assistant => {
                m.insert("content".into(), json!(self.text()));
                if !self.tool_calls.is_empty() {
                    let calls: Vec<Value> = self
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                if replay_reasoning {
                    m.insert(
                        "reasoning_content".into(),
                        json!(self.reasoning.as_deref().unwrap_or("")),
                    );
                    // Read by the native APIs' translation, which the
                    // client strips for a chat server.
                    if !self.replay.is_empty() {
                        m.insert("mm_replay".into(), json!(self.replay));
                    }
                }
            }
            Role::Tool => {
                m.insert("content".into(), json!(self.text()));
                m.insert(
                    "tool_call_id".into(),
                    json!(self.tool_call_id.as_deref().unwrap_or("")),
                );
            }
            Role::User if !self.images.is_empty() => {
                m.insert(
                    "content".into(),
                    Value::Array(image_parts(self.text(), &self.images)),
                );
            }
            Role::System | Role::User => {
                m.insert("content".into(), json!(self.text()));
            }
        }
        Value::Object(m)
    }
}

/// A tool offered to the model: name, one-line description, JSON Schema.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// Built-in tools' names are static; an MCP server's are not.
    pub name: std::borrow::Cow<'static, str>,
    pub description: std::borrow::Cow<'static, str>,
    pub parameters: Value,
}

impl ToolSpec {
    pub fn to_wire(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// Names of the arguments the schema marks as required.
    pub fn required(&self) -> Vec<&str> {
        self.parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_calls_go_out_in_openai_shape() {
        let m = Message {
            role: Role::Assistant,
            content: None,
            reasoning: Some("think".into()),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
            }],
            tool_call_id: None,
            replay: vec![json!({"type": "thinking", "signature": "s"})],
            images: Vec::new(),
        };
        let w = m.to_wire(false);
        assert_eq!(w["tool_calls"][0]["function"]["name"], "read_file");
        assert_eq!(w["content"], "");
        assert!(w.get("reasoning_content").is_none());
        assert!(w.get("mm_replay").is_none());
        assert_eq!(m.to_wire(true)["mm_replay"][0]["signature"], "s");
        assert_eq!(m.to_wire(true)["reasoning_content"], "think");
    }

    #[test]
    fn session_form_round_trips() {
        let m = Message::tool_result("c1", "ok");
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(s, r#"{"role":"tool","content":"ok","tool_call_id":"c1"}"#);
        assert_eq!(serde_json::from_str::<Message>(&s).unwrap(), m);
    }
}
