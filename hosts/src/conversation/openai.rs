//! OpenAI chat messages (`system`/`developer`, `user`, `assistant` with `tool_calls`, `tool`) as
//! [`Turn`]s, and the request a fresh run answers.

use std::collections::HashMap;

use toolstream_schemas::openai::ChatMessage;

use super::{ToolCall, Turn};

/// What a fresh run is asked when the conversation ends with tool results rather than a user
/// message (the client ran the tools and wants the model to go on).
pub const CONTINUE_REQUEST: &str = "Continue from the tool results above.";

/// The turns before the request and the request itself. The request is the last message's text
/// when it is a user message; otherwise every message is history and the request is
/// [`CONTINUE_REQUEST`]. `None` when there is nothing to answer (no user message with text at
/// all).
pub fn split_request(messages: &[ChatMessage]) -> Option<(Vec<Turn>, String)> {
    if !messages.iter().any(|m| m.role == "user" && !m.text().trim().is_empty()) {
        return None;
    }
    let names = tool_names(messages);
    match messages.last() {
        Some(last) if last.role == "user" => {
            let history = messages[..messages.len() - 1].iter().filter_map(|m| turn(m, &names)).collect();
            Some((history, last.text()))
        }
        _ => Some((messages.iter().filter_map(|m| turn(m, &names)).collect(), CONTINUE_REQUEST.to_owned())),
    }
}

/// Tool name by call id, from the assistant messages' tool calls.
fn tool_names(messages: &[ChatMessage]) -> HashMap<&str, &str> {
    messages.iter().flat_map(|m| &m.tool_calls).map(|c| (c.id.as_str(), c.function.name.as_str())).collect()
}

/// One message as a turn; `None` for an empty one or an unknown role.
fn turn(m: &ChatMessage, names: &HashMap<&str, &str>) -> Option<Turn> {
    let text = m.text();
    match m.role.as_str() {
        "system" | "developer" => (!text.trim().is_empty()).then_some(Turn::System(text)),
        "user" => (!text.trim().is_empty()).then_some(Turn::User(text)),
        "assistant" => {
            let tool_calls: Vec<ToolCall> = m
                .tool_calls
                .iter()
                .map(|c| ToolCall {
                    id: c.id.clone(),
                    name: c.function.name.clone(),
                    arguments: if c.function.arguments.is_empty() { "{}".into() } else { c.function.arguments.clone() },
                })
                .collect();
            (!text.trim().is_empty() || !tool_calls.is_empty()).then_some(Turn::Assistant { text, tool_calls })
        }
        "tool" => {
            let call_id = m.tool_call_id.clone().unwrap_or_default();
            let tool = names.get(call_id.as_str()).map(|s| (*s).to_owned()).or_else(|| m.name.clone());
            Some(Turn::ToolResult {
                is_error: text.trim_start().starts_with("Error:"),
                tool: tool.unwrap_or_else(|| "tool".into()),
                call_id,
                text,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn msgs(v: serde_json::Value) -> Vec<ChatMessage> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_last_user_message_is_the_request() {
        let m = msgs(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "59°F, cloudy"},
            {"role": "assistant", "content": "It is 59°F."},
            {"role": "user", "content": "And tomorrow?"}
        ]));
        let (history, request) = split_request(&m).unwrap();
        assert_eq!(request, "And tomorrow?");
        assert_eq!(
            history,
            vec![
                Turn::System("Be brief.".into()),
                Turn::User("Weather in Paris?".into()),
                Turn::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "get_weather".into(),
                        arguments: "{\"city\":\"Paris\"}".into()
                    }]
                },
                Turn::ToolResult {
                    call_id: "call_1".into(),
                    tool: "get_weather".into(),
                    text: "59°F, cloudy".into(),
                    is_error: false
                },
                Turn::Assistant { text: "It is 59°F.".into(), tool_calls: vec![] },
            ]
        );
    }

    #[test]
    fn trailing_tool_results_ask_to_continue() {
        let m = msgs(json!([
            {"role": "user", "content": "run ls"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c", "content": "Error: denied"}
        ]));
        let (history, request) = split_request(&m).unwrap();
        assert_eq!(request, CONTINUE_REQUEST);
        assert_eq!(history.len(), 3);
        assert!(matches!(&history[2], Turn::ToolResult { is_error: true, tool, .. } if tool == "bash"));
        assert!(split_request(&msgs(json!([{"role": "system", "content": "x"}]))).is_none());
    }
}
