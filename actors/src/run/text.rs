//! Assistant text rules: each piece of text exactly once (SPEC §1.1 rule 9) and the run's final
//! text without repeating what was already streamed (SPEC §5.4). Pure functions and a tiny state.

/// Tracks the deltas streamed since the last boundary so a consolidated or final segment that
/// repeats them is dropped.
#[derive(Debug, Default)]
pub struct SegmentDedupe {
    since_boundary: String,
}

impl SegmentDedupe {
    /// A per-token delta was emitted.
    pub fn on_delta(&mut self, text: &str) {
        self.since_boundary.push_str(text);
    }

    /// A consolidated/final segment arrived: returns the part of it that was not streamed yet
    /// (empty when it repeats the deltas), and starts a new boundary.
    pub fn on_segment<'a>(&mut self, segment: &'a str) -> &'a str {
        let streamed = std::mem::take(&mut self.since_boundary);
        new_part(&streamed, segment)
    }
}

/// The part of `incoming` that is not already in `emitted`: all of it when nothing was emitted;
/// nothing when it equals (whitespace aside) or is contained at the end of what was emitted; the
/// remainder when it extends what was emitted; nothing (and the caller records a mismatch) when
/// the two disagree, because text that was shown cannot be taken back and must not be repeated.
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
    // Prefix match modulo whitespace: find where `emitted` ends inside `incoming`.
    if let Some(end) = prefix_end_ignoring_whitespace(emitted, incoming) {
        return &incoming[end..];
    }
    ""
}

/// Whether `incoming` adds text that `new_part` would have to drop because it disagrees.
pub fn is_mismatch(emitted: &str, incoming: &str) -> bool {
    !emitted.is_empty()
        && new_part(emitted, incoming).is_empty()
        && !same_ignoring_whitespace(emitted, incoming)
        && !ends_with_ignoring_whitespace(emitted, incoming)
        && incoming.strip_prefix(emitted).is_none()
}

fn non_ws(s: &str) -> impl DoubleEndedIterator<Item = char> + '_ {
    s.chars().filter(|c| !c.is_whitespace())
}

pub fn same_ignoring_whitespace(a: &str, b: &str) -> bool {
    non_ws(a).eq(non_ws(b))
}

fn ends_with_ignoring_whitespace(haystack: &str, needle: &str) -> bool {
    let mut h = non_ws(haystack).rev();
    let mut n = non_ws(needle).rev().peekable();
    if n.peek().is_none() {
        return true;
    }
    for c in n {
        if h.next() != Some(c) {
            return false;
        }
    }
    true
}

/// Byte index in `incoming` just past the characters that match all of `emitted`, ignoring
/// whitespace on both sides; `None` when `emitted` is not such a prefix.
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // SPEC §5.4 example.
        assert_eq!(new_part("Disconnect", "Disconnecting the CDP session..."), "ing the CDP session...");
        assert_eq!(new_part("a b", "a b"), "");
        assert_eq!(new_part("a\nb ", "a b"), "");
        assert_eq!(new_part("", "x"), "x");
        // The result holds only the last segment.
        assert_eq!(new_part("First part.Final answer", "Final answer"), "");
        assert_eq!(new_part("one two", "one  two three"), " three");
        assert_eq!(new_part("abc", "xyz"), "");
        assert!(is_mismatch("abc", "xyz"));
        assert!(!is_mismatch("abc", "abc"));
        assert!(!is_mismatch("", "abc"));
    }
}
