//! How the fan-out hands each sink its events. Every sink has a bounded queue and a `when_full`
//! policy: `block` waits for room (files and the terminal: nothing is lost, a slow sink slows the
//! run), `drop_newest` never waits (network sinks: a stalled collector must not hold back a pi
//! session or the terminal) and drops the batch it cannot queue. Every drop is counted per sink:
//! what was offered, dropped on a full queue, and written; `offered − written` is what the sink
//! never got, whatever the reason (a full queue, a failure, a sink still stuck at exit).
//!
//! Shutdown (Ctrl-C, or the end of a run) bounds every wait: once it begins, a `block` sink that
//! stays full for the grace period is abandoned (its later events are counted as dropped) so that
//! one stuck sink cannot keep the others from their final flush.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, SendTimeoutError, Sender, TrySendError};
use serde::Serialize;
use toolstream_schemas::OutputEvent;
use toolstream_sinks::{LossProbe, SinkLoss};

use crate::sinks::OutputCounts;

/// What a sink thread receives.
pub enum SinkMsg {
    /// Every sink of the run opened: begin (`Sink::begin`). The first message of a run; a sink
    /// whose queue closes before any message (the run was refused) is left as it opened.
    Begin,
    Events(Arc<Vec<OutputEvent>>),
    /// The engine's own notices (what sinks dropped): written like events, not counted.
    Notice(Arc<Vec<OutputEvent>>),
    /// Checkpoint, then reply.
    Flush(Sender<()>),
    /// Checkpoint and end the thread (other senders may still hold the queue open).
    Stop,
}

/// How often a blocked delivery looks up from its wait to check for shutdown.
const BLOCK_POLL: Duration = Duration::from_millis(50);

/// What the fan-out does when a sink's queue is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Wait for room: nothing is lost; a slow sink slows the whole run.
    #[default]
    Block,
    /// Never wait: drop the batch that does not fit, and count it.
    DropNewest,
}

impl WhenFull {
    pub const CHOICES: &'static str = "block or drop_newest";

    pub fn as_str(self) -> &'static str {
        match self {
            WhenFull::Block => "block",
            WhenFull::DropNewest => "drop_newest",
        }
    }

    pub fn parse(s: &str) -> Result<WhenFull, String> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "block" => Ok(WhenFull::Block),
            "drop_newest" => Ok(WhenFull::DropNewest),
            _ => Err(format!("`{s}` is not a when_full policy ({})", Self::CHOICES)),
        }
    }
}

impl std::fmt::Display for WhenFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One sink's counters, shared by the fan-out (offers, drops) and the sink's thread (writes).
#[derive(Debug, Default)]
pub struct Counters {
    /// Events offered to the sink.
    pub offered: AtomicU64,
    /// Events dropped because the queue was full (`drop_newest`), or after the sink was abandoned
    /// at shutdown (`block`).
    pub dropped: AtomicU64,
    /// Events the sink wrote.
    pub written: AtomicU64,
    /// A `block` sink that stayed full through the shutdown grace period.
    pub abandoned: AtomicBool,
    /// How to read what the sink lost after accepting events (set once it opened, if it can lose
    /// any): read from here, it counts whatever state the sink's thread is in.
    pub probe: ProbeSlot,
    /// Its reader went away (a broken pipe): what it did not write is no loss.
    pub closed: AtomicBool,
    /// It was still busy when the engine stopped waiting for it.
    pub stuck: AtomicBool,
}

/// A sink's [`LossProbe`], once it opened.
#[derive(Default)]
pub struct ProbeSlot(OnceLock<LossProbe>);

impl ProbeSlot {
    pub fn set(&self, probe: LossProbe) {
        let _ = self.0.set(probe);
    }

    /// What the sink lost so far, if it can lose anything.
    pub fn read(&self) -> Option<SinkLoss> {
        self.0.get().and_then(|p| p())
    }
}

impl std::fmt::Debug for ProbeSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "ProbeSlot(set)" } else { "ProbeSlot(none)" })
    }
}

/// The fan-out's end of one sink: its queue, its policy, its counters.
#[derive(Clone)]
pub struct SinkPort {
    /// How the user named the sink (`jsonl=trace.jsonl`), for reports.
    pub label: String,
    pub when_full: WhenFull,
    pub queue: Sender<SinkMsg>,
    pub counters: Arc<Counters>,
}

impl SinkPort {
    /// Offer a batch under the sink's policy (see the module docs).
    fn offer(&self, batch: &Arc<Vec<OutputEvent>>, shutdown: &Shutdown) {
        let n = batch.len() as u64;
        self.counters.offered.fetch_add(n, Ordering::Relaxed);
        let dropped = match self.when_full {
            WhenFull::DropNewest => match self.queue.try_send(SinkMsg::Events(batch.clone())) {
                Ok(()) | Err(TrySendError::Disconnected(_)) => false,
                Err(TrySendError::Full(_)) => true,
            },
            WhenFull::Block => self.offer_blocking(SinkMsg::Events(batch.clone()), shutdown),
        };
        if dropped {
            self.counters.dropped.fetch_add(n, Ordering::Relaxed);
            tracing::trace!(sink = %self.label, events = n, "queue full: batch dropped");
        }
    }

    /// Wait for room; returns whether the message was dropped instead (the sink was abandoned).
    fn offer_blocking(&self, mut msg: SinkMsg, shutdown: &Shutdown) -> bool {
        let mut deadline: Option<Instant> = None;
        loop {
            if self.counters.abandoned.load(Ordering::Relaxed) {
                return true;
            }
            match self.queue.send_timeout(msg, BLOCK_POLL) {
                Ok(()) | Err(SendTimeoutError::Disconnected(_)) => return false,
                Err(SendTimeoutError::Timeout(m)) => msg = m,
            }
            if shutdown.begun() {
                let due = *deadline.get_or_insert_with(|| Instant::now() + shutdown.grace);
                if Instant::now() >= due {
                    self.counters.abandoned.store(true, Ordering::Relaxed);
                    tracing::debug!(sink = %self.label, "sink still full after the shutdown grace period: abandoned");
                    return true;
                }
            }
        }
    }

    /// Whether its waits at the end are bounded: a `drop_newest` sink, or one abandoned already.
    /// A `block` sink is waited for as long as it takes (it is documented to block).
    pub fn bounded_wait(&self) -> bool {
        self.when_full == WhenFull::DropNewest || self.counters.abandoned.load(Ordering::Relaxed)
    }

    /// Queue `msg` for the sink: waiting for room until `deadline` when `bounded`, else as long as
    /// it takes. Whether it was queued.
    pub fn send_by(&self, msg: SinkMsg, bounded: bool, deadline: Instant) -> bool {
        if bounded {
            self.queue.send_deadline(msg, deadline).is_ok()
        } else {
            self.queue.send(msg).is_ok()
        }
    }

    /// Ask the sink for a checkpoint (make what it has complete); the answer comes on the
    /// receiver (`None`: it could not even be asked by `deadline`).
    fn ask_checkpoint(&self, bounded_wait: bool, deadline: Instant) -> Option<Receiver<()>> {
        if self.counters.abandoned.load(Ordering::Relaxed) {
            return None;
        }
        let (tx, rx) = bounded(1);
        self.send_by(SinkMsg::Flush(tx), bounded_wait, deadline).then_some(rx)
    }
}

/// Checkpoint every port at once and wait for their answers: the ports `bounded` says are
/// bounded until `deadline` (one deadline for all, not one per sink), the others as long as they
/// take. The ports that did not answer.
fn checkpoint_together(ports: &[SinkPort], bounded: impl Fn(&SinkPort) -> bool, deadline: Instant) -> Vec<&SinkPort> {
    let mut ports: Vec<(&SinkPort, bool)> = ports.iter().map(|p| (p, bounded(p))).collect();
    // The bounded ones are asked first: asking a `block` sink may wait for room in its queue.
    ports.sort_by_key(|&(_, bounded)| !bounded);
    let asked: Vec<_> = ports.into_iter().map(|(p, b)| (p, b, p.ask_checkpoint(b, deadline))).collect();
    asked
        .into_iter()
        .filter(|(_, bounded, answer)| match answer {
            Some(rx) if *bounded => rx.recv_deadline(deadline).is_err(),
            Some(rx) => rx.recv().is_err(),
            None => true,
        })
        .map(|(p, _, _)| p)
        .collect()
}

/// Whether the pipeline is shutting down, and how long a sink may hold that up.
#[derive(Debug)]
struct Shutdown {
    begun: AtomicBool,
    grace: Duration,
}

impl Shutdown {
    fn begun(&self) -> bool {
        self.begun.load(Ordering::Relaxed)
    }
}

/// Every sink of a pipeline, as the fan-out sees them, and what it counted of their events.
pub struct SinkSet {
    ports: Vec<SinkPort>,
    shutdown: Shutdown,
    /// The latest event time delivered (for the engine's own notices).
    last_at_ms: AtomicU64,
    /// Every event delivered, counted (the engine's own notices are not).
    counts: Mutex<OutputCounts>,
}

impl SinkSet {
    /// `grace`: how long, once shutdown began, a `block` sink may stay full (and a sink may take to
    /// answer a checkpoint) before it is given up on.
    pub fn new(ports: Vec<SinkPort>, grace: Duration) -> SinkSet {
        SinkSet {
            ports,
            shutdown: Shutdown { begun: AtomicBool::new(false), grace },
            last_at_ms: AtomicU64::new(0),
            counts: Mutex::default(),
        }
    }

    /// What was counted of the events delivered so far.
    pub fn counts(&self) -> OutputCounts {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn ports(&self) -> &[SinkPort] {
        &self.ports
    }

    pub fn grace(&self) -> Duration {
        self.shutdown.grace
    }

    /// Hand one batch to every sink, each under its own policy.
    pub fn deliver(&self, events: Vec<OutputEvent>) {
        if events.is_empty() {
            return;
        }
        let latest = events.iter().map(|e| e.at_ms).max().unwrap_or(0);
        self.last_at_ms.fetch_max(latest, Ordering::Relaxed);
        if let Ok(mut counts) = self.counts.lock() {
            counts.count(&events);
        }
        let shared = Arc::new(events);
        for port in &self.ports {
            port.offer(&shared, &self.shutdown);
        }
    }

    /// The latest event time delivered so far.
    pub fn last_at_ms(&self) -> u64 {
        self.last_at_ms.load(Ordering::Relaxed)
    }

    /// Hand the engine's own notices (what sinks dropped) to every user sink, uncounted, never
    /// waiting longer than the grace period on any of them.
    pub fn deliver_to_users(&self, events: Vec<OutputEvent>) {
        let shared = Arc::new(events);
        for port in self.ports.iter().filter(|p| !p.counters.abandoned.load(Ordering::Relaxed)) {
            let msg = SinkMsg::Notice(shared.clone());
            let _ = match port.when_full {
                WhenFull::DropNewest => port.queue.try_send(msg).is_ok(),
                WhenFull::Block => port.queue.send_timeout(msg, self.shutdown.grace).is_ok(),
            };
        }
    }

    /// From now on no sink may block the others for longer than the grace period.
    pub fn begin_shutdown(&self) {
        self.shutdown.begun.store(true, Ordering::Relaxed);
    }

    /// Wait until every sink has handled what it was given (at the end, so what each dropped is
    /// final): as long as it takes for a `block` sink, until `deadline` for the others.
    pub fn drain_all(&self, deadline: Instant) {
        for port in checkpoint_together(&self.ports, SinkPort::bounded_wait, deadline) {
            tracing::debug!(sink = %port.label, "sink did not answer its checkpoint by the end-of-run deadline");
        }
    }

    /// Checkpoint every sink (Ctrl-C), all of them by `deadline`.
    pub fn checkpoint_all(&self, deadline: Instant) {
        for port in checkpoint_together(&self.ports, |_| true, deadline) {
            tracing::debug!(sink = %port.label, "sink did not answer its final checkpoint in time");
        }
    }

    /// What each sink was offered, wrote and dropped so far.
    pub fn summaries(&self) -> Vec<SinkSummary> {
        self.ports
            .iter()
            .map(|p| {
                let c = &p.counters;
                let offered = c.offered.load(Ordering::Relaxed);
                let written = c.written.load(Ordering::Relaxed);
                SinkSummary {
                    sink: p.label.clone(),
                    when_full: p.when_full,
                    offered,
                    written,
                    dropped: offered.saturating_sub(written),
                    dropped_queue_full: c.dropped.load(Ordering::Relaxed),
                    error: None,
                    stuck: c.abandoned.load(Ordering::Relaxed) || c.stuck.load(Ordering::Relaxed),
                    closed: c.closed.load(Ordering::Relaxed),
                    lost: c.probe.read(),
                }
            })
            .collect()
    }
}

/// What one sink got, for the exit summary, the trace and `--json` outputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SinkSummary {
    /// How the sink was named (`jsonl=trace.jsonl`).
    pub sink: String,
    pub when_full: WhenFull,
    /// Output events offered to it.
    pub offered: u64,
    /// Output events it wrote.
    pub written: u64,
    /// Output events it never wrote (`offered − written`), whatever the reason.
    pub dropped: u64,
    /// Of those, dropped by the fan-out because its queue was full (or after it was abandoned).
    pub dropped_queue_full: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// It was still busy (blocked) when the engine stopped waiting for it.
    pub stuck: bool,
    /// Its reader went away (a broken pipe: `| head`): what it did not write is not a loss.
    pub closed: bool,
    /// What it lost after accepting events (spans a collector never got): `(count, unit, why)`.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "loss_json")]
    pub lost: Option<SinkLoss>,
}

fn loss_json<S: serde::Serializer>(lost: &Option<SinkLoss>, ser: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = ser.serialize_map(None)?;
    if let Some(l) = lost {
        m.serialize_entry("count", &l.count)?;
        m.serialize_entry("unit", l.unit)?;
        m.serialize_entry("why", &l.why)?;
    }
    m.end()
}

/// Say on stderr, one line each, what every sink that failed, dropped or lost anything missed.
pub fn report_to_stderr<'a>(sinks: impl IntoIterator<Item = &'a SinkSummary>) {
    for line in sinks.into_iter().filter_map(SinkSummary::report_line) {
        crate::say!("toolstream: {line}");
    }
}

impl SinkSummary {
    /// Whether the sink lost anything (the exit status says so): it failed, did not deliver what it
    /// accepted, dropped events (a full `drop_newest` queue, say), or was still busy when the engine
    /// stopped waiting. A sink whose reader went away (`| head`) lost nothing.
    pub fn lost_anything(&self) -> bool {
        !self.closed && (self.dropped > 0 || self.error.is_some() || self.lost.is_some() || self.stuck)
    }

    /// The one exit-summary line about this sink, or `None` when it got everything.
    pub fn report_line(&self) -> Option<String> {
        let lost = self.lost.as_ref().map(|l| format!("{} {} not delivered ({})", thousands(l.count), l.unit, l.why));
        if self.dropped == 0 && self.error.is_none() {
            return match (lost, self.stuck) {
                (Some(l), _) => Some(format!("sink {}: {l}", self.sink)),
                (None, true) => Some(format!("sink {}: still busy at exit", self.sink)),
                (None, false) => None,
            };
        }
        let line = self.event_report_line();
        Some(match lost {
            Some(l) => format!("{line}; {l}"),
            None => line,
        })
    }

    /// The report of events dropped before the sink (or a failure).
    fn event_report_line(&self) -> String {
        let events = format!("{} event{} dropped", thousands(self.dropped), if self.dropped == 1 { "" } else { "s" });
        let mut why = Vec::new();
        if self.dropped_queue_full > 0 {
            why.push(if self.dropped_queue_full == self.dropped {
                "queue full".to_owned()
            } else {
                format!("{} on a full queue", thousands(self.dropped_queue_full))
            });
        }
        let rest = self.dropped - self.dropped_queue_full.min(self.dropped);
        if rest > 0 && self.error.is_none() {
            let what = if self.closed {
                "its reader went away"
            } else if self.stuck {
                "still blocked at exit"
            } else {
                "not written"
            };
            why.push(if why.is_empty() { what.to_owned() } else { format!("{} {what}", thousands(rest)) });
        }
        match &self.error {
            Some(e) if self.dropped > 0 => format!("sink {} failed: {e}; {events}", self.sink),
            Some(e) => format!("sink {} failed: {e}", self.sink),
            None => format!("sink {}: {events} ({})", self.sink, why.join(", ")),
        }
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolstream_schemas::{Output, RunId};

    fn batch(n: usize) -> Vec<OutputEvent> {
        let run = Arc::new(RunId { session: "s".into(), seq: 1 });
        (0..n).map(|_| OutputEvent { run: run.clone(), at_ms: 0, kind: Output::BlockEnded { turn: 0 } }).collect()
    }

    fn port(label: &str, when_full: WhenFull, capacity: usize) -> (SinkPort, crossbeam_channel::Receiver<SinkMsg>) {
        let (tx, rx) = bounded(capacity);
        let p = SinkPort { label: label.into(), when_full, queue: tx, counters: Arc::default() };
        (p, rx)
    }

    #[test]
    fn a_full_drop_newest_sink_never_holds_back_the_others_and_counts_every_event() {
        let (stalled, _never_read) = port("otlp", WhenFull::DropNewest, 1);
        let (healthy, rx) = port("cards", WhenFull::Block, 64);
        let set = SinkSet::new(vec![stalled, healthy], Duration::from_millis(100));
        for _ in 0..10 {
            set.deliver(batch(3));
        }
        assert_eq!(rx.try_iter().count(), 10, "the block sink got every batch");
        let s = set.summaries();
        assert_eq!((s[0].offered, s[0].dropped_queue_full, s[0].dropped), (30, 27, 30));
        assert_eq!(
            s[0].report_line().as_deref(),
            Some("sink otlp: 30 events dropped (27 on a full queue, 3 not written)")
        );
        assert_eq!((s[1].offered, s[1].dropped_queue_full), (30, 0));
    }

    #[test]
    fn a_stuck_block_sink_is_abandoned_only_after_shutdown_and_its_grace() {
        let (stuck, _never_read) = port("jsonl=fifo", WhenFull::Block, 1);
        let set = Arc::new(SinkSet::new(vec![stuck], Duration::from_millis(100)));
        set.deliver(batch(1)); // fills the queue
        let s2 = set.clone();
        let blocked = std::thread::spawn(move || s2.deliver(batch(2)));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!blocked.is_finished(), "block waits while the pipeline runs");
        set.begin_shutdown();
        blocked.join().unwrap_or_default();
        set.deliver(batch(4)); // abandoned: dropped at once
        let s = &set.summaries()[0];
        assert!(s.stuck);
        assert_eq!((s.offered, s.dropped_queue_full), (7, 6));
    }

    fn summary() -> SinkSummary {
        SinkSummary {
            sink: "jsonl=t".into(),
            when_full: WhenFull::DropNewest,
            offered: 10,
            written: 10,
            dropped: 0,
            dropped_queue_full: 0,
            error: None,
            stuck: false,
            closed: false,
            lost: None,
        }
    }

    #[test]
    fn every_kind_of_loss_is_a_line_and_a_loss_and_a_reader_that_left_is_neither() {
        let all = summary();
        assert!(all.report_line().is_none() && !all.lost_anything());
        let dropped = SinkSummary { written: 7, dropped: 3, dropped_queue_full: 3, ..summary() };
        assert_eq!(dropped.report_line().as_deref(), Some("sink jsonl=t: 3 events dropped (queue full)"));
        assert!(dropped.lost_anything());
        let failed = SinkSummary { error: Some("disk full".into()), ..summary() };
        assert_eq!(failed.report_line().as_deref(), Some("sink jsonl=t failed: disk full"));
        assert!(failed.lost_anything());
        let undelivered = SinkSummary {
            lost: Some(SinkLoss { count: 8, unit: "spans", why: "8 still queued at exit".into() }),
            ..summary()
        };
        assert_eq!(
            undelivered.report_line().as_deref(),
            Some("sink jsonl=t: 8 spans not delivered (8 still queued at exit)")
        );
        assert!(undelivered.lost_anything());
        let busy = SinkSummary { stuck: true, ..summary() };
        assert_eq!(busy.report_line().as_deref(), Some("sink jsonl=t: still busy at exit"));
        assert!(busy.lost_anything());
        let left = SinkSummary { written: 4, dropped: 6, closed: true, ..summary() };
        assert_eq!(left.report_line().as_deref(), Some("sink jsonl=t: 6 events dropped (its reader went away)"));
        assert!(!left.lost_anything(), "`| head` is not a loss");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
