//! Call intake (SPEC §5.2), the first stage of a shard: matches every completion to its start —
//! by call id, else by `(tool, args)` fingerprint — and hands later stages each call exactly once,
//! already matched. A matched completion carries its start's call id (the id it reported is kept
//! as `reportedCallId`) and, when it has none, its start's args. Repeated reports — the same call
//! id again, an id-less report identical to an earlier completion, a start after its completion —
//! are dropped here with a trace record, so the shell, lifecycle and run stages never see them.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{Input, InputEvent};

use crate::item::Item;
use crate::run::calls::{CallTable, Completion};

/// The intake stage's state: one call table per open run (per session).
#[derive(Debug, Default)]
pub struct IntakeCore {
    tables: HashMap<Arc<str>, CallTable>,
}

impl IntakeCore {
    pub fn push(&mut self, item: Item, out: &mut Vec<Item>) {
        match item {
            Item::Input(mut ev) => {
                if self.on_input(&mut ev, out) {
                    out.push(Item::Input(ev));
                }
            }
            Item::EndOfSource | Item::Cancel => {
                self.tables.clear();
                out.push(item);
            }
            other => out.push(other),
        }
    }

    /// Returns whether the event goes on.
    fn on_input(&mut self, ev: &mut InputEvent, out: &mut Vec<Item>) -> bool {
        let at_ms = ev.at_ms.unwrap_or(0);
        match &mut ev.kind {
            Input::RunStarted(_) => {
                self.tables.insert(ev.session.clone(), CallTable::default());
                true
            }
            Input::RunEnded(_) => {
                self.tables.remove(&ev.session);
                true
            }
            Input::ToolStarted(t) | Input::ToolPartial(t) => {
                let table = self.tables.entry(ev.session.clone()).or_default();
                if table.start(t, at_ms) || table.is_started(&t.call_id) {
                    true
                } else {
                    // A start (or partial report) of a call that already completed.
                    out.push(dropped(&ev.session, at_ms, &t.call_id, "ignore-start-after-completion"));
                    false
                }
            }
            Input::ToolCompleted(t) => {
                let table = self.tables.entry(ev.session.clone()).or_default();
                match table.complete(t) {
                    Completion::Duplicate(why) => {
                        let mut d = dropped(&ev.session, at_ms, &t.call_id, "drop-duplicate-completion");
                        if let Item::Diagnostic { fields, .. } = &mut d {
                            fields.insert("reason".into(), why.into());
                        }
                        out.push(d);
                        false
                    }
                    Completion::Matched(start) => {
                        if t.call_id != start.call_id {
                            let reported = std::mem::replace(&mut t.call_id, start.call_id);
                            if let Ok(raw) = serde_json::value::to_raw_value(&reported) {
                                t.extra.push(("reportedCallId".into(), raw));
                            }
                        }
                        if t.args.is_none() {
                            t.args = start.args;
                        }
                        if t.started_at_ms.is_none() {
                            t.started_at_ms = start.started_at_ms;
                        }
                        true
                    }
                    Completion::Unmatched => true,
                }
            }
            _ => true,
        }
    }
}

fn dropped(session: &Arc<str>, at_ms: u64, call_id: &str, action: &str) -> Item {
    let mut fields = serde_json::Map::new();
    fields.insert("action".into(), action.into());
    fields.insert("callIdHash".into(), call_ref(call_id).hash.into());
    Item::Diagnostic { session: session.clone(), at_ms, phase: "display_decision", fields }
}

#[cfg(test)]
mod tests;
