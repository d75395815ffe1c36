//! State kept per session, looked up without touching the session's `Arc` count: the reading
//! thread clones that `Arc` for every event it decodes, so every clone or drop of it on a shard
//! takes its cache line from the other core. Only a new entry clones the key.

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// The state of `session` in `map`, made by `make` when it has none.
pub(crate) fn state_of<'a, V>(
    map: &'a mut FxHashMap<Arc<str>, V>,
    session: &Arc<str>,
    make: impl FnOnce() -> V,
) -> &'a mut V {
    if !map.contains_key(session) {
        map.insert(session.clone(), make());
    }
    // Present: inserted just above. (`entry` would clone the key for every lookup.)
    #[allow(clippy::expect_used)]
    map.get_mut(session).expect("inserted above")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_entry_is_found_without_cloning_its_key() {
        let mut map = FxHashMap::default();
        let s: Arc<str> = Arc::from("s");
        *state_of(&mut map, &s, || 0) += 1;
        assert_eq!(Arc::strong_count(&s), 2, "the new entry holds one clone");
        *state_of(&mut map, &s, || 0) += 1;
        *state_of(&mut map, &Arc::from("s"), || 0) += 1;
        assert_eq!(Arc::strong_count(&s), 2, "a lookup clones nothing");
        assert_eq!(map.get("s"), Some(&3), "another Arc of the same id finds the same state");
    }
}
