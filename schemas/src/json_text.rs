//! JSON text read without a parser: where a string that starts at a given byte ends. For the
//! readers that take a fast path over known text: the commonest stream-json lines (raw input,
//! so a raw control character is refused) and the fields of a call's args (text already parsed
//! once, so only quotes and backslashes matter). What they read is decoded by serde_json when it
//! has escapes.

/// Where the string whose opening quote is at `open` ends (the index of its closing quote), and
/// whether it has escapes. `None` when the text ends first, or at a raw control character (not
/// JSON: the general parser reports it).
pub(crate) fn string_end(bytes: &[u8], open: usize) -> Option<(usize, bool)> {
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    let mut i = open + 1;
    let mut escaped = false;
    loop {
        // Eight plain bytes at a time, then byte by byte from the first that may end the run.
        while let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            if may_end_a_run(word) {
                break;
            }
            i += 8;
        }
        match *bytes.get(i)? {
            b'"' => return Some((i, escaped)),
            b'\\' => {
                escaped = true;
                // The escaped byte (a quote or a backslash among them) is not the end.
                i += 2;
            }
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// As [`string_end`], in text known to be JSON (a recorded `RawValue`): no control character to
/// look for, so the next quote or backslash is found by memchr. Over a call's args (keys, ids,
/// commands, file contents) it costs less than the eight-byte scan: 4.4 M against 7.5 M
/// instructions for the args of the 4 MB bench corpus.
pub(crate) fn string_end_in_json(bytes: &[u8], open: usize) -> Option<(usize, bool)> {
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    let mut i = open + 1;
    let mut escaped = false;
    loop {
        i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[i] == b'"' {
            return Some((i, escaped));
        }
        escaped = true;
        // The escaped byte (a quote or a backslash among them) is not the end.
        i += 2;
    }
}

/// Whether any of the eight bytes of `word` is a quote, a backslash or a control character (a
/// byte after the first such one may be reported too: the caller then reads byte by byte).
fn may_end_a_run(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_ends_at_its_first_unescaped_quote() {
        for (text, end) in [
            (r#""""#, Some((1, false))),
            (r#""abc" x"#, Some((4, false))),
            (r#""a long string of more than eight bytes" x"#, Some((39, false))),
            (r#""esc \" aped \\" x"#, Some((15, true))),
            (r#""\\""#, Some((3, true))),
            ("\"cut", None),
            ("\"ends in \\", None),
            ("\"raw\ttab\"", None),
            ("no quote", None),
        ] {
            assert_eq!(string_end(text.as_bytes(), 0), end, "{text}");
            if !text.contains('\t') {
                assert_eq!(string_end_in_json(text.as_bytes(), 0), end, "{text}, in JSON");
            }
        }
    }

    proptest::proptest! {
        /// The eight-byte test finds exactly the words holding a byte that may end a run.
        #[test]
        fn a_word_may_end_a_run_when_a_byte_of_it_does(bytes in proptest::prelude::any::<[u8; 8]>(), at in 0usize..8, special in proptest::sample::select(vec![b'"', b'\\', 0, 0x1f, b'\n'])) {
            let ends = |b: &[u8; 8]| b.iter().any(|&c| c == b'"' || c == b'\\' || c < 0x20);
            proptest::prop_assert_eq!(may_end_a_run(u64::from_le_bytes(bytes)), ends(&bytes));
            let mut with = bytes;
            with[at] = special;
            proptest::prop_assert!(may_end_a_run(u64::from_le_bytes(with)));
        }
    }
}
