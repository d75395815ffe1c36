//! State kept per session (or per run), found by the address of the `Arc` each item carries:
//! the reading thread interns a session's id and clones its `Arc` for every event it decodes (a
//! run stage makes one `Arc` per run for all of its outputs), so the lines of that `Arc` move
//! between the cores all the time. A lookup by address reads neither the id nor its count; only
//! an `Arc` not seen yet (a new session, or the same id interned again) is looked up by the id.

use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// Values by an `Arc`'d key (a session's id, a run's id), found by the key's address.
#[derive(Debug)]
pub(crate) struct ByArc<K: ?Sized, V> {
    /// By the address of the `Arc` each value is kept under.
    by_addr: FxHashMap<usize, V>,
    /// The address each value is kept under, by key: this key is the `Arc` of that address (held
    /// here, the address cannot be reused while the entry lives). An item that carries another
    /// `Arc` of a present key finds its entry through it.
    addr_of: FxHashMap<Arc<K>, usize>,
}

impl<K: ?Sized, V> Default for ByArc<K, V> {
    fn default() -> Self {
        ByArc { by_addr: FxHashMap::default(), addr_of: FxHashMap::default() }
    }
}

impl<K: ?Sized + Hash + Eq, V> ByArc<K, V> {
    /// Where the value of `key` is kept, if it has one.
    fn find(&self, key: &Arc<K>) -> Option<usize> {
        let addr = address(key);
        if self.by_addr.contains_key(&addr) {
            Some(addr)
        } else {
            self.addr_of.get(key).copied()
        }
    }

    pub(crate) fn get(&self, key: &Arc<K>) -> Option<&V> {
        self.by_addr.get(&self.find(key)?)
    }

    pub(crate) fn get_mut(&mut self, key: &Arc<K>) -> Option<&mut V> {
        let addr = self.find(key)?;
        self.by_addr.get_mut(&addr)
    }

    pub(crate) fn contains_key(&self, key: &Arc<K>) -> bool {
        self.find(key).is_some()
    }

    /// Where the value of `key` is kept, or is to be kept: a new key is kept under its own
    /// `Arc` (cloned once, here).
    fn slot(&mut self, key: &Arc<K>) -> usize {
        self.find(key).unwrap_or_else(|| {
            let addr = address(key);
            self.addr_of.insert(key.clone(), addr);
            addr
        })
    }

    /// The value of `key`, made by `make` when it has none.
    pub(crate) fn state_of(&mut self, key: &Arc<K>, make: impl FnOnce() -> V) -> &mut V {
        let addr = self.slot(key);
        self.by_addr.entry(addr).or_insert_with(make)
    }

    /// Set the value of `key`.
    pub(crate) fn insert(&mut self, key: &Arc<K>, value: V) {
        let addr = self.slot(key);
        self.by_addr.insert(addr, value);
    }

    /// Take the value of `key` out.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let addr = self.addr_of.remove(key)?;
        self.by_addr.remove(&addr)
    }

    /// Every key, in no order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Arc<K>> {
        self.addr_of.keys()
    }

    /// Every entry, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<K>, &V)> {
        self.addr_of.iter().filter_map(|(k, addr)| Some((k, self.by_addr.get(addr)?)))
    }

    /// Every value, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.by_addr.values()
    }

    pub(crate) fn clear(&mut self) {
        self.by_addr.clear();
        self.addr_of.clear();
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
        assert!(map.by_addr.is_empty() && map.addr_of.is_empty());
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
