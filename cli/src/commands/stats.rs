//! `toolstream stats`: count lines, runs, calls per canonical tool, unknown tool kinds and decode
//! errors, as a table or one JSON object.

use std::io::{self, Write};
use std::path::PathBuf;

use toolstream_schemas::display::{display_line, json_line, DISPLAY_LINE_CHARS};

use super::StatsArgs;
use toolstream_engine::pipeline::{Pipeline, PipelineError, Stats};
use toolstream_engine::source::Source;

/// Exit status: 0 when every line decoded, 1 when a line could not be decoded (the counts are
/// still printed), 2 when a file could not be read (nothing is printed but the error: a table of
/// zeros would read as an empty file).
pub fn run(args: StatsArgs) -> anyhow::Result<i32> {
    let cfg = args.input.config()?;
    let mut pipeline = Pipeline::new(args.input.pipeline_options(&cfg)?, Vec::new())?;
    let mut unreadable = false;
    let mut stopped = false;
    for file in &args.files {
        let source = Source::from_arg(file);
        let mut quiet = |_: &toolstream_engine::decode::DecodeError| {};
        match pipeline.run_source(&source, &mut quiet) {
            Ok(()) => {}
            Err(e @ PipelineError::Read { .. }) => {
                toolstream_engine::say!("toolstream: {e}");
                unreadable = true;
            }
            Err(
                e @ (PipelineError::Strict(_)
                | PipelineError::Start(_)
                | PipelineError::Sink(_)
                | PipelineError::Cancelled),
            ) => {
                toolstream_engine::say!("toolstream: {e}");
                stopped = true;
                break;
            }
        }
    }
    let stats = pipeline.finish();
    if unreadable {
        return Ok(2);
    }
    for e in &stats.engine_errors {
        toolstream_engine::say!("toolstream: {e}");
    }
    let code = if stopped || stats.decode_errors > 0 || !stats.engine_errors.is_empty() { 1 } else { 0 };
    let mut out = io::stdout().lock();
    let written =
        if args.json { writeln!(out, "{}", json_line(&stats)?) } else { write!(out, "{}", table(&stats, &args.files)) };
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(code),
        // The reader went away (`| head`): a quiet end, with the status the input earned.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to standard output")),
    }
}

/// The counts as a table. Tool names and decode errors quote the input: each is shown as a
/// display line (SPEC §8), a decode error as long as on stderr.
fn table(s: &Stats, files: &[PathBuf]) -> String {
    let mut out = String::new();
    let mut row = |k: &str, v: String| out.push_str(&format!("{k:<16} {}\n", display_line(&v, DISPLAY_LINE_CHARS)));
    row("files", files.len().to_string());
    row("lines", s.lines.to_string());
    row("bytes", s.bytes.to_string());
    row("runs", s.output.runs.to_string());
    row("calls", s.output.calls.to_string());
    for (tool, n) in &s.output.calls_by_tool {
        row(&format!("  {}", display_line(tool, DISPLAY_LINE_CHARS)), n.to_string());
    }
    row("error cards", s.output.error_cards.to_string());
    row("incomplete", s.output.incomplete_calls.to_string());
    let unknown = if s.output.unknown_tools.is_empty() {
        "none".to_owned()
    } else {
        s.output.unknown_tools.iter().map(|(k, v)| format!("{k} ({v})")).collect::<Vec<_>>().join(", ")
    };
    row("unknown tools", unknown);
    if s.ignored_updates > 0 {
        row("ignored updates", s.ignored_updates.to_string());
    }
    row("decode errors", s.decode_errors.to_string());
    for e in &s.decode_error_samples {
        out.push_str(&format!("  {}\n", display_line(e, toolstream_engine::stderr::MESSAGE_CHARS)));
    }
    out
}
