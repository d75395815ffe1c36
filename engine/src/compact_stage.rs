//! The `--compact` stage (SPEC §10): a sink wrapper that compacts the body of shell cards before
//! the sink it wraps lays them out. `replay --compact` puts it in front of the pi session sink
//! and `pi-provider --compact` in front of pi's live events — the model-facing tool results —
//! and in front of the terminal cards only with `--compact-cards`. Sinks stay independent of the
//! compaction rules (they live in `toolstream-actors`); the engine, which knows both, joins them.

use toolstream_actors::compact::{compact, Request};
use toolstream_schemas::{Output, OutputEvent, Tool, ToolKind};
use toolstream_sinks::{Sink, SinkError};

/// A sink whose shell cards arrive with compacted bodies.
pub struct CompactShellResults {
    inner: Box<dyn Sink>,
}

impl CompactShellResults {
    pub fn wrap(inner: Box<dyn Sink>) -> Box<dyn Sink> {
        Box::new(CompactShellResults { inner })
    }
}

fn is_shell_card(ev: &OutputEvent) -> bool {
    matches!(&ev.kind, Output::Card(card) if card.source_tool == Tool::Known(ToolKind::Shell))
}

/// `ev` with its shell card body compacted (other events unchanged).
pub fn compact_event(ev: &OutputEvent) -> OutputEvent {
    let mut ev = ev.clone();
    if let Output::Card(card) = &mut ev.kind {
        if card.source_tool == Tool::Known(ToolKind::Shell) {
            let command = card.args.get("command").and_then(|c| c.as_str()).map(str::to_owned);
            // The body already ends with `Command exited with code N` when it failed.
            let shrink =
                |text: &str| compact(&Request { command: command.as_deref(), output: text, ..Request::default() }).text;
            // What the terminal shows and what pi's model reads: the same body for a shell call
            // (SPEC §4), compacted once.
            let content = shrink(&card.content);
            card.result_text =
                if card.result_text == card.content { content.clone() } else { shrink(&card.result_text) };
            card.content = content;
        }
    }
    ev
}

impl Sink for CompactShellResults {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        if !batch.iter().any(is_shell_card) {
            return self.inner.write(batch);
        }
        let batch: Vec<OutputEvent> = batch.iter().map(compact_event).collect();
        self.inner.write(&batch)
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.inner.flush()
    }

    fn checkpoint(&mut self) -> Result<(), SinkError> {
        self.inner.checkpoint()
    }
}
