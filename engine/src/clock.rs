//! Time (SPEC §2). Every timer in the engine fires by event time. Recorded sources run on the
//! event-time clock alone: a ten-minute recording replays in milliseconds and byte-identically.
//! Live sources add ticks that extrapolate event time by the wall time elapsed since the last
//! event, so a deferred line appears while Cursor is still waiting on a tool. `--realtime`
//! paces a recording by its recorded times and ticks the same way.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Gives every input event its event time: its own `timestamp_ms`/`at_ms` when present, else the
/// time of the previous event of the same session (SPEC §1.1 rule 11); never backwards.
#[derive(Debug, Default)]
pub struct EventTime {
    last: HashMap<Arc<str>, u64>,
    /// The latest event time seen in any session.
    latest: u64,
}

impl EventTime {
    /// Set `ev.at_ms` and return it.
    pub fn stamp(&mut self, ev: &mut InputEvent) -> u64 {
        let last = self.last.get(&ev.session).copied();
        let t = match (ev.at_ms, last) {
            (Some(t), Some(l)) => t.max(l),
            (Some(t), None) => t,
            (None, Some(l)) => l,
            // A session's first event without a time starts where the stream is.
            (None, None) => self.latest,
        };
        ev.at_ms = Some(t);
        if last != Some(t) {
            self.last.insert(ev.session.clone(), t);
        }
        self.latest = self.latest.max(t);
        t
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
    use toolstream_schemas::{Input, SourcePos};

    fn ev(session: &str, at: Option<u64>) -> InputEvent {
        InputEvent { session: Arc::from(session), at_ms: at, pos: SourcePos::default(), kind: Input::TextBoundary }
    }

    #[test]
    fn event_time_fills_gaps_per_session_and_never_goes_back() {
        let mut c = EventTime::default();
        assert_eq!(c.stamp(&mut ev("a", None)), 0);
        assert_eq!(c.stamp(&mut ev("a", Some(100))), 100);
        assert_eq!(c.stamp(&mut ev("a", None)), 100);
        assert_eq!(c.stamp(&mut ev("a", Some(90))), 100);
        assert_eq!(c.stamp(&mut ev("b", Some(50))), 50);
        assert_eq!(c.stamp(&mut ev("a", Some(120))), 120);
        // A new session without a time starts at the latest time seen.
        assert_eq!(c.stamp(&mut ev("c", None)), 120);
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
