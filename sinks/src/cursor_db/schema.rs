//! The tables of a Cursor chat database as Cursor creates them (`key TEXT UNIQUE ON CONFLICT
//! REPLACE, value BLOB`), created when absent, and the row writes the sink makes: each a
//! delete-then-insert, so a table without the unique constraint never holds a key twice.

use rusqlite::{Connection, OptionalExtension};

/// The tables, as Cursor declares them.
pub const CREATE_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
    CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
";

/// Create the tables when absent (a new file becomes an empty Cursor chat database).
pub fn ensure(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(CREATE_TABLES)
}

/// Which key-value table a row goes to.
#[derive(Clone, Copy, Debug)]
pub enum Table {
    /// `cursorDiskKV`: conversations and bubbles.
    DiskKv,
    /// `ItemTable`: the 3.x conversation index.
    Items,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::DiskKv => "cursorDiskKV",
            Table::Items => "ItemTable",
        }
    }
}

/// Set `key` to `value` (JSON text).
pub fn put(conn: &Connection, table: Table, key: &str, value: &str) -> rusqlite::Result<()> {
    let t = table.name();
    conn.prepare_cached(&format!("DELETE FROM {t} WHERE key = ?1"))?.execute([key])?;
    conn.prepare_cached(&format!("INSERT INTO {t} (key, value) VALUES (?1, ?2)"))?.execute([key, value])?;
    Ok(())
}

/// The value of `key`, as text.
pub fn get(conn: &Connection, table: Table, key: &str) -> rusqlite::Result<Option<String>> {
    let t = table.name();
    conn.prepare_cached(&format!("SELECT value FROM {t} WHERE key = ?1"))?
        .query_row([key], |r| {
            let v = r.get_ref(0)?;
            Ok(match v {
                rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                    String::from_utf8_lossy(b).into_owned()
                }
                _ => String::new(),
            })
        })
        .optional()
}
