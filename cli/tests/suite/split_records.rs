//! Records split across lines (SPEC §1.1 rule 12): some `cursor-agent` builds write string values
//! with literal newlines. Such a record decodes to exactly the events of its one-line form, with a
//! `record_rejoined{lines}` line in the trace; a record that never comes together reports every
//! one of its lines, with its line number, as before; past the bound likewise.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use proptest::prelude::*;
use serde_json::{json, Value};
use toolstream_engine::decode::framing::rejoin::{Joined, Lines, Rejoiner, MAX_RECORD_LINES};
use toolstream_engine::decode::framing::{Frame, LineReader, DEFAULT_MAX_LINE_BYTES};
use toolstream_engine::decode::{DecodeError, Decoder};
use toolstream_schemas::{InputEvent, Output};

const S: &str = "0a3c5e7f-0000-4000-8000-0000005p1175";

/// `line` with every `\n` escape inside its strings written as a literal newline, as those
/// `cursor-agent` builds write them.
fn split_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if in_string && c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            }
            continue;
        }
        if c == '"' {
            in_string = !in_string;
        }
        out.push(c);
    }
    out
}

/// What the decoder made of a stream, through the rejoiner as the pipeline drives it.
#[derive(Default)]
struct Decoded {
    /// `(session, at_ms, kind)` of each event, as Debug (positions left out: they move when
    /// records span several lines).
    events: Vec<String>,
    errors: Vec<DecodeError>,
    /// `(first line, lines)` of each rejoined record.
    rejoined: Vec<(u64, usize)>,
}

struct Collect {
    decoder: Decoder,
    out: Vec<InputEvent>,
    got: Decoded,
}

impl Collect {
    fn take(&mut self) {
        for ev in self.out.drain(..) {
            self.got.events.push(format!("{:?} {:?} {:?}", ev.session, ev.at_ms, ev.kind));
        }
    }
}

impl Lines for Collect {
    type Error = DecodeError;
    fn decode(&mut self, frame: Frame<'_>) -> Result<(), DecodeError> {
        self.decoder.decode_frame(frame, &mut self.out)?;
        self.take();
        Ok(())
    }
    fn decode_joined(&mut self, record: Joined<'_>) -> Result<(), DecodeError> {
        self.decoder.decode_frame(record.frame(), &mut self.out)?;
        self.got.rejoined.push((record.line_no, record.lines));
        self.take();
        Ok(())
    }
    fn bad(&mut self, error: DecodeError) {
        self.got.errors.push(error);
    }
}

fn decode(input: &[u8]) -> Decoded {
    let mut reader = LineReader::new(input);
    let mut rejoiner = Rejoiner::new(DEFAULT_MAX_LINE_BYTES);
    let mut c = Collect { decoder: Decoder::new("t", None), out: Vec::new(), got: Decoded::default() };
    while let Some(frame) = reader.next_frame().unwrap() {
        rejoiner.push(frame, &mut c);
    }
    rejoiner.finish(&mut c);
    c.got
}

fn init() -> Value {
    json!({"type": "system", "subtype": "init", "cwd": "/w", "session_id": S, "model": "Auto"})
}

fn assistant(text: &str) -> Value {
    json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "session_id": S})
}

fn result(text: &str) -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": text, "session_id": S,
        "duration_ms": 12})
}

fn stream(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

const SUMMARY: &str = "## Summary\n\nFixed the rounding bug:\n\n- `total()` rounds once\n- tests pass\n";

#[test]
fn a_multi_line_result_and_assistant_text_decode_as_their_one_line_forms() {
    let one_line = stream(&[init(), assistant(SUMMARY), result(SUMMARY)]);
    let split = split_strings(&one_line);
    assert_eq!(split.lines().count(), 1 + 2 * 7, "each record spans 7 lines");
    let (a, b) = (decode(one_line.as_bytes()), decode(split.as_bytes()));
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(a.events, b.events);
    assert_eq!(b.rejoined, [(2, 7), (9, 7)]);
    // Through the engine: the same output, and the run's final text whole.
    let kinds = |bytes: &[u8]| {
        let (events, stats) = common::collect_bytes(bytes);
        assert_eq!(stats.decode_errors, 0);
        let rejoined = events
            .iter()
            .filter(|e| matches!(&e.kind, Output::Diagnostic { phase, .. } if phase == "record_rejoined"))
            .count();
        let rest: Vec<String> = events
            .iter()
            .filter(|e| !matches!(&e.kind, Output::Diagnostic { phase, .. } if phase == "record_rejoined"))
            .map(|e| serde_json::to_string(&e.kind).unwrap())
            .collect();
        (rest, rejoined)
    };
    let (plain, none) = kinds(one_line.as_bytes());
    let (joined, two) = kinds(split.as_bytes());
    assert_eq!((none, two), (0, 2));
    assert_eq!(plain, joined);
    assert!(joined.iter().any(|k| k.contains("tests pass")), "{joined:?}");
}

#[test]
fn the_trace_says_which_record_was_rejoined_from_how_many_lines() {
    let input = split_strings(&stream(&[init(), assistant("one\ntwo\nthree"), result("one\ntwo\nthree")]));
    let dir = common::tempdir();
    let trace = dir.join("trace.jsonl");
    let run = common::toolstream(
        &["replay", "--color", "never", "--trace", trace.to_str().unwrap(), "-"],
        Some(input.as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("one\ntwo\nthree"), "{}", run.stdout);
    let lines: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rejoined: Vec<(u64, u64)> = lines
        .iter()
        .filter(|l| l["phase"] == "record_rejoined")
        .map(|l| (l["line"].as_u64().unwrap(), l["lines"].as_u64().unwrap()))
        .collect();
    assert_eq!(rejoined, [(2, 3), (5, 3)], "one line per rejoined record: {lines:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_record_that_never_closes_reports_every_line_with_its_number_and_the_rest_decodes() {
    // Line 2 is cut short inside its text (a killed writer); its next two lines continue the
    // string, then an ordinary record runs into it: lines 2-4 are bad, as they always were.
    let mut input = format!("{}\n", init());
    input.push_str(&format!(
        r#"{{"type":"assistant","session_id":"{S}","message":{{"content":[{{"type":"text","text":"cut"#
    ));
    input.push_str("\nmore\nand more\n");
    input.push_str(&stream(&[assistant("after"), result("after")]));
    let run = common::toolstream(&["replay", "--color", "never", "-"], Some(input.as_bytes()));
    assert_eq!(run.code, 1, "{}", run.stderr);
    for n in 2..=4 {
        assert!(run.stderr.contains(&format!("<stdin>:{n}: ")), "line {n}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("<stdin>:5: "), "{}", run.stderr);
    assert!(run.stderr.contains("3 line(s) could not be decoded (6 lines read)"), "{}", run.stderr);
    assert!(run.stdout.contains("after") && run.stdout.contains("── finished"), "{}", run.stdout);
}

#[test]
fn a_record_past_the_line_bound_reports_every_line() {
    let long = "x\n".repeat(MAX_RECORD_LINES);
    let input = split_strings(&stream(&[init(), assistant(&long), result("done")]));
    let got = decode(input.as_bytes());
    assert!(got.rejoined.is_empty());
    assert_eq!(got.errors.len(), MAX_RECORD_LINES + 1, "every line of the record");
    assert_eq!(got.errors.first().map(|e| e.line_no), Some(2));
    assert_eq!(got.errors.last().map(|e| e.line_no), Some(MAX_RECORD_LINES as u64 + 2));
    assert_eq!(got.events.len(), 2, "the init and the result still decode: {:?}", got.events);
    // One line fewer fits.
    let fits = split_strings(&stream(&[init(), assistant(&"x\n".repeat(MAX_RECORD_LINES - 1)), result("done")]));
    assert_eq!(decode(fits.as_bytes()).rejoined, [(2, MAX_RECORD_LINES)]);
}

#[test]
fn every_real_record_split_at_its_newlines_decodes_as_it_was() {
    let mut split_records = 0;
    for file in common::captures_and_examples() {
        let text = std::fs::read_to_string(&file).unwrap();
        let one_line = decode(text.as_bytes());
        let split = decode(split_strings(&text).as_bytes());
        assert_eq!(one_line.errors.len(), split.errors.len(), "{}: {:?}", file.display(), split.errors);
        assert_eq!(one_line.events, split.events, "{}", file.display());
        split_records += split.rejoined.len();
    }
    assert!(split_records > 0, "the captures hold records with newlines in their strings");
}

/// Text with what makes strings hard: newlines (also at either end and doubled), quotes,
/// backslashes, braces, escapes' look-alikes and non-ASCII.
fn text() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "\n", "\n\n", "a", "word ", "\"", "\\", "\\n", "{", "}", "]", ",", ":", "é", "😀", "\t",
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn splitting_string_values_at_their_newlines_gives_the_same_events(
        said in text(), command in text(), summary in text(), note in text()
    ) {
        let shell = json!({"type": "tool_call", "subtype": "started", "call_id": "c1", "session_id": S,
            "tool_call": {"shellToolCall": {"args": {"command": command}}}, "timestamp_ms": 5});
        let thinking = json!({"type": "thinking", "subtype": "completed", "session_id": S, "note": note});
        let one_line = stream(&[init(), assistant(&said), shell, thinking, result(&summary)]);
        let split = split_strings(&one_line);
        let (a, b) = (decode(one_line.as_bytes()), decode(split.as_bytes()));
        prop_assert!(a.errors.is_empty(), "{:?}", a.errors);
        prop_assert!(b.errors.is_empty(), "{:?}", b.errors);
        prop_assert_eq!(a.events, b.events);
        let multi = [&said, &command, &note, &summary].iter().filter(|t| t.contains('\n')).count();
        prop_assert_eq!(b.rejoined.len(), multi);
    }
}
