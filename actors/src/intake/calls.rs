//! The call table of one run (SPEC §5.2): started calls keyed by call id, completion matching by
//! id or by `(tool, args)` fingerprint, and deduplication of calls reported twice. Each call gets
//! its [`CallIdent`] here, once: the key later stages know it by, its hashed id, its fingerprint.

use rustc_hash::{FxHashSet as HashSet, FxHasher as DefaultHasher};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{CallArgs, CallIdent, Tool, ToolEvent, ToolKind};

/// A call that started and has not completed yet.
#[derive(Debug)]
pub struct StartedCall {
    pub call_id: String,
    pub ident: CallIdent,
    pub tool: Tool,
    pub args: Option<Arc<CallArgs>>,
    /// Tool-clock start time, when reported.
    pub started_at_ms: Option<u64>,
}

/// What a completion turned out to be.
#[derive(Debug)]
pub enum Completion {
    /// It completes this started call.
    Matched(StartedCall),
    /// No started call matched: a completion without a start (hooks), rendered from what it has.
    Unmatched,
    /// The same call was already rendered: drop it.
    Duplicate(&'static str),
}

/// What a start turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub enum Start {
    /// A call not seen before.
    New,
    /// A repeated report of a call still started.
    Repeat,
    /// A start of a call that already completed: ignored.
    AfterCompletion,
}

#[derive(Debug, Default)]
pub struct CallTable {
    started: Vec<StartedCall>,
    completed_ids: HashSet<String>,
    /// Display fingerprints `(tool, args, result)` of every completion so far (args merged from
    /// the start), against which id-less reports are deduplicated.
    completed_display: HashSet<u64>,
}

pub fn fingerprint(tool: &Tool, args: Option<&Arc<CallArgs>>) -> Option<u64> {
    let args = args?;
    let mut h = DefaultHasher::default();
    tool.name().hash(&mut h);
    args.text().hash(&mut h);
    Some(h.finish())
}

/// Fingerprint of what a report would display: `(tool, args, result)`.
pub fn display_fingerprint(ev: &ToolEvent, args: Option<&Arc<CallArgs>>) -> u64 {
    let mut h = DefaultHasher::default();
    ev.tool.name().hash(&mut h);
    args.map(|a| a.text()).hash(&mut h);
    if let Some(r) = &ev.result {
        r.status.as_str().hash(&mut h);
        r.value.get().hash(&mut h);
    }
    h.finish()
}

/// The identity of a new call under `key`.
pub fn ident(key: u64, ev: &ToolEvent) -> CallIdent {
    CallIdent { key, call_ref: call_ref(&ev.call_id), fingerprint: fingerprint(&ev.tool, ev.args.as_ref()) }
}

impl CallTable {
    /// Record a start, giving it its identity (`next_key` for a new call). A repeated start of the
    /// same id is the same call (its args may have filled in: they replace the earlier ones); a
    /// start of an id that already completed is ignored.
    pub fn start(&mut self, ev: &mut ToolEvent, next_key: impl FnOnce() -> u64) -> Start {
        if !ev.call_id.is_empty() && self.completed_ids.contains(&ev.call_id) {
            return Start::AfterCompletion;
        }
        if !ev.call_id.is_empty() {
            if let Some(existing) = self.started.iter_mut().find(|c| c.call_id == ev.call_id) {
                if ev.args.is_some() {
                    existing.ident.fingerprint = fingerprint(&ev.tool, ev.args.as_ref());
                    existing.tool = ev.tool.clone();
                    existing.args = ev.args.clone();
                    existing.started_at_ms = ev.started_at_ms;
                }
                ev.call = existing.ident.clone();
                return Start::Repeat;
            }
        }
        ev.call = ident(next_key(), ev);
        self.started.push(StartedCall {
            call_id: ev.call_id.clone(),
            ident: ev.call.clone(),
            tool: ev.tool.clone(),
            args: ev.args.clone(),
            started_at_ms: ev.started_at_ms,
        });
        Start::New
    }

    /// Whether an id-less shell report matches two or more identical shells still running, so it
    /// cannot be told which it completes (SPEC §5.2: identical concurrent shells are never joined).
    pub fn is_ambiguous_shell_report(&self, ev: &ToolEvent) -> bool {
        if !ev.call_id.is_empty() || ev.tool != Tool::Known(ToolKind::Shell) {
            return false;
        }
        let Some(fp) = fingerprint(&ev.tool, ev.args.as_ref()) else { return false };
        self.started.iter().filter(|c| c.ident.fingerprint == Some(fp)).count() >= 2
    }

    /// Match a completion to its start (SPEC §5.2).
    pub fn complete(&mut self, ev: &ToolEvent) -> Completion {
        // An id-less report identical to an earlier completion is that completion again: it must
        // not be matched to another (identical) call that is still running.
        if ev.call_id.is_empty() && self.completed_display.contains(&display_fingerprint(ev, ev.args.as_ref())) {
            return Completion::Duplicate("same tool, args and result as an earlier report, without a call id");
        }
        let outcome = self.match_start(ev);
        let args = match &outcome {
            Completion::Matched(s) => ev.args.as_ref().or(s.args.as_ref()),
            _ => ev.args.as_ref(),
        };
        let display = display_fingerprint(ev, args);
        match outcome {
            Completion::Duplicate(why) => Completion::Duplicate(why),
            _ if ev.call_id.is_empty() && !self.completed_display.insert(display) => {
                Completion::Duplicate("same tool, args and result as an earlier report, without a call id")
            }
            other => {
                self.completed_display.insert(display);
                other
            }
        }
    }

    fn match_start(&mut self, ev: &ToolEvent) -> Completion {
        if !ev.call_id.is_empty() {
            if !self.completed_ids.insert(ev.call_id.clone()) {
                return Completion::Duplicate("repeated call id");
            }
            if let Some(i) = self.started.iter().position(|c| c.call_id == ev.call_id) {
                return Completion::Matched(self.started.remove(i));
            }
        }
        // Unknown id: the first still-started call with the same fingerprint; for shells only when
        // exactly one started shell has it (identical concurrent shells are never joined).
        let Some(fp) = fingerprint(&ev.tool, ev.args.as_ref()) else {
            return Completion::Unmatched;
        };
        let mut same = self.started.iter().enumerate().filter(|(_, c)| c.ident.fingerprint == Some(fp));
        let Some((first, _)) = same.next() else {
            return Completion::Unmatched;
        };
        if ev.tool == Tool::Known(ToolKind::Shell) && same.next().is_some() {
            return Completion::Unmatched;
        }
        let start = self.started.remove(first);
        // The start's own id is completed now: a later report under that id is a repeat.
        self.completed_ids.insert(start.call_id.clone());
        Completion::Matched(start)
    }

    pub fn started_len(&self) -> usize {
        self.started.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, tool: ToolKind, args: Option<&str>) -> ToolEvent {
        ToolEvent::from_json(id, Tool::Known(tool), args, None).unwrap()
    }

    fn keys() -> impl FnMut() -> u64 {
        let mut n = 0;
        move || {
            n += 1;
            n
        }
    }

    #[test]
    fn matches_by_id_then_dedupes() {
        let mut t = CallTable::default();
        let mut key = keys();
        assert_eq!(t.start(&mut ev("a", ToolKind::Read, Some(r#"{"path":"x"}"#)), &mut key), Start::New);
        assert!(matches!(t.complete(&ev("a", ToolKind::Read, None)), Completion::Matched(c) if c.args.is_some()));
        assert!(matches!(t.complete(&ev("a", ToolKind::Read, None)), Completion::Duplicate(_)));
        // A late start of a completed id is ignored.
        assert_eq!(t.start(&mut ev("a", ToolKind::Read, None), &mut key), Start::AfterCompletion);
        assert_eq!(t.started_len(), 0);
    }

    #[test]
    fn a_repeated_start_is_the_same_call_and_fills_in_its_args() {
        let mut t = CallTable::default();
        let mut key = keys();
        let mut first = ev("a", ToolKind::Shell, None);
        assert_eq!(t.start(&mut first, &mut key), Start::New);
        let mut again = ev("a", ToolKind::Shell, Some(r#"{"command":"ls"}"#));
        assert_eq!(t.start(&mut again, &mut key), Start::Repeat);
        assert_eq!(again.call.key, first.call.key);
        assert_eq!(again.call.call_ref, call_ref("a"));
        assert!(again.call.fingerprint.is_some() && first.call.fingerprint.is_none());
        // Id-less starts are distinct calls.
        let (mut x, mut y) = (ev("", ToolKind::Ls, None), ev("", ToolKind::Ls, None));
        t.start(&mut x, &mut key);
        t.start(&mut y, &mut key);
        assert_ne!(x.call.key, y.call.key);
    }

    #[test]
    fn unknown_id_matches_by_fingerprint() {
        let mut t = CallTable::default();
        t.start(&mut ev("a", ToolKind::Grep, Some(r#"{"pattern":"p"}"#)), keys());
        assert!(
            matches!(t.complete(&ev("zz", ToolKind::Grep, Some(r#"{"pattern":"p"}"#))), Completion::Matched(c) if c.call_id == "a")
        );
    }

    #[test]
    fn identical_concurrent_shells_are_never_joined() {
        let mut t = CallTable::default();
        let mut key = keys();
        t.start(&mut ev("a", ToolKind::Shell, Some(r#"{"command":"date"}"#)), &mut key);
        t.start(&mut ev("b", ToolKind::Shell, Some(r#"{"command":"date"}"#)), &mut key);
        assert!(matches!(t.complete(&ev("", ToolKind::Shell, Some(r#"{"command":"date"}"#))), Completion::Unmatched));
        // By id both still complete, and render twice.
        assert!(matches!(t.complete(&ev("a", ToolKind::Shell, None)), Completion::Matched(_)));
        assert!(matches!(t.complete(&ev("b", ToolKind::Shell, None)), Completion::Matched(_)));
    }

    #[test]
    fn idless_repeat_of_an_id_completion_is_a_duplicate_but_two_real_calls_are_not() {
        let mut t = CallTable::default();
        t.start(&mut ev("a", ToolKind::Read, Some(r#"{"path":"x"}"#)), keys());
        // The delta completion carries only the id; the step repeats it with args and no id.
        assert!(matches!(t.complete(&ev("a", ToolKind::Read, None)), Completion::Matched(_)));
        assert!(matches!(t.complete(&ev("", ToolKind::Read, Some(r#"{"path":"x"}"#))), Completion::Duplicate(_)));
        // Two distinct calls with identical output render twice.
        assert!(matches!(t.complete(&ev("b", ToolKind::Shell, Some(r#"{"command":"date"}"#))), Completion::Unmatched));
        assert!(matches!(t.complete(&ev("c", ToolKind::Shell, Some(r#"{"command":"date"}"#))), Completion::Unmatched));
    }

    #[test]
    fn a_report_under_the_id_of_a_start_matched_by_fingerprint_is_a_repeat() {
        let mut t = CallTable::default();
        t.start(&mut ev("a", ToolKind::Read, Some(r#"{"path":"x"}"#)), keys());
        // The SDK step (no id) arrives before the delta completion (with the id).
        assert!(matches!(t.complete(&ev("", ToolKind::Read, Some(r#"{"path":"x"}"#))), Completion::Matched(_)));
        assert!(matches!(t.complete(&ev("a", ToolKind::Read, None)), Completion::Duplicate(_)));
    }

    #[test]
    fn idless_reports_dedupe_by_display_fingerprint() {
        let mut t = CallTable::default();
        let e = ev("", ToolKind::Ls, Some(r#"{"path":"."}"#));
        assert!(matches!(t.complete(&e), Completion::Unmatched));
        assert!(matches!(t.complete(&e), Completion::Duplicate(_)));
    }
}
