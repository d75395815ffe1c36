//! Call intake (SPEC §5.2), the first stage of a shard and the one call matcher: matches every
//! completion to its start — by call id, else by `(tool, args)` fingerprint — and hands later
//! stages each call exactly once, already matched: every report carries its call's identity
//! ([`CallIdent`](toolstream_schemas::CallIdent): a key, the hashed id, the fingerprint), by which
//! the shell, lifecycle and run stages know it without matching again. A matched completion carries its start's call id (the id it reported is kept
//! as `reported_call_id`) and, when it has none, its start's args. Repeated reports — the same call
//! id again, an id-less report identical to an earlier completion, a start after its completion —
//! are dropped here with a trace record, so the shell, lifecycle and run stages never see them.
//! An id-less shell report that matches two identical shells still running is held until one of
//! them completes by id (then it is that completion again, or the other's) or the run ends.

pub mod calls;

use std::sync::Arc;

use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{DiagFields, Input, InputEvent, ToolEvent};

use crate::item::Item;
use calls::{CallTable, Completion, Start};
use toolstream_schemas::by_arc::ByArc;

/// The intake stage's state: one call table per open run (per session).
#[derive(Debug, Default)]
pub struct IntakeCore {
    tables: ByArc<str, CallTable>,
    /// Ambiguous id-less shell reports, per session, in arrival order.
    held: ByArc<str, Vec<InputEvent>>,
    /// The last call key handed out (keys are unique across this intake's sessions and runs).
    last_key: u64,
}

impl IntakeCore {
    pub fn push(&mut self, item: Item, out: &mut Vec<Item>) {
        match item {
            Item::Input(mut ev) => match self.on_input(&mut ev, out) {
                Next::Drop => {}
                Next::Forward => out.push(Item::Input(ev)),
                Next::Hold => self.held.state_of(&ev.session, Vec::new).push(ev),
                Next::ForwardAndSettle => {
                    // Forward this completion before any held report it settles.
                    let session = ev.session.clone();
                    out.push(Item::Input(ev));
                    self.release_held(&session, false, out);
                }
            },
            Item::SourceFailed(_) | Item::EndOfSource | Item::Cancel => {
                let mut sessions: Vec<Arc<str>> = self.held.keys().cloned().collect();
                sessions.sort();
                for session in sessions {
                    self.release_held(&session, true, out);
                }
                self.tables.clear();
                out.push(item);
            }
            other => out.push(other),
        }
    }

    /// Decides where the event goes.
    fn on_input(&mut self, ev: &mut InputEvent, out: &mut Vec<Item>) -> Next {
        let at_ms = ev.at_ms.unwrap_or(0);
        match &mut ev.kind {
            Input::RunStarted(_) => {
                // Reports held from a previous run that never ended go out under that run.
                let session = ev.session.clone();
                self.release_held(&session, true, out);
                self.tables.insert(&session, CallTable::default());
                Next::Forward
            }
            Input::RunEnded(_) => {
                let session = ev.session.clone();
                self.release_held(&session, true, out);
                self.tables.remove(&session);
                Next::Forward
            }
            Input::ToolStarted(t) | Input::ToolPartial(t) => {
                let table = self.tables.state_of(&ev.session, CallTable::default);
                let last_key = &mut self.last_key;
                match table.start(t, || next_key(last_key)) {
                    Start::New | Start::Repeat => Next::Forward,
                    Start::AfterCompletion => {
                        // A start (or partial report) of a call that already completed.
                        out.push(dropped(&ev.session, at_ms, &t.call_id, "ignore-start-after-completion"));
                        Next::Drop
                    }
                }
            }
            Input::ToolCompleted(t) => {
                let table = self.tables.state_of(&ev.session, CallTable::default);
                if table.is_ambiguous_shell_report(t) {
                    Next::Hold
                } else if !complete(table, &mut self.last_key, &ev.session, at_ms, t, out) {
                    Next::Drop
                } else if self.held.contains_key(&ev.session) {
                    Next::ForwardAndSettle
                } else {
                    Next::Forward
                }
            }
            _ => Next::Forward,
        }
    }
}

/// Where an input event goes after intake.
enum Next {
    Forward,
    Drop,
    /// An ambiguous id-less shell report, kept until it can be told apart.
    Hold,
    /// A completion that may settle held reports: forward it, then retry them.
    ForwardAndSettle,
}

impl IntakeCore {
    /// Run held reports of `session` through matching again: those still ambiguous stay held
    /// unless `all` (the run is ending), the rest are dropped as repeats or go on.
    fn release_held(&mut self, session: &Arc<str>, all: bool, out: &mut Vec<Item>) {
        let Some(held) = self.held.remove(session) else { return };
        let table = self.tables.state_of(session, CallTable::default);
        let mut still = Vec::new();
        for mut ev in held {
            let at_ms = ev.at_ms.unwrap_or(0);
            let Input::ToolCompleted(t) = &mut ev.kind else { continue };
            if !all && table.is_ambiguous_shell_report(t) {
                still.push(ev);
            } else if complete(table, &mut self.last_key, session, at_ms, t, out) {
                out.push(Item::Input(ev));
            }
        }
        if !still.is_empty() {
            self.held.insert(session, still);
        }
    }
}

fn next_key(last: &mut u64) -> u64 {
    *last += 1;
    *last
}

/// Match one completion against `table`, giving it its call's identity; returns whether it goes
/// on.
fn complete(
    table: &mut CallTable,
    last_key: &mut u64,
    session: &Arc<str>,
    at_ms: u64,
    t: &mut ToolEvent,
    out: &mut Vec<Item>,
) -> bool {
    match table.complete(t) {
        Completion::Duplicate(why) => {
            let mut d = dropped(session, at_ms, &t.call_id, "drop-duplicate-completion");
            if let Item::Diagnostic { fields, .. } = &mut d {
                fields.insert("reason", why);
            }
            out.push(d);
            false
        }
        Completion::Matched(start) => {
            if t.call_id != start.call_id {
                t.reported_call_id = Some(std::mem::replace(&mut t.call_id, start.call_id));
            }
            // Completed fields win; missing ones fall back to the start (SPEC §1.1 rule 4). Args
            // the completion repeats are the start's: read once, shared.
            match (&t.args, start.args) {
                (None, start_args) => t.args = start_args,
                (Some(own), Some(start_args)) if own.text() == start_args.text() => t.args = Some(start_args),
                _ => {}
            }
            if t.started_at_ms.is_none() {
                t.started_at_ms = start.started_at_ms;
            }
            t.call = start.ident;
            true
        }
        Completion::Unmatched => {
            t.call = calls::ident(next_key(last_key), t);
            true
        }
    }
}

fn dropped(session: &Arc<str>, at_ms: u64, call_id: &str, action: &str) -> Item {
    let mut fields = DiagFields::new();
    fields.insert("action", action);
    fields.insert("callIdHash", call_ref(call_id).hash);
    Item::Diagnostic { session: session.clone(), at_ms, phase: "display_decision", fields }
}

/// `items` as intake hands them on (for tests of the stages after it, which read matched calls).
#[cfg(test)]
pub(crate) fn matched(items: Vec<Item>) -> Vec<Item> {
    let mut intake = IntakeCore::default();
    let mut out = Vec::new();
    for item in items {
        intake.push(item, &mut out);
    }
    out
}

#[cfg(test)]
mod tests;
