//! The provider's sink: the pi live-events assembly (`toolstream_sinks::pi_events`) of the first
//! run of the source, handed to the output gate as typed steps (the gate serializes each once, as
//! it writes it), with the run's chat id ahead of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use toolstream_schemas::{Output, OutputEvent, RunId};
use toolstream_sinks::pi_events::display::ToolDisplay;
use toolstream_sinks::pi_events::{Assembler, Step};
use toolstream_sinks::{Sink, SinkError};

use super::gate::{Gate, Outgoing};

/// One pi request is one Cursor run: the first run the source opens is delivered, any other is
/// left out (and reported once on stderr).
pub struct ProviderSink {
    gate: Arc<Gate>,
    asm: Assembler,
    steps: Vec<Step>,
    run: Option<Arc<RunId>>,
    delivered: Arc<AtomicBool>,
    others_reported: bool,
}

impl ProviderSink {
    /// `delivered` turns true once the run opened (its messages are on their way); `display`
    /// says which cards pi can take as replay tool calls; messages carry `model`, the id pi
    /// asked for (Cursor's own name goes in `responseModel`).
    pub fn new(gate: Arc<Gate>, delivered: Arc<AtomicBool>, display: ToolDisplay, model: Option<String>) -> Self {
        ProviderSink {
            gate,
            asm: Assembler::with_display(true, display).with_requested_model(model),
            steps: Vec::new(),
            run: None,
            delivered,
            others_reported: false,
        }
    }

    /// Whether `ev` belongs to the delivered run (choosing it at its opening).
    fn keep(&mut self, ev: &OutputEvent) -> bool {
        match &self.run {
            Some(run) => *run == ev.run,
            None if matches!(ev.kind, Output::RunOpened { .. }) => {
                self.run = Some(ev.run.clone());
                self.delivered.store(true, Ordering::SeqCst);
                true
            }
            // Nothing of a run comes before its opening; diagnostics are not delivered anyway.
            None => true,
        }
    }
}

impl Sink for ProviderSink {
    fn name(&self) -> &'static str {
        "pi-provider"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut out = Vec::new();
        for ev in batch {
            if !self.keep(ev) {
                if !self.others_reported {
                    self.others_reported = true;
                    tracing::warn!("the source holds more than one Cursor run; only the first is delivered to pi");
                }
                continue;
            }
            if matches!(ev.kind, Output::RunOpened { .. }) && !ev.run.session.is_empty() {
                // The run's session is its Cursor chat id (stream-json `system/init` `session_id`,
                // an SDK recording's `start.session_id`): known now, before any message.
                out.push(Outgoing::Chat(ev.run.session.to_string()));
            }
            self.asm.push(ev, &mut self.steps);
            out.extend(
                self.steps
                    .drain(..)
                    .filter(|s| !matches!(s, Step::RunOpened { .. } | Step::RunClosed { .. }))
                    .map(Outgoing::Event),
            );
        }
        if !out.is_empty() {
            self.gate.push(out);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
