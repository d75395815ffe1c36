//! Wiring: sources → framing → decoding → run coordination → fan-out to sinks, with decode-error
//! reporting, `--strict`, per-source end-of-input handling, stats, and flush on shutdown.
//!
//! This is the single-threaded path; every run is still closed exactly once and every sink
//! flushed, whatever the input does.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use toolstream_actors::run::{Coordinator, CoordinatorConfig};
use toolstream_schemas::{InputEvent, Output, OutputEvent, RunId, Tool};
use toolstream_sinks::{Sink, SinkError};

use crate::decode::framing::{LineReader, DEFAULT_MAX_LINE_BYTES};
use crate::decode::{DecodeError, Decoder, Format};
use crate::source::Source;

/// How a pipeline reads.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// Stop at the first decode error.
    pub strict: bool,
    /// Force a format instead of detecting it per source.
    pub format: Option<Format>,
    /// Longest line accepted; longer lines are skipped and reported.
    pub max_line_bytes: usize,
    /// Lines decoded before outputs are handed to sinks (files; live input hands over every line).
    pub batch_lines: usize,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions { strict: false, format: None, max_line_bytes: DEFAULT_MAX_LINE_BYTES, batch_lines: 512 }
    }
}

/// Errors that stop a pipeline (decode errors do not, unless strict).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("cannot read {source_name}: {error}")]
    Read { source_name: String, error: std::io::Error },
    #[error("stopped at the first decode error (--strict): {0}")]
    Strict(DecodeError),
}

/// Per-source counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceStats {
    pub source: String,
    pub format: Option<&'static str>,
    pub lines: u64,
    pub bytes: u64,
    pub decode_errors: u64,
}

/// What a pipeline saw, for `stats` and for the end-of-replay report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub lines: u64,
    pub bytes: u64,
    pub input_events: u64,
    pub output_events: u64,
    pub runs: u64,
    pub calls: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub unknown_tools: BTreeMap<String, u64>,
    pub error_cards: u64,
    pub incomplete_calls: u64,
    pub decode_errors: u64,
    /// The first decode errors, as `file:line: reason (byte offset N)`.
    pub decode_error_samples: Vec<String>,
    pub sink_errors: Vec<String>,
    pub files: Vec<SourceStats>,
}

const MAX_ERROR_SAMPLES: usize = 100;

struct SinkSlot {
    sink: Box<dyn Sink>,
    failed: bool,
}

/// One pipeline: a coordinator and its sinks.
pub struct Pipeline {
    opts: PipelineOptions,
    coordinator: Coordinator,
    sinks: Vec<SinkSlot>,
    stats: Stats,
    inputs: Vec<InputEvent>,
    outputs: Vec<OutputEvent>,
    diag_run: Arc<RunId>,
}

impl Pipeline {
    pub fn new(opts: PipelineOptions, cfg: CoordinatorConfig, sinks: Vec<Box<dyn Sink>>) -> Self {
        Pipeline {
            opts,
            coordinator: Coordinator::new(cfg),
            sinks: sinks.into_iter().map(|sink| SinkSlot { sink, failed: false }).collect(),
            stats: Stats::default(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            diag_run: Arc::new(RunId { session: Arc::from(""), seq: 0 }),
        }
    }

    /// Read one source to its end. Decode errors are passed to `on_error` and counted; runs still
    /// open at the source's end are closed as failed (`missing result`).
    pub fn run_source(&mut self, source: &Source, on_error: &mut dyn FnMut(&DecodeError)) -> Result<(), PipelineError> {
        let name = source.name();
        let reader = source.open().map_err(|error| PipelineError::Read { source_name: name.clone(), error })?;
        let mut lines = LineReader::with_max_line(reader, self.opts.max_line_bytes);
        let mut decoder = Decoder::new(name.clone(), self.opts.format);
        decoder.set_max_line(self.opts.max_line_bytes);
        let batch = if source.is_live() { 1 } else { self.opts.batch_lines.max(1) };
        let mut file = SourceStats { source: name.clone(), ..SourceStats::default() };
        let mut in_batch = 0;
        let outcome = loop {
            let frame = match lines.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break Ok(()),
                Err(error) => break Err(PipelineError::Read { source_name: name.clone(), error }),
            };
            file.lines += 1;
            if let Err(e) = decoder.decode_frame(frame, &mut self.inputs) {
                file.decode_errors += 1;
                self.record_decode_error(&e);
                on_error(&e);
                if self.opts.strict {
                    break Err(PipelineError::Strict(e));
                }
            }
            in_batch += 1;
            if in_batch >= batch {
                in_batch = 0;
                self.process_inputs();
                self.deliver(source.is_live());
            }
        };
        self.process_inputs();
        // End of this source: whatever is still open ended without its `result`.
        self.coordinator.finish(&mut self.outputs);
        self.deliver(true);
        file.bytes = lines.position();
        file.format = decoder.format().map(Format::as_str);
        self.stats.lines += file.lines;
        self.stats.bytes += file.bytes;
        self.stats.decode_errors += file.decode_errors;
        self.stats.files.push(file);
        outcome
    }

    /// Cancel every open run (Ctrl-C) and deliver what that produces.
    pub fn cancel(&mut self) {
        self.coordinator.cancel_all(&mut self.outputs);
        self.deliver(true);
    }

    /// Flush every sink and return the stats.
    pub fn finish(mut self) -> Stats {
        self.coordinator.finish(&mut self.outputs);
        self.deliver(false);
        for slot in &mut self.sinks {
            if !slot.failed {
                if let Err(e) = slot.sink.flush() {
                    self.stats.sink_errors.push(e.to_string());
                }
            }
        }
        self.stats.runs = self.coordinator.runs_closed();
        self.stats
    }

    fn record_decode_error(&mut self, e: &DecodeError) {
        if self.stats.decode_error_samples.len() < MAX_ERROR_SAMPLES {
            self.stats.decode_error_samples.push(e.to_string());
        }
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), e.source_name.as_ref().into());
        fields.insert("line".into(), e.line_no.into());
        fields.insert("byteOffset".into(), e.byte_offset.into());
        fields.insert("reason".into(), e.reason.clone().into());
        self.outputs.push(OutputEvent {
            run: self.diag_run.clone(),
            at_ms: 0,
            kind: Output::Diagnostic { phase: "decode_error".into(), fields },
        });
    }

    fn process_inputs(&mut self) {
        self.stats.input_events += self.inputs.len() as u64;
        for ev in self.inputs.drain(..) {
            self.coordinator.handle(ev, &mut self.outputs);
        }
    }

    /// Hand the pending outputs to every healthy sink (flushing them when `flush`); a failing sink
    /// is reported and isolated.
    fn deliver(&mut self, flush: bool) {
        if self.outputs.is_empty() {
            return;
        }
        self.count_outputs();
        for slot in &mut self.sinks {
            if slot.failed {
                continue;
            }
            let mut res: Result<(), SinkError> = slot.sink.write(&self.outputs);
            if flush && res.is_ok() {
                res = slot.sink.flush();
            }
            if let Err(e) = res {
                tracing::error!(sink = slot.sink.name(), error = %e, "sink failed; it is skipped from now on");
                self.stats.sink_errors.push(e.to_string());
                slot.failed = true;
            }
        }
        self.outputs.clear();
    }

    fn count_outputs(&mut self) {
        self.stats.output_events += self.outputs.len() as u64;
        for ev in &self.outputs {
            let (tool, incomplete) = match &ev.kind {
                // A visible incomplete call also produces a card marked `incomplete`; count it once.
                Output::Card(c) if c.args.get("incomplete") != Some(&serde_json::Value::Bool(true)) => {
                    if c.is_error {
                        self.stats.error_cards += 1;
                    }
                    (&c.source_tool, false)
                }
                Output::IncompleteCall(i) => (&i.source_tool, true),
                _ => continue,
            };
            self.stats.calls += 1;
            if incomplete {
                self.stats.incomplete_calls += 1;
            }
            *self.stats.calls_by_tool.entry(tool.name().to_owned()).or_default() += 1;
            if let Tool::Unknown(name) = tool {
                *self.stats.unknown_tools.entry(name.to_string()).or_default() += 1;
            }
        }
    }
}
