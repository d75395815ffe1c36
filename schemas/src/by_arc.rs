//! State kept per session (or per run), found by the address of the `Arc` each event carries:
//! the reading thread interns a session's id and clones its `Arc` for every event it decodes (a
//! run stage makes one `Arc` per run for all of its outputs), so the lines of that `Arc` move
//! between the cores all the time. A lookup by address reads neither the id nor its count; only
//! an `Arc` not seen yet (a new session, or the same id interned again) is looked up by the id.
//! The stages keep their per-session and per-run state in it, and so do sinks that follow runs.

use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// Values by an `Arc`'d key (a session's id, a run's id), found by the key's address.
#[derive(Debug)]
pub struct ByArc<K: ?Sized, V> {
    /// The slot of each entry, by the address of the `Arc` it is kept under: one probe finds
    /// the entry of an item's own `Arc`.
    slot_at: FxHashMap<usize, usize>,
    /// The slot of each entry, by key: this key is the `Arc` of that address (held here, the
    /// address cannot be reused while the entry lives). An item that carries another `Arc` of a
    /// present key finds its entry through it.
    slot_of: FxHashMap<Arc<K>, usize>,
    /// The values; `None` in a slot that is free (listed in `free`) or not yet filled.
    slots: Vec<Option<V>>,
    free: Vec<usize>,
}

impl<K: ?Sized, V> Default for ByArc<K, V> {
    fn default() -> Self {
        ByArc { slot_at: FxHashMap::default(), slot_of: FxHashMap::default(), slots: Vec::new(), free: Vec::new() }
    }
}

impl<K: ?Sized + Hash + Eq, V> ByArc<K, V> {
    /// The slot of `key`'s entry, if it has one.
    fn find(&self, key: &Arc<K>) -> Option<usize> {
        match self.slot_at.get(&address(key)) {
            Some(&i) => Some(i),
            None => self.slot_of.get(key).copied(),
        }
    }

    pub fn get(&self, key: &Arc<K>) -> Option<&V> {
        self.slots.get(self.find(key)?)?.as_ref()
    }

    pub fn get_mut(&mut self, key: &Arc<K>) -> Option<&mut V> {
        let i = self.find(key)?;
        self.slots.get_mut(i)?.as_mut()
    }

    pub fn contains_key(&self, key: &Arc<K>) -> bool {
        self.find(key).is_some()
    }

    /// The slot of `key`'s entry, or a new one for it, kept under its own `Arc` (cloned once,
    /// here).
    fn slot(&mut self, key: &Arc<K>) -> usize {
        if let Some(i) = self.find(key) {
            return i;
        }
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slot_at.insert(address(key), i);
        self.slot_of.insert(key.clone(), i);
        i
    }

    /// The value of `key`, made by `make` when it has none.
    pub fn state_of(&mut self, key: &Arc<K>, make: impl FnOnce() -> V) -> &mut V {
        let i = self.slot(key);
        // `slot` returns an index of `slots`; an empty one is filled here.
        let slot = &mut self.slots[i];
        slot.get_or_insert_with(make)
    }

    /// Set the value of `key`.
    pub fn insert(&mut self, key: &Arc<K>, value: V) {
        let i = self.slot(key);
        self.slots[i] = Some(value);
    }

    /// Take the value of `key` out.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (kept, i) = self.slot_of.remove_entry(key)?;
        self.slot_at.remove(&address(&kept));
        self.free.push(i);
        self.slots.get_mut(i)?.take()
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Every key, in no order.
    pub fn keys(&self) -> impl Iterator<Item = &Arc<K>> {
        self.slot_of.keys()
    }

    /// Every entry, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<K>, &V)> {
        self.slot_of.iter().filter_map(|(k, &i)| Some((k, self.slots.get(i)?.as_ref()?)))
    }

    /// Every value, in no order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten()
    }

    pub fn clear(&mut self) {
        self.slot_at.clear();
        self.slot_of.clear();
        self.slots.clear();
        self.free.clear();
    }
}

fn address<K: ?Sized>(key: &Arc<K>) -> usize {
    Arc::as_ptr(key).cast::<u8>() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arc(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    #[test]
    fn an_entry_is_found_by_its_arc_and_by_another_arc_of_its_key() {
        let mut map = ByArc::<str, u32>::default();
        let a = arc("s");
        *map.state_of(&a, || 0) += 7;
        assert_eq!(Arc::strong_count(&a), 2, "the new entry holds one clone");
        assert_eq!(map.get(&a), Some(&7));
        assert_eq!(map.get(&arc("s")), Some(&7), "another Arc of the same key");
        *map.state_of(&arc("s"), || 0) += 1;
        assert_eq!(map.get(&a), Some(&8));
        assert_eq!(Arc::strong_count(&a), 2, "lookups clone nothing");
        assert_eq!(map.get(&arc("t")), None, "another key");
        assert!(!map.contains_key(&arc("t")));
        assert_eq!(map.keys().count(), 1);
    }

    #[test]
    fn a_removed_key_starts_over_whichever_arc_comes_next() {
        let mut map = ByArc::<str, u32>::default();
        let a = arc("s");
        map.insert(&a, 7);
        assert_eq!(map.remove("s"), Some(7));
        assert_eq!(map.get(&a), None);
        map.insert(&a, 8);
        drop(a);
        // The first Arc is gone with the entry's clone still held: another Arc finds it.
        assert_eq!(map.get(&arc("s")), Some(&8));
        assert_eq!(map.remove("s"), Some(8));
        assert!(map.slot_at.is_empty() && map.slot_of.is_empty() && map.values().next().is_none());
    }

    proptest::proptest! {
        /// Any run of inserts, updates, removals and lookups, through the first `Arc` of a key
        /// or another one, gives what a map by the key's own value gives.
        #[test]
        fn it_behaves_as_a_map_by_key(ops in proptest::collection::vec((0u8..4, 0u8..6, proptest::prelude::any::<bool>(), 0u32..100), 0..200)) {
            let mut map = ByArc::<str, u32>::default();
            let mut model = std::collections::HashMap::<String, u32>::new();
            let firsts: Vec<Arc<str>> = (0..6).map(|k| arc(&format!("k{k}"))).collect();
            for (op, k, fresh, v) in ops {
                let key = if fresh { arc(&format!("k{k}")) } else { firsts[usize::from(k)].clone() };
                let name = format!("k{k}");
                match op {
                    0 => {
                        map.insert(&key, v);
                        model.insert(name, v);
                    }
                    1 => {
                        *map.state_of(&key, || v) += 1;
                        *model.entry(name).or_insert(v) += 1;
                    }
                    2 => proptest::prop_assert_eq!(map.remove(&key), model.remove(&name)),
                    _ => proptest::prop_assert_eq!(map.get(&key).copied(), model.get(&name).copied()),
                }
                proptest::prop_assert_eq!(map.values().count(), model.len());
                proptest::prop_assert_eq!(map.keys().count(), model.len());
            }
        }
    }

    #[test]
    fn an_address_is_never_taken_for_another_key() {
        // An entry holds its key's Arc, so no other live Arc can have its address: a key whose
        // first Arc was dropped by every item is still found only by its own id.
        let mut map = ByArc::<str, u32>::default();
        for i in 0..1000u32 {
            let key = arc(&format!("session-{i}"));
            map.insert(&key, i);
        }
        for i in 0..1000u32 {
            assert_eq!(map.get(&arc(&format!("session-{i}"))), Some(&i));
        }
        map.clear();
        assert_eq!(map.values().count(), 0);
    }
}
