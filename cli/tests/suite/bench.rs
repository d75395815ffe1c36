//! `toolstream bench` on a small generated corpus: every stage runs (the Cursor database stage when
//! asked for), the JSON report carries the keys the performance issue names, progress goes to
//! stderr (one line per measured stage run when stderr is not a terminal) and never into the
//! report; inputs that cannot be measured are
//! refused once, with their path; `--sink otlp=URL` adds a stage whose spans reach a real
//! collector (rotel on loopback, `common::otel`). (Throughput itself is measured, never asserted.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

#[test]
fn bench_reports_every_stage_as_json() {
    let templates = common::example("");
    let run = common::toolstream(
        &[
            "bench",
            "--size",
            "2MB",
            "--sessions",
            "8",
            "--templates",
            templates.to_str().unwrap(),
            "--repeat",
            "2",
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let last = run.stdout.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    for key in [
        "floor_mbps",
        "decode_mbps",
        "e2e_null_mbps",
        "e2e_jsonl_mbps",
        "e2e_pi_session_mbps",
        "events_per_s",
        "peak_rss_mib",
    ] {
        assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {last}");
    }
    assert_eq!(v["repeat"], 2);
    assert!(run.stdout.contains("fastest of 2 runs per stage"), "{}", run.stdout);
    // Every stage read the same bytes.
    let stages = v["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(names, ["floor", "decode", "cores", "e2e-null", "e2e-jsonl", "e2e-pi-session"]);
    assert!(stages.iter().all(|s| s["bytes"] == stages[0]["bytes"]));
    assert!(stages[0]["bytes"].as_u64().unwrap() >= 2_000_000);

    // stdout is the report alone: the repeat note, the table header, one row per stage, the JSON.
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 1 + 6 + 1, "{}", run.stdout);
    assert!(lines[1].starts_with("stage "), "{}", run.stdout);
    assert!(!run.stdout.contains("bench:"), "{}", run.stdout);

    // stderr (a pipe here) has one plain progress line per measured stage run, in the order run.
    let progress: Vec<&str> = run.stderr.lines().filter(|l| l.contains(" … ")).collect();
    let expected: Vec<String> =
        (1..=2).flat_map(|round| names.iter().map(move |name| format!("bench: {name} {round}/2 … "))).collect();
    assert_eq!(progress.len(), expected.len(), "{}", run.stderr);
    for (line, prefix) in progress.iter().zip(&expected) {
        assert!(line.starts_with(prefix.as_str()) && line.contains(" MB/s"), "{line:?} vs {prefix:?}");
    }
    assert!(run.stderr.starts_with("bench: generating a 2M corpus"), "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains('\r'), "no bar on a pipe: {:?}", run.stderr);
}

#[test]
fn the_cursor_db_stage_runs_when_asked_for() {
    let templates = common::example("");
    let run = common::toolstream(
        &[
            "bench",
            "--size",
            "1MB",
            "--templates",
            templates.to_str().unwrap(),
            "--stage",
            "e2e-cursor-db",
            "--repeat",
            "1",
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    let names: Vec<&str> = v["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(names, ["e2e-cursor-db"]);
    assert!(v["e2e_cursor_db_mbps"].as_f64().is_some_and(|x| x > 0.0), "{}", run.stdout);
    assert!(run.stdout.contains("end to end → Cursor chat DB"), "{}", run.stdout);
}

#[test]
fn an_input_that_cannot_be_read_is_reported_once_with_its_path() {
    let dir = common::tempdir();
    let missing = dir.join("no-such-corpus.jsonl");
    for (input, why) in [(missing.as_path(), "No such file or directory"), (dir.as_path(), "it is a directory")] {
        let run = common::toolstream(&["bench", "--input", input.to_str().unwrap(), "--repeat", "1"], None);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_eq!(run.stdout, "");
        let expected = format!("toolstream: cannot read {}: {why}", input.display());
        assert!(run.stderr.starts_with(&expected), "{:?}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{:?}", run.stderr);
        assert_eq!(run.stderr.matches("toolstream: ").count(), 1, "{:?}", run.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_stage_reports_its_error_to_the_parent_without_the_binary_prefix() {
    // The internal child mode: its report line carries the error, so the parent can say it once.
    let run = common::toolstream(&["bench", "--child-stage", "floor", "--input", "/nonexistent/corpus.jsonl"], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.starts_with("cannot read /nonexistent/corpus.jsonl: "), "{error}");
}

#[test]
fn an_otlp_sink_is_measured_side_by_side_and_every_call_reaches_the_collector() {
    let Some(agent) = common::otel::rotel_agent() else { return };
    let collector = common::otel::Collector::start(&agent);
    let dir = common::tempdir();
    let corpus = dir.join("corpus.jsonl");
    let templates = common::example("");
    let sink = format!("otlp={}", collector.http_url());
    let run = common::toolstream(
        &[
            "bench",
            "--size",
            "256K",
            "--sessions",
            "4",
            "--templates",
            templates.to_str().unwrap(),
            "--repeat",
            "1",
            "--keep-corpus",
            corpus.to_str().unwrap(),
            "--sink",
            &sink,
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    let names: Vec<&str> = v["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(names, ["floor", "decode", "cores", "e2e-null", "e2e-jsonl", "e2e-pi-session", "e2e-otlp"]);
    let row = run.stdout.lines().find(|l| l.starts_with("end to end → OTLP sink")).unwrap_or_default();
    assert!(row.contains(" MiB "), "the OTLP stage has its row in the table: {}", run.stdout);
    assert!(v["e2e_otlp_mbps"].as_f64().is_some_and(|x| x > 0.0), "{v}");
    assert!(v["otlp_spans_per_s"].as_f64().is_some_and(|x| x > 0.0), "{v}");
    assert_eq!(v["otlp_spans_lost"], 0, "{v}");
    assert_eq!(v["otlp_sink"], sink.as_str());
    let (runs, calls, _) = common::otel::expected(&corpus);
    assert!(calls > 100, "a corpus with calls: {calls}");
    assert_eq!(v["otlp_spans"].as_u64(), Some((runs + calls) as u64), "{v}");
    assert!(run.stdout.contains(&format!("{sink}: ")) && run.stdout.contains("spans/s"), "{}", run.stdout);
    // Only the OTLP stage exports, once: the collector got one execute_tool span per call.
    let spans = collector.wait_for(runs + calls, std::time::Duration::from_secs(30));
    let tools = spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("execute_tool")).count();
    let agents = spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("invoke_agent")).count();
    assert_eq!((agents, tools), (runs, calls));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_an_otlp_sink_can_be_measured() {
    let run = common::toolstream(&["bench", "--sink", "jsonl=x.jsonl", "--repeat", "1"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("bench measures an OTLP sink"), "{}", run.stderr);
    let run = common::toolstream(&["bench", "--stage", "e2e-otlp", "--repeat", "1"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--sink otlp=URL"), "{}", run.stderr);
}
