//! The `@cursor/sdk` recording format (SPEC §1.2): one JSON object per line,
//! `{"at_ms":…,"delta":<InteractionUpdate>}` | `{"at_ms":…,"step":<ConversationStep>}` |
//! `{"at_ms":…,"wait":<RunResult>}` | `{"at_ms":…,"start":{session_id, cwd, model, prompt}}`.
//!
//! [`parse_record`] reads one line. Unknown update types, step types and run statuses are kept (as
//! raw JSON or a string), never an error; unknown fields land in each struct's `extra`. Tool
//! payloads (`ToolCall.args`, `result.value`) stay raw JSON: read them with
//! [`crate::cursor_cli::tool_models`].

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::event::{RunStatus, ShellStream, TokenUsage};
use crate::num::Int;
use crate::tools::Tool;

/// Fields a model does not name, kept verbatim.
pub type Extra = Map<String, Value>;

/// One line of a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct SdkRecord {
    /// Event time in ms (`at_ms`: integer, fractional or decimal string). `None` when absent or
    /// unreadable (the unreadable value is then kept in `extra`).
    pub at_ms: Option<u64>,
    pub body: SdkRecordBody,
    /// Keys other than `at_ms` and the body key.
    pub extra: Extra,
}

/// What a record carries.
#[derive(Clone, Debug, PartialEq)]
pub enum SdkRecordBody {
    Start(SdkStart),
    /// `onDelta({update})`.
    Delta(InteractionUpdate),
    /// `onStep({step})`.
    Step(ConversationStep),
    /// `run.wait()`.
    Wait(RunResult),
    /// None of `delta`, `step`, `wait`, `start`: the line's keys are in [`SdkRecord::extra`].
    Unknown,
}

/// Parses one recording line. Errors only on malformed JSON, a line that is not an object, or a
/// known payload with a field of the wrong JSON type.
pub fn parse_record(line: &str) -> Result<SdkRecord, serde_json::Error> {
    let Value::Object(mut obj) = serde_json::from_str::<Value>(line)? else {
        return Err(de::Error::custom("an SDK record must be a JSON object"));
    };
    let at_ms = match obj.remove("at_ms") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let ms = millis(&v);
            if ms.is_none() {
                obj.insert("at_ms".to_owned(), v);
            }
            ms
        }
    };
    let body = if let Some(v) = obj.remove("delta") {
        SdkRecordBody::Delta(InteractionUpdate::from_value(v)?)
    } else if let Some(v) = obj.remove("step") {
        SdkRecordBody::Step(ConversationStep::from_value(v)?)
    } else if let Some(v) = obj.remove("wait") {
        SdkRecordBody::Wait(object(v)?)
    } else if let Some(v) = obj.remove("start") {
        SdkRecordBody::Start(object(v)?)
    } else {
        SdkRecordBody::Unknown
    };
    Ok(SdkRecord { at_ms, body, extra: obj })
}

/// Milliseconds from a JSON number (possibly fractional) or a decimal string.
fn millis(v: &Value) -> Option<u64> {
    let f = match v {
        Value::Number(n) => return n.as_u64().or_else(|| n.as_f64().and_then(whole_ms)),
        Value::String(s) => s.trim(),
        _ => return None,
    };
    f.parse::<u64>().ok().or_else(|| f.parse::<f64>().ok().and_then(whole_ms))
}

fn whole_ms(f: f64) -> Option<u64> {
    (f.is_finite() && (0.0..9.007_199_254_740_992e15).contains(&f)).then(|| f.floor() as u64)
}

/// Deserializes an object; `null` gives the empty model.
fn object<T: DeserializeOwned + Default>(v: Value) -> Result<T, serde_json::Error> {
    Ok(serde_json::from_value::<Option<T>>(v)?.unwrap_or_default())
}

/// [`object`], dropping the `type` tag an update was dispatched on.
fn payload<T: DeserializeOwned + Default>(mut v: Value) -> Result<T, serde_json::Error> {
    if let Value::Object(o) = &mut v {
        o.remove("type");
    }
    object(v)
}

fn type_name(v: &Value) -> String {
    v.get("type").and_then(Value::as_str).unwrap_or_default().to_owned()
}

// ------------------------------------------------------------------------------------------------
// start
// ------------------------------------------------------------------------------------------------

/// `start`: written by the recorder before the run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct SdkStart {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// A model id string, or an SDK `ModelSelection` object (`{id, params}`).
    pub model: Option<Value>,
    pub prompt: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl SdkStart {
    /// The model id: the string itself, or the selection's `id`.
    pub fn model_id(&self) -> Option<&str> {
        match self.model.as_ref()? {
            Value::String(s) => Some(s),
            v => v.get("id")?.as_str(),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// InteractionUpdate
// ------------------------------------------------------------------------------------------------

/// `onDelta` updates, by `type`.
#[derive(Clone, Debug, PartialEq)]
pub enum InteractionUpdate {
    /// `text-delta`.
    TextDelta(TextDelta),
    /// `thinking-delta`.
    ThinkingDelta(TextDelta),
    /// `thinking-completed`.
    ThinkingCompleted(ThinkingCompleted),
    /// `partial-tool-call`: args still streaming in.
    PartialToolCall(ToolCallUpdate),
    /// `tool-call-started`.
    ToolCallStarted(ToolCallUpdate),
    /// `tool-call-completed`: often carries only `result`; see [`SdkToolCall::or_from`].
    ToolCallCompleted(ToolCallUpdate),
    /// `shell-output-delta`.
    ShellOutputDelta(ShellOutputDelta),
    /// `summary`.
    Summary(SummaryUpdate),
    /// `turn-ended`.
    TurnEnded(TurnEnded),
    /// Types the engine ignores but counts (SPEC §1.2), kept whole.
    Ignored { kind: IgnoredUpdate, raw: Value },
    /// Any other `type` (or none), kept whole.
    Unknown { type_name: String, raw: Value },
}

impl InteractionUpdate {
    /// Dispatches on `type`.
    pub fn from_value(v: Value) -> Result<InteractionUpdate, serde_json::Error> {
        use InteractionUpdate as U;
        let type_name = type_name(&v);
        Ok(match type_name.as_str() {
            "text-delta" => U::TextDelta(payload(v)?),
            "thinking-delta" => U::ThinkingDelta(payload(v)?),
            "thinking-completed" => U::ThinkingCompleted(payload(v)?),
            "partial-tool-call" => U::PartialToolCall(payload(v)?),
            "tool-call-started" => U::ToolCallStarted(payload(v)?),
            "tool-call-completed" => U::ToolCallCompleted(payload(v)?),
            "shell-output-delta" => U::ShellOutputDelta(payload(v)?),
            "summary" => U::Summary(payload(v)?),
            "turn-ended" => U::TurnEnded(payload(v)?),
            other => match IgnoredUpdate::from_type(other) {
                Some(kind) => U::Ignored { kind, raw: v },
                None => U::Unknown { type_name, raw: v },
            },
        })
    }

    /// The wire `type`.
    pub fn type_name(&self) -> &str {
        use InteractionUpdate as U;
        match self {
            U::TextDelta(_) => "text-delta",
            U::ThinkingDelta(_) => "thinking-delta",
            U::ThinkingCompleted(_) => "thinking-completed",
            U::PartialToolCall(_) => "partial-tool-call",
            U::ToolCallStarted(_) => "tool-call-started",
            U::ToolCallCompleted(_) => "tool-call-completed",
            U::ShellOutputDelta(_) => "shell-output-delta",
            U::Summary(_) => "summary",
            U::TurnEnded(_) => "turn-ended",
            U::Ignored { kind, .. } => kind.as_str(),
            U::Unknown { type_name, .. } => type_name,
        }
    }
}

/// The update types that are ignored but counted (SPEC §1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IgnoredUpdate {
    TokenDelta,
    UserMessageAppended,
    SummaryStarted,
    SummaryCompleted,
    StepStarted,
    StepCompleted,
    ToolRequestsListed,
    ToolCallDelta,
}

impl IgnoredUpdate {
    const ALL: [IgnoredUpdate; 8] = [
        IgnoredUpdate::TokenDelta,
        IgnoredUpdate::UserMessageAppended,
        IgnoredUpdate::SummaryStarted,
        IgnoredUpdate::SummaryCompleted,
        IgnoredUpdate::StepStarted,
        IgnoredUpdate::StepCompleted,
        IgnoredUpdate::ToolRequestsListed,
        IgnoredUpdate::ToolCallDelta,
    ];

    pub fn from_type(type_name: &str) -> Option<IgnoredUpdate> {
        IgnoredUpdate::ALL.into_iter().find(|k| k.as_str() == type_name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IgnoredUpdate::TokenDelta => "token-delta",
            IgnoredUpdate::UserMessageAppended => "user-message-appended",
            IgnoredUpdate::SummaryStarted => "summary-started",
            IgnoredUpdate::SummaryCompleted => "summary-completed",
            IgnoredUpdate::StepStarted => "step-started",
            IgnoredUpdate::StepCompleted => "step-completed",
            IgnoredUpdate::ToolRequestsListed => "tool-requests-listed",
            IgnoredUpdate::ToolCallDelta => "tool-call-delta",
        }
    }
}

/// `text-delta` / `thinking-delta`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TextDelta {
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thinking-completed`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingCompleted {
    pub thinking_duration_ms: Option<Int>,
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `partial-tool-call`, `tool-call-started`, `tool-call-completed`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub call_id: Option<String>,
    pub tool_call: Option<SdkToolCall>,
    pub model_call_id: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The SDK `ToolCall`: `{type|name, args, result?}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct SdkToolCall {
    /// The tool, e.g. `shell`, `readLints` (`InteractionUpdate` and step form).
    #[serde(rename = "type")]
    pub tool_type: Option<String>,
    /// The tool under its stream-message name; read when `type` is absent.
    pub name: Option<String>,
    /// The tool's args, raw (see [`crate::cursor_cli::tool_models::parse_args`]).
    pub args: Option<Value>,
    pub result: Option<SdkToolResult>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl SdkToolCall {
    /// The tool name: `type`, else `name` (blank names ignored).
    pub fn tool_name(&self) -> Option<&str> {
        [&self.tool_type, &self.name].into_iter().flatten().map(String::as_str).find(|s| !s.trim().is_empty())
    }

    /// The tool; `None` without a name. MCP web-tool reclassification (SPEC §4) is the caller's.
    pub fn tool(&self) -> Option<Tool> {
        self.tool_name().map(Tool::from_name)
    }

    /// Merges a completion over its started call: fields present here win, missing ones fall
    /// back to `started` (SPEC §1.2).
    pub fn or_from(self, started: &SdkToolCall) -> SdkToolCall {
        let mut extra = started.extra.clone();
        extra.extend(self.extra);
        SdkToolCall {
            tool_type: self.tool_type.or_else(|| started.tool_type.clone()),
            name: self.name.or_else(|| started.name.clone()),
            args: self.args.or_else(|| started.args.clone()),
            result: self.result.or_else(|| started.result.clone()),
            extra,
        }
    }
}

/// `ToolCall.result`: `{status:"success", value}` | `{status:"error", error}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct SdkToolResult {
    pub status: Option<String>,
    /// The success payload, raw (see [`crate::cursor_cli::tool_models::parse_success`]).
    pub value: Option<Value>,
    /// The error: a string or an object with a `message`.
    pub error: Option<Value>,
    /// Some builds put the error text here.
    pub message: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl SdkToolResult {
    /// Only `status: "success"` is a success.
    pub fn is_success(&self) -> bool {
        self.status.as_deref() == Some("success")
    }

    /// The error's text: `error` (string or `error.message`), else `message`.
    pub fn error_text(&self) -> Option<&str> {
        error_text(self.error.as_ref()).or(self.message.as_deref())
    }
}

/// A string, or the `message` of an object.
fn error_text(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::String(s) => Some(s),
        v => v.get("message")?.as_str(),
    }
}

/// `shell-output-delta`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ShellOutputDelta {
    pub event: Option<ShellOutputEvent>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `shell-output-delta.event`, by `case`.
#[derive(Clone, Debug, PartialEq)]
pub enum ShellOutputEvent {
    /// `{case:"stdout"|"stderr", value:{data}}`.
    Output { stream: ShellStream, chunk: ShellChunk },
    /// `{case:"start", value}`: the value kept raw (`null` when absent).
    Start(Value),
    /// `{case:"exit", value}`: the value kept raw (`null` when absent).
    Exit(Value),
    /// Any other shape: the whole event.
    Unknown(Value),
}

impl ShellOutputEvent {
    /// Output text, for `stdout`/`stderr` events.
    pub fn output(&self) -> Option<(ShellStream, &str)> {
        match self {
            ShellOutputEvent::Output { stream, chunk } => Some((*stream, chunk.data.as_deref().unwrap_or_default())),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for ShellOutputEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut v = Value::deserialize(d)?;
        let stream = match v.get("case").and_then(Value::as_str) {
            Some("stdout") => ShellStream::Stdout,
            Some("stderr") => ShellStream::Stderr,
            Some(case @ ("start" | "exit")) => {
                let exit = case == "exit";
                let value = v.get_mut("value").map(Value::take).unwrap_or_default();
                return Ok(if exit { ShellOutputEvent::Exit(value) } else { ShellOutputEvent::Start(value) });
            }
            _ => return Ok(ShellOutputEvent::Unknown(v)),
        };
        let value = v.get_mut("value").map(Value::take).unwrap_or_default();
        let chunk = object(value).map_err(de::Error::custom)?;
        Ok(ShellOutputEvent::Output { stream, chunk })
    }
}

/// The value of a `stdout`/`stderr` event.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ShellChunk {
    pub data: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `summary`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct SummaryUpdate {
    pub summary: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn-ended`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TurnEnded {
    pub usage: Option<TurnUsage>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token counts of a turn (`turn-ended.usage`) or a run (`RunResult.usage`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    pub input_tokens: Option<Int>,
    pub output_tokens: Option<Int>,
    pub cache_read_tokens: Option<Int>,
    pub cache_write_tokens: Option<Int>,
    pub reasoning_tokens: Option<Int>,
    pub total_tokens: Option<Int>,
    /// Short spellings some builds use for the cache counts.
    pub cache_read: Option<Int>,
    pub cache_write: Option<Int>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl TurnUsage {
    /// The counts when they can be believed at all: input and output present, and no count
    /// negative (SPEC §6c: "all finite and ≥ 0"); `None` otherwise, so estimates are used.
    pub fn checked(&self) -> Option<TokenUsage> {
        let counts = [self.input_tokens, self.output_tokens, self.cache_read_tokens.or(self.cache_read)];
        let write = self.cache_write_tokens.or(self.cache_write);
        if self.input_tokens.is_none() || self.output_tokens.is_none() {
            return None;
        }
        if counts.iter().chain([write, self.reasoning_tokens].iter()).flatten().any(|n| n.get() < 0) {
            return None;
        }
        Some(self.to_token_usage())
    }

    /// The counts as reported (missing or negative counts are 0; `totalTokens` is not used).
    pub fn to_token_usage(&self) -> TokenUsage {
        let n = |v: Option<Int>| v.and_then(Int::as_u64);
        TokenUsage {
            input_tokens: n(self.input_tokens).unwrap_or(0),
            output_tokens: n(self.output_tokens).unwrap_or(0),
            cache_read_tokens: n(self.cache_read_tokens.or(self.cache_read)).unwrap_or(0),
            cache_write_tokens: n(self.cache_write_tokens.or(self.cache_write)).unwrap_or(0),
            reasoning_tokens: n(self.reasoning_tokens),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// ConversationStep
// ------------------------------------------------------------------------------------------------

/// `onStep` steps: `{type, message}`. Keys of the step other than `type` and `message` are not kept.
#[derive(Clone, Debug, PartialEq)]
pub enum ConversationStep {
    /// A completed assistant text block: a text boundary.
    AssistantMessage(AssistantMessage),
    /// A completed tool call (may duplicate a `tool-call-completed` delta).
    ToolCall(SdkToolCall),
    ThinkingMessage(ThinkingMessage),
    /// Any other `type` (or none), kept whole.
    Unknown {
        type_name: String,
        raw: Value,
    },
}

impl ConversationStep {
    /// Dispatches on `type`.
    pub fn from_value(mut v: Value) -> Result<ConversationStep, serde_json::Error> {
        let type_name = type_name(&v);
        let mut message = || v.get_mut("message").map(Value::take).unwrap_or_default();
        Ok(match type_name.as_str() {
            "assistantMessage" => ConversationStep::AssistantMessage(object(message())?),
            "toolCall" => ConversationStep::ToolCall(object(message())?),
            "thinkingMessage" => ConversationStep::ThinkingMessage(object(message())?),
            _ => ConversationStep::Unknown { type_name, raw: v },
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct AssistantMessage {
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingMessage {
    pub text: Option<String>,
    pub thinking_duration_ms: Option<Int>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ------------------------------------------------------------------------------------------------
// RunResult
// ------------------------------------------------------------------------------------------------

/// `run.wait()`'s result. `usage` is a run total: it must not be used for accounting (SPEC §1.2).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub id: Option<String>,
    pub status: Option<SdkRunStatus>,
    /// The final assistant text.
    pub result: Option<String>,
    pub model: Option<Value>,
    pub duration_ms: Option<Int>,
    pub git: Option<Value>,
    pub usage: Option<TurnUsage>,
    /// A string or an object with a `message` (and often a `code`).
    pub error: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl RunResult {
    /// The canonical status; `None` when absent or unknown.
    pub fn run_status(&self) -> Option<RunStatus> {
        self.status.as_ref()?.run_status()
    }

    /// The error's text: a string, or `error.message`.
    pub fn error_text(&self) -> Option<&str> {
        error_text(self.error.as_ref())
    }

    /// The error's code (`error.code`, a string or a number), when it has one.
    pub fn error_code(&self) -> Option<String> {
        match self.error.as_ref()?.get("code")? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// `RunResult.status`; unknown values kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SdkRunStatus {
    Finished,
    Error,
    Cancelled,
    Other(String),
}

impl SdkRunStatus {
    /// Case-insensitive (`finished`, `FINISHED`); `canceled` is `Cancelled`.
    pub fn from_wire(s: &str) -> SdkRunStatus {
        match s.trim().to_ascii_lowercase().as_str() {
            "finished" => SdkRunStatus::Finished,
            "error" => SdkRunStatus::Error,
            "cancelled" | "canceled" => SdkRunStatus::Cancelled,
            _ => SdkRunStatus::Other(s.to_owned()),
        }
    }

    pub fn run_status(&self) -> Option<RunStatus> {
        match self {
            SdkRunStatus::Finished => Some(RunStatus::Finished),
            SdkRunStatus::Error => Some(RunStatus::Error),
            SdkRunStatus::Cancelled => Some(RunStatus::Cancelled),
            SdkRunStatus::Other(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for SdkRunStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SdkRunStatus::from_wire(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::ToolKind;

    fn delta(line: &str) -> InteractionUpdate {
        match parse_record(line).unwrap().body {
            SdkRecordBody::Delta(u) => u,
            other => panic!("not a delta: {other:?}"),
        }
    }

    fn step(line: &str) -> ConversationStep {
        match parse_record(line).unwrap().body {
            SdkRecordBody::Step(s) => s,
            other => panic!("not a step: {other:?}"),
        }
    }

    #[test]
    fn start_record() {
        let r = parse_record(
            r#"{"at_ms":0,"start":{"session_id":"s-1","cwd":"/w","model":{"id":"composer-2"},"prompt":"hi","v":1}}"#,
        )
        .unwrap();
        assert_eq!(r.at_ms, Some(0));
        let SdkRecordBody::Start(s) = r.body else { panic!() };
        assert_eq!(
            (s.session_id.as_deref(), s.cwd.as_deref(), s.prompt.as_deref()),
            (Some("s-1"), Some("/w"), Some("hi"))
        );
        assert_eq!(s.model_id(), Some("composer-2"));
        assert_eq!(s.extra.get("v"), Some(&json!(1)));
    }

    #[test]
    fn at_ms_forms() {
        for (line, want) in [
            (r#"{"at_ms":12,"delta":{"type":"text-delta","text":"a"}}"#, Some(12)),
            (r#"{"at_ms":12.7,"delta":{"type":"text-delta","text":"a"}}"#, Some(12)),
            (r#"{"at_ms":"1790000000000","delta":{"type":"text-delta","text":"a"}}"#, Some(1_790_000_000_000)),
            (r#"{"delta":{"type":"text-delta","text":"a"}}"#, None),
        ] {
            assert_eq!(parse_record(line).unwrap().at_ms, want, "{line}");
        }
        let r = parse_record(r#"{"at_ms":-5,"delta":{"type":"text-delta"}}"#).unwrap();
        assert_eq!((r.at_ms, r.extra.get("at_ms")), (None, Some(&json!(-5))));
    }

    #[test]
    fn text_and_thinking_deltas() {
        let InteractionUpdate::TextDelta(t) = delta(r#"{"at_ms":1,"delta":{"type":"text-delta","text":"Hi"}}"#) else {
            panic!()
        };
        assert_eq!(t.text.as_deref(), Some("Hi"));
        assert!(t.extra.is_empty(), "the type tag is not an unknown field");
        let u = delta(r#"{"at_ms":1,"delta":{"type":"thinking-delta","text":""}}"#);
        assert!(matches!(&u, InteractionUpdate::ThinkingDelta(t) if t.text.as_deref() == Some("")));
        let u = delta(r#"{"at_ms":1,"delta":{"type":"thinking-completed","thinkingDurationMs":"1200"}}"#);
        assert!(matches!(&u, InteractionUpdate::ThinkingCompleted(t) if t.thinking_duration_ms == Some(Int(1200))));
        assert_eq!(u.type_name(), "thinking-completed");
    }

    #[test]
    fn tool_call_deltas_and_merge() {
        let started = delta(
            r#"{"at_ms":1,"delta":{"type":"tool-call-started","callId":"c1","modelCallId":"m1",
                "toolCall":{"type":"shell","args":{"command":"ls","timeout":600000}}}}"#,
        );
        let InteractionUpdate::ToolCallStarted(s) = started else { panic!() };
        assert_eq!((s.call_id.as_deref(), s.model_call_id.as_deref()), (Some("c1"), Some("m1")));
        let s = s.tool_call.unwrap();
        assert_eq!(s.tool(), Some(Tool::Known(ToolKind::Shell)));

        let completed = delta(
            r#"{"at_ms":2,"delta":{"type":"tool-call-completed","callId":"c1","toolCall":{"name":"shell",
                "result":{"status":"success","value":{"stdout":"a\n","exitCode":0}}}}}"#,
        );
        let InteractionUpdate::ToolCallCompleted(c) = completed else { panic!() };
        let merged = c.tool_call.unwrap().or_from(&s);
        assert_eq!(merged.tool_name(), Some("shell"));
        assert_eq!(merged.args, Some(json!({"command":"ls","timeout":600000})));
        let result = merged.result.unwrap();
        assert!(result.is_success());
        assert_eq!(result.value.unwrap()["stdout"], "a\n");

        let partial =
            delta(r#"{"at_ms":3,"delta":{"type":"partial-tool-call","callId":"c2","toolCall":{"type":"read"}}}"#);
        assert!(
            matches!(partial, InteractionUpdate::PartialToolCall(p) if p.tool_call.as_ref().is_some_and(|t| t.args.is_none()))
        );
    }

    #[test]
    fn tool_errors_read_as_text() {
        let r: SdkToolResult =
            serde_json::from_value(json!({"status":"error","error":{"message":"no such file"}})).unwrap();
        assert_eq!((r.is_success(), r.error_text()), (false, Some("no such file")));
        let r: SdkToolResult = serde_json::from_value(json!({"status":"error","error":"denied"})).unwrap();
        assert_eq!(r.error_text(), Some("denied"));
        let r: SdkToolResult = serde_json::from_value(json!({"status":"error","message":"gone"})).unwrap();
        assert_eq!(r.error_text(), Some("gone"));
    }

    #[test]
    fn shell_output_events() {
        let out = |line: &str| match delta(line) {
            InteractionUpdate::ShellOutputDelta(d) => d.event.unwrap(),
            other => panic!("{other:?}"),
        };
        let e = out(
            r#"{"at_ms":1,"delta":{"type":"shell-output-delta","event":{"case":"stdout","value":{"data":"hi\n"}}}}"#,
        );
        assert_eq!(e.output(), Some((ShellStream::Stdout, "hi\n")));
        let e =
            out(r#"{"at_ms":1,"delta":{"type":"shell-output-delta","event":{"case":"stderr","value":{"data":"x"}}}}"#);
        assert_eq!(e.output(), Some((ShellStream::Stderr, "x")));
        let e = out(r#"{"at_ms":1,"delta":{"type":"shell-output-delta","event":{"case":"exit","value":{"code":1}}}}"#);
        assert_eq!(e, ShellOutputEvent::Exit(json!({"code":1})));
        let e = out(r#"{"at_ms":1,"delta":{"type":"shell-output-delta","event":{"case":"start"}}}"#);
        assert_eq!(e, ShellOutputEvent::Start(Value::Null));
        let e = out(r#"{"at_ms":1,"delta":{"type":"shell-output-delta","event":{"output":"one\n"}}}"#);
        assert_eq!(e, ShellOutputEvent::Unknown(json!({"output":"one\n"})));
    }

    #[test]
    fn summary_and_turn_ended() {
        let u = delta(r#"{"at_ms":1,"delta":{"type":"summary","summary":"did things"}}"#);
        assert!(matches!(u, InteractionUpdate::Summary(s) if s.summary.as_deref() == Some("did things")));
        let u = delta(
            r#"{"at_ms":1,"delta":{"type":"turn-ended","usage":{"inputTokens":46965,"outputTokens":3,
                "cacheReadTokens":42036,"cacheWriteTokens":"4927","reasoningTokens":2}}}"#,
        );
        let InteractionUpdate::TurnEnded(t) = u else { panic!() };
        let usage = t.usage.unwrap().to_token_usage();
        assert_eq!(
            usage,
            TokenUsage {
                input_tokens: 46965,
                output_tokens: 3,
                cache_read_tokens: 42036,
                cache_write_tokens: 4927,
                reasoning_tokens: Some(2)
            }
        );
        let u = delta(r#"{"at_ms":1,"delta":{"type":"turn-ended"}}"#);
        assert!(matches!(u, InteractionUpdate::TurnEnded(t) if t.usage.is_none()));
    }

    #[test]
    fn ignored_and_unknown_updates_are_kept() {
        for kind in IgnoredUpdate::ALL {
            let line = format!(r#"{{"at_ms":1,"delta":{{"type":"{}","stepId":2}}}}"#, kind.as_str());
            match delta(&line) {
                InteractionUpdate::Ignored { kind: k, raw } => {
                    assert_eq!(k, kind);
                    assert_eq!(raw["stepId"], 2);
                }
                other => panic!("{other:?}"),
            }
        }
        match delta(r#"{"at_ms":1,"delta":{"type":"heartbeat","n":1}}"#) {
            InteractionUpdate::Unknown { type_name, raw } => {
                assert_eq!(type_name, "heartbeat");
                assert_eq!(raw, json!({"type":"heartbeat","n":1}));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(delta(r#"{"delta":{"text":"no type"}}"#), InteractionUpdate::Unknown { type_name, .. } if type_name.is_empty())
        );
    }

    #[test]
    fn steps() {
        let s = step(r#"{"at_ms":1,"step":{"type":"assistantMessage","message":{"text":"Done."}}}"#);
        assert!(matches!(s, ConversationStep::AssistantMessage(m) if m.text.as_deref() == Some("Done.")));
        let s = step(
            r#"{"at_ms":1,"step":{"type":"toolCall","message":{"type":"read","args":{"path":"README.md"},
                "result":{"status":"success","value":{"content":"x","totalLines":1}}}}}"#,
        );
        let ConversationStep::ToolCall(call) = s else { panic!() };
        assert_eq!(call.tool(), Some(Tool::Known(ToolKind::Read)));
        assert!(call.result.unwrap().is_success());
        let s = step(r#"{"at_ms":1,"step":{"type":"thinkingMessage","message":{"text":"hm","thinkingDurationMs":5}}}"#);
        assert!(matches!(s, ConversationStep::ThinkingMessage(m) if m.thinking_duration_ms == Some(Int(5))));
        let s = step(r#"{"at_ms":1,"step":{"type":"shellConversationTurn","turn":{}}}"#);
        assert!(matches!(s, ConversationStep::Unknown { type_name, .. } if type_name == "shellConversationTurn"));
    }

    #[test]
    fn wait_records() {
        let r = parse_record(
            r#"{"at_ms":9,"wait":{"id":"run-1","status":"finished","result":"ok","durationMs":1200,
                "usage":{"inputTokens":1000,"outputTokens":200,"cacheWriteTokens":40,"cacheReadTokens":300,"totalTokens":1540}}}"#,
        )
        .unwrap();
        let SdkRecordBody::Wait(w) = r.body else { panic!() };
        assert_eq!(w.run_status(), Some(RunStatus::Finished));
        assert_eq!((w.result.as_deref(), w.duration_ms), (Some("ok"), Some(Int(1200))));
        assert_eq!(w.usage.unwrap().to_token_usage().total(), 1540);

        let SdkRecordBody::Wait(w) =
            parse_record(r#"{"wait":{"status":"error","error":{"message":"rate limited","code":"rate_limit"}}}"#)
                .unwrap()
                .body
        else {
            panic!()
        };
        assert_eq!((w.run_status(), w.error_text()), (Some(RunStatus::Error), Some("rate limited")));
        assert_eq!(w.error_code().as_deref(), Some("rate_limit"));
        let SdkRecordBody::Wait(w) = parse_record(r#"{"wait":{"status":"CANCELLED"}}"#).unwrap().body else { panic!() };
        assert_eq!(w.run_status(), Some(RunStatus::Cancelled));
        let SdkRecordBody::Wait(w) = parse_record(r#"{"wait":{"status":"expired"}}"#).unwrap().body else { panic!() };
        assert_eq!((w.run_status(), w.status), (None, Some(SdkRunStatus::Other("expired".into()))));
    }

    #[test]
    fn records_without_a_body_and_bad_lines() {
        let r = parse_record(r#"{"at_ms":1,"note":"x"}"#).unwrap();
        assert_eq!((r.body, r.extra.get("note")), (SdkRecordBody::Unknown, Some(&json!("x"))));
        assert!(parse_record("[1]").is_err());
        assert!(parse_record("{").is_err());
        assert!(parse_record(r#"{"delta":{"type":"text-delta","text":5}}"#).is_err());
    }
}
