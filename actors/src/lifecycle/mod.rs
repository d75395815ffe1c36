//! Lifecycle lines (SPEC §6): one low-noise in-progress line for a long-running or externally
//! meaningful call, shown only if the call is still running a defer window (default 75 ms of
//! event time) after it started. Fast start+complete pairs coalesce into the card alone; a call
//! whose `(tool, args)` or line text is already shown by another active call gets no second line.
//! Pure state machine: items in, items out; timers fire by event time.

use std::borrow::Cow;
use std::sync::Arc;

use toolstream_schemas::{CallRef, DiagFields, Input, InputEvent, Tool, ToolEvent, ToolKind};

mod args;

use args::LabelArgs;

use crate::item::{Item, Line};
use crate::present::bounds::{display_line, DISPLAY_LINE_CHARS};
use crate::present::scrub::Scrubber;
use toolstream_schemas::by_arc::ByArc;

/// Default defer window (ms of event time).
pub const DEFAULT_DEFER_MS: u64 = 75;

#[derive(Debug)]
struct Pending {
    /// The call's key (intake's identity).
    key: u64,
    call: CallRef,
    fingerprint: Option<u64>,
    title: String,
    label: String,
    due: u64,
    /// Tie-break for timers due at the same time: start order.
    seq: u64,
    /// The timer fired (whether or not a line was shown).
    fired: bool,
    /// Its line was shown.
    shown: bool,
}

impl Pending {
    fn line_text(&self) -> String {
        [self.title.as_str(), ": ", &self.label].concat()
    }
}

/// The lifecycle stage's state: eligible calls still running, per session.
#[derive(Debug)]
pub struct LifecycleCore {
    defer_ms: u64,
    scrubber: Scrubber,
    calls: ByArc<str, Vec<Pending>>,
    seq: u64,
    /// Timers not fired yet, over every session.
    unfired: usize,
    /// None of them is due before this: a lower bound, made exact whenever one fires. Most events
    /// (text and thinking deltas) come while no timer can be due, and skip their session's list.
    earliest_due: u64,
}

impl Default for LifecycleCore {
    fn default() -> Self {
        LifecycleCore::new(DEFAULT_DEFER_MS, Scrubber::default())
    }
}

impl LifecycleCore {
    pub fn new(defer_ms: u64, scrubber: Scrubber) -> Self {
        LifecycleCore { defer_ms, scrubber, calls: ByArc::default(), seq: 0, unfired: 0, earliest_due: u64::MAX }
    }

    /// The earliest pending timer, if any (live sources tick until then).
    pub fn next_due(&self) -> Option<u64> {
        self.calls.values().flatten().filter(|p| !p.fired).map(|p| p.due).min()
    }

    /// Process one item: first fire the timers due by its time, then handle it.
    pub fn push(&mut self, item: Item, out: &mut Vec<Item>) {
        match (&item, item.at_ms()) {
            (Item::Tick(t), _) => self.fire_all(*t, out),
            (_, Some(t)) if self.unfired > 0 && t > self.earliest_due => {
                if let Some(s) = item.session() {
                    // An event at the due time comes first (SPEC §2): a call completing exactly
                    // at start + defer coalesces.
                    self.fire_session(s, t, false, out);
                }
            }
            _ => {}
        }
        match item {
            Item::Input(ev) => {
                self.on_input(&ev, out);
                out.push(Item::Input(ev));
            }
            Item::EndOfSource | Item::Cancel => {
                // Time does not advance past the end: calls still running get no line.
                self.calls.clear();
                self.unfired = 0;
                self.earliest_due = u64::MAX;
                out.push(item);
            }
            other => out.push(other),
        }
    }

    fn on_input(&mut self, ev: &InputEvent, out: &mut Vec<Item>) {
        let now = ev.at_ms.unwrap_or(0);
        match &ev.kind {
            Input::RunStarted(_) | Input::RunEnded(_) => {
                if let Some(list) = self.calls.remove(&ev.session) {
                    self.unfired -= list.iter().filter(|p| !p.fired).count();
                    self.no_timer_left();
                }
            }
            Input::ToolStarted(t) | Input::ToolPartial(t) => {
                if !t.tool.is_lifecycle() {
                    return;
                }
                let args = LabelArgs::of(t.args.as_deref());
                if is_bridge_call(t, &args) {
                    return;
                }
                let label = self.label(t, &args);
                let list = self.calls.state_of(&ev.session, Vec::new);
                match list.iter_mut().find(|p| p.key == t.call.key) {
                    // Re-scheduling the same call replaces its timer (until its line is shown).
                    Some(p) if !p.fired => {
                        p.due = now + self.defer_ms;
                        self.earliest_due = self.earliest_due.min(p.due);
                        if t.args.is_some() {
                            p.label = label;
                            p.fingerprint = t.call.fingerprint;
                        }
                    }
                    Some(_) => {}
                    None => {
                        self.seq += 1;
                        self.unfired += 1;
                        self.earliest_due = self.earliest_due.min(now + self.defer_ms);
                        list.push(Pending {
                            key: t.call.key,
                            call: t.call.call_ref.clone(),
                            fingerprint: t.call.fingerprint,
                            title: t.tool.title().into_owned(),
                            label,
                            due: now + self.defer_ms,
                            seq: self.seq,
                            fired: false,
                            shown: false,
                        });
                    }
                }
            }
            Input::ToolCompleted(t) => {
                let Some(list) = self.calls.get_mut(&ev.session) else { return };
                if let Some(i) = list.iter().position(|p| p.key == t.call.key) {
                    let p = list.remove(i);
                    if !p.fired {
                        out.push(skip(&ev.session, now, &p.call, &t.tool, "completed-within-defer"));
                        self.unfired -= 1;
                        self.no_timer_left();
                    }
                }
            }
            _ => {}
        }
    }

    fn fire_all(&mut self, now: u64, out: &mut Vec<Item>) {
        let mut sessions: Vec<Arc<str>> = self.calls.keys().cloned().collect();
        sessions.sort();
        for s in sessions {
            self.fire_session(&s, now, true, out);
        }
    }

    /// Fire the timers of `session` due before `now` (and at `now` when `inclusive`).
    fn fire_session(&mut self, session: &Arc<str>, now: u64, inclusive: bool, out: &mut Vec<Item>) {
        let Some(list) = self.calls.get_mut(session) else { return };
        let unfired = self.unfired;
        loop {
            let next = list
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.fired && (p.due < now || (inclusive && p.due == now)))
                .min_by_key(|(_, p)| (p.due, p.seq))
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            let text = list[i].line_text();
            let fp = list[i].fingerprint;
            let duplicate = list
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.shown && ((fp.is_some() && o.fingerprint == fp) || o.line_text() == text));
            let p = &mut list[i];
            // Either way the timer is spent: a duplicate never gets a line later.
            p.fired = true;
            self.unfired -= 1;
            tracing::debug!(at_ms = p.due, duplicate, "lifecycle timer fired");
            if duplicate {
                let mut fields = DiagFields::new();
                fields.insert("reason", "duplicate");
                fields.insert("callIdHash", p.call.hash.as_str());
                out.push(Item::Diagnostic {
                    session: session.clone(),
                    at_ms: p.due,
                    phase: "tool_lifecycle_skip",
                    fields,
                });
                continue;
            }
            p.shown = true;
            out.push(Item::Lifecycle(Line {
                session: session.clone(),
                at_ms: p.due,
                call: p.call.clone(),
                title: p.title.clone(),
                text: p.label.clone(),
            }));
        }
        if self.unfired != unfired {
            // A timer fired: the bound may have been its due.
            self.earliest_due = self.next_due().unwrap_or(u64::MAX);
        }
    }

    /// With no timer left, no bound is kept either.
    fn no_timer_left(&mut self) {
        if self.unfired == 0 {
            self.earliest_due = u64::MAX;
        }
    }

    /// The line's label (SPEC §6), scrubbed and bounded.
    fn label(&self, t: &ToolEvent, args: &LabelArgs<'_>) -> String {
        let get = |keys: &[&str]| args.first(keys).map(Cow::into_owned);
        let kind = t.tool.kind();
        let default = kind.map_or("activity", |k| k.spec().default_label);
        let from_mcp = t.payload_kind() != kind;
        let raw = match kind {
            Some(ToolKind::Shell) => {
                let cmd = get(&["command"]).unwrap_or_default();
                let cmd = display_line(&self.scrubber.scrub(&cmd), DISPLAY_LINE_CHARS);
                // Shell labels may show paths.
                return if cmd.is_empty() { default.to_owned() } else { cmd };
            }
            Some(ToolKind::Task) => get(&["description"]),
            Some(ToolKind::Mcp) => get(&["toolName", "tool_name"]),
            Some(ToolKind::GenerateImage) => get(&["prompt", "description"]),
            Some(ToolKind::RecordScreen) => get(&["mode"]),
            Some(ToolKind::SemSearch) => get(&["query"]),
            Some(ToolKind::WebSearch) if from_mcp => args.inner_query(),
            Some(ToolKind::WebSearch) => get(&["searchTerm", "search_term", "query"]),
            Some(ToolKind::WebFetch) => None, // never the URL
            Some(ToolKind::CreatePlan) => {
                get(&["plan", "name"]).and_then(|p| p.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned))
            }
            Some(ToolKind::UpdateTodos) => {
                let n = args.todos();
                Some(if n == 1 { "1 item".to_owned() } else { format!("{n} items") })
            }
            _ => None,
        };
        let label = raw.map(|r| display_line(&self.scrubber.scrub(&r), DISPLAY_LINE_CHARS)).unwrap_or_default();
        if label.is_empty() || has_uri_or_path(&label) {
            default.to_owned()
        } else {
            label
        }
    }
}

/// pi bridge calls (`pi__*`, SPEC §7) never get lifecycle lines: pi shows the real execution.
fn is_bridge_call(t: &ToolEvent, args: &LabelArgs<'_>) -> bool {
    if t.tool.kind() != Some(ToolKind::Mcp) && !t.wire_name.starts_with("mcp") {
        return false;
    }
    ["toolName", "tool_name", "name"]
        .iter()
        .filter_map(|k| args.str(k))
        .any(|n| n.starts_with("pi__") || n.contains("-pi__"))
}

/// A URI (`x://`, `www.`), a home path (`~/`) or an absolute path (`/…`, `C:\`, `C:/`) at the
/// start or after a delimiter.
pub fn has_uri_or_path(s: &str) -> bool {
    if s.contains("://") || s.to_ascii_lowercase().contains("www.") {
        return true;
    }
    let b = s.as_bytes();
    (0..b.len()).any(|i| {
        let at_boundary = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.');
        if !at_boundary {
            return false;
        }
        match b[i] {
            b'~' => b.get(i + 1) == Some(&b'/'),
            b'/' => b.get(i + 1).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_'),
            c if c.is_ascii_alphabetic() => b.get(i + 1) == Some(&b':') && matches!(b.get(i + 2), Some(b'\\' | b'/')),
            _ => false,
        }
    })
}

fn skip(session: &Arc<str>, at_ms: u64, call: &CallRef, tool: &Tool, reason: &str) -> Item {
    let mut fields = DiagFields::new();
    fields.insert("reason", reason);
    fields.insert("toolName", tool.name());
    fields.insert("callIdHash", call.hash.as_str());
    Item::Diagnostic { session: session.clone(), at_ms, phase: "tool_lifecycle_skip", fields }
}

#[cfg(test)]
mod tests;
