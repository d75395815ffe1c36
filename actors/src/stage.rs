//! The shard's stage actors: each a thin actix actor around one pure core, taking batches of
//! inputs, running them through the core in order, and handing the outputs to the next stage.
//! A batch's handler completes only once every later stage has handled its outputs, so the shard
//! door sees end-to-end backpressure and per-run order is preserved. A chain of stages ([`Then`])
//! is defined once and either pushed through directly or started as actors ([`Chain`]).

use actix::prelude::*;
use toolstream_schemas::OutputEvent;

use crate::intake::IntakeCore;
use crate::item::{Item, RunOutput};
use crate::lifecycle::LifecycleCore;
use crate::messages::{Batch, StageFailed};
use crate::run::Coordinator;
use crate::shell::ShellCore;
use crate::usage::UsageCore;

/// A pure core that turns inputs into outputs, in order.
pub trait Stage: Unpin + 'static {
    type In: Send + Unpin + 'static;
    type Out: Send + Unpin + 'static;
    fn push(&mut self, input: Self::In, out: &mut Vec<Self::Out>);
}

/// A stage, or stages composed with [`Then`], that can also run as actors: one [`StageActor`] per
/// stage, each delivering to the next. The same value is either pushed through directly (tests,
/// benches) or started — so both paths run one definition of the chain.
pub trait Chain: Stage {
    /// Start one actor per stage on the current System, the last delivering to `sink`; returns
    /// the first stage's recipient. Must be called from within a running System.
    fn start(self, sink: Recipient<Batch<Self::Out>>) -> Recipient<Batch<Self::In>>;
}

/// Two stages in order: what `first` outputs, `second` takes.
#[derive(Debug)]
pub struct Then<A: Stage, B> {
    pub first: A,
    pub second: B,
    between: Vec<A::Out>,
}

impl<A: Stage, B: Stage<In = A::Out>> Then<A, B> {
    pub fn new(first: A, second: B) -> Self {
        Then { first, second, between: Vec::new() }
    }
}

impl<A: Stage, B: Stage<In = A::Out>> Stage for Then<A, B> {
    type In = A::In;
    type Out = B::Out;
    fn push(&mut self, input: A::In, out: &mut Vec<B::Out>) {
        self.first.push(input, &mut self.between);
        for x in self.between.drain(..) {
            self.second.push(x, out);
        }
    }
}

impl<A: Chain, B: Chain<In = A::Out>> Chain for Then<A, B> {
    fn start(self, sink: Recipient<Batch<B::Out>>) -> Recipient<Batch<A::In>> {
        let next = self.second.start(sink);
        self.first.start(next)
    }
}

/// `Stage` and `Chain` for one core: its `push` and one actor of its own.
macro_rules! core_stage {
    ($core:ty, $in:ty => $out:ty) => {
        impl Stage for $core {
            type In = $in;
            type Out = $out;
            fn push(&mut self, input: $in, out: &mut Vec<$out>) {
                <$core>::push(self, input, out)
            }
        }

        impl Chain for $core {
            fn start(self, sink: Recipient<Batch<$out>>) -> Recipient<Batch<$in>> {
                StageActor::new(self, sink).start().recipient()
            }
        }
    };
}

core_stage!(IntakeCore, Item => Item);
core_stage!(ShellCore, Item => Item);
core_stage!(LifecycleCore, Item => Item);
core_stage!(Coordinator, Item => RunOutput);
core_stage!(UsageCore, RunOutput => OutputEvent);

/// An actor owning one stage core and the address of the next stage.
pub struct StageActor<S: Stage> {
    core: S,
    next: Recipient<Batch<S::Out>>,
    /// The last batch's size and how many outputs it made: the next batch's buffer is sized from
    /// that ratio ([`out_capacity`]), so a stage that emits more than it takes (the run stage
    /// opens messages and blocks around the text) does not grow and copy it on every batch.
    last: (usize, usize),
    /// The buffer the next stage handed back with its reply to the last batch, emptied: the
    /// next batch's outputs go there. Writing into the same memory batch after batch keeps it
    /// in cache; a new buffer each time was written cold.
    spare: Vec<S::Out>,
}

impl<S: Stage> StageActor<S> {
    pub fn new(core: S, next: Recipient<Batch<S::Out>>) -> Self {
        StageActor { core, next, last: (0, 0), spare: Vec::new() }
    }
}

impl<S: Stage> Actor for StageActor<S> {
    type Context = Context<Self>;
}

impl<S: Stage> Handler<Batch<S::In>> for StageActor<S> {
    type Result = ResponseActFuture<Self, Result<Vec<S::In>, StageFailed>>;

    fn handle(&mut self, batch: Batch<S::In>, _: &mut Context<Self>) -> Self::Result {
        let Batch { items: mut inputs, seal } = batch;
        let taken = inputs.len();
        let mut out = std::mem::take(&mut self.spare);
        out.reserve(out_capacity(taken, self.last));
        for input in inputs.drain(..) {
            self.core.push(input, &mut out);
        }
        self.last = (taken, out.len());
        if out.is_empty() && seal.is_none() {
            self.spare = out;
            return Box::pin(fut::ready(Ok(inputs)));
        }
        // Sent here, not when the reply's future is first polled: with the next batch already on
        // its way, the next stage must get the batches in the order they came, and the futures
        // an actor spawns are polled in no set order. The next stage lives on the same System:
        // an error means it is gone.
        let sent = self.next.send(Batch { items: out, seal });
        let reply = async move { sent.await.unwrap_or(Err(StageFailed)) };
        Box::pin(fut::wrap_future::<_, Self>(reply).map(move |reply, act, _| {
            reply.map(|spare| {
                act.spare = spare;
                inputs
            })
        }))
    }
}

/// A stage's outputs can outnumber its inputs this many times over before its next buffer stops
/// following suit: a run's end (one input, a few dozen outputs) must not size the next batch.
const MAX_OUT_PER_IN: usize = 4;

/// The buffer for the outputs of `taken` inputs, sized by how many outputs per input the `last`
/// batch (inputs, outputs) made, at most [`MAX_OUT_PER_IN`] each, with an eighth more to spare: a
/// batch that makes a few more outputs than the last (a lifecycle line, a usage diagnostic) would
/// otherwise grow the buffer, copying every output already in it.
fn out_capacity(taken: usize, (last_in, last_out): (usize, usize)) -> usize {
    let per_batch = taken.saturating_mul(last_out) / last_in.max(1);
    let expected = per_batch.clamp(taken, taken.saturating_mul(MAX_OUT_PER_IN));
    expected.saturating_add(expected / 8)
}

/// Call matching and dedupe (SPEC §5.2): the shard's first stage.
pub type IntakeActor = StageActor<IntakeCore>;
/// Shell output attribution (SPEC §6b).
pub type ShellDeltaActor = StageActor<ShellCore>;
/// Lifecycle lines (SPEC §6).
pub type LifecycleActor = StageActor<LifecycleCore>;
/// Run coordination (SPEC §5).
pub type RunActor = StageActor<Coordinator>;
/// Usage accounting (SPEC §6c).
pub type UsageActor = StageActor<UsageCore>;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// Passes numbers on; panics on 13.
    struct Fragile;
    impl Stage for Fragile {
        type In = u32;
        type Out = u32;
        fn push(&mut self, input: u32, out: &mut Vec<u32>) {
            assert_ne!(input, 13, "unlucky");
            out.push(input);
        }
    }

    struct Pass;
    impl Stage for Pass {
        type In = u32;
        type Out = u32;
        fn push(&mut self, input: u32, out: &mut Vec<u32>) {
            out.push(input);
        }
    }

    struct Count(Arc<AtomicUsize>);
    impl Actor for Count {
        type Context = Context<Self>;
    }
    impl Handler<Batch<u32>> for Count {
        type Result = Result<Vec<u32>, StageFailed>;
        fn handle(&mut self, mut batch: Batch<u32>, _: &mut Context<Self>) -> Self::Result {
            self.0.fetch_add(batch.items.len(), Ordering::SeqCst);
            batch.items.clear();
            Ok(batch.items)
        }
    }

    #[test]
    fn an_output_buffer_follows_the_last_ratio_within_bounds() {
        // The first batch, and a stage that emits one per input: as many as it takes, and an
        // eighth more.
        assert_eq!(out_capacity(1024, (0, 0)), 1152);
        assert_eq!(out_capacity(1024, (512, 512)), 1152);
        // Half again as many outputs as inputs last time: room for that now.
        assert_eq!(out_capacity(1000, (200, 300)), 1687);
        // A stage that dropped most inputs still gets room for one each.
        assert_eq!(out_capacity(100, (100, 3)), 112);
        // One input that made a thousand outputs does not size the next batch a thousand times.
        assert_eq!(out_capacity(1024, (1, 1000)), 4608);
        assert_eq!(out_capacity(0, (1, 1000)), 0);
    }

    #[test]
    fn a_batch_is_done_when_every_stage_handled_it_and_a_failed_stage_is_reported() {
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = seen.clone();
        actix::System::new().block_on(async move {
            let end = Count(counted).start();
            let fragile = StageActor::new(Fragile, end.recipient()).start();
            let first = StageActor::new(Pass, fragile.recipient()).start();
            assert_eq!(first.send(Batch::new(vec![1, 2, 3])).await.unwrap(), Ok(Vec::new()));
            // Handled by every stage before the reply: no waiting needed.
            assert_eq!(seen.load(Ordering::SeqCst), 3);
            // The middle stage panics: the first stage's reply says so.
            let failed = first.send(Batch::new(vec![13])).await;
            assert!(matches!(failed, Ok(Err(StageFailed)) | Err(_)), "{failed:?}");
            assert_eq!(first.send(Batch::new(vec![4])).await.unwrap(), Err(StageFailed));
        });
    }

    /// Keeps even numbers only.
    struct Evens;
    impl Stage for Evens {
        type In = u32;
        type Out = u32;
        fn push(&mut self, input: u32, out: &mut Vec<u32>) {
            if input.is_multiple_of(2) {
                out.push(input);
            }
        }
    }

    /// What the end of a chain got, in order: numbers, and seals as `1000 + seal`.
    struct Record(Arc<std::sync::Mutex<Vec<u64>>>);
    impl Actor for Record {
        type Context = Context<Self>;
    }
    impl Handler<Batch<u32>> for Record {
        type Result = Result<Vec<u32>, StageFailed>;
        fn handle(&mut self, batch: Batch<u32>, _: &mut Context<Self>) -> Self::Result {
            let mut got = self.0.lock().map_err(|_| StageFailed)?;
            got.extend(batch.items.iter().map(|&n| u64::from(n)));
            got.extend(batch.seal.map(|s| 1000 + s));
            Ok(Vec::new())
        }
    }

    #[test]
    fn batches_sent_back_to_back_reach_the_end_in_order_each_seal_behind_its_outputs() {
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = got.clone();
        actix::System::new().block_on(async move {
            let end = Record(recorded).start();
            let evens = StageActor::new(Evens, end.recipient()).start();
            let first = StageActor::new(Pass, evens.recipient()).start();
            // Every batch is on its way before any is through: as the shard's pump sends them.
            let sent: Vec<_> =
                [(vec![1, 2], Some(1)), (vec![3], Some(2)), (vec![4, 6], None), (vec![5], None), (vec![8], Some(3))]
                    .into_iter()
                    .map(|(items, seal)| first.send(Batch { items, seal }))
                    .collect();
            for reply in sent {
                assert!(reply.await.unwrap().is_ok());
            }
        });
        // The second batch leaves nothing after `Evens`, and its seal still arrives; the
        // unnumbered batches' outputs wait for the next seal.
        assert_eq!(*got.lock().unwrap(), vec![2, 1001, 1002, 4, 6, 8, 1003]);
    }

    /// Records where each batch it gets lives, and hands back a buffer of its own (recorded too).
    struct Addresses(Arc<std::sync::Mutex<Vec<(usize, usize)>>>);
    impl Actor for Addresses {
        type Context = Context<Self>;
    }
    impl Handler<Batch<u32>> for Addresses {
        type Result = Result<Vec<u32>, StageFailed>;
        fn handle(&mut self, batch: Batch<u32>, _: &mut Context<Self>) -> Self::Result {
            let handed: Vec<u32> = Vec::with_capacity(1000);
            let mut seen = self.0.lock().map_err(|_| StageFailed)?;
            seen.push((batch.items.as_ptr() as usize, handed.as_ptr() as usize));
            Ok(handed)
        }
    }

    #[test]
    fn a_stage_writes_each_batch_into_the_buffer_handed_back_with_the_last_reply() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = seen.clone();
        actix::System::new().block_on(async move {
            let end = Addresses(recorded).start();
            let first = StageActor::new(Pass, end.recipient()).start();
            let mut input = Vec::with_capacity(64);
            let input_at = input.as_ptr() as usize;
            input.extend([1, 2, 3]);
            // The reply hands back the batch's own buffer, emptied.
            let back = first.send(Batch::new(input)).await.unwrap().unwrap();
            assert_eq!((back.as_ptr() as usize, back.len(), back.capacity()), (input_at, 0, 64));
            for n in 0..3 {
                first.send(Batch::new(vec![n; 3])).await.unwrap().unwrap();
            }
        });
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 4);
        // Each batch after the first arrives in the buffer handed back with the reply before.
        for pair in seen.windows(2) {
            assert_eq!(pair[1].0, pair[0].1, "{seen:?}");
        }
    }
}
