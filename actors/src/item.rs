//! What flows between a shard's stages (shell delta → lifecycle → run): input events and the
//! lines earlier stages add, each at an event time, plus the control items of a shard's life.

use std::sync::Arc;

use toolstream_schemas::{CallRef, DiagFields, InputEvent, OutputEvent, RunId, ShellStream, TokenUsage};

/// One item of a shard's stream.
#[derive(Debug)]
pub enum Item {
    /// A decoded input event. The shard door sets `at_ms` on every event (SPEC §1.1 rule 11).
    Input(InputEvent),
    /// An in-progress line for a call that is still running (lifecycle stage, SPEC §6).
    Lifecycle(Line),
    /// A shell progress line attributed to the only active shell (shell stage, SPEC §6b).
    ShellProgress { line: Line, stream: ShellStream },
    /// A trace-only record from a stage before the run stage.
    Diagnostic { session: Arc<str>, at_ms: u64, phase: &'static str, fields: DiagFields },
    /// Time passes without an event (live sources): fire every timer due by then.
    Tick(u64),
    /// The current source failed (a spawned `cursor-agent` exited non-zero, SPEC §1.1 rule 10):
    /// every open run ends as failed with this message (scrubbed by the run stage), as if its
    /// source had reported the failure. `EndOfSource` follows.
    SourceFailed(Arc<str>),
    /// The current source ended: every open run ends without its `result`.
    EndOfSource,
    /// Cancel every open run (Ctrl-C).
    Cancel,
}

/// A display line about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub session: Arc<str>,
    pub at_ms: u64,
    pub call: CallRef,
    /// e.g. `Cursor shell`.
    pub title: String,
    /// Scrubbed, bounded.
    pub text: String,
}

impl Item {
    /// The event time of this item, if it has one.
    pub fn at_ms(&self) -> Option<u64> {
        match self {
            Item::Input(ev) => ev.at_ms,
            Item::Lifecycle(l) | Item::ShellProgress { line: l, .. } => Some(l.at_ms),
            Item::Diagnostic { at_ms, .. } => Some(*at_ms),
            Item::Tick(t) => Some(*t),
            Item::SourceFailed(_) | Item::EndOfSource | Item::Cancel => None,
        }
    }

    /// The session this item belongs to, if any.
    pub fn session(&self) -> Option<&Arc<str>> {
        match self {
            Item::Input(ev) => Some(&ev.session),
            Item::Lifecycle(l) | Item::ShellProgress { line: l, .. } => Some(&l.session),
            Item::Diagnostic { session, .. } => Some(session),
            Item::Tick(_) | Item::SourceFailed(_) | Item::EndOfSource | Item::Cancel => None,
        }
    }
}

/// What the run stage hands the usage stage: the sink-facing events and, in order with them, each
/// turn's SDK usage, which only the usage stage reads (it attributes it to one message or discards
/// it as late). Sinks never see a turn's usage: it is already inside a `MessageEnded`.
#[derive(Debug)]
pub enum RunOutput {
    Event(OutputEvent),
    TurnUsage { run: Arc<RunId>, at_ms: u64, usage: TokenUsage },
}

impl From<OutputEvent> for RunOutput {
    fn from(ev: OutputEvent) -> Self {
        RunOutput::Event(ev)
    }
}
