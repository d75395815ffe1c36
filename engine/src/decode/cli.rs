//! Decoding of Cursor CLI `stream-json` lines (SPEC §1.1) into canonical input events.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use toolstream_schemas::cursor_cli::common_line::CommonLine;
use toolstream_schemas::cursor_cli::line::{
    ArmedResult, ContentBlock, Line, MessageBody, ResultObject, Str, TextMessage, ToolCallObject,
};
use toolstream_schemas::cursor_cli::tool_models::RESULT_SIBLING_KEYS;
use toolstream_schemas::{
    CallArgs, CallIdent, Delta, Input, InputEvent, Int, ResultStatus, RunEnd, RunStart, RunStatus, SegmentKind,
    SourcePos, TokenUsage, Tool, ToolEvent, ToolKind, ToolResult, UnknownFields,
};

use super::raw_object;

/// Most session ids kept interned (an id leaves when its run ends); past it the table starts
/// over.
const INTERNED_MAX: usize = 4_096;
/// Longer ids are not interned (a session id is a UUID; a line may be megabytes long, and the
/// table must stay small).
const INTERNED_MAX_LEN: usize = 128;

/// Decodes stream-json lines; interns session ids so the lines of a session share one `Arc`
/// (a busy stream interleaves many sessions: without it every line allocated its id).
#[derive(Debug, Default)]
pub struct CliDecoder {
    sessions: rustc_hash::FxHashSet<Arc<str>>,
}

impl CliDecoder {
    /// Decode one line (already known to be valid UTF-8 and non-blank) into `out`.
    pub fn decode(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        // Three lines of four are thinking deltas, in the one shape the CLI writes them: read
        // without the general parser, into the events it would make of them.
        if let Some(line) = CommonLine::read(text) {
            self.decode_common(line, pos, out);
            return Ok(());
        }
        self.decode_general(text, pos, out)
    }

    /// Decode any line with the general parser.
    fn decode_general(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        // A tool call and a message are read in the line's own pass (each is scanned once, not
        // twice or three times); a line whose `tool_call` or `message` that pass refuses is read
        // as it always was, both raw, and decodes (or fails) exactly as before.
        let mut line = Line::<Box<ToolCallObject<ArmedResult>>, TextMessage>::default();
        match Line::parse_into(text, &mut line) {
            Ok(()) => self.decode_line(&mut line, text, pos, out),
            Err(_) => {
                let mut line = Line::parse(text).map_err(|e| e.to_string())?;
                self.decode_line(&mut line, text, pos, out)
            }
        }
    }

    fn decode_common(&mut self, line: CommonLine<'_>, pos: SourcePos, out: &mut Vec<InputEvent>) {
        let (session, timestamp_ms, kind) = match line {
            CommonLine::ThinkingDelta { text, session_id, timestamp_ms } => {
                (session_id, timestamp_ms, Input::ThinkingDelta { text: Delta::from(text.as_ref()) })
            }
            CommonLine::ThinkingCompleted { session_id, timestamp_ms } => {
                (session_id, timestamp_ms, Input::ThinkingCompleted { duration_ms: None })
            }
        };
        out.push(InputEvent { session: self.intern(&session), at_ms: Some(timestamp_ms), pos, kind });
    }

    fn decode_line<'a, T: ToolCallField<'a>, M: MessageField<'a>>(
        &mut self,
        line: &mut Line<'a, T, M>,
        text: &str,
        pos: SourcePos,
        out: &mut Vec<InputEvent>,
    ) -> Result<(), String> {
        let session = self.intern(line.session_id.as_deref().unwrap_or(""));
        let at_ms = line.timestamp_ms.and_then(Int::as_u64);
        let mut push = |kind: Input| out.push(InputEvent { session: session.clone(), at_ms, pos, kind });
        let sub = line.subtype.as_deref().unwrap_or("");

        match (line.kind.as_ref(), sub) {
            ("system", "init") => {
                // Unknown init fields travel inside RunStart.
                push(Input::RunStarted(Box::new(RunStart {
                    cwd: rest_str(line, "cwd"),
                    model: rest_str(line, "model"),
                    prompt: None,
                    context: None,
                    extra: unknown(line, &["cwd", "model", "apiKeySource", "permissionMode"]),
                })));
                return Ok(());
            }
            ("user", _) => {
                let text = message_text(line.message.take())?;
                push(Input::UserPrompt { text });
            }
            ("thinking", "delta") => push(Input::ThinkingDelta { text: line.text.as_deref().unwrap_or("").into() }),
            ("thinking", "completed") => push(Input::ThinkingCompleted { duration_ms: None }),
            ("assistant", _) => {
                let body = match line.message.take() {
                    Some(m) => m.into_body().map_err(|e| format!("assistant message: {e}"))?,
                    None => return Err("assistant line without `message`".into()),
                };
                for block in body.content {
                    match block {
                        ContentBlock::Text(t) => {
                            push(if line.model_call_id.is_some() {
                                Input::TextSegment { kind: SegmentKind::Consolidated, text: t.into_owned() }
                            } else if line.timestamp_ms.is_some() {
                                Input::TextDelta { text: Delta::from(t) }
                            } else {
                                Input::TextSegment { kind: SegmentKind::Final, text: t.into_owned() }
                            });
                        }
                        ContentBlock::Other(raw) => {
                            push(Input::Raw { what: "assistant/content".into(), value: raw.to_owned() })
                        }
                    }
                }
            }
            ("tool_call", "started" | "completed") => {
                let Some(tc) = line.tool_call.take() else {
                    return Err("tool_call line without `tool_call`".into());
                };
                let ev = tool_event(line, tc.into_object()?)?;
                push(match sub {
                    "started" => Input::ToolStarted(Box::new(ev)),
                    _ => Input::ToolCompleted(Box::new(ev)),
                });
            }
            ("result", _) => {
                // Unknown result fields travel inside RunEnd.
                let known = ["duration_ms", "duration_api_ms", "is_error", "result", "request_id", "usage"];
                push(Input::RunEnded(Box::new(run_end(line, sub, &known)?)));
                // The run is over: its id leaves the table, which then holds the sessions still
                // running (a busy stream's few dozen) instead of thousands that ended, and stays
                // in cache. A later run of the same session is interned anew.
                self.sessions.remove(&*session);
                return Ok(());
            }
            (kind, sub) => {
                // Unknown or pass-through lines (interaction_query, task_notification, …): whole line, raw.
                let what = if sub.is_empty() { kind.to_owned() } else { format!("{kind}/{sub}") };
                let value = RawValue::from_string(text.to_owned()).map_err(|e| e.to_string())?;
                push(Input::Raw { what, value });
                return Ok(());
            }
        }
        // Keys the line type does not define are carried through as unknown fields.
        let extra = unknown(line, &[]);
        if !extra.is_empty() {
            let what = format!("unknown-fields:{}", line.kind);
            push(Input::Raw { what, value: raw_object(&extra)? });
        }
        Ok(())
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if s.len() > INTERNED_MAX_LEN {
            return Arc::from(s);
        }
        if let Some(a) = self.sessions.get(s) {
            return a.clone();
        }
        if self.sessions.len() >= INTERNED_MAX {
            self.sessions.clear();
        }
        let a: Arc<str> = Arc::from(s);
        self.sessions.insert(a.clone());
        a
    }
}

/// How a line's `tool_call` was read: raw, or already as its object.
trait ToolCallField<'a> {
    /// How the object's result is read.
    type Result: ResultRead<'a>;
    fn into_object(self) -> Result<ToolCallObject<'a, Self::Result>, String>;
}

impl<'a> ToolCallField<'a> for &'a RawValue {
    type Result = &'a RawValue;
    fn into_object(self) -> Result<ToolCallObject<'a>, String> {
        ToolCallObject::parse(self).map_err(|e| format!("tool_call: {e}"))
    }
}

impl<'a> ToolCallField<'a> for Box<ToolCallObject<'a, ArmedResult<'a>>> {
    type Result = ArmedResult<'a>;
    fn into_object(self) -> Result<ToolCallObject<'a, ArmedResult<'a>>, String> {
        Ok(*self)
    }
}

/// How a tool payload's result was read: raw, or already as its arm and siblings.
trait ResultRead<'a> {
    fn into_result(self) -> Result<ToolResult, serde_json::Error>;
}

impl<'a> ResultRead<'a> for &'a RawValue {
    fn into_result(self) -> Result<ToolResult, serde_json::Error> {
        Ok(match ResultObject::parse(self)?.armed() {
            Ok(armed) => armed_result(armed),
            Err(r) => {
                ToolResult::with_extra(ResultStatus::Other("unknown".into()), self.to_owned(), sibling_keys(&r.rest))
            }
        })
    }
}

impl<'a> ResultRead<'a> for ArmedResult<'a> {
    fn into_result(self) -> Result<ToolResult, serde_json::Error> {
        Ok(armed_result(self))
    }
}

/// How a line's `message` was read: raw, or already as its text blocks.
trait MessageField<'a> {
    fn into_body(self) -> Result<MessageBody<'a>, serde_json::Error>;
}

impl<'a> MessageField<'a> for &'a RawValue {
    fn into_body(self) -> Result<MessageBody<'a>, serde_json::Error> {
        MessageBody::parse(self)
    }
}

impl<'a> MessageField<'a> for TextMessage<'a> {
    fn into_body(self) -> Result<MessageBody<'a>, serde_json::Error> {
        Ok(TextMessage::into_body(self))
    }
}

fn rest_str<T, M>(line: &Line<'_, T, M>, key: &str) -> Option<String> {
    let raw = line.rest_get(key)?;
    serde_json::from_str::<Option<String>>(raw.get()).ok().flatten()
}

fn unknown<T, M>(line: &Line<'_, T, M>, known: &[&str]) -> UnknownFields {
    line.rest
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_ref()))
        .map(|(k, v)| (k.to_string(), (*v).to_owned()))
        .collect()
}

fn message_text<'a>(message: Option<impl MessageField<'a>>) -> Result<String, String> {
    let Some(m) = message else {
        return Ok(String::new());
    };
    let body = m.into_body().map_err(|e| format!("user message: {e}"))?;
    let mut text = String::new();
    for block in body.content {
        if let ContentBlock::Text(t) = block {
            text.push_str(&t);
        }
    }
    Ok(text)
}

fn tool_event<'a, T, M, R: ResultRead<'a>>(
    line: &Line<'a, T, M>,
    tc: ToolCallObject<'a, R>,
) -> Result<ToolEvent, String> {
    let (Some(key), Some(payload)) = (tc.key, tc.payload) else {
        return Err("tool_call has no `<name>ToolCall` key".into());
    };
    let mut tool = Tool::from_cli_key(&key);
    if tool == Tool::Known(ToolKind::Mcp) {
        tool = tool.reclassified_for_mcp(mcp_tool_name(payload.args).as_deref());
    }
    let result = match payload.result {
        Some(r) => Some(r.into_result().map_err(|e| format!("{key}.result: {e}"))?),
        None => None,
    };
    let call_id = line.call_id.as_deref().or(tc.tool_call_id.as_deref()).unwrap_or("").to_owned();
    // Metadata SPEC §1.1 rule 3 names is known, not unknown; everything else is kept.
    let mut extra: UnknownFields = tc
        .rest
        .iter()
        .filter(|(k, _)| !KNOWN_TOOL_CALL_METADATA.contains(&k.as_ref()))
        .map(|(k, v)| (k.to_string(), (*v).to_owned()))
        .collect();
    extra.extend(
        payload.rest.iter().filter(|(k, _)| k != "description").map(|(k, v)| (format!("{key}.{k}"), (*v).to_owned())),
    );
    Ok(ToolEvent {
        call_id,
        tool,
        wire_name: key.into_owned(),
        args: payload.args.map(|a| Arc::new(CallArgs::new(a.to_owned()))),
        result,
        model_call_id: line.model_call_id.as_deref().map(str::to_owned),
        started_at_ms: tc.started_at_ms.and_then(Int::as_u64),
        completed_at_ms: tc.completed_at_ms.and_then(Int::as_u64),
        openai_call: None,
        reported_call_id: None,
        call: CallIdent::default(),
        extra,
    })
}

/// `args.toolName` (or `tool_name`) of an MCP call, for web search/fetch reclassification.
fn mcp_tool_name(args: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct McpName<'a> {
        #[serde(rename = "toolName", borrow)]
        tool_name_camel: Option<Str<'a>>,
        #[serde(rename = "tool_name", borrow)]
        tool_name_snake: Option<Str<'a>>,
    }
    let parsed: McpName<'_> = serde_json::from_str(args?.get()).ok()?;
    parsed.tool_name_camel.or(parsed.tool_name_snake).map(Str::into_owned)
}

/// `tool_call` siblings of the `<x>ToolCall` key that are known metadata (SPEC §1.1 rule 3).
const KNOWN_TOOL_CALL_METADATA: &[&str] = &["hookAdditionalContexts", "description", "isBackground"];

fn armed_result(r: ArmedResult<'_>) -> ToolResult {
    let (k, v) = r.arm;
    ToolResult::with_extra(ResultStatus::from_key(&k), v.to_owned(), sibling_keys(&r.rest))
}

/// A result's siblings other than its known metadata keys: kept as unknown fields.
fn sibling_keys(rest: &[(Cow<'_, str>, &RawValue)]) -> UnknownFields {
    rest.iter()
        .filter(|(k, _)| !RESULT_SIBLING_KEYS.contains(&k.as_ref()))
        .map(|(k, v)| (k.to_string(), (*v).to_owned()))
        .collect()
}

/// `result.usage`: every count optional, numbers or strings.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    input_tokens: Option<Int>,
    output_tokens: Option<Int>,
    cache_read_tokens: Option<Int>,
    cache_write_tokens: Option<Int>,
    reasoning_tokens: Option<Int>,
}

impl WireUsage {
    fn into_usage(self) -> TokenUsage {
        let n = |v: Option<Int>| v.and_then(Int::as_u64).unwrap_or(0);
        TokenUsage {
            input_tokens: n(self.input_tokens),
            output_tokens: n(self.output_tokens),
            cache_read_tokens: n(self.cache_read_tokens),
            cache_write_tokens: n(self.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.and_then(Int::as_u64),
        }
    }
}

fn run_end<T, M>(line: &Line<'_, T, M>, sub: &str, known: &[&str]) -> Result<RunEnd, String> {
    let get = |k: &str| line.rest_get(k).map(RawValue::get);
    let is_error = match get("is_error") {
        Some(v) => serde_json::from_str::<Option<bool>>(v).map_err(|e| format!("is_error: {e}"))?,
        None => None,
    }
    .unwrap_or(false);
    let result_text = rest_str(line, "result");
    let usage = match get("usage") {
        Some(v) => {
            serde_json::from_str::<Option<WireUsage>>(v).map_err(|e| format!("usage: {e}"))?.map(WireUsage::into_usage)
        }
        None => None,
    };
    let duration_ms = match get("duration_ms") {
        Some(v) => serde_json::from_str::<Option<Int>>(v).map_err(|e| format!("duration_ms: {e}"))?,
        None => None,
    }
    .and_then(Int::as_u64);
    let failed = is_error || (sub != "success" && !sub.is_empty());
    let (status, error) = if failed {
        let msg = result_text.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| {
            if sub.is_empty() {
                "run failed".to_owned()
            } else {
                format!("run ended with {sub}")
            }
        });
        (RunStatus::Error, Some(msg))
    } else {
        (RunStatus::Finished, None)
    };
    Ok(RunEnd { status, result_text, usage, error, duration_ms, incomplete: false, extra: unknown(line, known) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_the_one_pass_read_refuses_fails_as_the_raw_read_does() {
        let mut d = CliDecoder::default();
        let mut out = Vec::new();
        let mut decode = |tool_call: &str| {
            let line = format!(
                r#"{{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{tool_call},"session_id":"s"}}"#
            );
            d.decode(&line, SourcePos::default(), &mut out)
        };
        let e = decode("null").unwrap_err();
        assert!(e.starts_with("tool_call: invalid type: null"), "{e}");
        let e = decode(r#"{"shellToolCall":3}"#).unwrap_err();
        assert!(e.starts_with("tool_call: shellToolCall: invalid type: integer"), "{e}");
        decode(r#"{"shellToolCall":{"args":{"command":"ls"}},"zzz":1}"#).unwrap();
        let [InputEvent { kind: Input::ToolStarted(t), .. }] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!(
            (t.wire_name.as_str(), t.args.as_ref().map(|a| a.text())),
            ("shellToolCall", Some(r#"{"command":"ls"}"#))
        );
        assert_eq!(t.extra.len(), 1, "{:?}", t.extra);
    }

    /// Every line decodes as the raw read of its `tool_call` and `message` decodes it, whether
    /// the one pass takes it (text-only messages, results with an arm) or refuses it (other
    /// blocks, a `null` result, a result without an arm, a result that is no object).
    #[test]
    fn the_one_pass_read_decodes_as_the_raw_read() {
        let tool = |result: &str| {
            format!(
                r#"{{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{{"readToolCall":{{"args":{{"path":"a"}},"result":{result},"z":1}}}},"session_id":"s"}}"#
            )
        };
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a\nb"},{"type":"text","text":"c","x":1}]},"session_id":"s"}"#.to_owned(),
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","url":"u"}]},"session_id":"s"}"#.to_owned(),
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text"},{"type":"text","text":"t"}]},"session_id":"s"}"#.to_owned(),
            r#"{"type":"assistant","message":{"content":null},"session_id":"s"}"#.to_owned(),
            r#"{"type":"assistant","message":null,"session_id":"s"}"#.to_owned(),
            tool(r#"{"success":{"content":"x"},"isBackground":false,"other":2}"#),
            tool(r#"{"isBackground":false,"weird":{"a":1}}"#),
            tool(r#"{"isBackground":false,"n":1}"#),
            tool("null"),
            tool(r#""a string""#),
        ];
        for text in &lines {
            let (mut once, mut raw) = (Vec::new(), Vec::new());
            let r1 = CliDecoder::default().decode(text, SourcePos::default(), &mut once);
            let mut line = Line::parse(text).unwrap();
            let r2 = CliDecoder::default().decode_line(&mut line, text, SourcePos::default(), &mut raw);
            assert_eq!(format!("{r1:?} {once:?}"), format!("{r2:?} {raw:?}"), "{text}");
        }
        // And the lines the one pass takes are taken by it (not by the raw read after a refusal).
        for (text, taken) in lines.iter().zip([true, false, false, false, false, true, true, false, false, false]) {
            let mut line = Line::<Box<ToolCallObject<ArmedResult>>, TextMessage>::default();
            assert_eq!(Line::parse_into(text, &mut line).is_ok(), taken, "{text}");
        }
    }

    /// The commonest lines, read without the general parser, decode as the general parser
    /// decodes them; so does every line that reader leaves to it.
    fn same_as_the_general_parser(line: &str) -> bool {
        let (mut fast, mut general) = (Vec::new(), Vec::new());
        let pos = SourcePos { line: 3, offset: 7 };
        let r1 = CliDecoder::default().decode(line, pos, &mut fast);
        let r2 = CliDecoder::default().decode_general(line, pos, &mut general);
        assert_eq!(format!("{r1:?} {fast:?}"), format!("{r2:?} {general:?}"), "{line}");
        CommonLine::read(line).is_some()
    }

    #[test]
    fn the_commonest_lines_decode_as_the_general_parser_decodes_them() {
        let taken = [
            r#"{"type":"thinking","subtype":"delta","text":"**Following","session_id":"e9316fe9-c2c0","timestamp_ms":1790000000036}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a\"b\\\n\u00e9\ud83d\ude00","session_id":"s\u0041","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"","session_id":"","timestamp_ms":0}  "#,
            r#"{"type":"thinking","subtype":"completed","session_id":"s","timestamp_ms":999999999999999999}"#,
        ];
        for line in taken {
            assert!(same_as_the_general_parser(line), "taken: {line}");
        }
        let left = [
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":5,"x":{"y":1}}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":"5"}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":-5}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":9999999999999999999}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a","session_id":"s","timestamp_ms":05}"#,
            r#"{"type":"thinking","subtype":"delta","text":"a\x","session_id":"s","timestamp_ms":5}"#,
            "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"a\u{1}\",\"session_id\":\"s\",\"timestamp_ms\":5}",
            "{\"type\":\"thinking\",\"subtype\":\"completed\",\"session_id\":\"s\u{1f}\",\"timestamp_ms\":5}",
            r#"{"type":"thinking","subtype":"delta","session_id":"s","text":"a","timestamp_ms":5}"#,
            r#"{"type":"thinking","subtype":"completed","session_id":"s","timestamp_ms":5,"duration_ms":3}"#,
        ];
        for line in left {
            assert!(!same_as_the_general_parser(line), "left: {line}");
        }
    }

    proptest::proptest! {
        /// Any text, session and time, written as the CLI writes a thinking line (or with one
        /// of the changes the reader must refuse), decodes as the general parser decodes it.
        #[test]
        fn thinking_lines_decode_as_the_general_parser_decodes_them(
            text in "\\PC*|[\"\\\\\\n\\u{0}-\\u{1f}a]{0,6}",
            session in "[-a-z0-9]{0,12}|\\PC{0,4}",
            time in proptest::prop_oneof![0u64..2_000_000_000_000_000, proptest::prelude::any::<u64>()],
            completed in proptest::prelude::any::<bool>(),
            variant in 0u8..6,
        ) {
            let (text, session) = (serde_json::to_string(&text).unwrap(), serde_json::to_string(&session).unwrap());
            let time = time.to_string();
            let (head, tail) = if completed {
                (r#"{"type":"thinking","subtype":"completed""#.to_owned(), String::new())
            } else {
                (r#"{"type":"thinking","subtype":"delta""#.to_owned(), format!(r#","text":{text}"#))
            };
            let line = match variant {
                0 => format!(r#"{head}{tail},"session_id":{session},"timestamp_ms":{time}}}"#),
                1 => format!(r#"{head}{tail},"session_id":{session},"timestamp_ms":{time},"x":1}}"#),
                2 => format!(r#"{head}{tail},"session_id":{session},"timestamp_ms":"{time}"}}"#),
                3 => format!(r#"{head}{tail},"timestamp_ms":{time},"session_id":{session}}}"#),
                4 => format!("{head}{tail},\"session_id\":{session},\"timestamp_ms\":{time}}} \r\n"),
                _ => format!(r#"{head}, {tail},"session_id":{session},"timestamp_ms":{time}}}"#),
            };
            let taken = same_as_the_general_parser(&line);
            proptest::prop_assert_eq!(taken, matches!(variant, 0 | 4) && time.len() <= 18, "{}", line);
        }
    }

    #[test]
    fn session_ids_are_interned_within_bounds() {
        let mut d = CliDecoder::default();
        let (a, b) = (d.intern("s-1"), d.intern("s-1"));
        assert!(Arc::ptr_eq(&a, &b), "one Arc per session");
        let long = "x".repeat(INTERNED_MAX_LEN + 1);
        assert_eq!(&*d.intern(&long), long.as_str());
        assert!(!d.sessions.contains(long.as_str()), "long ids are not kept");
        for i in 0..INTERNED_MAX + 10 {
            d.intern(&format!("s{i}"));
        }
        assert!(d.sessions.len() <= INTERNED_MAX);
    }

    #[test]
    fn a_session_leaves_the_table_when_its_run_ends() {
        let mut d = CliDecoder::default();
        let mut out = Vec::new();
        let line = |kind: &str, sub: &str| {
            format!(r#"{{"type":"{kind}","subtype":"{sub}","session_id":"s-9","timestamp_ms":5}}"#)
        };
        d.decode(&line("system", "init"), SourcePos::default(), &mut out).unwrap();
        assert!(d.sessions.contains("s-9"), "a running session is interned");
        d.decode(&line("result", "success"), SourcePos::default(), &mut out).unwrap();
        assert!(matches!(out.last().map(|e| &e.kind), Some(Input::RunEnded(_))));
        assert!(!d.sessions.contains("s-9"), "an ended run's session is not kept");
        // A later run of the session gets the same id in a new `Arc`, interned again.
        d.decode(&line("system", "init"), SourcePos::default(), &mut out).unwrap();
        assert!(d.sessions.contains("s-9"));
        assert_eq!(out.iter().map(|e| &*e.session).collect::<Vec<_>>(), ["s-9"; 3]);
    }
}
