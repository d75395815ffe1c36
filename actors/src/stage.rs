//! The shard's stage actors: each a thin actix actor around one pure core, taking batches of
//! inputs, running them through the core in order, and handing the outputs to the next stage.
//! A batch's handler completes only once every later stage has handled its outputs, so the shard
//! door sees end-to-end backpressure and per-run order is preserved.

use actix::prelude::*;
use toolstream_schemas::OutputEvent;

use crate::intake::IntakeCore;
use crate::item::Item;
use crate::lifecycle::LifecycleCore;
use crate::messages::Batch;
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
    type Result = ResponseFuture<()>;

    fn handle(&mut self, batch: Batch<S::In>, _: &mut Context<Self>) -> Self::Result {
        let mut out = Vec::with_capacity(batch.0.len());
        for input in batch.0 {
            self.core.push(input, &mut out);
        }
        let next = self.next.clone();
        Box::pin(async move {
            if !out.is_empty() {
                // The next stage lives on the same System; if it is gone, the shard is stopping.
                let _ = next.send(Batch(out)).await;
            }
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
