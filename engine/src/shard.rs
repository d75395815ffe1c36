//! Shards: one actix System per OS thread running the stage actors, behind a bounded crossbeam
//! channel (the shard's door). A pump thread takes batches from the door and sends each on while
//! the one before it is still on its way, then awaits that one's passage through every stage, so
//! a fast reader is held back by a slow shard. A numbered batch's number travels through the
//! stages behind its outputs; at the shard's end the outputs are sealed under it and released:
//! straight to the sinks when the shard is the only one (its numbers come in order), else through
//! the sequencer, which releases every shard's in an order that depends on the input only.

use std::sync::Arc;
use std::thread::JoinHandle;

use actix::prelude::*;
use crossbeam_channel::{bounded, Receiver, Sender};
use toolstream_actors::item::Item;
use toolstream_actors::messages::{Batch, StageFailed};
use toolstream_actors::shard::start_shard;
use toolstream_actors::shard::ShardConfig;
use toolstream_schemas::OutputEvent;

use crate::sequencer::SeqMsg;
use crate::sinks::SinkSet;

/// Batches waiting at a shard's door before the reader blocks. The reader and the shard are
/// about even, each one the slower now and then (their work varies along a stream, and a sink's
/// thread takes a core from either): in a run into the JSONL trace each waits on the other for a
/// third of its own running time, or a little less, a core idle meanwhile (`perf sched`, 200 MB:
/// with two batches here the reader waited 190–248 ms against 486–657 ms running, the shard
/// 164–220 ms against 467–614 ms; with eight, not clearly less: 155–524 and 132–195 ms over
/// three runs). Why more room helps is not explained, but it does, for the stages with a sink,
/// while deeper doors keep decoded batches waiting until they are out of the cache. Measured on
/// the 200 MB bench corpus, 21 alternating runs each, medians against 2: the JSONL trace 0.730 →
/// 0.681 s, a pi session 0.793 → 0.766 s, a null sink the same (0.479 → 0.480 s); with 16, a null
/// sink 0.546 → 0.578 s; 12 against 8, a null sink 0.521 → 0.560 s, the trace the same.
const DOOR_CAPACITY: usize = 8;

/// What a shard's door takes.
pub enum DoorMsg {
    /// Items to process. A numbered batch is sealed once processed: its outputs (and any from
    /// unnumbered ones before it, such as ticks) are released under that number.
    Items { seq: Option<u64>, items: Vec<Item> },
    /// Reply once everything sent before has passed every stage and was sealed.
    Sync(Sender<()>),
    /// Stop after everything sent before (other senders, such as a Ctrl-C handler's, may
    /// still hold the door open).
    Stop,
}

/// Which shard a session belongs to: a stable hash of its id, so a session always lands on the
/// same shard and its events keep their order.
pub fn shard_of(session: &str, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    // FNV-1a: stable across runs and builds (std's hasher makes no such promise).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in session.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % shards as u64) as usize
}

/// Where a shard's sealed outputs go.
#[derive(Clone)]
pub enum Release {
    /// Straight to the sinks, from the shard's thread: the only shard, whose numbers come in
    /// order, needs no sequencer (nor a thread woken for every batch to hand them on).
    Direct(Arc<SinkSet>),
    /// To the sequencer, which waits for every shard to seal a number before releasing it.
    Sequenced(Sender<SeqMsg>),
}

/// The end of every shard: collects the outputs of the batch in hand until it is sealed.
pub struct Fanout {
    shard: usize,
    buffer: Vec<OutputEvent>,
    release: Release,
}

impl Actor for Fanout {
    type Context = Context<Self>;
}

impl Handler<Batch<OutputEvent>> for Fanout {
    type Result = Result<Vec<OutputEvent>, StageFailed>;

    fn handle(&mut self, batch: Batch<OutputEvent>, _: &mut Context<Self>) -> Self::Result {
        let Batch { items: mut events, seal } = batch;
        let handed = if self.buffer.is_empty() {
            // The events go on to the sinks' thread in this buffer: none to hand back.
            self.buffer = events;
            Vec::new()
        } else {
            self.buffer.append(&mut events);
            events
        };
        if let Some(seq) = seal {
            // What was collected since the last seal is this number's. Blocking (on a full
            // `block` sink or the sequencer's queue) is backpressure; a stopped sequencer means
            // the engine is shutting down.
            let events = std::mem::take(&mut self.buffer);
            match &self.release {
                Release::Direct(sinks) => sinks.deliver(events),
                Release::Sequenced(queue) => {
                    let _ = queue.send(SeqMsg::Sealed { seq, shard: self.shard, events });
                }
            }
        }
        Ok(handed)
    }
}

/// A running shard.
pub struct Shard {
    index: usize,
    door: Option<Sender<DoorMsg>>,
    actix: Option<JoinHandle<()>>,
    /// Returns whether every batch passed every stage.
    pump: Option<JoinHandle<bool>>,
}

impl Shard {
    /// Start shard `index`: its System thread, its stages and its pump.
    pub fn start(index: usize, cfg: ShardConfig, release: Release) -> std::io::Result<Shard> {
        let (door_tx, door_rx) = bounded::<DoorMsg>(DOOR_CAPACITY);
        let (addr_tx, addr_rx) = bounded(1);
        let actix = std::thread::Builder::new().name(format!("toolstream-shard-{index}")).spawn(move || {
            let sys = System::new();
            let first = sys.block_on(async move {
                let fanout = Fanout { shard: index, buffer: Vec::new(), release }.start();
                start_shard(&cfg, fanout.recipient())
            });
            let _ = addr_tx.send((first, System::current()));
            let _ = sys.run();
        })?;
        let (first, system) =
            addr_rx.recv().map_err(|_| std::io::Error::other(format!("shard {index} failed to start")))?;
        let pump = std::thread::Builder::new()
            .name(format!("toolstream-pump-{index}"))
            .spawn(move || pump(door_rx, first, system))?;
        Ok(Shard { index, door: Some(door_tx), actix: Some(actix), pump: Some(pump) })
    }

    /// Send a batch of items (blocks while the door is full).
    pub fn send(&self, seq: Option<u64>, items: Vec<Item>) {
        if let Some(door) = &self.door {
            let _ = door.send(DoorMsg::Items { seq, items });
        }
    }

    /// Whether the shard is behind its reader: at least half its door is full. The reader then
    /// has time to spare, and takes on work the shard would otherwise do (reading payloads).
    pub fn is_behind(&self) -> bool {
        self.door.as_ref().is_some_and(|d| d.len() >= DOOR_CAPACITY / 2)
    }

    /// Wait until everything sent so far has passed every stage and was sealed.
    pub fn sync(&self) {
        if let Some(door) = &self.door {
            sync_door(door);
        }
    }

    /// A handle that can send to this shard from another thread (Ctrl-C, ticks).
    pub fn door(&self) -> Option<Sender<DoorMsg>> {
        self.door.clone()
    }

    /// Let the shard drain, stop its System and wait for its threads. An error when a stage
    /// failed (panicked) on the way: the output of this shard's sessions is then incomplete.
    pub fn stop(mut self) -> Result<(), String> {
        if let Some(door) = self.door.take() {
            let _ = door.send(DoorMsg::Stop);
        }
        let pumped = self.pump.take().is_none_or(|p| p.join().unwrap_or(false));
        let ran = self.actix.take().is_none_or(|a| a.join().is_ok());
        if pumped && ran {
            Ok(())
        } else {
            Err(format!("shard {} stopped: a stage failed, so the output of its sessions is incomplete", self.index))
        }
    }
}

/// Wait until everything sent to `door` before was processed and sealed.
pub fn sync_door(door: &Sender<DoorMsg>) {
    let (tx, rx) = bounded(1);
    if door.send(DoorMsg::Sync(tx)).is_ok() {
        let _ = rx.recv();
    }
}

/// Returns whether every batch passed every stage.
fn pump(door: Receiver<DoorMsg>, first: Recipient<Batch<Item>>, system: System) -> bool {
    let mut healthy = true;
    // The batch sent before the one in hand, maybe not yet through every stage. One batch ahead
    // at most: the shard's thread finds the next batch waiting when it is done with one, instead
    // of waiting for this thread to be scheduled; the reader is still held back by a slow shard.
    let mut ahead = None;
    let mut passed = |sent: RecipientRequest<Batch<Item>>| {
        // Resolves once the batch has passed every stage (see `stage::StageActor`) and its
        // seal with it; an error means a stage (or the whole System) is gone: it panicked.
        if !matches!(futures::executor::block_on(sent), Ok(Ok(_))) {
            if healthy {
                tracing::error!("a shard stage failed; its sessions' output is incomplete");
            }
            healthy = false;
        }
    };
    for msg in door {
        match msg {
            DoorMsg::Items { seq, items } => {
                if let Some(before) = ahead.replace(first.send(Batch { items, seal: seq })) {
                    passed(before);
                }
            }
            DoorMsg::Sync(reply) => {
                if let Some(before) = ahead.take() {
                    passed(before);
                }
                let _ = reply.send(());
            }
            DoorMsg::Stop => break,
        }
    }
    if let Some(before) = ahead.take() {
        passed(before);
    }
    system.stop();
    healthy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_map_to_stable_shards() {
        assert_eq!(shard_of("anything", 1), 0);
        let a = shard_of("6a529887-33b0-4628-a164-e76d0b16f85a", 4);
        assert_eq!(a, shard_of("6a529887-33b0-4628-a164-e76d0b16f85a", 4));
        let spread: std::collections::HashSet<usize> = (0..64).map(|i| shard_of(&format!("s{i}"), 4)).collect();
        assert_eq!(spread.len(), 4, "sessions spread over all shards");
    }
}
