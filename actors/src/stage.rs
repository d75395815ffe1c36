//! The shard's stage actors: each a thin actix actor around one pure core, taking batches of
//! inputs, running them through the core in order, and handing the outputs to the next stage.
//! A batch's handler completes only once every later stage has handled its outputs, so the shard
//! door sees end-to-end backpressure and per-run order is preserved.

use actix::prelude::*;
use toolstream_schemas::OutputEvent;

use crate::intake::IntakeCore;
use crate::item::Item;
use crate::lifecycle::LifecycleCore;
use crate::messages::{Batch, StageFailed};
use crate::run::Coordinator;
use crate::shell::ShellCore;
use crate::usage::UsageCore;

/// A pure core that turns inputs into outputs, in order.
pub trait Stage: Unpin + 'static {
    type In: Send + 'static;
    type Out: Send + 'static;
    fn push(&mut self, input: Self::In, out: &mut Vec<Self::Out>);
}

impl Stage for IntakeCore {
    type In = Item;
    type Out = Item;
    fn push(&mut self, input: Item, out: &mut Vec<Item>) {
        IntakeCore::push(self, input, out)
    }
}

impl Stage for ShellCore {
    type In = Item;
    type Out = Item;
    fn push(&mut self, input: Item, out: &mut Vec<Item>) {
        ShellCore::push(self, input, out)
    }
}

impl Stage for LifecycleCore {
    type In = Item;
    type Out = Item;
    fn push(&mut self, input: Item, out: &mut Vec<Item>) {
        LifecycleCore::push(self, input, out)
    }
}

impl Stage for Coordinator {
    type In = Item;
    type Out = OutputEvent;
    fn push(&mut self, input: Item, out: &mut Vec<OutputEvent>) {
        Coordinator::push(self, input, out)
    }
}

impl Stage for UsageCore {
    type In = OutputEvent;
    type Out = OutputEvent;
    fn push(&mut self, input: OutputEvent, out: &mut Vec<OutputEvent>) {
        UsageCore::push(self, input, out)
    }
}

/// An actor owning one stage core and the address of the next stage.
pub struct StageActor<S: Stage> {
    core: S,
    next: Recipient<Batch<S::Out>>,
}

impl<S: Stage> StageActor<S> {
    pub fn new(core: S, next: Recipient<Batch<S::Out>>) -> Self {
        StageActor { core, next }
    }
}

impl<S: Stage> Actor for StageActor<S> {
    type Context = Context<Self>;
}

impl<S: Stage> Handler<Batch<S::In>> for StageActor<S> {
    type Result = ResponseFuture<Result<(), StageFailed>>;

    fn handle(&mut self, batch: Batch<S::In>, _: &mut Context<Self>) -> Self::Result {
        let mut out = Vec::with_capacity(batch.0.len());
        for input in batch.0 {
            self.core.push(input, &mut out);
        }
        let next = self.next.clone();
        Box::pin(async move {
            if out.is_empty() {
                return Ok(());
            }
            // The next stage lives on the same System: an error means it is gone.
            next.send(Batch(out)).await.unwrap_or(Err(StageFailed))
        })
    }
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

/// Start the stages of a shard on the current actix System, wired in order (intake → shell
/// delta → lifecycle → run → usage), delivering to `sink`. Returns the address of the first stage.
/// Must be called from within a running System.
pub fn start_shard(cfg: &crate::shard::ShardConfig, sink: Recipient<Batch<OutputEvent>>) -> Addr<IntakeActor> {
    let usage = UsageActor::new(cfg.usage(), sink).start();
    let run = RunActor::new(cfg.run(), usage.recipient()).start();
    let lifecycle = LifecycleActor::new(cfg.lifecycle(), run.recipient()).start();
    let shell = ShellDeltaActor::new(cfg.shell(), lifecycle.recipient()).start();
    IntakeActor::new(IntakeCore::default(), shell.recipient()).start()
}

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
        type Result = Result<(), StageFailed>;
        fn handle(&mut self, batch: Batch<u32>, _: &mut Context<Self>) -> Self::Result {
            self.0.fetch_add(batch.0.len(), Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn a_batch_is_done_when_every_stage_handled_it_and_a_failed_stage_is_reported() {
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = seen.clone();
        actix::System::new().block_on(async move {
            let end = Count(counted).start();
            let fragile = StageActor::new(Fragile, end.recipient()).start();
            let first = StageActor::new(Pass, fragile.recipient()).start();
            assert_eq!(first.send(Batch(vec![1, 2, 3])).await.unwrap(), Ok(()));
            // Handled by every stage before the reply: no waiting needed.
            assert_eq!(seen.load(Ordering::SeqCst), 3);
            // The middle stage panics: the first stage's reply says so.
            let failed = first.send(Batch(vec![13])).await;
            assert!(matches!(failed, Ok(Err(StageFailed)) | Err(_)), "{failed:?}");
            assert_eq!(first.send(Batch(vec![4])).await.unwrap(), Err(StageFailed));
        });
    }
}
