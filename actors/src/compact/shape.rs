//! The shape of a line, for the generic reducer (SPEC §10): its words with what varies between
//! lines of one kind abstracted — numbers, hashes, paths and file names, code names
//! (`snake_case`, `camelCase`, `a::b`), quoted strings — so `test a::b ... ok` and
//! `test c::d_2 ... ok` have one shape while `error: x` and `warning: x` do not. Linear in the
//! line: each character is looked at a bounded number of times.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

/// Quote characters whose quoted spans are abstracted.
const QUOTES: [u8; 3] = [b'\'', b'"', b'`'];

/// A hash of the line's shape: equal for lines of the same shape.
pub fn shape(line: &str) -> u64 {
    let mut h = FxHasher::default();
    let body = line.trim_start();
    (line.len() - body.len()).hash(&mut h);
    // Once a quote has no closing partner after some point, it has none after any later point.
    let mut unclosed = [false; 3];
    let mut rest = body;
    while let Some(&first) = rest.as_bytes().first() {
        if let Some(q) = QUOTES.iter().position(|&q| q == first).filter(|&q| !unclosed[q]) {
            match rest[1..].find(char::from(first)) {
                Some(end) => {
                    h.write_u8(b'Q');
                    h.write_u8(0xff);
                    rest = rest[end + 2..].trim_start();
                    continue;
                }
                None => unclosed[q] = true,
            }
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tok = &rest[..end];
        token(tok, &mut h);
        // Punctuation alone joins the next word: `[ 10%]` and `[100%]` have one shape.
        if tok.chars().any(char::is_alphanumeric) {
            h.write_u8(0xff);
        }
        rest = rest[end..].trim_start();
    }
    h.finish()
}

/// One word's contribution: a class letter for paths, names and hashes, else the word with each
/// run of digits as `#`.
fn token(tok: &str, h: &mut FxHasher) {
    let core = tok.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '/' && c != '\\');
    let class = if core.contains(['/', '\\']) || core.contains("::") || is_file_name(core) {
        Some(b'P')
    } else if is_code_name(core) {
        Some(b'N')
    } else if is_hash(core) {
        Some(b'H')
    } else {
        None
    };
    if let Some(class) = class {
        // The punctuation around it stays: `(P)` and `P:` differ from `P`.
        let (lead, trail) = tok.split_once(core).unwrap_or(("", ""));
        lead.hash(h);
        h.write_u8(class);
        trail.hash(h);
        return;
    }
    let mut in_digits = false;
    for c in tok.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                h.write_u8(b'#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            c.hash(h);
        }
    }
}

/// `name.ext`, `a.b.c`: a dot between a letter or digit and a letter.
fn is_file_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(3).any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'.' && w[2].is_ascii_alphabetic())
}

/// `snake_case`, `camelCase`, `PascalCase2`: an underscore inside, or a lower-case letter
/// followed by an upper-case one.
fn is_code_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(2).any(|w| {
        (w[0].is_ascii_alphanumeric() && w[1] == b'_') || (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
    })
}

/// A commit or content hash: seven or more hex digits, at least one of them a digit.
fn is_hash(s: &str) -> bool {
    s.len() >= 7 && s.bytes().all(|b| b.is_ascii_hexdigit()) && s.bytes().any(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        shape(a) == shape(b)
    }

    #[test]
    fn lines_of_one_kind_share_a_shape() {
        assert!(same("test module_001::tests::case_0000012 ... ok", "test parse::rejects_empty ... ok"));
        assert!(same("test adds_wrong ... ok", "test parsesDates ... ok"));
        assert!(same("[12:00:01] processed item 12 in 4ms", "[12:00:02] processed item 130 in 15ms"));
        assert!(same("tests/test_a.py::test_x PASSED [ 10%]", "tests/sub/test_b.py::test_y PASSED [100%]"));
        assert!(same("Downloading 'a b' from \"x\"", "Downloading 'c' from \"y z\""));
        assert!(same("/r/a  8c5971e [fix/a]", "/r/b  f120aa8 [feat/x]"));
        assert!(same("Compiling foo.rs", "Compiling bar.txt"));
        assert!(same("--- PASS: TestParse (0.00s)", "--- PASS: TestRender (1.25s)"));
    }

    #[test]
    fn lines_of_different_kinds_do_not() {
        assert!(!same("test a::b ... ok", "test a::b ... FAILED"));
        assert!(!same("error: x", "warning: x"));
        assert!(!same("added 3 packages", "removed 3 packages"));
        assert!(!same("  indented", "indented"));
        assert!(!same("the quick fox", "the slow fox"), "plain words are the content");
        assert!(!same("a b", "ab"));
    }

    #[test]
    fn unclosed_quotes_are_ordinary_characters() {
        assert!(same("don't 1", "don't 2"));
        assert!(!same("it's here", "it's there"));
        // A long line of unclosed quotes: each is searched for once.
        let line = "' ".repeat(100_000);
        assert_eq!(shape(&line), shape(&line));
    }
}
