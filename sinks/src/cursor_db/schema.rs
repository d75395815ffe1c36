//! The tables of a Cursor chat database as Cursor creates them (`key TEXT UNIQUE ON CONFLICT
//! REPLACE, value BLOB`), created when absent, and the row writes the sink makes: each a
//! delete-then-insert, so a table without the unique constraint never holds a key twice. A value
//! too large to hold in memory is written in pieces ([`put_in_pieces`]).

use std::io::{BufWriter, Write};

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

/// How many bytes [`put_in_pieces`] hands SQLite at a time.
const PIECE: usize = 64 * 1024;

/// Why a value written in pieces could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PiecesError {
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
    #[error("writing a value in pieces: {0}")]
    Io(#[from] std::io::Error),
    #[error("a value announced as {len} bytes was {written}")]
    Length { len: u64, written: u64 },
}

/// Set `key` to a TEXT value of exactly `len` bytes that `fill` writes in order, piece by piece:
/// the value is never whole in this process. The row is inserted as `len` spaces (SQLite makes
/// the text itself, holding it in its own memory while the row is inserted), then `fill` writes
/// over them through incremental blob I/O, which works on TEXT as well as BLOB values and keeps
/// the storage class (TEXT, as [`put`] writes and Cursor writes).
pub fn put_in_pieces(
    conn: &Connection,
    table: Table,
    key: &str,
    len: u64,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), PiecesError>,
) -> Result<(), PiecesError> {
    let t = table.name();
    conn.prepare_cached(&format!("DELETE FROM {t} WHERE key = ?1"))?.execute([key])?;
    let sql = format!("INSERT INTO {t} (key, value) VALUES (?1, printf('%.*c', ?2, ' '))");
    conn.prepare_cached(&sql)?.execute(rusqlite::params![key, len])?;
    let row = conn.last_insert_rowid();
    let mut blob = conn.blob_open("main", t, "value", row, false)?;
    let size = blob.len() as u64;
    if size != len {
        return Err(PiecesError::Length { len, written: size });
    }
    let mut out = Counted { inner: BufWriter::with_capacity(PIECE, &mut blob), written: 0 };
    fill(&mut out)?;
    out.inner.flush()?;
    if out.written != len {
        return Err(PiecesError::Length { len, written: out.written });
    }
    drop(out);
    blob.close()?;
    Ok(())
}

/// A writer that counts what it was given.
struct Counted<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        ensure(&conn).unwrap();
        conn
    }

    #[test]
    fn a_value_written_in_pieces_is_the_text_put_writes() {
        let (pieced, whole) = (db(), db());
        let pieces = ["{\"a\":[", "\"é🦀\"", &"x".repeat(3 * PIECE), "]}"];
        let text = pieces.concat();
        put_in_pieces(&pieced, Table::Items, "k", text.len() as u64, |out| {
            pieces.iter().try_for_each(|p| out.write_all(p.as_bytes())).map_err(PiecesError::from)
        })
        .unwrap();
        put(&whole, Table::Items, "k", &text).unwrap();
        let row = |c: &Connection| {
            c.query_row("SELECT typeof(value), value, count(*) FROM ItemTable", [], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
            })
            .unwrap()
        };
        assert_eq!(row(&pieced), row(&whole));
        assert_eq!(row(&pieced), ("text".to_owned(), text, 1));
    }

    #[test]
    fn pieces_that_are_not_the_announced_length_are_an_error() {
        let conn = db();
        let short = put_in_pieces(&conn, Table::Items, "k", 10, |out| Ok(out.write_all(b"12345")?));
        assert!(matches!(short, Err(PiecesError::Length { len: 10, written: 5 })), "{short:?}");
        let long = put_in_pieces(&conn, Table::Items, "k", 3, |out| Ok(out.write_all(b"12345")?));
        assert!(long.is_err(), "{long:?}");
    }
}
