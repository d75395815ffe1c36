//! `toolstream replay`: read streams and deliver them to the selected sinks. Ctrl-C cancels every
//! open run, flushes every sink and exits with 130. At exit, one line per sink that failed,
//! dropped or lost anything (and then exit status 1).

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use toolstream_actors::present::card::Compaction;
use toolstream_sinks::cards::CardsOptions;

use super::{cursor_db, cursor_transcripts, ColorArg, ReplayArgs};
use toolstream_engine::pipeline::{Canceller, Pipeline, PipelineError, Stats};
use toolstream_engine::sinks::{keeps_recorded, report_to_stderr, SinkContext, SinkKind, SinkSpec};
use toolstream_engine::source::Source;

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    let cfg = args.input.config()?;
    let cursor_db = match &args.cursor_db.from_cursor_db {
        Some(path) if args.cursor_db.list => {
            let scrubber = args.input.pipeline_options(&cfg)?.shard.scrubber;
            return cursor_db::print_list(path, &scrubber);
        }
        Some(path) => {
            let db = toolstream_engine::cursor_db::CursorDb::open(path)?;
            let ids = cursor_db::selection(&args.cursor_db, &db)?;
            Some((db, ids))
        }
        None => None,
    };
    let transcripts = match &args.cursor_db.from_cursor_transcripts {
        Some(dir) if args.cursor_db.list => {
            let scrubber = args.input.pipeline_options(&cfg)?.shard.scrubber;
            return cursor_transcripts::print_list(&cursor_transcripts::folder(dir)?, &scrubber);
        }
        Some(dir) => Some(cursor_transcripts::selection(&args.cursor_db, &cursor_transcripts::folder(dir)?)?),
        None => None,
    };
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let mut specs = args.sinks.clone();
    if let Some(t) = &args.trace {
        specs.push(SinkSpec::new(SinkKind::Jsonl, Some(t.clone())));
    } else if cfg.trace_enabled.value {
        specs.push(SinkSpec::new(SinkKind::Jsonl, Some(cfg.trace_file.value.clone())));
    }
    if args.sinks.is_empty() {
        specs.insert(0, SinkSpec::new(SinkKind::Cards, None));
    }
    let ctx = SinkContext {
        cards: CardsOptions { expanded: args.expanded, color },
        trace_limit_bytes: cfg.trace_limit_bytes.value,
        overwrite_sessions: args.force,
        reading_db: args.cursor_db.from_cursor_db.clone(),
        allow_cursor_state_db: args.cursor_db.i_know_cursor_is_closed,
        otel: cfg.otel_content(),
    };
    let plans = specs.iter().map(|spec| spec.plan(&ctx, cfg.when_full(spec.kind))).collect();
    let mut opts = args.input.pipeline_options(&cfg)?;
    opts.realtime = args.realtime;
    opts.shard.keep_recorded = keeps_recorded(&specs);
    // Compaction reads the whole recorded output where cards are built (SPEC §10): what pi's model
    // reads (`--compact`), what the terminal cards show (`--compact-cards`).
    opts.shard.compact = Compaction { model: args.compact, cards: args.compact_cards };
    // Ctrl-C: cancel every open run, flush every sink (none may hold the others up for longer
    // than the grace period), say what was dropped, exit 130. Installed before the sinks open (a
    // `block` sink may wait in its opening, a FIFO nobody reads); a second Ctrl-C exits at once.
    let running: Arc<OnceLock<Canceller>> = Arc::new(OnceLock::new());
    let handler = running.clone();
    let pressed = AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        if pressed.swap(true, Ordering::SeqCst) {
            toolstream_engine::exit::exit(130);
        }
        if let Some(canceller) = handler.get() {
            canceller.cancel();
            report_to_stderr(&canceller.sink_summaries());
        }
        toolstream_engine::exit::exit(130);
    });
    let mut pipeline = match Pipeline::with_sinks(opts, plans) {
        Ok(p) => p,
        Err(PipelineError::Sink(e)) => {
            toolstream_engine::say!("toolstream: {e}");
            return Ok(2);
        }
        Err(e) => return Err(e.into()),
    };
    let canceller = pipeline.canceller();
    let _ = running.set(canceller.clone());
    let history = cursor_db.is_some() || transcripts.is_some();
    let files = if args.files.is_empty() && !history { vec![PathBuf::from("-")] } else { args.files.clone() };
    let mut failed_read = false;
    if let Some(selected) = &transcripts {
        let mut report = |e: &toolstream_engine::decode::DecodeError| toolstream_engine::say!("toolstream: {e}");
        match cursor_transcripts::feed(&mut pipeline, selected, &mut report) {
            Ok(()) | Err(PipelineError::Cancelled) => {}
            Err(e @ PipelineError::Read { .. }) => {
                toolstream_engine::say!("toolstream: {e}");
                failed_read = true;
            }
            Err(e) => toolstream_engine::say!("toolstream: {e}"),
        }
    }
    if let Some((db, ids)) = &cursor_db {
        let mut report = |e: &toolstream_engine::decode::DecodeError| toolstream_engine::say!("toolstream: {e}");
        match cursor_db::feed(&mut pipeline, db, ids, &mut report) {
            Ok(Ok(()) | Err(PipelineError::Cancelled)) => {}
            Ok(Err(e)) => toolstream_engine::say!("toolstream: {e}"),
            Err(e) => {
                toolstream_engine::say!("toolstream: {e:#}");
                failed_read = true;
            }
        }
    }
    for file in &files {
        let source = Source::from_arg(file);
        let mut report = |e: &toolstream_engine::decode::DecodeError| toolstream_engine::say!("toolstream: {e}");
        if let Err(e) = pipeline.run_source(&source, &mut report) {
            if !matches!(e, PipelineError::Cancelled) {
                toolstream_engine::say!("toolstream: {e}");
            }
            match e {
                PipelineError::Read { .. } => failed_read = true,
                PipelineError::Strict(_)
                | PipelineError::Start(_)
                | PipelineError::Sink(_)
                | PipelineError::Cancelled => break,
            }
        }
        if canceller.is_cancelled() {
            break;
        }
    }
    let stats = pipeline.finish();
    Ok(exit_report(&stats, failed_read))
}

/// Say what went wrong at the end of a run; the exit status it earned: 2 when a file could not be
/// read, 1 when a line could not be decoded, a stage failed or a sink lost anything (failed, did
/// not deliver, dropped: [`toolstream_engine::sinks::SinkSummary::lost_anything`]), else 0.
pub fn exit_report(stats: &Stats, failed_read: bool) -> i32 {
    report_to_stderr(&stats.sinks);
    for e in &stats.engine_errors {
        toolstream_engine::say!("toolstream: {e}");
    }
    if stats.decode_errors > 0 {
        toolstream_engine::say!(
            "toolstream: {} line(s) could not be decoded ({} lines read)",
            stats.decode_errors,
            stats.lines
        );
    }
    if failed_read {
        2
    } else if stats.decode_errors > 0
        || !stats.sink_errors.is_empty()
        || !stats.engine_errors.is_empty()
        || stats.sinks.iter().any(|s| s.lost_anything())
    {
        1
    } else {
        0
    }
}
