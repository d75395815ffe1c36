//! Unit tests of the Cursor chat database sink: real SQLite files in a temporary folder.

use super::*;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstream-cursordb-sink-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn refuses_cursor_s_own_database_without_the_flag() {
    let dir = tmp("refuse");
    let path = dir.join("state.vscdb");
    let err = CursorDbSink::create(&path, CursorDbOptions::default()).unwrap_err();
    assert!(err.to_string().contains("--i-know-cursor-is-closed"), "{err}");
    assert!(!path.exists(), "nothing is created when refused");
    CursorDbSink::create(&path, CursorDbOptions { allow_cursor_state_db: true }).unwrap();
    assert!(path.exists());
}

#[test]
fn creates_the_tables_and_commits_only_at_the_checkpoint() {
    let dir = tmp("tx");
    let path = dir.join("chats.vscdb");
    let mut sink = CursorDbSink::create(&path, CursorDbOptions::default()).unwrap();
    let run = Arc::new(RunId { session: Arc::from("chat-1"), seq: 1 });
    let ev = |at, kind| OutputEvent { run: run.clone(), at_ms: at, kind };
    sink.write(&[
        ev(
            1_000,
            Output::RunOpened {
                cwd: Some("/w".into()),
                model: Some("m".into()),
                prompt: Some("hello".into()),
                context: None,
            },
        ),
        ev(1_001, Output::MessageStarted { turn: 1 }),
        ev(1_002, Output::Text { turn: 1, delta: "hi ".into() }),
        ev(1_003, Output::Text { turn: 1, delta: "there".into() }),
        ev(1_004, Output::BlockEnded { turn: 1 }),
    ])
    .unwrap();
    let count = |p: &Path| {
        let c = Connection::open(p).unwrap();
        c.query_row("SELECT count(*) FROM cursorDiskKV", [], |r| r.get::<_, i64>(0)).unwrap()
    };
    // Another connection sees nothing before the commit.
    assert_eq!(count(&path), 0);
    sink.checkpoint().unwrap();
    // user bubble, text bubble, composerData (the open run is written as far as it got).
    assert_eq!(count(&path), 3);
    let c = Connection::open(&path).unwrap();
    let data: String =
        c.query_row("SELECT value FROM cursorDiskKV WHERE key = 'composerData:chat-1'", [], |r| r.get(0)).unwrap();
    let data: ComposerData = serde_json::from_str(&data).unwrap();
    let headers = data.full_conversation_headers_only.unwrap();
    assert_eq!(headers.len(), 2);
    let text_key = bubble_key("chat-1", headers[1].bubble_id.as_deref().unwrap());
    let text: String = c.query_row("SELECT value FROM cursorDiskKV WHERE key = ?1", [&text_key], |r| r.get(0)).unwrap();
    let text: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((text["type"].as_i64(), text["text"].as_str()), (Some(2), Some("hi there")));
    let index: String = c.query_row("SELECT value FROM ItemTable WHERE key = ?1", [HEADERS_KEY], |r| r.get(0)).unwrap();
    assert!(index.contains("\"composerId\":\"chat-1\""), "{index}");
}

#[test]
fn a_file_that_is_not_sqlite_is_an_error() {
    let dir = tmp("notdb");
    let path = dir.join("x.vscdb");
    std::fs::write(&path, b"this is not a database, just text that is long enough to have a header").unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(CursorDbSink::create(&path, CursorDbOptions::default()).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before, "left untouched");
}

#[test]
fn a_chat_that_comes_back_after_many_others_keeps_its_bubbles_title_and_place_in_the_index() {
    use crate::pi_events::testutil::{closed, ev, opened, run, text};
    let dir = tmp("comeback");
    let path = dir.join("chats.vscdb");
    let mut sink = CursorDbSink::create(&path, CursorDbOptions::default()).unwrap();
    let one = |sink: &mut CursorDbSink, chat: &str, seq: u32, t: u64, prompt: &str| {
        let r = run(chat, seq);
        sink.write(&[
            ev(&r, t, opened("m", prompt)),
            ev(&r, t + 1, Output::MessageStarted { turn: 1 }),
            ev(&r, t + 2, text("answer")),
            ev(&r, t + 3, Output::BlockEnded { turn: 1 }),
            ev(&r, t + 4, closed(RunStatus::Finished)),
        ])
        .unwrap();
    };
    one(&mut sink, "first", 1, 1_000, "first question");
    // More chats than are held in memory: "first" is let go and read back when it comes again.
    let others = HELD_CONVERSATIONS + 10;
    for i in 0..others {
        one(&mut sink, &format!("other-{i}"), 1, 2_000 + 10 * i as u64, "q");
    }
    one(&mut sink, "first", 2, 50_000, "second question");
    sink.checkpoint().unwrap();
    let c = Connection::open(&path).unwrap();
    let data: String =
        c.query_row("SELECT value FROM cursorDiskKV WHERE key = 'composerData:first'", [], |r| r.get(0)).unwrap();
    let data: Value = serde_json::from_str(&data).unwrap();
    let kinds: Vec<i64> =
        data["fullConversationHeadersOnly"].as_array().unwrap().iter().map(|h| h["type"].as_i64().unwrap()).collect();
    assert_eq!(kinds, [1, 2, 1, 2], "both runs' bubbles, in order");
    assert_eq!((data["name"].as_str(), data["createdAt"].as_u64()), (Some("first question"), Some(1_000)));
    assert_eq!(data["lastUpdatedAt"], 50_004);
    let index: String = c.query_row("SELECT value FROM ItemTable WHERE key = ?1", [HEADERS_KEY], |r| r.get(0)).unwrap();
    let index: Value = serde_json::from_str(&index).unwrap();
    let ids: Vec<&str> =
        index["allComposers"].as_array().unwrap().iter().map(|h| h["composerId"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), others + 1);
    assert_eq!((ids[0], ids[others]), ("other-0", "first"), "an updated conversation moves to the end");
}

/// Every row of both tables: key, storage class, value.
fn rows(path: &Path) -> Vec<(String, String, String)> {
    let c = Connection::open(path).unwrap();
    let mut out = Vec::new();
    for table in ["ItemTable", "cursorDiskKV"] {
        let mut stmt =
            c.prepare(&format!("SELECT key, typeof(value), CAST(value AS TEXT) FROM {table} ORDER BY key")).unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

#[test]
fn a_conversation_let_go_and_coming_back_is_written_as_if_it_had_been_held() {
    use crate::pi_events::testutil::{closed, ev, opened, run, text};
    let dir = tmp("letgo");
    let write = |path: &Path, hold: usize| {
        let mut sink = CursorDbSink::create(path, CursorDbOptions::default()).unwrap();
        sink.hold = hold;
        let answer = |r: &Arc<RunId>, t: u64| {
            [
                ev(r, t + 1, Output::MessageStarted { turn: 1 }),
                ev(r, t + 2, text("answer")),
                ev(r, t + 3, Output::BlockEnded { turn: 1 }),
            ]
        };
        let others = |sink: &mut CursorDbSink, round: u64| {
            for i in 0..5u64 {
                let r = run(&format!("other-{round}-{i}"), 1);
                let t = 10_000 * round + 100 * i;
                sink.write(&[ev(&r, t, opened("m", "q"))]).unwrap();
                sink.write(&answer(&r, t)).unwrap();
                sink.write(&[ev(&r, t + 4, closed(RunStatus::Finished))]).unwrap();
            }
        };
        // "first": its own workspace and model, cancelled; the runs without a session share one.
        let first = run("first", 1);
        sink.write(&[ev(&first, 1_000, opened("first-model", "first question"))]).unwrap();
        sink.write(&answer(&first, 1_000)).unwrap();
        sink.write(&[ev(&first, 1_004, closed(RunStatus::Cancelled))]).unwrap();
        let anonymous = run("", 1);
        sink.write(&[ev(&anonymous, 1_500, opened("m", "no session"))]).unwrap();
        sink.write(&[ev(&anonymous, 1_504, closed(RunStatus::Finished))]).unwrap();
        others(&mut sink, 1);
        // A run whose opening was not seen: its text and close only.
        let second = run("first", 2);
        sink.write(&answer(&second, 20_000)).unwrap();
        sink.write(&[ev(&second, 20_004, closed(RunStatus::Error))]).unwrap();
        others(&mut sink, 3);
        // Opened without workspace or model: the first ones are kept.
        let third = run("first", 3);
        let bare = Output::RunOpened { cwd: None, model: None, prompt: Some("third".into()), context: None };
        sink.write(&[ev(&third, 40_000, bare)]).unwrap();
        sink.write(&[ev(&third, 40_004, closed(RunStatus::Finished))]).unwrap();
        others(&mut sink, 5);
        // Only a close.
        sink.write(&[ev(&run("first", 4), 60_000, closed(RunStatus::Cancelled))]).unwrap();
        let anonymous = run("", 2);
        sink.write(&[ev(&anonymous, 61_000, opened("m2", "again"))]).unwrap();
        sink.write(&[ev(&anonymous, 61_004, closed(RunStatus::Finished))]).unwrap();
        others(&mut sink, 7);
        // Still open at the commit: written with the status its conversation had.
        let fifth = run("first", 5);
        sink.write(&[ev(&fifth, 80_000, Output::RunOpened { cwd: None, model: None, prompt: None, context: None })])
            .unwrap();
        sink.write(&answer(&fifth, 80_000)).unwrap();
        let held = sink.conversations.len();
        sink.checkpoint().unwrap();
        held
    };
    let (letting_go, holding) = (dir.join("let-go.vscdb"), dir.join("held.vscdb"));
    let held = write(&letting_go, 2);
    assert!(held <= 2 + 2, "conversations were let go: {held} held");
    assert!(write(&holding, usize::MAX) > 20, "all held");
    let (got, want) = (rows(&letting_go), rows(&holding));
    assert!(want.len() > 60, "{}", want.len());
    assert_eq!(got, want);
}
