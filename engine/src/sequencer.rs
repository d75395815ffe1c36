//! The sequencer between the shards and the sinks. The reader numbers every batch it hands to
//! the shards, and every shard gets every number (possibly with nothing in it). Each shard seals
//! the outputs of a number when it has processed it; the sequencer releases a number's outputs
//! to the sinks only once every shard has sealed it, in shard order. What the sinks see is then a
//! function of the input (and of the shard count and batch size) alone, whatever the threads did:
//! a replay is byte-identical on every run (SPEC §2). Each run's own output is the same on any
//! number of shards; how different sessions' outputs interleave depends on the shard count.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use toolstream_schemas::OutputEvent;

use crate::sinks::SinkSet;

/// Sealed batches waiting in the sequencer's queue before shards block.
const QUEUE_CAPACITY: usize = 16;

/// What the sequencer receives.
pub enum SeqMsg {
    /// Shard `shard` finished batch `seq`; these are its outputs.
    Sealed {
        seq: u64,
        shard: usize,
        events: Vec<OutputEvent>,
    },
    /// Reply once everything received before was handed to the sinks.
    Sync(Sender<()>),
    Stop,
}

/// A running sequencer.
pub struct Sequencer {
    queue: Sender<SeqMsg>,
    handle: Option<JoinHandle<()>>,
}

impl Sequencer {
    /// Start a sequencer for `shards` shards delivering to `sinks`.
    pub fn start(shards: usize, sinks: Arc<SinkSet>) -> std::io::Result<Sequencer> {
        let (tx, rx) = bounded(QUEUE_CAPACITY);
        let handle = std::thread::Builder::new()
            .name("toolstream-sequencer".into())
            .spawn(move || run(&rx, shards.max(1), &sinks))?;
        Ok(Sequencer { queue: tx, handle: Some(handle) })
    }

    pub fn queue(&self) -> Sender<SeqMsg> {
        self.queue.clone()
    }

    /// Wait until everything sealed so far reached the sink queues.
    pub fn sync(&self) {
        sync(&self.queue);
    }

    /// Release what is complete, then stop.
    pub fn stop(mut self) {
        let _ = self.queue.send(SeqMsg::Stop);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Wait until everything sealed before reached the sink queues (usable from any thread).
pub fn sync(queue: &Sender<SeqMsg>) {
    let (tx, rx) = bounded(1);
    if queue.send(SeqMsg::Sync(tx)).is_ok() {
        let _ = rx.recv();
    }
}

/// Pending parts of a number not yet released.
struct Pending {
    parts: Vec<Option<Vec<OutputEvent>>>,
    missing: usize,
}

fn run(rx: &Receiver<SeqMsg>, shards: usize, sinks: &SinkSet) {
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut next: Option<u64> = None;
    for msg in rx {
        match msg {
            SeqMsg::Sealed { seq, shard, events } => {
                let p = pending
                    .entry(seq)
                    .or_insert_with(|| Pending { parts: (0..shards).map(|_| None).collect(), missing: shards });
                if let Some(slot) = p.parts.get_mut(shard) {
                    if slot.is_none() {
                        p.missing -= 1;
                    }
                    *slot = Some(events);
                }
                release(&mut pending, &mut next, sinks);
            }
            SeqMsg::Sync(reply) => {
                let _ = reply.send(());
            }
            SeqMsg::Stop => break,
        }
    }
    // Anything left (a shard that stopped early): released in order, so nothing is lost.
    for (_, p) in std::mem::take(&mut pending) {
        deliver(p.parts, sinks);
    }
}

/// Release every complete number, in order, starting from the lowest one not yet released.
fn release(pending: &mut BTreeMap<u64, Pending>, next: &mut Option<u64>, sinks: &SinkSet) {
    loop {
        let Some((&seq, p)) = pending.iter().next() else { return };
        // Numbers are dense from the first one seen: wait for a lower one still missing.
        if next.is_some_and(|n| seq != n) || p.missing > 0 {
            return;
        }
        let Some(p) = pending.remove(&seq) else { return };
        *next = Some(seq + 1);
        deliver(p.parts, sinks);
    }
}

/// Hand a number's parts to every sink, in shard order (each part as it is: no copying into one),
/// each sink under its own `when_full` policy.
fn deliver(parts: Vec<Option<Vec<OutputEvent>>>, sinks: &SinkSet) {
    for events in parts.into_iter().flatten() {
        sinks.deliver(events);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sinks::{SinkMsg, SinkPort, WhenFull};
    use toolstream_schemas::{Output, RunId};

    fn ev(tag: u64) -> OutputEvent {
        OutputEvent {
            run: Arc::new(RunId { session: Arc::from("s"), seq: 1 }),
            at_ms: tag,
            kind: Output::MessageStarted { turn: 0 },
        }
    }

    #[test]
    fn releases_in_number_then_shard_order_whatever_the_arrival_order() {
        let (sink_tx, sink_rx) = bounded(64);
        let port =
            SinkPort { label: "test".into(), when_full: WhenFull::Block, queue: sink_tx, counters: Arc::default() };
        let s = Sequencer::start(2, Arc::new(SinkSet::new(vec![port], Duration::from_secs(1)))).unwrap();
        let q = s.queue();
        q.send(SeqMsg::Sealed { seq: 1, shard: 1, events: vec![ev(11)] }).unwrap();
        q.send(SeqMsg::Sealed { seq: 2, shard: 0, events: vec![ev(20)] }).unwrap();
        q.send(SeqMsg::Sealed { seq: 1, shard: 0, events: vec![ev(10)] }).unwrap();
        q.send(SeqMsg::Sealed { seq: 2, shard: 1, events: vec![] }).unwrap();
        s.sync();
        s.stop();
        let got: Vec<u64> = sink_rx
            .try_iter()
            .flat_map(|m| match m {
                SinkMsg::Events(b) => b.iter().map(|e| e.at_ms).collect::<Vec<_>>(),
                _ => vec![],
            })
            .collect();
        assert_eq!(got, vec![10, 11, 20]);
    }
}
