//! Cursor 3.x's conversation index (`ItemTable` `composer.composerHeaders`, one JSON value listing
//! every conversation's header) as the sink keeps it while it writes: read once per transaction,
//! each conversation's entry added or replaced in memory (replaced: removed where it was and
//! appended, as Cursor does when a conversation is updated), and written back once, just before the
//! commit. Writing N conversations costs O(N), not the O(N²) of rewriting the whole list per run.
//! Entries are kept as their JSON text, not parsed (a few hundred bytes per conversation). The
//! value written is the one rewriting the parsed index would give: every other field kept, keys in
//! `serde_json`'s (sorted) order, compact.

use std::collections::HashMap;

use serde_json::{Map, Value};
use toolstream_schemas::cursor_bubble::ComposerHeaders;

/// The index's entry list (`allComposers`).
const ALL_COMPOSERS: &str = "allComposers";

/// The index, as read at the start of a transaction and updated since.
#[derive(Clone, Debug, Default)]
pub struct HeadersIndex {
    /// The index's other fields, as they were.
    rest: Map<String, Value>,
    /// Entries in order, as JSON text; `None`: replaced by a later entry.
    entries: Vec<Option<Box<str>>>,
    /// Where each conversation's entries are (an index read from a file may list one twice).
    by_id: HashMap<String, Vec<usize>>,
    /// Entries in `entries` that are not `None`.
    live: usize,
    /// Changed since it was read.
    dirty: bool,
}

impl HeadersIndex {
    /// The index from its stored JSON (`None`: the row does not exist yet).
    pub fn parse(raw: Option<&str>) -> serde_json::Result<HeadersIndex> {
        let headers = match raw {
            Some(raw) => serde_json::from_str::<ComposerHeaders>(raw)?,
            None => ComposerHeaders::default(),
        };
        let mut index = HeadersIndex { rest: headers.extra, ..HeadersIndex::default() };
        for entry in headers.all_composers.into_iter().flatten() {
            let id = entry.get("composerId").and_then(Value::as_str).map(str::to_owned);
            index.append(id, entry.to_string().into_boxed_str());
        }
        Ok(index)
    }

    fn append(&mut self, id: Option<String>, json: Box<str>) {
        if let Some(id) = id {
            self.by_id.entry(id).or_default().push(self.entries.len());
        }
        self.entries.push(Some(json));
        self.live += 1;
    }

    /// Add conversation `id`'s entry, in place of any it had.
    pub fn put(&mut self, id: &str, head: &Value) {
        if let Some(at) = self.by_id.remove(id) {
            for i in at {
                if self.entries.get_mut(i).and_then(Option::take).is_some() {
                    self.live -= 1;
                }
            }
        }
        self.append(Some(id.to_owned()), head.to_string().into_boxed_str());
        self.dirty = true;
        // Replaced entries leave holes: close them once they outnumber the entries.
        if self.entries.len() > 2 * self.live + 64 {
            self.compact();
        }
    }

    fn compact(&mut self) {
        self.entries.retain(Option::is_some);
        self.by_id.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            let id = entry.as_deref().and_then(|json| {
                serde_json::from_str::<Value>(json).ok()?.get("composerId")?.as_str().map(str::to_owned)
            });
            if let Some(id) = id {
                self.by_id.entry(id).or_default().push(i);
            }
        }
    }

    /// Whether it changed since it was read.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The index as JSON text; each entry is let go once copied (the text and the entries are
    /// never both whole in memory).
    pub fn into_json(self) -> String {
        let HeadersIndex { rest, entries, by_id, .. } = self;
        drop(by_id);
        let size = entries.iter().flatten().map(|e| e.len() + 1).sum::<usize>() + 64;
        let mut out = String::with_capacity(size);
        let mut entries = Some(entries);
        out.push('{');
        let mut first = true;
        let mut field = |out: &mut String, key: &str| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&Value::from(key).to_string());
            out.push(':');
        };
        for (key, value) in &rest {
            if key.as_str() > ALL_COMPOSERS {
                if let Some(entries) = entries.take() {
                    field(&mut out, ALL_COMPOSERS);
                    write_entries(&mut out, entries);
                }
            }
            field(&mut out, key);
            out.push_str(&value.to_string());
        }
        if let Some(entries) = entries.take() {
            field(&mut out, ALL_COMPOSERS);
            write_entries(&mut out, entries);
        }
        out.push('}');
        out
    }
}

/// `[entry,entry,…]`, the entries freed as they are copied.
fn write_entries(out: &mut String, entries: Vec<Option<Box<str>>>) {
    out.push('[');
    for (i, entry) in entries.into_iter().flatten().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&entry);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the sink wrote before the index was kept in memory: parse, drop the id's entries,
    /// append, serialize the whole value.
    fn rewrite(raw: Option<&str>, id: &str, head: &Value) -> String {
        let mut headers: ComposerHeaders = raw.map(|r| serde_json::from_str(r).unwrap()).unwrap_or_default();
        let all = headers.all_composers.get_or_insert_with(Vec::new);
        all.retain(|h| h.get("composerId").and_then(Value::as_str) != Some(id));
        all.push(head.clone());
        serde_json::to_value(&headers).unwrap().to_string()
    }

    fn head(id: &str, t: u64) -> Value {
        json!({"type": "head", "composerId": id, "name": format!("n {id}"), "lastUpdatedAt": t, "createdAt": 1})
    }

    #[test]
    fn updates_give_what_rewriting_the_whole_index_gave() {
        let stored = json!({
            "selectedComposerIds": ["b"],
            "allComposers": [head("a", 1), {"composerId": "b", "z": 1, "a": [1.5, null]}, head("a", 2), {"no": "id"}],
            "zzz": {"y": 1, "x": 2},
            "a": true,
        })
        .to_string();
        for start in [None, Some(stored.as_str()), Some("{}"), Some(r#"{"allComposers":null}"#)] {
            let mut index = HeadersIndex::parse(start).unwrap();
            let mut want = start.map(str::to_owned);
            for (id, t) in [("a", 10), ("c", 11), ("b", 12), ("c", 13), ("a", 14)] {
                let h = head(id, t);
                want = Some(rewrite(want.as_deref(), id, &h));
                index.put(id, &h);
                assert_eq!(Some(index.clone().into_json()), want, "{start:?}");
            }
            assert!(index.is_dirty());
        }
    }

    #[test]
    fn many_replacements_stay_small_and_in_order() {
        let mut index = HeadersIndex::parse(None).unwrap();
        for round in 0..1_000u64 {
            for id in ["x", "y", "z"] {
                index.put(id, &head(id, round));
            }
        }
        assert!(index.entries.len() <= 2 * index.live + 64, "{}", index.entries.len());
        assert!(index.is_dirty());
        let all: Value = serde_json::from_str(&index.into_json()).unwrap();
        let ids: Vec<&str> =
            all["allComposers"].as_array().unwrap().iter().map(|h| h["composerId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["x", "y", "z"]);
        assert_eq!(all["allComposers"][2]["lastUpdatedAt"], 999);
    }

    #[test]
    fn an_unreadable_index_is_an_error() {
        assert!(HeadersIndex::parse(Some("not json")).is_err());
        assert!(HeadersIndex::parse(Some(r#"{"allComposers": {}}"#)).is_err());
        assert!(!HeadersIndex::parse(Some("{}")).unwrap().is_dirty());
    }
}
