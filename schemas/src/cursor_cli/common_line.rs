//! The commonest stream-json lines, read without the general parser: a thinking delta and the
//! end of a thinking block, exactly as the Cursor CLI writes them (every real capture writes
//! their keys in this order, compact). They are three of every four lines of a busy stream.
//!
//! A line is taken only when it is that exact text: its keys in that order and no others, no
//! whitespace but after the closing brace, strings without raw control characters (escapes are
//! decoded by serde_json, as the general parser decodes them) and an integer timestamp of at most
//! 18 digits. Anything else is left to [`super::line::Line`], which reads it as it reads every
//! line; on the lines taken here both reads agree (the engine's decoder tests compare them).

use std::borrow::Cow;

use crate::json_text::string_end;

/// A line of one of the commonest shapes.
#[derive(Debug, PartialEq, Eq)]
pub enum CommonLine<'a> {
    /// `{"type":"thinking","subtype":"delta","text":…,"session_id":…,"timestamp_ms":…}`
    ThinkingDelta { text: Cow<'a, str>, session_id: Cow<'a, str>, timestamp_ms: u64 },
    /// `{"type":"thinking","subtype":"completed","session_id":…,"timestamp_ms":…}`
    ThinkingCompleted { session_id: Cow<'a, str>, timestamp_ms: u64 },
}

const THINKING: &str = r#"{"type":"thinking","subtype":""#;

impl<'a> CommonLine<'a> {
    /// Read `text` when it is one of the commonest lines, exactly; `None` otherwise.
    pub fn read(text: &'a str) -> Option<CommonLine<'a>> {
        let mut r = Reader { text, at: 0 };
        r.lit(THINKING)?;
        if r.lit(r#"delta","text":"#).is_some() {
            let text = r.string()?;
            let (session_id, timestamp_ms) = r.session_and_time()?;
            return Some(CommonLine::ThinkingDelta { text, session_id, timestamp_ms });
        }
        r.lit(r#"completed","session_id":"#)?;
        let session_id = r.string()?;
        r.lit(r#","timestamp_ms":"#)?;
        let timestamp_ms = r.end_with_time()?;
        Some(CommonLine::ThinkingCompleted { session_id, timestamp_ms })
    }
}

/// A position in a line being read.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    /// Step over `lit`, when it comes next.
    fn lit(&mut self, lit: &str) -> Option<()> {
        let rest = self.text.get(self.at..)?;
        rest.starts_with(lit).then(|| self.at += lit.len())
    }

    /// `,"session_id":"…","timestamp_ms":N}` and the end of the line.
    fn session_and_time(&mut self) -> Option<(Cow<'a, str>, u64)> {
        self.lit(r#","session_id":"#)?;
        let session = self.string()?;
        self.lit(r#","timestamp_ms":"#)?;
        Some((session, self.end_with_time()?))
    }

    /// A JSON string: borrowed when it has no escape, decoded by serde_json when it has one.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        let (end, escaped) = string_end(self.text.as_bytes(), start)?;
        self.at = end + 1;
        let quoted = self.text.get(start..=end)?;
        if escaped {
            serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
        } else {
            quoted.get(1..quoted.len() - 1).map(Cow::Borrowed)
        }
    }

    /// `N}` then only whitespace: the timestamp, an integer of at most 18 digits without a
    /// leading zero (JSON has none; longer ones are left to the general parser's range checks).
    fn end_with_time(&mut self) -> Option<u64> {
        let rest = self.text.as_bytes().get(self.at..)?;
        let mut n: u64 = 0;
        let mut digits = 0;
        for &b in rest {
            if !b.is_ascii_digit() {
                break;
            }
            n = n * 10 + u64::from(b - b'0');
            digits += 1;
            if digits > 18 {
                return None;
            }
        }
        if digits == 0 || (digits > 1 && rest.first() == Some(&b'0')) {
            return None;
        }
        let (&brace, tail) = rest.get(digits..)?.split_first()?;
        (brace == b'}' && tail.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> Option<CommonLine<'_>> {
        CommonLine::read(text)
    }

    #[test]
    fn the_commonest_lines_are_read() {
        let l = r#"{"type":"thinking","subtype":"delta","text":"**Following","session_id":"e9316fe9","timestamp_ms":1790000000036}"#;
        assert_eq!(
            delta(l),
            Some(CommonLine::ThinkingDelta {
                text: Cow::Borrowed("**Following"),
                session_id: Cow::Borrowed("e9316fe9"),
                timestamp_ms: 1_790_000_000_036
            })
        );
        let l = r#"{"type":"thinking","subtype":"completed","session_id":"s","timestamp_ms":0}"#;
        assert_eq!(delta(l), Some(CommonLine::ThinkingCompleted { session_id: Cow::Borrowed("s"), timestamp_ms: 0 }));
    }

    #[test]
    fn escapes_are_decoded_as_json_decodes_them() {
        let l = r#"{"type":"thinking","subtype":"delta","text":"a\"b\\\n\u00e9\ud83d\ude00","session_id":"s\\","timestamp_ms":5} "#;
        let Some(CommonLine::ThinkingDelta { text, session_id, timestamp_ms }) = delta(l) else { panic!() };
        assert_eq!((text.as_ref(), session_id.as_ref(), timestamp_ms), ("a\"b\\\n\u{e9}\u{1f600}", "s\\", 5));
        assert!(matches!(text, Cow::Owned(_)));
    }

    #[test]
    fn anything_else_is_left_to_the_general_parser() {
        for l in [
            // Another order, another key, whitespace inside, a null, a string time.
            r#"{"subtype":"delta","type":"thinking","text":"a","session_id":"s","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5,"x":1}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s"}"#,
            r#"{"type": "thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"delta","text":null,"session_id":"s","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":"5"}"#,
            // Not JSON, or a number the general parser checks.
            "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"a\tb\",\"session_id\":\"s\",\"timestamp_ms\":5}",
            r#"{"type":"thinking","subtype":"delta","text":"a\x","session_id":"s","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":05}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":-5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5.0}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":1234567890123456789}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5}x"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5"#,
            r#"{"type":"thinking","subtype":"delta","text":"a\"#,
            r#"{"type":"thinking","subtype":"other","session_id":"s","timestamp_ms":5}"#,
        ] {
            assert_eq!(delta(l), None, "{l}");
        }
    }
}
