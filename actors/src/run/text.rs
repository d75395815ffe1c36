//! Assistant text rules: each piece of text exactly once (SPEC §1.1 rule 9) and the run's final
//! text without repeating what was already streamed (SPEC §5.4). Pure, and bounded: the streamed
//! text is kept whole only while it is short ([`EXACT_BYTES`]); past that, only digests of it that
//! a later text can be compared with — its length, SHA-256 of its bytes and of its non-whitespace
//! characters — and, for the "result is the end of what was streamed" check, its last characters
//! and rolling hashes at the starts of its last pieces. Memory does not grow with the run's text.

use std::collections::VecDeque;

use sha2::{Digest as _, Sha256};

/// What is remembered of a streamed text: enough to decide how a later text relates to it
/// (equal, extends it, equal ignoring whitespace, extends it ignoring whitespace). Up to
/// [`EXACT_BYTES`] that is the text itself, compared byte for byte (most runs stream less, and a
/// copy costs less than a digest); past it, only digests of it, so memory stays bounded.
#[derive(Debug, Clone)]
pub struct Streamed {
    /// Length in bytes.
    bytes: usize,
    /// Bytes of its non-whitespace characters.
    non_ws: usize,
    /// The largest text kept whole.
    exact_bytes: usize,
    memory: Memory,
}

/// Up to this many bytes a streamed text is kept whole; past it, digested.
pub const EXACT_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone)]
enum Memory {
    /// The text itself.
    Exact(String),
    /// SHA-256 of its bytes and of its non-whitespace characters (their UTF-8, in order).
    Digest { raw: Sha256, non_ws: Sha256 },
}

impl Default for Streamed {
    fn default() -> Self {
        Streamed::with_exact_bytes(EXACT_BYTES)
    }
}

impl Streamed {
    /// Texts up to `exact_bytes` kept whole.
    pub fn with_exact_bytes(exact_bytes: usize) -> Streamed {
        Streamed { bytes: 0, non_ws: 0, exact_bytes, memory: Memory::Exact(String::new()) }
    }

    pub fn push(&mut self, text: &str) {
        match &mut self.memory {
            Memory::Exact(kept) if kept.len() + text.len() <= self.exact_bytes => {
                kept.push_str(text);
                self.bytes += text.len();
                for_each_word(text, |w| self.non_ws += w.len());
            }
            _ => self.push_with(text, &non_ws_of(text)),
        }
    }

    /// `text`, whose non-whitespace characters are `non_ws`.
    fn push_with(&mut self, text: &str, non_ws: &str) {
        self.bytes += text.len();
        self.non_ws += non_ws.len();
        match &mut self.memory {
            Memory::Exact(kept) if kept.len() + text.len() <= self.exact_bytes => kept.push_str(text),
            Memory::Exact(kept) => {
                // Past the bound: digests from here on, of all of it.
                let mut raw = Sha256::new();
                raw.update(kept.as_bytes());
                raw.update(text.as_bytes());
                let mut hash = Sha256::new();
                for_each_word(kept, |w| hash.update(w.as_bytes()));
                hash.update(non_ws.as_bytes());
                self.memory = Memory::Digest { raw, non_ws: hash };
            }
            Memory::Digest { raw, non_ws: hash } => {
                raw.update(text.as_bytes());
                hash.update(non_ws.as_bytes());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Whether the text has anything but whitespace.
    pub fn has_non_ws(&self) -> bool {
        self.non_ws > 0
    }

    /// The part of `incoming` that is not already in the streamed text: all of it when nothing was
    /// streamed; the remainder when it extends the streamed text (exactly, or ignoring whitespace);
    /// nothing when it equals it (whitespace aside), is contained at its end, or disagrees with it,
    /// because text that was shown cannot be taken back and must not be repeated.
    pub fn new_part<'a>(&self, incoming: &'a str) -> &'a str {
        if self.is_empty() {
            return incoming;
        }
        if let Some(rest) = self.strip_prefix(incoming) {
            return rest;
        }
        if self.same_ignoring_whitespace(incoming) {
            return "";
        }
        // (When `incoming` is contained at the end of the streamed text ignoring whitespace and
        // not equal to it, it is shorter, so it cannot extend it either: nothing, as below.)
        match self.prefix_end_ignoring_whitespace(incoming) {
            Some(end) => &incoming[end..],
            None => "",
        }
    }

    /// `incoming` minus the streamed text, when it starts with it byte for byte.
    fn strip_prefix<'a>(&self, incoming: &'a str) -> Option<&'a str> {
        let head = incoming.as_bytes().get(..self.bytes)?;
        let same = match &self.memory {
            Memory::Exact(kept) => head == kept.as_bytes(),
            Memory::Digest { raw, .. } => Sha256::digest(head) == raw.clone().finalize(),
        };
        same.then(|| incoming.get(self.bytes..)).flatten()
    }

    pub fn same_ignoring_whitespace(&self, incoming: &str) -> bool {
        let other = non_ws_of(incoming);
        other.len() == self.non_ws && self.non_ws_is(&other)
    }

    /// Whether `non_ws` (as long as the streamed text's non-whitespace characters) is them.
    fn non_ws_is(&self, non_ws: &str) -> bool {
        match &self.memory {
            Memory::Exact(kept) => {
                let mut rest = non_ws.as_bytes();
                let mut same = true;
                for_each_word(kept, |w| match rest.strip_prefix(w.as_bytes()) {
                    Some(r) if same => rest = r,
                    _ => same = false,
                });
                same && rest.is_empty()
            }
            Memory::Digest { non_ws: hash, .. } => Sha256::digest(non_ws.as_bytes()) == hash.clone().finalize(),
        }
    }

    /// Byte index in `incoming` just past the characters that match all of the streamed text,
    /// ignoring whitespace on both sides; `None` when the streamed text is not such a prefix.
    fn prefix_end_ignoring_whitespace(&self, incoming: &str) -> Option<usize> {
        let mut want = self.non_ws;
        let mut got = String::with_capacity(want);
        let mut end = 0;
        for (i, c) in incoming.char_indices() {
            if want == 0 {
                break;
            }
            if !c.is_whitespace() {
                let len = c.len_utf8();
                if len > want {
                    return None;
                }
                got.push(c);
                want -= len;
                end = i + len;
            }
        }
        (want == 0 && self.non_ws_is(&got)).then_some(end)
    }
}

/// The run's streamed text: a [`Streamed`] digest plus what the "result is the end of what was
/// streamed" check needs (SDK runs report only the last message as their result): the last
/// [`TAIL_BYTES`] of its non-whitespace characters, and rolling hashes at the starts of the last
/// [`MARKS`] pieces (text after a boundary, a new block or a new message), so a longer result is
/// recognised when it starts where a piece did.
#[derive(Debug, Clone, Default)]
pub struct RunText {
    streamed: Streamed,
    /// The UTF-8 of the last non-whitespace characters: at least [`TAIL_BYTES`] of them when there
    /// are, at most twice that (and so is its allocation).
    tail: String,
    /// Rolling hash of all non-whitespace characters (their UTF-8).
    rolling: Rolling,
    /// `(non-whitespace bytes before the piece, rolling hash there)`, oldest first.
    marks: VecDeque<(usize, u64)>,
}

/// Bytes of non-whitespace characters kept from the end of the run's text.
pub const TAIL_BYTES: usize = 4096;
/// Piece starts remembered.
pub const MARKS: usize = 64;

impl RunText {
    pub fn push(&mut self, text: &str) {
        let non_ws = non_ws_of(text);
        self.streamed.push_with(text, &non_ws);
        self.rolling.push(non_ws.as_bytes());
        // Trimmed before it grows past twice the tail, so its allocation stays that size too.
        if self.tail.len() + non_ws.len() > 2 * TAIL_BYTES {
            let keep = TAIL_BYTES.saturating_sub(non_ws.len());
            self.tail.drain(..char_boundary(&self.tail, self.tail.len() - keep, false));
        }
        let from = char_boundary(&non_ws, non_ws.len().saturating_sub(2 * TAIL_BYTES - self.tail.len()), true);
        let piece = &non_ws[from..];
        let need = self.tail.len() + piece.len();
        if need > self.tail.capacity() {
            // Grown by doubling as usual, but never past the bound.
            let target = (2 * self.tail.capacity()).clamp(need, 2 * TAIL_BYTES);
            self.tail.reserve_exact(target - self.tail.len());
        }
        self.tail.push_str(piece);
    }

    /// A piece of text starts here.
    pub fn mark(&mut self) {
        let at = (self.streamed.non_ws, self.rolling.0);
        if self.marks.back() == Some(&at) {
            return;
        }
        if self.marks.len() == MARKS {
            self.marks.pop_front();
        }
        self.marks.push_back(at);
    }

    pub fn has_non_ws(&self) -> bool {
        self.streamed.has_non_ws()
    }

    /// See [`Streamed::new_part`].
    pub fn new_part<'a>(&self, incoming: &'a str) -> &'a str {
        self.streamed.new_part(incoming)
    }

    /// Whether `incoming` adds text that `new_part` drops because it disagrees with the streamed
    /// text (rather than repeating it).
    pub fn is_mismatch(&self, incoming: &str) -> bool {
        !self.streamed.is_empty()
            && self.new_part(incoming).is_empty()
            && self.streamed.strip_prefix(incoming).is_none()
            && !self.streamed.same_ignoring_whitespace(incoming)
            && !self.ends_with_ignoring_whitespace(incoming)
    }

    /// Whether the non-whitespace characters of `needle` end the streamed text's: exact within the
    /// last [`TAIL_BYTES`]; beyond, when the needle starts at one of the last [`MARKS`] piece
    /// starts (otherwise answered `false`).
    fn ends_with_ignoring_whitespace(&self, needle: &str) -> bool {
        // UTF-8 is self-synchronising: the byte strings end alike exactly when the characters do.
        let want = non_ws_of(needle);
        let total = self.streamed.non_ws;
        if want.len() > total {
            return false;
        }
        if want.len() <= self.tail.len() {
            return self.tail.as_bytes().ends_with(want.as_bytes());
        }
        let from = total - want.len();
        let Some(&(_, at)) = self.marks.iter().find(|(pos, _)| *pos == from) else {
            return false;
        };
        let mut suffix = Rolling::default();
        suffix.push(want.as_bytes());
        self.rolling.suffix_from(at, want.len()) == suffix.0
    }
}

/// Polynomial rolling hash of bytes modulo the Mersenne prime 2^61 − 1, so the hash of a
/// suffix follows from the hash before it: h(ab) = h(a)·B^|b| + h(b).
#[derive(Debug, Clone, Copy, Default)]
struct Rolling(u64);

const MODULUS: u64 = (1 << 61) - 1;
const BASE: u64 = 0x1f35_8b2d_4c7a_9e13 % MODULUS;

fn mul_mod(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let m = u128::from(MODULUS);
    ((p & m) + (p >> 61)) as u64 % MODULUS
}

fn pow_mod(mut b: u64, mut e: usize) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b);
        }
        b = mul_mod(b, b);
        e >>= 1;
    }
    r
}

impl Rolling {
    fn push(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (mul_mod(self.0, BASE) + u64::from(*b) + 1) % MODULUS;
        }
    }

    /// Hash of the last `len` bytes, given the hash `before` of the ones before them.
    fn suffix_from(self, before: u64, len: usize) -> u64 {
        (self.0 + MODULUS - mul_mod(before, pow_mod(BASE, len))) % MODULUS
    }
}

/// Tracks the deltas streamed since the last boundary so a consolidated or final segment that
/// repeats them is dropped.
#[derive(Debug, Default)]
pub struct SegmentDedupe {
    since_boundary: Streamed,
}

impl SegmentDedupe {
    /// A per-token delta was emitted.
    pub fn on_delta(&mut self, text: &str) {
        self.since_boundary.push(text);
    }

    /// A consolidated/final segment arrived: returns the part of it that was not streamed yet
    /// (empty when it repeats the deltas), and starts a new boundary.
    pub fn on_segment<'a>(&mut self, segment: &'a str) -> &'a str {
        std::mem::take(&mut self.since_boundary).new_part(segment)
    }
}

/// The character boundary of `s` nearest to byte `i` (`i <= s.len()`), at or after it when `up`,
/// else at or before it.
fn char_boundary(s: &str, mut i: usize, up: bool) -> usize {
    while !s.is_char_boundary(i) {
        if up {
            i += 1;
        } else {
            i -= 1;
        }
    }
    i
}

/// The non-whitespace characters of `text` ([`char::is_whitespace`]), in order.
fn non_ws_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for_each_word(text, |word| out.push_str(word));
    out
}

/// Calls `f` with each maximal run of non-whitespace characters of `text` (with a fast path for
/// ASCII, which is most of what models write).
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut start = None;
    let mut i = 0;
    while i < bytes.len() {
        let (ws, len) = match bytes[i] {
            b'\t'..=b'\r' | b' ' => (true, 1),
            b if b.is_ascii() => (false, 1),
            _ => match text[i..].chars().next() {
                Some(c) => (c.is_whitespace(), c.len_utf8()),
                None => break,
            },
        };
        match (ws, start) {
            (true, Some(s)) => {
                f(&text[s..i]);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
        i += len;
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

#[cfg(test)]
mod tests;
