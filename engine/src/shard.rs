//! Shards: one actix System per OS thread running the stage actors, behind a bounded
//! crossbeam channel (the shard's door). A pump thread takes batches from the door and awaits
//! each batch's passage through every stage, so a fast reader is held back by a slow shard.
//! Outputs go to the fan-out, which hands each batch to every sink's own bounded queue.

use std::sync::Arc;
use std::thread::JoinHandle;

use actix::prelude::*;
use crossbeam_channel::{bounded, Receiver, Sender};
use toolstream_actors::item::Item;
use toolstream_actors::messages::Batch;
use toolstream_actors::shard::ShardConfig;
use toolstream_actors::stage::start_shard;
use toolstream_schemas::OutputEvent;

use crate::sinks::SinkMsg;

/// Batches waiting at a shard's door before the reader blocks.
const DOOR_CAPACITY: usize = 8;

/// What a shard's door takes.
pub enum DoorMsg {
    Items(Vec<Item>),
    /// Reply once everything sent before has passed every stage.
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

/// The fan-out at the end of every shard: each sink's queue gets every batch.
pub struct Fanout {
    queues: Vec<Sender<SinkMsg>>,
}

impl Fanout {
    pub fn new(queues: Vec<Sender<SinkMsg>>) -> Self {
        Fanout { queues }
    }
}

impl Actor for Fanout {
    type Context = Context<Self>;
}

impl Handler<Batch<OutputEvent>> for Fanout {
    type Result = ();

    fn handle(&mut self, batch: Batch<OutputEvent>, _: &mut Context<Self>) {
        let shared = Arc::new(batch.0);
        for q in &self.queues {
            // Blocking is the backpressure policy (`when_full = block`): a slow sink holds the
            // shard. A sink that stopped has dropped its queue; that is not an error here.
            let _ = q.send(SinkMsg::Events(shared.clone()));
        }
    }
}

/// A running shard.
pub struct Shard {
    door: Option<Sender<DoorMsg>>,
    actix: Option<JoinHandle<()>>,
    pump: Option<JoinHandle<()>>,
}

impl Shard {
    /// Start shard `index`: its System thread, its four stages and its pump.
    pub fn start(index: usize, cfg: ShardConfig, sink_queues: Vec<Sender<SinkMsg>>) -> std::io::Result<Shard> {
        let (door_tx, door_rx) = bounded::<DoorMsg>(DOOR_CAPACITY);
        let (addr_tx, addr_rx) = bounded(1);
        let actix = std::thread::Builder::new().name(format!("toolstream-shard-{index}")).spawn(move || {
            let sys = System::new();
            let addr = sys.block_on(async move {
                let fanout = Fanout::new(sink_queues).start();
                start_shard(&cfg, fanout.recipient())
            });
            let _ = addr_tx.send((addr, System::current()));
            let _ = sys.run();
        })?;
        let (first, system) =
            addr_rx.recv().map_err(|_| std::io::Error::other(format!("shard {index} failed to start")))?;
        let pump = std::thread::Builder::new()
            .name(format!("toolstream-pump-{index}"))
            .spawn(move || pump(door_rx, first, system))?;
        Ok(Shard { door: Some(door_tx), actix: Some(actix), pump: Some(pump) })
    }

    /// Send a batch of items (blocks while the door is full).
    pub fn send(&self, items: Vec<Item>) {
        if let Some(door) = &self.door {
            let _ = door.send(DoorMsg::Items(items));
        }
    }

    /// Wait until everything sent so far has passed every stage and reached the sink queues.
    pub fn sync(&self) {
        let (tx, rx) = bounded(1);
        if let Some(door) = &self.door {
            if door.send(DoorMsg::Sync(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
    }

    /// A handle that can send to this shard from another thread (Ctrl-C).
    pub fn door(&self) -> Option<Sender<DoorMsg>> {
        self.door.clone()
    }

    /// Let the shard drain, stop its System and wait for its threads.
    pub fn stop(mut self) {
        if let Some(door) = self.door.take() {
            let _ = door.send(DoorMsg::Stop);
        }
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
        if let Some(a) = self.actix.take() {
            let _ = a.join();
        }
    }
}

fn pump(door: Receiver<DoorMsg>, first: Addr<toolstream_actors::stage::IntakeActor>, system: System) {
    for msg in door {
        match msg {
            DoorMsg::Items(items) => {
                // Resolves once the batch has passed every stage (see `stage::StageActor`).
                let _ = futures::executor::block_on(first.send(Batch(items)));
            }
            DoorMsg::Sync(reply) => {
                let _ = reply.send(());
            }
            DoorMsg::Stop => break,
        }
    }
    system.stop();
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
