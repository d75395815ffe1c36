//! OpenAI chat completions on the wire (SPEC §9.5): the request toolstream serves, the
//! `chat.completion.chunk` stream and the `chat.completion` object it answers with, the error
//! body, and `GET /v1/models`. Only the fields toolstream reads or writes are modelled; unknown
//! request fields are accepted and ignored, as OpenAI-compatible servers do.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/chat/completions`.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// One message of the conversation.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    /// A string, an array of content parts, or null.
    #[serde(default)]
    pub content: Value,
    #[serde(default)]
    pub tool_calls: Vec<RequestToolCall>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

impl ChatMessage {
    /// The text of `content`: the string, or its text parts joined by newlines (images noted).
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("text") => p.get("text").and_then(Value::as_str).map(str::to_owned),
                    Some("image_url") => Some("[image]".to_owned()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// An assistant message's tool call, as the client sends the history back.
#[derive(Clone, Debug, Deserialize)]
pub struct RequestToolCall {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub function: RequestFunction,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct RequestFunction {
    #[serde(default)]
    pub name: String,
    /// JSON text.
    #[serde(default)]
    pub arguments: String,
}

/// One `chat.completion.chunk`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatChunk {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
}

pub const CHUNK_OBJECT: &str = "chat.completion.chunk";
pub const COMPLETION_OBJECT: &str = "chat.completion";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    /// Always written, `null` until the last chunk.
    pub finish_reason: Option<FinishReason>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Thinking and Cursor's own tool activity (the field OpenAI-compatible servers use for
    /// reasoning; clients that do not know it ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
}

/// `tool_calls[{index, id, type:"function", function:{name, arguments}}]` in a chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    pub index: u32,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text.
    pub arguments: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// A non-streamed `chat.completion`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    pub usage: CompletionUsage,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub message: CompletionMessage,
    pub finish_reason: FinishReason,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompletionMessage {
    pub role: &'static str,
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
}

/// `{"error":{"message","type","code"}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub code: Option<String>,
}

/// `GET /v1/models`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelEntry>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelEntry {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
}
