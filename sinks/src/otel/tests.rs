//! Unit tests of the OTLP sink: the span mapping (pure), the configuration, and the export
//! thread's retries, drop counts and bounded flush against an in-process fake exporter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::trace::{SpanId, Status};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use serde_json::json;
use toolstream_schemas::{
    CallRef, Card, IncompleteCall, IncompleteReason, Output, OutputEvent, ParentCall, RunContext, RunId, RunStatus,
    RunTotals, ShellStream, StopReason, TokenUsage, Tool, ToolKind, Usage,
};

use super::attrs as a;
use super::config::{
    parse_headers, service_name, ConfigError, ContentCapture, OtelConfig, OtelEnv, Protocol, TextScrub,
};
use super::export::{ExportLimits, Exporter};
use super::spans::{bound_content, Finished, MapOptions, SpanMapper, CONTENT_MAX_CHARS};

fn ev(run: &Arc<RunId>, at_ms: u64, kind: Output) -> OutputEvent {
    OutputEvent { run: run.clone(), at_ms, kind }
}

fn card(hash: &str, tool: Tool, is_error: bool, incomplete: Option<IncompleteReason>, times: (u64, u64)) -> Output {
    Output::Card(Box::new(Card {
        turn: 1,
        call: CallRef { hash: hash.into() },
        replay_id: format!("r-{hash}"),
        source_tool: tool,
        pi_tool: "bash".into(),
        title: "Cursor shell".into(),
        summary: "npm test".into(),
        headline: "$ npm test".into(),
        args: json!({"command": "npm test", "toolName": "echo"}),
        content: "ok\nall passed".into(),
        result_text: "ok\nall passed".into(),
        preview: Vec::new(),
        preview_hidden: 0,
        diff: Vec::new(),
        diff_hidden: 0,
        details: Default::default(),
        is_error,
        incomplete,
        started_ms: Some(times.0),
        completed_ms: Some(times.1),
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    }))
}

fn incomplete(hash: &str, visible: bool) -> Output {
    Output::IncompleteCall(Box::new(IncompleteCall {
        call: CallRef { hash: hash.into() },
        source_tool: Tool::Known(ToolKind::Shell),
        title: "Cursor shell".into(),
        reason: IncompleteReason::Abort,
        visible,
    }))
}

fn closed(status: RunStatus, reported: Option<TokenUsage>) -> Output {
    Output::RunClosed {
        status,
        final_text: String::new(),
        totals: Box::new(RunTotals { reported_usage: reported, ..RunTotals::default() }),
        error: (status != RunStatus::Finished).then(|| "agent stopped".to_owned()),
    }
}

fn map(events: &[OutputEvent], capture: bool) -> (Vec<Finished>, SpanMapper) {
    map_with(events, if capture { ContentCapture::SpanOnly } else { ContentCapture::NoContent })
}

/// A scrubber that stands for the engine's: it removes `SECRET`.
fn test_scrub() -> TextScrub {
    TextScrub(Arc::new(|s: &str| s.replace("SECRET", "[redacted]")))
}

fn map_with(events: &[OutputEvent], capture: ContentCapture) -> (Vec<Finished>, SpanMapper) {
    let mut m = SpanMapper::new(MapOptions { capture, scrub: test_scrub(), id_salt: [7; 16] });
    let mut out = Vec::new();
    for e in events {
        m.handle(e, &mut out);
    }
    (out, m)
}

fn attr<'s>(s: &'s SpanData, k: &str) -> Option<&'s Value> {
    s.attributes.iter().find(|kv| kv.key == Key::from(k.to_owned())).map(|kv| &kv.value)
}

fn str_attr(s: &SpanData, k: &str) -> Option<String> {
    attr(s, k).map(|v| v.as_str().into_owned())
}

/// A cancelled run: a lifecycle line and shell output then a good card, an error card, a hidden
/// incomplete call, and a visible one followed by its card.
fn cancelled_run() -> Vec<OutputEvent> {
    let run = Arc::new(RunId { session: "chat-1".into(), seq: 1 });
    let shell = || Tool::Known(ToolKind::Shell);
    vec![
        ev(
            &run,
            0,
            Output::RunOpened { cwd: None, model: Some("gpt-5".into()), prompt: Some("fix it".into()), context: None },
        ),
        ev(
            &run,
            1_000,
            Output::LifecycleLine {
                call: CallRef { hash: "aaaa0001".into() },
                title: "Cursor shell".into(),
                label: "npm test".into(),
            },
        ),
        ev(
            &run,
            1_100,
            Output::ShellProgress {
                call: CallRef { hash: "aaaa0001".into() },
                stream: ShellStream::Stdout,
                line: "ok".into(),
            },
        ),
        ev(&run, 1_500, card("aaaa0001", shell(), false, None, (1_010, 1_400))),
        ev(&run, 1_600, card("aaaa0002", shell(), true, None, (1_450, 1_550))),
        ev(
            &run,
            1_700,
            Output::MessageEnded {
                turn: 1,
                stop_reason: StopReason::ToolUse,
                usage: Box::new(Usage { input: 5, output: 1, ..Usage::default() }),
                error: None,
            },
        ),
        ev(&run, 2_000, incomplete("aaaa0003", false)),
        ev(&run, 2_000, incomplete("aaaa0004", true)),
        ev(&run, 2_000, card("aaaa0004", shell(), false, Some(IncompleteReason::Abort), (1_800, 2_000))),
        ev(
            &run,
            2_100,
            closed(
                RunStatus::Cancelled,
                Some(TokenUsage {
                    input_tokens: 100,
                    output_tokens: 20,
                    cache_read_tokens: 300,
                    cache_write_tokens: 4,
                    reasoning_tokens: None,
                }),
            ),
        ),
    ]
}

#[test]
fn a_run_maps_to_one_agent_span_and_one_child_span_per_call() {
    let (out, mapper) = map(&cancelled_run(), false);
    assert_eq!(mapper.open_runs(), 0, "per-run state is released at RunClosed");
    let spans: Vec<&SpanData> = out.iter().map(Finished::span).collect();
    assert_eq!(spans.len(), 5);
    let run = spans[4];
    assert_eq!(run.name, a::RUN_SPAN_NAME);
    assert_eq!(run.parent_span_id, SpanId::INVALID);
    assert_eq!(run.span_kind, opentelemetry::trace::SpanKind::Internal);
    assert_eq!(str_attr(run, a::OPERATION_NAME).as_deref(), Some("invoke_agent"));
    assert_eq!(str_attr(run, a::PROVIDER_NAME).as_deref(), Some("cursor"));
    assert_eq!(str_attr(run, a::CONVERSATION_ID).as_deref(), Some("chat-1"));
    assert_eq!(str_attr(run, a::REQUEST_MODEL).as_deref(), Some("gpt-5"));
    assert_eq!(attr(run, a::USAGE_INPUT_TOKENS), Some(&Value::I64(100)), "the reported run total wins");
    assert_eq!(attr(run, a::USAGE_OUTPUT_TOKENS), Some(&Value::I64(20)));
    assert_eq!(attr(run, a::USAGE_CACHE_READ_INPUT_TOKENS), Some(&Value::I64(300)));
    assert_eq!(attr(run, a::USAGE_CACHE_CREATION_INPUT_TOKENS), Some(&Value::I64(4)));
    assert_eq!(str_attr(run, a::ERROR_TYPE).as_deref(), Some("cancelled"));
    assert!(matches!(run.status, Status::Error { .. }));
    // The run starts at its first timed event (time 0 is no time), not at the epoch.
    assert_eq!(run.start_time, std::time::UNIX_EPOCH + Duration::from_millis(1_000));
    assert_eq!(run.end_time, std::time::UNIX_EPOCH + Duration::from_millis(2_100));

    let tools = &spans[..4];
    let hashes: Vec<String> = tools.iter().map(|s| str_attr(s, a::TOOL_CALL_ID).unwrap()).collect();
    assert_eq!(hashes, ["aaaa0001", "aaaa0002", "aaaa0003", "aaaa0004"]);
    for t in tools {
        assert_eq!(t.parent_span_id, run.span_context.span_id());
        assert_eq!(t.span_context.trace_id(), run.span_context.trace_id());
        assert_eq!(t.name, "execute_tool shell");
        assert_eq!(str_attr(t, a::TOOL_TYPE).as_deref(), Some("function"));
        assert!(attr(t, a::TOOL_CALL_ARGUMENTS).is_none() && attr(t, a::TOOL_CALL_RESULT).is_none());
    }
    let errors: Vec<Option<String>> = tools.iter().map(|t| str_attr(t, a::ERROR_TYPE)).collect();
    assert_eq!(errors, [None, Some("tool_error".into()), Some("abort".into()), Some("abort".into())]);
    let statuses: Vec<bool> = tools.iter().map(|t| matches!(t.status, Status::Error { .. })).collect();
    assert_eq!(statuses, [false, true, true, true]);
    assert_eq!(tools[0].status, Status::Unset, "success is unset, not OK");
    assert_eq!(tools[0].start_time, std::time::UNIX_EPOCH + Duration::from_millis(1_010));
    assert_eq!(tools[0].end_time, std::time::UNIX_EPOCH + Duration::from_millis(1_400));
    let names: Vec<&str> = tools[0].events.iter().map(|e| e.name.as_ref()).collect();
    assert_eq!(names, [a::EVENT_LIFECYCLE, a::EVENT_SHELL_OUTPUT]);
    assert!(
        tools[0].events.events[1].attributes.iter().all(|kv| kv.key.as_str() != a::SHELL_LINE),
        "no shell line without the opt-in"
    );
    let ids: std::collections::HashSet<SpanId> = spans.iter().map(|s| s.span_context.span_id()).collect();
    assert_eq!(ids.len(), 5, "span ids are distinct");
}

#[test]
fn content_only_with_the_opt_in_and_bounded() {
    let (out, _) = map(&cancelled_run(), true);
    let first = out[0].span();
    assert_eq!(str_attr(first, a::TOOL_CALL_RESULT).as_deref(), Some("ok\nall passed"));
    assert!(str_attr(first, a::TOOL_CALL_ARGUMENTS).unwrap().contains("npm test"));
    assert!(first.events.events[1].attributes.iter().any(|kv| kv.key.as_str() == a::SHELL_LINE));
    let long = "x".repeat(CONTENT_MAX_CHARS + 10);
    let cut = bound_content(&long);
    assert!(
        cut.chars().count() < CONTENT_MAX_CHARS + 40 && cut.ends_with("more lines truncated)"),
        "{}",
        &cut[cut.len() - 40..]
    );
    let many = "l\n".repeat(900);
    assert!(bound_content(&many).ends_with("... (101 more lines truncated)"));
    assert_eq!(bound_content("short"), "short");
}

#[test]
fn tokens_fall_back_to_the_messages_and_mcp_tools_are_extensions() {
    let run = Arc::new(RunId { session: "s".into(), seq: 2 });
    let usage = Usage { input: 3, output: 2, cache_read: 1, cache_write: 0, ..Usage::default() };
    let ended = || Output::MessageEnded { turn: 1, stop_reason: StopReason::Stop, usage: Box::new(usage), error: None };
    let events = [
        ev(&run, 10, card("bbbb0001", Tool::Known(ToolKind::Mcp), false, None, (5, 9))),
        ev(&run, 11, ended()),
        ev(&run, 12, ended()),
        ev(&run, 13, closed(RunStatus::Finished, None)),
    ];
    let (out, _) = map(&events, false);
    let (tool, run_span) = (out[0].span(), out[1].span());
    assert_eq!(tool.name, "execute_tool echo", "the MCP tool's own name");
    assert_eq!(str_attr(tool, a::TOOL_TYPE).as_deref(), Some("extension"));
    assert_eq!(attr(run_span, a::USAGE_INPUT_TOKENS), Some(&Value::I64(6)));
    assert_eq!(attr(run_span, a::USAGE_CACHE_READ_INPUT_TOKENS), Some(&Value::I64(2)));
    assert!(attr(run_span, a::ERROR_TYPE).is_none() && run_span.status == Status::Unset);
}

#[test]
fn configuration_from_the_environment() {
    let env = |endpoint: Option<&str>, protocol: Option<&str>| OtelEnv {
        endpoint: endpoint.map(str::to_owned),
        protocol: protocol.map(str::to_owned),
        ..OtelEnv::default()
    };
    let c = OtelConfig::new(Some("http://h:1/"), None, &env(None, Some("grpc"))).unwrap();
    assert_eq!((c.protocol, c.traces_url()), (Protocol::HttpProtobuf, "http://h:1/v1/traces".to_owned()));
    let c = OtelConfig::new(None, None, &env(None, Some("grpc"))).unwrap();
    assert_eq!((c.protocol, c.endpoint.as_str()), (Protocol::Grpc, "http://localhost:4317"));
    let c = OtelConfig::new(None, None, &env(Some("http://c:4318"), None)).unwrap();
    assert_eq!((c.protocol, c.metrics_url()), (Protocol::HttpProtobuf, "http://c:4318/v1/metrics".to_owned()));
    assert_eq!(c.capture_content, ContentCapture::NoContent, "content is the engine's setting, off by default");
    let modes: Vec<ContentCapture> = ["", "false", "NO_CONTENT", "TRUE", "span_only", "EVENT_ONLY", "SPAN_AND_EVENT"]
        .iter()
        .map(|v| ContentCapture::parse(v).unwrap())
        .collect();
    use ContentCapture::{EventOnly, NoContent, SpanAndEvent, SpanOnly};
    assert_eq!(modes, [NoContent, NoContent, NoContent, SpanOnly, SpanOnly, EventOnly, SpanAndEvent]);
    assert_eq!(ContentCapture::parse("yes"), Err(ConfigError::Capture("yes".into())));
    assert_eq!(
        OtelConfig::new(None, None, &env(None, Some("http/json"))),
        Err(ConfigError::Protocol("http/json".into()))
    );
    assert!(OtelConfig::new(Some("127.0.0.1:4318"), None, &env(None, None)).is_err());
    let bad_headers = OtelEnv { headers: Some("novalue".into()), ..OtelEnv::default() };
    assert!(OtelConfig::new(None, None, &bad_headers).is_err());
    assert!(!format!("{bad_headers:?}").contains("novalue"), "headers may carry credentials");
    assert_eq!(parse_headers("a=1, b=x%20y").unwrap(), [("a".into(), "1".into()), ("b".into(), "x y".into())]);
    let named = |service: Option<&str>, attributes: Option<&str>| OtelEnv {
        service_name: service.map(str::to_owned),
        resource_attributes: attributes.map(str::to_owned),
        ..OtelEnv::default()
    };
    assert_eq!(service_name(&named(None, None)), "toolstream");
    assert_eq!(service_name(&named(None, Some("a=b,service.name=agents"))), "agents");
    assert_eq!(service_name(&named(Some("mine"), Some("service.name=agents"))), "mine");
}

/// Fails its first `fail_first` exports (every one with `usize::MAX`); records what it got. With
/// `silent`, never answers at all (a collector that accepts connections and says nothing).
#[derive(Debug, Clone, Default)]
struct Fake {
    fail_first: usize,
    silent: bool,
    attempts: Arc<AtomicUsize>,
    got: Arc<Mutex<usize>>,
}

impl SpanExporter for Fake {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if self.silent {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            return std::future::pending().await;
        }
        let k = self.attempts.fetch_add(1, Ordering::SeqCst);
        if k < self.fail_first {
            return Err(OTelSdkError::InternalFailure("collector down".into()));
        }
        *self.got.lock().unwrap() += batch.len();
        Ok(())
    }
}

fn spans(n: usize) -> Vec<SpanData> {
    let run = Arc::new(RunId { session: "s".into(), seq: 1 });
    let events: Vec<OutputEvent> = (0..n)
        .map(|i| ev(&run, 10, card(&format!("{i:08x}"), Tool::Known(ToolKind::Shell), false, None, (1, 2))))
        .collect();
    map(&events, false).0.into_iter().map(Finished::into_span).collect()
}

fn exporter(fake: &Fake, queue: usize, flush_timeout: Duration) -> Exporter {
    let f = fake.clone();
    let limits = ExportLimits { queue_spans: queue, batch_spans: 100, flush_timeout };
    Exporter::start(Box::new(move || Ok((f, None))), Resource::builder_empty().build(), limits).unwrap()
}

#[test]
fn failed_exports_are_retried_until_they_succeed() {
    let fake = Fake { fail_first: 3, ..Fake::default() };
    let e = exporter(&fake, 1_000, Duration::from_secs(10));
    e.offer(spans(250));
    assert!(e.flush());
    assert_eq!(*fake.got.lock().unwrap(), 250, "nothing lost to three failures");
    let c = e.counters();
    assert_eq!(c.exported.load(Ordering::Relaxed), 250);
    assert_eq!(c.failed_attempts.load(Ordering::Relaxed), 3);
    assert_eq!(c.dropped_export_failed.load(Ordering::Relaxed) + c.dropped_queue_full.load(Ordering::Relaxed), 0);
}

#[test]
fn a_full_queue_drops_and_counts_and_a_dead_collector_is_given_up_on_in_bounded_time() {
    let fake = Fake { fail_first: usize::MAX, ..Fake::default() };
    let e = exporter(&fake, 150, Duration::from_millis(300));
    e.offer(spans(100));
    e.offer(spans(100));
    let started = Instant::now();
    let answered = e.flush();
    assert!(started.elapsed() < Duration::from_secs(3), "flush is bounded: {:?}", started.elapsed());
    assert!(answered);
    let c = e.counters();
    assert_eq!(c.dropped_queue_full.load(Ordering::Relaxed), 50);
    assert_eq!(c.dropped_export_failed.load(Ordering::Relaxed), 150);
    assert_eq!(c.queued.load(Ordering::Relaxed), 0);
    assert_eq!(c.exported.load(Ordering::Relaxed), 0);
    assert_eq!(c.last_error().as_deref().map(|s| s.contains("collector down")), Some(true));
}

#[test]
fn a_collector_that_never_answers_is_abandoned_at_the_deadline_and_every_span_counted() {
    let fake = Fake { silent: true, ..Fake::default() };
    let e = exporter(&fake, 1_000, Duration::from_millis(300));
    e.offer(spans(250));
    let probe = e.shared_counters();
    let started = Instant::now();
    assert!(e.flush(), "the export side answers once it gave up");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "an export in flight does not hold the flush: {:?}",
        started.elapsed()
    );
    let loss = probe.losses().unwrap();
    assert_eq!(loss.count, 250, "{loss:?}");
    assert_eq!(loss.why, "250 not accepted by the collector before the deadline: no answer from the collector");
    // Given up on: a later checkpoint does not wait for it again.
    let again = Instant::now();
    assert!(e.flush());
    assert!(again.elapsed() < Duration::from_millis(300), "{:?}", again.elapsed());
    assert_eq!(*fake.got.lock().unwrap(), 0);
}

#[test]
fn spans_still_queued_are_counted_whenever_they_are_asked_for() {
    // The export thread is busy with the first batch (no answer yet): what is queued is what
    // would be lost if the process ended now.
    let fake = Fake { silent: true, ..Fake::default() };
    let e = exporter(&fake, 1_000, Duration::from_secs(30));
    e.offer(spans(120));
    let loss = e.counters().losses().unwrap();
    assert_eq!(loss.count, 120);
    assert_eq!(loss.why, "120 still queued at exit");
}

/// The sum (counters) or count and sum (histograms) of one metric's data points, keyed by the
/// points' attribute values joined with `/`.
fn collected(
    reader: &super::metrics::SharedReader,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, (u64, f64)>> {
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
    use opentelemetry_sdk::metrics::reader::MetricReader;
    let mut rm = ResourceMetrics::default();
    reader.collect(&mut rm).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for scope in rm.scope_metrics() {
        for m in scope.metrics() {
            let key = |attrs: Vec<String>| attrs.join("/");
            let points: &mut std::collections::BTreeMap<String, (u64, f64)> =
                out.entry(m.name().to_owned()).or_default();
            match m.data() {
                AggregatedMetrics::U64(MetricData::Sum(s)) => {
                    for p in s.data_points() {
                        points.insert(key(p.attributes().map(|kv| kv.value.to_string()).collect()), (p.value(), 0.0));
                    }
                }
                AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                    for p in h.data_points() {
                        points.insert(
                            key(p.attributes().map(|kv| kv.value.to_string()).collect()),
                            (p.count(), p.sum() as f64),
                        );
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                    for p in h.data_points() {
                        points
                            .insert(key(p.attributes().map(|kv| kv.value.to_string()).collect()), (p.count(), p.sum()));
                    }
                }
                other => panic!("unexpected metric data for {}: {other:?}", m.name()),
            }
        }
    }
    out
}

#[test]
fn metrics_count_calls_by_tool_and_outcome_durations_and_tokens_by_kind() {
    let (finished, _) = map(&cancelled_run(), false);
    let (metrics, reader) = super::metrics::Metrics::new(Resource::builder_empty().build());
    for f in &finished {
        metrics.record(f);
    }
    let m = collected(&reader);
    // Four shell calls: one success, one error result, two incomplete (errors).
    let calls = &m[a::METRIC_TOOL_CALLS];
    assert_eq!(calls.get("shell/success").map(|p| p.0), Some(1), "{calls:?}");
    assert_eq!(calls.get("shell/error").map(|p| p.0), Some(3), "{calls:?}");
    // Durations from the recorded start and end: 390 ms + 100 ms + the incomplete ones.
    let duration = &m[a::METRIC_TOOL_DURATION]["shell"];
    assert_eq!(duration.0, 4);
    assert!(duration.1 >= 0.49, "{duration:?}");
    // Tokens by kind from the reported run total.
    let tokens = &m[a::METRIC_TOKENS];
    let by_kind: Vec<(&str, u64)> = tokens.iter().map(|(k, v)| (k.as_str(), v.0)).collect();
    assert_eq!(by_kind, [("cache_creation", 4), ("cache_read", 300), ("input", 100), ("output", 20)]);
    // The GenAI conventions' metrics: the run's and each call's duration, the run's tokens.
    // Points are found by their attribute values (in whatever order the SDK keeps them).
    let point = |metric: &str, values: &[&str]| -> (u64, f64) {
        let points = &m[metric];
        let found: Vec<&(u64, f64)> = points
            .iter()
            .filter(|(k, _)| {
                let mut parts: Vec<&str> = k.split('/').collect();
                let mut want = values.to_vec();
                parts.sort_unstable();
                want.sort_unstable();
                parts == want
            })
            .map(|(_, v)| v)
            .collect();
        assert_eq!(found.len(), 1, "{metric} {values:?} in {points:?}");
        *found[0]
    };
    let op = a::METRIC_GENAI_OPERATION_DURATION;
    let run = point(op, &["invoke_agent", "cursor", "gpt-5", "cancelled"]);
    assert_eq!(run.0, 1);
    assert!((run.1 - 1.1).abs() < 1e-9, "1,000 ms to 2,100 ms: {run:?}");
    assert_eq!(point(op, &["execute_tool", "cursor"]).0, 1, "the good call");
    assert_eq!(point(op, &["execute_tool", "cursor", "tool_error"]).0, 1);
    assert_eq!(point(op, &["execute_tool", "cursor", "abort"]).0, 2);
    let usage = a::METRIC_GENAI_TOKEN_USAGE;
    assert_eq!(point(usage, &["invoke_agent", "cursor", "gpt-5", "input"]), (1, 100.0));
    assert_eq!(point(usage, &["invoke_agent", "cursor", "gpt-5", "output"]), (1, 20.0));
}

fn opened(model: Option<&str>, prompt: Option<&str>, context: Option<RunContext>) -> Output {
    Output::RunOpened {
        cwd: None,
        model: model.map(str::to_owned),
        prompt: prompt.map(str::to_owned),
        context: context.map(Box::new),
    }
}

fn task_card(hash: &str, times: (u64, u64)) -> Output {
    let mut c = card(hash, Tool::Known(ToolKind::Task), false, None, times);
    if let Output::Card(c) = &mut c {
        c.args = json!({"description": "look around"});
    }
    c
}

fn child_context(parent: &str, call: &str) -> RunContext {
    RunContext {
        parent: Some(ParentCall { session: parent.into(), call: CallRef { hash: call.into() } }),
        ..RunContext::default()
    }
}

/// A parent run whose task call `task0001` runs a subagent (its own conversation, one read
/// call); `child_late` puts the subagent's close after the task call's card.
fn nested_runs(child_late: bool) -> Vec<OutputEvent> {
    let parent = Arc::new(RunId { session: "parent".into(), seq: 1 });
    let child = Arc::new(RunId { session: "child".into(), seq: 1 });
    let mut v = vec![
        ev(&parent, 1_000, opened(Some("gpt-5"), Some("go"), None)),
        ev(&child, 1_100, opened(None, Some("look around"), Some(child_context("parent", "task0001")))),
        ev(&child, 1_300, card("read0001", Tool::Known(ToolKind::Read), false, None, (1_200, 1_300))),
    ];
    let child_close = ev(&child, 1_400, closed(RunStatus::Finished, None));
    let task = ev(&parent, 1_500, task_card("task0001", (1_050, 1_500)));
    if child_late {
        v.extend([task, child_close]);
    } else {
        v.extend([child_close, task]);
    }
    v.push(ev(&parent, 1_600, closed(RunStatus::Finished, None)));
    v
}

#[test]
fn a_subagent_run_is_a_child_of_its_task_call_in_its_parent_trace() {
    for late in [false, true] {
        let (out, mapper) = map(&nested_runs(late), false);
        assert_eq!(mapper.open_runs(), 0);
        let spans: Vec<&SpanData> = out.iter().map(Finished::span).collect();
        assert_eq!(spans.len(), 4, "two runs, two calls");
        let named = |name: &str, conv: Option<&str>| {
            *spans
                .iter()
                .find(|s| s.name == name && conv.is_none_or(|c| str_attr(s, a::CONVERSATION_ID).as_deref() == Some(c)))
                .unwrap()
        };
        let parent = named(a::RUN_SPAN_NAME, Some("parent"));
        let child = named(a::RUN_SPAN_NAME, Some("child"));
        let task = named("execute_tool task", None);
        let read = named("execute_tool read", None);
        let trace = parent.span_context.trace_id();
        for s in &spans {
            assert_eq!(s.span_context.trace_id(), trace, "one trace for the turn and its subagent (late: {late})");
        }
        assert_eq!(parent.parent_span_id, SpanId::INVALID);
        assert_eq!(task.parent_span_id, parent.span_context.span_id());
        assert_eq!(child.parent_span_id, task.span_context.span_id(), "the subagent's run under its task call");
        assert_eq!(read.parent_span_id, child.span_context.span_id());
        assert_eq!(str_attr(child, a::OPERATION_NAME).as_deref(), Some("invoke_agent"));
    }
}

#[test]
fn a_subagent_run_whose_task_call_never_comes_is_let_go_on_its_own() {
    let events: Vec<OutputEvent> =
        nested_runs(false).into_iter().filter(|e| e.run.session.as_ref() == "child").collect();
    let (mut out, mut mapper) = map(&events, false);
    assert!(out.is_empty(), "held for its parent call");
    mapper.release_waiting(&mut out);
    let spans: Vec<&SpanData> = out.iter().map(Finished::span).collect();
    assert_eq!(spans.len(), 2);
    let child = spans.iter().find(|s| s.name == a::RUN_SPAN_NAME).unwrap();
    assert_eq!(child.parent_span_id, SpanId::INVALID, "a root of its own trace");
    assert!(spans.iter().all(|s| s.span_context.trace_id() == child.span_context.trace_id()));
    let (mut again, _) = (Vec::new(), ());
    mapper.release_waiting(&mut again);
    assert!(again.is_empty(), "let go once");
}

#[test]
fn hook_runs_carry_cursor_facts_cache_writes_under_both_names_and_incomplete_turns_are_marked() {
    let run = Arc::new(RunId { session: "conv".into(), seq: 1 });
    let context = RunContext {
        cursor_version: Some("3.7.19".into()),
        composer_mode: Some("agent".into()),
        workspace_roots: vec!["/w/app".into()],
        ..RunContext::default()
    };
    let usage = TokenUsage {
        input_tokens: 10,
        output_tokens: 2,
        cache_read_tokens: 3,
        cache_write_tokens: 4,
        reasoning_tokens: None,
    };
    let incomplete_close = Output::RunClosed {
        status: RunStatus::Error,
        final_text: String::new(),
        totals: Box::new(RunTotals { reported_usage: Some(usage), incomplete: true, ..RunTotals::default() }),
        error: Some("incomplete: the turn ended without a `stop` hook".into()),
    };
    let (out, _) =
        map(&[ev(&run, 5, opened(Some("default"), None, Some(context))), ev(&run, 9, incomplete_close)], false);
    let span = out[0].span();
    assert_eq!(str_attr(span, a::CURSOR_VERSION).as_deref(), Some("3.7.19"));
    assert_eq!(str_attr(span, a::CURSOR_COMPOSER_MODE).as_deref(), Some("agent"));
    assert_eq!(
        attr(span, a::CURSOR_WORKSPACE_ROOTS),
        Some(&Value::Array(opentelemetry::Array::String(vec!["/w/app".into()])))
    );
    assert_eq!(attr(span, a::USAGE_CACHE_WRITE_INPUT_TOKENS), Some(&Value::I64(4)));
    assert_eq!(attr(span, a::USAGE_CACHE_CREATION_INPUT_TOKENS), Some(&Value::I64(4)), "the older name beside it");
    assert_eq!(str_attr(span, a::ERROR_TYPE).as_deref(), Some("incomplete"));
    assert!(matches!(span.status, Status::Error { .. }));
    // A run that failed as reported keeps its own error type.
    let (out, _) = map(&[ev(&run, 5, opened(None, None, None)), ev(&run, 9, closed(RunStatus::Error, None))], false);
    assert_eq!(str_attr(out[0].span(), a::ERROR_TYPE).as_deref(), Some("error"));
    assert!(attr(out[0].span(), a::CURSOR_VERSION).is_none(), "no Cursor facts where the source has none");
}

/// A finished run with a prompt, streamed text holding a secret, and one shell call.
fn run_with_text() -> Vec<OutputEvent> {
    let run = Arc::new(RunId { session: "c".into(), seq: 1 });
    vec![
        ev(&run, 1, opened(None, Some("fix the test"), None)),
        ev(&run, 2, Output::Text { turn: 1, delta: "Done: token=SECRET ".into() }),
        ev(&run, 3, Output::Text { turn: 1, delta: "and fixed.".into() }),
        ev(&run, 4, card("aaaa0001", Tool::Known(ToolKind::Shell), false, None, (3, 4))),
        ev(&run, 5, closed(RunStatus::Finished, None)),
    ]
}

#[test]
fn content_modes_put_prompt_response_and_tool_content_where_asked_and_scrubbed() {
    use ContentCapture::{EventOnly, NoContent, SpanAndEvent, SpanOnly};
    for mode in [NoContent, SpanOnly, EventOnly, SpanAndEvent] {
        let (out, _) = map_with(&run_with_text(), mode);
        let (tool, run) = (out[0].span(), out[1].span());
        let details: Vec<&opentelemetry::trace::Event> =
            run.events.iter().filter(|e| e.name == a::EVENT_OPERATION_DETAILS).collect();
        assert_eq!(attr(run, a::INPUT_MESSAGES).is_some(), mode.on_spans(), "{mode:?}");
        assert_eq!(attr(run, a::OUTPUT_MESSAGES).is_some(), mode.on_spans(), "{mode:?}");
        assert_eq!(details.len(), usize::from(mode.as_event()), "{mode:?}");
        assert_eq!(attr(tool, a::TOOL_CALL_ARGUMENTS).is_some(), mode.on_spans(), "tool content is a span attribute");
        let mut texts: Vec<String> = Vec::new();
        texts.extend(str_attr(run, a::INPUT_MESSAGES));
        texts.extend(str_attr(run, a::OUTPUT_MESSAGES));
        for e in &details {
            texts.extend(e.attributes.iter().map(|kv| kv.value.as_str().into_owned()));
        }
        for t in &texts {
            assert!(!t.contains("SECRET"), "scrubbed: {t}");
        }
        if mode.any() {
            let input: serde_json::Value = serde_json::from_str(&texts[0]).unwrap();
            assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": "fix the test"}]}]));
            let output: serde_json::Value = serde_json::from_str(&texts[1]).unwrap();
            assert_eq!(output[0]["role"], "assistant");
            assert_eq!(output[0]["finish_reason"], "stop");
            assert_eq!(output[0]["parts"][0]["content"], "Done: token=[redacted] and fixed.");
        } else {
            assert!(texts.is_empty());
        }
    }
}

#[test]
fn two_subagent_runs_of_one_task_call_both_hang_under_it() {
    let parent = Arc::new(RunId { session: "parent".into(), seq: 1 });
    let kids: Vec<Arc<RunId>> =
        ["child-a", "child-b"].iter().map(|s| Arc::new(RunId { session: (*s).into(), seq: 1 })).collect();
    let mut events = vec![ev(&parent, 1_000, opened(None, Some("go"), None))];
    for (i, k) in kids.iter().enumerate() {
        let t = 1_100 + 100 * i as u64;
        events.push(ev(k, t, opened(None, None, Some(child_context("parent", "task0001")))));
        events.push(ev(k, t + 50, closed(RunStatus::Finished, None)));
    }
    events.push(ev(&parent, 1_500, task_card("task0001", (1_050, 1_500))));
    events.push(ev(&parent, 1_600, closed(RunStatus::Finished, None)));
    let (out, _) = map(&events, false);
    let spans: Vec<&SpanData> = out.iter().map(Finished::span).collect();
    let task = spans.iter().find(|s| s.name == "execute_tool task").unwrap();
    let children: Vec<&&SpanData> =
        spans.iter().filter(|s| str_attr(s, a::CONVERSATION_ID).is_some_and(|c| c.starts_with("child"))).collect();
    assert_eq!(children.len(), 2);
    for c in children {
        assert_eq!(c.parent_span_id, task.span_context.span_id());
        assert_eq!(c.span_context.trace_id(), task.span_context.trace_id());
    }
}
