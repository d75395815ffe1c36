//! One open run's state machine: message and block boundaries, the tool batch and its timers,
//! text dedupe, the calls still running (as intake matched them), incomplete calls and the run's
//! close.

use std::borrow::Cow;
use std::sync::Arc;

use toolstream_schemas::ids::{call_ref, run_label};
use toolstream_schemas::pi_contract::REPLAY_ID_PREFIX;
use toolstream_schemas::{
    CallArgs, CallRef, Delta, DiagFields, IncompleteCall, IncompleteReason, Input, Output, OutputEvent, RunEnd, RunId,
    RunStart, RunStatus, RunTotals, SegmentKind, StopReason, Tool, ToolEvent, CANCELLED_MESSAGE,
};

use super::text::{RunText, SegmentDedupe};
use super::CoordinatorConfig;
use crate::item::{Item, RunOutput};
use crate::present::bounds::{THINKING_MAX_CHARS, THINKING_TRUNCATED_MARKER};
use crate::present::card::{build_card, incomplete_card, CardContext};
use crate::present::scrub::SecretStream;

/// Why a run is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CloseCause {
    /// Its source reported the end (`result`, `run.wait()`, a cancel).
    Reported,
    /// Its input ended (or a new run began) without the end being reported (SPEC §1.1 rule 10).
    StreamEnded,
}

/// How a call that never completed is shown (SPEC §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// An error card, in a tool-use message.
    ErrorCard,
    /// A thinking line `<title> did not complete: <text>`.
    ThinkingLine,
    /// Not at all: the debug trace only (a stale fast local start).
    TraceOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Text,
    Thinking,
}

/// The tool batch of the current message (SPEC §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    None,
    /// Cards completing until `until` join the batch.
    Settling {
        until: u64,
        usage_seen: bool,
    },
    /// Settled at `since`; the message waits for its turn's usage until `until` (brought forward
    /// to the next poll once the usage arrived).
    Waiting {
        since: u64,
        until: u64,
    },
}

/// A call that started in this run and has not completed.
#[derive(Debug)]
struct Started {
    /// The call's key (intake's identity).
    key: u64,
    call: CallRef,
    tool: Tool,
    args: Option<Arc<CallArgs>>,
}

/// One open run.
#[derive(Debug)]
pub(super) struct Run {
    id: Arc<RunId>,
    label: String,
    start: RunStart,
    announced: bool,
    /// Event time (SPEC §1.1 rule 11): never goes backwards.
    now: u64,
    /// Index of the current (or next) message.
    turn: u32,
    message_open: bool,
    block: Block,
    batch: Batch,
    /// The current message has emitted text.
    msg_has_text: bool,
    /// A text boundary passed: the next text of this message starts after a blank line.
    separate_next_text: bool,
    /// Thinking chars of this message (bounded, SPEC §8).
    thinking_chars: usize,
    dedupe: SegmentDedupe,
    /// Digest of all assistant text emitted in this run (bounded: the text went to the sinks).
    emitted_text: RunText,
    /// Assistant text and thinking on their way out: a secret the engine knows exactly is removed
    /// even when split across deltas (SPEC §8); a possible start of one waits for the next delta
    /// or the end of its block.
    outgoing: SecretStream,
    /// Calls started and not completed, in start order (matched by intake: known by key).
    started: Vec<Started>,
    cards: u32,
    totals: RunTotals,
}

impl Run {
    pub(super) fn new(session: Arc<str>, seq: u32, now: u64, outgoing: SecretStream) -> Self {
        let label = run_label(&session, seq);
        Run {
            id: Arc::new(RunId { session, seq }),
            label,
            start: RunStart::default(),
            announced: false,
            now,
            turn: 0,
            message_open: false,
            block: Block::None,
            batch: Batch::None,
            msg_has_text: false,
            separate_next_text: false,
            thinking_chars: 0,
            dedupe: SegmentDedupe::default(),
            emitted_text: RunText::default(),
            outgoing,
            started: Vec::new(),
            cards: 0,
            totals: RunTotals::default(),
        }
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        match self.batch {
            Batch::None => None,
            Batch::Settling { until, .. } | Batch::Waiting { until, .. } => Some(until),
        }
    }

    fn emit(&self, out: &mut Vec<RunOutput>, kind: Output) {
        out.push(OutputEvent { run: self.id.clone(), at_ms: self.now, kind }.into());
    }

    /// Fire the batch timers due before `t` (also those due at `t` when `inclusive`: a tick at `t`
    /// means `t` has passed; an event at `t` comes before timers due at `t`, SPEC §2), then move
    /// event time to `t`.
    pub(super) fn advance(&mut self, cfg: &CoordinatorConfig, t: u64, inclusive: bool, out: &mut Vec<RunOutput>) {
        let due = |until: u64| until < t || (inclusive && until == t);
        loop {
            match self.batch {
                Batch::Settling { until, usage_seen } if due(until) => {
                    self.now = self.now.max(until);
                    tracing::debug!(run = %self.label, at_ms = until, usage_seen, "tool batch settled");
                    if usage_seen || cfg.usage_wait_ms == 0 {
                        self.end_message(out, StopReason::ToolUse, None);
                    } else {
                        self.batch = Batch::Waiting { since: until, until: until + cfg.usage_wait_ms };
                    }
                }
                Batch::Waiting { until, .. } if due(until) => {
                    self.now = self.now.max(until);
                    tracing::debug!(run = %self.label, at_ms = until, "usage wait over: the tool-use message ends without its turn usage");
                    self.end_message(out, StopReason::ToolUse, None);
                }
                _ => break,
            }
        }
        self.now = self.now.max(t);
    }

    /// Handle an item other than an input event (lines and diagnostics of earlier stages).
    pub(super) fn on_item(&mut self, item: Item, out: &mut Vec<RunOutput>) {
        self.announce(out);
        if matches!(item, Item::Lifecycle(_) | Item::ShellProgress { .. }) {
            // What was held back of the text before it goes first.
            self.flush_outgoing(out);
        }
        match item {
            Item::Lifecycle(line) => {
                // Thinking content of the current message (SPEC §6); sinks show it as such.
                self.open_block(out, Block::Thinking);
                self.emit(out, Output::LifecycleLine { call: line.call, title: line.title, label: line.text });
            }
            Item::ShellProgress { line, stream } => {
                self.emit(out, Output::ShellProgress { call: line.call, stream, line: line.text });
            }
            Item::Diagnostic { phase, fields, .. } => {
                self.emit(out, Output::Diagnostic { phase: phase.into(), fields });
            }
            // Routed elsewhere by the coordinator.
            Item::Input(_) | Item::Tick(_) | Item::SourceFailed(_) | Item::EndOfSource | Item::Cancel => {}
        }
    }

    /// Handle what one input event reports; returns true when the run closed.
    pub(super) fn on_input(&mut self, cfg: &CoordinatorConfig, kind: Input, out: &mut Vec<RunOutput>) -> bool {
        match kind {
            Input::RunStarted(mut start) => {
                self.unknown_fields(cfg, out, "run-started", std::mem::take(&mut start.extra));
                self.start = *start;
                return false;
            }
            Input::UserPrompt { text } => {
                if self.announced {
                    // A second prompt echo within one run: keep it for the trace only.
                    self.diagnostic(out, "display_decision", &[("action", "ignore-extra-user-prompt")]);
                } else {
                    // Users paste secrets into prompts too: every sink gets it scrubbed.
                    self.start.prompt = Some(cfg.scrubber.scrub(&text).into_owned());
                }
                self.announce(out);
                return false;
            }
            _ => self.announce(out),
        }
        match kind {
            Input::RunStarted(_) | Input::UserPrompt { .. } => {}
            Input::ThinkingDelta { text } => self.emit_thinking(out, text),
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
                    let new = Delta::from(new);
                    // A segment's new text is a piece of its own (a result may be just that piece).
                    self.emitted_text.mark();
                    self.emit_text(out, new);
                } else if !text.is_empty() {
                    let segment = match kind {
                        SegmentKind::Consolidated => "consolidated",
                        SegmentKind::Final => "final",
                    };
                    self.diagnostic(
                        out,
                        "display_decision",
                        &[("action", "drop-repeated-segment"), ("segment", segment)],
                    );
                }
            }
            Input::TextBoundary => {
                // The next text of this message starts after a blank line (SPEC §1.2); nothing
                // trails the last block, so a final answer has no trailing whitespace.
                self.separate_next_text = self.message_open && self.msg_has_text;
            }
            Input::ToolStarted(mut t) | Input::ToolPartial(mut t) => {
                self.unknown_fields(cfg, out, "tool", std::mem::take(&mut t.extra));
                let t = *t;
                if let Some(s) = self.started.iter_mut().find(|s| s.key == t.call.key) {
                    // A repeated report of a running call: its args may have filled in.
                    if t.args.is_some() {
                        s.tool = t.tool;
                        s.args = t.args;
                    }
                } else {
                    let hash = &t.call.call_ref.hash;
                    self.diagnostic(out, "tool_started", &[("toolName", t.tool.name()), ("callIdHash", hash)]);
                    self.started.push(Started { key: t.call.key, call: t.call.call_ref, tool: t.tool, args: t.args });
                }
            }
            Input::ToolCompleted(mut t) => {
                self.unknown_fields(cfg, out, "tool", std::mem::take(&mut t.extra));
                if let Some(reported) = t.reported_call_id.take() {
                    // Matched by `(tool, args)` to a start reported under another id: traced with
                    // both ids hashed (SPEC §9.3), never raw.
                    let hash = &t.call.call_ref.hash;
                    let mut fields = vec![("action", "match-completion-by-fingerprint"), ("callIdHash", hash.as_str())];
                    let reported = (!reported.is_empty()).then(|| call_ref(&reported).hash);
                    if let Some(r) = &reported {
                        fields.push(("reportedCallIdHash", r));
                    }
                    self.diagnostic(out, "display_decision", &fields);
                }
                if let Some(r) = t.result.as_mut() {
                    self.unknown_fields(cfg, out, "tool-result", std::mem::take(&mut r.extra));
                }
                self.on_completed(cfg, *t, out)
            }
            Input::ShellOutput { .. } => {
                // Attributed (or not) by the shell stage before this one.
            }
            Input::TurnUsage(usage) => {
                // Attributed by the usage stage after this one; here it only ends the wait.
                out.push(RunOutput::TurnUsage { run: self.id.clone(), at_ms: self.now, usage });
                match self.batch {
                    Batch::Settling { until, .. } => self.batch = Batch::Settling { until, usage_seen: true },
                    Batch::Waiting { since, until } => {
                        // Polled every `usage_poll_ms`: the wait ends at the first poll from now.
                        let poll = cfg.usage_poll_ms.max(1);
                        let next_poll = since + (self.now - since).div_ceil(poll) * poll;
                        self.batch = Batch::Waiting { since, until: until.min(next_poll) };
                        let now = self.now;
                        self.advance(cfg, now, true, out);
                    }
                    Batch::None => {}
                }
            }
            Input::RunEnded(mut end) => {
                self.unknown_fields(cfg, out, "run-ended", std::mem::take(&mut end.extra));
                self.close(cfg, *end, CloseCause::Reported, out);
                return true;
            }
            Input::Raw { what, value } => {
                let mut fields = DiagFields::new();
                fields.insert("what", what);
                let mut v = serde_json::from_str(value.get()).unwrap_or(serde_json::Value::Null);
                cfg.scrubber.scrub_json(&mut v);
                fields.insert("raw", v);
                self.emit(out, Output::Diagnostic { phase: "raw".into(), fields });
            }
        }
        false
    }

    /// Fields a source did not recognise reach the trace (SPEC §1: nothing read is dropped).
    fn unknown_fields(
        &self,
        cfg: &CoordinatorConfig,
        out: &mut Vec<RunOutput>,
        what: &str,
        fields: toolstream_schemas::UnknownFields,
    ) {
        if fields.is_empty() {
            return;
        }
        let mut raw = serde_json::Map::new();
        for (k, v) in fields {
            raw.insert(k, serde_json::from_str(v.get()).unwrap_or(serde_json::Value::Null));
        }
        let mut raw = serde_json::Value::Object(raw);
        cfg.scrubber.scrub_json(&mut raw);
        let mut f = DiagFields::new();
        f.insert("what", format!("unknown-fields:{what}"));
        f.insert("raw", raw);
        self.emit(out, Output::Diagnostic { phase: "raw".into(), fields: f });
    }

    fn announce(&mut self, out: &mut Vec<RunOutput>) {
        if !self.announced {
            self.announced = true;
            let s = &self.start;
            tracing::debug!(run = %self.label, at_ms = self.now, model = ?s.model, "run opened");
            let kind = Output::RunOpened {
                cwd: s.cwd.clone(),
                model: s.model.clone(),
                prompt: s.prompt.clone(),
                context: s.context.clone(),
            };
            self.emit(out, kind);
        }
    }

    fn diagnostic(&self, out: &mut Vec<RunOutput>, phase: &'static str, fields: &[(&'static str, &str)]) {
        let fields = fields.iter().copied().collect();
        self.emit(out, Output::Diagnostic { phase: phase.into(), fields });
    }

    fn emit_thinking(&mut self, out: &mut Vec<RunOutput>, mut text: Delta) {
        if text.is_empty() || self.thinking_chars > THINKING_MAX_CHARS {
            return;
        }
        self.open_block(out, Block::Thinking);
        // SPEC §8: a message's thinking trace stops at 50,000 chars, with one marker.
        let n = text.chars().count();
        if self.thinking_chars + n > THINKING_MAX_CHARS {
            let keep = THINKING_MAX_CHARS - self.thinking_chars;
            if let Some((i, _)) = text.char_indices().nth(keep) {
                text.truncate(i);
            }
            text.push('\n');
            text.push_str(THINKING_TRUNCATED_MARKER);
            self.thinking_chars = THINKING_MAX_CHARS + 1;
        } else {
            self.thinking_chars += n;
        }
        let delta = self.outgoing.push(text);
        if !delta.is_empty() {
            let turn = self.turn;
            self.emit(out, Output::Thinking { turn, delta });
        }
    }

    fn emit_text(&mut self, out: &mut Vec<RunOutput>, mut text: Delta) {
        if text.is_empty() {
            return;
        }
        let new_piece = self.block != Block::Text || self.separate_next_text || !self.message_open;
        self.open_block(out, Block::Text);
        if std::mem::take(&mut self.separate_next_text) {
            text.insert_str(0, "\n\n");
        }
        self.msg_has_text = true;
        if new_piece {
            self.emitted_text.mark();
        }
        self.emitted_text.push(&text);
        let delta = self.outgoing.push(text);
        if !delta.is_empty() {
            let turn = self.turn;
            self.emit(out, Output::Text { turn, delta });
        }
    }

    /// Pass on what the current block held back (it did not become a known secret).
    fn flush_outgoing(&mut self, out: &mut Vec<RunOutput>) {
        let delta = self.outgoing.flush();
        if delta.is_empty() {
            return;
        }
        let turn = self.turn;
        let kind = match self.block {
            Block::Thinking => Output::Thinking { turn, delta },
            Block::Text | Block::None => Output::Text { turn, delta },
        };
        self.emit(out, kind);
    }

    fn open_message(&mut self, out: &mut Vec<RunOutput>) {
        if !self.message_open {
            self.message_open = true;
            let turn = self.turn;
            self.emit(out, Output::MessageStarted { turn });
        }
    }

    /// Make sure a message is open, not in a tool batch, with the given block current.
    fn open_block(&mut self, out: &mut Vec<RunOutput>, block: Block) {
        if self.batch != Batch::None {
            // Text or thinking after cards: the tool-use message ends first.
            self.end_message(out, StopReason::ToolUse, None);
        }
        self.open_message(out);
        if self.block != block {
            self.end_block(out);
            self.block = block;
        }
    }

    fn end_block(&mut self, out: &mut Vec<RunOutput>) {
        self.flush_outgoing(out);
        if self.block != Block::None {
            self.block = Block::None;
            let turn = self.turn;
            self.emit(out, Output::BlockEnded { turn });
        }
    }

    /// End the current message. Its usage is filled in by the usage stage.
    fn end_message(&mut self, out: &mut Vec<RunOutput>, stop_reason: StopReason, error: Option<String>) {
        self.end_block(out);
        let turn = self.turn;
        self.emit(out, Output::MessageEnded { turn, stop_reason, usage: Box::default(), error });
        self.totals.messages += 1;
        self.message_open = false;
        self.batch = Batch::None;
        self.msg_has_text = false;
        self.separate_next_text = false;
        self.thinking_chars = 0;
        self.turn += 1;
    }

    fn card_context<'a>(&'a self, cfg: &'a CoordinatorConfig) -> CardContext<'a> {
        CardContext {
            scrubber: &cfg.scrubber,
            cwd: self.start.cwd.as_deref(),
            turn: self.turn,
            replay_id: replay_id(&self.label, self.cards),
            keep_recorded: cfg.keep_recorded,
            compact: cfg.compact,
        }
    }

    fn on_completed(&mut self, cfg: &CoordinatorConfig, t: ToolEvent, out: &mut Vec<RunOutput>) {
        // Intake matched it (and filled in what the start had): it is no longer running.
        self.started.retain(|s| s.key != t.call.key);
        // A card joins the open batch while it settles; after that it opens the next message.
        if let Batch::Waiting { .. } = self.batch {
            self.end_message(out, StopReason::ToolUse, None);
        }
        self.open_message(out);
        self.end_block(out);
        if self.batch == Batch::None {
            self.batch = Batch::Settling { until: self.now + cfg.batch_settle_ms, usage_seen: false };
        }
        self.cards += 1;
        let card = build_card(self.card_context(cfg), &t);
        self.totals.cards += 1;
        if card.is_error {
            self.totals.error_cards += 1;
        }
        self.emit(out, Output::Card(Box::new(card)));
    }

    /// End the run: close the tool batch, emit the final text, resolve incomplete calls, end the
    /// last message with the run's outcome and close the run. Called exactly once per run.
    pub(super) fn close(&mut self, cfg: &CoordinatorConfig, end: RunEnd, cause: CloseCause, out: &mut Vec<RunOutput>) {
        self.announce(out);
        let reason = match (end.status, cause) {
            (_, CloseCause::StreamEnded) => IncompleteReason::StreamEnded,
            (RunStatus::Finished, CloseCause::Reported) => IncompleteReason::NoCompletionAtRunEnd,
            (RunStatus::Cancelled, CloseCause::Reported) => IncompleteReason::Abort,
            (RunStatus::Error, CloseCause::Reported) => IncompleteReason::SdkFailure,
        };
        // The final text (SPEC §5.4), emitted after the cards: only what was not streamed already.
        // A failed run's result text is its error message, not assistant text.
        let result = end.result_text.as_deref().filter(|r| !r.trim().is_empty() && end.status == RunStatus::Finished);
        let final_rest = result.map(|r| self.emitted_text.new_part(r).to_owned()).unwrap_or_default();
        let text_produced = self.emitted_text.has_non_ws() || !final_rest.trim().is_empty();
        // Incomplete calls (SPEC §5.3), shown by how the run ended. Error cards join the tool batch
        // so that, like every card, they end a tool-use message (pi answers tool calls only
        // there); thinking lines go into the run's last message, after any batch.
        let mut lines = Vec::new();
        for call in std::mem::take(&mut self.started) {
            let shown = match end.status {
                RunStatus::Finished if text_produced && call.tool.is_fast_local() => Shown::TraceOnly,
                RunStatus::Finished if text_produced => Shown::ThinkingLine,
                // After an abort pi must not be asked to run anything: never a card.
                RunStatus::Cancelled => Shown::ThinkingLine,
                RunStatus::Finished | RunStatus::Error => Shown::ErrorCard,
            };
            self.totals.incomplete_calls += 1;
            let rec = IncompleteCall {
                call: call.call,
                source_tool: call.tool.clone(),
                title: call.tool.title().into_owned(),
                reason,
                visible: shown != Shown::TraceOnly,
            };
            match shown {
                Shown::ErrorCard => {
                    self.open_message(out);
                    self.end_block(out);
                    if self.batch == Batch::None {
                        self.batch = Batch::Settling { until: self.now, usage_seen: true };
                    }
                    self.cards += 1;
                    let card = incomplete_card(self.card_context(cfg), &rec, call.args.as_deref());
                    self.emit(out, Output::IncompleteCall(Box::new(rec)));
                    self.emit(out, Output::Card(Box::new(card)));
                }
                Shown::ThinkingLine => lines.push(rec),
                Shown::TraceOnly => {
                    self.open_message(out);
                    self.emit(out, Output::IncompleteCall(Box::new(rec)));
                }
            }
        }
        if self.batch != Batch::None {
            self.end_message(out, StopReason::ToolUse, None);
        }
        for rec in lines {
            let line = format!("{} did not complete: {}\n", rec.title, rec.reason.text());
            self.open_message(out);
            self.emit(out, Output::IncompleteCall(Box::new(rec)));
            self.emit_thinking(out, line.into());
        }
        if result.is_some_and(|r| self.emitted_text.is_mismatch(r)) {
            self.diagnostic(out, "display_decision", &[("action", "keep-streamed-text-over-result")]);
        }
        self.emit_text(out, final_rest.into());
        let (stop, error) = match end.status {
            RunStatus::Finished => (StopReason::Stop, None),
            RunStatus::Cancelled => (StopReason::Aborted, Some(CANCELLED_MESSAGE.to_owned())),
            RunStatus::Error => {
                (StopReason::Error, Some(cfg.scrubber.scrub(end.error.as_deref().unwrap_or("run failed")).into_owned()))
            }
        };
        self.open_message(out);
        self.end_message(out, stop, error.clone());
        self.totals.reported_usage = end.usage;
        self.totals.duration_ms = end.duration_ms;
        self.totals.incomplete = end.incomplete || cause == CloseCause::StreamEnded;
        // The streamed text is not kept (it went to the sinks as it came): without a result, none.
        let mut final_text =
            end.result_text.filter(|r| !r.trim().is_empty() && end.status == RunStatus::Finished).unwrap_or_default();
        if let Cow::Owned(scrubbed) = cfg.scrubber.scrub_known(&final_text) {
            final_text = scrubbed;
        }
        let totals = std::mem::take(&mut self.totals);
        tracing::debug!(
            run = %self.label,
            at_ms = self.now,
            status = end.status.as_str(),
            messages = totals.messages,
            cards = totals.cards,
            incomplete = totals.incomplete_calls,
            "run closed"
        );
        self.emit(out, Output::RunClosed { status: end.status, final_text, totals: Box::new(totals), error });
    }
}

/// `cursor-replay-<run>-tool-<k>`, written into a string of its size (a `format!` grows its
/// string as it goes; this runs once per card).
fn replay_id(run_label: &str, card: u32) -> String {
    use std::fmt::Write as _;
    const TOOL: &str = "-tool-";
    let mut id = String::with_capacity(REPLAY_ID_PREFIX.len() + run_label.len() + TOOL.len() + 10);
    id.push_str(REPLAY_ID_PREFIX);
    id.push_str(run_label);
    id.push_str(TOOL);
    let _ = write!(id, "{card}");
    id
}
