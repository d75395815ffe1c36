#![allow(clippy::unwrap_used, clippy::panic)]

use proptest::prelude::*;

use super::*;

fn scan(lines: &[&str]) -> Vec<Status> {
    let mut s = Scan::default();
    lines.iter().map(|l| s.feed(l.as_bytes())).collect()
}

#[test]
fn the_scanner_knows_an_open_string_from_bad_syntax() {
    assert_eq!(scan(&[r#"{"a":"b"}"#]), [Status::Complete]);
    assert_eq!(scan(&[r#" {"a":[1,{"b":null}],"c":"x\"y"} "#]), [Status::Complete]);
    assert_eq!(scan(&[r#"{"a":"b"#]), [Status::InString]);
    assert_eq!(scan(&[r#"{"a":"b\"#]), [Status::Invalid], "in the middle of an escape");
    assert_eq!(scan(&[r#"{"a":"b\u12"#]), [Status::Invalid], "in the middle of a \\u escape");
    assert_eq!(scan(&[r#"{"a":1,"#]), [Status::Invalid], "open, but not in a string");
    assert_eq!(scan(&[r#"["a"#]), [Status::Invalid], "only objects are records");
    assert_eq!(scan(&[r#"x{"a":"b"#]), [Status::Invalid]);
    assert_eq!(scan(&[r#"{"a":"b" "c":"d"#]), [Status::Invalid], "a missing comma");
    assert_eq!(scan(&[r#"{"a":"b"},"c":"d"#]), [Status::Invalid], "after the object closed");
    assert_eq!(scan(&[r#"{"a"\"b":"#]), [Status::Invalid], "a backslash outside a string");
    assert_eq!(scan(&["{\"a\":\"b\tc"]), [Status::Invalid], "a raw control character in a string");
    assert_eq!(scan(&[r#"{"a":[}"#]), [Status::Invalid], "a mismatched closer");
    assert_eq!(
        scan(&[r#"{"a":"b"#, "c", r#"d","e":"f"#, r#"g"}"#]),
        [Status::InString, Status::InString, Status::InString, Status::Complete]
    );
    assert_eq!(scan(&[r#"{"a":"b"#, r#"{"type":"result"}"#]), [Status::InString, Status::Invalid]);
}

fn joined(line_no: u64, lines: usize, text: &str) -> Record {
    Record::Joined { line_no, lines, text: text.as_bytes().to_vec() }
}

fn line(line_no: u64, text: &str) -> Record {
    Record::Line { line_no, bytes: text.as_bytes().to_vec() }
}

#[test]
fn a_record_split_by_literal_newlines_is_joined_with_its_newlines_escaped() {
    let input = "{\"type\":\"result\",\"result\":\"# Title\n\n- a\n- b\",\"session_id\":\"s\"}\n{\"type\":\"x\"}\n";
    assert_eq!(
        records(input.as_bytes(), 1 << 20),
        [
            joined(1, 4, r##"{"type":"result","result":"# Title\n\n- a\n- b","session_id":"s"}"##),
            line(5, r#"{"type":"x"}"#),
        ]
    );
}

#[test]
fn lines_that_stand_alone_are_never_joined() {
    let input = "{\"a\":1}\n\n{\"b\":\"x\"}\nnot json\n{\"c\":[]}\n";
    assert_eq!(
        records(input.as_bytes(), 1 << 20),
        [
            line(1, r#"{"a":1}"#),
            line(2, ""),
            line(3, r#"{"b":"x"}"#),
            Record::Bad { line_no: 4 },
            line(5, r#"{"c":[]}"#),
        ]
    );
}

#[test]
fn a_record_that_never_closes_reports_every_line_and_the_next_record_stands() {
    // A truncated line (a killed writer), then ordinary records: the truncated one is bad, the
    // others decode as they always did.
    let input = "{\"type\":\"assistant\",\"text\":\"cut\n{\"type\":\"a\"}\n{\"type\":\"b\"}\n";
    assert_eq!(
        records(input.as_bytes(), 1 << 20),
        [Record::Bad { line_no: 1 }, line(2, r#"{"type":"a"}"#), line(3, r#"{"type":"b"}"#),]
    );
    // At the end of input, every held line is reported.
    let input = "{\"t\":\"a\nb\nc";
    let bad: Vec<Record> = (1..=3).map(|line_no| Record::Bad { line_no }).collect();
    assert_eq!(records(input.as_bytes(), 1 << 20), bad);
}

#[test]
fn a_joined_record_that_does_not_parse_reports_every_line() {
    // Closes, but `01` is no JSON number: the decoder says no, every line is bad on its own.
    let input = "{\"t\":\"a\nb\",\"n\":01}\n{\"ok\":1}\n";
    assert_eq!(
        records(input.as_bytes(), 1 << 20),
        [Record::Bad { line_no: 1 }, Record::Bad { line_no: 2 }, line(3, r#"{"ok":1}"#),]
    );
}

#[test]
fn a_joined_record_that_is_not_utf8_reports_every_line() {
    // Found by the `rejoin` fuzz target: a byte that is not UTF-8 inside a skipped string. The
    // decoders read a record as `str`, so it does not decode, joined or not.
    let input = b"{\"\xdd\n\":\"\"}\n{\"ok\":1}\n";
    assert_eq!(
        records(input, 1 << 20),
        [Record::Bad { line_no: 1 }, Record::Bad { line_no: 2 }, line(3, r#"{"ok":1}"#),]
    );
}

#[test]
fn a_record_past_the_line_bound_reports_every_line() {
    // `{"t":"x` + (n - 2) lines `x` + `end"}`: n lines.
    let split = |n: usize| format!("{{\"t\":\"{}end\"}}\n{{\"ok\":1}}\n", "x\n".repeat(n - 1));
    let shape = |r: &[Record]| {
        r.iter()
            .map(|x| match x {
                Record::Joined { lines, .. } => format!("joined {lines}"),
                other => format!("{other:?}"),
            })
            .take(3)
            .collect::<Vec<_>>()
    };
    let r = records(split(MAX_RECORD_LINES).as_bytes(), 1 << 30);
    assert_eq!(
        shape(&r),
        [format!("joined {MAX_RECORD_LINES}"), format!("{:?}", line(MAX_RECORD_LINES as u64 + 1, r#"{"ok":1}"#))]
    );
    // One more line and it is every line on its own.
    let r = records(split(MAX_RECORD_LINES + 1).as_bytes(), 1 << 30);
    assert_eq!(r.len(), MAX_RECORD_LINES + 2);
    assert!(r[..=MAX_RECORD_LINES].iter().all(|x| matches!(x, Record::Bad { .. })), "{:?}", shape(&r));
    assert_eq!(r[MAX_RECORD_LINES + 1], line(MAX_RECORD_LINES as u64 + 2, r#"{"ok":1}"#));
}

#[test]
fn a_record_past_the_byte_bound_reports_every_line() {
    let input = "{\"t\":\"aaaa\nbbbb\ncccc\"}\n";
    let size = r#"{"t":"aaaa\nbbbb\ncccc"}"#.len();
    assert!(matches!(records(input.as_bytes(), size).as_slice(), [Record::Joined { lines: 3, .. }]));
    let bad: Vec<Record> = (1..=3).map(|line_no| Record::Bad { line_no }).collect();
    assert_eq!(records(input.as_bytes(), size - 1), bad);
}

#[test]
fn a_too_long_line_ends_a_record_and_keeps_its_place() {
    let long = "y".repeat(40);
    let input = format!("{{\"t\":\"a\nb\n{long}\n{{\"ok\":1}}\n");
    assert_eq!(
        records(input.as_bytes(), 30),
        [
            Record::Bad { line_no: 1 },
            Record::Bad { line_no: 2 },
            Record::TooLong { line_no: 3 },
            line(4, r#"{"ok":1}"#),
        ]
    );
}

#[test]
fn a_failed_record_hands_its_last_line_back_to_start_the_next_one() {
    // Line 1 is cut; line 2 starts a real split record, which the attempt from line 1 runs into.
    let input = "{\"a\":\"cut\n{\"type\":\"result\",\"result\":\"one\ntwo\"}\n";
    assert_eq!(
        records(input.as_bytes(), 1 << 20),
        [Record::Bad { line_no: 1 }, joined(2, 2, r#"{"type":"result","result":"one\ntwo"}"#),]
    );
}

/// Arbitrary lines made of JSON-ish pieces and newlines: the rejoiner's bookkeeping holds
/// whatever they are.
fn jsonish() -> impl Strategy<Value = String> {
    let piece =
        prop::sample::select(vec!["{", "}", "[", "]", "\"", "\\", ":", ",", "a", "1", " ", "\n", "\\n", "{\"k\":\""]);
    prop::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn every_line_appears_once_in_order(input in jsonish(), max in 4usize..64) {
        let out = records(input.as_bytes(), max);
        let mut next = 1u64;
        for r in &out {
            let (first, n) = match r {
                Record::Line { line_no, .. } | Record::Bad { line_no } | Record::TooLong { line_no } => (*line_no, 1),
                Record::Joined { line_no, lines, text } => {
                    prop_assert!(*lines >= 2);
                    prop_assert!(text.len() <= max);
                    prop_assert!(serde_json::from_slice::<serde_json::Value>(text).is_ok());
                    (*line_no, *lines as u64)
                }
            };
            prop_assert_eq!(first, next);
            next += n;
        }
        let physical = LineReader::with_max_line(input.as_bytes(), max);
        prop_assert_eq!(next - 1, count_lines(physical));
    }
}

fn count_lines<R: std::io::Read>(mut r: LineReader<R>) -> u64 {
    let mut n = 0;
    while let Ok(Some(_)) = r.next_frame() {
        n += 1;
    }
    n
}
