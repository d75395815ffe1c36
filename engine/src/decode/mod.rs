//! Decoding: NDJSON framing, per-file format detection (Cursor CLI `stream-json`, the
//! `@cursor/sdk` recording format, an exec recording of the agent backend's messages, a Cursor
//! hook log, or a Cursor agent transcript) and decoding of each line into canonical input events.
//! A bad line becomes a [`DecodeError`] with its line number and byte offset; decoding goes on.

pub mod cli;
pub mod exec;
pub mod framing;
pub mod hooks;
pub mod sdk;
pub mod transcript;

use std::sync::Arc;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use toolstream_schemas::{InputEvent, RawJson, SourcePos, UnknownFields};

use self::framing::Frame;

/// The line formats toolstream reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Cursor CLI `--output-format stream-json`.
    CursorCli,
    /// toolstream's `@cursor/sdk` recording format (`{"at_ms":…,"delta"|"step"|"wait"|"start":…}`).
    CursorSdk,
    /// The agent backend's exec protocol in proto3-JSON (`{"interactionUpdate"|"execServerMessage"|…}`).
    CursorExec,
    /// Cursor hook payloads, one a line: bare, in toolstream's spool records or in a recorder's
    /// envelope (SPEC §1.5).
    CursorHooks,
    /// A Cursor agent transcript (`agent-transcripts/<id>/<id>.jsonl`, SPEC §1.6).
    CursorTranscript,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::CursorCli => "cursor-cli",
            Format::CursorSdk => "cursor-sdk",
            Format::CursorExec => "cursor-exec",
            Format::CursorHooks => "cursor-hooks",
            Format::CursorTranscript => "cursor-transcript",
        }
    }
}

/// A line that could not be decoded (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line_no}: {reason} (byte offset {byte_offset})")]
pub struct DecodeError {
    pub source_name: Arc<str>,
    pub line_no: u64,
    pub byte_offset: u64,
    pub reason: String,
}

/// Decodes the lines of one source.
#[derive(Debug)]
pub struct Decoder {
    source_name: Arc<str>,
    format: Option<Format>,
    /// The format was named by the user (`--format`), not detected.
    forced: bool,
    cli: cli::CliDecoder,
    sdk: sdk::SdkDecoder,
    exec: exec::ExecDecoder,
    hooks: hooks::HookDecoder,
    /// Created at the first transcript line (it needs the source's name).
    transcript: Option<transcript::TranscriptDecoder>,
    /// The hook decoder's output before its turn tags are dropped.
    tagged: Vec<hooks::Tagged>,
    max_line: usize,
}

impl Decoder {
    /// A decoder for one source; `format: None` detects the format from the first decodable line.
    pub fn new(source_name: impl Into<Arc<str>>, format: Option<Format>) -> Self {
        Decoder {
            source_name: source_name.into(),
            format,
            forced: format.is_some(),
            cli: cli::CliDecoder::default(),
            sdk: sdk::SdkDecoder::default(),
            exec: exec::ExecDecoder::default(),
            hooks: hooks::HookDecoder::default(),
            transcript: None,
            tagged: Vec::new(),
            max_line: framing::DEFAULT_MAX_LINE_BYTES,
        }
    }

    /// Tell the decoder the framing bound (used in the "line too long" message).
    pub fn set_max_line(&mut self, max: usize) {
        self.max_line = max;
    }

    pub fn source_name(&self) -> &Arc<str> {
        &self.source_name
    }

    /// The detected (or forced) format, once known.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// What was read and counted but not shown, so far: SDK updates of the types SPEC §1.2 says
    /// to ignore, hook events outside any turn and recorder lines without a payload, transcript
    /// placeholders and unknown lines.
    pub fn ignored_updates(&self) -> u64 {
        let h = self.hooks.counts();
        let t = self.transcript.as_ref().map_or(0, transcript::TranscriptDecoder::ignored);
        self.sdk.ignored() + h.ignored + h.not_hooks + t
    }

    /// The end of the source: a format whose runs end only with an event of their own (a hook
    /// turn's `stop`, a transcript's `turn_ended`) closes the runs still open, as incomplete.
    pub fn finish(&mut self, out: &mut Vec<InputEvent>) {
        match self.format {
            Some(Format::CursorHooks) => {
                self.hooks.finish(&mut self.tagged);
                out.extend(self.tagged.drain(..).map(|t| t.event));
            }
            Some(Format::CursorTranscript) => {
                if let Some(t) = &mut self.transcript {
                    t.finish(transcript::modified_ms(&self.source_name), out);
                }
            }
            _ => {}
        }
    }

    /// Decode one frame, appending events to `out`. Blank lines decode to nothing.
    pub fn decode_frame(&mut self, frame: Frame<'_>, out: &mut Vec<InputEvent>) -> Result<(), DecodeError> {
        match frame {
            Frame::TooLong { line_no, offset, len } => Err(self.error(
                line_no,
                offset,
                format!("line too long: {len} bytes exceeds the {} byte limit; skipped", self.max_line),
            )),
            Frame::Line { line_no, offset, bytes } => {
                let pos = SourcePos { line: line_no, offset };
                let text = line_text(bytes).map_err(|e| {
                    self.error(line_no, offset, format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()))
                })?;
                if text.trim().is_empty() {
                    return Ok(());
                }
                // JavaScript writers put lone UTF-16 surrogates in strings as escapes (`\ud800`),
                // which serde_json refuses. They become U+FFFD before any field is read, for every
                // string of every format: a decoder that falls back on a field it cannot read would
                // otherwise lose that text without a word.
                let repaired = if has_surrogate_escape(text) { replace_lone_surrogates(text) } else { None };
                let text = repaired.as_deref().unwrap_or(text);
                let mark = out.len();
                self.decode_text(text, pos, out).map_err(|reason| {
                    out.truncate(mark);
                    self.error(line_no, offset, reason)
                })
            }
        }
    }

    fn decode_text(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        let format = match self.format {
            Some(f) if self.forced => {
                // A forced format never silently swallows lines of the other one.
                if let Ok(seen) = detect(text) {
                    if seen != f {
                        return Err(format!(
                            "a {} line, not {} (--format {}): drop --format or name the right one",
                            seen.as_str(),
                            f.as_str(),
                            f.as_str()
                        ));
                    }
                }
                f
            }
            Some(f) => f,
            None => {
                let f = detect(text)?;
                tracing::debug!(source = %self.source_name, format = f.as_str(), "format detected");
                self.format = Some(f);
                f
            }
        };
        match format {
            Format::CursorCli => self.cli.decode(text, pos, out),
            Format::CursorSdk => self.sdk.decode(text, pos, out),
            Format::CursorExec => self.exec.decode(text, pos, out),
            Format::CursorHooks => {
                let r = self.hooks.decode_line(text, pos, &mut self.tagged);
                out.extend(self.tagged.drain(..).map(|t| t.event));
                r
            }
            Format::CursorTranscript => {
                let name = &self.source_name;
                self.transcript.get_or_insert_with(|| transcript::TranscriptDecoder::new(name)).decode(text, pos, out)
            }
        }
    }

    fn error(&self, line_no: u64, byte_offset: u64, reason: String) -> DecodeError {
        DecodeError { source_name: self.source_name.clone(), line_no, byte_offset, reason }
    }
}

/// Decide the format from one line: CLI lines have a `type`; SDK records have one of
/// `delta|step|wait|start` (or only `at_ms`); exec records have one of the message fields of
/// `cursor_exec::RECORD_KEYS` (and no `type`, `delta`, …); hook lines have `hook_event_name` or
/// a recorder envelope's keys; transcript lines a top-level `role` and `message`, or `type:
/// "turn_ended"` (a type no CLI line has). The sets of keys are disjoint, so one line is never
/// ambiguous.
fn detect(text: &str) -> Result<Format, String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(flatten)]
        rest: std::collections::HashMap<String, IgnoredAny>,
        #[serde(rename = "type")]
        kind: Option<serde_json::Value>,
        at_ms: Option<IgnoredAny>,
        delta: Option<IgnoredAny>,
        step: Option<IgnoredAny>,
        wait: Option<IgnoredAny>,
        start: Option<IgnoredAny>,
    }
    let p: Probe = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let exec = p.rest.keys().any(|k| toolstream_schemas::cursor_exec::RECORD_KEYS.contains(&k.as_str()));
    let kind = p.kind.as_ref().map(|k| k.as_str().unwrap_or(""));
    let transcript = toolstream_schemas::cursor_transcript::is_transcript_line(
        p.rest.contains_key("role"),
        p.rest.contains_key("message"),
        kind,
    );
    if transcript {
        Ok(Format::CursorTranscript)
    } else if p.kind.is_some() {
        Ok(Format::CursorCli)
    } else if p.delta.is_some() || p.step.is_some() || p.wait.is_some() || p.start.is_some() {
        Ok(Format::CursorSdk)
    } else if exec {
        Ok(Format::CursorExec)
    } else if p.at_ms.is_some() {
        Ok(Format::CursorSdk)
    } else if toolstream_schemas::cursor_hooks::is_hook_line_keys(p.rest.keys().map(String::as_str)) {
        Ok(Format::CursorHooks)
    } else {
        Err("unrecognised line: not a stream-json line (no `type`), an SDK record, an exec message, a hook payload or a transcript line".into())
    }
}

/// A JSON object of the given fields, verbatim.
pub(crate) fn raw_object(fields: &UnknownFields) -> Result<RawJson, String> {
    let mut s = String::from("{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&serde_json::to_string(k).map_err(|e| e.to_string())?);
        s.push(':');
        s.push_str(v.get());
    }
    s.push('}');
    RawValue::from_string(s).map_err(|e| e.to_string())
}

/// A line's bytes as text, if they are UTF-8: checked with SIMD (std's check is a byte loop
/// with an ASCII fast path); the error says where the valid text ends, as std's does. The bench
/// floor checks its lines with this too.
pub fn line_text(bytes: &[u8]) -> Result<&str, simdutf8::compat::Utf8Error> {
    simdutf8::compat::from_utf8(bytes)
}

/// Whether `text` has a `\uD800`–`\uDFFF` escape (only then is a surrogate repair worth trying).
/// Asked of every line.
fn has_surrogate_escape(text: &str) -> bool {
    // Most lines have no backslash at all: one memchr, no searcher to set up per line.
    let b = text.as_bytes();
    memchr::memchr_iter(b'\\', b).any(|i| {
        b.get(i + 1) == Some(&b'u')
            && matches!(b.get(i + 2), Some(b'd' | b'D'))
            && matches!(b.get(i + 3), Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'))
    })
}

/// `text` with every `\uXXXX` escape of an unpaired UTF-16 surrogate replaced by `\uFFFD`, or
/// `None` when it has none.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = 0;
    let hex = |at: usize| -> Option<u16> {
        let s = text.get(at..at + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    while i + 1 < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            i += 2; // any other escape, including `\\`
            continue;
        }
        let Some(u) = hex(i + 2) else {
            i += 2;
            continue;
        };
        let is_high = (0xD800..0xDC00).contains(&u);
        let is_low = (0xDC00..0xE000).contains(&u);
        let paired = is_high
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex(i + 8).is_some_and(|l| (0xDC00..0xE000).contains(&l));
        if paired {
            i += 12;
        } else if is_high || is_low {
            out.push_str(&text[last..i]);
            out.push_str("\\uFFFD");
            i += 6;
            last = i;
        } else {
            i += 6;
        }
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_chars() {
        let fixed = |s: &str| replace_lone_surrogates(s);
        assert_eq!(fixed(r#"{"t":"a\ud800b"}"#).as_deref(), Some(r#"{"t":"a\uFFFDb"}"#));
        assert_eq!(fixed(r#"{"t":"\udc00"}"#).as_deref(), Some(r#"{"t":"\uFFFD"}"#));
        assert_eq!(fixed(r#"{"t":"\ud800\ud800\udc00"}"#).as_deref(), Some(r#"{"t":"\uFFFD\ud800\udc00"}"#));
        assert_eq!(fixed(r#"{"t":"\ud83d\ude00"}"#), None, "a pair is a character");
        assert_eq!(fixed(r#"{"t":"\\ud800"}"#), None, "an escaped backslash, then text");
    }

    /// Every place a line carries text, `@` standing for the text.
    const TEXT_PLACES: &[&str] = &[
        r#"{"type":"system","subtype":"init","cwd":"/w/@","session_id":"s","model":"M@"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"@"}]},"session_id":"s"}"#,
        r#"{"type":"thinking","subtype":"delta","text":"@","session_id":"s","timestamp_ms":1}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"@"}]},"session_id":"s","timestamp_ms":2}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"@"}]},"session_id":"s","model_call_id":"m"}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"@"}]},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"started","call_id":"c@","tool_call":{"shellToolCall":{"args":{"command":"echo @"}}},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"x"},"result":{"success":{"stdout":"@","exitCode":0}}}},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"x"},"result":{"failure":{"stderr":"@","exitCode":1}}}},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"readToolCall":{"args":{"path":"/w/@"},"result":{"success":{"content":"@"}}}},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"mcpToolCall":{"args":{"toolName":"t@","args":{"q":"@"}},"result":{"success":{"content":[{"text":{"text":"@"}}]}}}},"session_id":"s"}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"editToolCall":{"args":{"path":"p"},"result":{"rejected":{"reason":"@"}}}},"session_id":"s"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"@","session_id":"s"}"#,
        r#"{"type":"result","subtype":"error","is_error":true,"result":"@","session_id":"s"}"#,
        r#"{"type":"system","subtype":"task_notification","task_id":"t","status":"done","title":"@","session_id":"s"}"#,
        r#"{"type":"thinking","subtype":"completed","unknown":"@","session_id":"s"}"#,
        r#"{"type":"thinking","subtype":"delta","text":"x","session_id":"s@"}"#,
        r#"{"at_ms":1,"start":{"session_id":"s","cwd":"/w","model":"m","prompt":"@"}}"#,
        r#"{"at_ms":1,"delta":{"type":"text-delta","text":"@"}}"#,
        r#"{"at_ms":1,"delta":{"type":"tool-call-completed","callId":"c","toolCall":{"type":"shell","args":{"command":"@"},"result":{"status":"success","value":{"stdout":"@"}}}}}"#,
        r#"{"atMs":1,"interactionUpdate":{"textDelta":{"text":"@"}}}"#,
        r#"{"atMs":1,"execClientMessage":{"id":1,"execId":"e","shellResult":{"success":{"command":"x","exitCode":0,"stdout":"@","stderr":""}}}}"#,
    ];

    /// The events of `line` (as Debug), decoded after a line of the same format (`place` with
    /// plain text), as in a stream: the format is known by then.
    fn decoded(place: &str, text: &str) -> String {
        let mut d = Decoder::new("t", None);
        let mut out = Vec::new();
        let plain = place.replace('@', "plain");
        d.decode_frame(Frame::Line { line_no: 1, offset: 0, bytes: plain.as_bytes() }, &mut out).unwrap();
        out.clear();
        let line = place.replace('@', text);
        let frame = Frame::Line { line_no: 2, offset: 0, bytes: line.as_bytes() };
        d.decode_frame(frame, &mut out).unwrap_or_else(|e| panic!("{line}: {e}"));
        format!("{out:?}")
    }

    #[test]
    fn a_lone_surrogate_is_a_replacement_character_in_every_place_a_line_carries_text() {
        for place in TEXT_PLACES {
            let lone = decoded(place, r"a\ud800b");
            let replaced = decoded(place, r"a\uFFFDb");
            assert_eq!(lone, replaced, "{place}");
            assert!(lone.contains('\u{fffd}') || lone.contains(r"\uFFFD"), "{place}: the text is there: {lone}");
            // A lone low surrogate is replaced too; a pair is one character, untouched.
            assert_eq!(decoded(place, r"a\udc00b"), replaced, "{place}");
            let pair = decoded(place, r"a\ud83d\ude00b");
            assert!(pair.contains('😀') || pair.contains(r"\ud83d\ude00"), "{place}: {pair}");
        }
    }

    #[test]
    fn detects_formats() {
        assert_eq!(detect(r#"{"type":"system"}"#), Ok(Format::CursorCli));
        assert_eq!(detect(r#"{"at_ms":1,"delta":{}}"#), Ok(Format::CursorSdk));
        assert_eq!(detect(r#"{"at_ms":1,"execServerMessage":{}}"#), Ok(Format::CursorExec));
        assert_eq!(detect(r#"{"interaction_update":{}}"#), Ok(Format::CursorExec));
        assert_eq!(detect(r#"{"hook_event_name":"stop"}"#), Ok(Format::CursorHooks));
        assert_eq!(detect(r#"{"received_ms":1,"payload":{}}"#), Ok(Format::CursorHooks));
        assert_eq!(detect(r#"{"ts":"x","evt":"stop","payload":{}}"#), Ok(Format::CursorHooks));
        assert_eq!(detect(r#"{"event":{"native":{}},"recordedAt":"x"}"#), Ok(Format::CursorHooks));
        assert_eq!(detect(r#"{"role":"user","message":{"content":[]}}"#), Ok(Format::CursorTranscript));
        assert_eq!(detect(r#"{"type":"turn_ended","status":"success"}"#), Ok(Format::CursorTranscript));
        assert_eq!(detect(r#"{"type":"user","message":{"content":[]}}"#), Ok(Format::CursorCli));
        assert!(detect(r#"{"x":1}"#).is_err());
        assert!(detect("not json").is_err());
    }
}
