//! Sink threads: every sink runs on its own thread behind a bounded queue fed by every shard's
//! fan-out. A sink flushes whenever its queue runs dry (so live output shows at once and bulk
//! replays write in large batches) and on request. A failing sink is reported and isolated: it
//! keeps draining its queue so it never holds up the others. A sink whose reader went away (a
//! broken pipe: `toolstream replay x | head`) is the same but quiet: it is marked closed, not
//! failed, and nothing is logged or reported as an error. Also the stats counter, which is simply
//! one more sink.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use serde::Serialize;
use toolstream_schemas::{Output, OutputEvent, Tool};
use toolstream_sinks::{Sink, SinkError};

/// Batches a sink's queue holds before the shards block (`when_full = block`).
const QUEUE_CAPACITY: usize = 8;

/// What a sink thread receives.
pub enum SinkMsg {
    Events(Arc<Vec<OutputEvent>>),
    /// Flush, then reply.
    Flush(Sender<()>),
    /// Flush and end the thread (other senders may still hold the queue open).
    Stop,
}

/// A running sink thread.
pub struct SinkThread {
    queue: Sender<SinkMsg>,
    failed: Arc<AtomicBool>,
    handle: JoinHandle<SinkReport>,
}

/// How a sink thread ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkReport {
    /// Its errors (a sink stops at its first; the final flush may add one).
    pub errors: Vec<String>,
    /// Its reader went away (broken pipe): events were dropped from then on, quietly. Not an error.
    pub closed: bool,
}

impl SinkThread {
    pub fn start(mut sink: Box<dyn Sink>) -> std::io::Result<SinkThread> {
        let (tx, rx) = bounded::<SinkMsg>(QUEUE_CAPACITY);
        let name = sink.name();
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let handle = std::thread::Builder::new().name(format!("toolstream-sink-{name}")).spawn(move || {
            let _on_panic = FailOnPanic(&flag);
            drive(&mut *sink, &rx, &flag)
        })?;
        Ok(SinkThread { queue: tx, failed, handle })
    }

    pub fn queue(&self) -> Sender<SinkMsg> {
        self.queue.clone()
    }

    /// Turns true (and stays true) once the sink failed, was closed (broken pipe) or panicked:
    /// from then on it drops every event, so a reader feeding only such sinks may stop early.
    pub fn failed_flag(&self) -> Arc<AtomicBool> {
        self.failed.clone()
    }

    /// Wait for the sink to drain its queue and flush. Returns its errors (a closed sink has none).
    pub fn finish(self) -> Vec<String> {
        self.finish_report().errors
    }

    /// [`SinkThread::finish`], also telling whether the sink was closed.
    pub fn finish_report(self) -> SinkReport {
        let _ = self.queue.send(SinkMsg::Stop);
        self.handle
            .join()
            .unwrap_or_else(|_| SinkReport { errors: vec!["sink thread panicked".to_owned()], closed: false })
    }
}

/// Sets the failed flag when the sink thread unwinds.
struct FailOnPanic<'a>(&'a AtomicBool);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

fn drive(sink: &mut dyn Sink, rx: &Receiver<SinkMsg>, flag: &AtomicBool) -> SinkReport {
    let mut state = Health { flag, report: SinkReport::default(), failed: false };
    let mut dirty = false;
    for msg in rx {
        match msg {
            SinkMsg::Events(batch) if !state.failed => {
                match sink.write(&batch) {
                    Ok(()) => dirty = true,
                    Err(e) => state.fail(e, true),
                }
                if dirty && rx.is_empty() {
                    dirty = false;
                    if let Err(e) = sink.flush() {
                        state.fail(e, true);
                    }
                }
            }
            SinkMsg::Events(_) => {}
            SinkMsg::Flush(reply) => {
                if !state.failed {
                    if let Err(e) = sink.checkpoint() {
                        state.fail(e, true);
                    }
                }
                let _ = reply.send(());
            }
            SinkMsg::Stop => break,
        }
    }
    if !state.failed {
        if let Err(e) = sink.checkpoint() {
            state.fail(e, false);
        }
    }
    state.report
}

/// A sink thread's failure state.
struct Health<'a> {
    flag: &'a AtomicBool,
    report: SinkReport,
    /// Failed or closed: events are dropped.
    failed: bool,
}

impl Health<'_> {
    /// Record why the sink stops; `log` an error (a failure before the end drops later events).
    fn fail(&mut self, e: SinkError, log: bool) {
        if is_broken_pipe(&e) {
            tracing::debug!(sink = sink_name(&e), "sink output closed (broken pipe); its events are dropped");
            self.report.closed = true;
        } else {
            if log {
                tracing::error!(sink = sink_name(&e), error = %e, "sink failed; its events are dropped from now on");
            }
            self.report.errors.push(e.to_string());
        }
        self.failed = true;
        self.flag.store(true, Ordering::Release);
    }
}

/// The sink's reader went away: not the sink's fault, nothing to report.
fn is_broken_pipe(e: &SinkError) -> bool {
    matches!(e, SinkError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

fn sink_name(e: &SinkError) -> &'static str {
    match e {
        SinkError::Io { sink, .. } | SinkError::Other { sink, .. } => sink,
    }
}

/// What the output side counted.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OutputCounts {
    pub output_events: u64,
    pub runs: u64,
    pub calls: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub unknown_tools: BTreeMap<String, u64>,
    pub error_cards: u64,
    pub incomplete_calls: u64,
}

/// Counts runs, calls per canonical tool, unknown tools, error cards and incomplete calls.
#[derive(Clone, Default)]
pub struct StatsSink(pub Arc<Mutex<OutputCounts>>);

impl Sink for StatsSink {
    fn name(&self) -> &'static str {
        "stats"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut c = self.0.lock().map_err(|_| SinkError::Other { sink: "stats", message: "poisoned".into() })?;
        c.output_events += batch.len() as u64;
        for ev in batch {
            let tool = match &ev.kind {
                Output::RunClosed { .. } => {
                    c.runs += 1;
                    continue;
                }
                // A visible incomplete call also produces a card for it; count the call once.
                Output::Card(card) if card.incomplete.is_none() => {
                    if card.is_error {
                        c.error_cards += 1;
                    }
                    &card.source_tool
                }
                Output::IncompleteCall(i) => {
                    c.incomplete_calls += 1;
                    &i.source_tool
                }
                _ => continue,
            };
            c.calls += 1;
            *c.calls_by_tool.entry(tool.name().to_owned()).or_default() += 1;
            if let Tool::Unknown(name) = tool {
                *c.unknown_tools.entry(name.to_string()).or_default() += 1;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::sync::Arc;

    use toolstream_schemas::{Output, OutputEvent, RunId};

    use super::*;

    /// Fails its `nth` write (0-based; `usize::MAX`: never) or every flush with `kind`.
    struct Failing {
        nth: usize,
        writes: usize,
        flush_fails: bool,
        kind: io::ErrorKind,
        seen: Arc<Mutex<usize>>,
    }

    impl Failing {
        fn err(&self) -> SinkError {
            SinkError::Io { sink: "failing", source: io::Error::from(self.kind) }
        }
    }

    impl Sink for Failing {
        fn name(&self) -> &'static str {
            "failing"
        }
        fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
            self.writes += 1;
            if self.writes > self.nth {
                return Err(self.err());
            }
            *self.seen.lock().unwrap() += batch.len();
            Ok(())
        }
        fn flush(&mut self) -> Result<(), SinkError> {
            if self.flush_fails {
                return Err(self.err());
            }
            Ok(())
        }
    }

    fn batch() -> Arc<Vec<OutputEvent>> {
        let run = Arc::new(RunId { session: "s".into(), seq: 1 });
        Arc::new(vec![OutputEvent { run, at_ms: 0, kind: Output::BlockEnded { turn: 1 } }])
    }

    /// Send `n` batches with a flush round-trip after each; the report, the flag, events seen.
    fn exercise(nth: usize, flush_fails: bool, kind: io::ErrorKind, n: usize) -> (SinkReport, bool, usize) {
        let seen = Arc::new(Mutex::new(0));
        let sink = Failing { nth, writes: 0, flush_fails, kind, seen: seen.clone() };
        let thread = SinkThread::start(Box::new(sink)).unwrap();
        let flag = thread.failed_flag();
        let queue = thread.queue();
        for _ in 0..n {
            queue.send(SinkMsg::Events(batch())).unwrap();
            let (tx, rx) = crossbeam_channel::bounded(1);
            queue.send(SinkMsg::Flush(tx)).unwrap();
            rx.recv().unwrap();
        }
        let flagged = flag.load(Ordering::Acquire);
        let report = thread.finish_report();
        let seen = *seen.lock().unwrap();
        (report, flagged, seen)
    }

    #[test]
    fn a_healthy_sink_is_never_flagged() {
        let (report, flagged, seen) = exercise(usize::MAX, false, io::ErrorKind::Other, 3);
        assert_eq!(report, SinkReport::default());
        assert!(!flagged);
        assert_eq!(seen, 3);
    }

    #[test]
    fn a_broken_pipe_closes_the_sink_quietly() {
        let (report, flagged, seen) = exercise(1, false, io::ErrorKind::BrokenPipe, 4);
        assert_eq!(report, SinkReport { errors: Vec::new(), closed: true });
        assert!(flagged, "failed_flag is set once the sink is closed");
        assert_eq!(seen, 1, "events after the close are dropped");
    }

    #[test]
    fn a_broken_pipe_on_flush_closes_the_sink_quietly() {
        let (report, flagged, seen) = exercise(usize::MAX, true, io::ErrorKind::BrokenPipe, 3);
        assert_eq!(report, SinkReport { errors: Vec::new(), closed: true });
        assert!(flagged);
        assert_eq!(seen, 1);
    }

    #[test]
    fn other_failures_are_reported_and_flagged() {
        let (report, flagged, seen) = exercise(0, false, io::ErrorKind::StorageFull, 3);
        assert!(!report.closed);
        assert_eq!(report.errors.len(), 1, "{report:?}");
        assert!(report.errors[0].starts_with("failing: "), "{report:?}");
        assert!(flagged);
        assert_eq!(seen, 0);
    }

    #[test]
    fn finish_still_returns_only_errors() {
        let thread = SinkThread::start(Box::new(Failing {
            nth: 0,
            writes: 0,
            flush_fails: false,
            kind: io::ErrorKind::BrokenPipe,
            seen: Arc::default(),
        }))
        .unwrap();
        thread.queue().send(SinkMsg::Events(batch())).unwrap();
        assert_eq!(thread.finish(), Vec::<String>::new());
    }
}
