//! The stats counter: runs, calls per canonical tool, unknown tools, error cards and incomplete
//! calls, for `toolstream stats` and the end-of-replay report. The fan-out counts each batch as it
//! hands it to the sinks ([`crate::sinks::SinkSet::deliver`]): a few comparisons per event, not
//! worth a thread of its own and a wake-up per batch.

use std::collections::BTreeMap;

use serde::Serialize;
use toolstream_schemas::{Output, OutputEvent, Tool};

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

impl OutputCounts {
    /// Count one batch of output events.
    pub fn count(&mut self, batch: &[OutputEvent]) {
        self.output_events += batch.len() as u64;
        for ev in batch {
            let tool = match &ev.kind {
                Output::RunClosed { .. } => {
                    self.runs += 1;
                    continue;
                }
                // A visible incomplete call also produces a card for it; count the call once.
                Output::Card(card) if card.incomplete.is_none() => {
                    if card.is_error {
                        self.error_cards += 1;
                    }
                    &card.source_tool
                }
                Output::IncompleteCall(i) => {
                    self.incomplete_calls += 1;
                    &i.source_tool
                }
                _ => continue,
            };
            self.calls += 1;
            bump(&mut self.calls_by_tool, tool.name());
            if let Tool::Unknown(name) = tool {
                bump(&mut self.unknown_tools, name);
            }
        }
    }
}

/// Add one to `key`'s count (a name is copied only the first time it is seen).
fn bump(counts: &mut BTreeMap<String, u64>, key: &str) {
    match counts.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            counts.insert(key.to_owned(), 1);
        }
    }
}
