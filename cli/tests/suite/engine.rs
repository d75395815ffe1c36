//! The actor engine through the real binary: replays are byte-identical (cards and traces), on
//! several shards; secrets never reach cards or traces; live input ticks deferred lines while a
//! tool runs; and Ctrl-C or end of input closes every run and flushes every sink.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn replay_with_trace(input: &std::path::Path, trace: &std::path::Path, shards: &str) -> String {
    let run = common::toolstream(
        &[
            "replay",
            "--color",
            "never",
            "--shards",
            shards,
            "--sink",
            "cards",
            "--sink",
            &format!("jsonl={}", trace.display()),
            input.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

#[test]
fn replaying_a_capture_twice_gives_identical_cards_and_traces() {
    let dir = common::tempdir();
    let mut inputs = common::cli_captures();
    inputs.push(common::example("demo.jsonl"));
    inputs.push(common::example("sdk-demo.jsonl"));
    for input in inputs {
        let (t1, t2) = (dir.join("t1.jsonl"), dir.join("t2.jsonl"));
        let c1 = replay_with_trace(&input, &t1, "2");
        let c2 = replay_with_trace(&input, &t2, "3");
        assert_eq!(c1, c2, "{}: cards differ", input.display());
        let (b1, b2) = (std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
        assert!(!b1.is_empty());
        assert_eq!(b1, b2, "{}: traces differ", input.display());
        for line in String::from_utf8(b1).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(v["phase"].is_string() || v["type"] == "artifact_truncated", "{line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first event time recorded in a stream (`timestamp_ms` of a CLI line, `at_ms` of an SDK
/// record).
fn first_recorded_time(input: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(input).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["timestamp_ms"].as_u64().or(v["at_ms"].as_u64()))
        .unwrap()
}

#[test]
fn every_trace_line_has_event_time_even_before_the_first_recorded_one() {
    // A CLI run opens on `system/init` and `user` lines, which carry no time: the trace still
    // dates its opening with event time (its run's first known time), never 0.
    let dir = common::tempdir();
    for input in common::captures_and_examples() {
        let trace = dir.join("t.jsonl");
        replay_with_trace(&input, &trace, "2");
        let first = first_recorded_time(&input);
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(text.lines().count() > 1, "{}", input.display());
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "artifact_truncated" {
                continue;
            }
            let ts = v["ts"].as_u64().unwrap();
            assert!(ts >= first, "{}: ts {ts} before the first recorded time {first}: {line}", input.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn traces_hash_call_ids_and_follow_the_run() {
    let Some(dir) = common::cli_fixtures() else { return };
    let tmp = common::tempdir();
    let trace = tmp.join("t.jsonl");
    replay_with_trace(&dir.join("harness-mocks__tool-failure.jsonl"), &trace, "2");
    let text = std::fs::read_to_string(&trace).unwrap();
    // Raw call ids (they contain `call-664d7f73…`) never appear; their hashes do.
    assert!(!text.contains("call-664d7f73"), "{text}");
    let hash = toolstream_schemas::ids::call_ref(
        "call-664d7f73-34ba-407f-9a2e-35109785f9bf-0\nfc_6207e120-60f6-97b8-99d7-de1f66805992_0",
    )
    .hash;
    assert!(text.contains(&hash));
    let phases: Vec<String> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["phase"].as_str().unwrap().to_owned()).collect();
    for p in ["run_opened", "tool_started", "tool_lifecycle", "tool_completed", "usage_applied", "message_ended"] {
        assert!(phases.iter().any(|x| x == p), "{p} in {phases:?}");
    }
    assert_eq!(phases.last().map(String::as_str), Some("run_closed"));
    let _ = std::fs::remove_dir_all(&tmp);
}

const S: &str = "5ec7e75e-0000-4000-8000-00000000c0de";

fn line(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

#[test]
fn secrets_in_commands_and_outputs_never_reach_cards_or_the_trace() {
    let cmd = "curl -H 'Authorization: Bearer sk-live-BEARER' https://bob:hunter2@api.example.com/x?api_key=QUERYKEY";
    let input = [
        line(serde_json::json!({"type":"system","subtype":"init","cwd":"/w","session_id":S,"model":"Auto"})),
        line(serde_json::json!({"type":"tool_call","subtype":"started","call_id":"c1","session_id":S,"timestamp_ms":1,
            "tool_call":{"shellToolCall":{"args":{"command":cmd}}}})),
        line(serde_json::json!({"type":"tool_call","subtype":"completed","call_id":"c1","session_id":S,"timestamp_ms":500,
            "tool_call":{"shellToolCall":{"result":{"failure":{"command":cmd,"exitCode":1,
                "stdout":"token=TOKENVALUE session_id=SESSIONVALUE CONFIGUREDKEY-123",
                "stderr":"cookie: a=COOKIEVALUE"}}}}})),
        line(serde_json::json!({"type":"result","subtype":"success","is_error":false,"result":"","session_id":S})),
    ]
    .concat();
    let dir = common::tempdir();
    let (file, trace) = (dir.join("in.jsonl"), dir.join("trace.jsonl"));
    std::fs::write(&file, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(["replay", "--color", "never", "--expanded", "--trace", trace.to_str().unwrap(), file.to_str().unwrap()])
        .env("CURSOR_API_KEY", "CONFIGUREDKEY-123")
        .output()
        .unwrap();
    let cards = String::from_utf8(out.stdout).unwrap();
    let traced = std::fs::read_to_string(&trace).unwrap();
    assert!(cards.contains("✗ $ curl -H 'Authorization: Bearer [redacted]"), "{cards}");
    assert!(cards.contains("Cursor shell: curl"), "the lifecycle line is there, scrubbed: {cards}");
    for secret in
        ["sk-live-BEARER", "hunter2", "QUERYKEY", "TOKENVALUE", "SESSIONVALUE", "CONFIGUREDKEY-123", "COOKIEVALUE"]
    {
        assert!(!cards.contains(secret), "{secret} reached the cards:\n{cards}");
        assert!(!traced.contains(secret), "{secret} reached the trace:\n{traced}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Read a child's stdout until it contains `needle` or the deadline passes.
fn wait_for(buf: &std::sync::Arc<std::sync::Mutex<String>>, needle: &str, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if buf.lock().unwrap().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn live_input_ticks_lifecycle_lines_and_ctrl_c_closes_runs_and_flushes_sinks() {
    let dir = common::tempdir();
    let trace = dir.join("trace.jsonl");
    let args = ["replay", "--color", "never", "--trace", trace.to_str().unwrap(), "-"];
    let mut child = common::spawn_toolstream(&args, Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let buf = buf.clone();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut stdout = stdout;
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
    };
    let now = 1_790_000_000_000u64;
    let input = [
        line(serde_json::json!({"type":"system","subtype":"init","cwd":"/w","session_id":S,"model":"Auto"})),
        line(serde_json::json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"wait"}]},"session_id":S})),
        line(serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Waiting."}]},"session_id":S,"timestamp_ms":now})),
        line(serde_json::json!({"type":"tool_call","subtype":"started","call_id":"c1","session_id":S,"timestamp_ms":now + 1,
            "tool_call":{"shellToolCall":{"args":{"command":"sleep 600"}}}})),
    ]
    .concat();
    stdin.write_all(input.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // No more input arrives, yet the deferred line shows: live input ticks by wall time.
    assert!(
        wait_for(&buf, "… Cursor shell: sleep 600", Duration::from_secs(10)),
        "no lifecycle line while the shell runs: {}",
        buf.lock().unwrap()
    );
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < deadline, "toolstream did not exit after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    reader.join().unwrap();
    assert_eq!(code, Some(130));
    let out = buf.lock().unwrap().clone();
    // SPEC §5.3: a cancelled run shows its incomplete call as a thinking line, never a card.
    assert!(out.contains("┆ Cursor shell did not complete: aborted\n"), "{out}");
    assert!(!out.contains('✗'), "{out}");
    assert!(out.contains("⊘ aborted"), "{out}");
    assert!(out.contains("── cancelled · 0 cards, 1 incomplete ──"), "{out}");
    // The trace was flushed: it ends with the run's close.
    let traced = std::fs::read_to_string(&trace).unwrap();
    let last: Value = serde_json::from_str(traced.lines().last().unwrap()).unwrap();
    assert_eq!((last["phase"].as_str(), last["status"].as_str()), (Some("run_closed"), Some("cancelled")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn end_of_input_closes_runs_and_flushes_the_trace() {
    let dir = common::tempdir();
    let trace = dir.join("trace.jsonl");
    let input = [
        line(serde_json::json!({"type":"system","subtype":"init","cwd":"/w","session_id":S,"model":"Auto"})),
        line(serde_json::json!({"type":"tool_call","subtype":"started","call_id":"c1","session_id":S,"timestamp_ms":5,
            "tool_call":{"taskToolCall":{"args":{"description":"sub"}}}})),
    ]
    .concat();
    let run = common::toolstream(
        &["replay", "--color", "never", "--trace", trace.to_str().unwrap(), "-"],
        Some(input.as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("✗ error: missing result"), "{}", run.stdout);
    let traced = std::fs::read_to_string(&trace).unwrap();
    let last: Value = serde_json::from_str(traced.lines().last().unwrap()).unwrap();
    assert_eq!((last["phase"].as_str(), last["status"].as_str()), (Some("run_closed"), Some("error")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interleaved_sessions_replay_byte_identically_on_several_shards() {
    use toolstream::bench::corpus::{generate, templates_from_dir, CorpusSpec};
    // Eight sessions interleaved line by line, from the project's own examples.
    let templates = templates_from_dir(&common::example("")).unwrap();
    assert!(!templates.is_empty());
    let mut bytes = Vec::new();
    generate(&templates, &CorpusSpec { target_bytes: 400_000, concurrency: 8, seed: 3 }, &mut bytes).unwrap();
    let dir = common::tempdir();
    let input = dir.join("interleaved.jsonl");
    std::fs::write(&input, &bytes).unwrap();
    let (t1, t2) = (dir.join("t1.jsonl"), dir.join("t2.jsonl"));
    let c1 = replay_with_trace(&input, &t1, "3");
    let c2 = replay_with_trace(&input, &t2, "3");
    assert!(c1.matches("── Cursor run").count() > 20, "many runs");
    assert_eq!(c1, c2, "cards differ between two replays");
    assert_eq!(std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap(), "traces differ between two replays");
    let _ = std::fs::remove_dir_all(&dir);
}
