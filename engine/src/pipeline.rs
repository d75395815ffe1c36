//! Wiring: sources → framing → decoding → event time → shards (by `session_id`) → stage actors
//! → fan-out → sink threads; decode-error reporting, `--strict`, end of each source, ticks for
//! live input, cancellation, shutdown and flush, and the stats of what went through.
//!
//! The calling thread reads and decodes; each shard is an actix System on its own thread; each
//! sink has its own thread. Every queue between them is bounded.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde::Serialize;
use toolstream_actors::item::Item;
use toolstream_actors::shard::ShardConfig;
use toolstream_schemas::{DiagFields, Input, Output, OutputEvent, RunId};
use toolstream_sinks::Sink;

use crate::clock::{ClockMode, EventTime, Extrapolator, Pacer};
use crate::decode::framing::rejoin::{Joined, Lines, Rejoiner};
use crate::decode::framing::{Frame, LineReader, DEFAULT_MAX_LINE_BYTES};
use crate::decode::{DecodeError, Decoder, Format};
use crate::sequencer::{self, SeqMsg, Sequencer};
use crate::shard::{shard_of, sync_door, DoorMsg, Release, Shard};
use crate::sinks::{OutputCounts, SinkPlan, SinkSet, SinkSummary, SinkThread};
use crate::source::Source;
use toolstream_schemas::InputEvent;

/// How often live sources tick (ms of wall time).
const TICK_MS: u64 = 25;

/// A batch read from a stream is also handed over once it holds this many bytes of source lines,
/// however few items that is: every queue between the stages is bounded in batches, so this is
/// what bounds them in bytes when lines are large (tool results of many KB each). At the typical
/// few hundred bytes per line, `batch_items` is reached first.
const BATCH_BYTES: u64 = 256 * 1024;

/// How a pipeline reads.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// Stop at the first decode error.
    pub strict: bool,
    /// Force a format instead of detecting it per source.
    pub format: Option<Format>,
    /// Longest line accepted; longer lines are skipped and reported.
    pub max_line_bytes: usize,
    /// Items per batch handed to a shard (live input also hands over whenever its next read could
    /// wait).
    pub batch_items: usize,
    /// Number of shards (≥ 1).
    pub shards: usize,
    /// Pace recordings by their recorded times.
    pub realtime: bool,
    /// Settings of every shard's stages.
    pub shard: ShardConfig,
    /// How long the end of the pipeline (or Ctrl-C) waits, in all, for the sinks it does not wait
    /// out (`drop_newest` ones, and any still full once shutdown began); what they have not
    /// delivered then is counted and reported. Default [`END_WAIT`].
    pub sink_grace: Duration,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            strict: false,
            format: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            // Measured on the 200 MB corpus with one shard: 1024 beat 512 by 4-10% (fewer
            // hand-offs); 2048 was no faster and doubled peak RSS.
            batch_items: 1024,
            shards: default_shards(),
            realtime: false,
            shard: ShardConfig::default(),
            sink_grace: END_WAIT,
        }
    }
}

/// The end-of-run wait (docs/sinks.md, "Sinks and backpressure"): once the input ended (or on Ctrl-C),
/// every sink that may drop (network sinks, `when_full=drop_newest`) gets at most this long, all of
/// them together, to deliver what it holds. `block` sinks are waited for as long as they take.
pub const END_WAIT: Duration = Duration::from_secs(4);

// An OTLP sink's final checkpoint gives up on its collector in time to count what it did not
// deliver before the engine stops waiting for it.
const _: () = assert!(
    toolstream_sinks::otel::config::DEFAULT_FLUSH_TIMEOUT.as_millis() + 500 <= END_WAIT.as_millis(),
    "the OTLP flush timeout must end well within the end-of-run wait"
);

/// One shard per core but one: the reading thread frames and decodes on a core of its own. On the
/// 2-core benchmark machine one shard beat two end to end (null sink 0.58 s vs 0.68 s on the 200 MB
/// corpus; JSONL 0.72 s vs 0.80 s; pi session even): a second shard only added hand-offs.
pub fn default_shards() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

/// Errors that stop a pipeline (decode errors do not, unless strict).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("cannot read {source_name}: {error}")]
    Read { source_name: String, error: std::io::Error },
    #[error("stopped at the first decode error (--strict): {0}")]
    Strict(DecodeError),
    #[error("cannot start the engine: {0}")]
    Start(std::io::Error),
    #[error("{0}")]
    Sink(toolstream_sinks::SinkError),
    #[error("cancelled")]
    Cancelled,
}

/// Per-source counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceStats {
    pub source: String,
    pub format: Option<&'static str>,
    pub lines: u64,
    pub bytes: u64,
    pub decode_errors: u64,
    /// SDK updates of the ignored-but-counted types (SPEC §1.2).
    pub ignored_updates: u64,
}

/// What a pipeline saw, for `stats` and for the end-of-replay report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub lines: u64,
    pub bytes: u64,
    pub input_events: u64,
    /// What the output side counted (output events, runs, calls per tool, …), at the top level
    /// of the JSON.
    #[serde(flatten)]
    pub output: OutputCounts,
    pub decode_errors: u64,
    /// SDK updates of the ignored-but-counted types (SPEC §1.2).
    pub ignored_updates: u64,
    /// The first decode errors, as `file:line: reason (byte offset N)`.
    pub decode_error_samples: Vec<String>,
    pub sink_errors: Vec<String>,
    /// What each sink was offered, wrote and dropped (the exit summary reports drops per sink).
    pub sinks: Vec<SinkSummary>,
    /// Failures inside the engine (a stage that panicked): output is incomplete.
    pub engine_errors: Vec<String>,
    pub files: Vec<SourceStats>,
}

const MAX_ERROR_SAMPLES: usize = 100;

/// Every numbered write to the shard doors goes through the gate, which holds the next batch
/// number; once cancelled, nothing more is sent (no event, no end of source) after the `Cancel`.
type Gate = Arc<Mutex<GateState>>;

#[derive(Debug, Default)]
struct GateState {
    cancelled: bool,
    next_seq: u64,
}

impl GateState {
    /// Send one numbered batch to every shard (`items[k]` to shard `k`, often empty).
    fn send_all(&mut self, doors: &[Sender<DoorMsg>], items: Vec<Vec<Item>>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        for (door, items) in doors.iter().zip(items) {
            let _ = door.send(DoorMsg::Items { seq: Some(seq), items });
        }
    }
}

/// Stops a running pipeline from another thread (Ctrl-C): every open run is cancelled and every
/// sink flushed before `cancel` returns, whatever the reading thread is doing (even blocked on
/// standard input).
#[derive(Clone)]
pub struct Canceller {
    doors: Vec<Sender<DoorMsg>>,
    sequencer: Option<Sender<SeqMsg>>,
    sinks: Arc<SinkSet>,
    gate: Gate,
}

impl Canceller {
    pub fn cancel(&self) {
        // First, so that no sink holds up the others for longer than the grace period: the
        // reading thread may be blocked behind a full `block` sink while it holds the gate.
        self.sinks.begin_shutdown();
        {
            let Ok(mut gate) = self.gate.lock() else { return };
            if gate.cancelled {
                return;
            }
            gate.cancelled = true;
            tracing::debug!("cancelling every open run");
            let cancel = self.doors.iter().map(|_| vec![Item::Cancel]).collect();
            gate.send_all(&self.doors, cancel);
        }
        for door in &self.doors {
            sync_door(door);
        }
        if let Some(queue) = &self.sequencer {
            sequencer::sync(queue);
        }
        self.sinks.checkpoint_all(Instant::now() + self.sinks.grace());
    }

    /// What each sink was offered, wrote and dropped so far.
    pub fn sink_summaries(&self) -> Vec<SinkSummary> {
        self.sinks.summaries()
    }

    /// Whether the pipeline was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.gate.lock().map(|g| g.cancelled).unwrap_or(true)
    }
}

/// One pipeline: its shards and its sinks.
pub struct Pipeline {
    opts: PipelineOptions,
    shards: Vec<Shard>,
    sequencer: Option<Sequencer>,
    sinks: Vec<SinkThread>,
    sink_set: Arc<SinkSet>,
    gate: Gate,
    stats: Stats,
    /// Nested runs' sessions → their root session (a subagent's run goes to its parent's shard).
    nested: NestedSessions,
}

/// A nested run (a subagent's, `RunContext::parent`) is processed on the shard of its root run,
/// so that its events and its parent's keep their input order through to the sinks (a sink
/// nesting the child under its parent's call sees the child's close before that call's card).
#[derive(Debug, Default)]
struct NestedSessions(rustc_hash::FxHashMap<std::sync::Arc<str>, std::sync::Arc<str>>);

/// Nested sessions remembered at most (past it the table starts over: only the shard choice of
/// a later subagent of a forgotten session is affected).
const NESTED_MAX: usize = 4_096;

impl NestedSessions {
    /// The session whose shard `ev` goes to, learning the link a nested run's start carries.
    fn route<'a>(&'a mut self, ev: &'a InputEvent) -> &'a str {
        if let toolstream_schemas::Input::RunStarted(start) = &ev.kind {
            if let Some(parent) = start.context.as_ref().and_then(|c| c.parent.as_ref()) {
                let root = self.0.get(&parent.session).cloned().unwrap_or_else(|| parent.session.clone());
                if self.0.len() >= NESTED_MAX {
                    self.0.clear();
                }
                self.0.insert(ev.session.clone(), root);
            }
        }
        // Most sources never nest a run: no lookup per event for them.
        if self.0.is_empty() {
            return &ev.session;
        }
        self.0.get(&ev.session).map_or(&ev.session, |root| root)
    }
}

impl Pipeline {
    /// Start the shards and sink threads, with sinks that are already open (delivered with
    /// `block`).
    pub fn new(opts: PipelineOptions, sinks: Vec<Box<dyn Sink>>) -> Result<Self, PipelineError> {
        Pipeline::with_sinks(opts, sinks.into_iter().map(SinkPlan::ready).collect())
    }

    /// Start the shards and sink threads; each sink opens on its own thread.
    pub fn with_sinks(opts: PipelineOptions, plans: Vec<SinkPlan>) -> Result<Self, PipelineError> {
        let mut threads = Vec::with_capacity(plans.len());
        for plan in plans {
            tracing::debug!(sink = %plan.label, when_full = %plan.when_full, "opening sink");
            threads.push(SinkThread::start(plan).map_err(PipelineError::Sink)?);
        }
        // Only now, every sink open, may any of them change what is at its path: a sink refused
        // above ends the run with the others' files as they were.
        for t in &threads {
            t.begin();
        }
        let sink_set = Arc::new(SinkSet::new(threads.iter().map(SinkThread::port).collect(), opts.sink_grace));
        let n = opts.shards.max(1);
        tracing::debug!(shards = n, sinks = threads.len(), max_line_bytes = opts.max_line_bytes, "starting the engine");
        // One shard releases its numbers in order: it hands them to the sinks itself.
        let sequencer =
            if n > 1 { Some(Sequencer::start(n, sink_set.clone()).map_err(PipelineError::Start)?) } else { None };
        let release = match &sequencer {
            Some(s) => Release::Sequenced(s.queue()),
            None => Release::Direct(sink_set.clone()),
        };
        let mut shards = Vec::new();
        for i in 0..n {
            shards.push(Shard::start(i, opts.shard.clone(), release.clone()).map_err(PipelineError::Start)?);
        }
        Ok(Pipeline {
            opts,
            shards,
            sequencer,
            sinks: threads,
            sink_set,
            gate: Arc::new(Mutex::new(GateState::default())),
            stats: Stats::default(),
            nested: NestedSessions::default(),
        })
    }

    pub fn canceller(&self) -> Canceller {
        Canceller {
            doors: self.doors(),
            sequencer: self.sequencer.as_ref().map(Sequencer::queue),
            sinks: self.sink_set.clone(),
            gate: self.gate.clone(),
        }
    }

    fn doors(&self) -> Vec<Sender<DoorMsg>> {
        self.shards.iter().filter_map(Shard::door).collect()
    }

    /// Hand every shard its pending items as one numbered batch, through the gate; false once
    /// the pipeline was cancelled.
    fn send_all(&self, pending: &mut [Vec<Item>]) -> bool {
        let Ok(mut gate) = self.gate.lock() else { return false };
        if gate.cancelled {
            return false;
        }
        // The next batch's buffers are sized as the last ones were: no regrowth per batch.
        let items = pending.iter_mut().map(|p| std::mem::replace(p, Vec::with_capacity(p.len()))).collect();
        gate.send_all(&self.doors(), items);
        true
    }

    /// Read one source to its end. Decode errors are passed to `on_error` and counted; runs still
    /// open at the source's end are closed as failed (`missing result`, or the source's own
    /// failure when it reports one: [`Source::failure`]).
    pub fn run_source(&mut self, source: &Source, on_error: &mut dyn FnMut(&DecodeError)) -> Result<(), PipelineError> {
        let name = source.name();
        let reader = source.open().map_err(|error| PipelineError::Read { source_name: name.clone(), error })?;
        let mode = if self.opts.realtime {
            ClockMode::Realtime
        } else if source.is_live() {
            ClockMode::Live
        } else {
            ClockMode::EventTime
        };
        tracing::debug!(source = %name, clock = ?mode, "reading source");
        let mut feed = self.feed(name.clone(), mode);
        let mut lines = LineReader::with_max_line(reader, self.opts.max_line_bytes);
        let mut decoder = Decoder::new(name.clone(), self.opts.format);
        decoder.set_max_line(self.opts.max_line_bytes);
        let mut rejoiner = Rejoiner::new(self.opts.max_line_bytes);
        let mut events = Vec::new();
        let outcome = loop {
            // Every sink the user asked for is gone (`| head`, a full disk): stop reading.
            if feed.sinks_gone() {
                break Ok(());
            }
            let frame = match lines.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break Ok(()),
                Err(error) => break Err(PipelineError::Read { source_name: name.clone(), error }),
            };
            feed.file.lines += 1;
            let mut reading = Reading::new(self, &mut feed, &mut decoder, &mut events, &mut *on_error);
            rejoiner.push(frame, &mut reading);
            if let Some(stop) = reading.stop {
                break Err(stop);
            }
            feed.pending_bytes = lines.position().saturating_sub(feed.handed_at);
            // Live input is handed over as soon as the next read could wait for more; a recording
            // (or a burst of piped lines already buffered) in batches.
            let waits = feed.mode == ClockMode::Realtime || (feed.live() && !lines.has_buffered_line());
            if !self.hand_over(&mut feed, waits) {
                break Err(PipelineError::Cancelled);
            }
        };
        // Lines still held for a record that never closed are reported one by one.
        let stopped = matches!(outcome, Err(PipelineError::Strict(_) | PipelineError::Cancelled));
        let mut outcome = outcome;
        if rejoiner.is_joining() && !stopped {
            let mut reading = Reading::new(self, &mut feed, &mut decoder, &mut events, &mut *on_error);
            rejoiner.finish(&mut reading);
            if let (Some(stop), Ok(())) = (reading.stop, &outcome) {
                outcome = Err(stop);
            }
        }
        if outcome.is_ok() {
            // Formats whose runs end only with an event of their own close what is still open.
            decoder.finish(&mut events);
            for ev in events.drain(..) {
                self.push_event(&mut feed, ev);
            }
        }
        feed.file.bytes = lines.position();
        feed.file.format = decoder.format().map(Format::as_str);
        feed.file.ignored_updates = decoder.ignored_updates();
        // A source read to its end may have failed there (a cursor-agent that exited non-zero).
        let failure = if outcome.is_ok() { source.failure() } else { None };
        if let Some(message) = failure {
            tracing::debug!(source = %name, "the source failed: {}", self.opts.shard.scrubber.scrub(&message));
            for items in &mut feed.pending {
                items.push(Item::SourceFailed(Arc::from(message.as_str())));
            }
        }
        self.end_feed(feed, outcome)
    }

    /// Deliver events a source already decoded (a Cursor chat database, say), in order, exactly as
    /// [`Pipeline::run_source`] delivers a stream's: the same event time, sharding, batching,
    /// decode-error reports (`Err` items, counted and traced; `--strict` stops at the first) and
    /// end of source. `format` names the source's format in the stats.
    pub fn run_events(
        &mut self,
        name: &str,
        format: &'static str,
        items: impl IntoIterator<Item = Result<InputEvent, DecodeError>>,
        on_error: &mut dyn FnMut(&DecodeError),
    ) -> Result<(), PipelineError> {
        let mode = if self.opts.realtime { ClockMode::Realtime } else { ClockMode::EventTime };
        let mut feed = self.feed(name.to_owned(), mode);
        feed.file.format = Some(format);
        let mut outcome = Ok(());
        for item in items {
            if feed.sinks_gone() {
                break;
            }
            feed.file.lines += 1;
            match item {
                Ok(ev) => self.push_event(&mut feed, ev),
                Err(e) => {
                    if let Err(stop) = self.decode_error(&mut feed, e, on_error) {
                        outcome = Err(stop);
                        break;
                    }
                }
            }
            let paced = feed.mode == ClockMode::Realtime;
            if !self.hand_over(&mut feed, paced) {
                outcome = Err(PipelineError::Cancelled);
                break;
            }
        }
        self.end_feed(feed, outcome)
    }

    /// The state of one source being fed in.
    fn feed(&self, name: String, mode: ClockMode) -> Feed {
        let extrapolator = Arc::new(Mutex::new(Extrapolator::default()));
        let ticker = mode.ticks().then(|| Ticker::start(self.doors(), self.gate.clone(), extrapolator.clone()));
        Feed {
            file: SourceStats { source: name, ..SourceStats::default() },
            mode,
            extrapolator,
            ticker,
            pacer: Pacer::default(),
            pending: (0..self.shards.len()).map(|_| Vec::new()).collect(),
            read_here: vec![true; self.shards.len()],
            pending_bytes: 0,
            handed_at: 0,
            // Each source keeps its own time: a recording is never clamped by what was read before.
            time: EventTime::default(),
            user_sinks_failed: self.sinks.iter().map(SinkThread::failed_flag).collect(),
            checked_at: 0,
        }
    }

    /// Count and report a decode error and pass it on as a diagnostic; `Err` when `--strict`.
    fn decode_error(
        &mut self,
        feed: &mut Feed,
        mut e: DecodeError,
        on_error: &mut dyn FnMut(&DecodeError),
    ) -> Result<(), PipelineError> {
        // A decoder's reason may quote the line (`invalid type: string "…"`): scrubbed once, here,
        // for stderr, the trace and `--strict` alike.
        if let Cow::Owned(reason) = self.opts.shard.scrubber.scrub(&e.reason) {
            e.reason = reason;
        }
        feed.file.decode_errors += 1;
        on_error(&e);
        let at_ms = feed.time.latest();
        feed.pending[0].push(decode_error_item(&e, at_ms));
        self.record_decode_error(&e);
        if self.opts.strict {
            return Err(PipelineError::Strict(e));
        }
        Ok(())
    }

    /// Give an event its event time (pacing a `--realtime` replay) and queue it for its shard.
    fn push_event(&mut self, feed: &mut Feed, mut ev: InputEvent) {
        if let Some(t) = feed.time.stamp(&mut ev) {
            if feed.mode == ClockMode::Realtime {
                std::thread::sleep(feed.pacer.delay(t));
            }
            if feed.live() {
                if let Ok(mut x) = feed.extrapolator.lock() {
                    x.observe(t);
                }
            }
        }
        if let Input::RunEnded(_) = &ev.kind {
            feed.time.forget(&ev.session);
        }
        self.stats.input_events += 1;
        let k = shard_of(self.nested.route(&ev), self.shards.len());
        // A payload is read once, on whichever thread gets to it first: here while the shard is
        // behind (the reading thread has time to spare), else by the shard when a stage needs it.
        if feed.read_here[k] {
            match &ev.kind {
                Input::ToolStarted(t) => t.read_args(),
                Input::ToolCompleted(t) => t.read_result(self.opts.shard.keep_recorded),
                _ => {}
            }
        }
        feed.pending[k].push(Item::Input(ev));
    }

    /// Hand the queued items over when a shard's batch is full, or when `waits` (the next item may
    /// be a while) and anything is queued; false once the pipeline was cancelled.
    fn hand_over(&self, feed: &mut Feed, waits: bool) -> bool {
        let full = feed.pending_bytes >= BATCH_BYTES
            || feed.pending.iter().any(|items| items.len() >= self.opts.batch_items.max(1));
        let dry = waits && feed.pending.iter().any(|items| !items.is_empty());
        if !(full || dry) {
            return true;
        }
        feed.handed_at += feed.pending_bytes;
        feed.pending_bytes = 0;
        let sent = self.send_all(&mut feed.pending);
        for (here, shard) in feed.read_here.iter_mut().zip(&self.shards) {
            *here = shard.is_behind();
        }
        sent
    }

    /// End of a source: whatever is still open ended without its `result` (unless the pipeline
    /// was cancelled: then its runs were cancelled and nothing follows); wait until the shards and
    /// the sequencer have taken it all in; add the source's stats.
    fn end_feed(&mut self, mut feed: Feed, outcome: Result<(), PipelineError>) -> Result<(), PipelineError> {
        drop(feed.ticker.take());
        let mut outcome = outcome;
        for items in &mut feed.pending {
            items.push(Item::EndOfSource);
        }
        if !self.send_all(&mut feed.pending) {
            outcome = Err(PipelineError::Cancelled);
        }
        for s in &self.shards {
            s.sync();
        }
        if let Some(q) = &self.sequencer {
            q.sync();
        }
        let file = feed.file;
        tracing::debug!(
            source = %file.source,
            format = file.format.unwrap_or("unknown"),
            lines = file.lines,
            decode_errors = file.decode_errors,
            "source ended"
        );
        self.stats.ignored_updates += file.ignored_updates;
        self.stats.lines += file.lines;
        self.stats.bytes += file.bytes;
        self.stats.decode_errors += file.decode_errors;
        self.stats.files.push(file);
        outcome
    }

    fn record_decode_error(&mut self, e: &DecodeError) {
        if self.stats.decode_error_samples.len() < MAX_ERROR_SAMPLES {
            self.stats.decode_error_samples.push(e.to_string());
        }
    }

    /// Cancel every open run (as Ctrl-C does) and deliver what that produces.
    pub fn cancel(&mut self) {
        self.canceller().cancel();
    }

    /// Drain every shard, stop it, flush every sink and return the stats.
    pub fn finish(mut self) -> Stats {
        // Seal whatever unnumbered items (ticks) left behind, then stop shards and sequencer.
        if let Ok(mut gate) = self.gate.lock() {
            // Nothing is sent after a Cancel; the cancel's own batch was numbered already.
            if !gate.cancelled {
                let empty = self.shards.iter().map(|_| Vec::new()).collect();
                gate.send_all(&self.doors(), empty);
            }
        }
        for s in self.shards.drain(..) {
            if let Err(e) = s.stop() {
                self.stats.engine_errors.push(e);
            }
        }
        if let Some(q) = self.sequencer.take() {
            q.stop();
        }
        // Nothing more is offered to the sinks: once they drained, what each dropped is final
        // (the drop report below may itself be dropped by a stuck sink).
        // One deadline for every sink that is not waited out, from here to the last report.
        let deadline = Instant::now() + self.opts.sink_grace;
        self.sink_set.drain_all(deadline);
        self.sink_set.begin_shutdown();
        self.report_drops_to_sinks();
        for t in &self.sinks {
            t.stop(deadline);
        }
        let mut reports = Vec::new();
        for t in self.sinks.drain(..) {
            reports.push(t.finish(deadline));
        }
        // What each sink lost is read now, whether its thread ended or is still busy.
        let mut summaries = self.sink_set.summaries();
        for (summary, report) in summaries.iter_mut().zip(&reports) {
            summary.error = (!report.errors.is_empty()).then(|| report.errors.join("; "));
        }
        for r in &reports {
            self.stats.sink_errors.extend(r.errors.iter().cloned());
        }
        self.stats.sinks = summaries;
        self.stats.output = self.sink_set.counts();
        self.stats
    }
}

impl Pipeline {
    /// Tell every sink (the trace records it) what each sink dropped so far: one `sink_dropped`
    /// diagnostic per sink that dropped anything, at the last event time delivered.
    fn report_drops_to_sinks(&self) {
        let dropped: Vec<SinkSummary> = self.sink_set.summaries().into_iter().filter(|s| s.dropped > 0).collect();
        if dropped.is_empty() {
            return;
        }
        let run = Arc::new(RunId { session: Arc::from(""), seq: 0 });
        let at_ms = self.sink_set.last_at_ms();
        let events = dropped
            .iter()
            .map(|s| {
                tracing::debug!(sink = %s.sink, dropped = s.dropped, queue_full = s.dropped_queue_full, "sink dropped events");
                let mut fields = DiagFields::new();
                fields.insert("sink", s.sink.as_str());
                fields.insert("whenFull", s.when_full.as_str());
                fields.insert("count", s.dropped);
                fields.insert("queueFull", s.dropped_queue_full);
                OutputEvent { run: run.clone(), at_ms, kind: Output::Diagnostic { phase: "sink_dropped".into(), fields } }
            })
            .collect();
        self.sink_set.deliver_to_users(events);
    }
}

/// One source being fed in: its clock, its queued items per shard, its stats.
struct Feed {
    file: SourceStats,
    mode: ClockMode,
    extrapolator: Arc<Mutex<Extrapolator>>,
    ticker: Option<Ticker>,
    pacer: Pacer,
    pending: Vec<Vec<Item>>,
    /// Per shard: whether the payloads of its next batch are read on this thread (the shard was
    /// behind at the last hand-over).
    read_here: Vec<bool>,
    /// Source bytes read into `pending`, and the source position where it started.
    pending_bytes: u64,
    handed_at: u64,
    time: EventTime,
    user_sinks_failed: Vec<Arc<AtomicBool>>,
    checked_at: u64,
}

impl Feed {
    fn live(&self) -> bool {
        self.mode != ClockMode::EventTime
    }

    /// Whether every sink the user asked for is gone (checked every 1024 items).
    fn sinks_gone(&mut self) -> bool {
        if self.user_sinks_failed.is_empty() || self.file.lines < self.checked_at + 1024 {
            return false;
        }
        self.checked_at = self.file.lines;
        self.user_sinks_failed.iter().all(|f| f.load(Ordering::Relaxed))
    }
}

/// One source's lines on their way to the shards: what the [`Rejoiner`] drives.
struct Reading<'a> {
    pipeline: &'a mut Pipeline,
    feed: &'a mut Feed,
    decoder: &'a mut Decoder,
    events: &'a mut Vec<InputEvent>,
    on_error: &'a mut dyn FnMut(&DecodeError),
    /// `--strict` stopped at a decode error: nothing more is decoded.
    stop: Option<PipelineError>,
}

impl<'a> Reading<'a> {
    fn new(
        pipeline: &'a mut Pipeline,
        feed: &'a mut Feed,
        decoder: &'a mut Decoder,
        events: &'a mut Vec<InputEvent>,
        on_error: &'a mut dyn FnMut(&DecodeError),
    ) -> Self {
        Reading { pipeline, feed, decoder, events, on_error, stop: None }
    }
}

impl Lines for Reading<'_> {
    type Error = DecodeError;

    fn decode(&mut self, frame: Frame<'_>) -> Result<(), DecodeError> {
        if self.stop.is_some() {
            return Ok(());
        }
        self.decoder.decode_frame(frame, self.events)?;
        for ev in self.events.drain(..) {
            self.pipeline.push_event(self.feed, ev);
        }
        Ok(())
    }

    fn decode_joined(&mut self, record: Joined<'_>) -> Result<(), DecodeError> {
        if self.stop.is_some() {
            return Ok(());
        }
        self.decoder.decode_frame(record.frame(), self.events)?;
        // The trace says so (SPEC §1.1 rule 12), next to the record's own events.
        let (session, at_ms) = match self.events.first_mut() {
            Some(ev) => (ev.session.clone(), self.feed.time.stamp(ev)),
            None => (Arc::from(""), None),
        };
        tracing::debug!(source = %self.decoder.source_name(), line = record.line_no, lines = record.lines, "record rejoined");
        let mut fields = DiagFields::new();
        fields.insert("source", self.decoder.source_name().as_ref());
        fields.insert("line", record.line_no);
        fields.insert("lines", record.lines);
        let at_ms = at_ms.unwrap_or_else(|| self.feed.time.latest());
        let k = shard_of(&session, self.feed.pending.len());
        self.feed.pending[k].push(Item::Diagnostic { session, at_ms, phase: "record_rejoined", fields });
        for ev in self.events.drain(..) {
            self.pipeline.push_event(self.feed, ev);
        }
        Ok(())
    }

    fn bad(&mut self, e: DecodeError) {
        if self.stop.is_none() {
            if let Err(stop) = self.pipeline.decode_error(self.feed, e, self.on_error) {
                self.stop = Some(stop);
            }
        }
    }
}

fn decode_error_item(e: &DecodeError, at_ms: u64) -> Item {
    let mut fields = DiagFields::new();
    fields.insert("source", e.source_name.as_ref());
    fields.insert("line", e.line_no);
    fields.insert("byteOffset", e.byte_offset);
    fields.insert("reason", e.reason.clone());
    Item::Diagnostic { session: Arc::from(""), at_ms, phase: "decode_error", fields }
}

/// Ticks every shard while a live source is read, with event time extrapolated by wall time.
struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(doors: Vec<Sender<DoorMsg>>, gate: Gate, clock: Arc<Mutex<Extrapolator>>) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("toolstream-ticker".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(TICK_MS));
                    let now = clock.lock().ok().and_then(|c| c.now());
                    if let Some(now) = now {
                        // Numbered like any batch, so what the tick fires reaches the sinks now.
                        let Ok(mut gate) = gate.lock() else { break };
                        if gate.cancelled {
                            break;
                        }
                        gate.send_all(&doors, doors.iter().map(|_| vec![Item::Tick(now)]).collect());
                    }
                }
            })
            .ok();
        Ticker { stop, handle }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
