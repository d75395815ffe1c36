//! The bounded digests against the plain string rules they replace (kept here as the oracle).

use proptest::prelude::*;

use super::*;

/// The rules on whole strings, as they were before the digests: the oracle.
mod oracle {
    fn non_ws(s: &str) -> impl DoubleEndedIterator<Item = char> + '_ {
        s.chars().filter(|c| !c.is_whitespace())
    }

    fn same_ignoring_whitespace(a: &str, b: &str) -> bool {
        non_ws(a).eq(non_ws(b))
    }

    fn ends_with_ignoring_whitespace(haystack: &str, needle: &str) -> bool {
        let mut h = non_ws(haystack).rev();
        non_ws(needle).rev().all(|c| h.next() == Some(c))
    }

    fn prefix_end_ignoring_whitespace(emitted: &str, incoming: &str) -> Option<usize> {
        let mut want = non_ws(emitted).peekable();
        for (i, c) in incoming.char_indices() {
            if want.peek().is_none() {
                return Some(i);
            }
            if c.is_whitespace() {
                continue;
            }
            if want.next() != Some(c) {
                return None;
            }
        }
        want.peek().is_none().then_some(incoming.len())
    }

    pub fn new_part<'a>(emitted: &str, incoming: &'a str) -> &'a str {
        if emitted.is_empty() {
            return incoming;
        }
        if let Some(rest) = incoming.strip_prefix(emitted) {
            return rest;
        }
        if same_ignoring_whitespace(emitted, incoming) || ends_with_ignoring_whitespace(emitted, incoming) {
            return "";
        }
        if let Some(end) = prefix_end_ignoring_whitespace(emitted, incoming) {
            return &incoming[end..];
        }
        ""
    }

    pub fn is_mismatch(emitted: &str, incoming: &str) -> bool {
        !emitted.is_empty()
            && new_part(emitted, incoming).is_empty()
            && !same_ignoring_whitespace(emitted, incoming)
            && !ends_with_ignoring_whitespace(emitted, incoming)
            && incoming.strip_prefix(emitted).is_none()
    }
}

fn run_text(pieces: &[&str]) -> RunText {
    run_text_keeping(pieces, EXACT_BYTES)
}

/// The run text of `pieces`, kept whole up to `exact_bytes` (0: digests from the start).
fn run_text_keeping(pieces: &[&str], exact_bytes: usize) -> RunText {
    let mut t = RunText { streamed: Streamed::with_exact_bytes(exact_bytes), ..RunText::default() };
    for p in pieces {
        t.mark();
        t.push(p);
    }
    t
}

/// `new_part` and `is_mismatch` of the run text of `pieces`, kept whole and digested from the
/// start, each checked against the oracle.
fn check(pieces: &[&str], incoming: &str) -> (String, bool) {
    let emitted = pieces.concat();
    let want = (oracle::new_part(&emitted, incoming).to_owned(), oracle::is_mismatch(&emitted, incoming));
    for exact_bytes in [EXACT_BYTES, 0] {
        let t = run_text_keeping(pieces, exact_bytes);
        let got = (t.new_part(incoming).to_owned(), t.is_mismatch(incoming));
        assert_eq!(got, want, "streamed {emitted:?} (kept up to {exact_bytes} bytes), incoming {incoming:?}");
    }
    want
}

#[test]
fn segment_repeating_deltas_is_dropped() {
    let mut d = SegmentDedupe::default();
    d.on_delta("I'll");
    d.on_delta(" find it.");
    assert_eq!(d.on_segment("I'll find it."), "");
    // No deltas since the boundary: the segment is new text.
    assert_eq!(d.on_segment("DONE"), "DONE");
}

#[test]
fn segment_extending_deltas_emits_the_rest() {
    let mut d = SegmentDedupe::default();
    d.on_delta("Hello");
    assert_eq!(d.on_segment("Hello world"), " world");
}

#[test]
fn final_text_rules() {
    // SPEC §5.4 example: the result extends the streamed text inside a word.
    assert_eq!(check(&["Disconnect"], "Disconnecting the CDP session..."), ("ing the CDP session...".into(), false));
    // Equal; equal ignoring whitespace.
    assert_eq!(check(&["a b"], "a b"), (String::new(), false));
    assert_eq!(check(&["a\nb "], "a b"), (String::new(), false));
    // An empty stream: all of it.
    assert_eq!(check(&[], "x"), ("x".into(), false));
    assert_eq!(check(&[""], "x"), ("x".into(), false));
    // Extends at a word boundary, exactly and ignoring whitespace.
    assert_eq!(check(&["one ", "two"], "one two three"), (" three".into(), false));
    assert_eq!(check(&["one two"], "one  two three"), (" three".into(), false));
    // The result holds only the last segment.
    assert_eq!(check(&["First part.", "Final answer"], "Final answer"), (String::new(), false));
    // Disagrees: nothing, and a mismatch.
    assert_eq!(check(&["abc"], "xyz"), (String::new(), true));
    assert_eq!(check(&["abc"], "abd and more"), (String::new(), true));
    // Only whitespace streamed.
    assert_eq!(check(&["\n\n"], "Answer"), ("Answer".into(), false));
}

#[test]
fn multi_byte_characters() {
    assert_eq!(check(&["héllo ", "wörld 🙂"], "héllo wörld 🙂 and more"), (" and more".into(), false));
    assert_eq!(check(&["héllo wörld 🙂"], "héllo wörld 🙂"), (String::new(), false));
    assert_eq!(check(&["héllo\u{3000}wörld"], "héllo wörld — done"), (" — done".into(), false));
    // The streamed length ends inside a character of the result: no byte prefix, no panic.
    assert_eq!(check(&["ab"], "éé"), (String::new(), true));
    assert_eq!(check(&["é"], "e\u{301}x"), (String::new(), true));
    assert_eq!(check(&["日本"], "日本語です"), ("語です".into(), false));
}

#[test]
fn a_long_last_piece_is_recognised_where_it_started() {
    let long: String = "word ".repeat(TAIL_BYTES);
    let earlier = "An earlier message.";
    // Beyond the tail, from a piece start: the end of the streamed text, not a mismatch.
    assert_eq!(check(&[earlier, &long], &long), (String::new(), false));
    // Beyond the tail and not from a piece start: taken for a mismatch (the documented bound).
    let t = run_text(&[earlier, &long]);
    let from_mid = &long[5..];
    assert!(!oracle::is_mismatch(&format!("{earlier}{long}"), from_mid));
    assert!(t.is_mismatch(from_mid));
    assert_eq!(t.new_part(from_mid), "");
}

#[test]
fn memory_does_not_grow_with_the_text() {
    let mut t = RunText::default();
    for i in 0..10_000 {
        t.mark();
        t.push(&format!("piece {i} of a long run "));
    }
    assert!(t.tail.len() <= 2 * TAIL_BYTES);
    assert_eq!(t.marks.len(), MARKS);
    assert_eq!(t.new_part("piece 0 of a long run piece 1"), "");
}

fn pieces() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec("[ab \n\u{3000}\u{85}é🙂]{0,6}", 0..5)
}

proptest! {
    #[test]
    fn digests_agree_with_the_string_rules(pieces in pieces(), cut in 0usize..40, extra in "[ab \n\u{a0}é]{0,4}", mode in 0u8..4) {
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let emitted = pieces.concat();
        // Results related to the streamed text: its ends, its beginnings, extended, respaced.
        let chars: Vec<char> = emitted.chars().collect();
        let cut = cut.min(chars.len());
        let incoming: String = match mode {
            0 => chars[cut..].iter().collect(),
            1 => chars[..cut].iter().collect::<String>() + &extra,
            2 => emitted.replace(' ', "\n") + &extra,
            _ => extra.clone(),
        };
        check(&refs, &incoming);
        let mut d = SegmentDedupe::default();
        refs.iter().for_each(|p| d.on_delta(p));
        prop_assert_eq!(d.on_segment(&incoming), oracle::new_part(&emitted, &incoming));
        // A text that outgrows the bound midway: kept whole, then digested.
        let mut s = Streamed::with_exact_bytes(emitted.len() / 2);
        refs.iter().for_each(|p| s.push(p));
        prop_assert_eq!(s.new_part(&incoming), oracle::new_part(&emitted, &incoming));
    }
}

#[test]
fn the_tail_keeps_the_last_characters_within_its_bounds() {
    let mut t = RunText::default();
    let mut all = String::new();
    for piece in ["é".repeat(3000), "ab".into(), "🙂".repeat(2500), "x".repeat(TAIL_BYTES), "日".into()] {
        t.push(&piece);
        all.push_str(&piece);
        assert!(t.tail.len() >= TAIL_BYTES.min(all.len()) && t.tail.len() <= 2 * TAIL_BYTES, "{}", t.tail.len());
        assert!(t.tail.capacity() <= 2 * TAIL_BYTES, "{}", t.tail.capacity());
        assert!(all.ends_with(&t.tail));
    }
}
