//! Time (SPEC §2). Every timer in the engine fires by event time. Recorded sources run on the
//! event-time clock alone: a ten-minute recording replays in milliseconds and byte-identically.
//! Live sources add ticks that extrapolate event time by the wall time elapsed since the last
//! event, so a deferred line appears while Cursor is still waiting on a tool. `--realtime`
//! paces a recording by its recorded times and ticks the same way.

use std::time::{Duration, Instant};

use toolstream_schemas::by_arc::ByArc;
use toolstream_schemas::InputEvent;

/// How the engine keeps time for a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockMode {
    /// Event time only: no ticks, as fast as the bytes decode (recordings).
    EventTime,
    /// Event time plus ticks extrapolated by wall time (live input).
    Live,
    /// Recorded times are replayed at their original pace, with ticks (`--realtime`).
    Realtime,
}

impl ClockMode {
    pub fn ticks(self) -> bool {
        !matches!(self, ClockMode::EventTime)
    }
}

/// Gives input events their event time: an event's own `timestamp_ms`/`at_ms` when present,
/// else the time of the previous timed event of the same session (SPEC §1.1 rule 11); never
/// backwards within a session. Sessions never borrow each other's time: an untimed event before
/// its session's first timed one stays untimed (it happens at its run's current time), so one
/// session's clock cannot push another's timers out of reach. One per source.
#[derive(Debug, Default)]
pub struct EventTime {
    /// Each session's clock, found by the address of the session's `Arc` (one per session from
    /// the decoder), as the stage cores find theirs.
    last: ByArc<str, u64>,
    /// The latest event time seen in any session (decode-error records use it).
    latest: u64,
}

impl EventTime {
    /// Set `ev.at_ms` and return it (`None` before the session's first timed event).
    pub fn stamp(&mut self, ev: &mut InputEvent) -> Option<u64> {
        // One lookup: the session's clock moves in place; a session's first time is inserted.
        let t = match self.last.get_mut(&ev.session) {
            Some(last) => {
                *last = ev.at_ms.map_or(*last, |t| t.max(*last));
                Some(*last)
            }
            None => {
                if let Some(t) = ev.at_ms {
                    self.last.insert(&ev.session, t);
                }
                ev.at_ms
            }
        };
        ev.at_ms = t;
        if let Some(t) = t {
            self.latest = self.latest.max(t);
        }
        t
    }

    /// Forget a session whose run ended (its next run starts from its own times again).
    pub fn forget(&mut self, session: &str) {
        self.last.remove(session);
    }

    /// The latest event time seen.
    pub fn latest(&self) -> u64 {
        self.latest
    }
}

/// Extrapolates event time between events by wall time (live sources and `--realtime`).
#[derive(Debug)]
pub struct Extrapolator {
    last_event: Option<u64>,
    seen_at: Instant,
}

impl Default for Extrapolator {
    fn default() -> Self {
        Extrapolator { last_event: None, seen_at: Instant::now() }
    }
}

impl Extrapolator {
    /// An event with this time was just handed to the engine.
    pub fn observe(&mut self, event_ms: u64) {
        self.last_event = Some(self.last_event.map_or(event_ms, |l| l.max(event_ms)));
        self.seen_at = Instant::now();
    }

    /// Event time now: the last event's time plus the wall time since; `None` before any event.
    pub fn now(&self) -> Option<u64> {
        let elapsed = u64::try_from(self.seen_at.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_event.map(|t| t.saturating_add(elapsed))
    }
}

/// Sleeps so that recorded events are handed on at their recorded pace (`--realtime`).
#[derive(Debug, Default)]
pub struct Pacer {
    origin: Option<(u64, Instant)>,
}

impl Pacer {
    /// How long to wait before handing on an event recorded at `event_ms`.
    pub fn delay(&mut self, event_ms: u64) -> Duration {
        let (first, start) = *self.origin.get_or_insert((event_ms, Instant::now()));
        let due = Duration::from_millis(event_ms.saturating_sub(first));
        due.saturating_sub(start.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use toolstream_schemas::{Input, SourcePos};

    fn ev(session: &str, at: Option<u64>) -> InputEvent {
        InputEvent { session: Arc::from(session), at_ms: at, pos: SourcePos::default(), kind: Input::TextBoundary }
    }

    #[test]
    fn event_time_fills_gaps_per_session_and_never_goes_back() {
        let mut c = EventTime::default();
        assert_eq!(c.stamp(&mut ev("a", None)), None);
        assert_eq!(c.stamp(&mut ev("a", Some(100))), Some(100));
        assert_eq!(c.stamp(&mut ev("a", None)), Some(100));
        assert_eq!(c.stamp(&mut ev("a", Some(90))), Some(100));
        assert_eq!(c.stamp(&mut ev("b", Some(50))), Some(50));
        assert_eq!(c.stamp(&mut ev("a", Some(120))), Some(120));
        // A session never borrows another's time: untimed until its own first timed event, whose
        // time is then its own even if other sessions are far ahead.
        assert_eq!(c.stamp(&mut ev("c", None)), None);
        assert_eq!(c.stamp(&mut ev("c", Some(10))), Some(10));
        assert_eq!(c.latest(), 120);
    }

    #[test]
    fn extrapolation_starts_at_the_last_event() {
        let mut x = Extrapolator::default();
        assert_eq!(x.now(), None);
        x.observe(1_000);
        let now = x.now().unwrap();
        assert!((1_000..1_000 + 5_000).contains(&now));
    }

    #[test]
    fn pacer_waits_for_recorded_gaps() {
        let mut p = Pacer::default();
        assert_eq!(p.delay(10_000), Duration::ZERO);
        let d = p.delay(10_250);
        assert!(d > Duration::from_millis(200) && d <= Duration::from_millis(250), "{d:?}");
    }
}
