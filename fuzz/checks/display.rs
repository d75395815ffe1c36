//! The display-safety check (SPEC §8): the fuzz target `display` runs it on every input, and
//! `schemas/tests/fuzz_regressions.rs` on every input it once failed on. Whatever the bytes, a
//! display line and display body text hold nothing a terminal acts on, stay within their bounds,
//! are made only of the input's own chars (so no code point was split) and do not change when
//! cleaned again; a JSON line escapes what it must and means the same.

use toolstream_schemas::display::{display_body, display_line, json_line, truncate_chars, ELLIPSIS};

/// What SPEC §8 says never reaches a terminal as it is (written out here, not taken from the code
/// under test).
fn forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Every char of `shown` but spaces, newlines and a final `…` is a char of `input`, in order.
fn drawn_from(shown: &str, input: &str) -> bool {
    let mut rest = input.chars();
    let kept = shown.strip_suffix(ELLIPSIS).unwrap_or(shown);
    kept.chars().filter(|&c| c != ' ' && c != '\n').all(|c| rest.any(|i| i == c))
}

/// The first byte is the line bound; the rest, as UTF-8 (lossy), is the text.
pub fn check(data: &[u8]) {
    let (max, text) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b), String::from_utf8_lossy(rest)),
        None => (0, "".into()),
    };

    let line = display_line(&text, max);
    assert!(line.chars().count() <= max, "{line:?} is longer than {max}");
    assert!(!line.chars().any(|c| forbidden(c) || (c.is_whitespace() && c != ' ')), "{line:?}");
    assert!(!line.contains("  ") && line.trim() == line, "{line:?} is not collapsed");
    assert!(drawn_from(&line, &text), "{text:?} -> {line:?}");
    assert_eq!(display_line(&line, max), line);

    let body = display_body(&text);
    assert!(!body.chars().any(|c| c != '\n' && forbidden(c)), "{body:?}");
    assert_eq!(body.matches('\n').count(), text.matches('\n').count(), "{text:?} -> {body:?}");
    assert!(drawn_from(&body, &text), "{text:?} -> {body:?}");
    assert_eq!(display_body(&body), body);

    let json = json_line(text.as_ref()).expect("a string always serialises");
    assert!(!json.chars().any(forbidden), "{json:?}");
    assert_eq!(serde_json::from_str::<String>(&json).expect("json_line writes JSON"), text);

    let cut = truncate_chars(&text, max);
    assert!(cut.chars().count() <= max);
    assert!(text.starts_with(cut.strip_suffix(ELLIPSIS).unwrap_or(&cut)));
}
