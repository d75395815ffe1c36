//! Rule 1 of SPEC §8: the secrets the engine knows exactly (the configured Cursor API key, the
//! OpenAI server's key, a run's bridge token) → `[redacted]`, everywhere — the assistant's own
//! text and thinking too. [`SecretStream`] does it to text that arrives in pieces (streamed
//! deltas): a piece that ends with a possible start of a secret keeps that end back until the
//! next piece (or the end of the block) says whether the secret is there.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};

use super::text::{marker_spans, overlaps, Rewriter};
use super::REDACTED;
use toolstream_schemas::Delta;

/// The exact secrets, leftmost-longest (a key inside a longer key goes with the longer one).
#[derive(Debug)]
pub struct KnownSecrets {
    automaton: AhoCorasick,
    secrets: Vec<String>,
    longest: usize,
}

impl KnownSecrets {
    /// `None` when there is no secret (or the automaton cannot be built, which only a
    /// pathological number of huge secrets could cause; the caller then keeps no exact rule).
    pub fn new(secrets: Vec<String>) -> Option<KnownSecrets> {
        if secrets.is_empty() {
            return None;
        }
        let automaton = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&secrets);
        let automaton = match automaton {
            Ok(a) => a,
            Err(e) => {
                tracing::error!("cannot match the configured secrets: {e}");
                return None;
            }
        };
        let longest = secrets.iter().map(String::len).max().unwrap_or(0);
        Some(KnownSecrets { automaton, secrets, longest })
    }

    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Every occurrence → `[redacted]`. Occurrences overlapping an existing marker are left
    /// alone, which keeps scrubbing idempotent even for a secret that shares text with
    /// `[redacted]`.
    pub fn scrub(&self, s: &str) -> Option<String> {
        let first = self.automaton.find(s)?;
        let markers = marker_spans(s);
        let mut rw = Rewriter::new(s);
        let mut next = Some((first.start(), first.end()));
        while let Some((start, end)) = next {
            let from = if overlaps(&markers, start, end) {
                start + s[start..].chars().next().map_or(1, char::len_utf8)
            } else {
                rw.replace(start, end, REDACTED);
                end
            };
            next = self.automaton.find(&s[from..]).map(|m| (from + m.start(), from + m.end()));
        }
        rw.finish()
    }

    /// Where the part of `text` that may still become a secret with more text starts: the
    /// earliest position from which the rest is a proper prefix of a secret, moved back to the
    /// start of a whole secret that spans it. `text.len()` when nothing needs to wait.
    fn hold_from(&self, text: &str) -> usize {
        let b = text.as_bytes();
        let lo = b.len().saturating_sub(self.longest.saturating_sub(1));
        let partial = (lo..b.len()).find(|&p| {
            text.is_char_boundary(p)
                && self.secrets.iter().any(|s| s.len() > b.len() - p && s.as_bytes().starts_with(&b[p..]))
        });
        let Some(mut p) = partial else { return b.len() };
        for m in self.automaton.find_iter(text) {
            if m.start() >= p {
                break;
            }
            if m.end() > p {
                p = m.start();
                break;
            }
        }
        p
    }
}

/// Known secrets removed from text that arrives in pieces. With no known secret it passes every
/// piece through untouched and keeps nothing back.
#[derive(Debug, Default)]
pub struct SecretStream {
    known: Option<Arc<KnownSecrets>>,
    held: String,
}

impl SecretStream {
    pub(super) fn new(known: Option<Arc<KnownSecrets>>) -> Self {
        SecretStream { known, held: String::new() }
    }

    /// The next piece; returns what can be passed on now (maybe nothing: a possible start of a
    /// secret waits for the next piece).
    pub fn push(&mut self, piece: Delta) -> Delta {
        let Some(known) = &self.known else { return piece };
        let mut text = if self.held.is_empty() { piece } else { Delta::from(std::mem::take(&mut self.held)) + &piece };
        let p = known.hold_from(&text);
        self.held.push_str(&text[p..]);
        text.truncate(p);
        known.scrub(&text).map_or(text, Delta::from)
    }

    /// What was kept back, at the stream's end (or its block's): no longer secret can start in
    /// it, so its own whole secrets are removed and the rest passes.
    pub fn flush(&mut self) -> Delta {
        let held = std::mem::take(&mut self.held);
        match &self.known {
            Some(known) => known.scrub(&held).unwrap_or(held).into(),
            None => held.into(),
        }
    }

    /// Whether text is kept back.
    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }
}
