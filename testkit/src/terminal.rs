//! What a terminal must never get from a stream (SPEC §8), for the tests of every output that
//! shows untrusted text: written out here, not taken from the code under test.

/// The chars of `s` a terminal could act on or that reorder what it shows (controls but `\n`:
/// C0, DEL, C1; U+2028/2029; bidi controls), then each of `remnants` (what is left of an escape
/// sequence whose ESC was taken out, e.g. `[2J`) that `s` contains. Empty when `s` is safe.
pub fn unsafe_on_a_terminal(s: &str, remnants: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = s
        .chars()
        .filter(|&c| {
            c != '\n'
                && (c.is_control()
                    || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        })
        .map(|c| format!("{c:?}"))
        .collect();
    found.extend(remnants.iter().filter(|r| s.contains(*r)).map(|r| (*r).to_owned()));
    found
}
