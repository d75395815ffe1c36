//! `toolstream replay`: read streams and deliver them to the selected sinks. Ctrl-C cancels every
//! open run, flushes every sink and exits with 130.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use toolstream_sinks::cards::{CardsOptions, CardsSink};
use toolstream_sinks::jsonl_trace::JsonlTraceSink;
use toolstream_sinks::Sink;

use super::{ColorArg, ReplayArgs, SinkSpec};
use crate::compact_stage::CompactShellResults;
use crate::pipeline::{Pipeline, PipelineError};
use crate::source::Source;

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    let cfg = args.input.config()?;
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let mut specs = args.sinks.clone();
    if let Some(t) = &args.trace {
        specs.push(SinkSpec::Jsonl(t.clone()));
    } else if cfg.trace_enabled.value {
        specs.push(SinkSpec::Jsonl(cfg.trace_file.value.clone()));
    }
    if args.sinks.is_empty() {
        specs.insert(0, SinkSpec::Cards);
    }
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    for spec in specs {
        match spec {
            SinkSpec::Cards => {
                let opts = CardsOptions { expanded: args.expanded, color };
                let sink: Box<dyn Sink> = Box::new(CardsSink::new(io::BufWriter::new(io::stdout()), opts));
                sinks.push(if args.compact_cards { CompactShellResults::wrap(sink) } else { sink });
            }
            SinkSpec::Jsonl(path) => {
                let sink = JsonlTraceSink::create_with_limit(&path, cfg.trace_limit_bytes.value)
                    .map_err(|e| anyhow::anyhow!("cannot create trace file {}: {e}", path.display()))?;
                sinks.push(Box::new(sink));
            }
            SinkSpec::PiSession(path) => {
                let sink: Box<dyn Sink> = Box::new(
                    toolstream_sinks::pi_session::PiSessionSink::create(&path)
                        .map_err(|e| anyhow::anyhow!("cannot write pi session {}: {e}", path.display()))?,
                );
                sinks.push(if args.compact { CompactShellResults::wrap(sink) } else { sink });
            }
        }
    }
    let mut opts = args.input.pipeline_options(&cfg);
    opts.realtime = args.realtime;
    let mut pipeline = Pipeline::new(opts, sinks)?;
    let canceller = pipeline.canceller();
    // Ctrl-C: cancel every open run, flush every sink, exit 130. A second Ctrl-C while that is
    // under way (a sink blocked on a full pipe, say) exits at once.
    let handler = canceller.clone();
    let pressed = std::sync::atomic::AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        if pressed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        handler.cancel();
        std::process::exit(130);
    });
    let files = if args.files.is_empty() { vec![PathBuf::from("-")] } else { args.files.clone() };
    let mut failed_read = false;
    for file in &files {
        let source = Source::from_arg(file);
        let mut report = |e: &crate::decode::DecodeError| eprintln!("toolstream: {e}");
        if let Err(e) = pipeline.run_source(&source, &mut report) {
            if !matches!(e, PipelineError::Cancelled) {
                eprintln!("toolstream: {e}");
            }
            match e {
                PipelineError::Read { .. } => failed_read = true,
                PipelineError::Strict(_) | PipelineError::Start(_) | PipelineError::Cancelled => break,
            }
        }
        if canceller.is_cancelled() {
            break;
        }
    }
    let stats = pipeline.finish();
    for e in &stats.sink_errors {
        eprintln!("toolstream: sink error: {e}");
    }
    for e in &stats.engine_errors {
        eprintln!("toolstream: {e}");
    }
    if stats.decode_errors > 0 {
        eprintln!("toolstream: {} line(s) could not be decoded ({} lines read)", stats.decode_errors, stats.lines);
    }
    Ok(if failed_read {
        2
    } else if stats.decode_errors > 0 || !stats.sink_errors.is_empty() || !stats.engine_errors.is_empty() {
        1
    } else {
        0
    })
}
