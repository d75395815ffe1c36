//! The input lines of the pi provider protocol (see the module doc of [`super`]): the `request`,
//! pi's `tool_result`s, `abort`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// One input line.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InLine {
    Request(Box<Request>),
    ToolResult(ToolResultIn),
    Abort,
}

impl InLine {
    /// Parse one line; the error says what was wrong.
    pub fn parse(line: &str) -> Result<InLine, String> {
        serde_json::from_str(line).map_err(|e| e.to_string())
    }
}

/// What pi asks for: a Cursor run for the conversation in `context`.
#[derive(Debug, Deserialize)]
pub struct Request {
    /// pi's model id (`auto`, `composer-2`, …); passed to `cursor-agent --model`.
    #[serde(default)]
    pub model: Option<String>,
    pub context: Context,
    /// pi's working directory; `cursor-agent --workspace` and its working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    pub source: SourceSpec,
}

/// pi-ai `Context`. Only the last user message is used (Cursor runs one prompt at a time); the
/// rest is accepted so the request is pi's context as it is.
#[derive(Debug, Deserialize)]
pub struct Context {
    #[serde(default)]
    pub messages: Vec<Value>,
    #[serde(default)]
    pub tools: Vec<Value>,
    #[serde(default, rename = "systemPrompt")]
    pub system_prompt: Option<String>,
}

/// Where the Cursor events come from.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SourceSpec {
    /// A recording in either format (Cursor CLI stream-json or an `@cursor/sdk` recording).
    Replay {
        path: PathBuf,
        /// Replay at the recorded pace.
        #[serde(default)]
        realtime: bool,
    },
    /// `cursor-agent -p --output-format stream-json --stream-partial-output …`, spawned.
    CursorAgent {
        /// Extra arguments, before the prompt (`--force`, `--trust`, …).
        #[serde(default)]
        args: Vec<String>,
    },
}

/// pi's result for one replay tool call (a pi-ai `ToolResultMessage`, `role` optional).
#[derive(Debug, Deserialize)]
pub struct ToolResultIn {
    #[serde(rename = "toolCallId")]
    pub tool_call_id: String,
    #[serde(default, rename = "toolName")]
    pub tool_name: Option<String>,
    #[serde(default, rename = "isError")]
    pub is_error: bool,
}

/// The text of the last user message: its string content, or its text blocks joined by newlines
/// (images are left out). `None` when there is no user message or it has no text.
pub fn last_user_text(messages: &[Value]) -> Option<String> {
    let m = messages.iter().rev().find(|m| m["role"] == "user")?;
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_line_kind() {
        let req = r#"{"type":"request","model":"auto","cwd":"/w","context":{"messages":[],"tools":[]},
            "source":{"kind":"replay","path":"/r.jsonl","realtime":true}}"#;
        match InLine::parse(&req.replace('\n', "")).unwrap() {
            InLine::Request(r) => {
                assert_eq!(r.model.as_deref(), Some("auto"));
                assert!(matches!(r.source, SourceSpec::Replay { realtime: true, .. }));
            }
            other => panic!("{other:?}"),
        }
        let agent =
            r#"{"type":"request","context":{"messages":[]},"source":{"kind":"cursor-agent","args":["--force"]}}"#;
        match InLine::parse(agent).unwrap() {
            InLine::Request(r) => match r.source {
                SourceSpec::CursorAgent { args } => assert_eq!(args, ["--force"]),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        let result = r#"{"type":"tool_result","role":"toolResult","toolCallId":"cursor-replay-x-tool-1","toolName":"bash",
            "content":[{"type":"text","text":"ok"}],"details":{},"isError":true,"timestamp":1}"#;
        match InLine::parse(&result.replace('\n', "")).unwrap() {
            InLine::ToolResult(r) => {
                assert_eq!((r.tool_call_id.as_str(), r.is_error), ("cursor-replay-x-tool-1", true))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(InLine::parse(r#"{"type":"abort"}"#).unwrap(), InLine::Abort));
        assert!(InLine::parse(r#"{"type":"nope"}"#).is_err());
        assert!(InLine::parse(r#"{"type":"request","context":{}}"#).unwrap_err().contains("source"));
    }

    #[test]
    fn the_prompt_is_the_last_user_message() {
        let messages = vec![
            json!({"role": "user", "content": "first", "timestamp": 1}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "answer"}]}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "fix"},
                {"type": "image", "data": "…", "mimeType": "image/png"},
                {"type": "text", "text": "the test"}
            ]}),
            json!({"role": "toolResult", "toolCallId": "t", "content": []}),
        ];
        assert_eq!(last_user_text(&messages).as_deref(), Some("fix\nthe test"));
        assert_eq!(last_user_text(&messages[..1]).as_deref(), Some("first"));
        assert_eq!(last_user_text(&[json!({"role": "user", "content": "  "})]), None);
        assert_eq!(last_user_text(&[]), None);
    }
}
