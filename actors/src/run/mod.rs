//! Cursor run coordination (SPEC §5): turns the canonical input events of many sessions into
//! the ordered output stream of each run — messages with their text and thinking, one card per
//! completed call, the tool-use turn split, incomplete calls at run end, the final text, and
//! exactly one terminal `MessageEnded` per message and one `RunClosed` per run.
//!
//! [`Coordinator`] is a pure state machine: `handle(event) → outputs`, no clock, no runtime.

pub mod calls;
pub mod text;

use std::collections::HashMap;
use std::sync::Arc;

use toolstream_schemas::{
    IncompleteCall, IncompleteReason, Input, InputEvent, Output, OutputEvent, RunEnd, RunId, RunStart, RunStatus,
    RunTotals, StopReason, ToolEvent, Usage,
};

use crate::present::bounds::estimate_tokens;
use crate::present::card::{build_card, incomplete_card, CardContext};
use toolstream_schemas::ids::{call_ref, run_label};
use crate::present::scrub::Scrubber;
use calls::{CallTable, Completion};
use text::SegmentDedupe;

/// Settings of run coordination.
#[derive(Debug, Default, Clone)]
pub struct CoordinatorConfig {
    pub scrubber: Scrubber,
}

/// Routes events to the open run of their session, opening runs as needed.
#[derive(Debug, Default)]
pub struct Coordinator {
    cfg: CoordinatorConfig,
    sessions: HashMap<Arc<str>, Session>,
    /// Runs closed so far (for stats).
    closed: u64,
}

#[derive(Debug, Default)]
struct Session {
    runs_started: u32,
    open: Option<Run>,
}

impl Coordinator {
    pub fn new(cfg: CoordinatorConfig) -> Self {
        Coordinator { cfg, sessions: HashMap::new(), closed: 0 }
    }

    /// Runs closed so far.
    pub fn runs_closed(&self) -> u64 {
        self.closed
    }

    /// Runs currently open.
    pub fn runs_open(&self) -> usize {
        self.sessions.values().filter(|s| s.open.is_some()).count()
    }

    /// Process one input event, appending what it produces to `out`.
    pub fn handle(&mut self, ev: InputEvent, out: &mut Vec<OutputEvent>) {
        let session = self.sessions.entry(ev.session.clone()).or_default();
        if let Input::RunStarted(_) = ev.kind {
            if let Some(mut prev) = session.open.take() {
                // A new run began before this one's `result`: it ended without one.
                prev.close(&self.cfg, missing_result(), ev.at_ms, out);
                self.closed += 1;
            }
        }
        let run = session.open.get_or_insert_with(|| {
            session.runs_started += 1;
            Run::new(ev.session.clone(), session.runs_started)
        });
        if run.on_event(&self.cfg, ev, out) {
            session.open = None;
            self.closed += 1;
        }
    }

    /// End of input: every open run ends without its `result` (SPEC §1.1 rule 10).
    pub fn finish(&mut self, out: &mut Vec<OutputEvent>) {
        self.close_all(out, missing_result);
    }

    /// Cancellation (Ctrl-C): every open run is cancelled.
    pub fn cancel_all(&mut self, out: &mut Vec<OutputEvent>) {
        self.close_all(out, || RunEnd {
            status: RunStatus::Cancelled,
            result_text: None,
            usage: None,
            error: Some("aborted".into()),
            duration_ms: None,
            extra: Vec::new(),
        });
    }

    fn close_all(&mut self, out: &mut Vec<OutputEvent>, end: impl Fn() -> RunEnd) {
        let mut keys: Vec<Arc<str>> =
            self.sessions.iter().filter(|(_, s)| s.open.is_some()).map(|(k, _)| k.clone()).collect();
        keys.sort(); // deterministic output order
        for k in keys {
            if let Some(mut run) = self.sessions.get_mut(&k).and_then(|s| s.open.take()) {
                run.close(&self.cfg, end(), None, out);
                self.closed += 1;
            }
        }
    }
}

fn missing_result() -> RunEnd {
    RunEnd {
        status: RunStatus::Error,
        result_text: None,
        usage: None,
        error: Some("missing result".into()),
        duration_ms: None,
        extra: Vec::new(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Text,
    Thinking,
}

/// One open run.
#[derive(Debug)]
struct Run {
    id: Arc<RunId>,
    label: String,
    start: RunStart,
    announced: bool,
    /// Event time of the latest event (SPEC §1.1 rule 11).
    now: u64,
    /// Index of the current (or next) message.
    turn: u32,
    message_open: bool,
    block: Block,
    /// The current message holds cards: it ends with `toolUse` before more content.
    batch_open: bool,
    /// The current message has emitted text.
    msg_has_text: bool,
    /// A text boundary passed: the next text of this message starts after a blank line.
    separate_next_text: bool,
    dedupe: SegmentDedupe,
    /// All assistant text emitted in this run.
    emitted_text: String,
    calls: CallTable,
    cards: u32,
    /// UTF-16 units of this message's text, thinking and tool-call JSON (output estimate).
    msg_output_units: u64,
    /// Input estimate for the next message: the prompt (first message), then consumed tool results.
    pending_input_tokens: u64,
    totals: RunTotals,
}

impl Run {
    fn new(session: Arc<str>, seq: u32) -> Self {
        let label = run_label(&session, seq);
        Run {
            id: Arc::new(RunId { session, seq }),
            label,
            start: RunStart::default(),
            announced: false,
            now: 0,
            turn: 0,
            message_open: false,
            block: Block::None,
            batch_open: false,
            msg_has_text: false,
            separate_next_text: false,
            dedupe: SegmentDedupe::default(),
            emitted_text: String::new(),
            calls: CallTable::default(),
            cards: 0,
            msg_output_units: 0,
            pending_input_tokens: 0,
            totals: RunTotals::default(),
        }
    }

    fn emit(&self, out: &mut Vec<OutputEvent>, kind: Output) {
        out.push(OutputEvent { run: self.id.clone(), at_ms: self.now, kind });
    }

    /// Handle one event; returns true when the run closed.
    fn on_event(&mut self, cfg: &CoordinatorConfig, ev: InputEvent, out: &mut Vec<OutputEvent>) -> bool {
        if let Some(t) = ev.at_ms {
            // Event time never goes backwards within a run.
            self.now = self.now.max(t);
        }
        match ev.kind {
            Input::RunStarted(start) => {
                self.start = start;
                return false;
            }
            Input::UserPrompt { text } => {
                if self.announced {
                    // A second prompt echo within one run: keep it for the trace only.
                    self.diagnostic(out, "extra_user_prompt", &[]);
                } else {
                    self.pending_input_tokens = estimate_tokens(&text);
                    self.start.prompt = Some(text);
                }
                self.announce(out);
                return false;
            }
            _ => self.announce(out),
        }
        match ev.kind {
            Input::RunStarted(_) | Input::UserPrompt { .. } => {}
            Input::ThinkingDelta { text } => {
                if !text.is_empty() {
                    self.open_block(out, Block::Thinking);
                    self.msg_output_units += utf16_len(&text);
                    let turn = self.turn;
                    self.emit(out, Output::Thinking { turn, delta: text });
                }
            }
            Input::ThinkingCompleted { .. } => {
                if self.block == Block::Thinking {
                    self.end_block(out);
                }
            }
            Input::TextDelta { text } => {
                self.dedupe.on_delta(&text);
                self.emit_text(out, text);
            }
            Input::TextSegment { kind, text } => {
                let new = self.dedupe.on_segment(&text);
                if !new.is_empty() {
                    let new = new.to_owned();
                    self.emit_text(out, new);
                } else if !text.is_empty() {
                    self.diagnostic(
                        out,
                        "display_decision",
                        &[("action", "drop-repeated-segment"), ("segment", kind_str(kind))],
                    );
                }
            }
            Input::TextBoundary => {
                // The next text of this message starts after a blank line (SPEC §1.2); nothing
                // trails the last block, so a final answer has no trailing whitespace.
                self.separate_next_text = self.message_open && self.msg_has_text;
            }
            Input::ToolStarted(t) | Input::ToolPartial(t) => {
                let now = self.now;
                if !self.calls.start(&t, now) {
                    self.diagnostic(out, "display_decision", &[("action", "ignore-repeated-start")]);
                }
            }
            Input::ToolCompleted(t) => self.on_completed(cfg, *t, out),
            Input::ShellOutput { .. } | Input::TurnUsage(_) => {
                // Attribution and usage accounting belong to their own state machines.
            }
            Input::RunEnded(end) => {
                self.close(cfg, end, None, out);
                return true;
            }
            Input::Raw { what, value } => {
                let mut fields = serde_json::Map::new();
                fields.insert("what".into(), what.into());
                let v = serde_json::from_str(value.get()).unwrap_or(serde_json::Value::Null);
                fields.insert("value".into(), v);
                self.emit(out, Output::Diagnostic { phase: "raw".into(), fields });
            }
        }
        false
    }

    fn announce(&mut self, out: &mut Vec<OutputEvent>) {
        if !self.announced {
            self.announced = true;
            let s = &self.start;
            let kind = Output::RunOpened { cwd: s.cwd.clone(), model: s.model.clone(), prompt: s.prompt.clone() };
            self.emit(out, kind);
        }
    }

    fn diagnostic(&self, out: &mut Vec<OutputEvent>, phase: &str, fields: &[(&str, &str)]) {
        let fields = fields.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect();
        self.emit(out, Output::Diagnostic { phase: phase.into(), fields });
    }

    fn emit_text(&mut self, out: &mut Vec<OutputEvent>, mut text: String) {
        if text.is_empty() {
            return;
        }
        self.open_block(out, Block::Text);
        if std::mem::take(&mut self.separate_next_text) {
            text.insert_str(0, "\n\n");
        }
        self.msg_has_text = true;
        self.msg_output_units += utf16_len(&text);
        self.emitted_text.push_str(&text);
        let turn = self.turn;
        self.emit(out, Output::Text { turn, delta: text });
    }

    /// Make sure a message is open, not in a tool batch, with the given block current.
    fn open_block(&mut self, out: &mut Vec<OutputEvent>, block: Block) {
        if self.batch_open {
            self.end_message(out, StopReason::ToolUse, None);
        }
        if !self.message_open {
            self.message_open = true;
            let turn = self.turn;
            self.emit(out, Output::MessageStarted { turn });
        }
        if self.block != block {
            self.end_block(out);
            self.block = block;
        }
    }

    fn end_block(&mut self, out: &mut Vec<OutputEvent>) {
        if self.block != Block::None {
            self.block = Block::None;
            let turn = self.turn;
            self.emit(out, Output::BlockEnded { turn });
        }
    }

    fn end_message(&mut self, out: &mut Vec<OutputEvent>, stop_reason: StopReason, error: Option<String>) {
        self.end_block(out);
        let input = std::mem::take(&mut self.pending_input_tokens);
        let output = self.msg_output_units.div_ceil(4);
        self.msg_output_units = 0;
        let usage = Usage { input, output, total_tokens: input + output, ..Usage::default() };
        let turn = self.turn;
        self.emit(out, Output::MessageEnded { turn, stop_reason, usage, error });
        self.totals.messages += 1;
        self.message_open = false;
        self.batch_open = false;
        self.msg_has_text = false;
        self.separate_next_text = false;
        self.turn += 1;
    }

    fn on_completed(&mut self, cfg: &CoordinatorConfig, mut t: ToolEvent, out: &mut Vec<OutputEvent>) {
        let started = match self.calls.complete(&t) {
            Completion::Duplicate(why) => {
                self.diagnostic(out, "display_decision", &[("action", "drop-duplicate-completion"), ("reason", why)]);
                return;
            }
            Completion::Matched(s) => Some(s),
            Completion::Unmatched => None,
        };
        if let Some(s) = &started {
            // Completed fields win; missing ones fall back to the start (SPEC §1.1 rule 4).
            if t.args.is_none() {
                t.args = s.args.clone();
            }
            if t.started_at_ms.is_none() {
                t.started_at_ms = s.started_at_ms;
            }
        }
        // The card joins the current message as part of its tool batch.
        if !self.message_open {
            self.message_open = true;
            let turn = self.turn;
            self.emit(out, Output::MessageStarted { turn });
        }
        self.end_block(out);
        self.batch_open = true;
        self.cards += 1;
        let ctx = CardContext {
            scrubber: &cfg.scrubber,
            cwd: self.start.cwd.as_deref(),
            turn: self.turn,
            replay_id: format!("cursor-replay-{}-tool-{}", self.label, self.cards),
        };
        let card = build_card(&ctx, &t);
        self.msg_output_units += utf16_len(&card.args.to_string());
        self.pending_input_tokens += estimate_tokens(&card.content);
        self.totals.cards += 1;
        if card.is_error {
            self.totals.error_cards += 1;
        }
        self.emit(out, Output::Card(Box::new(card)));
    }

    /// End the run: close the tool batch, resolve incomplete calls, emit the final text, end the
    /// last message with the run's outcome and close the run. Called exactly once per run.
    fn close(&mut self, cfg: &CoordinatorConfig, end: RunEnd, at_ms: Option<u64>, out: &mut Vec<OutputEvent>) {
        if let Some(t) = at_ms {
            self.now = self.now.max(t);
        }
        self.announce(out);
        // Final text (SPEC §5.4): only what was not streamed already.
        if let Some(result) = end.result_text.as_deref().filter(|r| !r.trim().is_empty()) {
            if text::is_mismatch(&self.emitted_text, result) {
                self.diagnostic(out, "display_decision", &[("action", "keep-streamed-text-over-result")]);
            }
            let rest = text::new_part(&self.emitted_text, result).to_owned();
            self.emit_text(out, rest);
        }
        // Incomplete calls (SPEC §5.3).
        let reason = match end.status {
            RunStatus::Finished => IncompleteReason::NoCompletionAtRunEnd,
            RunStatus::Cancelled => IncompleteReason::Abort,
            RunStatus::Error => IncompleteReason::SdkFailure,
        };
        let text_produced = !self.emitted_text.trim().is_empty();
        for call in self.calls.drain_started() {
            let visible =
                !(reason == IncompleteReason::NoCompletionAtRunEnd && call.tool.is_fast_local() && text_produced);
            if self.batch_open && visible {
                // The incomplete card belongs with the final message, not the tool batch.
                self.end_message(out, StopReason::ToolUse, None);
            }
            if !self.message_open {
                self.message_open = true;
                let turn = self.turn;
                self.emit(out, Output::MessageStarted { turn });
            }
            self.totals.incomplete_calls += 1;
            let rec = IncompleteCall {
                call: call_ref(&call.call_id),
                source_tool: call.tool.clone(),
                title: call.tool.title().into_owned(),
                reason,
                visible,
            };
            if visible {
                self.end_block(out);
                self.cards += 1;
                let ctx = CardContext {
                    scrubber: &cfg.scrubber,
                    cwd: self.start.cwd.as_deref(),
                    turn: self.turn,
                    replay_id: format!("cursor-replay-{}-tool-{}", self.label, self.cards),
                };
                let card = incomplete_card(&ctx, &rec, call.args.as_ref());
                self.emit(out, Output::IncompleteCall(Box::new(rec)));
                self.emit(out, Output::Card(Box::new(card)));
            } else {
                self.emit(out, Output::IncompleteCall(Box::new(rec)));
            }
        }
        if self.batch_open {
            self.end_message(out, StopReason::ToolUse, None);
        }
        let (stop, error) = match end.status {
            RunStatus::Finished => (StopReason::Stop, None),
            RunStatus::Cancelled => (StopReason::Aborted, end.error.clone()),
            RunStatus::Error => {
                (StopReason::Error, Some(cfg.scrubber.scrub(end.error.as_deref().unwrap_or("run failed")).into_owned()))
            }
        };
        if !self.message_open {
            self.message_open = true;
            let turn = self.turn;
            self.emit(out, Output::MessageStarted { turn });
        }
        self.end_message(out, stop, error.clone());
        self.totals.reported_usage = end.usage;
        self.totals.duration_ms = end.duration_ms;
        let final_text = end.result_text.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| self.emitted_text.clone());
        let totals = std::mem::take(&mut self.totals);
        self.emit(out, Output::RunClosed { status: end.status, final_text, totals, error });
    }
}

fn kind_str(k: toolstream_schemas::SegmentKind) -> &'static str {
    match k {
        toolstream_schemas::SegmentKind::Consolidated => "consolidated",
        toolstream_schemas::SegmentKind::Final => "final",
    }
}

fn utf16_len(s: &str) -> u64 {
    s.chars().map(|c| c.len_utf16() as u64).sum()
}

#[cfg(test)]
mod tests;
