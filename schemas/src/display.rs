//! Display safety (SPEC §8): what untrusted text may look like when it is shown on a terminal or
//! written to stderr. One treatment for every layer (the stages that build titles and previews,
//! the cards sink, the binary's tables and messages), in two forms:
//!
//! - a display **line** ([`display_line`]): escape sequences removed; control characters (C0,
//!   DEL, C1), bidi controls and U+2028/2029 become spaces; whitespace runs collapse to one space,
//!   the ends are trimmed, and the line is cut to a number of chars with `…` as its last char;
//! - display **body** text ([`display_body`]): the same treatment of escape sequences, controls
//!   and bidi controls, but line ends are kept (`\r\n` becomes `\n`), tabs become three spaces and
//!   nothing is collapsed or cut.
//!
//! An escape sequence (ESC or its C1 form, then a CSI, OSC, DCS, SOS, PM or APC body up to its
//! terminator, or a two-char escape) is removed whole, so no remnant such as `[2J` or `]0;title`
//! is shown; a string that never ends stops at the end of its line. Lengths are counted in chars
//! (Unicode scalar values); nothing here ever cuts inside a code point. A `&str` holds no lone
//! surrogate: the decoders turn those into U+FFFD, which is shown like any other char.

use std::borrow::Cow;
use std::io;
use std::iter::Peekable;

use serde::Serialize;

/// The ellipsis that ends a cut line.
pub const ELLIPSIS: char = '…';
/// Max chars of a display line (titles, labels, summaries, stderr messages).
pub const DISPLAY_LINE_CHARS: usize = 240;
/// How many spaces a tab becomes in body text.
pub const TAB_WIDTH: usize = 3;

/// Bidirectional formatting controls: embeddings, overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069), which can reorder what a terminal shows ("Trojan Source"), and the marks
/// U+061C, U+200E and U+200F.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` is never shown as it is: a control character (C0, DEL, C1), a bidi control or
/// U+2028/2029.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}' || is_bidi_control(c)
}

/// What one step of untrusted text shows as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// A char shown as it is.
    Char(char),
    /// A neutralised char (control, bidi control, U+2028/2029): one space.
    Blank,
    Tab,
    Newline,
}

/// The pieces of untrusted text, escape sequences left out.
struct Pieces<I: Iterator<Item = char>> {
    chars: Peekable<I>,
}

impl<I: Iterator<Item = char>> Pieces<I> {
    fn new(chars: I) -> Self {
        Pieces { chars: chars.peekable() }
    }

    /// After ESC: the rest of the sequence it starts, if any.
    fn skip_escape(&mut self) {
        loop {
            match self.chars.peek() {
                Some('[') => {
                    self.chars.next();
                    self.skip_csi();
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    self.chars.next();
                    if self.skip_string() {
                        continue;
                    }
                }
                // nF: intermediates, then one final char.
                Some(' '..='/') => {
                    while self.chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
                    self.chars.next_if(|c| matches!(c, '0'..='~'));
                }
                // Fp, Fe, Fs: one final char (ESC 7, ESC M, ESC c, …).
                Some('0'..='~') => {
                    self.chars.next();
                }
                _ => {}
            }
            return;
        }
    }

    /// A control sequence's parameters and intermediates, then its final char.
    fn skip_csi(&mut self) {
        while self.chars.next_if(|c| matches!(c, ' '..='?')).is_some() {}
        self.chars.next_if(|c| matches!(c, '@'..='~'));
    }

    /// A control string (OSC, DCS, SOS, PM, APC) up to BEL or ST (`ESC \` or U+009C); a line end
    /// ends it and stays. True when an ESC that is not ST ended it: it starts the next sequence.
    fn skip_string(&mut self) -> bool {
        while let Some(c) = self.chars.next_if(|&c| c != '\n') {
            match c {
                '\x07' | '\u{9c}' => return false,
                '\x1b' => return self.chars.next_if_eq(&'\\').is_none(),
                _ => {}
            }
        }
        false
    }
}

impl<I: Iterator<Item = char>> Iterator for Pieces<I> {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        loop {
            let c = self.chars.next()?;
            return Some(match c {
                '\n' => Piece::Newline,
                '\t' => Piece::Tab,
                // A CRLF line end is a line end.
                '\r' if self.chars.peek() == Some(&'\n') => continue,
                '\x1b' => {
                    self.skip_escape();
                    continue;
                }
                // C1 CSI.
                '\u{9b}' => {
                    self.skip_csi();
                    continue;
                }
                // C1 DCS, SOS, OSC, PM, APC.
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                    if self.skip_string() {
                        self.skip_escape();
                    }
                    continue;
                }
                c if is_unsafe_char(c) => Piece::Blank,
                c => Piece::Char(c),
            });
        }
    }
}

/// One display line of `s`, at most `max_chars` chars (see the module doc).
pub fn display_line(s: &str, max_chars: usize) -> String {
    if s.len() <= max_chars && is_plain_line(s) {
        return s.to_owned();
    }
    display_line_chars(s.chars(), max_chars)
}

/// Whether `s` is already a display line: printable ASCII, single spaces between words, no
/// space at either end (most titles, paths and commands). Such text shows as itself.
fn is_plain_line(s: &str) -> bool {
    let b = s.as_bytes();
    b.first() != Some(&b' ')
        && b.last() != Some(&b' ')
        && b.iter().all(|c| (b' '..=b'~').contains(c))
        && !b.windows(2).any(|w| w == b"  ")
}

/// [`display_line`] of a sequence of chars (parts of a line chained without a copy).
pub fn display_line_chars(chars: impl Iterator<Item = char>, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    let mut pending_space = false;
    for piece in Pieces::new(chars) {
        let c = match piece {
            Piece::Char(c) if !c.is_whitespace() => c,
            _ => {
                pending_space = count > 0;
                continue;
            }
        };
        let need = 1 + usize::from(pending_space);
        if count + need > max_chars {
            // More content remains: mark the cut.
            if max_chars == 0 {
                return out;
            }
            if count == max_chars {
                out.pop();
            }
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            out.push(ELLIPSIS);
            return out;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// The chars body text `s` shows as (see the module doc), lazily: callers that bound what they
/// show stop early.
pub fn display_body_chars(s: &str) -> impl Iterator<Item = char> + '_ {
    Pieces::new(s.chars()).flat_map(|piece| {
        let (c, n) = match piece {
            Piece::Char(c) => (c, 1),
            Piece::Blank => (' ', 1),
            Piece::Tab => (' ', TAB_WIDTH),
            Piece::Newline => ('\n', 1),
        };
        std::iter::repeat_n(c, n)
    })
}

/// Body text `s` made safe to show (see the module doc); borrowed when it needs no change.
pub fn display_body(s: &str) -> Cow<'_, str> {
    let clean = |c: char| c == '\n' || !is_unsafe_char(c);
    if s.bytes().all(|b| b == b'\n' || (0x20..0x7f).contains(&b)) || s.chars().all(clean) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(display_body_chars(s).collect())
}

/// `value` as one line of compact JSON in which every unsafe char ([`is_unsafe_char`]) is written
/// as a `\uXXXX` escape: the same JSON to a reader, and nothing a terminal acts on.
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, EscapeUnsafe))?;
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::new(io::ErrorKind::InvalidData, e)))
}

/// serde_json's compact format, with unsafe chars in strings escaped.
struct EscapeUnsafe;

impl serde_json::ser::Formatter for EscapeUnsafe {
    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe_char(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                // Every unsafe char is in the BMP: one escape.
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// `s` cut to at most `max_chars` chars, ending with `…` when cut.
pub fn truncate_chars(s: &str, max_chars: usize) -> Cow<'_, str> {
    let mut kept_end = 0;
    for (n, (i, c)) in s.char_indices().enumerate() {
        if n == max_chars {
            if max_chars == 0 {
                // Owned: the result differs from `s`.
                return Cow::Owned(String::new());
            }
            let mut out = String::with_capacity(kept_end + ELLIPSIS.len_utf8());
            out.push_str(&s[..kept_end]);
            out.push(ELLIPSIS);
            return Cow::Owned(out);
        }
        if n + 1 < max_chars {
            kept_end = i + c.len_utf8();
        }
    }
    Cow::Borrowed(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// OSC title, clear screen, CR, BEL, BS, DEL, NEL, C1 CSI, U+2028/2029, a DCS string, bidi
    /// override and isolate.
    const EVIL: &str =
        "A\x1b]0;PWNED\x07B\x1b[2JC\rD\x08E\x7fF\u{85}G\u{9b}31mH\u{2028}I\u{2029}J\x1bPdcs\x1b\\K\u{202E}L\u{2066}M";

    #[test]
    fn display_line_cleans_and_collapses() {
        assert_eq!(display_line("  a\t\tb\r\n c\u{2028}d\u{0}e  ", 240), "a b c d e");
        assert_eq!(display_line("\u{202E}evil", 240), "evil");
        assert_eq!(display_line("", 240), "");
        assert_eq!(display_line(" \n\t ", 240), "");
        assert_eq!(display_line(EVIL, 240), "ABC D E F GH I JK L M");
    }

    #[test]
    fn display_line_truncates_with_ellipsis() {
        assert_eq!(display_line("abcdef", 6), "abcdef");
        assert_eq!(display_line("abcdefg", 6), "abcde…");
        assert_eq!(display_line("abcd efgh", 6), "abcd…");
        assert_eq!(display_line("abc   ", 3), "abc");
        assert_eq!(display_line("ééééé", 3), "éé…");
        assert_eq!(display_line("x", 0), "");
        assert_eq!(display_line("xy", 1), "…");
        let long = "a".repeat(1000);
        let out = display_line(&long, DISPLAY_LINE_CHARS);
        assert_eq!(out.chars().count(), 240);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        let cases = [
            ("\x1b[32mok\x1b[0m done", "ok done"),
            ("\x1b[38;5;196mred", "red"),
            ("\x1b]0;title\x07text", "text"),
            ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
            ("\x1b]0;t\u{9c}after", "after"),
            ("\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"),
            ("\x1b_apc\x1b\\x", "x"),
            ("\x1b7saved\x1b8", "saved"),
            ("\x1b(Bascii", "ascii"),
            ("\u{9b}1;31mc1", "c1"),
            ("\u{9d}0;t\x07osc", "osc"),
            // An OSC cut by an ESC that is not ST: the next sequence is removed too.
            ("\x1b]0;a\x1b[1mb", "b"),
            // Not a sequence: ESC alone, ESC before a non-ASCII char.
            ("a\x1b", "a"),
            ("a\x1bé", "aé"),
        ];
        for (input, shown) in cases {
            assert_eq!(display_line(input, 240), shown, "{input:?}");
            assert_eq!(display_body(input), shown, "{input:?}");
        }
    }

    #[test]
    fn an_unterminated_string_ends_at_its_line() {
        assert_eq!(display_body("a\x1b]0;never ends\nnext line"), "a\nnext line");
        assert_eq!(display_line("a\x1b]0;never ends\nnext", 240), "a next");
    }

    #[test]
    fn body_keeps_lines_and_expands_tabs() {
        assert!(matches!(display_body("plain ✓ text\nline two"), Cow::Borrowed(_)));
        assert_eq!(display_body("a\r\nb\rc\n\td"), "a\nb c\n   d");
        assert_eq!(display_body(EVIL), "ABC D E F GH I JK L M");
        assert_eq!(display_body("x\u{202A}y\u{2069}z\u{200F}"), "x y z ");
    }

    #[test]
    fn json_lines_escape_unsafe_chars_and_mean_the_same() {
        let value = serde_json::json!({"tool\u{202E}": ["a\u{9b}31m\u{2066}b\x1b[2J", "plain ✓"]});
        let line = json_line(&value).unwrap();
        assert!(!line.chars().any(is_unsafe_char), "{line:?}");
        assert_eq!(line, r#"{"tool\u202e":["a\u009b31m\u2066b\u001b[2J","plain ✓"]}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&line).unwrap(), value);
    }

    #[test]
    fn truncate_chars_works() {
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "ab…");
        assert_eq!(truncate_chars("abcd", 1), "…");
        assert_eq!(truncate_chars("abcd", 0), "");
        assert_eq!(truncate_chars("", 0), "");
        assert_eq!(truncate_chars("日本語です", 4), "日本語…");
    }

    #[test]
    fn deep_nesting_needs_no_stack() {
        let s = "\x1b]\x1b]".repeat(200_000) + "\x07end";
        assert_eq!(display_line(&s, 240), "end");
    }

    /// Text that is mostly the characters this module cares about.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            any::<char>().prop_map(String::from),
            prop::sample::select(vec![
                "\x1b", "[", "]", "\\", "\x07", "\n", "\r", "\t", " ", "\u{9b}", "\u{9c}", "\u{9d}", "\u{90}",
                "\u{85}", "\u{202E}", "\u{2066}", "\u{2069}", "\u{2028}", "\u{2029}", "\u{200F}", "\u{FFFD}", "é",
                "日", "😀", "0", ";", "m", "P", "_",
            ])
            .prop_map(str::to_owned),
        ];
        prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
    }

    /// Every char of `out` but spaces and a final `…` appears in `input`, in order: nothing was
    /// made up, and no code point was split.
    fn is_drawn_from(out: &str, input: &str) -> bool {
        let mut rest = input.chars();
        let kept = out.strip_suffix(ELLIPSIS).unwrap_or(out);
        kept.chars().filter(|&c| c != ' ' && c != '\n').all(|c| rest.any(|i| i == c))
    }

    proptest! {
        #[test]
        fn display_line_is_safe_and_bounded(s in prop_oneof![hostile(), any::<String>()], max in 0usize..300) {
            let out = display_line(&s, max);
            prop_assert!(out.chars().count() <= max);
            prop_assert!(!out.chars().any(|c| is_unsafe_char(c) || (c.is_whitespace() && c != ' ')));
            prop_assert!(!out.contains("  "));
            prop_assert_eq!(out.trim(), out.as_str());
            prop_assert!(is_drawn_from(&out, &s), "{:?} -> {:?}", s, out);
            // Idempotent once within bounds.
            prop_assert_eq!(display_line(&out, max), out);
        }

        #[test]
        fn plain_lines_take_the_short_way(s in prop_oneof![hostile(), "( {0,3}[!-~]{1,6}){0,8} {0,2}", any::<String>()], max in 0usize..60) {
            // The same line the char-by-char way.
            prop_assert_eq!(display_line(&s, max), display_line_chars(s.chars(), max));
        }

        #[test]
        fn display_body_is_safe_and_keeps_lines(s in prop_oneof![hostile(), any::<String>()]) {
            let out = display_body(&s);
            prop_assert!(!out.chars().any(|c| c != '\n' && is_unsafe_char(c)), "{:?} -> {:?}", s, out);
            prop_assert_eq!(out.matches('\n').count(), s.matches('\n').count());
            prop_assert!(is_drawn_from(&out, &s), "{:?} -> {:?}", s, out);
            prop_assert_eq!(display_body(&out), out.clone());
        }

        #[test]
        fn bytes_never_split_a_code_point(bytes in prop::collection::vec(any::<u8>(), 0..400), max in 1usize..50) {
            let text = String::from_utf8_lossy(&bytes);
            let out = display_line(&text, max);
            prop_assert!(is_drawn_from(&out, &text));
            let cut = truncate_chars(&text, max);
            prop_assert!(text.starts_with(cut.strip_suffix(ELLIPSIS).unwrap_or(&cut)));
        }

        #[test]
        fn truncate_bounded(s in any::<String>(), max in 0usize..50) {
            let out = truncate_chars(&s, max);
            prop_assert!(out.chars().count() <= max);
            if s.chars().count() <= max {
                prop_assert_eq!(out.as_ref(), s.as_str());
            } else if max > 0 {
                prop_assert!(out.ends_with('…'));
                let kept = &out[..out.len() - '…'.len_utf8()];
                prop_assert!(s.starts_with(kept));
            }
        }
    }
}
