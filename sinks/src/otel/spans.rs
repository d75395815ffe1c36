//! The pure mapping from output events to spans (SPEC §9.7): one trace per run, its
//! `invoke_agent` span the root and one child `execute_tool <tool>` span per call, with timestamps
//! from the recorded times, the parent relation set explicitly, lifecycle lines and shell progress
//! as span events, and failure marked exactly on failed calls and failed, cancelled or incomplete
//! runs. No runtime, no IO: [`SpanMapper`] takes events and hands back finished spans (with what
//! the metrics need). Per-run state lives from a run's first event to its `RunClosed`.
//!
//! A nested run (a subagent's: `RunContext::parent` names its parent's task call) belongs to its
//! parent's trace, its `invoke_agent` span a child of that call's `execute_tool` span. Its spans
//! are held until that call's span is made (the engine delivers a child's close before its
//! parent call's card), then moved into the parent's trace; a nested run whose parent call never
//! comes is let go as a trace of its own at the next checkpoint.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use toolstream_schemas::{
    Card, IncompleteCall, Output, OutputEvent, ParentCall, RunContext, RunId, RunStatus, Tool, ToolKind,
};

use super::attrs as a;
use super::config::{ContentCapture, TextScrub};

/// SPEC §8's transcript bound, applied again to content attributes: at most this many chars…
pub const CONTENT_MAX_CHARS: usize = 24_000;
/// …and lines, then `... (N more lines truncated)`.
pub const CONTENT_MAX_LINES: usize = 800;
/// Span events kept per call span (the SDK's default limit); the rest are counted as dropped.
pub const MAX_EVENTS_PER_SPAN: usize = 128;
/// Task calls remembered after their span was made (for a subagent's run that closes after its
/// call's card); past it the table starts over.
const MAX_HOMES: usize = 4_096;

/// What the mapping needs to know.
#[derive(Clone, Debug)]
pub struct MapOptions {
    /// What content is written (prompts, responses, tool arguments and results, shell lines).
    pub capture: ContentCapture,
    /// Scrubs the assistant's own text before it is written as content (the rest comes scrubbed).
    pub scrub: TextScrub,
    /// Mixed into every trace and span id, so that two replays of one file are two traces.
    pub id_salt: [u8; 16],
}

/// A finished call span and what the metrics count of it.
#[derive(Debug)]
pub struct CallDone {
    pub span: SpanData,
    pub tool: String,
    /// Its `error.type`, when it failed.
    pub error_type: Option<&'static str>,
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

/// A finished run span and what the metrics count of it.
#[derive(Debug)]
pub struct RunDone {
    pub span: SpanData,
    pub tokens: Option<Tokens>,
    pub model: Option<String>,
    /// Its `error.type`, when it failed, was cancelled or is incomplete.
    pub error_type: Option<&'static str>,
    pub duration: Duration,
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

    fn span_mut(&mut self) -> &mut SpanData {
        match self {
            Finished::Call(c) => &mut c.span,
            Finished::Run(r) => &mut r.span,
        }
    }
}

/// A nested run's finished spans (and those of runs nested in it), waiting for their trace.
#[derive(Debug)]
struct Group {
    /// The nested run's `invoke_agent` span: the one whose parent is set when the group moves.
    root: SpanId,
    finished: Vec<Finished>,
}

impl Group {
    /// Into the trace `trace_id`, its root under `parent`.
    fn rehome(mut self, trace_id: TraceId, parent: SpanId) -> Vec<Finished> {
        for f in &mut self.finished {
            let span = f.span_mut();
            let c = &span.span_context;
            span.span_context =
                SpanContext::new(trace_id, c.span_id(), c.trace_flags(), false, c.trace_state().clone());
            if span.span_context.span_id() == self.root {
                span.parent_span_id = parent;
            }
        }
        self.finished
    }
}

/// Where a task call's span is: a subagent's run that closes later goes under it.
#[derive(Clone, Debug)]
struct Home {
    run: Arc<RunId>,
    trace_id: TraceId,
    span_id: SpanId,
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
    /// What the source knows of the run (its parent call, the Cursor build).
    context: Option<Box<RunContext>>,
    /// The prompt (scrubbed by the engine), kept only when content is captured.
    prompt: Option<String>,
    /// The assistant's text so far, kept (bounded) only when content is captured.
    response: String,
    response_chars: usize,
    /// A nested run's finished spans and those of runs nested in it, until its trace is known.
    held: Vec<Finished>,
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
    /// Nested runs that closed before their parent call's span was made, by that call.
    waiting: HashMap<(Arc<str>, String), Vec<Group>>,
    /// Task calls whose span was made, by (session, call hash).
    homes: HashMap<(Arc<str>, String), Home>,
}

impl RunState {
    fn new(trace_id: TraceId, span_id: SpanId) -> RunState {
        RunState {
            trace_id,
            span_id,
            start_ms: None,
            model: None,
            context: None,
            prompt: None,
            response: String::new(),
            response_chars: 0,
            held: Vec::new(),
            calls: HashMap::default(),
            incomplete: Vec::new(),
            next_call: 0,
            message_tokens: None,
        }
    }

    fn parent(&self) -> Option<&ParentCall> {
        self.context.as_ref().and_then(|c| c.parent.as_ref())
    }

    /// A span this run finished: held while the run waits for its trace, else out.
    fn finished(&mut self, f: Finished, out: &mut Vec<Finished>) {
        if self.parent().is_some() {
            self.held.push(f);
        } else {
            out.push(f);
        }
    }
}

impl SpanMapper {
    pub fn new(opts: MapOptions) -> SpanMapper {
        SpanMapper {
            opts,
            scope: InstrumentationScope::builder(a::SCOPE).build(),
            runs: HashMap::default(),
            waiting: HashMap::default(),
            homes: HashMap::default(),
        }
    }

    /// Let go of nested runs whose parent call never came: each a trace of its own (the end of
    /// the input, a checkpoint).
    pub fn release_waiting(&mut self, out: &mut Vec<Finished>) {
        let mut keys: Vec<_> = self.waiting.keys().cloned().collect();
        keys.sort();
        for k in keys {
            for g in self.waiting.remove(&k).unwrap_or_default() {
                out.extend(g.finished);
            }
        }
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
            self.runs.insert(ev.run.clone(), RunState::new(trace_id, span_id));
        }
        let capture = self.opts.capture;
        let salt = self.opts.id_salt;
        let Some(run) = self.runs.get_mut(&ev.run) else { return };
        run.saw_time(ev.at_ms);
        match &ev.kind {
            Output::RunOpened { model, prompt, context, .. } => {
                run.model.clone_from(model);
                run.context.clone_from(context);
                if capture.any() {
                    run.prompt.clone_from(prompt);
                }
            }
            Output::Text { delta, .. } if capture.any() => {
                if run.response_chars <= CONTENT_MAX_CHARS {
                    run.response.push_str(delta);
                    run.response_chars += delta.chars().count();
                }
            }
            Output::LifecycleLine { call, title, label } => {
                let attrs = vec![
                    KeyValue::new(a::LIFECYCLE_TITLE, title.clone()),
                    KeyValue::new(a::LIFECYCLE_LABEL, label.clone()),
                ];
                run.call_event(&call.hash, ev.at_ms, a::EVENT_LIFECYCLE, attrs);
            }
            Output::ShellProgress { call, stream, line } => {
                let mut attrs = vec![KeyValue::new(a::SHELL_STREAM, stream.as_str())];
                if capture.on_spans() {
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
                let f = run.call_span(&self.scope, salt, &ev.run, call, open, capture);
                run.finished(f, out);
            }
            Output::Card(card) => {
                if card.incomplete.is_some() {
                    run.incomplete.retain(|r| r.call.hash != card.call.hash);
                }
                let open = run.calls.remove(&card.call.hash).unwrap_or_default();
                let call = CallFacts::from_card(card, &open, ev.at_ms, capture.on_spans());
                let f = run.call_span(&self.scope, salt, &ev.run, call, open, capture);
                let (trace_id, span_id) = (run.trace_id, f.span().span_context.span_id());
                run.finished(f, out);
                // The subagent runs of this call, which closed before it, move into this trace.
                let key = (ev.run.session.clone(), card.call.hash.clone());
                for g in self.waiting.remove(&key).unwrap_or_default() {
                    for f in g.rehome(trace_id, span_id) {
                        run.finished(f, out);
                    }
                }
                if card.source_tool.kind() == Some(ToolKind::Task) {
                    if self.homes.len() >= MAX_HOMES {
                        self.homes.clear();
                    }
                    self.homes.insert(key, Home { run: ev.run.clone(), trace_id, span_id });
                }
            }
            Output::RunClosed { status, totals, error, final_text } => {
                let Some(mut run) = self.runs.remove(&ev.run) else { return };
                // Visible incomplete calls whose card never came (a dropped batch).
                for rec in std::mem::take(&mut run.incomplete) {
                    let open = run.calls.remove(&rec.call.hash).unwrap_or_default();
                    let call = CallFacts::incomplete(&rec, &open, ev.at_ms);
                    let f = run.call_span(&self.scope, salt, &ev.run, call, open, capture);
                    run.finished(f, out);
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
                let content = self.content(&run, final_text, *status);
                let end = RunClose {
                    at_ms: ev.at_ms,
                    status: *status,
                    incomplete: totals.incomplete,
                    error: error.as_deref(),
                };
                let f = run.run_span(&self.scope, &ev.run, end, tokens, content);
                match run.parent().cloned() {
                    None => out.push(f),
                    Some(parent) => {
                        let root = f.span().span_context.span_id();
                        let mut finished = std::mem::take(&mut run.held);
                        finished.push(f);
                        self.nested_closed(parent, Group { root, finished }, out);
                    }
                }
            }
            Output::MessageStarted { .. }
            | Output::Text { .. }
            | Output::Thinking { .. }
            | Output::BlockEnded { .. }
            | Output::Diagnostic { .. } => {}
        }
    }

    /// A nested run closed: into its parent call's trace when that call's span was made already,
    /// else waiting for it.
    fn nested_closed(&mut self, parent: ParentCall, group: Group, out: &mut Vec<Finished>) {
        let key = (parent.session, parent.call.hash);
        let Some(home) = self.homes.get(&key).cloned() else {
            self.waiting.entry(key).or_default().push(group);
            return;
        };
        match self.runs.get_mut(&home.run) {
            // The parent run is still open (and may be waiting for a trace itself).
            Some(run) => {
                for f in group.rehome(run.trace_id, home.span_id) {
                    run.finished(f, out);
                }
            }
            None => out.extend(group.rehome(home.trace_id, home.span_id)),
        }
    }

    /// The run's content attributes, per the capture mode: the prompt and the response as GenAI
    /// messages.
    fn content(&self, run: &RunState, final_text: &str, status: RunStatus) -> Option<Content> {
        if !self.opts.capture.any() {
            return None;
        }
        let response = if run.response.trim().is_empty() { final_text } else { run.response.as_str() };
        let input = run.prompt.as_deref().filter(|p| !p.trim().is_empty()).map(|p| {
            serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": bound_content(p)}]}]).to_string()
        });
        let output = (!response.trim().is_empty()).then(|| {
            let text = self.opts.scrub.scrub(&bound_content(response));
            let finish = finish_reason(status);
            serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": finish}])
                .to_string()
        });
        Some(Content { input, output, on_span: self.opts.capture.on_spans(), as_event: self.opts.capture.as_event() })
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
        capture: ContentCapture,
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
        if capture.on_spans() {
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
        let duration = Duration::from_millis(call.end_ms - call.start_ms);
        Finished::Call(Box::new(CallDone { span, tool: call.tool, error_type: call.error_type, duration }))
    }

    fn run_span(
        &self,
        scope: &InstrumentationScope,
        run: &RunId,
        end: RunClose<'_>,
        tokens: Option<Tokens>,
        content: Option<Content>,
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
        if let Some(c) = &self.context {
            if let Some(v) = &c.cursor_version {
                attributes.push(KeyValue::new(a::CURSOR_VERSION, v.clone()));
            }
            if let Some(m) = &c.composer_mode {
                attributes.push(KeyValue::new(a::CURSOR_COMPOSER_MODE, m.clone()));
            }
            if !c.workspace_roots.is_empty() {
                let roots = c.workspace_roots.iter().map(|r| StringValue::from(r.clone())).collect();
                attributes.push(KeyValue::new(a::CURSOR_WORKSPACE_ROOTS, Value::Array(Array::String(roots))));
            }
        }
        if let Some(t) = tokens {
            for (key, n) in [
                (a::USAGE_INPUT_TOKENS, t.input),
                (a::USAGE_OUTPUT_TOKENS, t.output),
                (a::USAGE_CACHE_READ_INPUT_TOKENS, t.cache_read),
                (a::USAGE_CACHE_WRITE_INPUT_TOKENS, t.cache_creation),
                (a::USAGE_CACHE_CREATION_INPUT_TOKENS, t.cache_creation),
            ] {
                attributes.push(KeyValue::new(key, i64::try_from(n).unwrap_or(i64::MAX)));
            }
        }
        attributes.push(KeyValue::new(
            a::RESPONSE_FINISH_REASONS,
            Value::Array(Array::String(vec![StringValue::from(finish_reason(end.status))])),
        ));
        let mut events = SpanEvents::default();
        if let Some(c) = content {
            let messages: Vec<KeyValue> = [(a::INPUT_MESSAGES, c.input), (a::OUTPUT_MESSAGES, c.output)]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| KeyValue::new(k, v)))
                .collect();
            if c.as_event {
                events.events.push(Event::new(a::EVENT_OPERATION_DETAILS, at(end.at_ms), messages.clone(), 0));
            }
            if c.on_span {
                attributes.extend(messages);
            }
        }
        let error_type = match (end.status, end.incomplete) {
            (RunStatus::Finished, _) => None,
            (_, true) => Some(a::ERROR_INCOMPLETE),
            (status, false) => Some(status.as_str()),
        };
        let status = match error_type {
            None => Status::Unset,
            Some(t) => {
                attributes.push(KeyValue::new(a::ERROR_TYPE, t));
                Status::error(end.error.map_or_else(|| t.to_owned(), |e| e.chars().take(240).collect()))
            }
        };
        let start_ms = self.start_ms.unwrap_or(end.at_ms).min(end.at_ms);
        let span = SpanData {
            span_context: self.context(self.span_id),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(a::RUN_SPAN_NAME),
            start_time: at(start_ms),
            end_time: at(end.at_ms),
            attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: scope.clone(),
        };
        let duration = Duration::from_millis(end.at_ms - start_ms);
        Finished::Run(Box::new(RunDone { span, tokens, model: self.model.clone(), error_type, duration }))
    }
}

/// How a run ended, as its span says.
struct RunClose<'a> {
    at_ms: u64,
    status: RunStatus,
    /// Its source ended before it did.
    incomplete: bool,
    error: Option<&'a str>,
}

/// A run's content, per the capture mode: GenAI message JSON.
struct Content {
    input: Option<String>,
    output: Option<String>,
    on_span: bool,
    as_event: bool,
}

/// `gen_ai.response.finish_reasons` of a run.
fn finish_reason(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Finished => "stop",
        RunStatus::Error => "error",
        RunStatus::Cancelled => "cancelled",
    }
}
