//! Cursor hooks (SPEC §1.5): the JSON payload Cursor writes on a hook command's stdin, the events
//! toolstream reads and what each is answered, the envelopes recorders wrap payloads in, and how
//! a hook's `tool_input` / `tool_output` map to the canonical (CLI `stream-json`) args and results
//! the typed tool models read.
//!
//! The payload is the contract, and it drifts between Cursor builds: every field is optional,
//! unknown fields are kept (`extra`) and counted, ids may hold literal newlines, and
//! `tool_output` is a JSON document *encoded as a string* that a recorder may have cut short
//! (`…[+N chars]`): [`Recorded::parse`] reads it when it parses and keeps the text otherwise.
//!
//! A log line holds one payload, bare or in an envelope ([`parse_line`]):
//! - bare: the payload itself (`{"hook_event_name": …}`);
//! - toolstream's own spool record: `{"received_ms": <unix ms>, "payload": {…}}`;
//! - the LangSmith plugin's debug log: `{"ts": <ISO>, "evt", "cwd", "payload": {…}}`;
//! - agent-bundle's recorder: `{"event": {"canonical", "native": {…}}, "recordedAt": <ISO>, …}`;
//!   its lines without `event` (`kind: "mcp"`) record an MCP server, not a hook: no payload.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::iso_time::parse_ms;
use crate::num::Int;
use crate::tools::ToolKind;

/// The hook events toolstream knows, in the order a turn usually meets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    SessionEnd,
    BeforeSubmitPrompt,
    AfterAgentThought,
    AfterAgentResponse,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    BeforeShellExecution,
    AfterShellExecution,
    BeforeMcpExecution,
    AfterMcpExecution,
    BeforeReadFile,
    AfterFileEdit,
    SubagentStart,
    SubagentStop,
    Stop,
}

/// One row of the event table: its wire name and whether `toolstream install cursor` subscribes
/// to it. Events left out are covered by others (`preToolUse` sees every tool, so the
/// `before*Execution` and `beforeReadFile` hooks would only cost the user a process per call);
/// toolstream still reads them in logs.
#[derive(Debug)]
pub struct HookEventSpec {
    pub event: HookEvent,
    pub name: &'static str,
    pub installed: bool,
}

const fn ev(event: HookEvent, name: &'static str, installed: bool) -> HookEventSpec {
    HookEventSpec { event, name, installed }
}

/// Every known event, in [`HookEvent`] order.
pub static HOOK_EVENTS: [HookEventSpec; 17] = [
    ev(HookEvent::SessionStart, "sessionStart", true),
    ev(HookEvent::SessionEnd, "sessionEnd", true),
    ev(HookEvent::BeforeSubmitPrompt, "beforeSubmitPrompt", true),
    ev(HookEvent::AfterAgentThought, "afterAgentThought", true),
    ev(HookEvent::AfterAgentResponse, "afterAgentResponse", true),
    ev(HookEvent::PreToolUse, "preToolUse", true),
    ev(HookEvent::PostToolUse, "postToolUse", true),
    ev(HookEvent::PostToolUseFailure, "postToolUseFailure", true),
    ev(HookEvent::BeforeShellExecution, "beforeShellExecution", false),
    ev(HookEvent::AfterShellExecution, "afterShellExecution", true),
    ev(HookEvent::BeforeMcpExecution, "beforeMCPExecution", false),
    ev(HookEvent::AfterMcpExecution, "afterMCPExecution", true),
    ev(HookEvent::BeforeReadFile, "beforeReadFile", false),
    ev(HookEvent::AfterFileEdit, "afterFileEdit", true),
    ev(HookEvent::SubagentStart, "subagentStart", true),
    ev(HookEvent::SubagentStop, "subagentStop", true),
    ev(HookEvent::Stop, "stop", true),
];

impl HookEvent {
    pub fn spec(self) -> &'static HookEventSpec {
        // HOOK_EVENTS is declared in enum order (unit test `the_event_table_is_in_enum_order`).
        &HOOK_EVENTS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The event of a `hook_event_name` (exact, as Cursor writes it).
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HOOK_EVENTS.iter().find(|s| s.name == name).map(|s| s.event)
    }

    /// The events `toolstream install cursor` subscribes to.
    pub fn installed() -> impl Iterator<Item = HookEvent> {
        HOOK_EVENTS.iter().filter(|s| s.installed).map(|s| s.event)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The answer that changes nothing, for any event: `{}` (Cursor reads missing fields as its
/// defaults; an observer never grants or denies a permission).
pub const NEUTRAL_ANSWER: &str = "{}";

/// A number of milliseconds as Cursor sends durations: a JSON number (often fractional) or a
/// decimal string.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize)]
pub struct Millis(pub f64);

impl Millis {
    /// Whole milliseconds, when finite and not negative.
    pub fn as_u64(self) -> Option<u64> {
        (self.0.is_finite() && self.0 >= 0.0).then(|| self.0.round() as u64)
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Millis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of milliseconds")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Millis, E> {
                Ok(Millis(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Millis, E> {
                Ok(Millis(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Millis, E> {
                Ok(Millis(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Millis, E> {
                v.trim().parse().map(Millis).map_err(|_| E::custom(format!("{v:?} is not a number")))
            }
        }
        d.deserialize_any(V)
    }
}

/// One `afterFileEdit` edit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileEdit {
    #[serde(default)]
    pub old_string: Option<String>,
    #[serde(default)]
    pub new_string: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One hook payload: the fields every event carries, then each event's own (all optional: which
/// are present depends on the event and the Cursor build). Fields no version of this model names
/// are kept in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookPayload {
    pub hook_event_name: Option<String>,
    /// The conversation: toolstream's session.
    pub conversation_id: Option<String>,
    /// One prompt's turn: toolstream's run. `""` on `sessionStart`; the conversation id itself on
    /// `subagentStart` / `subagentStop`.
    pub generation_id: Option<String>,
    /// The same as `conversation_id` in every capture.
    pub session_id: Option<String>,
    /// `default` is Auto; may be `""`.
    pub model: Option<String>,
    pub model_id: Option<String>,
    pub cursor_version: Option<String>,
    pub workspace_roots: Option<Vec<String>>,
    pub user_email: Option<String>,
    pub transcript_path: Option<String>,

    // sessionStart, sessionEnd, beforeSubmitPrompt
    pub is_background_agent: Option<bool>,
    pub composer_mode: Option<String>,
    pub reason: Option<String>,
    pub final_status: Option<String>,
    pub prompt: Option<String>,
    pub attachments: Option<Vec<Value>>,

    // afterAgentThought, afterAgentResponse, stop
    pub text: Option<String>,
    pub duration_ms: Option<Millis>,
    pub input_tokens: Option<Int>,
    pub output_tokens: Option<Int>,
    pub cache_read_tokens: Option<Int>,
    pub cache_write_tokens: Option<Int>,
    /// `completed`, `aborted`, `error` (`stop`); `completed`, … (`subagentStop`).
    pub status: Option<String>,
    pub loop_count: Option<Int>,

    // preToolUse, postToolUse, postToolUseFailure, before/afterMCPExecution
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    pub tool_use_id: Option<String>,
    /// A JSON document encoded as a string (see [`Recorded`]).
    pub tool_output: Option<Value>,
    /// Milliseconds, fractional.
    pub duration: Option<Millis>,
    pub error_message: Option<String>,
    /// `error`, `permission_denied`, `timeout`, …
    pub failure_type: Option<String>,
    pub is_interrupt: Option<bool>,
    pub result_json: Option<Value>,

    // before/afterShellExecution (and the Shell tool's `cwd`)
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub sandbox: Option<Value>,
    pub output: Option<String>,

    // beforeReadFile, afterFileEdit
    pub file_path: Option<String>,
    /// The file's content (`beforeReadFile`): never kept by toolstream.
    pub content: Option<String>,
    pub edits: Option<Vec<FileEdit>>,

    // subagentStart, subagentStop
    pub subagent_id: Option<String>,
    pub subagent_type: Option<String>,
    pub task: Option<String>,
    pub parent_conversation_id: Option<String>,
    /// The parent's Task/Subagent call (`tool_use_id` of its `preToolUse`).
    pub tool_call_id: Option<String>,
    pub subagent_model: Option<String>,
    pub is_parallel_worker: Option<bool>,
    pub description: Option<String>,
    pub agent_transcript_path: Option<String>,
    pub message_count: Option<Int>,
    pub tool_call_count: Option<Int>,

    /// Fields this model does not name, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HookPayload {
    /// The event, when toolstream knows it.
    pub fn event(&self) -> Option<HookEvent> {
        self.hook_event_name.as_deref().and_then(HookEvent::from_name)
    }

    /// The fields no version of this model names (counted and traced by the decoder).
    pub fn unknown_fields(&self) -> impl Iterator<Item = &str> {
        self.extra.keys().map(String::as_str)
    }

    /// The model to show: `model_id` when the payload has it, else `model`; never `""`.
    pub fn model_name(&self) -> Option<&str> {
        [&self.model_id, &self.model].into_iter().flatten().map(String::as_str).find(|m| !m.is_empty())
    }

    /// Token counts, when the payload carries any.
    pub fn tokens(&self) -> Option<HookTokens> {
        let n = |v: Option<Int>| v.and_then(Int::as_u64);
        let t = HookTokens {
            input: n(self.input_tokens)?,
            output: n(self.output_tokens).unwrap_or(0),
            cache_read: n(self.cache_read_tokens).unwrap_or(0),
            cache_write: n(self.cache_write_tokens).unwrap_or(0),
        };
        Some(t)
    }
}

/// Token counts as hooks report them: `input` **includes** the cached tokens (`cache_read +
/// cache_write ≤ input` in every capture).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookTokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// The spool record toolstream's hook writes: the payload and when it arrived.
#[derive(Debug, Serialize)]
pub struct SpoolRecord<'a> {
    pub received_ms: u64,
    pub payload: &'a Value,
}

/// The envelope a log line came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Envelope {
    Bare,
    Spool,
    Langsmith,
    AgentBundle,
}

/// One decoded log line.
#[derive(Debug)]
pub enum HookLine {
    /// A payload, with the time its envelope gives (none for a bare payload).
    Payload { envelope: Envelope, at_ms: Option<u64>, payload: Box<HookPayload> },
    /// A recorder's line that holds no hook payload (agent-bundle's MCP-server records): what
    /// it is, and the line.
    NotAHook { what: String },
}

/// Why a line is not a hook log line.
#[derive(Debug, thiserror::Error)]
pub enum HookLineError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a hook payload: no `hook_event_name`, and no envelope toolstream knows")]
    Unrecognised,
    #[error("the payload does not fit the hook model: {0}")]
    Payload(serde_json::Error),
}

/// Whether an object with these top-level keys is a hook log line (bare, or one of the
/// envelopes), for format detection.
pub fn is_hook_line_keys<'a>(mut keys: impl Iterator<Item = &'a str>) -> bool {
    keys.any(|k| matches!(k, "hook_event_name" | "received_ms" | "recordedAt" | "payload"))
}

/// Decode one log line.
pub fn parse_line(text: &str) -> Result<HookLine, HookLineError> {
    let Value::Object(mut obj) = serde_json::from_str::<Value>(text)? else {
        return Err(HookLineError::Unrecognised);
    };
    let payload = |v: Value| serde_json::from_value::<HookPayload>(v).map(Box::new).map_err(HookLineError::Payload);
    if obj.contains_key("hook_event_name") {
        return Ok(HookLine::Payload { envelope: Envelope::Bare, at_ms: None, payload: payload(Value::Object(obj))? });
    }
    if let Some(p) = obj.remove("payload") {
        let (envelope, at_ms) = match obj.get("received_ms") {
            Some(t) => (Envelope::Spool, t.as_u64()),
            None => (Envelope::Langsmith, obj.get("ts").and_then(Value::as_str).and_then(parse_ms)),
        };
        return Ok(HookLine::Payload { envelope, at_ms, payload: payload(p)? });
    }
    if obj.contains_key("recordedAt") {
        let at_ms = obj.get("recordedAt").and_then(Value::as_str).and_then(parse_ms);
        return match obj.get_mut("event").and_then(|e| e.get_mut("native")).map(Value::take) {
            Some(native) => Ok(HookLine::Payload { envelope: Envelope::AgentBundle, at_ms, payload: payload(native)? }),
            None => {
                let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("record");
                Ok(HookLine::NotAHook { what: format!("agent-bundle:{kind}") })
            }
        };
    }
    Err(HookLineError::Unrecognised)
}

/// A recorded JSON-in-a-string value (`tool_output`, `result_json`): the document when it parses,
/// else the text (a recorder cut it short), else nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Recorded {
    Json(Value),
    Text(String),
}

impl Recorded {
    /// Read a recorded value: a string is parsed as JSON when it can be; any other JSON value is
    /// taken as it is.
    pub fn parse(v: &Value) -> Option<Recorded> {
        match v {
            Value::Null => None,
            Value::String(s) if s.trim().is_empty() => None,
            Value::String(s) => Some(match serde_json::from_str::<Value>(s) {
                Ok(doc) => Recorded::Json(doc),
                Err(_) => Recorded::Text(s.clone()),
            }),
            other => Some(Recorded::Json(other.clone())),
        }
    }
}

/// The marker agent-bundle's recorder leaves where it cut a long string (`…[+777 chars]`).
pub fn is_clipped(s: &str) -> bool {
    s.rfind("…[+").is_some_and(|i| s[i..].ends_with(" chars]"))
}

/// The prefix of MCP tool names in hooks (`MCP:<tool>`).
pub const MCP_TOOL_PREFIX: &str = "MCP:";

/// The tool kind of a hook `tool_name`, and the MCP tool's own name for `MCP:<tool>`; `None` for a
/// tool the registry does not know (a generic card).
pub fn hook_tool(name: &str) -> (Option<ToolKind>, Option<&str>) {
    match name.strip_prefix(MCP_TOOL_PREFIX) {
        Some(tool) => (Some(ToolKind::Mcp), Some(tool)),
        None => (ToolKind::from_alias(name), None),
    }
}

/// Hook (and agent transcript) argument names → the canonical args' names, per tool kind.
fn arg_renames(kind: ToolKind) -> &'static [(&'static str, &'static str)] {
    match kind {
        ToolKind::Read | ToolKind::Edit | ToolKind::Write | ToolKind::Delete | ToolKind::Ls => {
            &[("file_path", "path"), ("target_file", "path"), ("target_directory", "path")]
        }
        ToolKind::Grep => &[("file_path", "path"), ("output_mode", "outputMode"), ("-i", "caseInsensitive")],
        ToolKind::Glob => &[("glob_pattern", "globPattern"), ("target_directory", "targetDirectory")],
        ToolKind::Shell => &[("cwd", "workingDirectory"), ("working_directory", "workingDirectory")],
        ToolKind::Task => &[("subagent_type", "subagentType")],
        ToolKind::WebSearch => &[("search_term", "searchTerm")],
        ToolKind::UpdateTodos | ToolKind::CreatePlan | ToolKind::ReadLints => &[],
        ToolKind::Mcp | ToolKind::SemSearch | ToolKind::GenerateImage | ToolKind::RecordScreen | ToolKind::WebFetch => {
            &[]
        }
    }
}

/// Rename `from` keys to `to` keys, each only when `to` is not there already; an empty string
/// under `from` is dropped when `to` is (Cursor sends `"cwd": ""` for "the workspace").
fn rename(obj: &mut Map<String, Value>, pairs: &[(&str, &str)]) {
    for (from, to) in pairs {
        if obj.contains_key(*to) {
            continue;
        }
        match obj.remove(*from) {
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => {
                obj.insert((*to).to_owned(), v);
            }
            None => {}
        }
    }
}

/// The canonical args of a hook's (or transcript's) `tool_input`. An MCP call's input becomes
/// `{toolName, args}`, the shape of the CLI's `mcpToolCall.args`.
pub fn canonical_args(kind: Option<ToolKind>, mcp_tool: Option<&str>, input: Option<&Value>) -> Value {
    let mut obj = match input {
        Some(Value::Object(o)) => o.clone(),
        Some(Value::Null) | None => Map::new(),
        Some(other) => return other.clone(),
    };
    match kind {
        Some(ToolKind::Mcp) => {
            let mut out = Map::new();
            if let Some(t) = mcp_tool {
                out.insert("toolName".into(), t.into());
            }
            out.insert("args".into(), Value::Object(obj));
            Value::Object(out)
        }
        Some(k) => {
            rename(&mut obj, arg_renames(k));
            Value::Object(obj)
        }
        None => Value::Object(obj),
    }
}

/// A Cursor Glob call as hooks report it: a `Grep` with an empty `pattern` and a `glob` (the
/// transcript of the same session names it `Glob`, with `glob_pattern` / `target_directory`).
pub fn is_glob_as_grep(input: Option<&Value>) -> bool {
    let s = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
    s("pattern").is_some_and(str::is_empty) && s("glob").is_some_and(|g| !g.is_empty())
}

/// A hook-reported Glob (see [`is_glob_as_grep`]) as the canonical glob args.
pub fn glob_args_from_grep(input: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(g) = input.and_then(|i| i.get("glob")) {
        out.insert("globPattern".into(), g.clone());
    }
    if let Some(d) = input.and_then(|i| i.get("file_path").or_else(|| i.get("path"))) {
        out.insert("targetDirectory".into(), d.clone());
    }
    Value::Object(out)
}

/// What a successful `postToolUse` recorded, as the canonical result (the inner object of the
/// success arm); `None` when it recorded nothing a card could truthfully show (a `Grep` reports
/// `{pattern, success}`, not its matches: its card says the result was not recorded rather than
/// "No matches found").
pub fn canonical_result(kind: Option<ToolKind>, output: &Recorded) -> Option<Value> {
    let obj = match output {
        Recorded::Json(Value::Object(o)) => o,
        Recorded::Json(other) => return Some(other.clone()),
        Recorded::Text(t) => return text_result(kind, t),
    };
    let mut out = obj.clone();
    match kind {
        Some(ToolKind::Shell) => rename(&mut out, &[("output", "stdout")]),
        Some(ToolKind::Read | ToolKind::Write | ToolKind::Edit | ToolKind::Delete) => {
            rename(&mut out, &[("file_path", "path")]);
        }
        Some(ToolKind::Grep | ToolKind::Glob) => {
            let has_results = out.keys().any(|k| !matches!(k.as_str(), "pattern" | "success" | "path" | "file_path"));
            if !has_results {
                return None;
            }
        }
        Some(ToolKind::Mcp) => {
            // `{content: [{type: "text", text}], isError}` → the CLI's `{content: [{text: {text}}]}`.
            if let Some(Value::Array(items)) = out.get_mut("content") {
                for item in items.iter_mut() {
                    if let Some(o) = item.as_object_mut() {
                        if let (Some("text"), Some(text)) =
                            (o.get("type").and_then(Value::as_str), o.get("text").cloned())
                        {
                            o.remove("type");
                            o.insert("text".into(), serde_json::json!({ "text": text }));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    Some(Value::Object(out))
}

/// A result recorded only as text (cut short, or not JSON): the body it stands for.
fn text_result(kind: Option<ToolKind>, text: &str) -> Option<Value> {
    let key = match kind {
        Some(ToolKind::Shell) => "stdout",
        Some(ToolKind::Mcp) => return Some(serde_json::json!({ "content": [{ "text": { "text": text } }] })),
        Some(ToolKind::Read) => "content",
        _ => "output",
    };
    Some(serde_json::json!({ key: text }))
}

/// An MCP result that reports `isError: true` is a failed call.
pub fn mcp_is_error(output: &Recorded) -> bool {
    matches!(output, Recorded::Json(v) if v.get("isError").and_then(Value::as_bool) == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_table_is_in_enum_order() {
        for (i, s) in HOOK_EVENTS.iter().enumerate() {
            assert_eq!(s.event as usize, i, "{}", s.name);
            assert_eq!(HookEvent::from_name(s.name), Some(s.event));
        }
        assert_eq!(HookEvent::from_name("beforeTabFileRead"), None);
        assert!(HookEvent::installed().any(|e| e == HookEvent::Stop));
        assert!(!HookEvent::installed().any(|e| e == HookEvent::BeforeReadFile));
    }

    #[test]
    fn every_envelope_gives_the_payload_and_its_time() {
        let bare = r#"{"hook_event_name":"stop","conversation_id":"c","status":"completed"}"#;
        let HookLine::Payload { envelope, at_ms, payload } = parse_line(bare).unwrap() else { panic!() };
        assert_eq!((envelope, at_ms, payload.event()), (Envelope::Bare, None, Some(HookEvent::Stop)));

        let spool = r#"{"received_ms":1700000000123,"payload":{"hook_event_name":"stop"}}"#;
        let HookLine::Payload { envelope, at_ms, .. } = parse_line(spool).unwrap() else { panic!() };
        assert_eq!((envelope, at_ms), (Envelope::Spool, Some(1_700_000_000_123)));

        let ls = r#"{"ts":"2026-06-09T15:53:15.226Z","evt":"stop","cwd":"/x","payload":{"hook_event_name":"stop"}}"#;
        let HookLine::Payload { envelope, at_ms, .. } = parse_line(ls).unwrap() else { panic!() };
        assert_eq!(envelope, Envelope::Langsmith);
        assert_eq!(at_ms, parse_ms("2026-06-09T15:53:15.226Z"));

        let ab =
            r#"{"event":{"native":{"hook_event_name":"stop"}},"recordedAt":"2026-09-03T08:35:23.873Z","kind":"event"}"#;
        let HookLine::Payload { envelope, .. } = parse_line(ab).unwrap() else { panic!() };
        assert_eq!(envelope, Envelope::AgentBundle);
        let mcp = r#"{"kind":"mcp","recordedAt":"2026-09-03T08:35:23.873Z","observed":{"tool":"dump"}}"#;
        assert!(matches!(parse_line(mcp).unwrap(), HookLine::NotAHook { what } if what == "agent-bundle:mcp"));

        assert!(matches!(parse_line("{\"x\":1}"), Err(HookLineError::Unrecognised)));
        assert!(matches!(parse_line("nope"), Err(HookLineError::Json(_))));
    }

    #[test]
    fn unknown_fields_are_kept_and_ids_keep_their_newlines() {
        let line = r#"{"hook_event_name":"preToolUse","tool_use_id":"call_a\nfc_b","brand_new":7}"#;
        let HookLine::Payload { payload, .. } = parse_line(line).unwrap() else { panic!() };
        assert_eq!(payload.tool_use_id.as_deref(), Some("call_a\nfc_b"));
        assert_eq!(payload.unknown_fields().collect::<Vec<_>>(), ["brand_new"]);
    }

    #[test]
    fn numbers_arrive_in_every_form() {
        let p: HookPayload =
            serde_json::from_str(r#"{"duration":"2.5","duration_ms":12,"input_tokens":"10","output_tokens":3.0}"#)
                .unwrap();
        assert_eq!(p.duration, Some(Millis(2.5)));
        assert_eq!(p.duration_ms.and_then(Millis::as_u64), Some(12));
        assert_eq!(p.tokens().map(|t| (t.input, t.output)), Some((10, 3)));
    }

    #[test]
    fn tool_output_is_parsed_when_it_parses_and_kept_as_text_when_clipped() {
        let ok = Value::String(r#"{"output":"hi\n","exitCode":0}"#.into());
        assert_eq!(Recorded::parse(&ok), Some(Recorded::Json(serde_json::json!({"output": "hi\n", "exitCode": 0}))));
        let clipped = Value::String("{\"output\":\"agent-transcripts\\ncanvases\u{2026}[+5378 chars]".into());
        let Some(Recorded::Text(t)) = Recorded::parse(&clipped) else { panic!() };
        assert!(is_clipped(&t));
        assert_eq!(Recorded::parse(&Value::String(String::new())), None);
    }

    #[test]
    fn hook_names_and_args_map_to_the_canonical_ones() {
        assert_eq!(hook_tool("MCP:dump"), (Some(ToolKind::Mcp), Some("dump")));
        assert_eq!(hook_tool("Subagent"), (Some(ToolKind::Task), None));
        assert_eq!(hook_tool("UpdateCurrentStep"), (None, None));
        let read = canonical_args(Some(ToolKind::Read), None, Some(&serde_json::json!({"file_path": "/a"})));
        assert_eq!(read, serde_json::json!({"path": "/a"}));
        let shell = canonical_args(Some(ToolKind::Shell), None, Some(&serde_json::json!({"command": "ls", "cwd": ""})));
        assert_eq!(shell, serde_json::json!({"command": "ls"}));
        let mcp = canonical_args(Some(ToolKind::Mcp), Some("probe"), Some(&serde_json::json!({"note": "x"})));
        assert_eq!(mcp, serde_json::json!({"toolName": "probe", "args": {"note": "x"}}));
        let g = serde_json::json!({"pattern": "", "glob": "**/*.go", "file_path": "/r"});
        assert!(is_glob_as_grep(Some(&g)));
        assert_eq!(
            glob_args_from_grep(Some(&g)),
            serde_json::json!({"globPattern": "**/*.go", "targetDirectory": "/r"})
        );
    }

    #[test]
    fn results_map_to_the_canonical_arms() {
        let shell = Recorded::Json(serde_json::json!({"output": "x", "exitCode": 2}));
        assert_eq!(
            canonical_result(Some(ToolKind::Shell), &shell),
            Some(serde_json::json!({"stdout": "x", "exitCode": 2}))
        );
        let grep = Recorded::Json(serde_json::json!({"pattern": "x", "success": true}));
        assert_eq!(canonical_result(Some(ToolKind::Grep), &grep), None, "no matches recorded: nothing to show");
        let mcp = Recorded::Json(serde_json::json!({"content": [{"type": "text", "text": "ok"}], "isError": false}));
        assert_eq!(
            canonical_result(Some(ToolKind::Mcp), &mcp),
            Some(serde_json::json!({"content": [{"text": {"text": "ok"}}], "isError": false}))
        );
        assert!(!mcp_is_error(&mcp));
        let clipped = Recorded::Text("{\"output\":\"a…[+9 chars]".into());
        assert_eq!(
            canonical_result(Some(ToolKind::Shell), &clipped),
            Some(serde_json::json!({"stdout": "{\"output\":\"a…[+9 chars]"}))
        );
    }
}
