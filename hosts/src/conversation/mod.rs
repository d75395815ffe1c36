//! A conversation carried into a fresh Cursor run: the "fresh request with full history" flow
//! (seed 002). When a run cannot continue a Cursor chat (`cursor-agent --resume`) — a pi session
//! started elsewhere, a branch of pi's session tree, a model change, an OpenAI-style client that
//! sends the whole history with every request — the earlier turns are written into the prompt,
//! in front of the new request, as plain labelled text.
//!
//! Clients describe their history as [`Turn`]s (`pi` turns pi-ai messages into them); [`flatten`]
//! writes the prompt. The prompt is bounded ([`Budget`]): each tool result is clipped, and when
//! the whole history is still too large the oldest turns are cut — never silently: the prompt
//! says how many turns were left out, and [`Flattened::cut_turns`] tells the caller.

pub mod openai;
pub mod pi;

use std::fmt::Write as _;

/// One turn of an earlier conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Instructions from the client (OpenAI `system`/`developer` messages).
    System(String),
    User(String),
    /// The assistant's text and the tool calls it made.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call's result.
    ToolResult {
        call_id: String,
        tool: String,
        text: String,
        is_error: bool,
    },
}

/// A tool call the assistant made, as the client reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// How large a flattened prompt may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The history part of the prompt, in bytes (the new request itself is never cut). The
    /// prompt travels as one `cursor-agent` argument, and Linux refuses a single argument of
    /// 128 KiB or more, so the default stays well below.
    pub history_bytes: usize,
    /// One tool result's text, in bytes; the rest is replaced by a note of its size.
    pub tool_result_bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { history_bytes: 64 * 1024, tool_result_bytes: 4 * 1024 }
    }
}

/// A prompt with the earlier conversation in front of the new request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flattened {
    pub prompt: String,
    /// Turns of the history included.
    pub kept_turns: usize,
    /// The oldest turns left out to fit the budget (the prompt says so too).
    pub cut_turns: usize,
}

/// The header of the flattened history; the new request follows the history under [`REQUEST_HEADER`].
pub const HISTORY_HEADER: &str =
    "The conversation so far (earlier turns, for context; continue from them — the new request is at the end):";
/// The header in front of the new request.
pub const REQUEST_HEADER: &str = "[user — new request]";

/// Write `history` then `request` as one prompt, within `budget`. With no history the prompt is
/// the request unchanged.
pub fn flatten(history: &[Turn], request: &str, budget: Budget) -> Flattened {
    if history.is_empty() {
        return Flattened { prompt: request.to_owned(), kept_turns: 0, cut_turns: 0 };
    }
    let rendered: Vec<String> = history.iter().map(|t| render(t, budget.tool_result_bytes)).collect();
    // Keep the newest turns that fit; a turn is kept whole or not at all.
    let mut used = 0usize;
    let mut first_kept = rendered.len();
    for (i, block) in rendered.iter().enumerate().rev() {
        if used + block.len() > budget.history_bytes {
            break;
        }
        used += block.len();
        first_kept = i;
    }
    let cut_turns = first_kept;
    let mut prompt = String::with_capacity(used + request.len() + 256);
    prompt.push_str(HISTORY_HEADER);
    prompt.push_str("\n\n");
    if cut_turns > 0 {
        let _ = writeln!(
            prompt,
            "[{cut_turns} earlier turn{} left out to keep this prompt under {} KiB]\n",
            if cut_turns == 1 { " was" } else { "s were" },
            budget.history_bytes / 1024
        );
    }
    for block in &rendered[first_kept..] {
        prompt.push_str(block);
    }
    prompt.push_str(REQUEST_HEADER);
    prompt.push('\n');
    prompt.push_str(request);
    Flattened { prompt, kept_turns: rendered.len() - first_kept, cut_turns }
}

/// One turn as labelled text, ending with a blank line.
fn render(turn: &Turn, tool_result_bytes: usize) -> String {
    let mut out = String::new();
    match turn {
        Turn::System(text) => {
            let _ = writeln!(out, "[system]\n{}", text.trim_end());
        }
        Turn::User(text) => {
            let _ = writeln!(out, "[user]\n{}", text.trim_end());
        }
        Turn::Assistant { text, tool_calls } => {
            out.push_str("[assistant]\n");
            if !text.trim().is_empty() {
                let _ = writeln!(out, "{}", text.trim_end());
            }
            for call in tool_calls {
                let _ = writeln!(out, "(called tool {} with {}, call id {})", call.name, call.arguments, call.id);
            }
        }
        Turn::ToolResult { call_id, tool, text, is_error } => {
            let status = if *is_error { "error" } else { "result" };
            let _ = writeln!(
                out,
                "[tool {status}: {tool}, call id {call_id}]\n{}",
                clip(text.trim_end(), tool_result_bytes)
            );
        }
    }
    out.push('\n');
    out
}

/// `text` cut to at most `limit` bytes at a character boundary, with a note of what was cut.
fn clip(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… [{} more bytes of this result left out]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn user(s: &str) -> Turn {
        Turn::User(s.into())
    }

    #[test]
    fn without_history_the_prompt_is_the_request_unchanged() {
        let f = flatten(&[], "  -fix it\n", Budget::default());
        assert_eq!(f, Flattened { prompt: "  -fix it\n".into(), kept_turns: 0, cut_turns: 0 });
    }

    #[test]
    fn history_is_labelled_and_the_request_comes_last_unchanged() {
        let history = vec![
            user("What is the weather in Paris?"),
            Turn::Assistant {
                text: "Getting weather...".into(),
                tool_calls: vec![ToolCall {
                    id: "call_abc".into(),
                    name: "get_weather".into(),
                    arguments: "{}".into(),
                }],
            },
            Turn::ToolResult {
                call_id: "call_abc".into(),
                tool: "get_weather".into(),
                text: "59°F, cloudy".into(),
                is_error: false,
            },
        ];
        let f = flatten(&history, "and tomorrow?", Budget::default());
        assert_eq!(
            f.prompt,
            format!(
                "{HISTORY_HEADER}\n\n[user]\nWhat is the weather in Paris?\n\n[assistant]\nGetting weather...\n\
                 (called tool get_weather with {{}}, call id call_abc)\n\n\
                 [tool result: get_weather, call id call_abc]\n59°F, cloudy\n\n{REQUEST_HEADER}\nand tomorrow?"
            )
        );
        assert_eq!((f.kept_turns, f.cut_turns), (3, 0));
    }

    #[test]
    fn the_oldest_turns_are_cut_and_the_prompt_says_so() {
        let history: Vec<Turn> = (0..100).map(|i| user(&format!("turn {i} {}", "x".repeat(100)))).collect();
        let budget = Budget { history_bytes: 2048, tool_result_bytes: 100 };
        let f = flatten(&history, "now", budget);
        assert!(f.cut_turns > 0 && f.kept_turns > 0);
        assert_eq!(f.cut_turns + f.kept_turns, 100);
        assert!(f.prompt.contains(&format!("[{} earlier turns were left out", f.cut_turns)), "{}", f.prompt);
        // The newest turn is kept, the oldest is not.
        assert!(f.prompt.contains("turn 99 "));
        assert!(!f.prompt.contains("turn 0 "));
        assert!(f.prompt.len() < 2048 + 300, "{}", f.prompt.len());
        assert!(f.prompt.ends_with("\nnow"));
    }

    #[test]
    fn a_long_tool_result_is_clipped_with_a_note() {
        let long = "é".repeat(100); // 200 bytes
        let history = vec![Turn::ToolResult { call_id: "c".into(), tool: "bash".into(), text: long, is_error: true }];
        let f = flatten(&history, "go", Budget { history_bytes: 4096, tool_result_bytes: 51 });
        assert!(f.prompt.contains("[tool error: bash, call id c]\n"));
        assert!(
            f.prompt.contains(&format!("{}\n… [150 more bytes of this result left out]", "é".repeat(25))),
            "{}",
            f.prompt
        );
    }
}
