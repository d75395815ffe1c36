//! `toolstream replay`: read streams and deliver them to the selected sinks.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use toolstream_actors::run::CoordinatorConfig;
use toolstream_sinks::cards::{CardsOptions, CardsSink};
use toolstream_sinks::Sink;

use super::{ColorArg, ReplayArgs, SinkSpec};
use crate::pipeline::Pipeline;
use crate::source::Source;

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let specs = if args.sinks.is_empty() { vec![SinkSpec::Cards] } else { args.sinks.clone() };
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    for spec in specs {
        match spec {
            SinkSpec::Cards => {
                let opts = CardsOptions { expanded: args.expanded, color };
                sinks.push(Box::new(CardsSink::new(io::BufWriter::new(io::stdout()), opts)));
            }
        }
    }
    let files = if args.files.is_empty() { vec![PathBuf::from("-")] } else { args.files.clone() };
    let mut pipeline = Pipeline::new(args.input.pipeline_options(), CoordinatorConfig::default(), sinks);
    let mut failed_read = false;
    for file in &files {
        let source = Source::from_arg(file);
        let mut report = |e: &crate::decode::DecodeError| eprintln!("toolstream: {e}");
        if let Err(e) = pipeline.run_source(&source, &mut report) {
            eprintln!("toolstream: {e}");
            match e {
                crate::pipeline::PipelineError::Read { .. } => failed_read = true,
                crate::pipeline::PipelineError::Strict(_) => break,
            }
        }
    }
    let stats = pipeline.finish();
    for e in &stats.sink_errors {
        eprintln!("toolstream: sink error: {e}");
    }
    if stats.decode_errors > 0 {
        eprintln!("toolstream: {} line(s) could not be decoded ({} lines read)", stats.decode_errors, stats.lines);
    }
    Ok(if failed_read {
        2
    } else if stats.decode_errors > 0 || !stats.sink_errors.is_empty() {
        1
    } else {
        0
    })
}
