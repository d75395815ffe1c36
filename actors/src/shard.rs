//! One shard's stages: their settings, the one definition of their chain (intake → shell delta →
//! lifecycle → run → usage), that chain started as actors, and pushed through without a runtime.

use actix::Recipient;
use toolstream_schemas::OutputEvent;

use crate::intake::IntakeCore;
use crate::item::Item;
use crate::lifecycle::{LifecycleCore, DEFAULT_DEFER_MS};
use crate::messages::Batch;
use crate::present::card::Compaction;
use crate::present::scrub::Scrubber;
use crate::run::{
    Coordinator, CoordinatorConfig, DEFAULT_BATCH_SETTLE_MS, DEFAULT_USAGE_POLL_MS, DEFAULT_USAGE_WAIT_MS,
};
use crate::shell::ShellCore;
use crate::stage::{Chain, Stage, Then};
use crate::usage::{UsageConfig, UsageCore};

/// Settings of every stage of a shard.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub scrubber: Scrubber,
    pub lifecycle_defer_ms: u64,
    pub batch_settle_ms: u64,
    pub usage_wait_ms: u64,
    pub usage_poll_ms: u64,
    pub usage: UsageConfig,
    /// Cards keep the recorded args and result (a Cursor chat database sink needs them).
    pub keep_recorded: bool,
    /// Which shell results are compacted (`--compact`, `--compact-cards`).
    pub compact: Compaction,
}

impl Default for ShardConfig {
    fn default() -> Self {
        ShardConfig {
            scrubber: Scrubber::default(),
            lifecycle_defer_ms: DEFAULT_DEFER_MS,
            batch_settle_ms: DEFAULT_BATCH_SETTLE_MS,
            usage_wait_ms: DEFAULT_USAGE_WAIT_MS,
            usage_poll_ms: DEFAULT_USAGE_POLL_MS,
            usage: UsageConfig::default(),
            keep_recorded: false,
            compact: Compaction::default(),
        }
    }
}

impl ShardConfig {
    pub fn shell(&self) -> ShellCore {
        ShellCore::new(self.scrubber.clone())
    }

    pub fn lifecycle(&self) -> LifecycleCore {
        LifecycleCore::new(self.lifecycle_defer_ms, self.scrubber.clone())
    }

    pub fn run(&self) -> Coordinator {
        Coordinator::new(CoordinatorConfig {
            scrubber: self.scrubber.clone(),
            batch_settle_ms: self.batch_settle_ms,
            usage_wait_ms: self.usage_wait_ms,
            usage_poll_ms: self.usage_poll_ms,
            keep_recorded: self.keep_recorded,
            compact: self.compact,
        })
    }

    pub fn usage(&self) -> UsageCore {
        UsageCore::new(self.usage.clone())
    }
}

/// The stages of one shard, in order: intake → shell delta → lifecycle → run → usage. The one
/// definition of the chain: the binary starts it as actors ([`start_shard`]), tests
/// and benches push through it directly ([`ShardCore`]).
pub type ShardChain = Then<IntakeCore, Then<ShellCore, Then<LifecycleCore, Then<Coordinator, UsageCore>>>>;

/// Build a shard's stages from its settings.
pub fn shard_chain(cfg: &ShardConfig) -> ShardChain {
    Then::new(
        IntakeCore::default(),
        Then::new(cfg.shell(), Then::new(cfg.lifecycle(), Then::new(cfg.run(), cfg.usage()))),
    )
}

/// Start the stages of a shard ([`shard_chain`]) on the current actix System, one actor each,
/// delivering to `sink`. Returns the first stage's recipient. Must be called from within a
/// running System.
pub fn start_shard(cfg: &ShardConfig, sink: Recipient<Batch<OutputEvent>>) -> Recipient<Batch<Item>> {
    shard_chain(cfg).start(sink)
}

/// A shard's stages pushed through without a runtime (the single-threaded path: tests, benches).
#[derive(Debug)]
pub struct ShardCore {
    chain: ShardChain,
}

impl Default for ShardCore {
    fn default() -> Self {
        ShardCore::new(&ShardConfig::default())
    }
}

impl ShardCore {
    pub fn new(cfg: &ShardConfig) -> Self {
        ShardCore { chain: shard_chain(cfg) }
    }

    /// The run stage.
    fn run(&self) -> &Coordinator {
        &self.chain.second.second.second.first
    }

    /// Runs closed so far.
    pub fn runs_closed(&self) -> u64 {
        self.run().runs_closed()
    }

    /// Runs open now.
    pub fn runs_open(&self) -> usize {
        self.run().runs_open()
    }

    /// Push one item through every stage, appending the outputs to `out`.
    pub fn push(&mut self, item: Item, out: &mut Vec<OutputEvent>) {
        self.chain.push(item, out);
    }
}
