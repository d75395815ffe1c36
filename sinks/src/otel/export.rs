//! The export side: a thread owned by the sink, with its own current-thread tokio runtime, that
//! sends spans to the collector in batches, retries failed exports with backoff, and counts what
//! it could not deliver. The sink hands it spans without ever waiting ([`Exporter::offer`]); the
//! queue between them is bounded in spans, and what does not fit is dropped and counted. A
//! checkpoint ([`Exporter::flush`]) waits a bounded time: from then on the collector is given up
//! on — a request still waiting for its answer is abandoned, what fails is dropped instead of
//! retried, all of it counted — so shutdown never hangs on an absent or silent collector.
//! [`ExportCounters::losses`] says what was lost, from any thread.
//! Blocking calls (`block_on`, the exporter's shutdown) run only on this thread, never on an
//! async worker.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use opentelemetry_otlp::{RetryPolicy, WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

use super::config::{OtelConfig, Protocol, REQUEST_TIMEOUT};
use super::metrics::MetricsExport;
use crate::SinkLoss;

/// First retry delay; it doubles up to [`MAX_BACKOFF`].
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often the retry wait looks up to see whether a checkpoint's deadline passed.
const BACKOFF_STEP: Duration = Duration::from_millis(50);
/// How long the export thread has, once given up on its collector, to drop and count what it holds.
const GIVE_UP_GRACE: Duration = Duration::from_millis(500);
/// How often metrics are pushed while spans flow.
pub const METRICS_INTERVAL: Duration = Duration::from_secs(10);

/// What the export side did, shared by the sink (offers) and the export thread.
#[derive(Debug, Default)]
pub struct ExportCounters {
    /// Spans handed to the export thread and not yet exported or given up on.
    pub queued: AtomicUsize,
    pub exported: AtomicU64,
    /// Dropped because the queue was full.
    pub dropped_queue_full: AtomicU64,
    /// Dropped after failed exports, once a checkpoint's deadline passed.
    pub dropped_export_failed: AtomicU64,
    /// Failed export attempts (each retried or, past a deadline, dropped).
    pub failed_attempts: AtomicU64,
    /// A checkpoint's deadline passed: stop retrying, abandon what waits for the collector.
    give_up: AtomicBool,
    last_error: Mutex<Option<String>>,
}

impl ExportCounters {
    /// What was lost so far: spans dropped on a full queue, given up on after failed exports,
    /// and still queued (not exported, not given up on) when asked — at exit, those never leave.
    pub fn losses(&self) -> Option<SinkLoss> {
        let full = self.dropped_queue_full.load(Ordering::Relaxed);
        let failed = self.dropped_export_failed.load(Ordering::Relaxed);
        let queued = self.queued.load(Ordering::Relaxed) as u64;
        let count = full + failed + queued;
        if count == 0 {
            return None;
        }
        let mut why = Vec::new();
        if full > 0 {
            why.push(format!("{full} on a full export queue"));
        }
        if failed > 0 {
            let error = self.last_error().unwrap_or_default();
            why.push(format!("{failed} not accepted by the collector before the deadline: {error}"));
        }
        if queued > 0 {
            why.push(format!("{queued} still queued at exit"));
        }
        Some(SinkLoss { count, unit: "spans", why: why.join(", ") })
    }

    /// The last export error, if any.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    fn set_error(&self, e: String) {
        if let Ok(mut slot) = self.last_error.lock() {
            *slot = Some(e);
        }
    }
}

enum Msg {
    Spans(Vec<SpanData>),
    /// Everything before it was exported or given up on; push metrics; reply.
    Flush(Sender<()>),
    Stop,
}

/// Why the export side could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot start the OTLP export thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error("cannot build the OTLP exporter: {0}")]
    Build(String),
}

/// The sink's end of the export thread.
pub struct Exporter {
    tx: Sender<Msg>,
    counters: Arc<ExportCounters>,
    capacity: usize,
    batch: usize,
    flush_timeout: Duration,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").field("capacity", &self.capacity).field("counters", &self.counters).finish()
    }
}

/// Limits of one export thread.
#[derive(Clone, Copy, Debug)]
pub struct ExportLimits {
    /// Spans queued at most; more are dropped and counted.
    pub queue_spans: usize,
    /// Spans per export request.
    pub batch_spans: usize,
    /// How long a checkpoint waits.
    pub flush_timeout: Duration,
}

/// What the export thread builds once its runtime runs: the span exporter and, optionally, the
/// metrics pipeline.
pub type Build<E> = Box<dyn FnOnce() -> Result<(E, Option<MetricsExport>), String> + Send>;

impl Exporter {
    /// Start the export thread; `build` runs on it, inside its runtime (the gRPC channel needs one).
    pub fn start<E: SpanExporter + 'static>(
        build: Build<E>,
        resource: Resource,
        limits: ExportLimits,
    ) -> Result<Exporter, ExportError> {
        let (tx, rx) = unbounded();
        let (built_tx, built_rx) = bounded::<Result<(), String>>(1);
        let counters = Arc::new(ExportCounters::default());
        let c = counters.clone();
        let batch = limits.batch_spans.max(1);
        let thread = std::thread::Builder::new().name("toolstream-otlp-export".into()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = built_tx.send(Err(format!("tokio runtime: {e}")));
                    return;
                }
            };
            let built = {
                let _in_runtime = rt.enter();
                build()
            };
            match built {
                Ok((mut exporter, metrics)) => {
                    exporter.set_resource(&resource);
                    let _ = built_tx.send(Ok(()));
                    let mut worker =
                        Worker { rt: &rt, exporter, metrics, counters: &c, batch, last_push: Instant::now() };
                    worker.run(&rx);
                }
                Err(e) => {
                    let _ = built_tx.send(Err(e));
                }
            }
        })?;
        match built_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ExportError::Build(e)),
            Err(_) => return Err(ExportError::Build("the export thread ended while starting".into())),
        }
        Ok(Exporter {
            tx,
            counters,
            capacity: limits.queue_spans,
            batch,
            flush_timeout: limits.flush_timeout,
            thread: Some(thread),
        })
    }

    /// Spans per export request.
    pub fn batch_spans(&self) -> usize {
        self.batch
    }

    pub fn counters(&self) -> &ExportCounters {
        &self.counters
    }

    /// The counters, to read from another thread (what was lost, at exit).
    pub fn shared_counters(&self) -> Arc<ExportCounters> {
        self.counters.clone()
    }

    /// Queue spans for export without waiting: what does not fit in the queue is dropped and
    /// counted.
    pub fn offer(&self, mut spans: Vec<SpanData>) {
        if spans.is_empty() {
            return;
        }
        let queued = self.counters.queued.load(Ordering::Relaxed);
        let room = self.capacity.saturating_sub(queued);
        if spans.len() > room {
            let dropped = spans.len() - room;
            spans.truncate(room);
            self.counters.dropped_queue_full.fetch_add(dropped as u64, Ordering::Relaxed);
            tracing::trace!(dropped, "OTLP export queue full: spans dropped");
        }
        if spans.is_empty() {
            return;
        }
        let n = spans.len();
        self.counters.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(Msg::Spans(spans)).is_err() {
            self.counters.queued.fetch_sub(n, Ordering::Relaxed);
            self.counters.dropped_export_failed.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// Wait (at most the flush timeout) until everything offered so far was exported or given up
    /// on; failed exports are no longer retried meanwhile. Past the timeout the collector is given
    /// up on for good (checkpoints come at the end and on Ctrl-C): what is in flight is abandoned,
    /// what fails or is still queued is dropped and counted, and a later checkpoint does not wait
    /// for the collector again. Whether the export side answered.
    pub fn flush(&self) -> bool {
        let (reply, answered) = bounded(1);
        if self.tx.send(Msg::Flush(reply)).is_err() {
            return false;
        }
        let wait = if self.counters.give_up.load(Ordering::Relaxed) { Duration::ZERO } else { self.flush_timeout };
        if answered.recv_timeout(wait).is_ok() {
            return true;
        }
        self.counters.give_up.store(true, Ordering::Relaxed);
        answered.recv_timeout(GIVE_UP_GRACE).is_ok()
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        // The thread ends once it reads `Stop` (it gives up on failing exports by then); it is
        // joined only when it already ended, so dropping the sink never hangs.
        self.counters.give_up.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + GIVE_UP_GRACE;
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// The export thread's state.
struct Worker<'a, E> {
    rt: &'a tokio::runtime::Runtime,
    exporter: E,
    metrics: Option<MetricsExport>,
    counters: &'a ExportCounters,
    batch: usize,
    last_push: Instant,
}

impl<E: SpanExporter> Worker<'_, E> {
    fn run(&mut self, rx: &Receiver<Msg>) {
        let mut buf: Vec<SpanData> = Vec::new();
        let mut next: Option<Msg> = None;
        loop {
            let msg = match next.take() {
                Some(m) => m,
                None => match rx.recv_timeout(METRICS_INTERVAL) {
                    Ok(m) => m,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        self.push_metrics(false);
                        continue;
                    }
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Msg::Stop,
                },
            };
            match msg {
                Msg::Spans(spans) => {
                    buf.extend(spans);
                    // Fill the batch from what else is waiting.
                    while buf.len() < self.batch {
                        match rx.try_recv() {
                            Ok(Msg::Spans(more)) => buf.extend(more),
                            Ok(other) => {
                                next = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    while !buf.is_empty() {
                        let rest = if buf.len() > self.batch { buf.split_off(self.batch) } else { Vec::new() };
                        let chunk = std::mem::replace(&mut buf, rest);
                        self.rt.block_on(export_with_retry(&self.exporter, chunk, self.counters));
                    }
                    if self.last_push.elapsed() >= METRICS_INTERVAL {
                        self.push_metrics(false);
                    }
                }
                Msg::Flush(reply) => {
                    self.push_metrics(false);
                    let _ = reply.send(());
                }
                Msg::Stop => {
                    self.push_metrics(true);
                    if let Err(e) = self.exporter.shutdown_with_timeout(Duration::from_secs(1)) {
                        tracing::debug!(error = %e, "OTLP span exporter shutdown");
                    }
                    return;
                }
            }
        }
    }

    /// Push the metrics once; a push the collector does not answer is abandoned once a
    /// checkpoint gives up (metrics are totals: the next push carries them again).
    fn push_metrics(&mut self, last: bool) {
        self.last_push = Instant::now();
        if let Some(m) = &mut self.metrics {
            let giving_up = self.counters.give_up.load(Ordering::Relaxed);
            if self.rt.block_on(until_given_up(self.counters, m.push(giving_up, last))).is_none() {
                tracing::debug!("OTLP metrics push abandoned: no answer before the deadline");
            }
        }
    }
}

/// Export one batch; retry with backoff until it succeeds or a checkpoint's deadline passes. An
/// export still waiting for the collector then is abandoned (a collector that accepts connections
/// and never answers would hold it for the whole request timeout), and its spans counted.
async fn export_with_retry<E: SpanExporter>(exporter: &E, batch: Vec<SpanData>, c: &ExportCounters) {
    let n = batch.len();
    let mut delay = INITIAL_BACKOFF;
    loop {
        if c.give_up.load(Ordering::Relaxed) {
            c.dropped_export_failed.fetch_add(n as u64, Ordering::Relaxed);
            break;
        }
        match until_given_up(c, exporter.export(batch.clone())).await {
            Some(Ok(())) => {
                c.exported.fetch_add(n as u64, Ordering::Relaxed);
                break;
            }
            Some(Err(e)) => {
                c.failed_attempts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, spans = n, retry_in_ms = delay.as_millis() as u64, "OTLP export failed");
                c.set_error(e.to_string());
            }
            None => {
                c.failed_attempts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(spans = n, "OTLP export abandoned: no answer before the deadline");
                c.set_error(NO_ANSWER.to_owned());
                c.dropped_export_failed.fetch_add(n as u64, Ordering::Relaxed);
                break;
            }
        }
        let until = Instant::now() + delay;
        while Instant::now() < until && !c.give_up.load(Ordering::Relaxed) {
            tokio::time::sleep(BACKOFF_STEP.min(until.saturating_duration_since(Instant::now()))).await;
        }
        delay = (delay * 2).min(MAX_BACKOFF);
    }
    c.queued.fetch_sub(n, Ordering::Relaxed);
}

/// Why spans were given up on when the collector never answered.
const NO_ANSWER: &str = "no answer from the collector";

/// Run `work` until it ends, or until a checkpoint gives up (then `None`: the work is dropped,
/// which cancels a request in flight).
async fn until_given_up<F: std::future::Future>(c: &ExportCounters, work: F) -> Option<F::Output> {
    let given_up = async {
        while !c.give_up.load(Ordering::Relaxed) {
            tokio::time::sleep(BACKOFF_STEP).await;
        }
    };
    tokio::select! {
        out = work => Some(out),
        () = given_up => None,
    }
}

/// The OTLP span exporter for `cfg` (built on the export thread, inside its runtime). Retries are
/// ours ([`export_with_retry`]), so the exporter's own are off.
pub fn otlp_span_exporter(cfg: &OtelConfig) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let built = match cfg.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(cfg.traces_url())
            .with_timeout(REQUEST_TIMEOUT)
            .with_retry_policy(RetryPolicy::disabled())
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(cfg.traces_url())
            .with_timeout(REQUEST_TIMEOUT)
            .with_retry_policy(RetryPolicy::disabled())
            .build(),
    };
    built.map_err(|e| e.to_string())
}
