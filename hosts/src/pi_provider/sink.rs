//! The provider's sink: the pi live-events assembly (`toolstream_sinks::pi_events`) of the first
//! run of the source, handed to the output gate as typed steps (the gate serializes each once, as
//! it writes it), with the run's chat id ahead of them.
//!
//! With the pi tool bridge on, a [`BridgeFeed`] puts Cursor's calls of pi tools into the same
//! assembly (under the same lock, so in order with the run's events), and the run's own record of
//! those calls — `mcp` cards of `pi__` tools — is left out: pi shows the real call. A call that
//! reaches the bridge before the run's opening reaches this sink (the engine is behind on
//! cursor-agent's output) waits for the opening, then goes out after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use toolstream_schemas::{Output, OutputEvent, RunId};
use toolstream_sinks::pi_events::display::ToolDisplay;
use toolstream_sinks::pi_events::{Assembler, Step};
use toolstream_sinks::{Sink, SinkError};

use super::gate::{Gate, Outgoing};
use crate::tool_bridge::{is_bridged_card, BridgeCall, EarlyCalls};

/// One pi request is one Cursor run: the first run the source opens is delivered, any other is
/// left out (and reported once on stderr).
pub struct ProviderSink {
    gate: Arc<Gate>,
    state: Arc<Mutex<Assembly>>,
    delivered: Arc<AtomicBool>,
    others_reported: bool,
    /// The pi tool bridge is on: Cursor's `mcp` cards of `pi__` tools are not delivered.
    bridged: bool,
}

/// The assembly of the delivered run, shared with the bridge feed.
struct Assembly {
    asm: Assembler,
    steps: Vec<Step>,
    run: Option<Arc<RunId>>,
    /// Bridged calls that came before the run opened.
    early: EarlyCalls,
}

/// Puts bridged pi tool calls into the provider's stream.
#[derive(Clone)]
pub struct BridgeFeed {
    gate: Arc<Gate>,
    state: Arc<Mutex<Assembly>>,
}

impl BridgeFeed {
    /// Cursor called a pi tool: end the open message with it as a real pi tool call.
    pub fn call(&self, call: &BridgeCall) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(run) = state.run.clone() else {
            state.early.hold(call.clone());
            return;
        };
        let mut out = Vec::new();
        state.bridge_call(&run, call, &mut out);
        // Pushed under the lock: the run's own events cannot overtake it.
        self.gate.push(out);
    }
}

impl ProviderSink {
    /// `delivered` turns true once the run opened (its messages are on their way); `display`
    /// says which cards pi can take as replay tool calls; messages carry `model`, the id pi
    /// asked for (Cursor's own name goes in `responseModel`).
    pub fn new(gate: Arc<Gate>, delivered: Arc<AtomicBool>, display: ToolDisplay, model: Option<String>) -> Self {
        let asm = Assembler::with_display(true, display).with_requested_model(model);
        ProviderSink {
            gate,
            state: Arc::new(Mutex::new(Assembly { asm, steps: Vec::new(), run: None, early: EarlyCalls::default() })),
            delivered,
            others_reported: false,
            bridged: false,
        }
    }

    /// The feed for the pi tool bridge's calls.
    pub fn bridge_feed(&self) -> BridgeFeed {
        BridgeFeed { gate: self.gate.clone(), state: self.state.clone() }
    }

    /// The pi tool bridge is on: Cursor's own record of the calls it made through it is not
    /// delivered (pi shows the real calls).
    pub fn hide_bridged_cards(&mut self) {
        self.bridged = true;
    }
}

impl Assembly {
    /// A bridged call of `run` as pi's tool call: it ends the open message.
    fn bridge_call(&mut self, run: &Arc<RunId>, call: &BridgeCall, out: &mut Vec<Outgoing>) {
        self.asm.bridge_call(run, &call.id, &call.tool, call.args.clone(), &mut self.steps);
        out.extend(self.steps.drain(..).map(Outgoing::Event));
    }

    /// Whether `ev` belongs to the delivered run (choosing it at its opening).
    fn keep(&mut self, ev: &OutputEvent, delivered: &AtomicBool) -> bool {
        match &self.run {
            Some(run) => *run == ev.run,
            None if matches!(ev.kind, Output::RunOpened { .. }) => {
                self.run = Some(ev.run.clone());
                delivered.store(true, Ordering::SeqCst);
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
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        for ev in batch {
            if !state.keep(ev, &self.delivered) {
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
            if self.bridged && matches!(&ev.kind, Output::Card(card) if is_bridged_card(card)) {
                continue;
            }
            state.asm.push(ev, &mut state.steps);
            out.extend(
                state
                    .steps
                    .drain(..)
                    .filter(|s| !matches!(s, Step::RunOpened { .. } | Step::RunClosed { .. }))
                    .map(Outgoing::Event),
            );
        }
        // Calls that came before the opening go out after what the run said up to now.
        if let Some(run) = state.run.clone() {
            for call in state.early.release() {
                state.bridge_call(&run, &call, &mut out);
            }
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
