//! The typed messages between the stages of a shard (the bridge queue's are in
//! `crate::bridge::messages`).

use actix::Message;

// --- shard stages ---

/// A batch of items (or output events) handed from one stage of a shard to the next, in order.
/// Batching pays an actor hop per batch, not per event (ARCHITECTURE: Batching). The reply says
/// whether every later stage handled it, and hands the batch's buffer back, emptied: the sender
/// writes its next batch into it instead of into a new allocation of its own.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<T>, StageFailed>")]
pub struct Batch<T: Send + 'static> {
    pub items: Vec<T>,
    /// The reader's number of this batch, if it has one. Every stage passes it on behind the
    /// batch's outputs (even when there are none), and the end of the shard seals what it
    /// collected under it: the seal cannot overtake the outputs it closes, so the next batch can
    /// be on its way before this one is through.
    pub seal: Option<u64>,
}

impl<T: Send + 'static> Batch<T> {
    /// A batch with no number (ticks, tests): its outputs are sealed with the next number.
    pub fn new(items: Vec<T>) -> Self {
        Batch { items, seal: None }
    }
}

/// A later stage of the shard is gone (it panicked): this batch's outputs are lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageFailed;
