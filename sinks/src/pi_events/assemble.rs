//! Output events → pi assistant messages and tool results, shared by the pi live-events sink and
//! the pi session sink so both deliver exactly the same messages.
//!
//! Per run: `MessageStarted … MessageEnded` is one assistant message. `Text` deltas form text
//! blocks, `Thinking` deltas and lifecycle lines (as `"<title>: <label>\n"`) form thinking
//! blocks, `BlockEnded` closes the open block, and each `Card` becomes one `toolCall` block
//! (id = the card's replay id, name = its pi tool, arguments = its display arguments, which the
//! card builder already fitted to that tool's schema) plus the `toolResult` message that answers
//! it (the card's result text, details and error flag).
//!
//! pi only pairs tool calls with results when they end a `toolUse` message: its agent loop never
//! runs the tools of an `error`/`aborted` message, and its provider context drops such a message
//! while keeping any results that follow it. So tool calls always end a `toolUse` message here:
//! when a message holding cards ends with another reason (the incomplete-call cards the run
//! emits into its last message, SPEC §5.3), or when text or thinking would follow a card in the
//! same message, the message is split — a `toolUse` message carrying everything so far (usage
//! zero) and its tool results, then a new message that carries the rest, the engine's usage and
//! the real stop reason. Every tool call therefore has exactly one tool result, right after its
//! message, and the token totals are unchanged.

use std::sync::Arc;

use super::display::{neutral_args, trace_text, Shown, ToolDisplay, NEUTRAL_TOOL};
use super::wire::{
    stop_reason_name, AssistantMessage, ContentBlock, PiUsage, TextContent, ToolCall, ToolResultMessage, UNKNOWN_MODEL,
};
use serde_json::Value;
use toolstream_schemas::by_arc::ByArc;
use toolstream_schemas::{
    Card, CardDetails, Output, OutputEvent, RunId, RunStatus, StopReason, Usage, CANCELLED_MESSAGE,
};

/// Which kind of streaming block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    Thinking,
}

/// What the assembler produced from one output event, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A run opened. `at` is its event time (0 when the source had none yet).
    RunOpened {
        cwd: Option<String>,
        model: String,
        prompt: Option<String>,
        at: u64,
    },
    /// An assistant message starts; the message as it starts (no content yet).
    Start(AssistantMessage),
    BlockStart {
        kind: BlockKind,
        index: usize,
    },
    BlockDelta {
        kind: BlockKind,
        index: usize,
        delta: String,
    },
    BlockEnd {
        kind: BlockKind,
        index: usize,
        content: String,
    },
    /// A complete `toolCall` block at `index`.
    ToolCall {
        index: usize,
        call: ToolCall,
    },
    /// The message is complete; `at` is when it ended.
    End {
        message: AssistantMessage,
        at: u64,
    },
    /// The results of the `toolUse` message that just ended, one per replayed tool call, in
    /// order; `bridged` names its tool calls that pi runs for real (the pi tool bridge, SPEC §7):
    /// their results come from pi.
    ToolResults {
        results: Vec<ToolResultMessage>,
        bridged: Vec<String>,
        at: u64,
    },
    /// The run closed (every message of it has ended).
    RunClosed {
        at: u64,
    },
}

impl Step {
    /// Roughly how many bytes of memory this step holds (its strings and JSON values plus a fixed
    /// cost per step and per block): what a queue of steps is bounded by. Linear in the step,
    /// allocates nothing.
    pub fn held_bytes(&self) -> usize {
        const STEP: usize = std::mem::size_of::<Step>();
        STEP + match self {
            Step::RunOpened { cwd, model, prompt, .. } => {
                model.len() + cwd.as_ref().map_or(0, String::len) + prompt.as_ref().map_or(0, String::len)
            }
            Step::Start(m) | Step::End { message: m, .. } => message_bytes(m),
            Step::BlockStart { .. } | Step::RunClosed { .. } => 0,
            Step::BlockDelta { delta: s, .. } | Step::BlockEnd { content: s, .. } => s.len(),
            Step::ToolCall { call, .. } => call.id.len() + call.name.len() + json_bytes(&call.arguments),
            Step::ToolResults { results, bridged, .. } => {
                bridged.iter().map(|id| STEP + id.len()).sum::<usize>()
                    + results
                        .iter()
                        .map(|r| {
                            STEP + r.tool_call_id.len()
                                + r.tool_name.len()
                                + r.content.iter().map(|c| c.text.len()).sum::<usize>()
                                + r.details.as_deref().map_or(0, details_bytes)
                        })
                        .sum::<usize>()
            }
        }
    }
}

fn message_bytes(m: &AssistantMessage) -> usize {
    let blocks: usize = m
        .content
        .iter()
        .map(|b| {
            std::mem::size_of::<ContentBlock>()
                + match b {
                    ContentBlock::Text { text: s } | ContentBlock::Thinking { thinking: s } => s.len(),
                    ContentBlock::ToolCall(c) => c.id.len() + c.name.len() + json_bytes(&c.arguments),
                }
        })
        .sum();
    blocks + m.model.len() + m.error_message.as_ref().map_or(0, String::len)
}

/// The strings of a JSON value plus a fixed cost per node.
/// A card's details: its strings (shared with the card, which may be gone before the step is).
fn details_bytes(d: &CardDetails) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    std::mem::size_of::<CardDetails>()
        + [&d.content, &d.diff, &d.header, &d.image_path, &d.path, &d.summary].map(opt).iter().sum::<usize>()
        + d.openai_tool_call.as_ref().map_or(0, json_bytes)
        + d.source_tool_name.len()
        + d.title.len()
        + d.status.as_ref().map_or(0, |s| s.as_str().len())
}

fn json_bytes(v: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    NODE + match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(json_bytes).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + json_bytes(v)).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// The message being built.
#[derive(Debug)]
struct Building {
    message: AssistantMessage,
    open: Option<(BlockKind, usize)>,
    results: Vec<ToolResultMessage>,
    /// Tool calls of this message that pi runs for real (bridged), in order.
    bridged: Vec<String>,
    /// Usage of `toolUse` turns folded into this message because none of their cards became a
    /// tool call (they were shown as traces): pi would end its loop at a `toolUse` message
    /// without tool calls, so the message goes on instead, and counts their tokens.
    carried: Usage,
}

#[derive(Debug)]
struct RunState {
    /// The model its messages carry.
    model: String,
    /// The model Cursor reported, when `model` is the requested id instead.
    response_model: Option<String>,
    /// The run's Cursor chat (`session_id`), when it has one.
    chat: Option<String>,
    /// Last event time seen in this run that was not 0.
    last_at: u64,
    current: Option<Building>,
}

/// Builds pi messages for any number of interleaved runs.
#[derive(Debug, Default)]
pub struct Assembler {
    /// Whether to produce block-level steps (`BlockStart/Delta/End`, `ToolCall`); sinks that only
    /// need whole messages turn them off.
    streaming: bool,
    /// Which cards become tool calls (the rest become thinking traces).
    display: ToolDisplay,
    /// The model id the client asked for (pi's model), put in `model` with Cursor's own name in
    /// `responseModel`; without it messages carry Cursor's name.
    requested_model: Option<String>,
    runs: ByArc<RunId, RunState>,
}

impl Assembler {
    pub fn new(streaming: bool) -> Self {
        Self::with_display(streaming, ToolDisplay::all())
    }

    /// An assembler that shows cards as `display` says.
    pub fn with_display(streaming: bool, display: ToolDisplay) -> Self {
        Assembler { streaming, display, requested_model: None, runs: ByArc::default() }
    }

    /// Messages carry `model` (the id the client asked for), Cursor's name in `responseModel`.
    pub fn with_requested_model(mut self, model: Option<String>) -> Self {
        self.requested_model = model.filter(|m| !m.trim().is_empty());
        self
    }

    /// A pi tool call that Cursor asked for through the pi tool bridge (SPEC §7): the open message
    /// of `run` ends with it as a `toolUse` message (with any replayed calls it holds), and pi
    /// runs the tool for real; its result goes back to Cursor, not into this stream. The next
    /// message continues the run.
    pub fn bridge_call(&mut self, run: &Arc<RunId>, id: &str, name: &str, arguments: Value, out: &mut Vec<Step>) {
        let streaming = self.streaming;
        let Some(state) = self.runs.get_mut(run) else { return };
        let at = state.last_at;
        let b = state.current(at, out);
        b.close_block(streaming, out);
        let call = ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: object(&arguments) };
        let index = b.message.content.len();
        b.message.content.push(ContentBlock::ToolCall(call.clone()));
        b.bridged.push(id.to_owned());
        if streaming {
            out.push(Step::ToolCall { index, call });
        }
        state.finish(streaming, StopReason::ToolUse, &Usage::default(), None, at, out);
    }

    /// Feed one output event; steps are appended to `out`.
    pub fn push(&mut self, ev: &OutputEvent, out: &mut Vec<Step>) {
        let streaming = self.streaming;
        if let Output::RunOpened { cwd, model, prompt, .. } = &ev.kind {
            let model = model.as_deref().filter(|m| !m.trim().is_empty()).unwrap_or(UNKNOWN_MODEL).to_owned();
            let (carried, response_model) = match &self.requested_model {
                Some(requested) => (requested.clone(), Some(model.clone())),
                None => (model.clone(), None),
            };
            let chat = Some(ev.run.session.to_string()).filter(|s| !s.is_empty());
            self.runs
                .insert(&ev.run, RunState { model: carried, response_model, chat, last_at: ev.at_ms, current: None });
            out.push(Step::RunOpened { cwd: cwd.clone(), model, prompt: prompt.clone(), at: ev.at_ms });
            return;
        }
        if matches!(ev.kind, Output::Diagnostic { .. } | Output::ShellProgress { .. }) {
            return;
        }
        // Looked up by reference: the run's `Arc` is cloned only for a run first seen here.
        let requested_model = &self.requested_model;
        let run = self.runs.state_of(&ev.run, || RunState {
            model: requested_model.clone().unwrap_or_else(|| UNKNOWN_MODEL.to_owned()),
            response_model: None,
            chat: Some(ev.run.session.to_string()).filter(|s| !s.is_empty()),
            last_at: 0,
            current: None,
        });
        if ev.at_ms > 0 {
            run.last_at = ev.at_ms;
        }
        let at = run.last_at;
        match &ev.kind {
            Output::MessageStarted { .. } => {
                if run.current.is_none() {
                    run.start(at, out);
                }
            }
            Output::Text { delta, .. } => run.append(streaming, BlockKind::Text, delta, at, out),
            Output::Thinking { delta, .. } => run.append(streaming, BlockKind::Thinking, delta, at, out),
            Output::LifecycleLine { title, label, .. } => {
                run.append(streaming, BlockKind::Thinking, &format!("{title}: {label}\n"), at, out);
            }
            Output::BlockEnded { .. } => {
                if let Some(b) = run.current.as_mut() {
                    b.close_block(streaming, out);
                }
            }
            Output::Card(card) => match self.display.shown(&card.pi_tool) {
                Shown::Tool => run.card(streaming, card, None, at, out),
                Shown::Neutral => run.card(streaming, card, Some(neutral_args(card)), at, out),
                Shown::Trace => run.trace(streaming, card, at, out),
            },
            Output::MessageEnded { stop_reason, usage, error, .. } => {
                run.end(streaming, *stop_reason, usage, error.as_deref(), at, out);
            }
            Output::RunClosed { status, error, .. } => {
                if run.current.is_some() {
                    // Never expected (every message ends before its run closes); end it anyway.
                    let reason = match status {
                        RunStatus::Finished => StopReason::Stop,
                        RunStatus::Error => StopReason::Error,
                        RunStatus::Cancelled => StopReason::Aborted,
                    };
                    run.end(streaming, reason, &Usage::default(), error.as_deref(), at, out);
                }
                self.runs.remove(&ev.run);
                out.push(Step::RunClosed { at });
            }
            Output::IncompleteCall(_) => {
                // A visible incomplete call is followed by its card; nothing else to show.
            }
            Output::RunOpened { .. } | Output::Diagnostic { .. } | Output::ShellProgress { .. } => {}
        }
    }
}

impl RunState {
    fn start(&mut self, at: u64, out: &mut Vec<Step>) {
        self.current = None;
        self.current(at, out);
    }

    /// The message being built, started first when none is.
    fn current(&mut self, at: u64, out: &mut Vec<Step>) -> &mut Building {
        let (model, response_model, chat) = (&self.model, &self.response_model, &self.chat);
        self.current.get_or_insert_with(|| {
            let mut message = AssistantMessage::empty(model, at);
            message.response_model = response_model.clone();
            message.response_id = chat.clone();
            out.push(Step::Start(message.clone()));
            Building { message, open: None, results: Vec::new(), bridged: Vec::new(), carried: Usage::default() }
        })
    }

    fn append(&mut self, streaming: bool, kind: BlockKind, delta: &str, at: u64, out: &mut Vec<Step>) {
        if delta.is_empty() {
            return;
        }
        if self.current.as_ref().is_some_and(|b| !b.results.is_empty()) {
            // Text after a card: the tool calls end their own `toolUse` message first.
            self.split(streaming, at, out);
        }
        let b = self.current(at, out);
        if b.open.map(|(k, _)| k) != Some(kind) {
            b.close_block(streaming, out);
            let index = b.message.content.len();
            b.message.content.push(match kind {
                BlockKind::Text => ContentBlock::Text { text: String::new() },
                BlockKind::Thinking => ContentBlock::Thinking { thinking: String::new() },
            });
            b.open = Some((kind, index));
            if streaming {
                out.push(Step::BlockStart { kind, index });
            }
        }
        let Some((_, index)) = b.open else { return };
        match b.message.content.get_mut(index) {
            Some(ContentBlock::Text { text: s } | ContentBlock::Thinking { thinking: s }) => s.push_str(delta),
            _ => return,
        }
        if streaming {
            out.push(Step::BlockDelta { kind, index, delta: delta.to_owned() });
        }
    }

    /// A card as a thinking trace, on lines of its own.
    fn trace(&mut self, streaming: bool, card: &Card, at: u64, out: &mut Vec<Step>) {
        let text = trace_text(card);
        let mid_line = self.current.as_ref().is_some_and(|b| match (b.open, b.results.is_empty()) {
            (Some((BlockKind::Thinking, i)), true) => {
                matches!(b.message.content.get(i), Some(ContentBlock::Thinking { thinking }) if !thinking.is_empty() && !thinking.ends_with('\n'))
            }
            _ => false,
        });
        let text = if mid_line { format!("\n{text}") } else { text };
        self.append(streaming, BlockKind::Thinking, &text, at, out);
    }

    /// A card as a tool call: of its own tool, or of the neutral tool with `neutral` arguments.
    fn card(&mut self, streaming: bool, card: &Card, neutral: Option<Value>, at: u64, out: &mut Vec<Step>) {
        let b = self.current(at, out);
        b.close_block(streaming, out);
        let call = match neutral {
            Some(args) => ToolCall { id: card.replay_id.clone(), name: NEUTRAL_TOOL.to_owned(), arguments: args },
            None => {
                ToolCall { id: card.replay_id.clone(), name: card.pi_tool.to_string(), arguments: object(&card.args) }
            }
        };
        let index = b.message.content.len();
        let tool_name = call.name.clone();
        // The message keeps the call; a stream also passes it on now (a copy only then).
        if streaming {
            b.message.content.push(ContentBlock::ToolCall(call.clone()));
            out.push(Step::ToolCall { index, call });
        } else {
            b.message.content.push(ContentBlock::ToolCall(call));
        }
        b.results.push(ToolResultMessage {
            role: "toolResult",
            tool_call_id: card.replay_id.clone(),
            tool_name,
            content: vec![TextContent::new(card.result_text.as_str())],
            details: Some(card.details.clone()),
            is_error: card.is_error,
            // Set when the message ends: pi runs the tools after its message.
            timestamp: 0,
        });
    }

    /// End the current message's tool calls as a `toolUse` message of their own (usage zero) and
    /// start the message that continues it.
    fn split(&mut self, streaming: bool, at: u64, out: &mut Vec<Step>) {
        self.finish(streaming, StopReason::ToolUse, &Usage::default(), None, at, out);
        self.start(at, out);
    }

    fn end(
        &mut self,
        streaming: bool,
        reason: StopReason,
        usage: &Usage,
        error: Option<&str>,
        at: u64,
        out: &mut Vec<Step>,
    ) {
        let has_calls = self.current.as_ref().is_some_and(|b| !b.results.is_empty() || !b.bridged.is_empty());
        if reason == StopReason::ToolUse && !has_calls {
            if let Some(b) = self.current.as_mut() {
                b.carried += usage;
                return;
            }
        }
        if has_calls && reason != StopReason::ToolUse {
            self.split(streaming, at, out);
        }
        self.current(at, out);
        self.finish(streaming, reason, usage, error, at, out);
    }

    /// Complete the current message with `reason` and `usage`, followed by its tool results.
    fn finish(
        &mut self,
        streaming: bool,
        reason: StopReason,
        usage: &Usage,
        error: Option<&str>,
        at: u64,
        out: &mut Vec<Step>,
    ) {
        let Some(mut b) = self.current.take() else { return };
        b.close_block(streaming, out);
        let mut message = b.message;
        // Error and aborted messages carry zero usage (SPEC §5.4), folded turns included.
        let mut total =
            if matches!(reason, StopReason::Stop | StopReason::ToolUse) { b.carried } else { Usage::default() };
        total += usage;
        message.usage = PiUsage::from(&total);
        message.stop_reason = stop_reason_name(reason);
        message.error_message = match reason {
            StopReason::Error => Some(error.unwrap_or("Cursor run failed").to_owned()),
            StopReason::Aborted => Some(error.unwrap_or(CANCELLED_MESSAGE).to_owned()),
            StopReason::Stop | StopReason::ToolUse => None,
        };
        out.push(Step::End { message, at });
        if !b.results.is_empty() || !b.bridged.is_empty() {
            let mut results = b.results;
            for r in &mut results {
                r.timestamp = at;
            }
            out.push(Step::ToolResults { results, bridged: b.bridged, at });
        }
    }
}

impl Building {
    fn close_block(&mut self, streaming: bool, out: &mut Vec<Step>) {
        let Some((kind, index)) = self.open.take() else { return };
        if !streaming {
            return;
        }
        let content = match self.message.content.get(index) {
            Some(ContentBlock::Text { text: s } | ContentBlock::Thinking { thinking: s }) => s.clone(),
            _ => String::new(),
        };
        out.push(Step::BlockEnd { kind, index, content });
    }
}

/// Tool-call arguments are always an object: anything else is wrapped as `{value}`.
fn object(args: &Value) -> Value {
    match args {
        Value::Object(_) => args.clone(),
        Value::Null => Value::Object(serde_json::Map::new()),
        other => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other.clone());
            Value::Object(m)
        }
    }
}
