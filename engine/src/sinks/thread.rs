//! Sink threads: every sink runs on its own thread behind a bounded queue fed by the fan-out
//! ([`super::port`]). A sink is opened on its own thread (a FIFO nobody reads blocks only its own
//! sink); the starter waits for the opening only for `block` sinks, so their errors (a trace file
//! that cannot be created) stop the command before it starts. A sink flushes whenever its queue
//! runs dry (so live output shows at once and bulk replays write in large batches) and on request.
//! A failing sink is isolated: it keeps draining its queue so it never holds up the others, and
//! its failure is reported once, at exit. A sink whose reader went away (a broken pipe:
//! `toolstream replay x | head`) is the same but quiet: it is marked closed, not failed.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};
use toolstream_sinks::{Sink, SinkError};

use super::port::{Counters, SinkMsg, SinkPort, WhenFull};

/// Batches a sink's queue holds before the fan-out blocks (`block`) or drops (`drop_newest`).
const QUEUE_CAPACITY: usize = 8;

/// Opens a sink on its own thread.
pub type OpenSink = Box<dyn FnOnce() -> Result<Box<dyn Sink>, SinkError> + Send>;

/// A sink to start: how to open it, how it is named, and its `when_full` policy.
pub struct SinkPlan {
    pub label: String,
    pub when_full: WhenFull,
    pub open: OpenSink,
}

impl SinkPlan {
    /// A sink that is already open, delivered with `block`.
    pub fn ready(sink: Box<dyn Sink>) -> SinkPlan {
        SinkPlan { label: sink.name().to_owned(), when_full: WhenFull::Block, open: Box::new(move || Ok(sink)) }
    }
}

/// A running sink thread.
pub struct SinkThread {
    port: SinkPort,
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
    /// It was still busy when the engine stopped waiting for it (left running; nothing more of it
    /// is waited for). What it lost is counted all the same (its port's loss probe).
    pub stuck: bool,
}

impl SinkThread {
    /// Start the sink's thread and open the sink there. For a `block` sink, wait for the opening
    /// and return its error; a `drop_newest` sink that fails to open is reported as failed.
    pub fn start(plan: SinkPlan) -> Result<SinkThread, SinkError> {
        let (tx, rx) = bounded::<SinkMsg>(QUEUE_CAPACITY);
        let failed = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let (opened_tx, opened_rx) = bounded::<Result<(), String>>(1);
        let (flag, written, label) = (failed.clone(), counters.clone(), plan.label.clone());
        let open = plan.open;
        let spawned = std::thread::Builder::new().name(format!("toolstream-sink-{}", plan.label)).spawn(move || {
            let _on_panic = FailOnPanic(&flag);
            let mut health =
                Health { flag: &flag, label: &label, report: SinkReport::default(), failed: false, counters: &written };
            match open() {
                Ok(mut sink) => {
                    tracing::debug!(sink = %label, "sink opened");
                    if let Some(probe) = sink.loss_probe() {
                        written.probe.set(probe);
                    }
                    let _ = opened_tx.send(Ok(()));
                    drive(&mut *sink, &rx, &mut health, &written);
                }
                Err(e) => {
                    let _ = opened_tx.send(Err(e.to_string()));
                    health.fail(e);
                    // Keep draining so the fan-out never waits on a sink that is not there.
                    for msg in &rx {
                        match msg {
                            SinkMsg::Flush(reply) => drop(reply.send(())),
                            SinkMsg::Stop => break,
                            SinkMsg::Begin | SinkMsg::Events(_) | SinkMsg::Notice(_) => {}
                        }
                    }
                }
            }
            health.report
        });
        let handle = spawned.map_err(|source| SinkError::Io { sink: "engine", source })?;
        if plan.when_full == WhenFull::Block {
            if let Ok(Err(message)) = opened_rx.recv() {
                drop(tx); // ends the thread's drain loop
                let _ = handle.join();
                return Err(SinkError::Other { sink: "engine", message });
            }
        }
        let port = SinkPort { label: plan.label, when_full: plan.when_full, queue: tx, counters };
        Ok(SinkThread { port, failed, handle })
    }

    /// Every sink of the run opened: let this one begin (it empties the file it streams into).
    pub fn begin(&self) {
        let _ = self.port.queue.send(SinkMsg::Begin);
    }

    /// The fan-out's end of this sink.
    pub fn port(&self) -> SinkPort {
        self.port.clone()
    }

    /// Turns true (and stays true) once the sink failed, was closed (broken pipe) or panicked:
    /// from then on it drops every event, so a reader feeding only such sinks may stop early.
    pub fn failed_flag(&self) -> Arc<AtomicBool> {
        self.failed.clone()
    }

    /// Tell a sink whose end is waited for a bounded time to drain its queue, checkpoint and end
    /// (waiting for room in its queue until `deadline`); a `block` sink is told in
    /// [`SinkThread::finish`]. Telling every sink first lets them all end at once.
    pub fn stop(&self, deadline: Instant) {
        if self.port.bounded_wait() {
            self.port.send_by(SinkMsg::Stop, true, deadline);
        }
    }

    /// Let the sink drain its queue, checkpoint and end. A `block` sink is waited for as long as
    /// it takes (it is documented to block); a `drop_newest` sink, or one abandoned at shutdown,
    /// until `deadline` (one for every sink: call [`SinkThread::stop`] on each first): one still
    /// busy then is left running and reported `stuck`, and what it lost is still counted (its
    /// port's loss probe reads it whatever the thread is doing).
    pub fn finish(self, deadline: Instant) -> SinkReport {
        if !self.port.bounded_wait() {
            self.port.send_by(SinkMsg::Stop, false, deadline);
            return join(self.handle);
        }
        // Told already by `stop` (one more is harmless); never waits here.
        let _ = self.port.queue.try_send(SinkMsg::Stop);
        while !self.handle.is_finished() {
            if Instant::now() >= deadline {
                tracing::debug!(sink = %self.port.label, "sink still busy at exit: not waited for");
                self.port.counters.stuck.store(true, Ordering::Relaxed);
                return SinkReport { stuck: true, ..SinkReport::default() };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        join(self.handle)
    }
}

fn join(handle: JoinHandle<SinkReport>) -> SinkReport {
    handle
        .join()
        .unwrap_or_else(|_| SinkReport { errors: vec!["sink thread panicked".to_owned()], ..SinkReport::default() })
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

fn drive(sink: &mut dyn Sink, rx: &Receiver<SinkMsg>, state: &mut Health<'_>, counters: &Counters) {
    let mut dirty = false;
    // Begun by the run's first message (`Begin`, sent once every sink opened); a queue that
    // closes before any message belonged to a run that was refused: nothing is written then.
    let mut begun = false;
    for msg in rx {
        if !begun {
            begun = true;
            if let Err(e) = sink.begin() {
                state.fail(e);
            }
        }
        let (batch, counted) = match msg {
            SinkMsg::Begin => continue,
            SinkMsg::Events(batch) => (batch, true),
            SinkMsg::Notice(batch) => (batch, false),
            SinkMsg::Flush(reply) => {
                if !state.failed {
                    if let Err(e) = sink.checkpoint() {
                        state.fail(e);
                    }
                }
                let _ = reply.send(());
                continue;
            }
            SinkMsg::Stop => break,
        };
        if state.failed {
            continue;
        }
        match sink.write(&batch) {
            Ok(()) => {
                if counted {
                    counters.written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                }
                dirty = true;
            }
            Err(e) => state.fail(e),
        }
        if dirty && rx.is_empty() {
            dirty = false;
            if let Err(e) = sink.flush() {
                state.fail(e);
            }
        }
    }
    if begun && !state.failed {
        if let Err(e) = sink.checkpoint() {
            state.fail(e);
        }
    }
    tracing::debug!(sink = %state.label, begun, failed = state.failed, "sink finished");
}

/// A sink thread's failure state.
struct Health<'a> {
    flag: &'a AtomicBool,
    label: &'a str,
    report: SinkReport,
    /// Failed or closed: events are dropped.
    failed: bool,
    counters: &'a Counters,
}

impl Health<'_> {
    /// Record why the sink stops; it is reported once, at exit (with what it did not write).
    fn fail(&mut self, e: SinkError) {
        if is_broken_pipe(&e) {
            tracing::debug!(sink = %self.label, "sink output closed (broken pipe); its events are dropped");
            self.report.closed = true;
            self.counters.closed.store(true, Ordering::Relaxed);
        } else {
            tracing::debug!(sink = %self.label, error = %e, "sink failed; its events are dropped from now on");
            // Reports name the sink by its label already: keep only the reason.
            self.report.errors.push(match e {
                SinkError::Io { source, .. } => source.to_string(),
                SinkError::Other { message, .. } => message,
            });
        }
        self.failed = true;
        self.flag.store(true, Ordering::Release);
    }
}

/// The sink's reader went away: not the sink's fault, nothing to report.
fn is_broken_pipe(e: &SinkError) -> bool {
    matches!(e, SinkError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::sync::{Arc, Mutex};

    use toolstream_schemas::{Output, OutputEvent, RunId};

    use super::*;

    const GRACE: Duration = Duration::from_secs(5);

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

    /// Records the calls it gets, by name.
    struct Calls(Arc<Mutex<Vec<&'static str>>>);

    impl Sink for Calls {
        fn name(&self) -> &'static str {
            "calls"
        }
        fn begin(&mut self) -> Result<(), SinkError> {
            self.0.lock().unwrap().push("begin");
            Ok(())
        }
        fn write(&mut self, _: &[OutputEvent]) -> Result<(), SinkError> {
            self.0.lock().unwrap().push("write");
            Ok(())
        }
        fn flush(&mut self) -> Result<(), SinkError> {
            self.0.lock().unwrap().push("flush");
            Ok(())
        }
        fn checkpoint(&mut self) -> Result<(), SinkError> {
            self.0.lock().unwrap().push("checkpoint");
            Ok(())
        }
    }

    /// The calls a sink got from its thread, sent `msgs` and then dropped (its queue closed).
    fn calls_after(msgs: Vec<SinkMsg>) -> Vec<&'static str> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let thread = SinkThread::start(SinkPlan::ready(Box::new(Calls(calls.clone())))).unwrap();
        let queue = thread.port().queue;
        for m in msgs {
            queue.send(m).unwrap();
        }
        drop(queue);
        let SinkThread { port, handle, .. } = thread;
        drop(port);
        let _ = join(handle);
        let got = calls.lock().unwrap().clone();
        got
    }

    #[test]
    fn a_sink_begins_before_anything_and_one_never_begun_is_never_written_or_checkpointed() {
        // A run that was refused: the queue closes before any message.
        assert_eq!(calls_after(Vec::new()), Vec::<&str>::new());
        // A run with no events: begun, then checkpointed at the end.
        assert_eq!(calls_after(vec![SinkMsg::Begin]), ["begin", "checkpoint"]);
        assert_eq!(
            calls_after(vec![SinkMsg::Begin, SinkMsg::Events(batch())]),
            ["begin", "write", "flush", "checkpoint"]
        );
        // Begun by its first message, `Begin` or not (a caller that starts a sink thread alone).
        assert_eq!(calls_after(vec![SinkMsg::Events(batch())]), ["begin", "write", "flush", "checkpoint"]);
    }

    fn batch() -> Arc<Vec<OutputEvent>> {
        let run = Arc::new(RunId { session: "s".into(), seq: 1 });
        Arc::new(vec![OutputEvent { run, at_ms: 0, kind: Output::BlockEnded { turn: 1 } }])
    }

    /// Send `n` batches with a flush round-trip after each; the report, the flag, events seen.
    fn exercise(nth: usize, flush_fails: bool, kind: io::ErrorKind, n: usize) -> (SinkReport, bool, usize) {
        let seen = Arc::new(Mutex::new(0));
        let sink = Failing { nth, writes: 0, flush_fails, kind, seen: seen.clone() };
        let thread = SinkThread::start(SinkPlan::ready(Box::new(sink))).unwrap();
        let flag = thread.failed_flag();
        let queue = thread.port().queue;
        for _ in 0..n {
            queue.send(SinkMsg::Events(batch())).unwrap();
            let (tx, rx) = crossbeam_channel::bounded(1);
            queue.send(SinkMsg::Flush(tx)).unwrap();
            rx.recv().unwrap();
        }
        let flagged = flag.load(Ordering::Acquire);
        let report = thread.finish(Instant::now() + GRACE);
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
        assert_eq!(report, SinkReport { closed: true, ..SinkReport::default() });
        assert!(flagged, "failed_flag is set once the sink is closed");
        assert_eq!(seen, 1, "events after the close are dropped");
    }

    #[test]
    fn a_broken_pipe_on_flush_closes_the_sink_quietly() {
        let (report, flagged, seen) = exercise(usize::MAX, true, io::ErrorKind::BrokenPipe, 3);
        assert_eq!(report, SinkReport { closed: true, ..SinkReport::default() });
        assert!(flagged);
        assert_eq!(seen, 1);
    }

    #[test]
    fn other_failures_are_reported_and_flagged() {
        let (report, flagged, seen) = exercise(0, false, io::ErrorKind::StorageFull, 3);
        assert!(!report.closed);
        assert_eq!(report.errors.len(), 1, "{report:?}");
        assert_eq!(report.errors[0], io::Error::from(io::ErrorKind::StorageFull).to_string(), "the reason alone");
        assert!(flagged);
        assert_eq!(seen, 0);
    }

    #[test]
    fn a_block_sink_that_cannot_open_stops_the_start_and_a_drop_newest_one_is_reported_failed() {
        let plan = |when_full| SinkPlan {
            label: "jsonl=/nonexistent/t.jsonl".into(),
            when_full,
            open: Box::new(|| Err(SinkError::Other { sink: "jsonl", message: "cannot create".into() })),
        };
        assert!(SinkThread::start(plan(WhenFull::Block)).is_err());
        let thread = SinkThread::start(plan(WhenFull::DropNewest)).unwrap();
        thread.port().queue.send(SinkMsg::Events(batch())).unwrap();
        let report = thread.finish(Instant::now() + GRACE);
        assert_eq!(report.errors.len(), 1, "{report:?}");
    }

    /// Holds its final checkpoint until released (a collector that never answers); says it lost
    /// every event it was given.
    struct Silent {
        release: crossbeam_channel::Receiver<()>,
        given: Arc<std::sync::atomic::AtomicU64>,
    }

    impl Sink for Silent {
        fn name(&self) -> &'static str {
            "silent"
        }
        fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
            self.given.fetch_add(batch.len() as u64, Ordering::Relaxed);
            Ok(())
        }
        fn flush(&mut self) -> Result<(), SinkError> {
            Ok(())
        }
        fn checkpoint(&mut self) -> Result<(), SinkError> {
            let _ = self.release.recv();
            Ok(())
        }
        fn loss_probe(&self) -> Option<toolstream_sinks::LossProbe> {
            let given = self.given.clone();
            Some(Arc::new(move || {
                let count = given.load(Ordering::Relaxed);
                (count > 0).then(|| toolstream_sinks::SinkLoss { count, unit: "spans", why: "never answered".into() })
            }))
        }
    }

    #[test]
    fn a_sink_still_busy_at_exit_is_reported_with_everything_it_lost() {
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let sink = Silent { release: wait, given: Arc::default() };
        let plan = SinkPlan {
            label: "otlp=silent".into(),
            when_full: WhenFull::DropNewest,
            open: Box::new(move || Ok(Box::new(sink) as Box<dyn Sink>)),
        };
        let thread = SinkThread::start(plan).unwrap();
        let port = thread.port();
        port.queue.send(SinkMsg::Events(batch())).unwrap();
        port.queue.send(SinkMsg::Events(batch())).unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        thread.stop(deadline);
        let report = thread.finish(deadline);
        assert!(report.stuck, "still in its final checkpoint");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Read from the port, as the engine does: counted although the thread never ended.
        let set = super::super::port::SinkSet::new(vec![port], Duration::from_millis(300));
        let summary = &set.summaries()[0];
        assert_eq!(summary.lost.as_ref().map(|l| l.count), Some(2), "{summary:?}");
        assert!(summary.stuck && summary.lost_anything());
        assert_eq!(summary.report_line().as_deref(), Some("sink otlp=silent: 2 spans not delivered (never answered)"));
        drop(release);
    }

    #[test]
    fn a_drop_newest_sink_stuck_in_its_opening_is_not_waited_for_at_exit() {
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let plan = SinkPlan {
            label: "jsonl=fifo".into(),
            when_full: WhenFull::DropNewest,
            open: Box::new(move || {
                let _ = wait.recv(); // like opening a FIFO that nobody reads
                Err(SinkError::Other { sink: "jsonl", message: "never opened".into() })
            }),
        };
        let thread = SinkThread::start(plan).unwrap();
        let started = Instant::now();
        let report = thread.finish(started + Duration::from_millis(200));
        assert!(report.stuck);
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(release);
    }
}
