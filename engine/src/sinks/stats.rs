//! The stats counter: one more sink, counting runs, calls per canonical tool, unknown tools, error
//! cards and incomplete calls for `toolstream stats` and the end-of-replay report.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use toolstream_schemas::{Output, OutputEvent, Tool};
use toolstream_sinks::{Sink, SinkError};

/// What the output side counted.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OutputCounts {
    pub output_events: u64,
    pub runs: u64,
    pub calls: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub unknown_tools: BTreeMap<String, u64>,
    pub error_cards: u64,
    pub incomplete_calls: u64,
}

/// Counts runs, calls per canonical tool, unknown tools, error cards and incomplete calls.
#[derive(Clone, Default)]
pub struct StatsSink(pub Arc<Mutex<OutputCounts>>);

impl Sink for StatsSink {
    fn name(&self) -> &'static str {
        "stats"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut c = self.0.lock().map_err(|_| SinkError::Other { sink: "stats", message: "poisoned".into() })?;
        c.output_events += batch.len() as u64;
        for ev in batch {
            let tool = match &ev.kind {
                Output::RunClosed { .. } => {
                    c.runs += 1;
                    continue;
                }
                // A visible incomplete call also produces a card for it; count the call once.
                Output::Card(card) if card.incomplete.is_none() => {
                    if card.is_error {
                        c.error_cards += 1;
                    }
                    &card.source_tool
                }
                Output::IncompleteCall(i) => {
                    c.incomplete_calls += 1;
                    &i.source_tool
                }
                _ => continue,
            };
            c.calls += 1;
            *c.calls_by_tool.entry(tool.name().to_owned()).or_default() += 1;
            if let Tool::Unknown(name) = tool {
                *c.unknown_tools.entry(name.to_string()).or_default() += 1;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
