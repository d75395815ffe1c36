//! Cursor run coordination (SPEC §5): turns the items of many sessions into the ordered output
//! stream of each run — messages with their text and thinking, lifecycle and shell progress
//! lines, one card per completed call, the tool-use turn split (a batch settles for 75 ms of
//! event time, then its message waits up to 125 ms for the turn's usage), incomplete calls at run
//! end, the final text, and exactly one terminal `MessageEnded` per message and one `RunClosed`
//! per run.
//!
//! [`Coordinator`] is a pure state machine: `push(item) → outputs`; timers fire by event time.

mod state;
pub mod text;

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use toolstream_schemas::{DiagFields, Input, InputEvent, Output, OutputEvent, RunEnd, RunId, RunStatus};

use crate::item::{Item, RunOutput};
use crate::present::card::Compaction;
use crate::present::scrub::Scrubber;
use state::{CloseCause, Run};
use toolstream_schemas::by_arc::ByArc;

/// Default batch settle window (ms of event time).
pub const DEFAULT_BATCH_SETTLE_MS: u64 = 75;
/// Default wait for a turn's usage after the batch settled (ms of event time).
pub const DEFAULT_USAGE_WAIT_MS: u64 = 125;
/// Default polling interval of that wait (ms of event time).
pub const DEFAULT_USAGE_POLL_MS: u64 = 25;

/// Settings of run coordination.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub scrubber: Scrubber,
    pub batch_settle_ms: u64,
    pub usage_wait_ms: u64,
    /// The wait checks for usage every this many ms (≥ 1): a message ends at the first check
    /// after its usage arrived.
    pub usage_poll_ms: u64,
    /// Cards keep the recorded args and result (for sinks that store calls, not show them).
    pub keep_recorded: bool,
    /// Which shell results are compacted.
    pub compact: Compaction,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            scrubber: Scrubber::default(),
            batch_settle_ms: DEFAULT_BATCH_SETTLE_MS,
            usage_wait_ms: DEFAULT_USAGE_WAIT_MS,
            usage_poll_ms: DEFAULT_USAGE_POLL_MS,
            keep_recorded: false,
            compact: Compaction::default(),
        }
    }
}

/// Routes items to the open run of their session, opening runs as needed.
#[derive(Debug, Default)]
pub struct Coordinator {
    cfg: CoordinatorConfig,
    /// Sessions with an open run (entries are retired when their run closes: memory follows
    /// open runs, not every session ever seen).
    sessions: ByArc<str, Session>,
    /// Run counters of sessions whose run closed, so a session's next run gets the next number.
    /// Bounded: past [`RETIRED_MAX`] sessions it starts over (a session seen again after that
    /// many others numbers its runs from 1 again).
    retired: HashMap<Arc<str>, u32>,
    /// Runs closed so far (for stats).
    closed: u64,
    /// Where diagnostics that belong to no run go (decode errors, …).
    no_run: Option<Arc<RunId>>,
}

#[derive(Debug, Default)]
struct Session {
    runs_started: u32,
    /// Boxed: a run's state is near a kilobyte, and the table is probed for every event; inline,
    /// each probe of 64 interleaved sessions touched a cache line of its own.
    open: Option<Box<Run>>,
}

impl Coordinator {
    pub fn new(cfg: CoordinatorConfig) -> Self {
        Coordinator { cfg, ..Coordinator::default() }
    }

    /// Runs closed so far.
    pub fn runs_closed(&self) -> u64 {
        self.closed
    }

    /// Runs currently open.
    pub fn runs_open(&self) -> usize {
        self.sessions.values().filter(|s| s.open.is_some()).count()
    }

    /// The earliest timer of any open run (live sources tick until then).
    pub fn next_due(&self) -> Option<u64> {
        self.sessions.values().filter_map(|s| s.open.as_ref()?.next_due()).min()
    }

    /// Process one input event (convenience for [`Coordinator::push`]).
    pub fn handle(&mut self, ev: InputEvent, out: &mut Vec<RunOutput>) {
        self.push(Item::Input(ev), out);
    }

    /// Process one item: fire the timers due by its time, then handle it.
    pub fn push(&mut self, item: Item, out: &mut Vec<RunOutput>) {
        match item {
            Item::Tick(t) => self.fire_all(t, out),
            Item::SourceFailed(message) => self.fail_all(&message, out),
            Item::EndOfSource => self.finish(out),
            Item::Cancel => self.cancel_all(out),
            Item::Input(ev) => self.on_input(ev, out),
            Item::Diagnostic { session, at_ms, phase, fields } if !self.is_open(&session) => {
                let run = self.no_run();
                out.push(OutputEvent { run, at_ms, kind: Output::Diagnostic { phase: phase.into(), fields } }.into());
            }
            other => {
                let Some(session) = other.session().cloned() else { return };
                if !self.is_open(&session) {
                    // A line about a call of a run that already closed.
                    self.late(&other_name(&other), other.at_ms().unwrap_or(0), None, out);
                    return;
                }
                run_for(&mut self.sessions, &mut self.retired, &self.cfg, &session, other.at_ms(), out)
                    .on_item(other, out);
            }
        }
    }

    /// Drop a session's entry once its run closed, keeping its run counter.
    fn retire(&mut self, key: &Arc<str>) {
        if let Some(s) = self.sessions.remove(key) {
            if self.retired.len() >= RETIRED_MAX {
                self.retired.clear();
            }
            self.retired.insert(key.clone(), s.runs_started);
        }
    }

    fn is_open(&self, session: &Arc<str>) -> bool {
        self.sessions.get(session).is_some_and(|s| s.open.is_some())
    }

    fn no_run(&mut self) -> Arc<RunId> {
        self.no_run.get_or_insert_with(|| Arc::new(RunId { session: Arc::from(""), seq: 0 })).clone()
    }

    /// Something for a session whose run already closed (a background task's notification, usage
    /// after `wait`, …): traced, never a new run.
    fn late(&mut self, what: &str, at_ms: u64, raw: Option<serde_json::Value>, out: &mut Vec<RunOutput>) {
        let mut fields = DiagFields::new();
        fields.insert("what", what);
        if let Some(mut raw) = raw {
            self.cfg.scrubber.scrub_json(&mut raw);
            fields.insert("raw", raw);
        }
        let run = self.no_run();
        out.push(OutputEvent { run, at_ms, kind: Output::Diagnostic { phase: "after_run_end".into(), fields } }.into());
    }

    fn on_input(&mut self, ev: InputEvent, out: &mut Vec<RunOutput>) {
        let t = ev.at_ms;
        let (open, had_runs) =
            self.sessions.get(&ev.session).map_or((false, false), |s| (s.open.is_some(), s.runs_started > 0));
        if !open && !opens_run(&ev.kind) && (had_runs || self.retired.contains_key(&ev.session)) {
            let raw = match &ev.kind {
                Input::Raw { value, .. } => serde_json::from_str(value.get()).ok(),
                _ => None,
            };
            self.late(&input_name(&ev.kind), t.unwrap_or(0), raw, out);
            return;
        }
        if let Input::RunStarted(_) = ev.kind {
            let session = session_entry(&mut self.sessions, &mut self.retired, &ev.session);
            if let Some(mut prev) = session.open.take() {
                // A new run began before this one's `result`: it ended without one.
                if let Some(t) = t {
                    prev.advance(&self.cfg, t, false, out);
                }
                prev.close(&self.cfg, missing_result(), CloseCause::StreamEnded, out);
                self.closed += 1;
            }
        }
        // The event's own `Arc` of its session is kept for the lookups: a clone would write the
        // count the reading thread writes for every event.
        let InputEvent { session, kind, .. } = ev;
        let run = run_for(&mut self.sessions, &mut self.retired, &self.cfg, &session, t, out);
        if run.on_input(&self.cfg, kind, out) {
            self.retire(&session);
            self.closed += 1;
        }
    }

    fn fire_all(&mut self, t: u64, out: &mut Vec<RunOutput>) {
        let mut keys: Vec<Arc<str>> =
            self.sessions.iter().filter(|(_, s)| s.open.is_some()).map(|(k, _)| k.clone()).collect();
        keys.sort();
        for k in keys {
            if let Some(run) = self.sessions.get_mut(&k).and_then(|s| s.open.as_mut()) {
                // A tick at `t` means time `t` has passed: timers due at `t` fire.
                run.advance(&self.cfg, t, true, out);
            }
        }
    }

    /// End of input: every open run ends without its `result` (SPEC §1.1 rule 10).
    pub fn finish(&mut self, out: &mut Vec<RunOutput>) {
        self.close_all(out, CloseCause::StreamEnded, missing_result);
    }

    /// The source failed: every open run fails with `message`, as a reported failure would end it
    /// (its incomplete calls are `sdk-failure`s, SPEC §5.3).
    pub fn fail_all(&mut self, message: &str, out: &mut Vec<RunOutput>) {
        self.close_all(out, CloseCause::Reported, || RunEnd {
            status: RunStatus::Error,
            result_text: None,
            usage: None,
            error: Some(message.to_owned()),
            duration_ms: None,
            incomplete: false,
            extra: Vec::new(),
        });
    }

    /// Cancellation (Ctrl-C): every open run is cancelled.
    pub fn cancel_all(&mut self, out: &mut Vec<RunOutput>) {
        self.close_all(out, CloseCause::Reported, || RunEnd {
            status: RunStatus::Cancelled,
            result_text: None,
            usage: None,
            error: Some(toolstream_schemas::CANCELLED_MESSAGE.into()),
            duration_ms: None,
            incomplete: false,
            extra: Vec::new(),
        });
    }

    fn close_all(&mut self, out: &mut Vec<RunOutput>, cause: CloseCause, end: impl Fn() -> RunEnd) {
        let mut keys: Vec<Arc<str>> =
            self.sessions.iter().filter(|(_, s)| s.open.is_some()).map(|(k, _)| k.clone()).collect();
        keys.sort(); // deterministic output order
        for k in keys {
            if let Some(mut run) = self.sessions.get_mut(&k).and_then(|s| s.open.take()) {
                run.close(&self.cfg, end(), cause, out);
                self.retire(&k);
                self.closed += 1;
            }
        }
    }
}

/// Most retired sessions whose run counters are kept.
const RETIRED_MAX: usize = 8_192;

/// A session's entry, created (with its retired run counter) when it has none.
fn session_entry<'a>(
    sessions: &'a mut ByArc<str, Session>,
    retired: &mut HashMap<Arc<str>, u32>,
    session: &Arc<str>,
) -> &'a mut Session {
    sessions.state_of(session, || Session { runs_started: retired.remove(session).unwrap_or(0), open: None })
}

/// Whether an input event is model activity that begins (or implicitly opens) a run; anything
/// else for a session whose run closed is late, not a new run.
fn opens_run(kind: &Input) -> bool {
    matches!(
        kind,
        Input::RunStarted(_)
            | Input::UserPrompt { .. }
            | Input::TextDelta { .. }
            | Input::TextSegment { .. }
            | Input::ThinkingDelta { .. }
            | Input::ToolStarted(_)
            | Input::ToolPartial(_)
            | Input::ToolCompleted(_)
    )
}

fn input_name(kind: &Input) -> String {
    match kind {
        Input::Raw { what, .. } => what.clone(),
        Input::TurnUsage(_) => "turn-usage".into(),
        Input::ShellOutput { .. } => "shell-output".into(),
        Input::ThinkingCompleted { .. } => "thinking-completed".into(),
        Input::TextBoundary => "text-boundary".into(),
        Input::RunEnded(_) => "run-ended".into(),
        _ => "event".into(),
    }
}

fn other_name(item: &Item) -> String {
    match item {
        Item::Lifecycle(_) => "lifecycle-line".into(),
        Item::ShellProgress { .. } => "shell-progress".into(),
        _ => "item".into(),
    }
}

/// The open run of `session` (opened if needed), its timers advanced to `t` when the item has a
/// time (an item without one happens at the run's current time).
fn run_for<'a>(
    sessions: &'a mut ByArc<str, Session>,
    retired: &mut HashMap<Arc<str>, u32>,
    cfg: &CoordinatorConfig,
    session: &Arc<str>,
    t: Option<u64>,
    out: &mut Vec<RunOutput>,
) -> &'a mut Run {
    let s = session_entry(sessions, retired, session);
    let run = s.open.get_or_insert_with(|| {
        s.runs_started += 1;
        Box::new(Run::new(session.clone(), s.runs_started, t.unwrap_or(0), cfg.scrubber.stream()))
    });
    if let Some(t) = t {
        run.advance(cfg, t, false, out);
    }
    run
}

fn missing_result() -> RunEnd {
    RunEnd {
        status: RunStatus::Error,
        result_text: None,
        usage: None,
        error: Some("missing result".into()),
        duration_ms: None,
        incomplete: true,
        extra: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
