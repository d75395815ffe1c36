//! The sink side of the engine: which sinks exist and how a user names them ([`spec`]), how the
//! fan-out hands each sink its events under that sink's `when_full` policy and counts what it
//! drops ([`port`]), the thread each sink runs on ([`thread`]), and what the fan-out counts of
//! the events it hands out ([`stats`]).

pub mod port;
pub mod spec;
pub mod stats;
pub mod thread;

pub use port::{report_to_stderr, SinkMsg, SinkPort, SinkSet, SinkSummary, WhenFull};
pub use spec::{keeps_recorded, OtelContent, SinkContext, SinkKind, SinkSpec};
pub use stats::OutputCounts;
pub use thread::{SinkPlan, SinkReport, SinkThread};
