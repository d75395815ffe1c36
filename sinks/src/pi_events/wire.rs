//! pi-ai message shapes as they go on the wire and into session files, field for field and in
//! pi's own key order (`@mariozechner/pi-ai` 0.73 `dist/types.d.ts`: `AssistantMessage`,
//! `UserMessage`, `ToolResultMessage`, `ToolCall`, `Usage`; key order as the providers build the
//! message, e.g. `dist/providers/anthropic.js`: role, content, api, provider, model, usage,
//! stopReason, timestamp, then errorMessage when the request failed).

use serde::{Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

use toolstream_schemas::{CardDetails, StopReason, Usage};

/// The `api` of every Cursor message: the one the pi Cursor extension registers its provider
/// under (its session files carry `"api":"cursor-sdk"`).
pub use toolstream_schemas::pi_contract::API;
/// The `provider` of every Cursor message and model change.
pub use toolstream_schemas::pi_contract::PROVIDER;
/// The model id used when a run did not name its model.
pub const UNKNOWN_MODEL: &str = "unknown";

/// pi's name for a stop reason.
pub fn stop_reason_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Stop => "stop",
        StopReason::ToolUse => "toolUse",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// One block of an assistant message (`TextContent | ThinkingContent | ToolCall`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "thinking")]
    Thinking { thinking: String },
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

/// A `toolCall` block without its `type` tag (see [`ContentBlock::ToolCall`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Always a JSON object (pi's `Record<string, any>`).
    pub arguments: Value,
}

/// pi's `Usage`, complete with `cost` (SPEC §6c). Whole-number costs are written as integers, as
/// `JSON.stringify` writes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PiUsage {
    pub input: u64,
    pub output: u64,
    #[serde(rename = "cacheRead")]
    pub cache_read: u64,
    #[serde(rename = "cacheWrite")]
    pub cache_write: u64,
    #[serde(rename = "totalTokens")]
    pub total_tokens: u64,
    pub cost: PiCost,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PiCost {
    #[serde(serialize_with = "js_number")]
    pub input: f64,
    #[serde(serialize_with = "js_number")]
    pub output: f64,
    #[serde(rename = "cacheRead", serialize_with = "js_number")]
    pub cache_read: f64,
    #[serde(rename = "cacheWrite", serialize_with = "js_number")]
    pub cache_write: f64,
    #[serde(serialize_with = "js_number")]
    pub total: f64,
}

impl From<&Usage> for PiUsage {
    fn from(u: &Usage) -> Self {
        PiUsage {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            total_tokens: u.total_tokens,
            cost: PiCost {
                input: finite(u.cost.input),
                output: finite(u.cost.output),
                cache_read: finite(u.cost.cache_read),
                cache_write: finite(u.cost.cache_write),
                total: finite(u.cost.total),
            },
        }
    }
}

fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// A number as JavaScript prints it: whole values without a fraction (`0`, not `0.0`).
fn js_number<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    const SAFE: f64 = 9_007_199_254_740_991.0; // 2^53 - 1
    if x.fract() == 0.0 && x.abs() <= SAFE {
        // Exact: whole and within the range where i64 and f64 agree.
        #[allow(clippy::cast_possible_truncation)]
        s.serialize_i64(*x as i64)
    } else {
        s.serialize_f64(*x)
    }
}

/// pi-ai `AssistantMessage`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: Vec<ContentBlock>,
    pub api: &'static str,
    pub provider: &'static str,
    pub model: String,
    /// The model Cursor reported, when `model` is the id the client asked for.
    #[serde(rename = "responseModel", skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The Cursor chat the message belongs to (the run's `session_id`): a later prompt can
    /// resume it (`cursor-agent --resume`).
    #[serde(rename = "responseId", skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    pub usage: PiUsage,
    #[serde(rename = "stopReason")]
    pub stop_reason: &'static str,
    /// Unix ms.
    pub timestamp: u64,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl AssistantMessage {
    /// An empty message as a provider starts it (pi's initial `partial`).
    pub fn empty(model: &str, timestamp: u64) -> Self {
        AssistantMessage {
            role: "assistant",
            content: Vec::new(),
            api: API,
            provider: PROVIDER,
            model: model.to_owned(),
            response_model: None,
            response_id: None,
            usage: PiUsage::default(),
            stop_reason: "stop",
            timestamp,
            error_message: None,
        }
    }
}

/// `{type:"text", text}` inside user and tool-result messages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextContent {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
}

impl TextContent {
    pub fn new(text: impl Into<String>) -> Self {
        TextContent { kind: "text", text: text.into() }
    }
}

/// pi-ai `UserMessage` as pi's prompt path builds it (content as one text block).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserMessage {
    pub role: &'static str,
    pub content: Vec<TextContent>,
    pub timestamp: u64,
}

impl UserMessage {
    pub fn new(text: &str, timestamp: u64) -> Self {
        UserMessage { role: "user", content: vec![TextContent::new(text)], timestamp }
    }
}

/// pi-ai `ToolResultMessage` (key order of pi-agent-core's `createToolResultMessage`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolResultMessage {
    pub role: &'static str,
    #[serde(rename = "toolCallId")]
    pub tool_call_id: String,
    #[serde(rename = "toolName")]
    pub tool_name: String,
    pub content: Vec<TextContent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Arc<CardDetails>>,
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// Unix ms.
    pub timestamp: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolstream_schemas::Cost;

    #[test]
    fn usage_has_pi_field_names_and_js_numbers() {
        let u = Usage {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
            total_tokens: 10,
            cost: Cost { input: 0.5, output: 0.0, cache_read: 0.0, cache_write: 0.0, total: f64::NAN },
        };
        assert_eq!(
            serde_json::to_string(&PiUsage::from(&u)).unwrap(),
            r#"{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.5,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#
        );
    }

    #[test]
    fn assistant_message_key_order() {
        let mut m = AssistantMessage::empty("composer-2", 7);
        m.content.push(ContentBlock::Text { text: "hi".into() });
        m.content.push(ContentBlock::ToolCall(ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "ls"}),
        }));
        m.stop_reason = "error";
        m.error_message = Some("boom".into());
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            concat!(
                r#"{"role":"assistant","content":[{"type":"text","text":"hi"},"#,
                r#"{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"#,
                r#""api":"cursor-sdk","provider":"cursor","model":"composer-2","#,
                r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"#,
                r#""cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"#,
                r#""stopReason":"error","timestamp":7,"errorMessage":"boom"}"#
            )
        );
    }

    #[test]
    fn tool_result_omits_null_details() {
        let r = ToolResultMessage {
            role: "toolResult",
            tool_call_id: "t1".into(),
            tool_name: "bash".into(),
            content: vec![TextContent::new("out")],
            details: None,
            is_error: true,
            timestamp: 9,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":true,"timestamp":9}"#
        );
    }
}
