//! Identifiers shown in outputs: call ids only as `sha256(call_id)` first 8 hex (a raw call id is
//! never printed), and the short run label used in replay ids.

use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// Identifies one run: the session plus the run's ordinal within it (1-based).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RunId {
    pub session: Arc<str>,
    pub seq: u32,
}

/// A call as outputs name it: never the raw id, only its hash (SPEC §1.1 rule 2, §9.3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct CallRef {
    /// First 8 hex digits of `sha256(call_id)`.
    pub hash: String,
}

/// First 8 hex digits of `sha256(s)`.
pub fn hash8(s: &str) -> String {
    let digest = Sha256::digest(s.as_bytes());
    hex8(u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]))
}

/// `v` as 8 lowercase hex digits (what `format!("{v:08x}")` writes, without its cost).
pub fn hex8(v: u32) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(8);
    for i in (0..8).rev() {
        s.push(char::from(DIGITS[((v >> (i * 4)) & 0xf) as usize]));
    }
    s
}

/// How outputs refer to a call.
pub fn call_ref(call_id: &str) -> CallRef {
    CallRef { hash: hash8(call_id) }
}

/// `<hash8(session)>-<seq>`: short, stable, and unique per run within a session.
pub fn run_label(session: &str, seq: u32) -> String {
    format!("{}-{seq}", hash8(session))
}

impl RunId {
    /// The run's short label (see [`run_label`]); used in replay ids and traces.
    pub fn label(&self) -> String {
        run_label(&self.session, self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sha256_prefixes() {
        // sha256("abc") = ba7816bf…
        assert_eq!(hash8("abc"), "ba7816bf");
        assert_eq!(call_ref("abc").hash, "ba7816bf");
        assert_eq!(run_label("abc", 2), "ba7816bf-2");
    }

    #[test]
    fn hex8_writes_what_format_writes() {
        for v in [0, 1, 0xf, 0xa0b1_c2d3, 0x0000_ffff, u32::MAX, 0x8000_0000] {
            assert_eq!(hex8(v), format!("{v:08x}"));
        }
    }
}
