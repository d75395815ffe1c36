//! The live runs waiting for a client's tool result, keyed by tool_call_id: a response ended with
//! a call Cursor made through the tool bridge, the run stays alive, and the client's next request
//! with the `role:"tool"` message for that id continues it. Bounded in count (the oldest entry
//! goes first) and in time (an entry older than the wait is expired): what expires or is pushed
//! out is handed back for the server to stop. Pure: time comes in as an argument.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Pending tool calls → the run waiting on each.
#[derive(Debug)]
pub struct Pending<R> {
    entries: HashMap<String, (R, Instant)>,
    limit: usize,
    wait: Duration,
}

impl<R: Clone> Pending<R> {
    /// At most `limit` calls, each kept for `wait`.
    pub fn new(limit: usize, wait: Duration) -> Self {
        Pending { entries: HashMap::new(), limit: limit.max(1), wait }
    }

    /// `run` waits on the calls `ids` from `now`. Returns the runs pushed out to stay within the
    /// limit (the oldest entries).
    pub fn insert(&mut self, ids: &[String], run: &R, now: Instant) -> Vec<R> {
        let mut out = Vec::new();
        for id in ids {
            while self.entries.len() >= self.limit {
                let Some(oldest) = self.entries.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone()) else {
                    break;
                };
                out.extend(self.entries.remove(&oldest).map(|(r, _)| r));
            }
            self.entries.insert(id.clone(), (run.clone(), now));
        }
        out
    }

    /// The run waiting on call `id`, which stops waiting on it.
    pub fn take(&mut self, id: &str) -> Option<R> {
        self.entries.remove(id).map(|(r, _)| r)
    }

    /// Remove the entries older than the wait at `now`; their runs.
    pub fn expire(&mut self, now: Instant) -> Vec<R> {
        let wait = self.wait;
        let old: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, (_, at))| now.saturating_duration_since(*at) >= wait)
            .map(|(k, _)| k.clone())
            .collect();
        old.iter().filter_map(|k| self.entries.remove(k)).map(|(r, _)| r).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_call_continues_its_run_once() {
        let t0 = Instant::now();
        let mut p = Pending::new(4, Duration::from_secs(10));
        assert!(p.insert(&ids(&["a"]), &1, t0).is_empty());
        assert_eq!(p.take("b"), None);
        assert_eq!(p.take("a"), Some(1));
        assert_eq!(p.take("a"), None, "answered once");
        assert!(p.is_empty());
    }

    #[test]
    fn bounded_in_count_the_oldest_goes_first() {
        let t0 = Instant::now();
        let mut p = Pending::new(2, Duration::from_secs(10));
        p.insert(&ids(&["a"]), &1, t0);
        p.insert(&ids(&["b"]), &2, t0 + Duration::from_secs(1));
        assert_eq!(p.insert(&ids(&["c"]), &3, t0 + Duration::from_secs(2)), vec![1]);
        assert_eq!(p.len(), 2);
        assert_eq!(p.take("a"), None);
    }

    #[test]
    fn bounded_in_time() {
        let t0 = Instant::now();
        let mut p = Pending::new(8, Duration::from_secs(10));
        p.insert(&ids(&["a"]), &1, t0);
        p.insert(&ids(&["b"]), &2, t0 + Duration::from_secs(5));
        assert!(p.expire(t0 + Duration::from_secs(9)).is_empty());
        assert_eq!(p.expire(t0 + Duration::from_secs(10)), vec![1]);
        assert_eq!(p.take("b"), Some(2));
    }
}
