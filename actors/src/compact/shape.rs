//! The shape of a line, for the generic reducer (SPEC §10): its words with what varies between
//! lines of one kind abstracted — numbers, hashes, paths and file names, code names
//! (`snake_case`, `camelCase`, `a::b`), quoted strings — so `test a::b ... ok` and
//! `test c::d_2 ... ok` have one shape while `error: x` and `warning: x` do not. `KEY=value`,
//! `file:line` and `host:port` are words on each side. A line has a shape only when a literal
//! word is left (the template a log line is printed from): a line of nothing but names, paths
//! or numbers — a file list, a branch list — is data, never collapsed. Linear in the line: each
//! character is looked at a bounded number of times.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

/// Quote characters whose quoted spans are abstracted.
const QUOTES: [u8; 3] = [b'\'', b'"', b'`'];

/// A hash of the line's shape (equal for lines of the same shape), or `None` when no literal
/// word is left once the varying parts are abstracted.
pub fn shape(line: &str) -> Option<u64> {
    let mut h = FxHasher::default();
    let mut literal = false;
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
        literal |= token(tok, &mut h);
        // Punctuation alone joins the next word: `[ 10%]` and `[100%]` have one shape.
        if tok.chars().any(char::is_alphanumeric) {
            h.write_u8(0xff);
        }
        rest = rest[end..].trim_start();
    }
    literal.then(|| h.finish())
}

/// One whitespace-separated token's contribution; whether a literal word was in it. `=` and a
/// lone `:` separate words inside it (`a::b` stays one).
fn token(tok: &str, h: &mut FxHasher) -> bool {
    let b = tok.as_bytes();
    let mut literal = false;
    let mut start = 0;
    for i in 0..b.len() {
        let lone_colon = b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':');
        if b[i] == b'=' || lone_colon {
            literal |= word(&tok[start..i], h);
            h.write_u8(b[i]);
            start = i + 1;
        }
    }
    literal | word(&tok[start..], h)
}

/// One word's contribution: a class letter for paths, names and hashes, else the word with each
/// run of digits as `#`; whether it is a literal word (two letters or more, not abstracted).
fn word(tok: &str, h: &mut FxHasher) -> bool {
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
        return false;
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
    tok.bytes().filter(u8::is_ascii_alphabetic).nth(1).is_some()
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
        shape(a).is_some() && shape(a) == shape(b)
    }

    #[test]
    fn lines_of_one_kind_share_a_shape() {
        assert!(same("test module_001::tests::case_0000012 ... ok", "test parse::rejects_empty ... ok"));
        assert!(same("test adds_wrong ... ok", "test parsesDates ... ok"));
        assert!(same("[12:00:01] processed item 12 in 4ms", "[12:00:02] processed item 130 in 15ms"));
        assert!(same("tests/test_a.py::test_x PASSED [ 10%]", "tests/sub/test_b.py::test_y PASSED [100%]"));
        assert!(same("Downloading 'a b' from \"x\"", "Downloading 'c' from \"y z\""));
        assert!(same("worktree /r/a  8c5971e [fix/a]", "worktree /r/b  f120aa8 [feat/x]"));
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
        assert!(!same("HOME=/root", "PATH=/usr/bin"), "`=` separates the name from the value");
        assert!(same("src/a.rs:12:5: unused foo_bar", "src/b.rs:7:1: unused y_z"));
    }

    #[test]
    fn data_has_no_shape() {
        for line in ["./src/a.rs", "  remotes/origin/feature_x", "8c5971e 0bc1d71", "12 34", "snake_case_name", "'q'"] {
            assert_eq!(shape(line), None, "{line}");
        }
    }

    #[test]
    fn unclosed_quotes_are_ordinary_characters() {
        assert!(same("don't 1", "don't 2"));
        assert!(!same("it's here", "it's there"));
        // A long line of unclosed quotes: each is searched for once.
        let line = "' ab ".repeat(100_000);
        assert!(same(&line, &line));
    }
}
