//! The usage stage's open runs, found by the `Arc<RunId>` their events carry: by its address,
//! so an event finds its run without hashing the run's id (the run stage makes one `Arc` per
//! run, and every event of the run carries it); by the id itself once per run.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use toolstream_schemas::RunId;

/// Each open run's state, by run.
#[derive(Debug)]
pub(super) struct OpenRuns<T> {
    /// By the address of the `Arc<RunId>` the run is kept under.
    by_addr: HashMap<usize, T>,
    /// The address each open run is kept under, by id: this key is the `Arc` of that address
    /// (held here, the address cannot be reused while the run is open). An event that carries
    /// another `Arc` of an open run's id finds its run through it.
    addr_of: HashMap<Arc<RunId>, usize>,
}

impl<T> Default for OpenRuns<T> {
    fn default() -> Self {
        OpenRuns { by_addr: HashMap::default(), addr_of: HashMap::default() }
    }
}

impl<T: Default> OpenRuns<T> {
    /// The state of `run`, a new one if it has none.
    pub(super) fn get(&mut self, run: &Arc<RunId>) -> &mut T {
        let mut addr = address(run);
        if !self.by_addr.contains_key(&addr) {
            addr = *self.addr_of.entry(run.clone()).or_insert(addr);
        }
        self.by_addr.entry(addr).or_default()
    }

    /// Forget `run` (it closed).
    pub(super) fn remove(&mut self, run: &Arc<RunId>) {
        if let Some(addr) = self.addr_of.remove(run) {
            self.by_addr.remove(&addr);
        }
    }
}

fn address(run: &Arc<RunId>) -> usize {
    Arc::as_ptr(run) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(session: &str, seq: u32) -> Arc<RunId> {
        Arc::new(RunId { session: Arc::from(session), seq })
    }

    #[test]
    fn a_run_is_found_by_its_arc_and_by_another_arc_of_its_id() {
        let mut runs = OpenRuns::<u32>::default();
        let a = id("s", 1);
        *runs.get(&a) = 7;
        assert_eq!(*runs.get(&a), 7);
        assert_eq!(*runs.get(&id("s", 1)), 7, "another Arc of the same id");
        assert_eq!(*runs.get(&id("s", 2)), 0, "another run");
        assert_eq!(*runs.get(&id("t", 1)), 0, "another session");
    }

    #[test]
    fn a_removed_run_starts_over_whichever_arc_comes_next() {
        let mut runs = OpenRuns::<u32>::default();
        let a = id("s", 1);
        *runs.get(&a) = 7;
        runs.remove(&id("s", 1));
        assert_eq!(*runs.get(&a), 0);
        *runs.get(&a) = 8;
        drop(a);
        // The first Arc is gone; a new one of the same id still finds the run.
        assert_eq!(*runs.get(&id("s", 1)), 8);
        runs.remove(&id("s", 1));
        assert!(runs.by_addr.is_empty() && runs.addr_of.is_empty());
    }
}
