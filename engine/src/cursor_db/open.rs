//! Opening a Cursor chat database for reading, so that neither the file nor a running Cursor is
//! ever disturbed: the file must be SQLite; a connection that could only wait for another
//! writer's exclusive lock is refused at once ("locked"); data is then read through a read-only
//! connection — `immutable=1` (no locks at all) unless the database has a write-ahead log with
//! content, whose latest conversations only a read-only WAL snapshot sees. No connection here can
//! write: every open is `mode=ro`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};
use toolstream_schemas::cursor_bubble::{ComposerHead, ComposerHeaders, HEADERS_KEY};

/// The first 16 bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// How long a read waits for a lock before giving up (Cursor holds them for milliseconds).
const BUSY_TIMEOUT: Duration = Duration::from_millis(250);

/// Why a database could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CursorDbError {
    #[error("{}: no such file", .0.display())]
    NotFound(PathBuf),
    #[error("{}: cannot read: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not an SQLite database (Cursor's chat database is `state.vscdb`)", .0.display())]
    NotSqlite(PathBuf),
    #[error("{}: the database is locked by another writer; try again in a moment (or once Cursor is closed)", .0.display())]
    Locked(PathBuf),
    #[error("{}: the database is malformed: {detail}", path.display())]
    Malformed { path: PathBuf, detail: String },
    #[error("{}: not a Cursor chat database: it has no `cursorDiskKV` table", .0.display())]
    NoTable(PathBuf),
    #[error("{}: no conversation `{id}` (see --list)", path.display())]
    NoConversation { path: PathBuf, id: String },
    #[error("{}: {source}", path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },
}

/// An open, read-only Cursor chat database.
pub struct CursorDb {
    conn: Connection,
    path: PathBuf,
    /// Whether data is read with `immutable=1` (no WAL content to see).
    immutable: bool,
}

impl std::fmt::Debug for CursorDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorDb").field("path", &self.path).field("immutable", &self.immutable).finish()
    }
}

impl CursorDb {
    /// Open `path` for reading (see the module docs); checks that it is a Cursor chat database.
    pub fn open(path: &Path) -> Result<CursorDb, CursorDbError> {
        let mut magic = [0u8; 16];
        let mut file = File::open(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => CursorDbError::NotFound(path.to_path_buf()),
            _ => CursorDbError::Io { path: path.to_path_buf(), source },
        })?;
        if !path.is_file() || file.read_exact(&mut magic).is_err() || &magic != SQLITE_MAGIC {
            return Err(CursorDbError::NotSqlite(path.to_path_buf()));
        }
        drop(file);
        // The lock probe: a plain read-only connection takes a shared lock for one query and
        // gets "busy" at once when a writer holds the database exclusively.
        let probe = connect(path, false)?;
        probe.busy_timeout(Duration::ZERO).map_err(|e| sqlite(path, e))?;
        let probed = probe.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0));
        drop(probe);
        match probed {
            Ok(_) => {}
            // A WAL database whose shared-memory file cannot be made (a read-only folder): the
            // immutable read below needs no lock to probe.
            Err(e) if code(&e) == Some(ErrorCode::CannotOpen) => {}
            Err(e) => return Err(classify(path, e)),
        }
        let wal = wal_path(path);
        let immutable = std::fs::metadata(&wal).map_or(true, |m| m.len() == 0);
        tracing::debug!(path = %path.display(), immutable, "opening the Cursor chat database read-only");
        let conn = connect(path, immutable)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sqlite(path, e))?;
        let db = CursorDb { conn, path: path.to_path_buf(), immutable };
        let has_table = db
            .conn
            .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cursorDiskKV'", [], |_| Ok(()))
            .optional()
            .map_err(|e| db.error(e))?;
        if has_table.is_none() {
            return Err(CursorDbError::NoTable(path.to_path_buf()));
        }
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value of one `cursorDiskKV` row, as text (Cursor stores JSON as TEXT or BLOB).
    pub fn value(&self, key: &str) -> Result<Option<String>, CursorDbError> {
        self.table_value("cursorDiskKV", key)
    }

    fn table_value(&self, table: &str, key: &str) -> Result<Option<String>, CursorDbError> {
        let sql = format!("SELECT value FROM {table} WHERE key = ?1");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.error(e))?;
        stmt.query_row([key], |r| Ok(text_of(r.get_ref(0)?))).optional().map_err(|e| self.error(e))
    }

    /// Every `cursorDiskKV` row whose key starts with `prefix`, in key order.
    pub fn rows_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, CursorDbError> {
        // A key range (not LIKE, whose `_` and `%` are wildcards) that uses the key index.
        let mut end = prefix.to_owned();
        end.push(char::MAX);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 ORDER BY key")
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([prefix, end.as_str()], |r| Ok((r.get::<_, String>(0)?, text_of(r.get_ref(1)?))))
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.error(e))
    }

    /// Cursor 3.x's conversation headers (`ItemTable` `composer.composerHeaders`); empty when
    /// the database has none (older builds, or no `ItemTable`) or they cannot be read.
    pub fn heads(&self) -> Vec<ComposerHead> {
        let raw = match self.table_value("ItemTable", HEADERS_KEY) {
            Ok(Some(raw)) => raw,
            Ok(None) => return Vec::new(),
            Err(e) => {
                tracing::debug!("no composer headers: {e}");
                return Vec::new();
            }
        };
        match serde_json::from_str::<ComposerHeaders>(&raw) {
            Ok(h) => h.all_composers.into_iter().flatten().filter_map(|v| serde_json::from_value(v).ok()).collect(),
            Err(e) => {
                tracing::warn!("{}: unreadable {HEADERS_KEY}: {e}", self.path.display());
                Vec::new()
            }
        }
    }

    fn error(&self, e: rusqlite::Error) -> CursorDbError {
        classify(&self.path, e)
    }
}

/// A read-only connection (`immutable` adds `immutable=1`).
fn connect(path: &Path, immutable: bool) -> Result<Connection, CursorDbError> {
    let mut uri = format!("file:{}?mode=ro", uri_path(path));
    if immutable {
        uri.push_str("&immutable=1");
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(&uri, flags).map_err(|e| classify(path, e))
}

/// A path as a URI path: every byte that is not plainly safe is `%HH`-escaped.
fn uri_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-wal");
    PathBuf::from(s)
}

fn text_of(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => String::new(),
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) => f.to_string(),
    }
}

fn code(e: &rusqlite::Error) -> Option<ErrorCode> {
    e.sqlite_error_code()
}

fn sqlite(path: &Path, source: rusqlite::Error) -> CursorDbError {
    CursorDbError::Sqlite { path: path.to_path_buf(), source }
}

/// The error a user can act on.
fn classify(path: &Path, e: rusqlite::Error) -> CursorDbError {
    match code(&e) {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => CursorDbError::Locked(path.to_path_buf()),
        Some(ErrorCode::NotADatabase) => CursorDbError::NotSqlite(path.to_path_buf()),
        Some(ErrorCode::DatabaseCorrupt) => {
            CursorDbError::Malformed { path: path.to_path_buf(), detail: e.to_string() }
        }
        _ => sqlite(path, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_escape_what_sqlite_would_read_as_syntax() {
        assert_eq!(uri_path(Path::new("/a b/c?d#e%f.vscdb")), "/a%20b/c%3Fd%23e%25f.vscdb");
        assert_eq!(uri_path(Path::new("/home/u/state.vscdb")), "/home/u/state.vscdb");
    }
}
