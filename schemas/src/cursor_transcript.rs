//! Cursor agent transcripts (SPEC §1.6): `~/.cursor/projects/<slug>/agent-transcripts/<uuid>/
//! <uuid>.jsonl` (a conversation) and `<uuid>/subagents/<child>.jsonl` (its subagents). Lines are
//! messages (`{"role", "message": {"content": [text | tool_use]}}`) and turn ends
//! (`{"type": "turn_ended", "status", "error"?}`); there are no ids, no times, no model, no usage
//! and usually no tool results. User text wraps the query in `<user_query>`, with a
//! minute-precision `<timestamp>` and attachment notes (`<image_files>`) around it;
//! [`UserText::parse`] takes them apart.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One transcript line.
#[derive(Clone, Debug, PartialEq)]
pub enum TranscriptLine {
    Message(Message),
    TurnEnded(TurnEnded),
    /// A line of another kind (kept and counted).
    Unknown(Value),
}

/// A user or assistant message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub message: MessageBody,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageBody {
    #[serde(default)]
    pub content: Vec<Block>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One content block.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        name: String,
        input: Value,
    },
    /// Any other block (an image, a tool result, …), kept.
    Other(Value),
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        Ok(match (s("type"), s("text"), s("name")) {
            (Some("text"), Some(text), _) => Block::Text { text: text.to_owned() },
            (Some("tool_use"), _, Some(name)) => {
                Block::ToolUse { name: name.to_owned(), input: v.get("input").cloned().unwrap_or(Value::Null) }
            }
            _ => Block::Other(v),
        })
    }
}

/// The end of a turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnEnded {
    /// `success` or `error`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TurnEnded {
    pub fn is_success(&self) -> bool {
        self.status.as_deref().is_none_or(|s| s == "success")
    }

    /// The error's text: a string, or an object's `message`, else its JSON.
    pub fn error_text(&self) -> Option<String> {
        match &self.error {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.get("message").and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_owned)),
        }
    }
}

/// Whether an object with these top-level keys (and `type` value) is a transcript line, for
/// format detection: a message has `role` and `message` at the top; a turn end is `type:
/// "turn_ended"`.
pub fn is_transcript_line(has_role: bool, has_message: bool, kind: Option<&str>) -> bool {
    (has_role && has_message && kind.is_none()) || kind == Some("turn_ended")
}

/// Decode one line.
pub fn parse_line(text: &str) -> Result<TranscriptLine, serde_json::Error> {
    let v: Value = serde_json::from_str(text)?;
    if v.get("type").and_then(Value::as_str) == Some("turn_ended") {
        return serde_json::from_value(v).map(TranscriptLine::TurnEnded);
    }
    if v.get("role").is_some() && v.get("message").is_some() {
        return serde_json::from_value(v).map(TranscriptLine::Message);
    }
    Ok(TranscriptLine::Unknown(v))
}

/// Cursor's placeholder for reasoning it does not write out.
pub const REDACTED: &str = "[REDACTED]";

/// A user message's text taken apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserText {
    /// What the user typed (`<user_query>`), or the whole text when it has no such tag.
    pub query: String,
    /// `<timestamp>` as written (`Tuesday, Jun 9, 2026, 8:54 AM (UTC-7)`).
    pub timestamp: Option<String>,
}

impl UserText {
    pub fn parse(text: &str) -> UserText {
        let tag = |name: &str| -> Option<&str> {
            let open = format!("<{name}>");
            let close = format!("</{name}>");
            let start = text.find(&open)? + open.len();
            let end = start + text[start..].find(&close)?;
            Some(text[start..end].trim())
        };
        UserText {
            query: tag("user_query").unwrap_or(text.trim()).to_owned(),
            timestamp: tag("timestamp").map(str::to_owned),
        }
    }

    /// The timestamp as unix ms (minute precision), when it reads as Cursor writes it.
    pub fn time_ms(&self) -> Option<u64> {
        self.timestamp.as_deref().and_then(parse_timestamp)
    }
}

/// `Tuesday, Jun 9, 2026, 8:54 AM (UTC-7)` (the offset may be `UTC+5:30` or absent = UTC) → unix ms.
pub fn parse_timestamp(s: &str) -> Option<u64> {
    let (main, zone) = match s.split_once('(') {
        Some((m, z)) => (m.trim(), Some(z.trim_end_matches(')').trim())),
        None => (s.trim(), None),
    };
    let parts: Vec<&str> = main.split(',').map(str::trim).collect();
    // [weekday,] "Jun 9", "2026", "8:54 AM"
    let parts = if parts.len() == 4 { &parts[1..] } else { &parts[..] };
    let [date, year, time] = parts else { return None };
    let (mon, day) = date.split_once(' ')?;
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let mon = MONTHS.iter().position(|m| mon.get(..3).is_some_and(|p| p.eq_ignore_ascii_case(m)))? as u64 + 1;
    let day: u64 = day.trim().parse().ok()?;
    let year: u64 = year.parse().ok()?;
    let (clock, ampm) = time.split_once(' ').unwrap_or((time, ""));
    let (h, m) = clock.split_once(':')?;
    let (mut h, m): (u64, u64) = (h.parse().ok()?, m.parse().ok()?);
    match ampm.to_ascii_uppercase().as_str() {
        "AM" if h == 12 => h = 0,
        "PM" if h < 12 => h += 12,
        "AM" | "PM" | "" => {}
        _ => return None,
    }
    if !(1..=12).contains(&mon) || !(1..=31).contains(&day) || h > 23 || m > 59 {
        return None;
    }
    let offset_min: i64 = match zone.and_then(|z| z.strip_prefix("UTC").or_else(|| z.strip_prefix("GMT"))) {
        None | Some("") => 0,
        Some(o) => {
            let (sign, rest) = match o.as_bytes().first()? {
                b'+' => (1, &o[1..]),
                b'-' => (-1, &o[1..]),
                _ => return None,
            };
            let (oh, om) = rest.split_once(':').unwrap_or((rest, "0"));
            sign * (oh.parse::<i64>().ok()? * 60 + om.parse::<i64>().ok()?)
        }
    };
    let iso = format!("{year:04}-{mon:02}-{day:02}T{h:02}:{m:02}:00Z");
    let utc = crate::iso_time::parse_ms(&iso)? as i64 - offset_min * 60_000;
    u64::try_from(utc).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_decode_by_kind() {
        let m = parse_line(r#"{"role":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"ReadFile","input":{"path":"/a"}},{"type":"image","x":1}]}}"#).unwrap();
        let TranscriptLine::Message(m) = m else { panic!() };
        assert_eq!(m.role, "assistant");
        assert_eq!(m.message.content[0], Block::Text { text: "hi".into() });
        assert_eq!(
            m.message.content[1],
            Block::ToolUse { name: "ReadFile".into(), input: serde_json::json!({"path": "/a"}) }
        );
        assert!(matches!(m.message.content[2], Block::Other(_)));
        let TranscriptLine::TurnEnded(t) =
            parse_line(r#"{"type":"turn_ended","status":"error","error":{"message":"boom"}}"#).unwrap()
        else {
            panic!()
        };
        assert!(!t.is_success());
        assert_eq!(t.error_text().as_deref(), Some("boom"));
        assert!(matches!(parse_line(r#"{"type":"other"}"#).unwrap(), TranscriptLine::Unknown(_)));
    }

    #[test]
    fn user_text_shows_the_query_and_keeps_the_time() {
        let u = UserText::parse(
            "[Image]\n<image_files>\n1. /a.png\n</image_files>\n<timestamp>Tuesday, Jun 9, 2026, 8:54 AM (UTC-7)</timestamp>\n<user_query>\nsay hi\n</user_query>",
        );
        assert_eq!(u.query, "say hi");
        // 8:54 at UTC-7 is 15:54 UTC (the hook log of the same session: 15:54:06Z).
        assert_eq!(u.time_ms(), crate::iso_time::parse_ms("2026-06-09T15:54:00Z"));
        assert_eq!(UserText::parse("plain").query, "plain");
        assert_eq!(
            parse_timestamp("Monday, Aug 24, 2026, 3:01 PM (UTC-5)"),
            crate::iso_time::parse_ms("2026-08-24T20:01:00Z")
        );
        assert_eq!(
            parse_timestamp("Jun 9, 2026, 12:05 AM (UTC+5:30)"),
            crate::iso_time::parse_ms("2026-06-08T18:35:00Z")
        );
        assert_eq!(parse_timestamp("not a time"), None);
    }
}
