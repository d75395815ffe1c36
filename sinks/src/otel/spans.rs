//! The pure mapping from output events to spans (SPEC §9.7): one `invoke_agent` span per run and
//! one child `execute_tool <tool>` span per call, with timestamps from the recorded times, the
//! parent relation set explicitly, lifecycle lines and shell progress as span events, and failure
//! marked exactly on failed calls and failed or cancelled runs. No runtime, no IO: [`SpanMapper`]
//! takes events and hands back finished spans (with what the metrics need). Per-run state lives
//! from a run's first event to its `RunClosed`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use toolstream_schemas::{Card, IncompleteCall, Output, OutputEvent, RunId, RunStatus, Tool, ToolKind};

use super::attrs as a;

/// SPEC §8's transcript bound, applied again to content attributes: at most this many chars…
pub const CONTENT_MAX_CHARS: usize = 24_000;
/// …and lines, then `... (N more lines truncated)`.
pub const CONTENT_MAX_LINES: usize = 800;
/// Span events kept per call span (the SDK's default limit); the rest are counted as dropped.
pub const MAX_EVENTS_PER_SPAN: usize = 128;

/// What the mapping needs to know.
#[derive(Clone, Debug)]
pub struct MapOptions {
    /// Write `gen_ai.tool.call.arguments` / `.result` and shell lines (the content opt-in).
    pub capture_content: bool,
    /// Mixed into every trace and span id, so that two replays of one file are two traces.
    pub id_salt: [u8; 16],
}

/// A finished call span and what the metrics count of it.
#[derive(Debug)]
pub struct CallDone {
    pub span: SpanData,
    pub tool: String,
    pub failed: bool,
    pub duration: Duration,
}

/// Token counts of a run, as its span reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

/// A finished run span and its tokens (for the metrics).
#[derive(Debug)]
pub struct RunDone {
    pub span: SpanData,
    pub tokens: Option<Tokens>,
}

/// A span that ended.
#[derive(Debug)]
pub enum Finished {
    Call(Box<CallDone>),
    Run(Box<RunDone>),
}

impl Finished {
    pub fn span(&self) -> &SpanData {
        match self {
            Finished::Call(c) => &c.span,
            Finished::Run(r) => &r.span,
        }
    }

    pub fn into_span(self) -> SpanData {
        match self {
            Finished::Call(c) => c.span,
            Finished::Run(r) => r.span,
        }
    }
}

/// A call seen in progress (lifecycle lines, shell output) before its card.
#[derive(Debug, Default)]
struct OpenCall {
    first_ms: Option<u64>,
    events: Vec<Event>,
    dropped_events: u32,
}

/// One open run.
#[derive(Debug)]
struct RunState {
    trace_id: TraceId,
    span_id: SpanId,
    /// The earliest known time of the run: its first event with a time, or an earlier call start
    /// (events before the stream's first timestamp have time 0, which is no start).
    start_ms: Option<u64>,
    model: Option<String>,
    /// Calls in progress, by call hash.
    calls: HashMap<String, OpenCall>,
    /// Visible incomplete calls waiting for their card (which carries their times and content).
    incomplete: Vec<IncompleteCall>,
    /// Ordinal of the next call span (part of its id).
    next_call: u64,
    /// Sum of the messages' usage, for runs without a reported total.
    message_tokens: Option<Tokens>,
}

/// Output events in, finished spans out.
#[derive(Debug)]
pub struct SpanMapper {
    opts: MapOptions,
    scope: InstrumentationScope,
    runs: HashMap<Arc<RunId>, RunState>,
}

impl SpanMapper {
    pub fn new(opts: MapOptions) -> SpanMapper {
        SpanMapper { opts, scope: InstrumentationScope::builder(a::SCOPE).build(), runs: HashMap::default() }
    }

    /// Runs open now (their state is held until `RunClosed`).
    pub fn open_runs(&self) -> usize {
        self.runs.len()
    }

    /// Map one event, appending the spans it ended to `out`.
    pub fn handle(&mut self, ev: &OutputEvent, out: &mut Vec<Finished>) {
        // Engine notices (what sinks dropped) belong to no run.
        if matches!(ev.kind, Output::Diagnostic { .. }) {
            return;
        }
        if !self.runs.contains_key(&ev.run) {
            let (trace_id, span_id) = self.run_ids(&ev.run);
            let state = RunState {
                trace_id,
                span_id,
                start_ms: None,
                model: None,
                calls: HashMap::default(),
                incomplete: Vec::new(),
                next_call: 0,
                message_tokens: None,
            };
            self.runs.insert(ev.run.clone(), state);
        }
        let capture = self.opts.capture_content;
        let salt = self.opts.id_salt;
        let Some(run) = self.runs.get_mut(&ev.run) else { return };
        run.saw_time(ev.at_ms);
        match &ev.kind {
            Output::RunOpened { model, .. } => run.model.clone_from(model),
            Output::LifecycleLine { call, title, label } => {
                let attrs = vec![
                    KeyValue::new(a::LIFECYCLE_TITLE, title.clone()),
                    KeyValue::new(a::LIFECYCLE_LABEL, label.clone()),
                ];
                run.call_event(&call.hash, ev.at_ms, a::EVENT_LIFECYCLE, attrs);
            }
            Output::ShellProgress { call, stream, line } => {
                let mut attrs = vec![KeyValue::new(a::SHELL_STREAM, stream.as_str())];
                if capture {
                    attrs.push(KeyValue::new(a::SHELL_LINE, line.clone()));
                }
                run.call_event(&call.hash, ev.at_ms, a::EVENT_SHELL_OUTPUT, attrs);
            }
            Output::MessageEnded { usage, .. } => {
                let t = run.message_tokens.get_or_insert_with(Tokens::default);
                t.input = t.input.saturating_add(usage.input);
                t.output = t.output.saturating_add(usage.output);
                t.cache_read = t.cache_read.saturating_add(usage.cache_read);
                t.cache_creation = t.cache_creation.saturating_add(usage.cache_write);
            }
            Output::IncompleteCall(rec) if rec.visible => run.incomplete.push((**rec).clone()),
            Output::IncompleteCall(rec) => {
                let open = run.calls.remove(&rec.call.hash).unwrap_or_default();
                let call = CallFacts::incomplete(rec, &open, ev.at_ms);
                out.push(run.call_span(&self.scope, salt, &ev.run, call, open, capture));
            }
            Output::Card(card) => {
                if card.incomplete.is_some() {
                    run.incomplete.retain(|r| r.call.hash != card.call.hash);
                }
                let open = run.calls.remove(&card.call.hash).unwrap_or_default();
                let call = CallFacts::from_card(card, &open, ev.at_ms, capture);
                out.push(run.call_span(&self.scope, salt, &ev.run, call, open, capture));
            }
            Output::RunClosed { status, totals, error, .. } => {
                let Some(mut run) = self.runs.remove(&ev.run) else { return };
                // Visible incomplete calls whose card never came (a dropped batch).
                for rec in std::mem::take(&mut run.incomplete) {
                    let open = run.calls.remove(&rec.call.hash).unwrap_or_default();
                    let call = CallFacts::incomplete(&rec, &open, ev.at_ms);
                    out.push(run.call_span(&self.scope, salt, &ev.run, call, open, capture));
                }
                let tokens = totals
                    .reported_usage
                    .map(|u| Tokens {
                        input: u.input_tokens,
                        output: u.output_tokens,
                        cache_read: u.cache_read_tokens,
                        cache_creation: u.cache_write_tokens,
                    })
                    .or(run.message_tokens);
                out.push(run.run_span(&self.scope, &ev.run, ev.at_ms, *status, error.as_deref(), tokens));
            }
            Output::MessageStarted { .. }
            | Output::Text { .. }
            | Output::Thinking { .. }
            | Output::BlockEnded { .. }
            | Output::Diagnostic { .. } => {}
        }
    }

    /// The run's trace id and span id: a hash of the salt and the run.
    fn run_ids(&self, run: &RunId) -> (TraceId, SpanId) {
        let d = digest(self.opts.id_salt, &run.session, run.seq, None);
        let mut t = [0u8; 16];
        t.copy_from_slice(&d[..16]);
        let mut s = [0u8; 8];
        s.copy_from_slice(&d[16..24]);
        (TraceId::from_bytes(t), SpanId::from_bytes(s))
    }
}

fn digest(salt: [u8; 16], session: &str, seq: u32, call: Option<u64>) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(session.as_bytes());
    h.update([0]);
    h.update(seq.to_le_bytes());
    if let Some(k) = call {
        h.update(k.to_le_bytes());
    }
    h.finalize().into()
}

/// Event time (ms since the epoch) as a timestamp.
fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// What a call span says, from its card or its incomplete record.
struct CallFacts {
    hash: String,
    tool: String,
    extension: bool,
    start_ms: u64,
    end_ms: u64,
    error_type: Option<&'static str>,
    args: Option<String>,
    result: Option<String>,
}

impl CallFacts {
    fn from_card(card: &Card, open: &OpenCall, at_ms: u64, capture: bool) -> CallFacts {
        let end_ms = card.completed_ms.unwrap_or(at_ms);
        let start_ms = card.started_ms.or(open.first_ms).unwrap_or(end_ms).min(end_ms);
        let error_type = match card.incomplete {
            Some(reason) => Some(reason.as_str()),
            None => card.is_error.then_some(a::ERROR_TOOL),
        };
        let (args, result) = if capture {
            let args = serde_json::to_string(&card.args).ok().map(|s| bound_content(&s).into_owned());
            (args, Some(bound_content(&card.content).into_owned()))
        } else {
            (None, None)
        };
        CallFacts {
            hash: card.call.hash.clone(),
            tool: tool_name(&card.source_tool, &card.args),
            extension: is_mcp(&card.source_tool),
            start_ms,
            end_ms,
            error_type,
            args,
            result,
        }
    }

    fn incomplete(rec: &IncompleteCall, open: &OpenCall, at_ms: u64) -> CallFacts {
        CallFacts {
            hash: rec.call.hash.clone(),
            tool: rec.source_tool.name().to_owned(),
            extension: is_mcp(&rec.source_tool),
            start_ms: open.first_ms.unwrap_or(at_ms).min(at_ms),
            end_ms: at_ms,
            error_type: Some(rec.reason.as_str()),
            args: None,
            result: None,
        }
    }
}

fn is_mcp(tool: &Tool) -> bool {
    tool.kind() == Some(ToolKind::Mcp)
}

/// The canonical tool name; for MCP, the MCP tool's own name (`toolName`, else `name`).
pub fn tool_name(tool: &Tool, args: &serde_json::Value) -> String {
    if is_mcp(tool) {
        let named = ["toolName", "name"].iter().find_map(|k| args.get(k).and_then(|v| v.as_str()));
        if let Some(n) = named.filter(|n| !n.is_empty()) {
            return n.to_owned();
        }
    }
    tool.name().to_owned()
}

/// SPEC §8's transcript bound: at most [`CONTENT_MAX_LINES`] lines and [`CONTENT_MAX_CHARS`]
/// chars, then `... (N more lines truncated)`.
pub fn bound_content(s: &str) -> Cow<'_, str> {
    let lines = s.split('\n').count();
    if lines <= CONTENT_MAX_LINES && s.chars().count() <= CONTENT_MAX_CHARS {
        return Cow::Borrowed(s);
    }
    let mut kept = String::new();
    let mut kept_lines = 0;
    for line in s.split('\n').take(CONTENT_MAX_LINES) {
        let room = CONTENT_MAX_CHARS.saturating_sub(kept.chars().count());
        if room == 0 {
            break;
        }
        if kept_lines > 0 {
            kept.push('\n');
        }
        kept.extend(line.chars().take(room));
        kept_lines += 1;
    }
    let more = lines.saturating_sub(kept_lines).max(1);
    kept.push_str(&format!("\n... ({more} more lines truncated)"));
    Cow::Owned(kept)
}

impl RunState {
    fn saw_time(&mut self, ms: u64) {
        if ms > 0 {
            self.start_ms = Some(self.start_ms.map_or(ms, |s| s.min(ms)));
        }
    }

    fn call_event(&mut self, hash: &str, at_ms: u64, name: &'static str, attrs: Vec<KeyValue>) {
        let call = self.calls.entry(hash.to_owned()).or_default();
        call.first_ms.get_or_insert(at_ms);
        if call.events.len() < MAX_EVENTS_PER_SPAN {
            call.events.push(Event::new(name, at(at_ms), attrs, 0));
        } else {
            call.dropped_events = call.dropped_events.saturating_add(1);
        }
    }

    fn context(&self, span_id: SpanId) -> SpanContext {
        SpanContext::new(self.trace_id, span_id, TraceFlags::SAMPLED, false, TraceState::default())
    }

    fn call_span(
        &mut self,
        scope: &InstrumentationScope,
        salt: [u8; 16],
        run: &RunId,
        call: CallFacts,
        open: OpenCall,
        capture: bool,
    ) -> Finished {
        self.saw_time(call.start_ms);
        let k = self.next_call;
        self.next_call += 1;
        let d = digest(salt, &run.session, run.seq, Some(k));
        let mut id = [0u8; 8];
        id.copy_from_slice(&d[..8]);
        let tool_type = if call.extension { a::TOOL_TYPE_EXTENSION } else { a::TOOL_TYPE_FUNCTION };
        let mut attributes = vec![
            KeyValue::new(a::OPERATION_NAME, a::OP_EXECUTE_TOOL),
            KeyValue::new(a::TOOL_NAME, call.tool.clone()),
            KeyValue::new(a::TOOL_CALL_ID, call.hash),
            KeyValue::new(a::TOOL_TYPE, tool_type),
        ];
        if capture {
            if let Some(args) = call.args {
                attributes.push(KeyValue::new(a::TOOL_CALL_ARGUMENTS, args));
            }
            if let Some(result) = call.result {
                attributes.push(KeyValue::new(a::TOOL_CALL_RESULT, result));
            }
        }
        let status = match call.error_type {
            Some(t) => {
                attributes.push(KeyValue::new(a::ERROR_TYPE, t));
                Status::error(t)
            }
            None => Status::Unset,
        };
        let mut events = SpanEvents::default();
        events.events = open.events;
        events.dropped_count = open.dropped_events;
        let span = SpanData {
            span_context: self.context(SpanId::from_bytes(id)),
            parent_span_id: self.span_id,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(format!("{} {}", a::OP_EXECUTE_TOOL, call.tool)),
            start_time: at(call.start_ms),
            end_time: at(call.end_ms),
            attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: scope.clone(),
        };
        let failed = call.error_type.is_some();
        let duration = Duration::from_millis(call.end_ms - call.start_ms);
        Finished::Call(Box::new(CallDone { span, tool: call.tool, failed, duration }))
    }

    fn run_span(
        &self,
        scope: &InstrumentationScope,
        run: &RunId,
        end_ms: u64,
        status: RunStatus,
        error: Option<&str>,
        tokens: Option<Tokens>,
    ) -> Finished {
        let mut attributes = vec![
            KeyValue::new(a::OPERATION_NAME, a::OP_INVOKE_AGENT),
            KeyValue::new(a::PROVIDER_NAME, a::PROVIDER_CURSOR),
            KeyValue::new(a::AGENT_NAME, a::AGENT_CURSOR),
            KeyValue::new(a::CONVERSATION_ID, run.session.to_string()),
        ];
        if let Some(m) = &self.model {
            attributes.push(KeyValue::new(a::REQUEST_MODEL, m.clone()));
        }
        if let Some(t) = tokens {
            for (key, n) in [
                (a::USAGE_INPUT_TOKENS, t.input),
                (a::USAGE_OUTPUT_TOKENS, t.output),
                (a::USAGE_CACHE_READ_INPUT_TOKENS, t.cache_read),
                (a::USAGE_CACHE_CREATION_INPUT_TOKENS, t.cache_creation),
            ] {
                attributes.push(KeyValue::new(key, i64::try_from(n).unwrap_or(i64::MAX)));
            }
        }
        let reason = match status {
            RunStatus::Finished => "stop",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
        };
        attributes.push(KeyValue::new(
            a::RESPONSE_FINISH_REASONS,
            Value::Array(Array::String(vec![StringValue::from(reason)])),
        ));
        let status = match status {
            RunStatus::Finished => Status::Unset,
            RunStatus::Error | RunStatus::Cancelled => {
                attributes.push(KeyValue::new(a::ERROR_TYPE, status.as_str()));
                Status::error(error.map_or_else(|| status.as_str().to_owned(), |e| e.chars().take(240).collect()))
            }
        };
        let span = SpanData {
            span_context: self.context(self.span_id),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(a::RUN_SPAN_NAME),
            start_time: at(self.start_ms.unwrap_or(end_ms).min(end_ms)),
            end_time: at(end_ms),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: scope.clone(),
        };
        Finished::Run(Box::new(RunDone { span, tokens }))
    }
}
