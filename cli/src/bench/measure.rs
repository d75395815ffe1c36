//! The stages `toolstream bench` measures on the same bytes: the parse floor (memchr line split +
//! the borrowed stream-json envelope, tool payload left raw), full decoding to canonical events,
//! and end to end through the actor engine to a null sink, the JSONL trace sink and the pi session
//! sink; on request (`--stage e2e-cursor-db`) to a Cursor chat database (every run a conversation:
//! shows that the sink's time grows linearly with the runs); and, with `--sink otlp=URL`, to that
//! OTLP sink ([`super::otlp`]). Each stage reads the corpus from disk and runs in its own process,
//! so its peak RSS is its own.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use toolstream_schemas::cursor_cli::line::Line;
use toolstream_sinks::cursor_db::{CursorDbOptions, CursorDbSink};
use toolstream_sinks::jsonl_trace::JsonlTraceSink;
use toolstream_sinks::{Sink, SinkError};

use toolstream_actors::item::Item;
use toolstream_actors::shard::ShardCore;

use toolstream_engine::clock::EventTime;
use toolstream_engine::decode::framing::{Frame, LineReader};
use toolstream_engine::decode::{line_text, Decoder};
use toolstream_engine::pipeline::{Pipeline, PipelineOptions};
use toolstream_engine::sinks::SinkSpec;
use toolstream_engine::source::Source;

use super::otlp::{e2e_otlp, OtlpFigures};

/// A stage of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// memchr line split, the decoder's UTF-8 check, and serde_json parse of each line into the
    /// borrowed envelope.
    Floor,
    /// Full decoding to canonical input events.
    Decode,
    /// Decoding plus every stage core of one shard, on one thread, with no actors, queues or
    /// sinks: the work itself, without the engine's plumbing.
    Cores,
    /// End to end through the actors to a null sink.
    E2eNull,
    /// End to end to the JSONL debug trace sink.
    E2eJsonl,
    /// End to end to the pi session sink.
    E2ePiSession,
    /// End to end to the Cursor chat database sink, into a new database (only when asked for).
    E2eCursorDb,
    /// End to end to the OTLP sink named by `--sink` (only then).
    E2eOtlp,
}

impl Stage {
    /// The stages measured by default (the OTLP stage needs a collector: `--sink`; the Cursor
    /// database stage is asked for by name).
    pub fn all() -> [Stage; 6] {
        [Stage::Floor, Stage::Decode, Stage::Cores, Stage::E2eNull, Stage::E2eJsonl, Stage::E2ePiSession]
    }

    /// Its name in `--stage`, the JSON report and progress lines (as serde and clap spell it).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Floor => "floor",
            Stage::Decode => "decode",
            Stage::Cores => "cores",
            Stage::E2eNull => "e2e-null",
            Stage::E2eJsonl => "e2e-jsonl",
            Stage::E2ePiSession => "e2e-pi-session",
            Stage::E2eCursorDb => "e2e-cursor-db",
            Stage::E2eOtlp => "e2e-otlp",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Stage::Floor => "floor (split + envelope parse)",
            Stage::Decode => "decode to canonical events",
            Stage::Cores => "decode + stage cores, one thread",
            Stage::E2eNull => "end to end → null sink",
            Stage::E2eJsonl => "end to end → JSONL trace (uncapped)",
            Stage::E2ePiSession => "end to end → pi session",
            Stage::E2eCursorDb => "end to end → Cursor chat DB",
            Stage::E2eOtlp => "end to end → OTLP sink",
        }
    }
}

/// One stage's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub stage: Stage,
    pub bytes: u64,
    pub lines: u64,
    /// Input events decoded (0 for the floor, which decodes none).
    pub events: u64,
    pub seconds: f64,
    pub peak_rss_kib: u64,
    /// The OTLP stage's spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpFigures>,
}

impl Measurement {
    pub fn mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.seconds.max(1e-9)
    }

    /// Spans exported per second of the stage (the OTLP stage only).
    pub fn spans_per_s(&self) -> Option<f64> {
        self.otlp.as_ref().map(|o| o.spans as f64 / self.seconds.max(1e-9))
    }

    /// Fold in another run of the same stage: the fastest time (with the spans that run
    /// exported), the highest peak RSS, the most spans any run lost.
    pub fn merge(&mut self, other: &Measurement) {
        let lost = [&self.otlp, &other.otlp].iter().filter_map(|o| o.as_ref().map(|o| o.spans_lost)).max();
        if other.seconds < self.seconds {
            self.seconds = other.seconds;
            self.otlp.clone_from(&other.otlp);
        }
        if let (Some(o), Some(lost)) = (&mut self.otlp, lost) {
            o.spans_lost = lost;
        }
        self.peak_rss_kib = self.peak_rss_kib.max(other.peak_rss_kib);
    }
}

/// Errors of a measurement.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot read {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{0}")]
    Engine(#[from] toolstream_engine::pipeline::PipelineError),
    #[error("the e2e-otlp stage needs an OTLP sink: --sink otlp=URL")]
    NoSink,
}

/// Run one stage over `input` (`otlp`: the sink of the OTLP stage).
pub fn run_stage(
    stage: Stage,
    input: &Path,
    scratch: &Path,
    otlp: Option<&SinkSpec>,
) -> Result<Measurement, MeasureError> {
    let started = Instant::now();
    let mut figures = None;
    let (bytes, lines, events) = match stage {
        Stage::Floor => floor(input)?,
        Stage::Decode => decode(input)?,
        Stage::Cores => cores(input)?,
        Stage::E2eNull => e2e(input, vec![Box::new(NullSink)])?,
        Stage::E2eJsonl => {
            let path = scratch.join("bench-trace.jsonl");
            // Uncapped: with its default 2 MiB cap (SPEC §8) the trace stops writing within the
            // first megabytes of the corpus and the stage would measure a sink that does nothing.
            let sink =
                JsonlTraceSink::create_with_limit(&path, u64::MAX).map_err(|e| MeasureError::Read(path.clone(), e))?;
            e2e(input, vec![Box::new(sink)])?
        }
        Stage::E2ePiSession => {
            let path = scratch.join("bench-session.jsonl");
            e2e(input, vec![pi_session_sink(&path)?])?
        }
        Stage::E2eCursorDb => {
            // A new database each time: every round writes the same conversations anew.
            let path = scratch.join("bench-chats.vscdb");
            let _ = std::fs::remove_file(&path);
            let sink = CursorDbSink::create(&path, CursorDbOptions::default())
                .map_err(|e| MeasureError::Read(path.clone(), std::io::Error::other(e)))?;
            e2e(input, vec![Box::new(sink)])?
        }
        Stage::E2eOtlp => {
            let spec = otlp.ok_or(MeasureError::NoSink)?;
            let (stats, f) = e2e_otlp(input, spec)?;
            figures = Some(f);
            (stats.bytes, stats.lines, stats.input_events)
        }
    };
    Ok(Measurement {
        stage,
        bytes,
        lines,
        events,
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_kib: peak_rss_kib().unwrap_or(0),
        otlp: figures,
    })
}

/// Check that `input` can be measured: a regular file this process can read (every stage reads
/// it again, so a pipe or a directory cannot be).
pub fn check_input(input: &Path) -> Result<(), MeasureError> {
    let read_err = |e| MeasureError::Read(input.to_path_buf(), e);
    let file = File::open(input).map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    if meta.is_dir() {
        return Err(read_err(std::io::Error::other("it is a directory")));
    }
    if !meta.is_file() {
        return Err(read_err(std::io::Error::other("not a regular file (every stage reads it again)")));
    }
    Ok(())
}

fn open(input: &Path) -> Result<LineReader<File>, MeasureError> {
    let f = File::open(input).map_err(|e| MeasureError::Read(input.to_path_buf(), e))?;
    Ok(LineReader::new(f))
}

/// The floor: split and parse each line into the borrowed envelope, tool payload left raw.
fn floor(input: &Path) -> Result<(u64, u64, u64), MeasureError> {
    let mut reader = open(input)?;
    let mut lines = 0u64;
    let mut parsed = 0u64;
    while let Some(frame) = reader.next_frame().map_err(|e| MeasureError::Read(input.to_path_buf(), e))? {
        lines += 1;
        if let Frame::Line { bytes, .. } = frame {
            if let Ok(text) = line_text(bytes) {
                if let Ok(line) = Line::parse(text) {
                    parsed += u64::from(line.tool_call.is_some() || !line.kind.is_empty());
                }
            }
        }
    }
    std::hint::black_box(parsed);
    Ok((reader.position(), lines, 0))
}

/// Full decoding to canonical input events, single-threaded.
fn decode(input: &Path) -> Result<(u64, u64, u64), MeasureError> {
    let mut reader = open(input)?;
    let mut decoder = Decoder::new(input.display().to_string(), None);
    let mut out = Vec::new();
    let (mut lines, mut events) = (0u64, 0u64);
    while let Some(frame) = reader.next_frame().map_err(|e| MeasureError::Read(input.to_path_buf(), e))? {
        lines += 1;
        let _ = decoder.decode_frame(frame, &mut out);
        events += out.len() as u64;
        out.clear();
    }
    Ok((reader.position(), lines, events))
}

/// Decoding and every stage core on this thread, outputs dropped.
fn cores(input: &Path) -> Result<(u64, u64, u64), MeasureError> {
    let mut reader = open(input)?;
    let mut decoder = Decoder::new(input.display().to_string(), None);
    let mut time = EventTime::default();
    let mut core = ShardCore::default();
    let (mut events, mut out) = (Vec::new(), Vec::new());
    let (mut lines, mut count) = (0u64, 0u64);
    while let Some(frame) = reader.next_frame().map_err(|e| MeasureError::Read(input.to_path_buf(), e))? {
        lines += 1;
        let _ = decoder.decode_frame(frame, &mut events);
        for mut ev in events.drain(..) {
            count += 1;
            time.stamp(&mut ev);
            // As the pipeline does: a run's end lets its session's clock start over.
            if let toolstream_schemas::Input::RunEnded(_) = ev.kind {
                time.forget(&ev.session);
            }
            core.push(Item::Input(ev), &mut out);
        }
        out.clear();
    }
    core.push(Item::EndOfSource, &mut out);
    std::hint::black_box(&out);
    Ok((reader.position(), lines, count))
}

/// End to end through the engine with the default number of shards.
fn e2e(input: &Path, sinks: Vec<Box<dyn Sink>>) -> Result<(u64, u64, u64), MeasureError> {
    let mut pipeline = Pipeline::new(PipelineOptions::default(), sinks)?;
    pipeline.run_source(&Source::File(input.to_path_buf()), &mut |_| {})?;
    let stats = pipeline.finish();
    Ok((stats.bytes, stats.lines, stats.input_events))
}

fn pi_session_sink(path: &Path) -> Result<Box<dyn Sink>, MeasureError> {
    // Its own scratch file, written again by every round.
    toolstream_sinks::pi_session::PiSessionSink::create(path, true)
        .map(|s| Box::new(s) as Box<dyn Sink>)
        .map_err(|e| MeasureError::Read(path.to_path_buf(), e))
}

/// A sink that discards everything.
pub struct NullSink;

impl Sink for NullSink {
    fn name(&self) -> &'static str {
        "null"
    }
    fn write(&mut self, batch: &[toolstream_schemas::OutputEvent]) -> Result<(), SinkError> {
        std::hint::black_box(batch);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Peak resident set size of this process (Linux `VmHWM`), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn stage_names_are_the_serde_and_clap_names() {
        for stage in Stage::all() {
            assert_eq!(serde_json::to_value(stage).unwrap(), stage.name());
            assert_eq!(stage.to_possible_value().unwrap().get_name(), stage.name());
        }
    }

    #[test]
    fn inputs_that_cannot_be_measured_are_refused_with_their_path() {
        let missing = Path::new("/nonexistent/toolstream-bench-input.jsonl");
        let e = check_input(missing).unwrap_err().to_string();
        assert!(e.starts_with("cannot read /nonexistent/toolstream-bench-input.jsonl: "), "{e}");
        let dir = std::env::temp_dir();
        let e = check_input(&dir).unwrap_err().to_string();
        assert_eq!(e, format!("cannot read {}: it is a directory", dir.display()));
    }
}
