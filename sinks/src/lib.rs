//! toolstream-sinks: the [`Sink`] trait and one module per sink. Sinks only lay out output
//! events (SPEC §3, §9); every string they receive was already scrubbed and bounded upstream.

pub mod cards;
pub mod cursor_db;
pub mod jsonl_trace;
pub mod openai;
pub mod otel;
pub mod output_file;
pub mod pi_events;
pub mod pi_session;
pub mod private_dir;

use toolstream_schemas::OutputEvent;

/// Why a sink could not take a batch.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{sink}: {source}")]
    Io {
        sink: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{sink}: {message}")]
    Other { sink: &'static str, message: String },
}

/// Reads what a sink lost so far ([`SinkLoss`]) from any thread, whatever the sink's own thread is
/// doing (still waiting on a collector at exit, say): the engine asks it when it stops waiting.
pub type LossProbe = std::sync::Arc<dyn Fn() -> Option<SinkLoss> + Send + Sync>;

/// What a sink lost after it accepted events: items it could not deliver where it writes (spans
/// a collector never got), for the exit summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkLoss {
    pub count: u64,
    /// What was lost (`spans`).
    pub unit: &'static str,
    /// Why, for people.
    pub why: String,
}

/// A consumer of output events.
pub trait Sink: Send {
    /// A short name for reports (`cards`, `jsonl`, …).
    fn name(&self) -> &'static str;
    /// Called once, when every sink of the run has opened and before anything else: a sink that
    /// replaces what is at its path does it here, so a run that another sink refuses changes
    /// nothing. A sink that is never begun is never written, flushed or checkpointed either.
    fn begin(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// Called with batches of output events, in order per run.
    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError>;
    /// Make everything written so far durable / visible. Called often (whenever the sink's queue
    /// runs dry), so it must be cheap.
    fn flush(&mut self) -> Result<(), SinkError>;
    /// A checkpoint: what was written so far is complete where the sink writes it. Called on
    /// explicit flush requests (Ctrl-C) and at the end; sinks that publish whole files (a pi
    /// session) do it here rather than on every `flush`.
    fn checkpoint(&mut self) -> Result<(), SinkError> {
        self.flush()
    }
    /// How to read what it lost after accepting events (asked once, when it opened). Sinks that
    /// write every event they accept before `write` returns lose nothing and have none.
    fn loss_probe(&self) -> Option<LossProbe> {
        None
    }
}
