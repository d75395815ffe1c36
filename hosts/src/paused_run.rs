//! The one policy for a run paused on its client's tool calls, shared by both front ends
//! (`pi_provider`'s gate, `openai_server`'s live runs). While the client runs its tools, what the
//! Cursor run goes on producing waits, in order, in a [`Waiting`] queue bounded by
//! [`WAITING_LIMIT_BYTES`]. Past the limit the run is **held back**, never dropped nor stopped: the
//! front end's sink waits for room, and behind it the engine's bounded queues and in the end the
//! reading of the source (a recording is not read further, `cursor-agent` blocks writing to its
//! stdout pipe). An empty queue takes any one item, however large, so a run never stalls on one.
//! How long a paused run may wait for its client is each front end's own rule (pi waits as long
//! as pi runs; the OpenAI server stops a run whose client did not come back in time).

use std::collections::VecDeque;

/// How much (by the front end's measure of what an item holds) may wait for the client's tool
/// results before the run is held back: 1 MiB, a few hundred typical messages; the engine's own
/// queues in front of it are bounded by batch counts.
pub const WAITING_LIMIT_BYTES: usize = 1 << 20;

/// The items waiting for the client, each with the bytes it holds; their sum, and its peak.
#[derive(Debug)]
pub struct Waiting<T> {
    queue: VecDeque<(T, usize)>,
    held: usize,
    peak: usize,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Waiting { queue: VecDeque::new(), held: 0, peak: 0 }
    }
}

impl<T> Waiting<T> {
    /// Whether an item holding `bytes` may be queued now (always, into an empty queue).
    pub fn has_room(&self, bytes: usize) -> bool {
        self.queue.is_empty() || self.held + bytes <= WAITING_LIMIT_BYTES
    }

    /// Whether what waits is past the limit (the run must be held back until it drains).
    pub fn is_full(&self) -> bool {
        self.held > WAITING_LIMIT_BYTES
    }

    pub fn push(&mut self, item: T, bytes: usize) {
        self.held += bytes;
        self.peak = self.peak.max(self.held);
        self.queue.push_back((item, bytes));
    }

    pub fn pop(&mut self) -> Option<T> {
        let (item, bytes) = self.queue.pop_front()?;
        self.held -= bytes;
        Some(item)
    }

    /// Everything that waited, in order; the queue is empty after.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.held = 0;
        self.queue.drain(..).map(|(item, _)| item)
    }

    pub fn clear(&mut self) {
        self.queue.clear();
        self.held = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// What waits now, and the most that ever waited (bytes).
    pub fn held(&self) -> (usize, usize) {
        (self.held, self.peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_bytes_but_an_empty_queue_takes_anything() {
        let mut w = Waiting::default();
        assert!(w.has_room(4 * WAITING_LIMIT_BYTES), "empty: any one item");
        w.push("big", 4 * WAITING_LIMIT_BYTES);
        assert!(w.is_full());
        assert!(!w.has_room(1));
        assert_eq!(w.pop(), Some("big"));
        assert!(!w.is_full() && w.is_empty());
        w.push("a", WAITING_LIMIT_BYTES / 2);
        assert!(w.has_room(WAITING_LIMIT_BYTES / 2));
        assert!(!w.has_room(WAITING_LIMIT_BYTES / 2 + 1));
        w.push("b", WAITING_LIMIT_BYTES / 2);
        assert!(!w.is_full(), "at the limit, not past it");
        assert_eq!(w.drain().collect::<Vec<_>>(), vec!["a", "b"], "in order");
        assert_eq!(w.held(), (0, 4 * WAITING_LIMIT_BYTES));
    }
}
