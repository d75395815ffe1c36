//! Metrics: tool calls by tool and outcome, a tool-duration histogram, and tokens by kind. The
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
        (Metrics { provider, calls, duration, tokens }, reader)
    }

    /// Count what a finished span says.
    pub fn record(&self, f: &Finished) {
        match f {
            Finished::Call(c) => {
                let outcome = if c.failed { "error" } else { "success" };
                let attrs = [KeyValue::new(a::TOOL_NAME, c.tool.clone()), KeyValue::new(a::OUTCOME, outcome)];
                self.calls.add(1, &attrs);
                self.duration.record(c.duration.as_secs_f64(), &attrs[..1]);
            }
            Finished::Run(r) => {
                let Some(t) = r.tokens else { return };
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
