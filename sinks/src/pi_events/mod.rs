//! The pi live-events sink (SPEC §9.1): pi-ai `AssistantMessageEvent`s as JSON lines, the
//! provider backend of the pi extension (a `toolstream pi-provider` command feeds these lines to
//! pi's `AssistantMessageEventStream`).
//!
//! Per assistant message, in order:
//! - `{"type":"start","partial":<AssistantMessage>}` — the message as it starts: no content, usage
//!   zero, `api:"cursor-sdk"`, `provider:"cursor"`, `model`, `timestamp` (unix ms, event time);
//! - per block, with `contentIndex` = the block's index in the message's `content`:
//!   `text_start`, `text_delta{delta}`…, `text_end{content}`;
//!   `thinking_start`, `thinking_delta{delta}`…, `thinking_end{content}` (lifecycle lines are
//!   thinking text `"<title>: <label>\n"`);
//!   `toolcall_start{toolCall}`, one `toolcall_delta{delta}` whose `delta` is the JSON text of the
//!   arguments, `toolcall_end{toolCall}` with the parsed `arguments` — one tool call per card,
//!   id = the card's replay id, name = its pi tool, arguments = the card's display arguments,
//!   which fit that tool's schema (pi rejects a call whose arguments do not validate, before it
//!   runs the tool; SPEC §4);
//! - exactly one terminal line: `{"type":"done","reason":"stop"|"toolUse","message":…}` or
//!   `{"type":"error","reason":"error"|"aborted","error":…}`, carrying the full `AssistantMessage`
//!   (content, complete `usage` with `cost`, `stopReason`, `timestamp`, and `errorMessage` on
//!   errors). Failures are `error` lines, never a broken stream.
//!
//! **`partial` is omitted** on every line except `start`. pi-ai providers attach the whole
//! message-so-far to every event, which makes a stream quadratic in its length; the consumer
//! rebuilds it instead: it starts from `start.partial` and applies each event at its
//! `contentIndex` (`*_start` pushes a block, `*_delta` appends, `toolcall_end` replaces the block
//! with its `toolCall`). So that it can, `toolcall_start` carries one extension field pi's own
//! type does not have: `toolCall`, the block as it starts (`id`, `name`, `arguments: {}`).
//! The terminal line's message is always complete and authoritative.
//!
//! **`tool_results` (a toolstream extension line).** Right after the `done` of a `toolUse`
//! message comes `{"type":"tool_results","results":[<ToolResultMessage>…]}`: one pi-ai
//! `ToolResultMessage` per tool call of that message, in order (`toolCallId`, `toolName`,
//! `content:[{type:"text",text}]` = the card's result text (what pi's model reads, SPEC §4),
//! `details`, `isError`, `timestamp`).
//! It is not an `AssistantMessageEvent`: the extension reads it to answer pi's execution of each
//! replay tool call with the recorded result, and never forwards it to pi's event stream. Every
//! tool call has exactly one result; the next message (if any) starts after it.
//!
//! Tool calls always end a `toolUse` message (see `assemble`): cards that land in a run's last
//! message (incomplete calls, SPEC §5.3) are delivered as a `toolUse` message with zero usage and
//! its `tool_results`, followed by a message carrying the engine's usage and the real stop reason.
//! The stream is meant for one run at a time (one pi request); lines carry no run id.

pub(crate) mod assemble;
pub mod display;
#[cfg(test)]
pub(crate) mod testutil;
pub(crate) mod wire;

use std::io::{self, Write};

use serde::Serialize;
use toolstream_schemas::OutputEvent;

use crate::{Sink, SinkError};
pub use assemble::{Assembler, BlockKind, Step};
pub use wire::{AssistantMessage, ContentBlock, TextContent, ToolCall, ToolResultMessage};

/// One line of the stream.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Start {
        partial: &'a AssistantMessage,
    },
    TextStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    TextDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: &'a str,
    },
    TextEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        content: &'a str,
    },
    ThinkingStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    ThinkingDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: &'a str,
    },
    ThinkingEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        content: &'a str,
    },
    ToolcallStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        #[serde(rename = "toolCall")]
        tool_call: StartedToolCall<'a>,
    },
    ToolcallDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: &'a str,
    },
    ToolcallEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        #[serde(rename = "toolCall")]
        tool_call: TaggedToolCall<'a>,
    },
    Done {
        reason: &'a str,
        message: &'a AssistantMessage,
    },
    Error {
        reason: &'a str,
        error: &'a AssistantMessage,
    },
    ToolResults {
        results: &'a [ToolResultMessage],
        /// Tool calls of the message pi runs for real (the pi tool bridge): pi's results answer them.
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        bridged: &'a [String],
    },
}

/// Writes pi `AssistantMessageEvent` lines to any `Write` (stdout, a pipe, a buffer in tests).
pub struct PiEventsSink<W: Write + Send> {
    out: W,
    asm: Assembler,
    steps: Vec<Step>,
    /// The current batch's lines, written to `out` in one call.
    pending: Vec<u8>,
}

impl<W: Write + Send> PiEventsSink<W> {
    pub fn new(out: W) -> Self {
        Self::with_display(out, display::ToolDisplay::all())
    }

    /// A sink that shows cards as `display` says (tool calls, neutral cards or thinking traces).
    pub fn with_display(out: W, display: display::ToolDisplay) -> Self {
        PiEventsSink { out, asm: Assembler::with_display(true, display), steps: Vec::new(), pending: Vec::new() }
    }

    /// The writer back (tests read the buffer).
    pub fn into_inner(self) -> W {
        self.out
    }

    fn io(e: io::Error) -> SinkError {
        SinkError::Io { sink: "pi-events", source: e }
    }
}

/// Append the line(s) of one assembled step to `out`, each ending with `\n` (nothing for
/// `RunOpened`/`RunClosed`; three lines for a `ToolCall`). The one place the wire shape of this
/// stream is written: the sink and `toolstream pi-provider` both write through it.
pub fn write_step(step: &Step, out: &mut Vec<u8>) -> io::Result<()> {
    let mut line = |line: &Line<'_>| -> io::Result<()> {
        serde_json::to_writer(&mut *out, line)?;
        out.push(b'\n');
        Ok(())
    };
    match step {
        Step::RunOpened { .. } | Step::RunClosed { .. } => Ok(()),
        Step::Start(partial) => line(&Line::Start { partial }),
        Step::BlockStart { kind, index } => {
            let content_index = *index;
            line(&match kind {
                BlockKind::Text => Line::TextStart { content_index },
                BlockKind::Thinking => Line::ThinkingStart { content_index },
            })
        }
        Step::BlockDelta { kind, index, delta } => {
            let content_index = *index;
            line(&match kind {
                BlockKind::Text => Line::TextDelta { content_index, delta },
                BlockKind::Thinking => Line::ThinkingDelta { content_index, delta },
            })
        }
        Step::BlockEnd { kind, index, content } => {
            let content_index = *index;
            line(&match kind {
                BlockKind::Text => Line::TextEnd { content_index, content },
                BlockKind::Thinking => Line::ThinkingEnd { content_index, content },
            })
        }
        Step::ToolCall { index, call } => {
            let content_index = *index;
            let started =
                StartedToolCall { kind: "toolCall", id: &call.id, name: &call.name, arguments: EmptyObject {} };
            line(&Line::ToolcallStart { content_index, tool_call: started })?;
            let delta = serde_json::to_string(&call.arguments)?;
            line(&Line::ToolcallDelta { content_index, delta: &delta })?;
            line(&Line::ToolcallEnd { content_index, tool_call: TaggedToolCall { kind: "toolCall", call } })
        }
        Step::End { message, .. } => {
            let reason = message.stop_reason;
            match reason {
                "error" | "aborted" => line(&Line::Error { reason, error: message }),
                _ => line(&Line::Done { reason, message }),
            }
        }
        Step::ToolResults { results, bridged, .. } => line(&Line::ToolResults { results, bridged }),
    }
}

/// A `toolCall` block as it starts: `arguments` is `{}` (borrowed, nothing cloned).
#[derive(Serialize)]
struct StartedToolCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    name: &'a str,
    arguments: EmptyObject,
}

#[derive(Serialize)]
struct EmptyObject {}

/// A complete `toolCall` block, borrowed (the same shape as [`ContentBlock::ToolCall`]).
#[derive(Serialize)]
struct TaggedToolCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    call: &'a ToolCall,
}

/// The steps of a message that failed before any Cursor run could deliver one (a provider whose
/// source never started, say): `start`, then its end as `error{reason: "error"|"aborted", error}`
/// with `errorMessage` = `message`, no content and zero usage.
pub fn failed_message_steps(model: &str, timestamp: u64, aborted: bool, message: &str) -> [Step; 2] {
    let partial = AssistantMessage::empty(model, timestamp);
    let mut failed = partial.clone();
    failed.stop_reason = if aborted { "aborted" } else { "error" };
    failed.error_message = Some(message.to_owned());
    [Step::Start(partial), Step::End { message: failed, at: timestamp }]
}

impl<W: Write + Send> Sink for PiEventsSink<W> {
    fn name(&self) -> &'static str {
        "pi-events"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut steps = std::mem::take(&mut self.steps);
        for ev in batch {
            self.asm.push(ev, &mut steps);
        }
        let mut res = Ok(());
        for step in &steps {
            res = write_step(step, &mut self.pending);
            if res.is_err() {
                break;
            }
        }
        steps.clear();
        self.steps = steps;
        res.map_err(Self::io)?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let res = self.out.write_all(&self.pending);
        self.pending.clear();
        res.map_err(Self::io)
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(Self::io)
    }
}

#[cfg(test)]
mod tests;
