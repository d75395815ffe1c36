//! The Cursor chat database as a source and as a sink, end to end with the real binary, real
//! SQLite (databases are built here, at test time, from `../shared/fixtures/cursor-bubbles`)
//! and real pi (each version of `scripts/pi-versions`, installed by `scripts/install-pi`):
//! - the real Cursor 3.6 conversation (and the agent-hub sample) replays to a pi session that pi
//!   exports and serves, with one tool call per tool bubble and the bubbles' text in order;
//! - every CLI capture written with `--sink cursor-db` and read back gives the same calls (tool,
//!   args, result, error status) and the same assistant text;
//! - missing, non-SQLite, table-less, malformed and locked databases fail clearly, and the source
//!   never changes the file (also while another connection holds a write lock, and in WAL mode);
//! - bad bubbles become bounded neutral cards and reports naming their keys;
//! - `--sink pi-sessions` puts the conversation where pi lists and opens it, once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;
use serde_json::{json, Value};

use common::pi::PI_TIMEOUT;
const CONVO: &str = "cursor-bubbles/toolpath-convo.json";
const AGENT_HUB: &str = "cursor-bubbles/agent-hub-ide-composer-sample.json";

fn fixture_json(rel: &str) -> Option<Value> {
    let path = toolstream_testkit::fixture(rel)?;
    Some(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// An empty database with Cursor's two tables.
fn new_db(path: &Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
         CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
    )
    .unwrap();
    c
}

fn put(c: &Connection, table: &str, key: &str, value: &str) {
    c.execute(&format!("INSERT INTO {table} (key, value) VALUES (?1, ?2)"), [key, value]).unwrap();
}

/// The real conversation as Cursor 3.6 stores it: header in `ItemTable`, `composerData`, every
/// bubble and the content blobs. `cwd` replaces its workspace folder when given.
fn add_convo(c: &Connection, convo: &Value, cwd: Option<&str>) -> String {
    let mut head = convo["head"].clone();
    if let Some(cwd) = cwd {
        head["workspaceIdentifier"]["uri"]["fsPath"] = json!(cwd);
        head["workspaceIdentifier"]["uri"]["path"] = json!(cwd);
    }
    let id = convo["data"]["composerId"].as_str().unwrap().to_owned();
    put(c, "ItemTable", "composer.composerHeaders", &json!({ "allComposers": [head] }).to_string());
    put(c, "cursorDiskKV", &format!("composerData:{id}"), &convo["data"].to_string());
    for b in convo["bubbles"].as_array().unwrap() {
        put(c, "cursorDiskKV", &format!("bubbleId:{id}:{}", b["bubbleId"].as_str().unwrap()), &b.to_string());
    }
    for (hash, body) in convo["content_blobs"].as_object().unwrap() {
        put(c, "cursorDiskKV", &format!("composer.content.{hash}"), body.as_str().unwrap());
    }
    id
}

/// The agent-hub sample: `composerData` (with its own workspace) and three bubbles.
fn add_agent_hub(c: &Connection, sample: &Value) -> String {
    let id = sample["composerData"]["composerId"].as_str().unwrap().to_owned();
    put(c, "cursorDiskKV", &format!("composerData:{id}"), &sample["composerData"].to_string());
    for (bid, b) in sample["bubbles"].as_object().unwrap() {
        put(c, "cursorDiskKV", &format!("bubbleId:{id}:{bid}"), &b.to_string());
    }
    id
}

/// A database holding both fixture conversations; `None` when the fixtures are absent.
fn fixture_db(dir: &Path, cwd: Option<&str>) -> Option<(PathBuf, String, String)> {
    let convo = fixture_json(CONVO)?;
    let sample = fixture_json(AGENT_HUB)?;
    let path = dir.join("fixture.vscdb");
    let c = new_db(&path);
    let a = add_convo(&c, &convo, cwd);
    let b = add_agent_hub(&c, &sample);
    Some((path, a, b))
}

/// The file's SHA-256, computed by another process: closing a descriptor of the file in this
/// process would drop the POSIX locks a test connection holds on it.
fn checksum(path: &Path) -> Option<String> {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or("").to_owned())
}

fn run(args: &[&str]) -> common::Run {
    common::toolstream(args, None)
}

/// Replay `args` (after `replay`) with a pi session sink at `session`; exit 0; the session's lines.
fn replay_to_session(args: &[&str], session: &Path) -> Vec<Value> {
    let sink = format!("pi-session={}", session.display());
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.extend(["--sink", sink.as_str()]);
    let r = run(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    session_lines(session)
}

fn session_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn messages(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|e| e["type"] == "message").map(|e| &e["message"]).collect()
}

/// (pi tool, source tool, arguments, result text, is error) of every call, in order.
fn calls(lines: &[Value]) -> Vec<(String, String, Value, String, bool)> {
    let msgs = messages(lines);
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        for (k, call) in blocks.iter().filter(|b| b["type"] == "toolCall").enumerate() {
            let result = msgs[i + 1 + k];
            assert_eq!(result["toolCallId"], call["id"], "every tool call is answered in order");
            let text: String =
                result["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect();
            out.push((
                call["name"].as_str().unwrap().to_owned(),
                result["details"]["sourceToolName"].as_str().unwrap_or("").to_owned(),
                call["arguments"].clone(),
                text,
                result["isError"] == true,
            ));
        }
    }
    out
}

/// Every assistant text block, concatenated, whitespace-free.
fn assistant_text(lines: &[Value]) -> String {
    let mut all = String::new();
    for m in messages(lines).into_iter().filter(|m| m["role"] == "assistant") {
        for b in m["content"].as_array().unwrap().iter().filter(|b| b["type"] == "text") {
            all.push_str(b["text"].as_str().unwrap());
        }
    }
    all.split_whitespace().collect()
}

// ------------------------------------------------------------------------------------------------
// Source
// ------------------------------------------------------------------------------------------------

#[test]
fn list_shows_every_conversation() {
    let dir = common::tempdir();
    let Some((db, convo, hub)) = fixture_db(&dir, None) else { return };
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = |id: &str| r.stdout.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{id} not listed"));
    let a = line(&convo);
    // Title, created and updated (the header's times), bubble count, model.
    assert!(a.contains("Tool usage exercise walkthrough"), "{a}");
    assert!(a.contains("2026-06-01T18:33:16.904Z") && a.contains("2026-06-01T18:33:24.591Z"), "{a}");
    assert!(a.contains(" 22 ") && a.contains("default"), "{a}");
    let b = line(&hub);
    assert!(b.contains("General chat") && b.contains(" 3 "), "{b}");
    // Without a title, the first prompt is the title.
    let c = Connection::open(&db).unwrap();
    let sample = fixture_json(AGENT_HUB).unwrap();
    let mut data = sample["composerData"].clone();
    data.as_object_mut().unwrap().remove("name");
    c.execute("UPDATE cursorDiskKV SET value = ?1 WHERE key = ?2", [data.to_string(), format!("composerData:{hub}")])
        .unwrap();
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--list"]);
    assert!(r.stdout.lines().any(|l| l.starts_with(&hub) && l.ends_with("  hi")), "{}", r.stdout);
}

#[test]
fn the_real_conversation_replays_to_a_session_pi_accepts() {
    let dir = common::tempdir();
    let Some((db, convo_id, hub_id)) = fixture_db(&dir, None) else { return };
    let convo = fixture_json(CONVO).unwrap();
    let bubbles = convo["bubbles"].as_array().unwrap();
    let session = dir.join("s.jsonl");
    let db_arg = db.to_str().unwrap();
    let lines = replay_to_session(&["--from-cursor-db", db_arg, "--composer", &convo_id], &session);
    let msgs = messages(&lines);
    // The prompt is the user bubble's text.
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["content"][0]["text"], bubbles[0]["text"]);
    // One tool call per tool bubble, in order, with the bubble's tool and status.
    let got = calls(&lines);
    let tools: Vec<&Value> = bubbles.iter().filter(|b| b.get("toolFormerData").is_some()).collect();
    assert_eq!(got.len(), tools.len());
    let canonical = |id: i64| match id {
        15 => "shell",
        38 => "edit",
        40 => "read",
        41 => "grep",
        42 => "glob",
        48 => "task",
        other => panic!("unexpected tool id {other}"),
    };
    for (call, bubble) in got.iter().zip(&tools) {
        let tf = &bubble["toolFormerData"];
        assert_eq!(call.1, canonical(tf["tool"].as_i64().unwrap()));
        assert_eq!(call.4, tf["status"] == "error", "{call:?}");
    }
    // Recorded results reach the cards: shell output, read contents, the edit's diff.
    assert!(got[0].3.contains("drwxr-xr-x 2 ben staff"), "{:?}", got[0]);
    assert!(got[2].3.contains("this file will be edited and searched."), "{:?}", got[2]);
    assert!(got.iter().any(|c| c.1 == "edit" && c.3.contains("+fixture — feature elicitation")), "{got:?}");
    assert!(got.iter().any(|c| c.1 == "read" && c.4 && c.3.contains("File not found")), "{got:?}");
    // The bubbles' text, in order, is the assistant text.
    let expected: String = bubbles.iter().filter_map(|b| b["text"].as_str()).skip(1).collect::<String>();
    assert_eq!(assistant_text(&lines), expected.split_whitespace().collect::<String>());
    // The thinking bubble is thinking.
    let thinking: String = bubbles[1]["thinking"]["text"].as_str().unwrap().chars().take(60).collect();
    assert!(msgs.iter().any(|m| m["content"].as_array().is_some_and(|c| c
        .iter()
        .any(|b| b["type"] == "thinking" && b["thinking"].as_str().is_some_and(|t| t.contains(&thinking))))));

    // The agent-hub sample: a prompt, an empty thinking bubble, one answer.
    let hub_session = dir.join("hub.jsonl");
    let hub = replay_to_session(&["--from-cursor-db", db_arg, "--composer", &hub_id], &hub_session);
    assert_eq!(messages(&hub)[0]["content"][0]["text"], "hi");
    assert_eq!(assistant_text(&hub), "你好，需要我帮你做什么？");
    assert_eq!(hub[0]["cwd"], "/Users/dev/AiProject/demo-app");

    common::each_pi(|pi| {
        for (file, n_calls) in [(&session, tools.len()), (&hub_session, 0)] {
            let copy = dir.join("copy.jsonl");
            std::fs::copy(file, &copy).unwrap();
            let html = dir.join("out.html");
            let mut cmd = common::pi::pi_command(&pi.bin(), &dir.join("home"));
            cmd.args(["--export", copy.to_str().unwrap(), html.to_str().unwrap()]);
            let out = common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap();
            assert_eq!(out.code, Some(0), "pi --export: {}", out.stderr);
            assert!(std::fs::metadata(&html).unwrap().len() > 0);
            // pi loads every message, each tool call with its result.
            let lines = session_lines(file);
            let workdir = dir.join("workdir");
            std::fs::create_dir_all(&workdir).unwrap();
            let text = std::fs::read_to_string(file).unwrap();
            let (first, rest) = text.split_once('\n').unwrap();
            let mut header: Value = serde_json::from_str(first).unwrap();
            header["cwd"] = json!(workdir); // pi refuses a session whose folder is missing
            std::fs::write(&copy, format!("{header}\n{rest}")).unwrap();
            let mut cmd = common::pi::pi_command(&pi.bin(), &dir.join("home"));
            cmd.args(["--mode", "rpc", "--session", copy.to_str().unwrap()]);
            let res = common::pi::pi_rpc(cmd, &[json!({"id": "messages", "type": "get_messages"})]);
            let got = res["messages"]["data"]["messages"].as_array().unwrap();
            assert_eq!(got.len(), messages(&lines).len());
            assert_eq!(got.iter().filter(|m| m["role"] == "toolResult").count(), n_calls);
        }
    });
}

#[test]
fn bad_databases_fail_clearly_and_the_source_never_changes_the_file() {
    let dir = common::tempdir();
    let Some((db, convo_id, _)) = fixture_db(&dir, None) else { return };
    let fails = |path: &Path, needle: &str| {
        let before = checksum(path);
        let r = run(&["replay", "--from-cursor-db", path.to_str().unwrap(), "--all", "--sink", "cards"]);
        assert_eq!(r.code, 2, "{}: {}", path.display(), r.stderr);
        assert!(r.stderr.contains(needle), "{}: {}", path.display(), r.stderr);
        assert_eq!(checksum(path), before, "{} changed", path.display());
    };
    fails(&dir.join("absent.vscdb"), "no such file");
    let text = dir.join("text.vscdb");
    std::fs::write(&text, "not a database at all, but long enough to fill a header").unwrap();
    fails(&text, "not an SQLite database");
    let empty = dir.join("empty.vscdb");
    std::fs::write(&empty, b"").unwrap();
    fails(&empty, "not an SQLite database");
    let other = dir.join("other.sqlite");
    Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    fails(&other, "no `cursorDiskKV` table");
    // Malformed: the pages after the schema overwritten.
    let broken = dir.join("broken.vscdb");
    std::fs::copy(&db, &broken).unwrap();
    let mut bytes = std::fs::read(&broken).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    assert!(bytes.len() > 3 * page);
    for b in &mut bytes[page..] {
        *b = 0xA5;
    }
    std::fs::write(&broken, &bytes).unwrap();
    fails(&broken, "malformed");

    // Locked: another connection holds the database exclusively.
    let before = checksum(&db);
    let writer = Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN EXCLUSIVE; INSERT INTO ItemTable VALUES ('x', 'y');").unwrap();
    fails(&db, "locked by another writer");
    // A writer that only reserved the database: reading goes on, the file stays as it was.
    writer.execute_batch("ROLLBACK; BEGIN IMMEDIATE; INSERT INTO ItemTable VALUES ('x', 'y');").unwrap();
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--composer", &convo_id]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("read notes.md"), "{}", r.stdout);
    assert_eq!(checksum(&db), before);
    writer.execute_batch("ROLLBACK").unwrap();
    drop(writer);
    // A plain replay and a listing change nothing either, and leave no journal behind.
    for args in [vec!["--all"], vec!["--list"]] {
        let mut a = vec!["replay", "--from-cursor-db", db.to_str().unwrap()];
        a.extend(args);
        assert_eq!(run(&a).code, 0);
        assert_eq!(checksum(&db), before);
    }
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!names.iter().any(|n| n.starts_with("fixture.vscdb-")), "{names:?}");
    // Writing into the database being read is refused.
    let sink = format!("cursor-db={}", db.display());
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--all", "--sink", &sink]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("the database being read"), "{}", r.stderr);
    assert_eq!(checksum(&db), before);
    // Asking for a conversation the database does not hold is an error too.
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--composer", "nope"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no conversation `nope`"), "{}", r.stderr);
}

#[test]
fn a_wal_database_is_read_with_what_its_log_holds_and_left_as_it_is() {
    let dir = common::tempdir();
    let Some(convo) = fixture_json(CONVO) else { return };
    let db = dir.join("wal.vscdb");
    let c = new_db(&db);
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;").unwrap();
    let id = add_convo(&c, &convo, None);
    // `c` stays open: the conversation is only in the write-ahead log, as while Cursor runs.
    let wal = dir.join("wal.vscdb-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);
    let before = checksum(&db);
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap(), "--composer", &id]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("read notes.md"), "{}", r.stdout);
    assert_eq!(checksum(&db), before);
    drop(c);
}

#[test]
fn bad_bubbles_become_bounded_neutral_cards_and_reports() {
    let dir = common::tempdir();
    let db = dir.join("bad.vscdb");
    let c = new_db(&db);
    let bubble = |id: &str, v: Value| {
        let mut v = v;
        v["bubbleId"] = json!(id);
        v["_v"] = json!(3);
        v["createdAt"] = json!("2026-06-01T18:33:24.592Z");
        put(&c, "cursorDiskKV", &format!("bubbleId:c1:{id}"), &v.to_string());
    };
    let garbage = "x".repeat(20_000);
    bubble("u", json!({"type": 1, "text": "do things"}));
    bubble(
        "t1",
        json!({"type": 2, "capabilityType": 15, "toolFormerData": {
        "tool": 15, "toolCallId": "a", "status": "completed", "name": "run_terminal_command_v2",
        "rawArgs": format!("{{not json {garbage}"), "result": "{\"output\":\"ok\"}"}}),
    );
    bubble(
        "t2",
        json!({"type": 2, "capabilityType": 15, "toolFormerData": {
        "tool": 999, "toolCallId": "b", "status": "completed", "name": "frobnicate",
        "params": "{\"level\":3}", "result": "{\"done\":true}"}}),
    );
    bubble(
        "t3",
        json!({"type": 2, "capabilityType": 15, "toolFormerData": {
        "tool": 40, "status": "completed", "params": "{\"targetFile\":\"/w/a.txt\"}", "result": "[1,2"}}),
    );
    bubble(
        "t4",
        json!({"type": 2, "capabilityType": 15, "toolFormerData": {
        "tool": 40, "toolCallId": "d", "status": "completed", "params": "{\"targetFile\":5}"}}),
    );
    put(&c, "cursorDiskKV", "bubbleId:c1:junk", "{this is not json");
    bubble("a", json!({"type": 2, "text": "done"}));
    let order: Vec<Value> =
        ["u", "t1", "t2", "t3", "t4", "gone", "junk", "a"].iter().map(|b| json!({"bubbleId": b, "type": 2})).collect();
    put(
        &c,
        "cursorDiskKV",
        "composerData:c1",
        &json!({"composerId": "c1", "fullConversationHeadersOnly": order}).to_string(),
    );
    let session = dir.join("s.jsonl");
    let r = run(&[
        "replay",
        "--from-cursor-db",
        db.to_str().unwrap(),
        "--sink",
        &format!("pi-session={}", session.display()),
    ]);
    assert_eq!(r.code, 1, "decode reports make the exit status 1: {}", r.stderr);
    for (key, why) in [
        ("bubbleId:c1:t1", "rawArgs is not JSON"),
        ("bubbleId:c1:t2", "unknown tool id 999"),
        ("bubbleId:c1:t3", "no toolCallId"),
        ("bubbleId:c1:t3", "result is not JSON"),
        ("bubbleId:c1:t4", "args do not fit the read model"),
        ("bubbleId:c1:gone", "missing"),
        ("bubbleId:c1:junk", "unreadable bubble"),
    ] {
        assert!(r.stderr.lines().any(|l| l.contains(key) && l.contains(why)), "{key}: {why}\n{}", r.stderr);
    }
    let lines = session_lines(&session);
    let got = calls(&lines);
    assert_eq!(got.len(), 4, "{got:?}");
    for call in &got {
        assert_eq!(call.0, "cursor", "a neutral card: {call:?}");
        assert!(call.3.chars().count() < 1_000, "bounded: {} chars", call.3.chars().count());
    }
    assert_eq!(got[1].1, "frobnicate");
    assert_eq!(assistant_text(&lines), "done");
}

// ------------------------------------------------------------------------------------------------
// Sink and round trip
// ------------------------------------------------------------------------------------------------

#[test]
fn every_capture_survives_a_round_trip_through_a_cursor_database() {
    let captures = common::cli_captures();
    for capture in &captures {
        let dir = common::tempdir();
        let db = dir.join("rt.vscdb");
        let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
        let name = common::name(capture);
        let la = replay_to_session(&[capture.to_str().unwrap(), "--sink", &format!("cursor-db={}", db.display())], &a);
        let lb = replay_to_session(&["--from-cursor-db", db.to_str().unwrap(), "--all"], &b);
        // A Cursor conversation records that it failed, not why: a run whose stream was cut
        // (`stream ended without a result`, SPEC §5.3) reads back as a failed run.
        let cut = |calls: Vec<(String, String, Value, String, bool)>| {
            let text = |s: &str| s.replace("stream ended without a result", "SDK run failed");
            calls
                .into_iter()
                .map(|(pi, tool, args, result, err)| {
                    let args = serde_json::from_str(&text(&args.to_string())).unwrap();
                    (pi, tool, args, text(&result), err)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(calls(&lb), cut(calls(&la)), "{name}: the calls differ");
        assert_eq!(assistant_text(&lb), assistant_text(&la), "{name}: the text differs");
        check_rows(&db, &name, calls(&la).len());
    }
}

/// Every tool bubble has a complete `toolFormerData`; the conversation lists every bubble.
fn check_rows(db: &Path, name: &str, n_calls: usize) {
    let c = Connection::open(db).unwrap();
    let mut stmt = c.prepare("SELECT key, value FROM cursorDiskKV").unwrap();
    let rows: Vec<(String, Value)> = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, serde_json::from_str(&r.get::<_, String>(1)?).unwrap())))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let composers: Vec<&Value> = rows.iter().filter(|(k, _)| k.starts_with("composerData:")).map(|(_, v)| v).collect();
    let bubbles: Vec<&(String, Value)> = rows.iter().filter(|(k, _)| k.starts_with("bubbleId:")).collect();
    let listed: usize = composers.iter().map(|c| c["fullConversationHeadersOnly"].as_array().unwrap().len()).sum();
    assert_eq!(listed, bubbles.len(), "{name}");
    let mut tools = 0;
    for (key, b) in bubbles {
        assert_eq!(b["_v"], 3, "{name} {key}");
        assert!(b["type"] == 1 || b["type"] == 2, "{name} {key}");
        assert!(b["bubbleId"].is_string() && b["createdAt"].is_string() && b["text"].is_string(), "{name} {key}");
        if let Some(tf) = b.get("toolFormerData") {
            tools += 1;
            assert_eq!(b["capabilityType"], 15, "{name} {key}");
            for field in ["toolCallId", "modelCallId", "status", "name", "rawArgs", "params"] {
                assert!(tf[field].is_string(), "{name} {key}: {field} in {tf}");
            }
            assert!(tf["tool"].is_i64() && tf["toolIndex"].is_u64(), "{name} {key}: {tf}");
            if tf["status"] != "loading" {
                assert!(tf.get("result").is_none_or(Value::is_string), "{name} {key}");
            }
        }
    }
    assert!(tools >= n_calls, "{name}: {tools} tool bubbles for {n_calls} calls");
}

#[test]
fn the_sink_never_writes_cursor_s_own_database_unasked_and_reports_a_locked_one() {
    let dir = common::tempdir();
    let example = common::example("demo.jsonl");
    let live = dir.join("state.vscdb");
    let sink = format!("cursor-db={}", live.display());
    let write = |flags: &[&str]| {
        let mut args = vec!["replay", example.to_str().unwrap(), "--sink", sink.as_str()];
        args.extend_from_slice(flags);
        run(&args)
    };
    let r = write(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--i-know-cursor-is-closed"), "{}", r.stderr);
    assert!(!live.exists());
    let r = write(&["--i-know-cursor-is-closed"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c = Connection::open(&live).unwrap();
    let n: i64 =
        c.query_row("SELECT count(*) FROM cursorDiskKV WHERE key LIKE 'composerData:%'", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1);
    // Writing the same input again replaces the same rows.
    let rows = |c: &Connection| c.query_row("SELECT count(*) FROM cursorDiskKV", [], |r| r.get::<_, i64>(0)).unwrap();
    let first = rows(&c);
    assert_eq!(write(&["--i-know-cursor-is-closed"]).code, 0);
    assert_eq!(rows(&c), first);
    // A database another writer holds: an error, and nothing half-written.
    c.execute_batch("BEGIN EXCLUSIVE; DELETE FROM cursorDiskKV;").unwrap();
    let r = write(&["--i-know-cursor-is-closed"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("locked"), "{}", r.stderr);
    c.execute_batch("ROLLBACK").unwrap();
    assert_eq!(rows(&c), first);
}

// ------------------------------------------------------------------------------------------------
// pi's own session list
// ------------------------------------------------------------------------------------------------

#[test]
fn pi_sessions_go_where_pi_lists_and_opens_them_once() {
    let dir = common::tempdir();
    let workdir = dir.join("project");
    std::fs::create_dir_all(&workdir).unwrap();
    let cwd = workdir.to_str().unwrap();
    let Some((db, _, _)) = fixture_db(&dir, Some(cwd)) else { return };
    let home = dir.join("home");
    let agent = home.join("agent");
    let import = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
        cmd.args(["replay", "--from-cursor-db", db.to_str().unwrap(), "--all", "--sink", "pi-sessions"])
            .args(extra)
            .env("PI_CODING_AGENT_DIR", &agent)
            .env_remove("PI_CODING_AGENT_SESSION_DIR");
        common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap()
    };
    let out = import(&[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // pi's folder for the chat's working directory, pi's file name.
    let folder =
        agent.join("sessions").join(format!("--{}--", cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-")));
    let files: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let lines = session_lines(file);
    let id = lines[0]["id"].as_str().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let stamp = lines[0]["timestamp"].as_str().unwrap().replace([':', '.'], "-");
    assert_eq!(name, format!("{stamp}_{id}.jsonl"));
    // The other chat has its own session, under its own working directory.
    let hub_folder = agent.join("sessions").join("--Users-dev-AiProject-demo-app--");
    assert_eq!(std::fs::read_dir(&hub_folder).unwrap().count(), 1);

    // Importing again leaves the file as it is (and says so); --force rewrites the same file.
    let before = std::fs::read(file).unwrap();
    let modified = std::fs::metadata(file).unwrap().modified().unwrap();
    let again = import(&[]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
    assert_eq!(std::fs::metadata(file).unwrap().modified().unwrap(), modified);
    let forced = import(&["--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
    assert_eq!(std::fs::read(file).unwrap(), before, "deterministic");

    common::each_pi(|pi| {
        // pi's own session listing (what `pi -r` shows) for that working directory.
        let listed = common::pi::pi_sessions_of(pi, &agent, cwd, PI_TIMEOUT);
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["id"], id);
        assert!(listed[0]["firstMessage"].as_str().unwrap().starts_with("You're going to walk through"));
        assert_eq!(listed[0]["messageCount"].as_u64().unwrap() as usize, messages(&lines).len());

        // pi opens it by id from that folder (`pi --session <id>` looks it up in the listing).
        let mut cmd = common::pi::pi_command(&pi.bin(), &home);
        cmd.current_dir(&workdir).args(["--mode", "rpc", "--session", id]);
        let res = common::pi::pi_rpc(
            cmd,
            &[json!({"id": "state", "type": "get_state"}), json!({"id": "messages", "type": "get_messages"})],
        );
        assert_eq!(res["state"]["data"]["sessionId"], id, "{}", res["state"]);
        let got = res["messages"]["data"]["messages"].as_array().unwrap();
        assert_eq!(got.len(), messages(&lines).len());
    });
}

#[test]
fn the_single_file_form_warns_when_several_chats_reach_it() {
    let dir = common::tempdir();
    let Some((db, _, _)) = fixture_db(&dir, None) else { return };
    let db_arg = db.to_str().unwrap();
    let warned = |args: &[&str], file: &str| {
        let mut all = vec!["replay", "--from-cursor-db", db_arg];
        all.extend_from_slice(args);
        let sink = format!("pi-session={}", dir.join(file).display());
        all.extend(["--sink", sink.as_str()]);
        let r = run(&all);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stderr.contains("several Cursor chats")
    };
    assert!(warned(&["--all"], "all.jsonl"));
    assert!(!warned(&["--composer", "dc0a49f7-ea72-4ce8-bfad-10db22d991b0"], "one.jsonl"));
    // Several conversations and neither --composer nor --all: a usage error that says what to do.
    let r = run(&["replay", "--from-cursor-db", db.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--composer ID") && r.stderr.contains("--all"), "{}", r.stderr);
}
