use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};
use toolstream_schemas::{Output, RunStatus, StopReason};

use super::*;
use crate::pi_events::testutil::*;

/// A fresh directory under the system temp dir.
fn tempdir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolstream-pi-session-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn dir_listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A run with one tool-use message, its result and a final answer.
fn simple_run(r: &Arc<RunId>, model: &str, t0: u64) -> Vec<OutputEvent> {
    let label = r.label();
    vec![
        ev(r, 0, opened(model, "fix it")),
        ev(r, t0, Output::MessageStarted { turn: 0 }),
        ev(r, t0, thinking("Looking.")),
        ev(r, t0 + 1, lifecycle("Cursor shell", "npm test")),
        ev(r, t0 + 2, Output::BlockEnded { turn: 0 }),
        ev(r, t0 + 2, text("Running.")),
        ev(r, t0 + 3, Output::BlockEnded { turn: 0 }),
        ev(r, t0 + 3, card(&label, 1, "bash", json!({"command": "npm test"}), "ok", false)),
        ev(r, t0 + 4, card(&label, 2, "read", json!({"path": "a.rs"}), "fn main", true)),
        ev(r, t0 + 10, ended(StopReason::ToolUse, usage(3, 4), None)),
        ev(r, t0 + 20, Output::MessageStarted { turn: 1 }),
        ev(r, t0 + 20, text("Done.")),
        ev(r, t0 + 21, Output::BlockEnded { turn: 1 }),
        ev(r, t0 + 21, ended(StopReason::Stop, usage(3, 4), None)),
        ev(r, t0 + 21, closed(RunStatus::Finished)),
    ]
}

fn read_lines(path: &Path) -> Vec<Value> {
    lines(&fs::read(path).unwrap())
}

/// Structural checks every session must pass: header, unique 8-hex ids, one parent chain, every
/// tool call answered right after its message, complete usage everywhere.
fn check_session(lines: &[Value]) {
    let header = &lines[0];
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    assert!(header["id"].as_str().unwrap().len() == 36);
    assert!(header["cwd"].is_string());
    let mut seen = HashSet::new();
    let mut prev: Option<String> = None;
    let mut pending: Vec<String> = Vec::new();
    for e in &lines[1..] {
        let id = e["id"].as_str().unwrap().to_owned();
        assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert!(seen.insert(id.clone()), "duplicate id {id}");
        assert_eq!(e["parentId"].as_str().map(str::to_owned), prev);
        assert!(e["timestamp"].as_str().unwrap().ends_with('Z'));
        prev = Some(id);
        if e["type"] != "message" {
            assert!(pending.is_empty());
            continue;
        }
        let m = &e["message"];
        match m["role"].as_str().unwrap() {
            "toolResult" => {
                assert_eq!(m["toolCallId"].as_str().unwrap(), pending.remove(0), "results in call order");
            }
            "assistant" => {
                assert!(pending.is_empty(), "every tool call has its result");
                for k in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
                    assert!(m["usage"][k].is_u64());
                }
                for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
                    assert!(m["usage"]["cost"][k].is_number());
                }
                assert_eq!(m["api"], "cursor-sdk");
                assert_eq!(m["provider"], "cursor");
                pending = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| b["id"].as_str().unwrap().to_owned())
                    .collect();
                if !pending.is_empty() {
                    assert_eq!(m["stopReason"], "toolUse");
                }
            }
            "user" => assert!(pending.is_empty()),
            other => panic!("unexpected role {other}"),
        }
    }
    assert!(pending.is_empty(), "every tool call has its result");
}

#[test]
fn writes_pi_v3_entries_exactly() {
    let dir = tempdir("exact");
    let path = dir.join("s.jsonl");
    let r = run("sess", 1);
    let mut sink = PiSessionSink::create(&path, false).unwrap();
    sink.write(&simple_run(&r, "composer-2", 1_794_300_000_000)).unwrap();
    sink.checkpoint().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let got: Vec<&str> = text.lines().collect();

    let seed = format!("{}\n/work/p\nfix it", r.label());
    let sid = uuid_v7(1_794_300_000_000, &seed);
    let mut ids = EntryIds::new(&sid);
    let id: Vec<String> = (0..6).map(|_| ids.next_id()).collect();
    let label = r.label();
    let (c1, c2) = (format!("cursor-replay-{label}-tool-1"), format!("cursor-replay-{label}-tool-2"));
    let usage = r#"{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"input":0.25,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let expected = [
        format!(
            r#"{{"type":"session","version":3,"id":"{sid}","timestamp":"2026-11-10T08:40:00.000Z","cwd":"/work/p"}}"#
        ),
        format!(
            r#"{{"type":"model_change","id":"{}","parentId":null,"timestamp":"2026-11-10T08:40:00.000Z","provider":"cursor","modelId":"composer-2"}}"#,
            id[0]
        ),
        format!(
            r#"{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-11-10T08:40:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"fix it"}}],"timestamp":1794300000000}}}}"#,
            id[1], id[0]
        ),
        format!(
            concat!(
                r#"{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-11-10T08:40:00.010Z","message":{{"role":"assistant","content":["#,
                r#"{{"type":"thinking","thinking":"Looking.Cursor shell: npm test\n"}},{{"type":"text","text":"Running."}},"#,
                r#"{{"type":"toolCall","id":"{c1}","name":"bash","arguments":{{"command":"npm test"}}}},"#,
                r#"{{"type":"toolCall","id":"{c2}","name":"read","arguments":{{"path":"a.rs"}}}}],"#,
                r#""api":"cursor-sdk","provider":"cursor","model":"composer-2","responseId":"sess","usage":{usage},"stopReason":"toolUse","timestamp":1794300000000}}}}"#
            ),
            id[2],
            id[1],
            c1 = c1,
            c2 = c2,
            usage = usage
        ),
        format!(
            r#"{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-11-10T08:40:00.010Z","message":{{"role":"toolResult","toolCallId":"{c1}","toolName":"bash","content":[{{"type":"text","text":"ok"}}],"details":{{"sourceToolName":"shell","status":"success","summary":"","title":"Cursor shell","variant":"native"}},"isError":false,"timestamp":1794300000010}}}}"#,
            id[3], id[2]
        ),
        format!(
            r#"{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-11-10T08:40:00.010Z","message":{{"role":"toolResult","toolCallId":"{c2}","toolName":"read","content":[{{"type":"text","text":"fn main"}}],"details":{{"sourceToolName":"shell","status":"failure","summary":null,"title":"Cursor shell","variant":"native"}},"isError":true,"timestamp":1794300000010}}}}"#,
            id[4], id[3]
        ),
        format!(
            r#"{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-11-10T08:40:00.021Z","message":{{"role":"assistant","content":[{{"type":"text","text":"Done."}}],"api":"cursor-sdk","provider":"cursor","model":"composer-2","responseId":"sess","usage":{usage},"stopReason":"stop","timestamp":1794300000020}}}}"#,
            id[5], id[4]
        ),
    ];
    assert_eq!(got.len(), expected.len(), "{text}");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g, e);
    }
    check_session(&read_lines(&path));
    assert_eq!(dir_listing(&dir), ["s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn nothing_is_published_until_a_checkpoint_and_no_temp_file_remains() {
    let dir = tempdir("atomic");
    let path = dir.join("s.jsonl");
    let r = run("sess", 1);
    let events = simple_run(&r, "composer-2", 1_000);
    let mut sink = PiSessionSink::create(&path, false).unwrap();
    // The first message ends: still nothing at the target until a checkpoint (a cheap flush
    // does not publish either).
    sink.write(&events[..10]).unwrap();
    sink.flush().unwrap();
    assert!(!path.exists());
    assert!(dir_listing(&dir).is_empty());
    sink.checkpoint().unwrap();
    let snapshot = fs::read(&path).unwrap();
    let first = lines(&snapshot);
    check_session(&first);
    assert_eq!(first.len(), 6, "header, model, prompt, assistant, two results");
    // The next message streams and ends, the run closes: the file is unchanged until the next
    // checkpoint.
    sink.write(&events[10..14]).unwrap();
    assert_eq!(fs::read(&path).unwrap(), snapshot);
    sink.write(&events[14..]).unwrap();
    assert_eq!(fs::read(&path).unwrap(), snapshot);
    sink.checkpoint().unwrap();
    let full = read_lines(&path);
    assert_eq!(full.len(), 7);
    assert_eq!(full[..6], first[..]);
    check_session(&full);
    assert_eq!(dir_listing(&dir), ["s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_pre_existing_target_is_refused_or_with_overwrite_replaced_whole_never_edited_in_place() {
    let dir = tempdir("replace");
    let path = dir.join("s.jsonl");
    fs::write(&path, "old\n").unwrap();
    let err = PiSessionSink::create(&path, false).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert!(err.to_string().contains("--force"), "{err}");
    let mut held = File::open(&path).unwrap();
    let r = run("sess", 1);
    let mut sink = PiSessionSink::create(&path, true).unwrap();
    sink.write(&simple_run(&r, "m", 5)).unwrap();
    sink.checkpoint().unwrap();
    // A reader holding the old file still sees the old content.
    let mut old = String::new();
    io::Read::read_to_string(&mut held, &mut old).unwrap();
    assert_eq!(old, "old\n");
    check_session(&read_lines(&path));
    assert_eq!(dir_listing(&dir), ["s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn several_runs_share_one_session_with_a_model_change_per_change() {
    let dir = tempdir("runs");
    let path = dir.join("s.jsonl");
    let mut sink = PiSessionSink::create(&path, false).unwrap();
    let (a, b, c) = (run("s", 1), run("s", 2), run("s", 3));
    sink.write(&simple_run(&a, "m1", 100)).unwrap();
    sink.write(&simple_run(&b, "m1", 200)).unwrap();
    sink.write(&simple_run(&c, "m2", 300)).unwrap();
    sink.checkpoint().unwrap();
    let l = read_lines(&path);
    check_session(&l);
    let models: Vec<&str> =
        l.iter().filter(|e| e["type"] == "model_change").map(|e| e["modelId"].as_str().unwrap()).collect();
    assert_eq!(models, ["m1", "m2"]);
    let users = l.iter().filter(|e| e["message"]["role"] == "user").count();
    assert_eq!(users, 3);
    let calls: HashSet<&str> = l
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| e["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 6, "replay ids are unique across runs");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn incomplete_cards_get_results_and_interleaved_runs_stay_contiguous() {
    let dir = tempdir("incomplete");
    let path = dir.join("s.jsonl");
    let mut sink = PiSessionSink::create(&path, false).unwrap();
    let (a, b) = (run("a", 1), run("b", 1));
    let (la, lb) = (a.label(), b.label());
    sink.write(&[
        ev(&a, 0, opened("Auto", "first")),
        ev(&b, 0, opened("Auto", "second")),
        ev(&a, 10, Output::MessageStarted { turn: 0 }),
        ev(&b, 11, Output::MessageStarted { turn: 0 }),
        ev(&a, 12, text("partial")),
        ev(&b, 13, card(&lb, 1, "bash", json!({"command": "x"}), "x", false)),
        ev(&a, 14, Output::BlockEnded { turn: 0 }),
        ev(&a, 14, incomplete_card(&la, 1)),
        ev(&a, 14, ended(StopReason::Error, usage(1, 2), Some("missing result"))),
        ev(&b, 15, ended(StopReason::ToolUse, usage(1, 2), None)),
        ev(&a, 15, closed(RunStatus::Error)),
        ev(&b, 16, Output::MessageStarted { turn: 1 }),
        ev(&b, 16, ended(StopReason::Aborted, usage(1, 2), None)),
        ev(&b, 16, closed(RunStatus::Cancelled)),
    ])
    .unwrap();
    sink.checkpoint().unwrap();
    let l = read_lines(&path);
    check_session(&l);
    let roles: Vec<String> = l[1..]
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "message" => {
                let m = &e["message"];
                format!("{}:{}", m["role"].as_str().unwrap(), m["stopReason"].as_str().unwrap_or(""))
            }
            t => t.to_owned(),
        })
        .collect();
    assert_eq!(
        roles,
        [
            "model_change",
            "user:",
            "assistant:toolUse",
            "toolResult:",
            "assistant:error",
            "user:",
            "assistant:toolUse",
            "toolResult:",
            "assistant:aborted",
        ]
    );
    let errored: Vec<&Value> = l.iter().filter(|e| e["message"]["stopReason"] == "error").collect();
    assert_eq!(errored[0]["message"]["errorMessage"], "missing result");
    assert_eq!(errored[0]["message"]["usage"]["totalTokens"], 3);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn output_is_deterministic_and_zero_times_take_the_runs_first_time() {
    let dir = tempdir("determinism");
    let r = run("sess", 1);
    let mut files = Vec::new();
    for name in ["a.jsonl", "b.jsonl"] {
        let path = dir.join(name);
        let mut sink = PiSessionSink::create(&path, false).unwrap();
        sink.write(&simple_run(&r, "m", 1_794_300_000_000)).unwrap();
        sink.checkpoint().unwrap();
        files.push(fs::read(&path).unwrap());
    }
    assert_eq!(files[0], files[1]);
    let l = lines(&files[0]);
    // The run opened at event time 0; its entries carry its first real time instead.
    let times: HashMap<&str, &str> =
        l.iter().map(|e| (e["type"].as_str().unwrap(), e["timestamp"].as_str().unwrap())).collect();
    assert_eq!(times["model_change"], "2026-11-10T08:40:00.000Z");
    assert_eq!(l[2]["message"]["timestamp"], 1_794_300_000_000u64);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_target_fails_early_or_cleanly() {
    let dir = tempdir("bad");
    assert!(PiSessionSink::create(&dir.join("missing/s.jsonl"), false).is_err());
    assert!(PiSessionSink::create(&dir, false).is_err());
    // The target turns into a directory: it is not replaced, no temp file is left.
    let path = dir.join("s.jsonl");
    let mut sink = PiSessionSink::create(&path, false).unwrap();
    fs::create_dir(&path).unwrap();
    fs::write(path.join("x"), "x").unwrap();
    let r = run("sess", 1);
    sink.write(&simple_run(&r, "m", 5)).unwrap();
    assert!(sink.checkpoint().is_err());
    assert_eq!(dir_listing(&dir), ["s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn runs_opened_at_time_zero_each_take_their_own_first_time() {
    let dir = tempdir("bases");
    let mut sink = PiSessionSink::create(&dir.join("s.jsonl"), false).unwrap();
    let (a, b, c) = (run("sess-a", 1), run("sess-b", 1), run("sess-c", 1));
    sink.write(&[ev(&a, 0, opened("m", "one")), ev(&b, 0, opened("m", "two")), ev(&c, 7, opened("m", "three"))])
        .unwrap();
    assert_eq!(sink.unbased.len(), 2);
    sink.write(&[ev(&b, 0, Output::MessageStarted { turn: 0 }), ev(&b, 20, text("b first"))]).unwrap();
    sink.write(&[ev(&a, 10, Output::MessageStarted { turn: 0 }), ev(&b, 30, text("b later"))]).unwrap();
    let bases: Vec<u64> = sink.open.iter().map(|r| r.base).collect();
    assert_eq!((bases, sink.unbased.len()), (vec![10, 20, 7], 0));
    let _ = fs::remove_dir_all(&dir);
}
