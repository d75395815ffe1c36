//! Deterministic identifiers and times for session files: ISO-8601 timestamps of event time, a
//! UUID v7 from the first event time plus hash bits, and unique 8-hex entry ids from hashes —
//! never the wall clock or a random source, so a replay writes the same file every time.

use toolstream_schemas::ids::{hash8, hex8};

/// ISO-8601 of unix ms, as JavaScript writes it (one implementation, in the schemas crate).
pub use toolstream_schemas::iso_time::format_ms as iso;

/// 32 bits of `sha256(s)` as a number.
fn bits32(s: &str) -> u64 {
    u64::from_str_radix(&hash8(s), 16).unwrap_or(0)
}

/// A UUID v7 (RFC 9562): the 48-bit unix-ms timestamp `ms`, then 74 bits derived from `seed`.
pub fn uuid_v7(ms: u64, seed: &str) -> String {
    let ts = ms & 0xffff_ffff_ffff;
    let rand_a = bits32(&format!("{seed}/a")) & 0xfff;
    let rand_b = ((bits32(&format!("{seed}/b")) << 32) | bits32(&format!("{seed}/c"))) & 0x3fff_ffff_ffff_ffff;
    let hi = (ts << 16) | 0x7000 | rand_a; // 48 bits time, version 7, 12 bits
    let lo = (0b10 << 62) | rand_b; // variant 10, 62 bits
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// Hands out unique 8-hex entry ids, derived from the session and a counter.
#[derive(Clone, Debug, Default)]
pub struct EntryIds {
    /// Mixed into every id, from the session id.
    key: u32,
    next: u32,
}

impl EntryIds {
    pub fn new(seed: &str) -> Self {
        let h = hash8(seed);
        EntryIds { key: u32::from_str_radix(&h, 16).unwrap_or(0), next: 0 }
    }

    /// The next id: an odd-multiplier permutation of a counter, offset by the session's key — a
    /// bijection on 32 bits, so ids never repeat (for 2³² entries) without remembering them.
    pub fn next_id(&mut self) -> String {
        let n = self.next;
        self.next = self.next.wrapping_add(1);
        let x = n.wrapping_mul(0x9E37_79B1).wrapping_add(self.key);
        let x = (x ^ (x >> 15)).wrapping_mul(0x2C1B_3C6D); // still a bijection: xorshift, odd multiply
        hex8(x ^ (x >> 12))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn uuid_v7_layout() {
        let u = uuid_v7(1_794_300_000_040, "seed");
        assert_eq!(u.len(), 36);
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        // The first 48 bits are the timestamp.
        assert_eq!(u64::from_str_radix(&format!("{}{}", parts[0], parts[1]), 16).unwrap(), 1_794_300_000_040);
        assert!(parts[2].starts_with('7'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        assert_eq!(u, uuid_v7(1_794_300_000_040, "seed"), "deterministic");
        assert_ne!(u, uuid_v7(1_794_300_000_040, "other"));
    }

    #[test]
    fn entry_ids_are_unique_hex8() {
        let mut ids = EntryIds::new("x");
        let all: Vec<String> = (0..5000).map(|_| ids.next_id()).collect();
        let set: HashSet<&String> = all.iter().collect();
        assert_eq!(set.len(), all.len());
        assert!(all.iter().all(|i| i.len() == 8 && i.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}
