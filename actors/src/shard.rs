//! One shard's stages composed without a runtime: intake → shell delta → lifecycle → run → usage. The
//! actix actors run exactly these cores, one per actor; this composition serves the
//! single-threaded path and the property tests.

use toolstream_schemas::OutputEvent;

use crate::intake::IntakeCore;
use crate::item::Item;
use crate::lifecycle::{LifecycleCore, DEFAULT_DEFER_MS};
use crate::present::scrub::Scrubber;
use crate::run::{
    Coordinator, CoordinatorConfig, DEFAULT_BATCH_SETTLE_MS, DEFAULT_USAGE_POLL_MS, DEFAULT_USAGE_WAIT_MS,
};
use crate::shell::ShellCore;
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
        })
    }

    pub fn usage(&self) -> UsageCore {
        UsageCore::new(self.usage)
    }
}

/// The stage cores of one shard, chained.
#[derive(Debug)]
pub struct ShardCore {
    intake: IntakeCore,
    after_intake: Vec<Item>,
    shell: ShellCore,
    lifecycle: LifecycleCore,
    run: Coordinator,
    usage: UsageCore,
    after_shell: Vec<Item>,
    after_lifecycle: Vec<Item>,
    after_run: Vec<OutputEvent>,
}

impl Default for ShardCore {
    fn default() -> Self {
        ShardCore::new(&ShardConfig::default())
    }
}

impl ShardCore {
    pub fn new(cfg: &ShardConfig) -> Self {
        ShardCore {
            intake: IntakeCore::default(),
            after_intake: Vec::new(),
            shell: cfg.shell(),
            lifecycle: cfg.lifecycle(),
            run: cfg.run(),
            usage: cfg.usage(),
            after_shell: Vec::new(),
            after_lifecycle: Vec::new(),
            after_run: Vec::new(),
        }
    }

    /// Runs closed so far.
    pub fn runs_closed(&self) -> u64 {
        self.run.runs_closed()
    }

    /// Runs open now.
    pub fn runs_open(&self) -> usize {
        self.run.runs_open()
    }

    /// The earliest pending timer of any stage.
    pub fn next_due(&self) -> Option<u64> {
        [self.lifecycle.next_due(), self.run.next_due()].into_iter().flatten().min()
    }

    /// Push one item through every stage, appending the outputs to `out`.
    pub fn push(&mut self, item: Item, out: &mut Vec<OutputEvent>) {
        self.intake.push(item, &mut self.after_intake);
        for i in self.after_intake.drain(..) {
            self.shell.push(i, &mut self.after_shell);
        }
        for i in self.after_shell.drain(..) {
            self.lifecycle.push(i, &mut self.after_lifecycle);
        }
        for i in self.after_lifecycle.drain(..) {
            self.run.push(i, &mut self.after_run);
        }
        for e in self.after_run.drain(..) {
            self.usage.push(e, out);
        }
    }
}
