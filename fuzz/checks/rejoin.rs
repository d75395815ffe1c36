//! The rejoiner check (SPEC §1.1 rule 12): the fuzz target `rejoin` runs it on every input, and
//! `engine/tests/suite/fuzz_regressions.rs` on every input it once failed on. Whatever the bytes, every
//! physical line is accounted for exactly once and in order (on its own, or inside one joined
//! record), and a joined record spans 2..=MAX_RECORD_LINES lines, is UTF-8 (the decoders read
//! records as `str`) and holds no raw line break (each one is written as `\n`). Whether a joined
//! record decodes is the decoder's call (`records` asks serde_json, which, like the engine, takes
//! a lone surrogate escape), so the check does not ask a stricter parser again.

use toolstream_engine::decode::framing::rejoin::{records, Record, MAX_RECORD_LINES};

/// The first byte picks the line bound; the rest is the stream.
pub fn check(data: &[u8]) {
    let (knob, input) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b), rest),
        None => (0, data),
    };
    let max_line = 8 + knob * 64;
    // Physical lines as the framing counts them: every `\n` ends one, and a last unterminated one.
    let physical = input.split(|&b| b == b'\n').count() - usize::from(input.ends_with(b"\n") || input.is_empty());
    let mut next = 1u64;
    for record in records(input, max_line) {
        let (line_no, lines) = match &record {
            Record::Line { line_no, .. } | Record::Bad { line_no } | Record::TooLong { line_no } => (*line_no, 1),
            Record::Joined { line_no, lines, text } => {
                assert!((2..=MAX_RECORD_LINES).contains(lines), "{record:?}");
                assert!(std::str::from_utf8(text).is_ok(), "a joined record is UTF-8: {record:?}");
                assert!(!text.contains(&b'\n'), "a joined record holds no raw line break: {record:?}");
                (*line_no, *lines)
            }
        };
        assert_eq!(line_no, next, "lines are accounted for once, in order: {record:?}");
        next += lines as u64;
    }
    assert_eq!(next - 1, physical as u64, "every physical line is accounted for");
}
