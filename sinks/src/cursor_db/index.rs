//! Cursor 3.x's conversation index (`ItemTable` `composer.composerHeaders`, one JSON value listing
//! every conversation's header) as the sink keeps it while it writes: read once per transaction,
//! each conversation's entry added or replaced (replaced: removed where it was and appended, as
//! Cursor does when a conversation is updated), and written back once, just before the commit.
//! Writing N conversations costs O(N), not the O(N²) of rewriting the whole list per run.
//!
//! The entries are not kept in process memory: they wait in a `TEMP` table of the sink's
//! connection ([`STAGING`]: `seq` gives their order, a replaced entry is deleted and inserted with
//! a new, last `seq`), as their JSON text, not parsed; SQLite keeps that table in a temporary file
//! behind its bounded page cache. Reading the stored index parses one entry at a time into it. At
//! the commit the value is written piece by piece in `seq` order
//! ([`schema::put_in_pieces`](super::schema::put_in_pieces)), never built here. The value written
//! is the one rewriting the parsed index would give: every other field kept, keys in
//! `serde_json`'s (sorted) order, compact.

use std::cell::RefCell;
use std::fmt;
use std::io::Write;

use rusqlite::Connection;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::schema::{self, PiecesError, Table};
use toolstream_schemas::cursor_bubble::HEADERS_KEY;

/// The index's entry list (`allComposers`).
const ALL_COMPOSERS: &str = "allComposers";

/// The entries while a transaction runs: `seq` their order, `id` the conversation (`NULL` for an
/// entry without a `composerId`), `entry` its JSON text.
const STAGING: &str = "toolstream_composer_headers";

/// Why the stored index could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It is not an index (it is then left alone).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// The index, as read at the start of a transaction and updated since: its other fields here,
/// its entries in [`STAGING`].
#[derive(Debug, Default)]
pub struct HeadersIndex {
    /// The index's other fields, as they were.
    rest: Map<String, Value>,
    /// Changed since it was read.
    dirty: bool,
}

impl HeadersIndex {
    /// The index from its stored JSON (`None`: the row does not exist yet), its entries put in
    /// [`STAGING`] (emptied first) one by one.
    pub fn read(conn: &Connection, raw: Option<&str>) -> Result<HeadersIndex, ReadError> {
        conn.execute_batch(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS {STAGING} (seq INTEGER PRIMARY KEY, id TEXT, entry TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS temp.{STAGING}_id ON {STAGING} (id);
             DELETE FROM temp.{STAGING};"
        ))?;
        let Some(raw) = raw else { return Ok(HeadersIndex::default()) };
        let failed = RefCell::new(None);
        let mut de = serde_json::Deserializer::from_str(raw);
        let parsed = IndexSeed { conn, failed: &failed }.deserialize(&mut de);
        if let Some(e) = failed.into_inner() {
            return Err(ReadError::Sql(e));
        }
        let rest = parsed?;
        // Only whitespace may follow the value (as `serde_json::from_str` requires).
        de.end()?;
        Ok(HeadersIndex { rest, dirty: false })
    }

    /// Add conversation `id`'s entry, in place of any it had, as the last one.
    pub fn put(&mut self, conn: &Connection, id: &str, head: &Value) -> rusqlite::Result<()> {
        conn.prepare_cached(&format!("DELETE FROM temp.{STAGING} WHERE id = ?1"))?.execute([id])?;
        stage(conn, Some(id), &head.to_string())?;
        self.dirty = true;
        Ok(())
    }

    /// Whether it changed since it was read.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Write the index as the value of `ItemTable` `composer.composerHeaders`, entry by entry,
    /// and empty [`STAGING`].
    pub fn write(self, conn: &Connection) -> Result<(), PiecesError> {
        let (before, after) = self.wrapper();
        let (entries, count): (i64, i64) = conn.query_row(
            &format!("SELECT coalesce(sum(length(CAST(entry AS BLOB))), 0), count(*) FROM temp.{STAGING}"),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let separators = (count - 1).max(0);
        let len = before.len() as u64 + after.len() as u64 + u64::try_from(entries + separators).unwrap_or(0);
        schema::put_in_pieces(conn, Table::Items, HEADERS_KEY, len, |out| write_entries(conn, &before, &after, out))?;
        conn.execute_batch(&format!("DELETE FROM temp.{STAGING}"))?;
        Ok(())
    }

    /// The value's text before its entries (up to `"allComposers":[`) and after them (from `]`):
    /// the other fields in key order, around the entry list.
    fn wrapper(&self) -> (String, String) {
        let field = |key: &str, value: &Value| format!("{}:{value}", Value::from(key));
        let mut before: Vec<String> = Vec::new();
        let mut after: Vec<String> = Vec::new();
        for (key, value) in &self.rest {
            if key.as_str() < ALL_COMPOSERS { &mut before } else { &mut after }.push(field(key, value));
        }
        before.push(format!("{}:[", Value::from(ALL_COMPOSERS)));
        let before = format!("{{{}", before.join(","));
        let after: String = after.iter().map(|f| format!(",{f}")).collect();
        (before, format!("]{after}}}"))
    }
}

/// Append one entry to [`STAGING`].
fn stage(conn: &Connection, id: Option<&str>, entry: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!("INSERT INTO temp.{STAGING} (id, entry) VALUES (?1, ?2)"))?
        .execute(rusqlite::params![id, entry])?;
    Ok(())
}

/// `before`, the staged entries in order separated by commas, `after`.
fn write_entries(conn: &Connection, before: &str, after: &str, out: &mut dyn Write) -> Result<(), PiecesError> {
    out.write_all(before.as_bytes())?;
    let mut stmt = conn.prepare_cached(&format!("SELECT entry FROM temp.{STAGING} ORDER BY seq"))?;
    let mut rows = stmt.query([])?;
    let mut first = true;
    while let Some(row) = rows.next()? {
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        out.write_all(row.get_ref(0)?.as_bytes().map_err(rusqlite::Error::from)?)?;
    }
    out.write_all(after.as_bytes())?;
    Ok(())
}

/// Reads the stored index: its `allComposers` entries into [`STAGING`] as they are parsed, its
/// other fields returned. What it accepts is what `ComposerHeaders` accepts (an object; the list
/// absent, `null` or an array; each entry any JSON value).
struct IndexSeed<'a> {
    conn: &'a Connection,
    /// The SQL error that stopped the parse.
    failed: &'a RefCell<Option<rusqlite::Error>>,
}

impl<'de> DeserializeSeed<'de> for IndexSeed<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IndexSeed<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the conversation index (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rest = Map::new();
        let mut listed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == ALL_COMPOSERS {
                if listed {
                    return Err(de::Error::duplicate_field(ALL_COMPOSERS));
                }
                listed = true;
                map.next_value_seed(Entries { conn: self.conn, failed: self.failed })?;
            } else {
                let value: Value = map.next_value()?;
                rest.insert(key, value);
            }
        }
        Ok(rest)
    }
}

/// `allComposers`: `null`, or a list whose entries go to [`STAGING`] one at a time.
struct Entries<'a> {
    conn: &'a Connection,
    failed: &'a RefCell<Option<rusqlite::Error>>,
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the list of conversation headers")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<Value>()? {
            let id = entry.get("composerId").and_then(Value::as_str);
            if let Err(e) = stage(self.conn, id, &entry.to_string()) {
                *self.failed.borrow_mut() = Some(e);
                return Err(de::Error::custom("could not stage an entry"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolstream_schemas::cursor_bubble::ComposerHeaders;

    /// A new database with Cursor's tables, holding `stored` as the index when given.
    fn db(stored: Option<&str>) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        schema::ensure(&conn).unwrap();
        if let Some(raw) = stored {
            schema::put(&conn, Table::Items, HEADERS_KEY, raw).unwrap();
        }
        conn
    }

    fn read(conn: &Connection) -> HeadersIndex {
        let raw = schema::get(conn, Table::Items, HEADERS_KEY).unwrap();
        HeadersIndex::read(conn, raw.as_deref()).unwrap()
    }

    /// The stored index, checked to be TEXT (as `schema::put` writes it).
    fn stored(conn: &Connection) -> String {
        let (kind, value): (String, String) = conn
            .query_row("SELECT typeof(value), value FROM ItemTable WHERE key = ?1", [HEADERS_KEY], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(kind, "text");
        value
    }

    fn staged(conn: &Connection) -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM temp.{STAGING}"), [], |r| r.get(0)).unwrap()
    }

    /// What the sink wrote before the index was kept aside: the whole index parsed, each put
    /// dropping the id's entries and appending, the whole value serialized.
    fn rewrite(raw: Option<&str>, puts: &[(String, Value)]) -> String {
        let mut headers: ComposerHeaders = raw.map(|r| serde_json::from_str(r).unwrap()).unwrap_or_default();
        let all = headers.all_composers.get_or_insert_with(Vec::new);
        for (id, head) in puts {
            all.retain(|h| h.get("composerId").and_then(Value::as_str) != Some(id.as_str()));
            all.push(head.clone());
        }
        serde_json::to_value(&headers).unwrap().to_string()
    }

    fn head(id: &str, t: u64) -> Value {
        json!({"type": "head", "composerId": id, "name": format!("n {id}"), "lastUpdatedAt": t, "createdAt": 1})
    }

    #[test]
    fn updates_give_what_rewriting_the_whole_index_gave() {
        let stored_index = json!({
            "selectedComposerIds": ["b"],
            "allComposers": [head("a", 1), {"composerId": "b", "z": 1, "a": [1.5, null]}, head("a", 2), {"no": "id"}, null],
            "zzz": {"y": 1, "x": 2},
            "a": true,
        })
        .to_string();
        let puts: Vec<(String, Value)> =
            [("a", 10), ("c", 11), ("b", 12), ("c", 13), ("a", 14)].map(|(id, t)| (id.to_owned(), head(id, t))).into();
        for start in [None, Some(stored_index.as_str()), Some("{}"), Some(r#"{"allComposers":null}"#)] {
            // All the updates in one transaction, written once.
            let conn = db(start);
            let mut index = read(&conn);
            for (id, h) in &puts {
                index.put(&conn, id, h).unwrap();
            }
            assert!(index.is_dirty());
            index.write(&conn).unwrap();
            assert_eq!(stored(&conn), rewrite(start, &puts), "{start:?}");
            assert_eq!(staged(&conn), 0, "emptied once written");
            // One transaction per update: each reads back what the one before wrote.
            let conn = db(start);
            for (n, (id, h)) in puts.iter().enumerate() {
                let mut index = read(&conn);
                index.put(&conn, id, h).unwrap();
                index.write(&conn).unwrap();
                assert_eq!(stored(&conn), rewrite(start, &puts[..=n]), "{start:?} after {n}");
            }
        }
    }

    #[test]
    fn a_generated_index_streams_to_the_value_the_whole_index_gave() {
        // Entries of varied shape and size (escapes, non-ASCII, numbers, nesting, no id, ids
        // listed twice), fields on both sides of the list, then updates of old and new ids.
        let mut state = 0x2545_f491_u64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let entries: Vec<Value> = (0..3_000)
            .map(|i| {
                let id = format!("id-{}", next(2_500));
                match next(10) {
                    0 => json!({"name": "no id"}),
                    1 => json!(i),
                    _ => json!({
                        "composerId": id,
                        "name": format!("chat \"{i}\" é 🦀 \n{}", "x".repeat(next(400) as usize)),
                        "lastUpdatedAt": next(1 << 40),
                        "ratio": next(1000) as f64 / 7.0,
                        "workspaceIdentifier": {"uri": {"fsPath": format!("/w/{i}")}},
                    }),
                }
            })
            .collect();
        let stored_index =
            json!({"allComposers": entries, "a": [1, {"b": null}], "zz": "last", "hasMigrated": true}).to_string();
        let puts: Vec<(String, Value)> = (0..2_000)
            .map(|t| {
                let id = format!("id-{}", next(3_000));
                let h = head(&id, t);
                (id, h)
            })
            .collect();
        let conn = db(Some(&stored_index));
        let mut index = read(&conn);
        for (id, h) in &puts {
            index.put(&conn, id, h).unwrap();
        }
        index.write(&conn).unwrap();
        assert_eq!(stored(&conn), rewrite(Some(&stored_index), &puts));
    }

    #[test]
    fn many_replacements_keep_one_entry_each_in_order() {
        let conn = db(None);
        let mut index = read(&conn);
        for round in 0..1_000u64 {
            for id in ["x", "y", "z"] {
                index.put(&conn, id, &head(id, round)).unwrap();
            }
        }
        assert_eq!(staged(&conn), 3);
        index.write(&conn).unwrap();
        let all: Value = serde_json::from_str(&stored(&conn)).unwrap();
        let ids: Vec<&str> =
            all["allComposers"].as_array().unwrap().iter().map(|h| h["composerId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["x", "y", "z"]);
        assert_eq!(all["allComposers"][2]["lastUpdatedAt"], 999);
    }

    #[test]
    fn reads_what_the_index_model_reads_and_refuses_what_it_refuses() {
        for raw in [
            "not json",
            r#"{"allComposers": {}}"#,
            r#"{"allComposers": [], "allComposers": []}"#,
            "[]",
            "null",
            "{} x",
            "{}",
            " {\"allComposers\": [1, \"two\", {\"composerId\": 3}]} \n",
        ] {
            let conn = db(None);
            let ours = HeadersIndex::read(&conn, Some(raw));
            let model = serde_json::from_str::<ComposerHeaders>(raw);
            assert_eq!(ours.is_ok(), model.is_ok(), "{raw}: {ours:?} / {model:?}");
            if let Ok(mut index) = ours {
                assert!(!index.is_dirty());
                let put = [("new".to_owned(), head("new", 1))];
                index.put(&conn, &put[0].0, &put[0].1).unwrap();
                index.write(&conn).unwrap();
                assert_eq!(stored(&conn), rewrite(Some(raw), &put), "{raw}");
            }
        }
    }
}
