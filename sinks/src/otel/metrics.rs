//! Metrics: the GenAI conventions' `gen_ai.client.operation.duration` (runs and calls) and
//! `gen_ai.client.token.usage` (a run's input and output tokens), and our own tool calls by tool
//! and outcome, tool-duration histogram, and token counter by kind. The
//! instruments are recorded on the sink's thread from the spans [`super::spans`] finished; the
//! export thread collects them (cumulative, so a failed push is made good by the next) and pushes
//! them to the collector on a timer and at every checkpoint.

use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality};
use opentelemetry_sdk::Resource;

use super::attrs as a;
use super::spans::Finished;

/// The manual reader, shared by the meter provider (which registers it) and the export thread
/// (which collects from it).
#[derive(Clone, Debug)]
pub struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The instruments, on the sink's thread.
#[derive(Debug)]
pub struct Metrics {
    provider: SdkMeterProvider,
    calls: Counter<u64>,
    duration: Histogram<f64>,
    tokens: Counter<u64>,
    operation_duration: Histogram<f64>,
    token_usage: Histogram<u64>,
}

impl Metrics {
    /// The instruments and the reader the export thread collects from.
    pub fn new(resource: Resource) -> (Metrics, SharedReader) {
        let reader = SharedReader(Arc::new(ManualReader::builder().with_temporality(Temporality::Cumulative).build()));
        let provider = SdkMeterProvider::builder().with_resource(resource).with_reader(reader.clone()).build();
        let meter = provider.meter(a::SCOPE);
        let calls = meter.u64_counter(a::METRIC_TOOL_CALLS).with_description("Tool calls, by tool and outcome").build();
        let duration = meter
            .f64_histogram(a::METRIC_TOOL_DURATION)
            .with_unit("s")
            .with_description("Tool-call duration, from the recorded start and end")
            .with_boundaries(vec![0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0])
            .build();
        let tokens =
            meter.u64_counter(a::METRIC_TOKENS).with_unit("{token}").with_description("Tokens, by kind").build();
        let operation_duration = meter
            .f64_histogram(a::METRIC_GENAI_OPERATION_DURATION)
            .with_unit("s")
            .with_description("GenAI operation duration (agent runs and tool calls)")
            .with_boundaries(a::GENAI_DURATION_BUCKETS.to_vec())
            .build();
        let token_usage = meter
            .u64_histogram(a::METRIC_GENAI_TOKEN_USAGE)
            .with_unit("{token}")
            .with_description("Input and output tokens per agent run")
            .with_boundaries(a::GENAI_TOKEN_BUCKETS.to_vec())
            .build();
        (Metrics { provider, calls, duration, tokens, operation_duration, token_usage }, reader)
    }

    /// Count what a finished span says.
    pub fn record(&self, f: &Finished) {
        match f {
            Finished::Call(c) => {
                let outcome = if c.error_type.is_some() { "error" } else { "success" };
                let attrs = [KeyValue::new(a::TOOL_NAME, c.tool.clone()), KeyValue::new(a::OUTCOME, outcome)];
                self.calls.add(1, &attrs);
                self.duration.record(c.duration.as_secs_f64(), &attrs[..1]);
                let op = operation(a::OP_EXECUTE_TOOL, None, c.error_type);
                self.operation_duration.record(c.duration.as_secs_f64(), &op);
            }
            Finished::Run(r) => {
                let op = operation(a::OP_INVOKE_AGENT, r.model.as_deref(), r.error_type);
                self.operation_duration.record(r.duration.as_secs_f64(), &op);
                let Some(t) = r.tokens else { return };
                let op = operation(a::OP_INVOKE_AGENT, r.model.as_deref(), None);
                for (kind, n) in [("input", t.input), ("output", t.output)] {
                    let mut attrs = op.clone();
                    attrs.push(KeyValue::new(a::TOKEN_TYPE, kind));
                    self.token_usage.record(n, &attrs);
                }
                for (kind, n) in [
                    ("input", t.input),
                    ("output", t.output),
                    ("cache_read", t.cache_read),
                    ("cache_creation", t.cache_creation),
                ] {
                    self.tokens.add(n, &[KeyValue::new(a::TOKEN_TYPE, kind)]);
                }
            }
        }
    }
}

/// The attributes of a GenAI operation metric.
fn operation(name: &'static str, model: Option<&str>, error_type: Option<&'static str>) -> Vec<KeyValue> {
    let mut attrs = vec![KeyValue::new(a::OPERATION_NAME, name), KeyValue::new(a::PROVIDER_NAME, a::PROVIDER_CURSOR)];
    if let Some(m) = model {
        attrs.push(KeyValue::new(a::REQUEST_MODEL, m.to_owned()));
    }
    if let Some(t) = error_type {
        attrs.push(KeyValue::new(a::ERROR_TYPE, t));
    }
    attrs
}

impl Drop for Metrics {
    fn drop(&mut self) {
        // Collection happens on the export thread; the provider only lets go of its pipeline.
        let _ = self.provider.shutdown_with_timeout(Duration::from_millis(100));
    }
}

/// The export thread's side: collect and push.
pub struct MetricsExport {
    reader: SharedReader,
    exporter: opentelemetry_otlp::MetricExporter,
}

impl std::fmt::Debug for MetricsExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExport").finish_non_exhaustive()
    }
}

impl MetricsExport {
    pub fn new(reader: SharedReader, exporter: opentelemetry_otlp::MetricExporter) -> MetricsExport {
        MetricsExport { reader, exporter }
    }

    /// Collect and push once (one attempt: the next push carries the same totals).
    pub async fn push(&mut self, _giving_up: bool, last: bool) {
        let mut rm = ResourceMetrics::default();
        if let Err(e) = self.reader.collect(&mut rm) {
            tracing::debug!(error = %e, "OTLP metrics: nothing collected");
            return;
        }
        if rm.scope_metrics().next().is_none() {
            return;
        }
        if let Err(e) = self.exporter.export(&rm).await {
            tracing::debug!(error = %e, "OTLP metrics export failed");
        }
        if last {
            let _ = self.exporter.shutdown_with_timeout(Duration::from_millis(500));
        }
    }
}
