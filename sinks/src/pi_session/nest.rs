//! Subagents inside their parent's pi session (SPEC §1.5, §1.6, §9.2): a run whose `RunOpened`
//! names a parent call (`RunContext::parent`) is not a session of its own; its calls and its
//! final text become the output of that task call — what pi shows (and its model reads) as the
//! task's tool result.
//!
//! The child run is held until it closes and its parent's card for the call arrives (the engine
//! processes a child on its parent's shard, and sources report a subagent's end before its task
//! call's, so the child closes first). A child whose task card went by before it closed, or that
//! never finds its card, is released as events of its own session: nothing is lost.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use toolstream_schemas::{CallRef, Output, OutputEvent, RunId, NO_OUTPUT};

/// Card lines of a subagent kept in its task's output (a subagent may call hundreds of tools).
const MAX_CALL_LINES: usize = 200;
/// Task cards remembered per sink (to tell that a child's card went by).
const SEEN_CARDS: usize = 4_096;

type CallKey = (Arc<str>, CallRef);

/// One subagent run being held.
#[derive(Debug)]
struct Child {
    key: CallKey,
    events: Vec<OutputEvent>,
}

/// What the nesting filter decided about an event.
#[derive(Debug)]
pub enum Nested<'a> {
    /// Pass this event on (a task card with its subagent's output added, or as it was).
    Pass(Cow<'a, OutputEvent>),
    /// Held as part of a subagent's run.
    Held,
    /// A subagent's run released as events of its own (its card went by before it closed).
    Release(Vec<OutputEvent>),
}

/// Holds subagent runs and folds them into their task cards.
#[derive(Debug, Default)]
pub struct Nesting {
    /// Child runs being held, by run.
    children: HashMap<Arc<RunId>, Child>,
    /// Closed children's outputs waiting for their card, by (parent session, call).
    ready: HashMap<CallKey, (Arc<RunId>, String)>,
    /// Task cards that went by.
    seen: HashSet<CallKey>,
    seen_order: VecDeque<CallKey>,
}

impl Nesting {
    pub fn filter<'a>(&mut self, ev: &'a OutputEvent) -> Nested<'a> {
        if let Output::RunOpened { context: Some(ctx), .. } = &ev.kind {
            if let Some(parent) = &ctx.parent {
                let key = (parent.session.clone(), parent.call.clone());
                self.children.insert(ev.run.clone(), Child { key, events: vec![ev.clone()] });
                return Nested::Held;
            }
        }
        if self.children.is_empty() || !self.children.contains_key(&ev.run) {
            return Nested::Pass(self.with_output(ev));
        }
        // A card inside a subagent may itself be a task with a nested subagent.
        let ev = self.with_output(ev).into_owned();
        let closed = match &ev.kind {
            Output::RunClosed { final_text, .. } => Some(final_text.clone()),
            _ => None,
        };
        let run = ev.run.clone();
        if let Some(c) = self.children.get_mut(&run) {
            c.events.push(ev);
        }
        match closed {
            Some(text) => self.child_closed(&run, &text),
            None => Nested::Held,
        }
    }

    /// Every child still held, as events of their own sessions (the end of the input).
    pub fn release_all(&mut self) -> Vec<OutputEvent> {
        self.ready.clear();
        let mut runs: Vec<Arc<RunId>> = self.children.keys().cloned().collect();
        runs.sort();
        runs.into_iter().filter_map(|r| self.children.remove(&r)).flat_map(|c| c.events).collect()
    }

    fn child_closed(&mut self, run: &Arc<RunId>, final_text: &str) -> Nested<'static> {
        let Some(child) = self.children.get(run) else { return Nested::Held };
        if self.seen.contains(&child.key) {
            tracing::warn!(
                "pi-sessions: a subagent's run ended after its task call's card; it gets a session of its own"
            );
            return match self.children.remove(run) {
                Some(c) => Nested::Release(c.events),
                None => Nested::Held,
            };
        }
        let text = render(&child.events, final_text);
        self.ready.insert(child.key.clone(), (run.clone(), text));
        Nested::Held
    }

    /// A task card with its subagent's output added, when that subagent closed already.
    fn with_output<'a>(&mut self, ev: &'a OutputEvent) -> Cow<'a, OutputEvent> {
        // Only a task call has a subagent.
        let Output::Card(card) = &ev.kind else { return Cow::Borrowed(ev) };
        if card.source_tool.kind() != Some(toolstream_schemas::ToolKind::Task) {
            return Cow::Borrowed(ev);
        }
        let key = (ev.run.session.clone(), card.call.clone());
        let Some((child, output)) = self.ready.remove(&key) else {
            self.remember(key);
            return Cow::Borrowed(ev);
        };
        self.remember(key);
        self.children.remove(&child);
        let mut card = card.clone();
        let body = |t: &str| t.trim_end().trim_end_matches(NO_OUTPUT).trim_end().to_owned();
        let content = body(&card.content);
        card.content = if content.is_empty() { output.clone() } else { format!("{content}\n\n{output}") };
        let result = body(&card.result_text);
        card.result_text = if result.is_empty() { output } else { format!("{result}\n\n{output}") };
        Cow::Owned(OutputEvent { run: ev.run.clone(), at_ms: ev.at_ms, kind: Output::Card(card) })
    }

    fn remember(&mut self, key: CallKey) {
        if self.seen.insert(key.clone()) {
            self.seen_order.push_back(key);
            if self.seen_order.len() > SEEN_CARDS {
                if let Some(old) = self.seen_order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
    }
}

/// A subagent run as text: its task, one line per call (its card's title line), its final text.
fn render(events: &[OutputEvent], final_text: &str) -> String {
    let mut lines = Vec::new();
    let mut calls = 0usize;
    for ev in events {
        match &ev.kind {
            Output::RunOpened { model, prompt, .. } => {
                let model = model.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
                lines.push(format!("Subagent run{model}"));
                if let Some(p) = prompt.as_deref().and_then(|p| p.lines().find(|l| !l.trim().is_empty())) {
                    lines.push(format!("> {}", p.trim()));
                }
            }
            Output::Card(card) => {
                calls += 1;
                if calls <= MAX_CALL_LINES {
                    let mark = if card.is_error { "✗" } else { "●" };
                    lines.push(format!("{mark} {}", card.headline));
                }
            }
            Output::RunClosed { status, error, .. } if *status != toolstream_schemas::RunStatus::Finished => {
                lines.push(format!("Subagent {}: {}", status.as_str(), error.as_deref().unwrap_or("")));
            }
            _ => {}
        }
    }
    if calls > MAX_CALL_LINES {
        lines.push(format!("... ({} more calls)", calls - MAX_CALL_LINES));
    }
    let mut out = lines.join("\n");
    if !final_text.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(final_text.trim());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolstream_schemas::ids::call_ref;
    use toolstream_schemas::{ParentCall, RunContext, RunStatus};

    use super::*;
    use crate::pi_events::testutil::{card, closed, ev, opened, run};

    fn child_opened(parent_session: &str, call: u32) -> Output {
        let ctx = RunContext {
            parent: Some(ParentCall { session: parent_session.into(), call: call_ref(&format!("call-{call}")) }),
            ..RunContext::default()
        };
        Output::RunOpened {
            cwd: None,
            model: Some("fast".into()),
            prompt: Some("look around".into()),
            context: Some(Box::new(ctx)),
        }
    }

    /// A task call's card, for call `k` of a run labelled `label`.
    fn task_card(label: &str, k: u32, content: &str) -> Output {
        let mut c = card(label, k, "cursor", json!({}), content, false);
        if let Output::Card(c) = &mut c {
            c.source_tool = toolstream_schemas::Tool::from_name("task");
        }
        c
    }

    fn passed(n: &mut Nesting, e: &OutputEvent) -> Option<OutputEvent> {
        match n.filter(e) {
            Nested::Pass(e) => Some(e.into_owned()),
            Nested::Held => None,
            Nested::Release(_) => panic!("released"),
        }
    }

    #[test]
    fn a_subagent_that_closed_becomes_its_task_card_s_output() {
        let (parent, kid) = (run("p", 1), run("k", 1));
        let mut n = Nesting::default();
        assert!(passed(&mut n, &ev(&parent, 1, opened("m", "go"))).is_some());
        assert!(passed(&mut n, &ev(&kid, 2, child_opened("p", 1))).is_none(), "the child is held");
        let mut inner = card("k", 9, "read", json!({}), "body", false);
        if let Output::Card(c) = &mut inner {
            c.headline = "read a.rs".into();
        }
        assert!(passed(&mut n, &ev(&kid, 3, inner)).is_none());
        let mut done = closed(RunStatus::Finished);
        if let Output::RunClosed { final_text, .. } = &mut done {
            *final_text = "All read.".into();
        }
        assert!(passed(&mut n, &ev(&kid, 4, done)).is_none());
        let task = passed(&mut n, &ev(&parent, 5, task_card("p", 1, NO_OUTPUT))).unwrap();
        let Output::Card(c) = &task.kind else { panic!() };
        assert_eq!(c.result_text, "Subagent run (fast)\n> look around\n● read a.rs\n\nAll read.");
        assert_eq!(c.content, c.result_text);
        assert!(n.release_all().is_empty(), "nothing left over");
    }

    #[test]
    fn a_subagent_whose_card_went_by_keeps_its_own_events() {
        let (parent, kid) = (run("p", 1), run("k", 1));
        let mut n = Nesting::default();
        passed(&mut n, &ev(&kid, 1, child_opened("p", 1)));
        let task = passed(&mut n, &ev(&parent, 2, task_card("p", 1, "x"))).unwrap();
        assert!(matches!(&task.kind, Output::Card(c) if c.result_text == "x"), "no output yet: unchanged");
        match n.filter(&ev(&kid, 3, closed(RunStatus::Finished))) {
            Nested::Release(events) => assert_eq!(events.len(), 2),
            other => panic!("{other:?}"),
        }
        passed(&mut n, &ev(&run("k2", 1), 4, child_opened("p", 7)));
        assert_eq!(n.release_all().len(), 1, "an unclaimed child is released at the end");
    }
}
