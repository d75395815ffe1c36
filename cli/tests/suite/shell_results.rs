//! Shell results as pi's own bash tool bounds them (SPEC §8): what pi's model reads of a shell
//! call keeps the last 2,000 lines / 50 KiB with `[Showing lines X-Y of N]`, where a failing run's
//! failures and summary are; with `--compact` the whole recorded output is compacted first, then
//! bounded (SPEC §10); the terminal's collapsed preview shows a long output's first and last lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolstream_testkit::synthetic::cargo_test_log;

/// A recorded run whose one shell call is a failing `cargo test` of about 5,000 lines, its 17
/// failures listed at the end. Returns the recording and the failing tests' names.
fn cargo_test_run(dir: &Path) -> (PathBuf, Vec<String>) {
    let (log, names) = cargo_test_log(5_000 * 44, 17);
    assert!(log.lines().count() >= 5_000, "{}", log.lines().count());
    let s = "cargo-test-session";
    let shell = |result: Option<Value>| {
        let mut call = json!({ "args": { "command": "cargo test" } });
        if let Some(r) = result {
            call["result"] = r;
        }
        json!({ "shellToolCall": call })
    };
    let lines = [
        json!({"type":"system","subtype":"init","session_id":s,"cwd":"/w","model":"Auto"}),
        json!({"type":"user","session_id":s,"message":{"role":"user","content":[{"type":"text","text":"Run the tests."}]}}),
        json!({"type":"tool_call","subtype":"started","session_id":s,"call_id":"c1","timestamp_ms":1_000,
               "tool_call": shell(None)}),
        json!({"type":"tool_call","subtype":"completed","session_id":s,"call_id":"c1","timestamp_ms":9_000,
               "tool_call": shell(Some(json!({"failure":{"command":"cargo test","exitCode":101,"stdout":log,"stderr":""}})))}),
        json!({"type":"result","subtype":"success","session_id":s,"is_error":false,"result":"17 tests fail."}),
    ];
    let path = dir.join("cargo-test.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    (path, names)
}

/// The text of the run's one `toolResult` in a pi session written by `replay` (plus `extra`) into a
/// folder of its own (`pi-session=PATH` never replaces a file that exists).
fn tool_result_text(recording: &Path, extra: &[&str]) -> String {
    let session = common::tempdir().join("session.jsonl");
    let spec = format!("pi-session={}", session.display());
    let mut args = vec!["replay", "--sink", spec.as_str()];
    args.extend_from_slice(extra);
    args.push(recording.to_str().unwrap());
    let run = common::toolstream(&args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&session).unwrap();
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 1, "{text}");
    results[0]["message"]["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn every_failing_test_of_a_5000_line_cargo_test_reaches_pis_model_with_and_without_compact() {
    let dir = common::tempdir();
    let (recording, names) = cargo_test_run(&dir);
    assert_eq!(names.len(), 17);
    for extra in [&[][..], &["--compact"][..]] {
        let text = tool_result_text(&recording, extra);
        let missing: Vec<&String> = names.iter().filter(|n| !text.contains(n.as_str())).collect();
        assert!(missing.is_empty(), "{extra:?}: {} of 17 failing tests missing: {missing:?}", missing.len());
        assert!(text.ends_with("Command exited with code 101"), "{extra:?}: {}", &text[text.len() - 200..]);
        assert!(text.contains("test result: FAILED. 4983 passed; 17 failed"), "{extra:?}");
    }
    // Without compaction: the last lines as pi's bash keeps them, with its note.
    let plain = tool_result_text(&recording, &[]);
    assert!(plain.contains("\n\n[Showing lines "), "{}", &plain[..200]);
    assert!(!plain.contains("module_001::tests::case_0000001 ... ok"), "the first lines are left out");
    // With it: compacted from the whole output, so the passing tests are gone (not cut off).
    let compacted = tool_result_text(&recording, &["--compact"]);
    assert!(!compacted.contains(" ... ok"), "{}", &compacted[..200.min(compacted.len())]);
    assert!(compacted.len() < plain.len() / 4, "{} vs {}", compacted.len(), plain.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_collapsed_card_of_a_long_output_shows_its_first_and_last_lines() {
    let dir = common::tempdir();
    let (recording, names) = cargo_test_run(&dir);
    let run = common::toolstream(&["replay", "--color", "never", recording.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    let card = out.split("✗ $ cargo test\n").nth(1).unwrap_or_else(|| panic!("{out}"));
    let mut body: Vec<&str> =
        card.lines().take_while(|l| l.is_empty() || l.starts_with("    ")).map(str::trim).collect();
    while body.last() == Some(&"") {
        body.pop();
    }
    assert_eq!(body.len(), 8, "{body:?}");
    assert_eq!(body[0], "Compiling synthetic v0.1.0 (/tmp/synthetic)");
    assert!(body[3].starts_with("… (") && body[3].ends_with(" lines)"), "{body:?}");
    assert_eq!(body[7], "Command exited with code 101");
    assert!(body[4..].iter().any(|l| l.contains("error: test failed")), "{body:?}");
    // Expanded, the card shows what pi's model reads: the end, with every failing test.
    let run = common::toolstream(&["replay", "--color", "never", "--expanded", recording.to_str().unwrap()], None);
    assert!(names.iter().all(|n| run.stdout.contains(n.as_str())));
    let _ = std::fs::remove_dir_all(&dir);
}
