//! Byte helpers of the scanners and the lazy rewriter every rule writes its output with. Every
//! index the scanners produce sits next to an ASCII byte or at an end of the string, so it is
//! always a char boundary.

use super::{REDACTED, REDACTED_BRIDGE_ENDPOINT, REDACTED_PRIVATE_KEY};

/// The replacement markers: text that is already redacted.
pub(super) const MARKERS: [&str; 3] = [REDACTED, REDACTED_BRIDGE_ENDPOINT, REDACTED_PRIVATE_KEY];

/// Whether `b` is exactly one of the replacement markers (an already redacted value).
pub(super) fn is_marker(b: &[u8]) -> bool {
    MARKERS.iter().any(|m| b == m.as_bytes())
}

/// Whether `b` starts with one of the replacement markers.
pub(super) fn starts_with_marker(b: &[u8]) -> bool {
    MARKERS.iter().any(|m| b.starts_with(m.as_bytes()))
}

pub(super) fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

/// First ASCII-case-insensitive occurrence of `needle` in `hay` at or after `from`.
pub(super) fn find_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let last_start = hay.len().checked_sub(needle.len())?;
    let window = hay.get(from..=last_start)?;
    // Candidates by the first byte in either case (vectorised), then a full comparison.
    memchr::memchr2_iter(first.to_ascii_lowercase(), first.to_ascii_uppercase(), window)
        .map(|i| from + i)
        .find(|&i| starts_with_ci(&hay[i..], needle))
}

pub(super) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

pub(super) fn is_quote(b: u8) -> bool {
    b == b'"' || b == b'\''
}

pub(super) fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    i
}

/// Spans of existing replacement markers.
pub(super) fn marker_spans(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for marker in MARKERS {
        let mut from = 0;
        while let Some(rel) = s[from..].find(marker) {
            let start = from + rel;
            spans.push((start, start + marker.len()));
            from = start + marker.len();
        }
    }
    spans
}

pub(super) fn overlaps(spans: &[(usize, usize)], start: usize, end: usize) -> bool {
    spans.iter().any(|&(a, b)| start < b && a < end)
}

/// Builds the output of one rule lazily: `None` until the first replacement.
pub(super) struct Rewriter<'s> {
    src: &'s str,
    out: Option<String>,
    copied: usize,
}

impl<'s> Rewriter<'s> {
    pub(super) fn new(src: &'s str) -> Self {
        Self { src, out: None, copied: 0 }
    }

    /// Replaces `src[start..end]` (`start >= ` the end of the previous replacement).
    pub(super) fn replace(&mut self, start: usize, end: usize, with: &str) {
        let out = self.out.get_or_insert_with(|| String::with_capacity(self.src.len() + 16));
        out.push_str(&self.src[self.copied..start]);
        out.push_str(with);
        self.copied = end;
    }

    pub(super) fn finish(self) -> Option<String> {
        let mut out = self.out?;
        out.push_str(&self.src[self.copied..]);
        Some(out)
    }
}
