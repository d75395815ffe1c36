//! The OTLP stage of `toolstream bench --sink otlp=URL` (or `otlp-grpc=URL`): the engine end to
//! end into that sink, on the same corpus as the other stages, against the user's collector
//! (bench never starts one). Besides MB/s it reports spans per second — the runs and calls
//! exported (one `invoke_agent` span per run, one `execute_tool` span per call) over the stage's
//! wall time, which includes the final export — and the spans the sink reported lost.
//!
//! The sink is measured with `when_full=block`: the engine then never drops an event on its way
//! to the sink, so every span is either exported or counted as lost by the sink itself, and the
//! rate is that of what reached the collector.

use serde::{Deserialize, Serialize};
use toolstream_sinks::SinkError;

use toolstream_engine::pipeline::{Pipeline, PipelineError, PipelineOptions, Stats};
use toolstream_engine::sinks::{SinkContext, SinkKind, SinkSpec, WhenFull};
use toolstream_engine::source::Source;

/// What the OTLP stage adds to a measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OtlpFigures {
    /// The sink, as named (`otlp=http://127.0.0.1:4318`).
    pub sink: String,
    /// Spans the collector accepted: runs + calls − lost.
    pub spans: u64,
    /// Spans the sink reported lost (a full export queue, refused or unanswered exports).
    pub spans_lost: u64,
}

/// Check that `spec` names an OTLP sink bench can measure; the spec it is measured with
/// (`when_full=block`).
pub fn bench_spec(spec: &SinkSpec) -> Result<SinkSpec, String> {
    if !matches!(spec.kind, SinkKind::Otlp | SinkKind::OtlpGrpc) {
        return Err(format!(
            "--sink {spec}: bench measures an OTLP sink (`otlp=URL`, `otlp-grpc=URL`); the other sinks have their own stages"
        ));
    }
    if spec.when_full == Some(WhenFull::DropNewest) {
        return Err(format!(
            "--sink {spec}: bench measures what reaches the collector, with when_full=block (spans the sink \
             itself cannot deliver are counted as lost)"
        ));
    }
    Ok(SinkSpec { when_full: Some(WhenFull::Block), ..spec.clone() })
}

/// Run the corpus end to end into the sink of `spec`; the engine's stats and the sink's figures.
pub fn e2e_otlp(input: &std::path::Path, spec: &SinkSpec) -> Result<(Stats, OtlpFigures), PipelineError> {
    let spec = bench_spec(spec).map_err(|message| PipelineError::Sink(SinkError::Other { sink: "otlp", message }))?;
    // The collector named without a URL is the one the settings name (`otlp_endpoint`, …).
    let config = toolstream_engine::config::Config::from_process_env(None)
        .map_err(|e| PipelineError::Sink(SinkError::Other { sink: "otlp", message: e.to_string() }))?;
    let plan = spec.plan(&SinkContext { otel: config.otel_content(), ..SinkContext::headless(0) }, None);
    let mut pipeline = Pipeline::with_sinks(PipelineOptions::default(), vec![plan])?;
    pipeline.run_source(&Source::File(input.to_path_buf()), &mut |_| {})?;
    let stats = pipeline.finish();
    let label = spec.label();
    let summary = stats.sinks.iter().find(|s| s.sink == label);
    if let Some(e) = summary.and_then(|s| s.error.clone()) {
        return Err(PipelineError::Sink(SinkError::Other { sink: "otlp", message: e }));
    }
    let lost = summary.and_then(|s| s.lost.as_ref()).map_or(0, |l| l.count);
    let made = stats.output.runs + stats.output.calls;
    Ok((stats, OtlpFigures { sink: label, spans: made.saturating_sub(lost), spans_lost: lost }))
}
