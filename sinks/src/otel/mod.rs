//! The OpenTelemetry sink (SPEC §9.7): agent-aware traces and metrics over OTLP (HTTP/protobuf or
//! gRPC). [`spans`] maps output events to `invoke_agent` / `execute_tool` spans (pure);
//! [`metrics`] counts calls, durations and tokens; [`export`] owns the thread and runtime that
//! send them, with a burst-sized queue, retries and drop counts; [`config`] reads the standard
//! `OTEL_*` variables; [`attrs`] holds every name written.

pub mod attrs;
pub mod config;
pub mod export;
pub mod metrics;
pub mod spans;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::resource::EnvResourceDetector;
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;
use toolstream_schemas::OutputEvent;

use self::config::{OtelConfig, Protocol, TextScrub, REQUEST_TIMEOUT};
use self::export::{ExportLimits, Exporter};
use self::metrics::{Metrics, MetricsExport};
use self::spans::{Finished, MapOptions, SpanMapper};
use crate::{LossProbe, Sink, SinkError};

pub use self::config::ConfigError;

const NAME: &str = "otlp";

/// Output events in, OTLP spans and metrics out.
#[derive(Debug)]
pub struct OtelSink {
    mapper: SpanMapper,
    metrics: Option<Metrics>,
    exporter: Exporter,
    /// Spans finished since the last hand-over to the export thread.
    pending: Vec<SpanData>,
    finished: Vec<Finished>,
}

impl OtelSink {
    /// Open the sink: start the export thread (and its exporters) for `cfg`; `scrub` scrubs the
    /// assistant's text written as content.
    pub fn open(cfg: &OtelConfig, scrub: TextScrub) -> Result<OtelSink, SinkError> {
        let resource = resource(&cfg.service_name);
        let (metrics, reader) = if cfg.metrics {
            let (m, r) = Metrics::new(resource.clone());
            (Some(m), Some(r))
        } else {
            (None, None)
        };
        let build_cfg = cfg.clone();
        let build: export::Build<opentelemetry_otlp::SpanExporter> = Box::new(move || {
            let spans = export::otlp_span_exporter(&build_cfg)?;
            let metrics = match reader {
                Some(r) => Some(MetricsExport::new(r, otlp_metric_exporter(&build_cfg)?)),
                None => None,
            };
            Ok((spans, metrics))
        });
        let limits = ExportLimits {
            queue_spans: cfg.queue_spans,
            batch_spans: cfg.batch_spans,
            flush_timeout: cfg.flush_timeout,
        };
        let exporter = Exporter::start(build, resource, limits)
            .map_err(|e| SinkError::Other { sink: NAME, message: e.to_string() })?;
        tracing::debug!(
            endpoint = %cfg.endpoint,
            service = %cfg.service_name,
            capture = cfg.capture_content.as_str(),
            "OTLP sink opened"
        );
        let opts = MapOptions { capture: cfg.capture_content, scrub, id_salt: random_salt() };
        Ok(OtelSink::with_exporter(opts, metrics, exporter))
    }

    /// A sink around a started export thread (tests give it their own exporter).
    pub fn with_exporter(opts: MapOptions, metrics: Option<Metrics>, exporter: Exporter) -> OtelSink {
        OtelSink { mapper: SpanMapper::new(opts), metrics, exporter, pending: Vec::new(), finished: Vec::new() }
    }

    /// What the export side did so far.
    pub fn exporter(&self) -> &Exporter {
        &self.exporter
    }

    /// Count what finished and queue its spans.
    fn take_finished(&mut self) {
        for f in self.finished.drain(..) {
            if let Some(m) = &self.metrics {
                m.record(&f);
            }
            self.pending.push(f.into_span());
        }
    }

    fn hand_over(&mut self) {
        if !self.pending.is_empty() {
            self.exporter.offer(std::mem::take(&mut self.pending));
        }
    }
}

impl Sink for OtelSink {
    fn name(&self) -> &'static str {
        NAME
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.mapper.handle(ev, &mut self.finished);
        }
        self.take_finished();
        if self.pending.len() >= self.exporter.batch_spans() {
            self.hand_over();
        }
        Ok(())
    }

    /// Hand what finished to the export thread (never waits: live runs show up at once).
    fn flush(&mut self) -> Result<(), SinkError> {
        self.hand_over();
        Ok(())
    }

    /// Wait, bounded, until the collector has what finished so far (or it is counted as lost).
    fn checkpoint(&mut self) -> Result<(), SinkError> {
        // Subagent runs whose parent call never came go as traces of their own.
        self.mapper.release_waiting(&mut self.finished);
        self.take_finished();
        self.hand_over();
        if !self.exporter.flush() {
            tracing::debug!("OTLP sink: checkpoint not answered within its timeout");
        }
        Ok(())
    }

    fn loss_probe(&self) -> Option<LossProbe> {
        let counters = self.exporter.shared_counters();
        Some(Arc::new(move || counters.losses()))
    }
}

/// `service.name` as configured, plus `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(service_name: &str) -> Resource {
    Resource::builder_empty()
        .with_detector(Box::new(EnvResourceDetector::new()))
        .with_service_name(service_name.to_owned())
        .build()
}

fn otlp_metric_exporter(cfg: &OtelConfig) -> Result<opentelemetry_otlp::MetricExporter, String> {
    let built = match cfg.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(cfg.metrics_url())
            .with_timeout(REQUEST_TIMEOUT)
            .build(),
        Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(cfg.metrics_url())
            .with_timeout(REQUEST_TIMEOUT)
            .build(),
    };
    built.map_err(|e| e.to_string())
}

/// 16 bytes that differ per sink (ids of two replays of one file must not collide).
fn random_salt() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        h.write_u32(std::process::id());
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}
