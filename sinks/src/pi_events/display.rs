//! How Cursor's tool calls reach pi (seed 000's opt-outs): as replay tool calls of the tool the
//! card names, as the neutral `cursor` card, or — when pi has no replay tool for it — as a
//! thinking trace, so that `pi -p` and session consumers still see what Cursor did.
//!
//! The pi extension decides which replay tools it has (it registered them, and knows when another
//! extension owns a name) and sends that in its request; this module applies it to each card.

use std::collections::BTreeSet;

use serde::Deserialize;
use toolstream_schemas::Card;

/// The neutral replay tool.
pub use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL as NEUTRAL_TOOL;

/// The replay tools pi has, as the extension reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDisplay {
    /// The replay tools registered and owned by the extension; `None`: every card's tool.
    #[serde(default)]
    pub tools: Option<BTreeSet<String>>,
    /// A card whose native tool is missing shows as the neutral `cursor` card when that is
    /// there (`PI_CURSOR_REGISTER_NATIVE_TOOLS=0`), instead of as a trace.
    #[serde(default)]
    pub native_as_neutral: bool,
}

/// How one card is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// A tool call of the card's own pi tool.
    Tool,
    /// A tool call of the neutral `cursor` tool.
    Neutral,
    /// A thinking trace: `<title> <summary>` then the body.
    Trace,
}

impl ToolDisplay {
    /// Every card as its own tool (pi session files, and a request that says nothing).
    pub fn all() -> Self {
        ToolDisplay::default()
    }

    pub fn shown(&self, pi_tool: &str) -> Shown {
        let Some(tools) = &self.tools else { return Shown::Tool };
        if tools.contains(pi_tool) {
            Shown::Tool
        } else if pi_tool != NEUTRAL_TOOL && self.native_as_neutral && tools.contains(NEUTRAL_TOOL) {
            Shown::Neutral
        } else {
            Shown::Trace
        }
    }
}

/// A card as a thinking trace: `<title> <summary>`, then the (scrubbed, bounded) text pi's model
/// would have read as its result, ending with a blank line.
pub fn trace_text(card: &Card) -> String {
    let mut head = card.title.to_string();
    let summary = card.summary.trim();
    if !summary.is_empty() {
        head.push(' ');
        head.push_str(summary);
    }
    if card.is_error {
        head.push_str(" (error)");
    }
    let body = card.result_text.trim_end();
    if body.is_empty() {
        format!("{head}\n\n")
    } else {
        format!("{head}\n{body}\n\n")
    }
}

/// The neutral card's arguments for a card of a native tool.
pub fn neutral_args(card: &Card) -> serde_json::Value {
    serde_json::json!({ "activityTitle": card.title, "activitySummary": card.summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn display(tools: &[&str], neutral: bool) -> ToolDisplay {
        ToolDisplay { tools: Some(tools.iter().map(|s| s.to_string()).collect()), native_as_neutral: neutral }
    }

    #[test]
    fn each_card_is_shown_by_what_pi_has() {
        assert_eq!(ToolDisplay::all().shown("read"), Shown::Tool);
        // PI_CURSOR_NATIVE_TOOL_DISPLAY=0: no replay tools at all.
        let none = display(&[], false);
        assert_eq!((none.shown("read"), none.shown("cursor")), (Shown::Trace, Shown::Trace));
        // PI_CURSOR_REGISTER_NATIVE_TOOLS=0: the neutral card only.
        let neutral = display(&["cursor"], true);
        assert_eq!((neutral.shown("bash"), neutral.shown("cursor")), (Shown::Neutral, Shown::Tool));
        // `read` owned by another extension: its activity falls back to the trace.
        let conflict = display(&["cursor", "bash"], false);
        assert_eq!((conflict.shown("read"), conflict.shown("bash")), (Shown::Trace, Shown::Tool));
    }

    #[test]
    fn the_request_names_the_tools() {
        let d: ToolDisplay = serde_json::from_str(r#"{"tools":["cursor"],"nativeAsNeutral":true}"#).unwrap_or_default();
        assert_eq!(d, display(&["cursor"], true));
        let d: ToolDisplay = serde_json::from_str("{}").unwrap_or(display(&[], false));
        assert_eq!(d, ToolDisplay::all());
    }
}
