//! The OpenAI-compatible sink (SPEC §9.5): a run as the `chat.completion.chunk` server-sent
//! events an OpenAI client would have received for it, one response per client turn.
//!
//! A response opens with a role chunk, streams the assistant's text as `content` deltas, and ends
//! either with the client tool calls Cursor asked for (`tool_calls[{index, id, type:"function",
//! function:{name, arguments}}]`, `finish_reason:"tool_calls"`, `data: [DONE]`; the client runs
//! them and its next request continues the run in a new response) or with
//! `finish_reason:"stop"` and the usage of the messages it covered, then `data: [DONE]`. A run
//! that fails ends its response with an OpenAI-style error event (`data: {"error":{…}}`) and
//! `[DONE]`: the official SDKs raise it as an API error.
//!
//! Client tool calls are the calls of an exec recording (the backend asked its client to run
//! them): their card carries the OpenAI tool call (`Card::openai_call`), mapped by SPEC §9.5's
//! table; or the calls of the client's own tools Cursor made through the tool bridge, given
//! beside the run's events (`SseEncoder::client_call`). Everything
//! else is **Cursor's own tool activity** (Cursor ran the tool itself; the client must not run it
//! again), reported without breaking the protocol as `reasoning_content` deltas — the field
//! OpenAI-compatible servers use for reasoning, which clients that do not know it ignore — one
//! line per call: its card headline (already scrubbed and bounded to one display line), plus
//! ` (error)` when it failed. Lifecycle lines, thinking and incomplete calls go there too. Such a
//! call never ends a response: the response goes on to the next client tool call or the end.

mod encode;

pub use encode::{assemble, Naming, SseEncoder, SseEvent};

use std::io::Write;

use toolstream_schemas::OutputEvent;

use crate::{Sink, SinkError};

const NAME: &str = "openai-sse";

/// `--sink openai-sse=PATH`: the SSE of every run, written to `out`.
pub struct OpenAiSseSink<W: Write + Send> {
    out: W,
    encoder: SseEncoder,
    events: Vec<SseEvent>,
}

impl<W: Write + Send> OpenAiSseSink<W> {
    pub fn new(out: W) -> Self {
        OpenAiSseSink { out, encoder: SseEncoder::new(Naming::default()), events: Vec::new() }
    }
}

impl<W: Write + Send> Sink for OpenAiSseSink<W> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.encoder.push(ev, &mut self.events);
        }
        for e in self.events.drain(..) {
            self.out.write_all(e.to_sse().as_bytes()).map_err(|source| SinkError::Io { sink: NAME, source })?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(|source| SinkError::Io { sink: NAME, source })
    }
}
