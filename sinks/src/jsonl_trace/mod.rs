//! The JSONL debug trace sink (SPEC §9.3): owns the mapping from output events to one small JSON
//! object per line `{ts, run, phase, …allowlisted fields}`, the diagnostic field allowlist, the
//! 4,000-char string bound and the per-file size cap with its single `artifact_truncated` marker
//! (SPEC §8). Assistant text and thinking never enter the trace (only their counts do), call ids
//! appear only as hashes, and every time is event time, so replays give byte-identical traces
//! (a line whose event has no time yet waits for one: [`untimed`]).

mod untimed;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use toolstream_schemas::by_arc::ByArc;
use toolstream_schemas::ids::hash8;
use toolstream_schemas::{
    Card, DiagFields, IncompleteCall, Output, OutputEvent, RunId, RunStatus, RunTotals, StopReason, TokenUsage, Usage,
};

use crate::{Sink, SinkError};

/// The default per-file cap (SPEC §8: 2 MiB), marker line included.
pub const DEFAULT_LIMIT_BYTES: u64 = 2 * 1024 * 1024;

/// Longest string value kept in a trace line; longer ones are cut and end with `…`.
pub const MAX_STRING_CHARS: usize = 4_000;

/// The only field names a `Diagnostic` may carry into the trace (union over all phases).
pub const DIAGNOSTIC_ALLOWLIST: &[&str] = &[
    "source",
    "line",
    "lines",
    "byteOffset",
    "reason",
    "toolName",
    "callIdHash",
    "reportedCallIdHash",
    "action",
    "segment",
    "what",
    "raw",
    "stream",
    "activeShells",
    "sourceKind",
    "turn",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "totalTokens",
    "label",
    "title",
    "count",
    "runId",
    "bridgeCallId",
    "cursorMcpCallId",
    "piToolCallId",
    "mcpToolName",
    "piToolName",
    "pendingCount",
    "queuedCount",
    "isError",
    "rejectionKind",
    "event",
    "value",
    "sink",
    "whenFull",
    "queueFull",
];

const CURSOR_MCP_CALL_PREFIX: &str = "cursor-mcp-call-";

/// The rest of one line after `ts`, `run` and `phase`: `,"key":value` pairs written straight into
/// the line's buffer, every string bounded (no list of fields, no JSON value per number).
struct LineWriter<'o>(&'o mut Vec<u8>);

impl LineWriter<'_> {
    /// `,"key":` — a key is one of this module's names, plain ASCII: written as it is.
    fn key(&mut self, key: &'static str) {
        debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{key}");
        self.0.extend_from_slice(b",\"");
        self.0.extend_from_slice(key.as_bytes());
        self.0.extend_from_slice(b"\":");
    }

    /// A value as serde_json writes it (numbers, `null`, booleans, small objects).
    fn json<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> io::Result<()> {
        self.key(key);
        serde_json::to_writer(&mut *self.0, value)?;
        Ok(())
    }

    /// A string, bounded.
    fn str(&mut self, key: &'static str, s: &str) -> io::Result<()> {
        self.json(key, bound_str(s).as_ref())
    }

    /// A string, or `null`.
    fn opt_str(&mut self, key: &'static str, s: Option<&str>) -> io::Result<()> {
        match s {
            Some(s) => self.str(key, s),
            None => self.json(key, &()),
        }
    }

    /// A JSON value with every string in it bounded.
    fn value(&mut self, key: &'static str, v: &Value) -> io::Result<()> {
        self.json(key, &Bounded(v))
    }
}

/// A JSON value written with every string in it bounded (object keys as they are).
struct Bounded<'a>(&'a Value);

impl Serialize for Bounded<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(s) => ser.serialize_str(&bound_str(s)),
            Value::Array(items) => ser.collect_seq(items.iter().map(Bounded)),
            Value::Object(map) => ser.collect_map(map.iter().map(|(k, v)| (k, Bounded(v)))),
            other => other.serialize(ser),
        }
    }
}

/// What a run streamed that the trace only counts.
#[derive(Clone, Copy, Debug, Default)]
struct RunCounters {
    text_deltas: u64,
    thinking_deltas: u64,
}

/// Writes the debug trace to any `Write` (a file, a buffer in tests).
pub struct JsonlTraceSink<W: Write + Send> {
    out: W,
    limit: u64,
    /// `{"type":"artifact_truncated","limitBytes":<limit>}\n`.
    marker: Vec<u8>,
    /// Bytes accepted so far (written or pending), marker included.
    written: u64,
    truncated: bool,
    suppressed: u64,
    runs: ByArc<RunId, RunCounters>,
    /// Each open run's label, hashed once (not per line).
    labels: ByArc<RunId, String>,
    /// The current batch's lines, written to `out` in one call.
    pending: Vec<u8>,
    /// Lines waiting for their event time.
    untimed: untimed::Untimed,
    /// Where a line that waits for its time is encoded.
    scratch: Vec<u8>,
}

impl JsonlTraceSink<BufWriter<File>> {
    /// Create (or truncate) `path` and trace into it with the default 2 MiB cap.
    pub fn create(path: &Path) -> io::Result<JsonlTraceSink<BufWriter<File>>> {
        JsonlTraceSink::create_with_limit(path, DEFAULT_LIMIT_BYTES)
    }

    /// Create (or truncate) `path` and trace into it, capped at `limit_bytes`; a FIFO or a device
    /// is written through, a symlink's target written (`output_file::open_stream`).
    pub fn create_with_limit(path: &Path, limit_bytes: u64) -> io::Result<JsonlTraceSink<BufWriter<File>>> {
        Ok(JsonlTraceSink::new(BufWriter::new(crate::output_file::open_stream(path)?), limit_bytes))
    }
}

impl<W: Write + Send> JsonlTraceSink<W> {
    /// Trace into `writer`, which must start empty: the cap counts only what this sink writes.
    /// The file never exceeds `limit_bytes`, the truncation marker included; a limit smaller than
    /// the marker line itself means nothing is written at all.
    pub fn new(writer: W, limit_bytes: u64) -> Self {
        let marker = format!("{{\"type\":\"artifact_truncated\",\"limitBytes\":{limit_bytes}}}\n").into_bytes();
        JsonlTraceSink {
            out: writer,
            limit: limit_bytes,
            marker,
            written: 0,
            truncated: false,
            suppressed: 0,
            runs: ByArc::default(),
            labels: ByArc::default(),
            pending: Vec::new(),
            untimed: untimed::Untimed::default(),
            scratch: Vec::new(),
        }
    }

    /// Lines not written because the cap was reached (the one that hit it included).
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }

    /// Whether the cap was reached (the marker line is the last line, when it fit).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes written so far, marker included.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The writer back (tests read the buffer). Lines of an accepted batch are already in it;
    /// lines still waiting for a time are written first, as at a checkpoint.
    pub fn into_inner(mut self) -> W {
        let _ = self.write_waiting();
        self.out
    }

    fn io(e: io::Error) -> SinkError {
        SinkError::Io { sink: "jsonl", source: e }
    }

    /// Trace one event into `pending` (or count it as suppressed once the cap is reached).
    fn trace(&mut self, ev: &OutputEvent) -> io::Result<()> {
        if self.truncated {
            if produces_line(&ev.kind) {
                self.suppressed += 1;
            }
            return Ok(());
        }
        // Every event tells its run's time, lines or not (a text delta may be the first to).
        self.untimed.learn(ev);
        if let Some((phase, counters)) = self.map_event(ev) {
            if self.labels.len() >= MAX_LABELS && !self.labels.contains_key(&ev.run) {
                self.labels.clear();
            }
            let label = self.labels.state_of(&ev.run, || run_label(&ev.run)).as_str();
            if ev.at_ms != 0 && self.untimed.is_empty() {
                // Encoded straight into the batch, taken back if it does not fit.
                let start = self.pending.len();
                let encoded = encode_ts(&mut self.pending, ev.at_ms)
                    .and_then(|()| encode_body(&mut self.pending, label, &phase, &ev.kind, counters));
                if let Err(e) = encoded {
                    self.pending.truncate(start);
                    return Err(e);
                }
                let len = (self.pending.len() - start) as u64;
                if !self.accept(len) {
                    self.pending.truncate(start);
                    self.stop_at_cap();
                }
            } else {
                // Encoded in a buffer kept warm, then held in one allocation of its size.
                self.scratch.clear();
                encode_body(&mut self.scratch, label, &phase, &ev.kind, counters)?;
                self.untimed.hold(ev, self.scratch.as_slice().to_vec());
            }
            if matches!(ev.kind, Output::RunClosed { .. }) {
                self.labels.remove(&ev.run);
            }
        }
        self.release()
    }

    /// Move the waiting lines whose time is now known (in order) into `pending`.
    fn release(&mut self) -> io::Result<()> {
        while !self.truncated {
            let Some((ts, body)) = self.untimed.pop_ready() else { break };
            let start = self.pending.len();
            if let Err(e) = encode_ts(&mut self.pending, ts) {
                self.pending.truncate(start);
                return Err(e);
            }
            self.pending.extend_from_slice(&body);
            let len = (self.pending.len() - start) as u64;
            if !self.accept(len) {
                self.pending.truncate(start);
                self.stop_at_cap();
            }
        }
        Ok(())
    }

    /// Write every line still waiting, with the latest time seen (a checkpoint: the file must
    /// be complete as it stands).
    fn write_waiting(&mut self) -> io::Result<()> {
        self.untimed.resolve_all();
        self.release()?;
        self.write_pending()
    }

    /// Hand the batch's lines to the writer.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let res = self.out.write_all(&self.pending);
        self.pending.clear();
        res
    }

    /// Whether a line of `len` bytes leaves room for the marker (it is then counted as written).
    fn accept(&mut self, len: u64) -> bool {
        let budget = self.limit.saturating_sub(self.marker.len() as u64);
        if self.written.saturating_add(len) <= budget {
            self.written += len;
            return true;
        }
        false
    }

    /// The cap is reached: append the marker (when it fits) and stop tracing.
    fn stop_at_cap(&mut self) {
        let marker_len = self.marker.len() as u64;
        self.truncated = true;
        self.suppressed += 1;
        self.runs.clear();
        self.labels.clear();
        self.untimed.clear();
        if self.written.saturating_add(marker_len) <= self.limit {
            self.pending.extend_from_slice(&self.marker);
            self.written += marker_len;
        }
    }

    /// Count on the counters of `run`, looked up by reference: its `Arc` is cloned only for a run
    /// first counted here (deltas are most of the events).
    fn count(&mut self, run: &Arc<RunId>, add: impl FnOnce(&mut RunCounters)) {
        add(self.runs.state_of(run, RunCounters::default));
    }

    /// The phase of `ev`'s line (with its run's counters, which its close writes), or `None` for
    /// events only counted.
    fn map_event<'a>(&mut self, ev: &'a OutputEvent) -> Option<(Cow<'a, str>, RunCounters)> {
        let phase: Cow<'a, str> = match &ev.kind {
            Output::RunOpened { .. } => "run_opened".into(),
            Output::MessageStarted { .. } => "message_started".into(),
            Output::Text { .. } => {
                self.count(&ev.run, |c| c.text_deltas += 1);
                return None;
            }
            Output::Thinking { .. } => {
                self.count(&ev.run, |c| c.thinking_deltas += 1);
                return None;
            }
            // Internal to the usage stage (sinks never see it); nothing to trace if one slips through.
            Output::BlockEnded { .. } => return None,
            Output::LifecycleLine { .. } => "tool_lifecycle".into(),
            Output::ShellProgress { .. } => "shell_progress".into(),
            Output::Card(_) => "tool_completed".into(),
            Output::IncompleteCall(inc) if inc.visible => "tool_incomplete".into(),
            Output::IncompleteCall(_) => "discarded-incomplete-started-tool-call".into(),
            Output::MessageEnded { .. } => "message_ended".into(),
            Output::RunClosed { .. } => {
                let counters = self.runs.remove(&ev.run).unwrap_or_default();
                return Some(("run_closed".into(), counters));
            }
            Output::Diagnostic { phase, .. } => phase.as_ref().into(),
        };
        Some((phase, RunCounters::default()))
    }
}

impl<W: Write + Send> Sink for JsonlTraceSink<W> {
    fn name(&self) -> &'static str {
        "jsonl"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.trace(ev).map_err(Self::io)?;
        }
        self.write_pending().map_err(Self::io)
    }

    /// Flushes what was written; lines still waiting for their time stay waiting.
    fn flush(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(Self::io)
    }

    fn checkpoint(&mut self) -> Result<(), SinkError> {
        self.write_waiting().map_err(Self::io)?;
        self.flush()
    }
}

/// Whether an event would produce a trace line (used to count suppressed lines cheaply).
fn produces_line(kind: &Output) -> bool {
    !matches!(kind, Output::Text { .. } | Output::Thinking { .. } | Output::BlockEnded { .. })
}

/// The run's label; the engine's run-less diagnostics (`seq` 0) get `""`.
/// Most run labels kept (runs normally leave at their close; this bounds runs that never close).
const MAX_LABELS: usize = 4_096;

fn run_label(run: &RunId) -> String {
    if run.seq == 0 {
        String::new()
    } else {
        run.label()
    }
}

fn stop_reason_str(r: StopReason) -> &'static str {
    match r {
        StopReason::Stop => "stop",
        StopReason::ToolUse => "toolUse",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// Counts written as a JSON object in the order given (the trace gives name order, as the
/// `serde_json::Map` of them it replaces wrote them), without building one per line.
struct Counts<const N: usize>([(&'static str, u64); N]);

impl<const N: usize> Serialize for Counts<N> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(N))?;
        for (name, count) in &self.0 {
            map.serialize_entry(name, count)?;
        }
        map.end()
    }
}

/// A message's usage.
fn usage_counts(u: &Usage) -> Counts<5> {
    Counts([
        ("cacheRead", u.cache_read),
        ("cacheWrite", u.cache_write),
        ("input", u.input),
        ("output", u.output),
        ("totalTokens", u.total_tokens),
    ])
}

/// A run's usage as its source reported it.
fn reported_counts(u: &TokenUsage) -> Counts<5> {
    Counts([
        ("cacheReadTokens", u.cache_read_tokens),
        ("cacheWriteTokens", u.cache_write_tokens),
        ("inputTokens", u.input_tokens),
        ("outputTokens", u.output_tokens),
        ("total", u.total()),
    ])
}

/// The fields of `kind`'s line, after its phase (`counters`: what its run streamed, for its close).
fn write_fields(w: &mut LineWriter<'_>, kind: &Output, counters: RunCounters) -> io::Result<()> {
    match kind {
        Output::RunOpened { model, .. } => w.opt_str("model", model.as_deref()),
        Output::MessageStarted { turn } => w.json("turn", turn),
        Output::Text { .. } | Output::Thinking { .. } | Output::BlockEnded { .. } => Ok(()),
        Output::LifecycleLine { call, title, label } => {
            w.str("callIdHash", &call.hash)?;
            w.str("title", title)?;
            w.str("label", label)
        }
        Output::ShellProgress { call, stream, line } => {
            w.str("callIdHash", &call.hash)?;
            w.str("stream", stream.as_str())?;
            w.str("line", line)
        }
        Output::Card(card) => card_fields(w, card),
        Output::IncompleteCall(inc) => incomplete_fields(w, inc),
        Output::MessageEnded { turn, stop_reason, usage, error } => {
            w.json("turn", turn)?;
            w.str("stopReason", stop_reason_str(*stop_reason))?;
            w.opt_str("error", error.as_deref())?;
            w.json("usage", &usage_counts(usage))
        }
        Output::RunClosed { status, totals, error, .. } => {
            run_closed_fields(w, *status, totals, error.as_deref(), counters)
        }
        Output::Diagnostic { fields, .. } => diagnostic_fields(w, fields),
    }
}

fn card_fields(w: &mut LineWriter<'_>, card: &Card) -> io::Result<()> {
    w.str("callIdHash", &card.call.hash)?;
    w.str("toolName", card.source_tool.name())?;
    w.str("piTool", &card.pi_tool)?;
    w.str("title", &card.title)?;
    w.str("summary", &card.summary)?;
    w.json("isError", &card.is_error)?;
    w.str("replayId", &card.replay_id)?;
    w.json("startedMs", &card.started_ms)?;
    w.json("completedMs", &card.completed_ms)
}

/// A call that never completed: shown (`tool_incomplete`) or discarded.
fn incomplete_fields(w: &mut LineWriter<'_>, inc: &IncompleteCall) -> io::Result<()> {
    w.str("toolName", inc.source_tool.name())?;
    w.str("callIdHash", &inc.call.hash)?;
    w.str("reason", inc.reason.as_str())?;
    if inc.visible {
        w.str("title", &inc.title)?;
    }
    Ok(())
}

fn run_closed_fields(
    w: &mut LineWriter<'_>,
    status: RunStatus,
    totals: &RunTotals,
    error: Option<&str>,
    counters: RunCounters,
) -> io::Result<()> {
    w.str("status", status.as_str())?;
    w.opt_str("error", error)?;
    w.json("cards", &totals.cards)?;
    w.json("errorCards", &totals.error_cards)?;
    w.json("incompleteCalls", &totals.incomplete_calls)?;
    w.json("messages", &totals.messages)?;
    w.json("durationMs", &totals.duration_ms)?;
    w.json("reportedUsage", &totals.reported_usage.as_ref().map(reported_counts))?;
    w.json("textDeltas", &counters.text_deltas)?;
    w.json("thinkingDeltas", &counters.thinking_deltas)
}

/// Keep only allowlisted keys (in the map's order), hash a raw `cursorMcpCallId`, and report how
/// many keys were dropped as `droppedFields` when any were.
fn diagnostic_fields(w: &mut LineWriter<'_>, fields: &DiagFields) -> io::Result<()> {
    let mut dropped: u64 = 0;
    for (key, value) in fields.iter() {
        let Some(name) = DIAGNOSTIC_ALLOWLIST.iter().find(|k| **k == key) else {
            dropped += 1;
            continue;
        };
        if *name == "cursorMcpCallId" {
            w.value(name, &hashed_mcp_call_id(value))?;
        } else {
            w.value(name, value)?;
        }
    }
    if dropped > 0 {
        w.json("droppedFields", &dropped)?;
    }
    Ok(())
}

/// `cursor-mcp-call-<8 hex>` as given; anything else (a raw MCP id) hashed into that form.
fn hashed_mcp_call_id(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::String(s) if is_hashed_mcp_call_id(s) => value.clone(),
        Value::String(s) => Value::String(format!("{CURSOR_MCP_CALL_PREFIX}{}", hash8(s))),
        other => Value::String(format!("{CURSOR_MCP_CALL_PREFIX}{}", hash8(&other.to_string()))),
    }
}

fn is_hashed_mcp_call_id(s: &str) -> bool {
    s.strip_prefix(CURSOR_MCP_CALL_PREFIX)
        .is_some_and(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// Cut `s` to [`MAX_STRING_CHARS`] chars plus `…` when longer.
fn bound_str(s: &str) -> Cow<'_, str> {
    // No more bytes than the bound, no more chars: most strings are read no further.
    if s.len() <= MAX_STRING_CHARS {
        return Cow::Borrowed(s);
    }
    match s.char_indices().nth(MAX_STRING_CHARS) {
        Some((i, _)) => Cow::Owned(format!("{}…", &s[..i])),
        None => Cow::Borrowed(s),
    }
}

/// Encode the start of a line, `{"ts":…`, into `out`.
fn encode_ts(out: &mut Vec<u8>, ts: u64) -> io::Result<()> {
    out.extend_from_slice(b"{\"ts\":");
    serde_json::to_writer(&mut *out, &ts)?;
    Ok(())
}

/// Encode the rest of a line, `,"run":…,"phase":…,<fields>}\n`, into `out`, every string bounded.
fn encode_body(out: &mut Vec<u8>, run: &str, phase: &str, kind: &Output, counters: RunCounters) -> io::Result<()> {
    out.extend_from_slice(b",\"run\":");
    serde_json::to_writer(&mut *out, run)?;
    out.extend_from_slice(b",\"phase\":");
    serde_json::to_writer(&mut *out, bound_str(phase).as_ref())?;
    write_fields(&mut LineWriter(out), kind, counters)?;
    out.extend_from_slice(b"}\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use toolstream_schemas::ids::call_ref;
    use toolstream_schemas::ShellStream;

    fn run(seq: u32) -> Arc<RunId> {
        Arc::new(RunId { session: "sess-1".into(), seq })
    }

    fn ev(run: &Arc<RunId>, at_ms: u64, kind: Output) -> OutputEvent {
        OutputEvent { run: run.clone(), at_ms, kind }
    }

    #[test]
    fn diagnostic_field_names_are_written_as_they_are() {
        // `LineWriter::key` writes keys without escaping them.
        for name in DIAGNOSTIC_ALLOWLIST {
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{name}");
            assert_eq!(serde_json::to_string(name).unwrap(), format!("\"{name}\""));
        }
    }

    #[test]
    fn usage_is_written_as_the_map_of_its_counts() {
        let u = Usage {
            input: 1,
            output: 20,
            cache_read: 300,
            cache_write: 4_000,
            total_tokens: 50_000,
            ..Usage::default()
        };
        let mut m = Map::new();
        for (k, v) in [
            ("input", u.input),
            ("output", u.output),
            ("cacheRead", u.cache_read),
            ("cacheWrite", u.cache_write),
            ("totalTokens", u.total_tokens),
        ] {
            m.insert(k.into(), v.into());
        }
        assert_eq!(serde_json::to_string(&usage_counts(&u)).unwrap(), serde_json::to_string(&m).unwrap());
    }

    #[test]
    fn reported_usage_is_written_as_the_map_of_its_counts() {
        let u = TokenUsage {
            input_tokens: 14_781,
            output_tokens: 19,
            cache_read_tokens: 300,
            cache_write_tokens: 4_000,
            reasoning_tokens: Some(7),
        };
        let mut m = Map::new();
        for (k, v) in [
            ("inputTokens", u.input_tokens),
            ("outputTokens", u.output_tokens),
            ("cacheReadTokens", u.cache_read_tokens),
            ("cacheWriteTokens", u.cache_write_tokens),
            ("total", u.total()),
        ] {
            m.insert(k.into(), v.into());
        }
        assert_eq!(serde_json::to_string(&reported_counts(&u)).unwrap(), serde_json::to_string(&m).unwrap());
    }

    fn lines(bytes: &[u8]) -> Vec<Value> {
        let text = std::str::from_utf8(bytes).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn line_starts_with_ts_run_phase() {
        let r = run(2);
        let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
        sink.write(&[ev(&r, 42, Output::MessageStarted { turn: 1 })]).unwrap();
        let out = String::from_utf8(sink.into_inner()).unwrap();
        let label = r.label();
        assert_eq!(out, format!("{{\"ts\":42,\"run\":\"{label}\",\"phase\":\"message_started\",\"turn\":1}}\n"));
    }

    #[test]
    fn seq_zero_has_empty_run() {
        let r = run(0);
        let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
        let mut fields = DiagFields::new();
        fields.insert("reason", "bad json");
        sink.write(&[ev(&r, 0, Output::Diagnostic { phase: "decode_error".into(), fields })]).unwrap();
        let l = lines(&sink.into_inner());
        assert_eq!(l[0]["run"], "");
        assert_eq!(l[0]["reason"], "bad json");
    }

    #[test]
    fn strings_are_bounded_on_char_boundaries() {
        let long = "é".repeat(MAX_STRING_CHARS + 10);
        let cut = bound_str(&long);
        assert_eq!(cut.chars().count(), MAX_STRING_CHARS + 1);
        assert!(cut.ends_with('…'));
        let exact = "x".repeat(MAX_STRING_CHARS);
        assert_eq!(bound_str(&exact), exact.as_str());

        // Nested strings are bounded as they are written; keys and other values are kept.
        let key = "k".repeat(MAX_STRING_CHARS + 5);
        let v = serde_json::json!({"a": [long.clone(), 7, null], "b": {"c": long}, key.clone(): true});
        let written: Value = serde_json::from_str(&serde_json::to_string(&Bounded(&v)).unwrap()).unwrap();
        assert_eq!(written["a"][0].as_str().unwrap().chars().count(), MAX_STRING_CHARS + 1);
        assert_eq!(written["a"][1], 7);
        assert!(written["a"][2].is_null());
        assert_eq!(written["b"]["c"].as_str().unwrap().chars().count(), MAX_STRING_CHARS + 1);
        assert_eq!(written[key.as_str()], true);
    }

    #[test]
    fn mcp_call_ids_are_hashed_unless_already_hashed() {
        let ok = Value::from("cursor-mcp-call-0123abcd");
        assert_eq!(hashed_mcp_call_id(&ok), ok);
        let raw = Value::from("toolu_01RAWID");
        assert_eq!(hashed_mcp_call_id(&raw), Value::from(format!("cursor-mcp-call-{}", hash8("toolu_01RAWID"))));
        // Wrong length or upper-case hex is not the hashed form.
        assert!(!is_hashed_mcp_call_id("cursor-mcp-call-0123abc"));
        assert!(!is_hashed_mcp_call_id("cursor-mcp-call-0123ABCD"));
        assert_eq!(hashed_mcp_call_id(&Value::from(7)), Value::from(format!("cursor-mcp-call-{}", hash8("7"))));
    }

    #[test]
    fn deltas_are_counted_per_run_and_reset_at_close() {
        let (a, b) = (run(1), run(2));
        let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
        let close = |r: &Arc<RunId>| {
            ev(
                r,
                9,
                Output::RunClosed {
                    status: RunStatus::Finished,
                    final_text: "secret final text".into(),
                    totals: Box::default(),
                    error: None,
                },
            )
        };
        sink.write(&[
            ev(&a, 1, Output::Text { turn: 1, delta: "hello".into() }),
            ev(&b, 1, Output::Thinking { turn: 1, delta: "hmm".into() }),
            ev(&a, 2, Output::Text { turn: 1, delta: " world".into() }),
            ev(&a, 3, Output::BlockEnded { turn: 1 }),
            close(&a),
            close(&b),
            ev(&a, 10, Output::ShellProgress { call: call_ref("c"), stream: ShellStream::Stdout, line: "ok".into() }),
        ])
        .unwrap();
        assert!(sink.runs.is_empty());
        let l = lines(&sink.into_inner());
        assert_eq!(l.len(), 3);
        assert_eq!((l[0]["textDeltas"].as_u64(), l[0]["thinkingDeltas"].as_u64()), (Some(2), Some(0)));
        assert_eq!((l[1]["textDeltas"].as_u64(), l[1]["thinkingDeltas"].as_u64()), (Some(0), Some(1)));
    }

    #[test]
    fn limit_below_marker_writes_nothing() {
        let r = run(1);
        let mut sink = JsonlTraceSink::new(Vec::new(), 10);
        sink.write(&[ev(&r, 1, Output::MessageStarted { turn: 1 })]).unwrap();
        assert!(sink.is_truncated());
        assert_eq!(sink.suppressed(), 1);
        assert!(sink.into_inner().is_empty());
    }
}
