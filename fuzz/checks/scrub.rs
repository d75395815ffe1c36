//! The scrubber check (SPEC §8): the fuzz target `scrub` runs it on every input, and
//! `actors/tests/fuzz_regressions.rs` on every input it once failed on. Whatever the text, the
//! scrubber ends without a panic, is idempotent (scrubbed text scrubbed again is unchanged), and a
//! secret it knows exactly is gone wherever it was planted.

use toolstream_actors::present::scrub::Scrubber;

/// A key the scrubber is told about (no part of it is a redaction marker).
const KNOWN: &str = "fuzzKnownKey-7Qm2Vx9Lp4";

/// The first byte picks where the known key is planted; the rest, as UTF-8 (lossy), is the text.
pub fn check(data: &[u8]) {
    let (knob, text) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b), String::from_utf8_lossy(rest).into_owned()),
        None => (0, String::new()),
    };
    let plain = Scrubber::default();
    let once = plain.scrub(&text).into_owned();
    assert_eq!(plain.scrub(&once), once, "scrubbing is idempotent: {text:?}");

    let mut at = (knob * 7) % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let planted = format!("{}{KNOWN}{}", &text[..at], &text[at..]);
    let knowing = Scrubber::new(Some(KNOWN.to_owned()));
    let scrubbed = knowing.scrub(&planted);
    assert!(!scrubbed.contains(KNOWN), "{planted:?} -> {scrubbed:?}");
    assert!(!knowing.scrub_known(&planted).contains(KNOWN), "{planted:?}");
}
