//! The input lines of the pi provider protocol (see the module doc of [`super`]): the `request`,
//! pi's `tool_result`s, `abort`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use toolstream_sinks::pi_events::display::ToolDisplay;

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
    /// The Cursor chat to continue (`cursor-agent --resume`): the extension names it when pi's
    /// conversation is that chat so far, and then only the new prompt is sent. Without it the
    /// earlier turns of `context` are flattened into the prompt (`crate::conversation`).
    #[serde(default)]
    pub resume: Option<String>,
    /// Cursor's mode for this prompt (`cursor-agent --mode`); `agent` is Cursor's default.
    #[serde(default)]
    pub mode: Option<CursorMode>,
    /// Which replay tools pi has (the extension registered and owns them); the other cards
    /// reach pi as thinking traces. Absent: every card as its tool.
    #[serde(default)]
    pub display: Option<ToolDisplay>,
}

/// Cursor's modes (`/cursor-mode` in pi).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CursorMode {
    Agent,
    Plan,
    Ask,
}

impl CursorMode {
    /// The value of `cursor-agent --mode`, `None` for the default mode (the option is left out).
    pub fn agent_option(self) -> Option<&'static str> {
        match self {
            CursorMode::Agent => None,
            CursorMode::Plan => Some("plan"),
            CursorMode::Ask => Some("ask"),
        }
    }
}

/// pi-ai `Context`: the last user message is the prompt; the messages before it are the earlier
/// conversation, sent along when the run cannot resume a Cursor chat.
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
    /// pi's result content (text and image blocks): what a bridged call's MCP result carries.
    #[serde(default)]
    pub content: Vec<Value>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    /// The modes the extension offers (the pi contract's) are the modes the engine reads, and only
    /// Cursor's default mode leaves `--mode` out.
    #[test]
    fn the_contracts_modes_are_the_engines() {
        use toolstream_schemas::pi_contract::{CURSOR_MODES, DEFAULT_CURSOR_MODE};
        let mut seen = Vec::new();
        for name in CURSOR_MODES {
            let mode: CursorMode = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(mode.agent_option(), (*name != DEFAULT_CURSOR_MODE).then_some(*name), "{name}");
            assert!(!seen.contains(&mode), "{name}");
            seen.push(mode);
        }
        assert!(serde_json::from_value::<CursorMode>(serde_json::json!("debug")).is_err());
    }

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
        let resumed =
            r#"{"type":"request","context":{},"source":{"kind":"cursor-agent"},"resume":"c-1","mode":"plan"}"#;
        match InLine::parse(resumed).unwrap() {
            InLine::Request(r) => assert_eq!((r.resume.as_deref(), r.mode), (Some("c-1"), Some(CursorMode::Plan))),
            other => panic!("{other:?}"),
        }
        assert!(InLine::parse(
            r#"{"type":"request","context":{},"source":{"kind":"replay","path":"x"},"mode":"yolo"}"#
        )
        .is_err());
        assert!(InLine::parse(r#"{"type":"nope"}"#).is_err());
        assert!(InLine::parse(r#"{"type":"request","context":{}}"#).unwrap_err().contains("source"));
    }
}
