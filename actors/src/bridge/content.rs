//! pi result content → MCP `CallTool` content (SPEC §7): text and image blocks kept, any other
//! block stringified into a text block, empty content → one empty text block.

use serde_json::{json, Value};

/// Normalise pi content blocks for the MCP answer.
pub fn normalize_content(blocks: Vec<Value>) -> Vec<Value> {
    if blocks.is_empty() {
        return vec![text_block(String::new())];
    }
    blocks.into_iter().map(normalize_block).collect()
}

fn normalize_block(block: Value) -> Value {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                return text_block(text.to_owned());
            }
        }
        Some("image") => {
            let data = block.get("data").and_then(Value::as_str);
            let mime = block.get("mimeType").and_then(Value::as_str);
            if let (Some(data), Some(mime)) = (data, mime) {
                return json!({"type": "image", "data": data, "mimeType": mime});
            }
        }
        _ => {}
    }
    match block {
        Value::String(s) => text_block(s),
        other => text_block(other.to_string()),
    }
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}
