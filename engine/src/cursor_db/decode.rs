//! One conversation of a Cursor chat database → canonical input events. Each user bubble opens a
//! run (its prompt), the assistant bubbles after it are the run's thinking, text and tool calls,
//! and the next user bubble (or the end) closes it: the runs of one conversation share its
//! composer id as their session, so they stay one chat downstream. Event time is each bubble's
//! `createdAt`.
//!
//! Tool bubbles map by numeric id to canonical tools, their `params`/`rawArgs`/`result` JSON
//! strings become the canonical args and result (checked against the typed tool models), and
//! their status becomes the result's arm (`loading`: no completion, an incomplete call). Nothing
//! here fails on a bad bubble: a missing or unreadable one, an unparsable payload, an unknown tool
//! id or a missing field is reported as a [`DecodeError`] that names the bubble's key, and the
//! bubble still becomes what it can — a bad tool bubble a neutral card of its raw text.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolstream_schemas::cursor_bubble::{
    bubble_key, canonical_args, canonical_result, composer_key, resolve_tool, result_status, time_ms, Bubble,
    ComposerData, ComposerHead, ResultContext, ToolFormerData, BUBBLE_ASSISTANT, BUBBLE_USER, CAPABILITY_TOOL,
    CONTENT_PREFIX,
};
use toolstream_schemas::cursor_cli::tool_models::{parse_args, parse_failure, parse_success};
use toolstream_schemas::{
    CallArgs, CallIdent, Input, InputEvent, ResultStatus, RunEnd, RunStart, RunStatus, SourcePos, Tool, ToolEvent,
    ToolKind, ToolResult,
};

use super::open::{CursorDb, CursorDbError};
use crate::decode::DecodeError;

/// One decoded item: an event, or a report about a bubble.
pub type Decoded = Result<InputEvent, DecodeError>;

/// A bubble's key and the bubble (or why it could not be read).
type KeyedBubble = (String, Result<Bubble, String>);

/// Decode conversation `id` of `db`, appending its events and reports to `out` in order.
pub fn conversation_events(db: &CursorDb, id: &str, out: &mut Vec<Decoded>) -> Result<(), CursorDbError> {
    let key = composer_key(id);
    let raw = db
        .value(&key)?
        .ok_or_else(|| CursorDbError::NoConversation { path: db.path().to_path_buf(), id: id.to_owned() })?;
    let mut conv = Conversation::new(db, id);
    let data = match serde_json::from_str::<ComposerData>(&raw) {
        Ok(d) => d,
        Err(e) => {
            out.push(Err(conv.report(&key, 0, format!("unreadable conversation: {e}"))));
            return Ok(());
        }
    };
    let heads = db.heads();
    let head = heads.iter().find(|h| h.composer_id.as_deref() == Some(id));
    conv.cwd = workspace(&data, head);
    conv.model = data.model_config.as_ref().and_then(|m| m.model_name.clone()).filter(|m| !m.is_empty());
    tracing::debug!(conversation = id, cwd = ?conv.cwd, "decoding a Cursor conversation");
    for (pos, (bubble_key, bubble)) in bubbles(db, id, &data, out, &conv)?.into_iter().enumerate() {
        conv.bubble(&bubble_key, pos as u64 + 1, bubble, out);
    }
    conv.close(run_status(data.status.as_deref()), out);
    Ok(())
}

/// The conversation's bubbles in order: `fullConversationHeadersOnly` (rows it names but that are
/// missing are reported), then rows it does not name (by time); or the inline bubbles of older
/// builds.
fn bubbles(
    db: &CursorDb,
    id: &str,
    data: &ComposerData,
    out: &mut Vec<Decoded>,
    conv: &Conversation<'_>,
) -> Result<Vec<KeyedBubble>, CursorDbError> {
    let mut list = Vec::new();
    let parse = |raw: &str| serde_json::from_str::<Bubble>(raw).map_err(|e| e.to_string());
    if let (None, Some(inline)) = (&data.full_conversation_headers_only, &data.conversation) {
        for (i, v) in inline.iter().enumerate() {
            let bid = v.get("bubbleId").and_then(Value::as_str).map_or_else(|| format!("#{i}"), str::to_owned);
            let b = serde_json::from_value::<Bubble>(v.clone()).map_err(|e| e.to_string());
            list.push((bubble_key(id, &bid), b));
        }
        return Ok(list);
    }
    let mut named = std::collections::HashSet::new();
    for (i, h) in data.full_conversation_headers_only.iter().flatten().enumerate() {
        let Some(bid) = h.bubble_id.as_deref() else {
            out.push(Err(conv.report(&composer_key(id), i as u64 + 1, "a bubble header has no bubbleId".into())));
            continue;
        };
        named.insert(bid.to_owned());
        let key = bubble_key(id, bid);
        match db.value(&key)? {
            Some(raw) => list.push((key, parse(&raw))),
            None => out.push(Err(conv.report(&key, i as u64 + 1, "listed by the conversation but missing".into()))),
        }
    }
    let prefix = bubble_key(id, "");
    let mut rest: Vec<(Option<u64>, String, Result<Bubble, String>)> = db
        .rows_with_prefix(&prefix)?
        .into_iter()
        .filter(|(k, _)| !named.contains(&k[prefix.len()..]))
        .map(|(k, raw)| {
            let b = parse(&raw);
            let t = b.as_ref().ok().and_then(|b| b.created_at.as_ref()).and_then(time_ms);
            (t, k, b)
        })
        .collect();
    rest.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    list.extend(rest.into_iter().map(|(_, k, b)| (k, b)));
    Ok(list)
}

fn workspace(data: &ComposerData, head: Option<&ComposerHead>) -> Option<String> {
    data.workspace_identifier
        .as_ref()
        .or(head.and_then(|h| h.workspace_identifier.as_ref()))
        .and_then(|w| w.folder())
        .map(str::to_owned)
}

/// How the conversation's last run ended, from the conversation's status.
fn run_status(status: Option<&str>) -> RunStatus {
    match status {
        Some("aborted" | "cancelled") => RunStatus::Cancelled,
        Some("error" | "failed") => RunStatus::Error,
        _ => RunStatus::Finished,
    }
}

/// Decoding state of one conversation.
struct Conversation<'a> {
    db: &'a CursorDb,
    session: Arc<str>,
    source: String,
    cwd: Option<String>,
    model: Option<String>,
    run_open: bool,
    /// The latest bubble time (a bubble without one happens then).
    now: Option<u64>,
    pos: SourcePos,
}

impl<'a> Conversation<'a> {
    fn new(db: &'a CursorDb, id: &str) -> Self {
        Conversation {
            db,
            session: Arc::from(id),
            source: db.path().display().to_string(),
            cwd: None,
            model: None,
            run_open: false,
            now: None,
            pos: SourcePos::default(),
        }
    }

    fn report(&self, key: &str, pos: u64, reason: String) -> DecodeError {
        DecodeError { source_name: Arc::from(format!("{}[{key}]", self.source)), line_no: pos, byte_offset: 0, reason }
    }

    fn event(&self, kind: Input) -> Decoded {
        Ok(InputEvent { session: self.session.clone(), at_ms: self.now, pos: self.pos, kind })
    }

    fn open(&mut self, prompt: Option<String>, out: &mut Vec<Decoded>) {
        let start = RunStart {
            cwd: self.cwd.clone(),
            model: self.model.clone(),
            prompt: None,
            context: None,
            extra: Vec::new(),
        };
        out.push(self.event(Input::RunStarted(Box::new(start))));
        if let Some(text) = prompt {
            out.push(self.event(Input::UserPrompt { text }));
        }
        self.run_open = true;
    }

    fn close(&mut self, status: RunStatus, out: &mut Vec<Decoded>) {
        if !std::mem::take(&mut self.run_open) {
            return;
        }
        let error = match status {
            RunStatus::Finished => None,
            RunStatus::Cancelled => Some("aborted".to_owned()),
            RunStatus::Error => Some("the Cursor conversation ended with an error".to_owned()),
        };
        let end = RunEnd {
            status,
            result_text: None,
            usage: None,
            error,
            duration_ms: None,
            incomplete: false,
            extra: Vec::new(),
        };
        out.push(self.event(Input::RunEnded(Box::new(end))));
    }

    fn bubble(&mut self, key: &str, pos: u64, bubble: Result<Bubble, String>, out: &mut Vec<Decoded>) {
        self.pos = SourcePos { line: pos, offset: 0 };
        let b = match bubble {
            Ok(b) => b,
            Err(e) => {
                out.push(Err(self.report(key, pos, format!("unreadable bubble: {e}"))));
                return;
            }
        };
        if let Some(t) = b.created_at.as_ref().and_then(time_ms) {
            self.now = Some(t);
        } else {
            out.push(Err(self.report(key, pos, "bubble has no createdAt time".into())));
        }
        let kind = b.kind.map(|k| k.get());
        if kind == Some(BUBBLE_USER) {
            self.close(RunStatus::Finished, out);
            self.open(b.text, out);
            return;
        }
        if kind != Some(BUBBLE_ASSISTANT) {
            out.push(Err(self.report(key, pos, format!("bubble type {kind:?} is neither 1 (user) nor 2 (assistant)"))));
        }
        if !self.run_open {
            self.open(None, out);
        }
        if let Some(thinking) = b.thinking.as_ref().and_then(|t| t.text.clone()).filter(|t| !t.is_empty()) {
            out.push(self.event(Input::ThinkingDelta { text: thinking.into() }));
            let duration_ms = b.thinking_duration_ms.and_then(|d| d.as_u64());
            out.push(self.event(Input::ThinkingCompleted { duration_ms }));
        }
        if let Some(text) = b.text.filter(|t| !t.is_empty()) {
            out.push(self.event(Input::TextDelta { text: text.into() }));
        }
        match b.tool_former_data {
            Some(tf) => self.tool(key, pos, b.bubble_id.as_deref(), tf, out),
            None if b.capability_type.map(|c| c.get()) == Some(CAPABILITY_TOOL) => {
                out.push(Err(self.report(key, pos, "tool bubble without toolFormerData".into())));
            }
            None => {}
        }
    }

    fn tool(&mut self, key: &str, pos: u64, bubble_id: Option<&str>, tf: ToolFormerData, out: &mut Vec<Decoded>) {
        let mut report = |reason: String| out.push(Err(self.report(key, pos, reason)));
        let id = tf.tool.map(|t| t.get());
        let resolved = resolve_tool(id, tf.name.as_deref());
        match id {
            Some(id) if !resolved.known_id => report(format!("unknown tool id {id}; shown as `{}`", resolved.tool)),
            None if tf.name.is_none() => report("toolFormerData has neither `tool` nor `name`".into()),
            _ => {}
        }
        let call_id = match tf.tool_call_id.clone().filter(|c| !c.is_empty()) {
            Some(c) => c,
            None => {
                report("toolFormerData has no toolCallId".into());
                format!("bubble:{}", bubble_id.unwrap_or(key))
            }
        };
        let status = result_status(&tf);
        let mut bad: Vec<String> = Vec::new();
        let mut json = |what: &str, v: &Option<Value>| -> Option<Value> {
            match v {
                None => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        bad.push(format!("{what} is not JSON: {e}"));
                        None
                    }
                },
                Some(other) => Some(other.clone()),
            }
        };
        let params = json("params", &tf.params);
        let raw_args = json("rawArgs", &tf.raw_args);
        let result = json("result", &tf.result);
        let object = |v: Option<Value>, what: &str, bad: &mut Vec<String>| match v {
            None => None,
            Some(Value::Object(o)) => Some(o),
            Some(_) => {
                bad.push(format!("{what} is not a JSON object"));
                None
            }
        };
        let params = object(params, "params", &mut bad);
        let raw_args = object(raw_args, "rawArgs", &mut bad);
        let mut tool = resolved.tool;
        let mut wire_name = match &tool {
            Tool::Known(k) => k.spec().cli_key.to_owned(),
            Tool::Unknown(n) => n.to_string(),
        };
        let args = match tool.kind() {
            Some(kind) => canonical_args(kind, params, raw_args),
            None => {
                let mut all = params.unwrap_or_default();
                all.extend(raw_args.unwrap_or_default());
                Value::Object(all)
            }
        };
        if tool.kind() == Some(ToolKind::Mcp) {
            let name = args.get("toolName").or_else(|| args.get("tool_name")).and_then(Value::as_str);
            tool = tool.reclassified_for_mcp(name);
        }
        let payload_kind = tool.kind().map(|k| if wire_name.starts_with("mcp") { ToolKind::Mcp } else { k });
        if let (Some(kind), Some(k)) = (payload_kind, tool.kind()) {
            if kind != k {
                wire_name = ToolKind::Mcp.spec().cli_key.to_owned();
            }
            if let Err(e) = parse_args(kind, &args.to_string()) {
                bad.push(format!("args do not fit the {kind} model: {e}"));
            }
        }
        // A shell the user refused says so in its result, as the CLI's `rejected` arm does.
        let refused = result.as_ref().and_then(|r| r.get("rejected")) == Some(&Value::Bool(true));
        let status = match status {
            Some(_) if refused && tool.kind() == Some(ToolKind::Shell) => Some(ResultStatus::Rejected),
            other => other,
        };
        let failed = status.as_ref().is_some_and(|s| !s.is_success());
        let content = |id: &str| -> Option<String> {
            if !id.starts_with(CONTENT_PREFIX) {
                return None;
            }
            self.db.value(id).ok().flatten()
        };
        let value = match (payload_kind, &status) {
            (_, None) => None,
            (Some(kind), Some(st)) => {
                let ctx =
                    ResultContext { args: &args, additional: tf.additional_data.as_ref(), content: &content, failed };
                let v = canonical_result(kind, result.clone(), &ctx);
                let check = match &v {
                    Some(v) if st.is_success() => parse_success(kind, &v.to_string()).err(),
                    Some(v) => parse_failure(&v.to_string()).err(),
                    None => None,
                };
                if let Some(e) = check {
                    bad.push(format!("result does not fit the {kind} model: {e}"));
                }
                v
            }
            (None, Some(_)) => result.clone(),
        };
        for reason in &bad {
            out.push(Err(self.report(key, pos, reason.clone())));
        }
        // Anything that could not be decoded: a neutral card of the bubble's own text.
        let (tool, args, value) = if bad.is_empty() {
            (tool, args, value)
        } else {
            let name = tf.name.clone().unwrap_or_else(|| tool.name().to_owned());
            wire_name = name.clone();
            let mut raw = Map::new();
            for (k, v) in [("params", &tf.params), ("rawArgs", &tf.raw_args)] {
                if let Some(v) = v {
                    raw.insert(k.into(), v.clone());
                }
            }
            (Tool::unknown(&name), Value::Object(raw), tf.result.clone())
        };
        let model_call_id = tf.model_call_id.clone().filter(|m| !m.is_empty());
        let started_at_ms = tf.additional_data.as_ref().and_then(|a| a.get("startedAtMs")).and_then(time_ms);
        let to_raw = |v: &Value| RawValue::from_string(v.to_string()).ok();
        // One tree for the start and the completion.
        let args = CallArgs::from_tree(args).ok().map(Arc::new);
        let make = |result: Option<ToolResult>| ToolEvent {
            call_id: call_id.clone(),
            tool: tool.clone(),
            wire_name: wire_name.clone(),
            args: args.clone(),
            result,
            model_call_id: model_call_id.clone(),
            started_at_ms,
            completed_at_ms: None,
            openai_call: None,
            reported_call_id: None,
            call: CallIdent::default(),
            extra: Vec::new(),
        };
        out.push(self.event(Input::ToolStarted(Box::new(make(None)))));
        let Some(status) = status else { return };
        let value = match value {
            Some(v) => to_raw(&v),
            // A failure with nothing recorded still fails.
            None if !status.is_success() => to_raw(&Value::Object(Map::new())),
            None => None,
        };
        let result = value.map(|value| ToolResult::new(status, value));
        out.push(self.event(Input::ToolCompleted(Box::new(make(result)))));
    }
}
