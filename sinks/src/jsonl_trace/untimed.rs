//! Trace lines whose event has no time yet. A Cursor CLI run opens on its `system/init` and
//! `user` lines, which carry no `timestamp_ms` (no real capture has one there), so the engine
//! emits the run's opening before any event time of the run is known, stamped 0. Every trace line
//! has event time (SPEC §9.3), so such a line waits for its run's first known time — the time of
//! the run's next event that has one — and is written with it; the lines after it wait behind it,
//! so the file keeps the engine's order. A run's lines depend only on the run itself: replays are
//! byte-identical on any number of shards.
//!
//! A run-less line (the engine's `seq` 0 diagnostics: a decode error or a late line before any
//! time) and the lines of a run that closes without ever having a time take the next time the
//! trace learns from any run. At a checkpoint (the end of a replay, Ctrl-C), or when more than
//! [`HELD_MAX_BYTES`] wait, what still waits takes the latest time seen (0 only when nothing in
//! the input had a time).

use std::collections::VecDeque;
use std::sync::Arc;

use toolstream_schemas::{Output, OutputEvent, RunId};

/// Most bytes of lines kept waiting for a time; past it they are written with the latest time.
pub const HELD_MAX_BYTES: usize = 1 << 20;

/// What a waiting line waits for.
#[derive(Debug)]
enum Awaits {
    /// Its run's first known time.
    Run(Arc<RunId>),
    /// The next time the trace learns from any run.
    Any,
}

#[derive(Debug)]
struct Held {
    /// `Some` once its time is known.
    ts: Option<u64>,
    awaits: Awaits,
    /// The line after its `{"ts":N` prefix.
    body: Vec<u8>,
}

/// The lines waiting for a time, in trace order.
#[derive(Debug, Default)]
pub struct Untimed {
    held: VecDeque<Held>,
    held_bytes: usize,
    /// The waiting lines that have no time yet, in order, by number (a line's number less
    /// `popped` is its place in `held`): what learning a time looks at, not every waiting line.
    untimed: Vec<u64>,
    /// How many lines left `held` from its front.
    popped: u64,
    /// The latest event time seen.
    latest: u64,
}

impl Untimed {
    /// Whether no line waits (a line with a known time can then be written at once).
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Learn from `ev` (every event, whether it makes a line or not) the time its run is at:
    /// the waiting lines of its run, and those waiting for any time, take it.
    pub fn learn(&mut self, ev: &OutputEvent) {
        if ev.at_ms == 0 {
            return;
        }
        self.latest = self.latest.max(ev.at_ms);
        let (held, popped) = (&mut self.held, self.popped);
        self.untimed.retain(|&n| {
            let Some(h) = place(n, popped).and_then(|i| held.get_mut(i)) else { return false };
            let resolved = match &h.awaits {
                Awaits::Any => true,
                Awaits::Run(run) => *run == ev.run,
            };
            if resolved {
                h.ts = Some(ev.at_ms);
            }
            !resolved
        });
    }

    /// Queue a line behind the waiting ones: `ev`'s line, encoded after its ts as `body`.
    pub fn hold(&mut self, ev: &OutputEvent, body: Vec<u8>) {
        let ts = (ev.at_ms != 0).then_some(ev.at_ms);
        let awaits = if ev.run.seq == 0 { Awaits::Any } else { Awaits::Run(ev.run.clone()) };
        self.held_bytes += body.len();
        if ts.is_none() {
            self.untimed.push(self.popped + self.held.len() as u64);
        }
        self.held.push_back(Held { ts, awaits, body });
        if ts.is_none() && matches!(ev.kind, Output::RunClosed { .. }) {
            // Closed without ever having a time: its lines take the next time the trace learns.
            for &n in &self.untimed {
                let Some(h) = place(n, self.popped).and_then(|i| self.held.get_mut(i)) else { continue };
                if matches!(&h.awaits, Awaits::Run(run) if *run == ev.run) {
                    h.awaits = Awaits::Any;
                }
            }
        }
        if self.held_bytes > HELD_MAX_BYTES {
            self.resolve_all();
        }
    }

    /// The next line that can be written, with its time: the first waiting line, once its time
    /// is known.
    pub fn pop_ready(&mut self) -> Option<(u64, Vec<u8>)> {
        let ts = self.held.front()?.ts?;
        let h = self.held.pop_front()?;
        self.popped += 1;
        self.held_bytes -= h.body.len();
        Some((ts, h.body))
    }

    /// Give every waiting line the latest time seen, so all of them can be written.
    pub fn resolve_all(&mut self) {
        let latest = self.latest;
        for n in self.untimed.drain(..) {
            if let Some(h) = place(n, self.popped).and_then(|i| self.held.get_mut(i)) {
                h.ts = Some(latest);
            }
        }
    }

    /// Drop every waiting line (the trace stopped at its cap).
    pub fn clear(&mut self) {
        self.popped += self.held.len() as u64;
        self.held.clear();
        self.held_bytes = 0;
        self.untimed.clear();
    }
}

/// The place in `held` of the line numbered `n`, once `popped` lines left it.
fn place(n: u64, popped: u64) -> Option<usize> {
    usize::try_from(n.checked_sub(popped)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seq: u32) -> Arc<RunId> {
        Arc::new(RunId { session: "s".into(), seq })
    }

    fn ev(run: &Arc<RunId>, at_ms: u64) -> OutputEvent {
        OutputEvent { run: run.clone(), at_ms, kind: Output::MessageStarted { turn: 0 } }
    }

    fn closed(run: &Arc<RunId>, at_ms: u64) -> OutputEvent {
        let kind = Output::RunClosed {
            status: toolstream_schemas::RunStatus::Error,
            final_text: String::new(),
            totals: Box::default(),
            error: None,
        };
        OutputEvent { run: run.clone(), at_ms, kind }
    }

    /// Feed events as the sink does (learn, then hold) and return what is ready, by body.
    fn feed(u: &mut Untimed, events: &[(OutputEvent, &str)]) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        for (ev, body) in events {
            u.learn(ev);
            u.hold(ev, body.as_bytes().to_vec());
            while let Some((ts, body)) = u.pop_ready() {
                out.push((ts, String::from_utf8(body).unwrap()));
            }
        }
        out
    }

    #[test]
    fn an_untimed_line_takes_its_runs_next_time_and_keeps_its_place() {
        let (a, b) = (run(1), run(2));
        let mut u = Untimed::default();
        let out = feed(&mut u, &[(ev(&a, 0), "a-open"), (ev(&b, 50), "b-1"), (ev(&a, 0), "a-2"), (ev(&a, 70), "a-3")]);
        // b's line waited behind a's; a's waiting lines took a's first time, not b's.
        assert_eq!(out, [(70, "a-open".into()), (50, "b-1".into()), (70, "a-2".into()), (70, "a-3".into())]);
        assert!(u.is_empty());
    }

    #[test]
    fn run_less_lines_and_runs_closed_without_a_time_take_the_next_time_learned() {
        let (a, b, none) = (run(1), run(2), run(0));
        let mut u = Untimed::default();
        let out = feed(&mut u, &[(ev(&none, 0), "decode-error"), (ev(&a, 0), "a-open"), (closed(&a, 0), "a-closed")]);
        assert!(out.is_empty());
        let out = feed(&mut u, &[(ev(&b, 90), "b-1")]);
        assert_eq!(
            out,
            [(90, "decode-error".into()), (90, "a-open".into()), (90, "a-closed".into()), (90, "b-1".into())]
        );
    }

    #[test]
    fn what_still_waits_at_the_end_takes_the_latest_time() {
        let (a, b) = (run(1), run(2));
        let mut u = Untimed::default();
        assert_eq!(feed(&mut u, &[(ev(&a, 30), "a-1"), (ev(&b, 0), "b-open")]), [(30, "a-1".into())]);
        u.resolve_all();
        assert_eq!(u.pop_ready(), Some((30, b"b-open".to_vec())));
        assert_eq!(u.pop_ready(), None);
    }

    #[test]
    fn lines_that_wait_after_others_were_written_or_dropped_take_their_runs_time() {
        let (a, b, c) = (run(1), run(2), run(3));
        let mut u = Untimed::default();
        assert_eq!(feed(&mut u, &[(ev(&a, 10), "a-1"), (ev(&a, 20), "a-2")]).len(), 2);
        let out = feed(&mut u, &[(ev(&b, 0), "b-open"), (ev(&a, 30), "a-3"), (ev(&b, 40), "b-1")]);
        assert_eq!(out, [(40, "b-open".into()), (30, "a-3".into()), (40, "b-1".into())]);
        // Two runs wait; the first's time comes first and its line leaves, the second still waits.
        let (d, e) = (run(4), run(5));
        let out = feed(&mut u, &[(ev(&d, 0), "d-open"), (ev(&e, 0), "e-open"), (ev(&d, 41), "d-1")]);
        assert_eq!(out, [(41, "d-open".into())]);
        let out = feed(&mut u, &[(ev(&e, 42), "e-1")]);
        assert_eq!(out, [(42, "e-open".into()), (41, "d-1".into()), (42, "e-1".into())]);
        // Lines dropped at the trace's cap, then a run that waits again.
        assert!(feed(&mut u, &[(ev(&a, 0), "a-dropped"), (ev(&b, 45), "b-dropped")]).is_empty());
        u.clear();
        let out = feed(&mut u, &[(ev(&c, 0), "c-open"), (ev(&a, 50), "a-4"), (ev(&c, 60), "c-1")]);
        assert_eq!(out, [(60, "c-open".into()), (50, "a-4".into()), (60, "c-1".into())]);
        assert!(u.is_empty());
    }

    #[test]
    fn too_much_waiting_is_written_with_the_latest_time() {
        let (a, b) = (run(1), run(2));
        let mut u = Untimed::default();
        let big = "x".repeat(HELD_MAX_BYTES / 2 + 1);
        assert_eq!(feed(&mut u, &[(ev(&b, 5), "b-1"), (ev(&a, 0), &big)]).len(), 1);
        let out = feed(&mut u, &[(ev(&a, 0), &big)]);
        assert_eq!(out.iter().map(|(ts, _)| *ts).collect::<Vec<_>>(), [5, 5]);
        assert!(u.is_empty());
    }
}
