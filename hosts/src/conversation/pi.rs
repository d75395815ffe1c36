//! pi-ai messages (`user`, `assistant`, `toolResult`, as pi sends its context) as [`Turn`]s.

use serde_json::Value;

use super::{ToolCall, Turn};

/// The text of a message's `content`: the string itself, or its text blocks joined by newlines;
/// thinking is left out (it was never the answer). Images are noted as `[image]` when `images`.
pub fn content_text(content: &Value, images: bool) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_owned),
                Some("image") if images => Some("[image]".to_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the last user message and the turns before it. `None` when there is no user
/// message with text. Messages after the last user message (none, in a request pi makes for a
/// new prompt) are not history.
pub fn split_request(messages: &[Value]) -> Option<(Vec<Turn>, String)> {
    let last = messages.iter().rposition(|m| m["role"] == "user")?;
    // The prompt is text: the new request's images are left out.
    let request = content_text(&messages[last]["content"], false);
    if request.trim().is_empty() {
        return None;
    }
    Some((messages[..last].iter().filter_map(turn).collect(), request))
}

/// One pi message as a turn; `None` for an empty one or another role.
fn turn(message: &Value) -> Option<Turn> {
    match message["role"].as_str()? {
        "user" => Some(Turn::User(content_text(&message["content"], true)))
            .filter(|t| !matches!(t, Turn::User(s) if s.trim().is_empty())),
        "assistant" => {
            let blocks = message["content"].as_array();
            let text = content_text(&message["content"], true);
            let tool_calls: Vec<ToolCall> = blocks
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "toolCall")
                .map(|b| ToolCall {
                    id: b["id"].as_str().unwrap_or_default().to_owned(),
                    name: b["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: b.get("arguments").map_or_else(|| "{}".to_owned(), Value::to_string),
                })
                .collect();
            (!text.trim().is_empty() || !tool_calls.is_empty()).then_some(Turn::Assistant { text, tool_calls })
        }
        "toolResult" => Some(Turn::ToolResult {
            call_id: message["toolCallId"].as_str().unwrap_or_default().to_owned(),
            tool: message["toolName"].as_str().unwrap_or_default().to_owned(),
            text: content_text(&message["content"], true),
            is_error: message["isError"].as_bool().unwrap_or(false),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pi_context_splits_into_history_and_request() {
        let messages = vec![
            json!({"role": "user", "content": "first", "timestamp": 1}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "running it"},
                {"type": "toolCall", "id": "cursor-replay-r-tool-1", "name": "bash", "arguments": {"command": "ls"}}
            ]}),
            json!({"role": "toolResult", "toolCallId": "cursor-replay-r-tool-1", "toolName": "bash",
                   "content": [{"type": "text", "text": "a\nb"}], "isError": false}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "fix"},
                {"type": "image", "data": "…", "mimeType": "image/png"},
                {"type": "text", "text": "the test"}
            ]}),
        ];
        let (history, request) = split_request(&messages).unwrap();
        assert_eq!(request, "fix\nthe test");
        assert_eq!(
            history,
            vec![
                Turn::User("first".into()),
                Turn::Assistant {
                    text: "running it".into(),
                    tool_calls: vec![ToolCall {
                        id: "cursor-replay-r-tool-1".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls"}"#.into()
                    }]
                },
                Turn::ToolResult {
                    call_id: "cursor-replay-r-tool-1".into(),
                    tool: "bash".into(),
                    text: "a\nb".into(),
                    is_error: false
                },
                Turn::Assistant { text: "done".into(), tool_calls: vec![] },
            ]
        );
    }

    #[test]
    fn no_request_without_user_text() {
        assert_eq!(split_request(&[]), None);
        assert_eq!(split_request(&[json!({"role": "user", "content": "  "})]), None);
        assert_eq!(split_request(&[json!({"role": "assistant", "content": "x"})]), None);
    }
}
