//! The JSONL debug trace sink (SPEC §9.3, §8): every output event maps to its phase with only its
//! allowlisted fields, call ids only hashed, assistant content never traced, byte-identical on
//! replay, and capped (marker line included) with exactly one `artifact_truncated` line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{self, Write};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use toolstream_schemas::ids::{call_ref, hash8};
use toolstream_schemas::{
    Card, CardDetails, Cost, DiagFields, IncompleteCall, IncompleteReason, LineKind, Output, OutputEvent, RunId,
    RunStatus, RunTotals, ShellStream, StopReason, StyledLine, TokenUsage, Tool, ToolKind, Usage,
};
use toolstream_sinks::jsonl_trace::{JsonlTraceSink, DEFAULT_LIMIT_BYTES, MAX_STRING_CHARS};
use toolstream_sinks::{Sink, SinkError};

const RAW_CALL: &str = "toolu_01RAWCALLIDxyz";
const RAW_CALL_2: &str = "call_RAW_SECOND_ID_abc";
const SECRET: &str = "ASSISTANT-CONTENT-NEVER-TRACED";

fn run(seq: u32) -> Arc<RunId> {
    Arc::new(RunId { session: "0a3c5e7f-0000-4000-8000-000000000001".into(), seq })
}

fn ev(run: &Arc<RunId>, at_ms: u64, kind: Output) -> OutputEvent {
    OutputEvent { run: run.clone(), at_ms, kind }
}

fn fields(pairs: &[(&str, Value)]) -> DiagFields {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn card(call_id: &str, is_error: bool) -> Card {
    Card {
        turn: 1,
        call: call_ref(call_id),
        replay_id: "cursor-replay-abcd1234-1-tool-1".into(),
        source_tool: Tool::Known(ToolKind::Shell),
        pi_tool: "bash".into(),
        title: "Cursor shell".into(),
        summary: "npm test".into(),
        headline: format!("$ npm test {SECRET}"),
        args: json!({"command": "npm test", "callId": call_id, "note": SECRET}),
        content: format!("{SECRET} output of {call_id}"),
        result_text: format!("{SECRET} output of {call_id}"),
        preview: vec![StyledLine { kind: LineKind::Plain, text: SECRET.into() }],
        preview_hidden: 0,
        diff: vec![StyledLine { kind: LineKind::Added, text: SECRET.into() }],
        diff_hidden: 0,
        details: Arc::new(CardDetails {
            header: Some(call_id.into()),
            content: Some(SECRET.into()),
            ..CardDetails::default()
        }),
        is_error,
        started_ms: Some(1_000),
        incomplete: None,
        completed_ms: Some(1_250),
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    }
}

/// A run that exercises every output variant.
fn full_run() -> Vec<OutputEvent> {
    let r = run(1);
    let usage = Usage {
        input: 10,
        output: 20,
        cache_read: 30,
        cache_write: 40,
        total_tokens: 100,
        cost: Cost { input: 0.5, output: 0.25, cache_read: 0.0, cache_write: 0.0, total: 0.75 },
    };
    let reported = TokenUsage {
        input_tokens: 11,
        output_tokens: 22,
        cache_read_tokens: 33,
        cache_write_tokens: 44,
        reasoning_tokens: Some(5),
    };
    vec![
        ev(
            &r,
            100,
            Output::RunOpened {
                cwd: Some(format!("/home/{SECRET}")),
                model: Some("gpt-5".into()),
                prompt: Some(SECRET.into()),
                context: None,
            },
        ),
        ev(&r, 101, Output::MessageStarted { turn: 1 }),
        ev(&r, 102, Output::Thinking { turn: 1, delta: SECRET.into() }),
        ev(&r, 103, Output::Thinking { turn: 1, delta: SECRET.into() }),
        ev(&r, 104, Output::BlockEnded { turn: 1 }),
        ev(&r, 105, Output::Text { turn: 1, delta: SECRET.into() }),
        ev(&r, 106, Output::BlockEnded { turn: 1 }),
        ev(
            &r,
            107,
            Output::Diagnostic {
                phase: "tool_started".into(),
                fields: fields(&[("toolName", json!("shell")), ("callIdHash", json!(hash8(RAW_CALL)))]),
            },
        ),
        ev(
            &r,
            108,
            Output::LifecycleLine { call: call_ref(RAW_CALL), title: "Cursor shell".into(), label: "running".into() },
        ),
        ev(
            &r,
            109,
            Output::ShellProgress { call: call_ref(RAW_CALL), stream: ShellStream::Stderr, line: "warn: x".into() },
        ),
        ev(&r, 110, Output::Card(Box::new(card(RAW_CALL, true)))),
        ev(
            &r,
            111,
            Output::IncompleteCall(Box::new(IncompleteCall {
                call: call_ref(RAW_CALL_2),
                source_tool: Tool::Known(ToolKind::Read),
                title: "Cursor read".into(),
                reason: IncompleteReason::NoCompletionAtRunEnd,
                visible: false,
            })),
        ),
        ev(
            &r,
            112,
            Output::IncompleteCall(Box::new(IncompleteCall {
                call: call_ref(RAW_CALL_2),
                source_tool: Tool::unknown("frobnicate"),
                title: "Cursor frobnicate".into(),
                reason: IncompleteReason::Abort,
                visible: true,
            })),
        ),
        ev(&r, 113, Output::Text { turn: 1, delta: SECRET.into() }),
        ev(
            &r,
            114,
            Output::MessageEnded {
                turn: 1,
                stop_reason: StopReason::Error,
                usage: Box::new(usage),
                error: Some("boom".into()),
            },
        ),
        ev(
            &r,
            115,
            Output::RunClosed {
                status: RunStatus::Error,
                final_text: SECRET.into(),
                totals: Box::new(RunTotals {
                    reported_usage: Some(reported),
                    messages: 1,
                    cards: 1,
                    error_cards: 1,
                    incomplete_calls: 2,
                    duration_ms: Some(15),
                    incomplete: false,
                }),
                error: Some("run failed".into()),
            },
        ),
    ]
}

fn trace(events: &[OutputEvent]) -> Vec<u8> {
    let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
    sink.write(events).unwrap();
    sink.flush().unwrap();
    sink.into_inner()
}

fn parse(bytes: &[u8]) -> Vec<Map<String, Value>> {
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "trace ends with a newline");
    text.lines()
        .map(|l| match serde_json::from_str::<Value>(l).unwrap() {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        })
        .collect()
}

fn keys(line: &Map<String, Value>) -> Vec<&str> {
    let mut k: Vec<&str> = line.keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn sorted(mut k: Vec<&'static str>) -> Vec<&'static str> {
    k.sort_unstable();
    k
}

#[test]
fn every_output_maps_to_its_phase_and_fields() {
    let bytes = trace(&full_run());
    let lines = parse(&bytes);
    let label = run(1).label();
    let phases: Vec<&str> = lines.iter().map(|l| l["phase"].as_str().unwrap()).collect();
    assert_eq!(
        phases,
        [
            "run_opened",
            "message_started",
            "tool_started",
            "tool_lifecycle",
            "shell_progress",
            "tool_completed",
            "discarded-incomplete-started-tool-call",
            "tool_incomplete",
            "message_ended",
            "run_closed",
        ]
    );
    // ts is event time, run is the label.
    let ts: Vec<u64> = lines.iter().map(|l| l["ts"].as_u64().unwrap()).collect();
    assert_eq!(ts, [100, 101, 107, 108, 109, 110, 111, 112, 114, 115]);
    assert!(lines.iter().all(|l| l["run"] == label.as_str()));

    let base = ["ts", "run", "phase"];
    let with = |extra: &[&'static str]| sorted(base.iter().chain(extra).copied().collect());

    assert_eq!(keys(&lines[0]), with(&["model"]));
    assert_eq!(lines[0]["model"], "gpt-5");

    assert_eq!(keys(&lines[1]), with(&["turn"]));
    assert_eq!(lines[1]["turn"], 1);

    assert_eq!(keys(&lines[2]), with(&["toolName", "callIdHash"]));
    assert_eq!(lines[2]["callIdHash"], hash8(RAW_CALL).as_str());

    assert_eq!(keys(&lines[3]), with(&["callIdHash", "title", "label"]));
    assert_eq!(lines[3]["callIdHash"], hash8(RAW_CALL).as_str());
    assert_eq!(lines[3]["title"], "Cursor shell");
    assert_eq!(lines[3]["label"], "running");

    assert_eq!(keys(&lines[4]), with(&["callIdHash", "stream", "line"]));
    assert_eq!(lines[4]["stream"], "stderr");
    assert_eq!(lines[4]["line"], "warn: x");

    let card_keys =
        ["callIdHash", "toolName", "piTool", "title", "summary", "isError", "replayId", "startedMs", "completedMs"];
    assert_eq!(keys(&lines[5]), with(&card_keys));
    let c = &lines[5];
    assert_eq!(c["callIdHash"], hash8(RAW_CALL).as_str());
    assert_eq!(c["toolName"], "shell");
    assert_eq!(c["piTool"], "bash");
    assert_eq!(c["title"], "Cursor shell");
    assert_eq!(c["summary"], "npm test");
    assert_eq!(c["isError"], true);
    assert_eq!(c["replayId"], "cursor-replay-abcd1234-1-tool-1");
    assert_eq!((c["startedMs"].as_u64(), c["completedMs"].as_u64()), (Some(1_000), Some(1_250)));

    assert_eq!(keys(&lines[6]), with(&["toolName", "callIdHash", "reason"]));
    assert_eq!(lines[6]["toolName"], "read");
    assert_eq!(lines[6]["callIdHash"], hash8(RAW_CALL_2).as_str());
    assert_eq!(lines[6]["reason"], "no-completion-at-run-end");

    assert_eq!(keys(&lines[7]), with(&["toolName", "callIdHash", "reason", "title"]));
    assert_eq!(lines[7]["toolName"], "frobnicate");
    assert_eq!(lines[7]["reason"], "abort");
    assert_eq!(lines[7]["title"], "Cursor frobnicate");

    assert_eq!(keys(&lines[8]), with(&["turn", "stopReason", "error", "usage"]));
    assert_eq!(lines[8]["stopReason"], "error");
    assert_eq!(lines[8]["error"], "boom");
    assert_eq!(
        lines[8]["usage"],
        json!({"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40, "totalTokens": 100})
    );

    let closed_keys = [
        "status",
        "error",
        "cards",
        "errorCards",
        "incompleteCalls",
        "messages",
        "durationMs",
        "reportedUsage",
        "textDeltas",
        "thinkingDeltas",
    ];
    assert_eq!(keys(&lines[9]), with(&closed_keys));
    let rc = &lines[9];
    assert_eq!(rc["status"], "error");
    assert_eq!(rc["error"], "run failed");
    assert_eq!((rc["cards"].as_u64(), rc["errorCards"].as_u64()), (Some(1), Some(1)));
    assert_eq!((rc["incompleteCalls"].as_u64(), rc["messages"].as_u64()), (Some(2), Some(1)));
    assert_eq!(rc["durationMs"], 15);
    assert_eq!(
        rc["reportedUsage"],
        json!({"inputTokens": 11, "outputTokens": 22, "cacheReadTokens": 33, "cacheWriteTokens": 44, "total": 110})
    );
    assert_eq!((rc["textDeltas"].as_u64(), rc["thinkingDeltas"].as_u64()), (Some(2), Some(2)));
}

#[test]
fn optional_values_are_null() {
    let r = run(3);
    let bytes = trace(&[
        ev(&r, 1, Output::RunOpened { cwd: None, model: None, prompt: None, context: None }),
        ev(
            &r,
            2,
            Output::MessageEnded { turn: 2, stop_reason: StopReason::ToolUse, usage: Box::default(), error: None },
        ),
        ev(
            &r,
            3,
            Output::RunClosed {
                status: RunStatus::Finished,
                final_text: String::new(),
                totals: Box::default(),
                error: None,
            },
        ),
    ]);
    let lines = parse(&bytes);
    assert_eq!(lines[0]["model"], Value::Null);
    assert_eq!(lines[1]["stopReason"], "toolUse");
    assert_eq!(lines[1]["error"], Value::Null);
    assert_eq!(lines[2]["status"], "finished");
    assert_eq!(lines[2]["error"], Value::Null);
    assert_eq!(lines[2]["durationMs"], Value::Null);
    assert_eq!(lines[2]["reportedUsage"], Value::Null);
    assert_eq!((lines[2]["textDeltas"].as_u64(), lines[2]["thinkingDeltas"].as_u64()), (Some(0), Some(0)));
}

#[test]
fn call_ids_and_assistant_content_never_appear() {
    let mut events = full_run();
    // A diagnostic that carries a raw id under a non-allowlisted key.
    events.push(ev(
        &run(1),
        200,
        Output::Diagnostic { phase: "tool_started".into(), fields: fields(&[("callId", json!(RAW_CALL))]) },
    ));
    let text = String::from_utf8(trace(&events)).unwrap();
    for needle in [RAW_CALL, RAW_CALL_2, SECRET, "npm test output", "toolCallId", "cost"] {
        assert!(!text.contains(needle), "{needle:?} leaked into the trace:\n{text}");
    }
    assert!(text.contains(&hash8(RAW_CALL)));
    assert!(text.contains(&hash8(RAW_CALL_2)));
}

#[test]
fn diagnostics_keep_only_allowlisted_fields() {
    let r = run(1);
    let diag = |phase: &str, pairs: &[(&str, Value)]| {
        ev(&r, 5, Output::Diagnostic { phase: phase.to_owned().into(), fields: fields(pairs) })
    };
    let raw_mcp = "mcp-req-17-RAWID";
    let bytes = trace(&[
        diag(
            "display_decision",
            &[
                ("action", json!("drop-duplicate-completion")),
                ("reason", json!("same-result")),
                ("url", json!("http://127.0.0.1:4000/cursor-pi-tool-bridge/TOKEN/mcp")),
                ("token", json!("TOKEN")),
                ("args", json!({"command": "rm -rf /"})),
                ("ts", json!(999)),
                ("run", json!("spoofed")),
            ],
        ),
        diag("usage_applied", &[("sourceKind", json!("sdk")), ("input", json!(3)), ("totalTokens", json!(9))]),
        diag(
            "request_queued",
            &[
                ("runId", json!("r-1")),
                ("bridgeCallId", json!("b-1")),
                ("cursorMcpCallId", json!(raw_mcp)),
                ("piToolCallId", json!("cursor-pi-bridge-run-x-tool-1")),
                ("mcpToolName", json!("pi__todo")),
                ("piToolName", json!("todo")),
                ("pendingCount", json!(1)),
                ("queuedCount", json!(0)),
                ("port", json!(4000)),
            ],
        ),
        diag("request_resolved", &[("cursorMcpCallId", json!("cursor-mcp-call-0123abcd")), ("isError", json!(false))]),
        diag("raw", &[("what", json!("system/notification")), ("value", json!({"n": 1}))]),
    ]);
    let lines = parse(&bytes);

    let dd = &lines[0];
    assert_eq!(dd["phase"], "display_decision");
    assert_eq!(keys(dd), sorted(vec!["ts", "run", "phase", "action", "reason", "droppedFields"]));
    assert_eq!(dd["droppedFields"], 5);
    assert_eq!(dd["ts"], 5, "a diagnostic cannot spoof ts");
    assert_eq!(dd["run"], run(1).label().as_str(), "a diagnostic cannot spoof run");

    let ua = &lines[1];
    assert_eq!(keys(ua), sorted(vec!["ts", "run", "phase", "sourceKind", "input", "totalTokens"]));
    assert!(ua.get("droppedFields").is_none());

    let rq = &lines[2];
    assert_eq!(rq["droppedFields"], 1);
    assert!(rq.get("port").is_none());
    assert_eq!(rq["cursorMcpCallId"], format!("cursor-mcp-call-{}", hash8(raw_mcp)).as_str());
    assert_eq!(rq["piToolName"], "todo");
    assert_eq!(rq["pendingCount"], 1);

    assert_eq!(lines[3]["cursorMcpCallId"], "cursor-mcp-call-0123abcd");
    assert_eq!(lines[3]["isError"], false);

    assert_eq!(lines[4]["value"], json!({"n": 1}));

    let text = String::from_utf8(bytes).unwrap();
    for needle in ["TOKEN", "127.0.0.1", "rm -rf", raw_mcp, "spoofed", "4000"] {
        assert!(!text.contains(needle), "{needle:?} leaked into the trace");
    }
}

#[test]
fn long_strings_are_cut() {
    let r = run(1);
    let long = "ü".repeat(MAX_STRING_CHARS * 2);
    let bytes = trace(&[
        ev(&r, 1, Output::ShellProgress { call: call_ref("c"), stream: ShellStream::Stdout, line: long.clone() }),
        ev(
            &r,
            2,
            Output::Diagnostic {
                phase: "raw".into(),
                fields: fields(&[("value", json!({"deep": [long.clone()]})), ("reason", json!("short"))]),
            },
        ),
    ]);
    let lines = parse(&bytes);
    let line = lines[0]["line"].as_str().unwrap();
    assert_eq!(line.chars().count(), MAX_STRING_CHARS + 1);
    assert!(line.ends_with("ü…"));
    let deep = lines[1]["value"]["deep"][0].as_str().unwrap();
    assert_eq!(deep.chars().count(), MAX_STRING_CHARS + 1);
    assert_eq!(lines[1]["reason"], "short");
}

#[test]
fn replays_are_byte_identical() {
    let mut events = full_run();
    events.push(ev(
        &run(1),
        300,
        Output::Diagnostic {
            phase: "usage_applied".into(),
            fields: fields(&[("totalTokens", json!(1)), ("sourceKind", json!("estimate")), ("input", json!(2))]),
        },
    ));
    let a = trace(&events);
    let b = trace(&events);
    assert!(!a.is_empty());
    assert_eq!(a, b);

    // The same events in different batch sizes give the same bytes too.
    let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
    for chunk in events.chunks(3) {
        sink.write(chunk).unwrap();
    }
    assert_eq!(sink.into_inner(), a);

    // Field order is fixed: ts, run, phase first, then the mapping's order.
    let first = std::str::from_utf8(&a).unwrap().lines().next().unwrap().to_owned();
    assert_eq!(first, format!(r#"{{"ts":100,"run":"{}","phase":"run_opened","model":"gpt-5"}}"#, run(1).label()));
}

fn shell_line(r: &Arc<RunId>, i: u64) -> OutputEvent {
    ev(r, i, Output::ShellProgress { call: call_ref("c"), stream: ShellStream::Stdout, line: format!("line {i}") })
}

#[test]
fn small_cap_ends_with_exactly_one_marker() {
    const LIMIT: u64 = 300;
    let marker = format!(r#"{{"type":"artifact_truncated","limitBytes":{LIMIT}}}"#);
    let r = run(1);
    let mut sink = JsonlTraceSink::new(Vec::new(), LIMIT);
    let mut produced = 0u64;
    for batch in 0..5u64 {
        let events: Vec<OutputEvent> = (0..4)
            .flat_map(|i| {
                let at = batch * 10 + i;
                [shell_line(&r, at), ev(&r, at, Output::Text { turn: 1, delta: "x".into() })]
            })
            .collect();
        produced += 4;
        sink.write(&events).unwrap();
        sink.flush().unwrap();
    }
    assert!(sink.is_truncated());
    let suppressed = sink.suppressed();
    let written = sink.bytes_written();
    let bytes = sink.into_inner();
    assert_eq!(bytes.len() as u64, written);
    assert!(bytes.len() as u64 <= LIMIT, "{} > {LIMIT}", bytes.len());

    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        serde_json::from_str::<Value>(l).unwrap();
    }
    assert_eq!(*lines.last().unwrap(), marker);
    assert_eq!(lines.iter().filter(|l| l.contains("artifact_truncated")).count(), 1);
    // Every line-producing event is either written or counted as suppressed.
    assert_eq!(lines.len() as u64 - 1 + suppressed, produced);
    assert!(suppressed > 0);

    // The marker only goes out when the next line would not leave room for it: later lines are
    // never shorter than the written ones here (growing ts and line numbers).
    let before_marker = (bytes.len() - marker.len() - 1) as u64;
    let shortest = lines[..lines.len() - 1].iter().map(|l| l.len() as u64 + 1).min().unwrap();
    assert!(before_marker + shortest + marker.len() as u64 + 1 > LIMIT);
}

#[test]
fn default_cap_is_two_mib_in_a_file() {
    let path = std::env::temp_dir().join(format!("toolstream-jsonl-trace-{}.jsonl", std::process::id()));
    std::fs::write(&path, "stale content that create() must truncate\n").unwrap();
    let r = run(1);
    let mut sink = JsonlTraceSink::create(&path).unwrap();
    let big = "y".repeat(3_900);
    for batch in 0..20u64 {
        let events: Vec<OutputEvent> = (0..40u64)
            .map(|i| {
                ev(
                    &r,
                    batch * 100 + i,
                    Output::ShellProgress { call: call_ref("c"), stream: ShellStream::Stdout, line: big.clone() },
                )
            })
            .collect();
        sink.write(&events).unwrap();
    }
    sink.flush().unwrap();
    assert!(sink.is_truncated());
    assert!(sink.suppressed() > 0);
    drop(sink);

    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(text.len() as u64 <= DEFAULT_LIMIT_BYTES);
    assert!(text.len() as u64 > DEFAULT_LIMIT_BYTES - 5_000, "the cap is used, not undershot");
    assert!(!text.contains("stale content"));
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        serde_json::from_str::<Value>(l).unwrap();
    }
    assert_eq!(*lines.last().unwrap(), r#"{"type":"artifact_truncated","limitBytes":2097152}"#);
    assert_eq!(lines.iter().filter(|l| l.contains("artifact_truncated")).count(), 1);
}

#[test]
fn create_writes_through_a_buffer() {
    let path = std::env::temp_dir().join(format!("toolstream-jsonl-trace-flush-{}.jsonl", std::process::id()));
    let mut sink = JsonlTraceSink::create(&path).unwrap();
    assert_eq!(sink.name(), "jsonl");
    sink.write(&[shell_line(&run(1), 1)]).unwrap();
    assert_eq!(std::fs::read(&path).unwrap().len(), 0, "writes are buffered until flush");
    sink.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(parse(text.as_bytes()).len(), 1);
}

struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
    }
}

#[test]
fn write_errors_are_reported_as_jsonl_io() {
    let mut sink = JsonlTraceSink::new(Broken, DEFAULT_LIMIT_BYTES);
    match sink.write(&[shell_line(&run(1), 1)]) {
        Err(SinkError::Io { sink: "jsonl", source }) => assert_eq!(source.kind(), io::ErrorKind::BrokenPipe),
        other => panic!("expected a jsonl io error, got {other:?}"),
    }
    assert!(matches!(sink.flush(), Err(SinkError::Io { sink: "jsonl", .. })));
    // Only counted events: nothing to write, no error.
    sink.write(&[ev(&run(1), 2, Output::Text { turn: 1, delta: "x".into() })]).unwrap();
}

fn opened(r: &Arc<RunId>, at_ms: u64) -> OutputEvent {
    ev(r, at_ms, Output::RunOpened { cwd: None, model: Some("Auto".into()), prompt: None, context: None })
}

#[test]
fn a_run_opened_before_its_first_time_is_dated_at_that_time_in_order_in_any_batches() {
    // Cursor CLI `system/init` and `user` lines carry no time: the engine opens the run at 0.
    let (a, b) = (run(1), run(2));
    let events = vec![
        opened(&a, 0),
        shell_line(&b, 500),
        // A text delta makes no line, but it is the first time run a tells.
        ev(&a, 40, Output::Text { turn: 0, delta: "x".into() }),
        ev(&a, 60, Output::MessageStarted { turn: 0 }),
    ];
    let bytes = trace(&events);
    let lines = parse(&bytes);
    let got: Vec<(u64, &str)> =
        lines.iter().map(|l| (l["ts"].as_u64().unwrap(), l["phase"].as_str().unwrap())).collect();
    assert_eq!(got, [(40, "run_opened"), (500, "shell_progress"), (60, "message_started")]);
    // Batching never changes the bytes.
    for size in 1..events.len() {
        let mut sink = JsonlTraceSink::new(Vec::new(), DEFAULT_LIMIT_BYTES);
        for chunk in events.chunks(size) {
            sink.write(chunk).unwrap();
        }
        sink.checkpoint().unwrap();
        assert_eq!(sink.into_inner(), bytes, "batches of {size}");
    }
}

#[test]
fn a_line_still_waiting_for_a_time_is_written_at_a_checkpoint_with_the_latest_time() {
    let path = std::env::temp_dir().join(format!("toolstream-jsonl-trace-wait-{}.jsonl", std::process::id()));
    let mut sink = JsonlTraceSink::create(&path).unwrap();
    sink.write(&[shell_line(&run(1), 30), opened(&run(2), 0)]).unwrap();
    sink.flush().unwrap();
    // Flushing writes what is known; the opening still waits for its run's time.
    assert_eq!(parse(&std::fs::read(&path).unwrap()).len(), 1);
    sink.checkpoint().unwrap();
    let lines = parse(&std::fs::read(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[1]["phase"].as_str(), lines[1]["ts"].as_u64()), (Some("run_opened"), Some(30)));
}
