//! Bad input never panics, is reported with its line number and byte offset, and still leaves
//! every run closed: truncated JSON, binary garbage, a 10 MB line, an empty file, a stream cut
//! mid-run, `--strict`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use toolstream_schemas::{Output, RunStatus};

const S: &str = "0a3c5e7f-0000-4000-8000-00000000bad1";

fn init() -> String {
    format!(r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{S}","model":"Auto"}}"#)
}

fn thinking(t: &str, ms: u64) -> String {
    format!(r#"{{"type":"thinking","subtype":"delta","text":"{t}","session_id":"{S}","timestamp_ms":{ms}}}"#)
}

fn result() -> String {
    format!(r#"{{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"{S}"}}"#)
}

fn lines(ls: &[String]) -> Vec<u8> {
    let mut s = ls.join("\n");
    s.push('\n');
    s.into_bytes()
}

fn replay_stdin(input: &[u8], extra: &[&str]) -> common::Run {
    let mut args = vec!["replay", "--color", "never"];
    args.extend_from_slice(extra);
    args.push("-");
    common::toolstream(&args, Some(input))
}

#[test]
fn truncated_json_is_reported_with_line_and_offset_and_replay_goes_on() {
    let input =
        lines(&[init(), thinking("a", 1), r#"{"type":"thinking","subtype":"del"#.into(), thinking("b", 2), result()]);
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 1, "decode errors give exit 1");
    let offset = lines(&[init(), thinking("a", 1)]).len();
    assert!(run.stderr.contains("<stdin>:3: EOF while parsing"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("(byte offset {offset})")), "{}", run.stderr);
    // Both deltas of the thinking block, the one after the bad line included.
    assert!(run.stdout.contains("┆ ab\n"), "lines after the bad one still decode: {}", run.stdout);
    assert!(run.stdout.contains("── finished"), "{}", run.stdout);
}

#[test]
fn binary_garbage_gives_errors_not_panics() {
    let mut input = lines(&[init()]);
    input.extend_from_slice(&[0xff, 0xfe, 0x00, 0x01, b'\n', 0x80, 0x81, b'{', b'\n']);
    input.extend(b"\x1b[31m{{{{\n".iter());
    input.extend(lines(&[result()]));
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("<stdin>:2: invalid UTF-8"), "{}", run.stderr);
    assert!(run.stderr.contains("<stdin>:3: invalid UTF-8"), "{}", run.stderr);
    assert!(run.stderr.contains("<stdin>:4: "), "{}", run.stderr);
    assert!(run.stderr.contains("3 line(s) could not be decoded"), "{}", run.stderr);
    assert!(run.stdout.contains("── finished"), "{}", run.stdout);
    assert!(!run.stderr.contains("panicked"));
}

/// A completed read whose recorded content is one 10 MB string.
fn huge_read_line(bytes: usize) -> String {
    let content = "x".repeat(bytes / 2) + "\\n" + &"y".repeat(bytes / 2);
    format!(
        r#"{{"type":"tool_call","subtype":"completed","call_id":"r1","tool_call":{{"readToolCall":{{"args":{{"path":"/w/big.txt"}},"result":{{"success":{{"content":"{content}"}}}}}}}},"session_id":"{S}","timestamp_ms":5}}"#
    )
}

#[test]
fn a_ten_megabyte_line_is_decoded_and_its_card_bounded() {
    let input = lines(&[init(), huge_read_line(10 << 20), result()]);
    assert!(input.len() > 10 << 20);
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("● read big.txt\n"), "{}", &run.stdout[..run.stdout.len().min(2000)]);
    // Card previews are bounded (SPEC §8): nothing near the 10 MB reaches the terminal.
    assert!(run.stdout.len() < 10_000, "{} bytes of output", run.stdout.len());
}

#[test]
fn a_line_over_the_limit_is_skipped_and_reported() {
    let input = lines(&[init(), huge_read_line(10 << 20), thinking("after", 6), result()]);
    let run = replay_stdin(&input, &["--max-line-bytes", "1M"]);
    assert_eq!(run.code, 1);
    let offset = lines(&[init()]).len();
    assert!(run.stderr.contains("<stdin>:2: line too long"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("(byte offset {offset})")), "{}", run.stderr);
    assert!(run.stdout.contains("┆ after"), "{}", run.stdout);
    assert!(run.stdout.contains("── finished"));
}

#[test]
fn a_ten_megabyte_garbage_line_without_newline_is_bounded() {
    let mut input = lines(&[init()]);
    input.extend(std::iter::repeat_n(b'z', 10 << 20));
    let run = replay_stdin(&input, &["--max-line-bytes", "64K"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("<stdin>:2: line too long: 10485760 bytes"), "{}", run.stderr);
    // EOF without `result`: the run is closed as failed.
    assert!(run.stdout.contains("✗ error: missing result"), "{}", run.stdout);
}

#[test]
fn an_empty_file_is_fine() {
    let dir = common::tempdir();
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let run = common::toolstream(&["replay", empty.to_str().unwrap()], None);
    assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (0, "", ""));
    let stats = common::toolstream(&["stats", "--json", empty.to_str().unwrap()], None);
    let v: serde_json::Value = serde_json::from_str(&stats.stdout).unwrap();
    assert_eq!((v["lines"].as_u64(), v["runs"].as_u64(), v["decode_errors"].as_u64()), (Some(0), Some(0), Some(0)));
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let run = common::toolstream(&["replay", "/nonexistent/toolstream/input.jsonl"], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("cannot read /nonexistent/toolstream/input.jsonl"), "{}", run.stderr);
}

#[test]
fn a_stream_cut_mid_run_closes_the_run_as_failed_with_its_open_calls() {
    let demo = std::fs::read_to_string(common::example("demo.jsonl")).unwrap();
    // Cut right after the `npm test` shell started.
    let cut: Vec<&str> =
        demo.lines().take_while(|l| !l.contains(r#""subtype":"completed","call_id":"call-demo-shell-5"#)).collect();
    assert!(cut.last().unwrap().contains("call-demo-shell-5"));
    let input = format!("{}\n", cut.join("\n"));
    let (events, stats) = common::collect_bytes(input.as_bytes());
    assert_eq!(stats.output.runs, 1);
    let closed: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::RunClosed { status, error, .. } => Some((*status, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(closed, vec![(RunStatus::Error, Some("missing result".to_owned()))]);
    let incomplete: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::IncompleteCall(i) => Some((i.title.clone(), i.reason.text(), i.visible)),
            _ => None,
        })
        .collect();
    // SPEC §5.3: a stream-json input that ends without its `result` says so, not "SDK run failed".
    assert_eq!(incomplete, vec![("Cursor shell".to_owned(), "stream ended without a result", true)]);
    // And on the terminal.
    let run = replay_stdin(input.as_bytes(), &[]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("✗ $ npm test -- --silent did not complete: stream ended without a result\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("✗ error: missing result\n── error · 4 cards, 1 incomplete ──"), "{}", run.stdout);
}

#[test]
fn strict_stops_at_the_first_bad_line_and_still_closes_runs() {
    let input = lines(&[init(), thinking("a", 1), "not json".into(), thinking("b", 2), result()]);
    let run = replay_stdin(&input, &["--strict"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("stopped at the first decode error (--strict): <stdin>:3:"), "{}", run.stderr);
    assert!(run.stdout.contains("┆ a\n"), "{}", run.stdout);
    assert!(!run.stdout.contains("┆ ab"), "nothing after the bad line: {}", run.stdout);
    assert!(run.stdout.contains("✗ error: missing result"), "{}", run.stdout);
}

#[test]
fn lone_surrogates_decode_as_replacement_characters() {
    let input = lines(&[init(), thinking(r"bad \ud800 char", 1), result()]);
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("┆ bad \u{fffd} char"), "{}", run.stdout);
}

#[test]
fn a_lone_surrogate_in_assistant_text_keeps_the_message_and_the_result_text() {
    let assistant = format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"hello \ud800 world"}}]}},"session_id":"{S}"}}"#
    );
    let result = format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"hello \ud800 world","session_id":"{S}"}}"#
    );
    let input = lines(&[init(), assistant, result]);
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("hello \u{fffd} world"), "the message is shown: {}", run.stdout);
    let (events, stats) = common::collect_bytes(&input);
    assert_eq!(stats.decode_errors, 0);
    let final_text = events.iter().find_map(|e| match &e.kind {
        Output::RunClosed { final_text, .. } => Some(final_text.clone()),
        _ => None,
    });
    assert_eq!(final_text.as_deref(), Some("hello \u{fffd} world"), "the run's text");
}

#[test]
fn a_line_that_is_not_a_cursor_event_is_reported() {
    let input = lines(&[init(), r#"{"hello":"world"}"#.into(), "[1,2]".into(), r#"{"type":42}"#.into(), result()]);
    let run = replay_stdin(&input, &[]);
    assert_eq!(run.code, 1);
    for n in 2..=4 {
        assert!(run.stderr.contains(&format!("<stdin>:{n}: ")), "line {n}: {}", run.stderr);
    }
}
