//! The OTLP sink against a real collector (`common::otel`: rotel on 127.0.0.1, printing what it
//! received, which these tests read back). Without the collector they skip, except under
//! `./scripts/test` (`TOOLSTREAM_REQUIRE_OTEL=1`), where its absence fails them. And against a
//! collector that accepts connections and never answers (no rotel needed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::otel::{expected, rotel_agent, Collector, SilentCollector, Span};
use crate::common::{cli_captures, example, tempdir, toolstream, toolstream_env};

/// The spans of one replay, checked against the GenAI conventions and `toolstream stats`.
fn check_file(file: &Path, spans: &[Span]) {
    let (runs, calls, failed) = expected(file);
    let what = file.display();
    let run_spans: Vec<&Span> =
        spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("invoke_agent")).collect();
    let tool_spans: Vec<&Span> =
        spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("execute_tool")).collect();
    assert_eq!(run_spans.len() + tool_spans.len(), spans.len(), "{what}: every span is a run or a call");
    assert_eq!(run_spans.len(), runs, "{what}: one invoke_agent span per run");
    assert_eq!(tool_spans.len(), calls, "{what}: one execute_tool span per call");
    let by_id: HashMap<(&str, &str), &Span> =
        run_spans.iter().map(|s| ((s.trace_id.as_str(), s.id.as_str()), *s)).collect();
    for r in &run_spans {
        assert_eq!(r.service, "toolstream", "{what}");
        assert!(r.name.starts_with("invoke_agent"), "{what}: {}", r.name);
        assert_eq!(r.parent_id, "", "{what}: a run span is a root");
        assert_eq!(r.attr("gen_ai.provider.name"), Some("cursor"), "{what}");
        assert!(r.attr("gen_ai.agent.name").is_some_and(|n| !n.is_empty()), "{what}");
        assert!(r.attr("gen_ai.conversation.id").is_some(), "{what}");
        assert!(r.attr("gen_ai.response.finish_reasons").is_some(), "{what}");
        let failed_run = r.status == "STATUS_CODE_ERROR";
        assert_eq!(failed_run, r.attr("error.type").is_some(), "{what}: error.type exactly on failed runs");
    }
    let mut errors = 0;
    for t in &tool_spans {
        let parent = by_id.get(&(t.trace_id.as_str(), t.parent_id.as_str()));
        assert!(parent.is_some(), "{what}: {} has its run's span as parent", t.name);
        let tool = t.attr("gen_ai.tool.name").unwrap_or_default();
        assert!(!tool.is_empty(), "{what}");
        assert_eq!(t.name, format!("execute_tool {tool}"), "{what}");
        let id = t.attr("gen_ai.tool.call.id").unwrap_or_default();
        assert!(id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()), "{what}: hashed call id `{id}`");
        assert!(matches!(t.attr("gen_ai.tool.type"), Some("function" | "extension")), "{what}");
        assert!(
            t.attr("gen_ai.tool.call.arguments").is_none() && t.attr("gen_ai.tool.call.result").is_none(),
            "{what}: no content without the opt-in"
        );
        let is_error = t.status == "STATUS_CODE_ERROR";
        assert!(is_error || t.status == "STATUS_CODE_UNSET", "{what}: {}", t.status);
        assert_eq!(is_error, t.attr("error.type").is_some(), "{what}: error.type exactly with error status");
        errors += usize::from(is_error);
    }
    assert_eq!(errors, failed, "{what}: error status on exactly the failed calls");
}

/// Every capture and both examples, one replay each, over HTTP or gRPC.
fn every_capture_over(grpc: bool) {
    let Some(agent) = rotel_agent() else { return };
    let mut files = cli_captures();
    files.push(example("demo.jsonl"));
    files.push(example("sdk-demo.jsonl"));
    let collector = Collector::start(&agent);
    let sink =
        if grpc { format!("otlp-grpc={}", collector.grpc_url()) } else { format!("otlp={}", collector.http_url()) };
    let mut seen = 0;
    for file in &files {
        let (runs, calls, _) = expected(file);
        let run = toolstream(&["replay", "--sink", &sink, file.to_str().unwrap()], None);
        assert!(run.code == 0 || run.code == 1, "{}: {}", file.display(), run.stderr);
        assert!(!run.stderr.contains("not delivered"), "{}: {}", file.display(), run.stderr);
        let spans = collector.wait_for(seen + runs + calls, Duration::from_secs(20));
        check_file(file, &spans[seen..]);
        seen = spans.len();
    }
    assert!(files.len() >= 3);
}

#[test]
fn every_capture_reaches_the_collector_over_http() {
    every_capture_over(false);
}

#[test]
fn every_capture_reaches_the_collector_over_grpc() {
    every_capture_over(true);
}

/// The demo with a secret planted in a shell command's arguments and its output, in the prompt
/// and in the assistant's own text.
fn demo_with_secrets() -> String {
    let demo = fs::read_to_string(example("demo.jsonl")).unwrap();
    let planted = demo
        .replace("npm test -- --silent", "npm test -- --silent --api_key=PLANTEDSECRETARGS42")
        .replace("Tests: 1 failed", "Authorization: Bearer PLANTEDSECRETOUT42\\nTests: 1 failed")
        .replace("and run the tests.", "and run the tests (token: PLANTEDSECRETPROMPT42).")
        .replace(r#""text":" search""#, r#""text":" search (api_key=PLANTEDSECRETTEXT42)""#);
    for planted_secret in ["ARGS42", "OUT42", "PROMPT42", "TEXT42"] {
        assert!(planted.contains(&format!("PLANTEDSECRET{planted_secret}")), "{planted_secret}");
    }
    planted
}

/// Calls in `examples/demo.jsonl` (also checked against `stats` by the capture test).
const DEMO_CALLS: usize = 7;

#[test]
fn content_only_where_the_capture_mode_says_and_never_a_planted_secret() {
    let Some(agent) = rotel_agent() else { return };
    let input = demo_with_secrets();
    // (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, content on spans, in the event)
    let modes = [
        (None, false, false),
        (Some("false"), false, false),
        (Some("true"), true, false),
        (Some("SPAN_ONLY"), true, false),
        (Some("EVENT_ONLY"), false, true),
        (Some("SPAN_AND_EVENT"), true, true),
    ];
    for (mode, on_spans, as_event) in modes {
        let collector = Collector::start(&agent);
        let sink = format!("otlp={}", collector.http_url());
        let vars: Vec<(&str, &str)> =
            mode.map(|m| ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", m)).into_iter().collect();
        let run = toolstream_env(&["replay", "--sink", &sink, "-"], Some(input.as_bytes()), &vars);
        assert!(run.code <= 1, "{}", run.stderr);
        // The demo: one run (one invoke_agent span) and DEMO_CALLS calls.
        let spans = collector.wait_for(DEMO_CALLS + 1, Duration::from_secs(20));
        let tools: Vec<&Span> = spans.iter().filter(|s| s.name.starts_with("execute_tool")).collect();
        assert_eq!(tools.len(), DEMO_CALLS);
        let with_args = tools.iter().filter(|s| s.attr("gen_ai.tool.call.arguments").is_some()).count();
        let with_result = tools.iter().filter(|s| s.attr("gen_ai.tool.call.result").is_some()).count();
        let expect_tools = if on_spans { DEMO_CALLS } else { 0 };
        assert_eq!((with_args, with_result), (expect_tools, expect_tools), "{mode:?}: tool content on spans");
        let agent_span = spans.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
        let input_messages = agent_span.attr("gen_ai.input.messages");
        assert_eq!(input_messages.is_some(), on_spans, "{mode:?}: the prompt on the run's span");
        assert_eq!(agent_span.attr("gen_ai.output.messages").is_some(), on_spans, "{mode:?}");
        let details = agent_span.events.iter().filter(|e| *e == "gen_ai.client.inference.operation.details").count();
        assert_eq!(details, usize::from(as_event), "{mode:?}: the prompt and response in the event");
        let out = collector.output();
        if on_spans {
            assert!(input_messages.unwrap().contains("Find the rounding bug"), "{input_messages:?}");
            let shell = tools.iter().find(|s| s.name == "execute_tool shell").unwrap();
            assert!(shell.attr("gen_ai.tool.call.arguments").unwrap().contains("npm test"));
            assert!(!shell.attr("gen_ai.tool.call.result").unwrap().is_empty());
            assert!(out.contains("1 failed, 11 passed"), "the shell result reached the collector");
        }
        if on_spans || as_event {
            assert!(out.contains("(token: [redacted])") && out.contains("search (api_key=[redacted])"), "{mode:?}");
        } else {
            assert!(!out.contains("rounding bug"), "{mode:?}: no prompt without the opt-in");
        }
        assert!(!out.contains("PLANTEDSECRET"), "{mode:?}: a planted secret reached the collector");
    }
}

/// `sessions` runs of `per_run` completed glob calls each, as Cursor CLI stream-json.
fn burst_stream(sessions: usize, per_run: usize) -> String {
    let mut s = String::new();
    let mut t: u64 = 1_794_300_000_000;
    for k in 0..sessions {
        let session = format!("burst-{k:04}");
        s.push_str(&format!(
            "{{\"type\":\"system\",\"subtype\":\"init\",\"cwd\":\"/w\",\"session_id\":\"{session}\",\"model\":\"m\"}}\n"
        ));
        for i in 0..per_run {
            t += 1;
            let id = format!("call-{k}-{i}");
            let args = r#"{"targetDirectory":"/w","globPattern":"*.rs"}"#;
            s.push_str(&format!(
                "{{\"type\":\"tool_call\",\"subtype\":\"started\",\"call_id\":\"{id}\",\"tool_call\":{{\"globToolCall\":{{\"args\":{args}}}}},\"session_id\":\"{session}\",\"timestamp_ms\":{t}}}\n"
            ));
            s.push_str(&format!(
                "{{\"type\":\"tool_call\",\"subtype\":\"completed\",\"call_id\":\"{id}\",\"tool_call\":{{\"globToolCall\":{{\"args\":{args},\"result\":{{\"success\":{{\"files\":[\"a.rs\"],\"totalFiles\":1}}}}}}}},\"session_id\":\"{session}\",\"timestamp_ms\":{t}}}\n"
            ));
        }
        s.push_str(&format!(
            "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"{session}\",\"usage\":{{\"inputTokens\":10,\"outputTokens\":2,\"cacheReadTokens\":0,\"cacheWriteTokens\":0}}}}\n"
        ));
    }
    s
}

/// `sink …: N spans not delivered (…)` in an exit report, else 0.
fn reported_lost(stderr: &str) -> usize {
    stderr
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(": ")?;
            let rest = rest.rsplit_once("; ").map_or(rest, |(_, r)| r);
            let n = rest.strip_suffix(')')?.split(" spans not delivered").next()?;
            n.replace(',', "").parse().ok()
        })
        .unwrap_or(0)
}

/// The spans `sink` reported not delivered in an exit report (`sink SINK: N spans not
/// delivered (…)`), if it said so.
fn lost_by(stderr: &str, sink: &str) -> Option<usize> {
    let line = stderr.lines().find(|l| l.starts_with(&format!("toolstream: sink {sink}: ")))?;
    let n = line.split(": ").nth(2)?.split(" spans not delivered").next()?;
    n.replace(',', "").parse().ok()
}

#[test]
fn a_collector_that_never_answers_loses_every_span_says_so_and_exits_1_within_the_end_wait() {
    let silent = SilentCollector::start();
    let demo = example("demo.jsonl");
    let (runs, calls, _) = expected(&demo);
    // Both transports at once: the end-of-run wait bounds them together, not one after the other.
    let http = format!("otlp={}", silent.url());
    let grpc = format!("otlp-grpc={}", silent.url());
    // The documented bound, plus starting the process, the replay itself and exiting.
    let bound = toolstream_engine::pipeline::END_WAIT + Duration::from_secs(2);
    let args =
        ["replay", "--color", "never", "--sink", "cards", "--sink", &http, "--sink", &grpc, demo.to_str().unwrap()];
    // Several trials: whatever state the sink's thread is in when the wait ends, every span is
    // counted (it once lost them silently in 5 of 16 runs). `TOOLSTREAM_TRIALS=N` runs N of them.
    let trials = std::env::var("TOOLSTREAM_TRIALS").ok().and_then(|n| n.parse().ok()).unwrap_or(3);
    for trial in 1..=trials {
        let started = Instant::now();
        let run = toolstream(&args, None);
        let took = started.elapsed();
        assert_eq!(run.code, 1, "trial {trial}: a sink that lost spans fails the run: {}", run.stderr);
        for sink in [&http, &grpc] {
            assert_eq!(lost_by(&run.stderr, sink), Some(runs + calls), "trial {trial}, {sink}: {}", run.stderr);
        }
        assert!(run.stdout.contains("── finished"), "the cards are unaffected: {}", run.stdout);
        assert!(took < bound, "trial {trial}: the run took {took:?}, more than the end-of-run wait allows ({bound:?})");
    }
}

#[test]
fn a_burst_of_100k_calls_reaches_the_collector() {
    let Some(agent) = rotel_agent() else { return };
    let dir = tempdir();
    let file = dir.join("burst.jsonl");
    // 100 runs of 1,000 calls, by construction (counting them with `toolstream stats` took as long
    // as the replay itself in the tests' debug build).
    let (runs, per_run) = (100, 1_000);
    fs::write(&file, burst_stream(runs, per_run)).unwrap();
    let calls = runs * per_run;
    let collector = Collector::start(&agent);
    let sink = format!("otlp={}", collector.http_url());
    let run = toolstream(&["replay", "--sink", &sink, file.to_str().unwrap()], None);
    assert!(run.code <= 1, "{}", run.stderr);
    let lost = reported_lost(&run.stderr);
    let spans = collector.wait_for(runs + calls - lost, Duration::from_secs(60));
    let received = spans.iter().filter(|s| s.name.starts_with("execute_tool")).count();
    // Tool spans lost are at most all lost spans; with none lost, every one arrived.
    assert_eq!(received + lost.min(calls), calls, "received {received}, reported lost {lost}: {}", run.stderr);
    // "None dropped" is the target, not a guarantee: with the default `drop_newest` a loaded
    // machine may drop some, and then the count above must account for each. Said, not asserted
    // (no timing assertions in tests); the benchmark reports the unloaded figure.
    if lost > 0 {
        eprintln!("note: {lost} of {calls} tool spans dropped under load, every one reported");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_collector_absent_while_a_run_is_exported_neither_crashes_nor_hangs_nor_disturbs_other_sinks() {
    let Some(agent) = rotel_agent() else { return };
    let input = fs::read(example("demo.jsonl")).unwrap();
    let dir = tempdir();
    // The reference: cards and a pi session without the OTLP sink.
    let plain_session = dir.join("plain.jsonl");
    let plain = toolstream(
        &[
            "replay",
            "--color",
            "never",
            "--sink",
            "cards",
            "--sink",
            &format!("pi-session={}", plain_session.display()),
            "-",
        ],
        Some(&input),
    );
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let (http, grpc) = Collector::ports();
    let session = dir.join("with-otlp.jsonl");
    let pi_session = format!("pi-session={}", session.display());
    let otlp = format!("otlp=http://127.0.0.1:{http}");
    let args = ["replay", "--color", "never", "--sink", "cards", "--sink", &pi_session, "--sink", &otlp, "-"];
    // The exporter's failures are logged at debug: the test waits for the first one.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(args)
        .env("TOOLSTREAM_LOG", "warn,rmcp=off,toolstream_sinks::otel=debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let cards = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // Live input: the whole run now; the collector comes only once an export to it has failed
    // (it is absent while the run is exported), and the input ends right after.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input).unwrap();
    stdin.flush().unwrap();
    let mut stderr = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
            panic!("no failed export to the absent collector within 30 s: {stderr}");
        };
        let failed = line.contains("OTLP export failed");
        stderr.push_str(&line);
        stderr.push('\n');
        if failed {
            break;
        }
    }
    assert!(child.try_wait().unwrap().is_none(), "toolstream still runs while its input is open");
    let collector = Collector::start_on(&agent, http, grpc);
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "toolstream hung at exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The pipe's writer is gone: the reader's channel ends.
    for line in lines {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let lost = reported_lost(&stderr);
    // A run whose sink lost spans exits 1, and says how many.
    assert_eq!(status.code(), Some(i32::from(lost > 0)), "{stderr}");
    assert_eq!(cards.join().unwrap(), plain.stdout, "the cards are unaffected");
    let a = fs::read_to_string(&plain_session).unwrap();
    let b = fs::read_to_string(&session).unwrap();
    assert_eq!(a.lines().count(), b.lines().count(), "the pi session is unaffected");
    let spans = collector.wait_for(DEMO_CALLS + 1 - lost, Duration::from_secs(20));
    assert_eq!(spans.len() + lost, DEMO_CALLS + 1, "received + reported lost = every span: {stderr}");
    let _ = fs::remove_dir_all(&dir);
}
