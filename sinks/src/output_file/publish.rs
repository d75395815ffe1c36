//! Publishing a whole file at a PATH (the pi session sinks): what a sink has so far — an
//! append-only log plus a provisional tail that the next publish replaces — is written to a
//! temporary file beside the target (`.<name>.<pid>.tmp`, mode 0600 while it is written), synced
//! and renamed over the target, so the target never holds half a file and a reader holding the old
//! file keeps it. Renamed over only: nothing (the file is new), a regular file this publisher put
//! there itself, or, when the sink was told to overwrite (`--force`), a regular file that was there
//! before. A FIFO or a device at PATH is written through instead: it gets the log as it grows (each
//! byte once, the tail never: it is not final). The published file gets the mode a new file gets
//! (or, replacing one, the mode that one had).
//!
//! A temporary file a killed process left beside the target is removed by the next publisher of
//! that target.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{inspect, open_through, refused, Kind};
use crate::private_dir::{default_file_mode, sweep_dead, TempFile};

/// Where a [`Publisher`] writes.
#[derive(Debug)]
enum Dest {
    /// A regular file, published whole by rename.
    File {
        /// `.<name>.<pid>.tmp` beside it.
        tmp: PathBuf,
        overwrite: bool,
        /// The file this publisher renamed into place last.
        ours: Option<Identity>,
    },
    /// A FIFO or a device, and how much of the log it was given.
    Stream { out: File, sent: u64 },
}

/// Publishes one file at one PATH.
#[derive(Debug)]
pub struct Publisher {
    /// PATH, or its symlinks' target.
    path: PathBuf,
    dest: Dest,
}

impl Publisher {
    /// A publisher of `path`. Refused (nothing written): a directory or a special file other than
    /// a FIFO or a device; a regular file unless `overwrite` (an `AlreadyExists` error naming
    /// `--force`). A FIFO or a device is opened now (a FIFO waits for its reader).
    pub fn open(path: &Path, overwrite: bool) -> io::Result<Publisher> {
        let target = inspect(path)?;
        let dest = match target.kind {
            Kind::Absent | Kind::Regular => {
                if target.kind == Kind::Regular && !overwrite {
                    return Err(exists(&target.path));
                }
                let Some(name) = target.path.file_name() else {
                    return Err(refused(&target, "a file name is needed"));
                };
                let dir = folder(&target.path);
                if !dir.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("no such directory: {}", dir.display()),
                    ));
                }
                sweep_dead(&dir, |entry| tmp_pid(name, entry));
                Dest::File { tmp: dir.join(tmp_name(name, std::process::id())), overwrite, ours: None }
            }
            k if k.is_stream() => Dest::Stream { out: open_through(&target)?, sent: 0 },
            _ => return Err(refused(&target, "a session is a file")),
        };
        Ok(Publisher { path: target.path, dest })
    }

    /// Where it publishes (PATH or its symlinks' target).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Publish the file `log` followed by `tail`.
    pub fn publish(&mut self, log: &Path, tail: &[u8]) -> io::Result<()> {
        match &mut self.dest {
            Dest::Stream { out, sent } => {
                let mut from = File::open(log)?;
                from.seek(SeekFrom::Start(*sent))?;
                *sent += io::copy(&mut from, out)?;
                out.flush()
            }
            Dest::File { tmp, overwrite, ours } => {
                let mode = replaceable(&self.path, *overwrite, *ours)?.unwrap_or_else(default_file_mode);
                let (guard, mut f) = TempFile::create(tmp.clone())?;
                io::copy(&mut File::open(log)?, &mut f)?;
                f.write_all(tail)?;
                set_mode(&f, mode)?;
                f.sync_all()?;
                drop(f);
                fs::rename(guard.path(), &self.path)?;
                guard.persist();
                *ours = Some(identity(&fs::symlink_metadata(&self.path)?));
                // Make the rename itself durable where directories can be synced (best effort).
                if let Ok(d) = File::open(folder(&self.path)) {
                    let _ = d.sync_all();
                }
                Ok(())
            }
        }
    }
}

/// Whether the file at `path` may be renamed over now: `Ok(None)` when nothing is there,
/// `Ok(Some(mode))` for a regular file that may be replaced (with its mode), else why not. What
/// was checked when the publisher opened may have changed since.
fn replaceable(path: &Path, overwrite: bool, ours: Option<Identity>) -> io::Result<Option<u32>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let kind = if meta.file_type().is_symlink() { Kind::Other } else { Kind::of(meta.file_type()) };
    if kind != Kind::Regular {
        let what = if meta.file_type().is_symlink() { "a symlink" } else { kind.describe() };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} became {what} while it was being written: not replaced", path.display()),
        ));
    }
    if !overwrite && ours != Some(identity(&meta)) {
        return Err(exists(path));
    }
    Ok(Some(mode_of(&meta)))
}

/// The `--force` refusal.
fn exists(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists already (--force replaces it)", path.display()))
}

fn folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.<name>.<pid>.tmp`.
fn tmp_name(name: &OsStr, pid: u32) -> OsString {
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{pid}.tmp"));
    tmp
}

/// The pid of a `.<name>.<pid>.tmp` entry for this `name`.
fn tmp_pid(name: &OsStr, entry: &OsStr) -> Option<u32> {
    let rest = entry.as_encoded_bytes().strip_prefix(b".")?.strip_prefix(name.as_encoded_bytes())?;
    let digits = rest.strip_prefix(b".")?.strip_suffix(b".tmp")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// What tells a file apart from another put in its place: device, inode (reused once freed),
/// size and modification time.
type Identity = (u64, u64, u64, i64, i64);

#[cfg(unix)]
fn identity(meta: &fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec())
}

#[cfg(not(unix))]
fn identity(meta: &fs::Metadata) -> Identity {
    (0, 0, meta.len(), 0, 0)
}

#[cfg(unix)]
fn mode_of(meta: &fs::Metadata) -> u32 {
    use std::os::unix::fs::MetadataExt;
    meta.mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(_: &fs::Metadata) -> u32 {
    0o644
}

#[cfg(unix)]
fn set_mode(f: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &File, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_carry_the_pid_of_their_writer() {
        let name = OsStr::new("s.jsonl");
        assert_eq!(tmp_name(name, 42), OsString::from(".s.jsonl.42.tmp"));
        assert_eq!(tmp_pid(name, OsStr::new(".s.jsonl.42.tmp")), Some(42));
        for other in [".s.jsonl.tmp", ".s.jsonl.x42.tmp", ".t.jsonl.42.tmp", "s.jsonl.42.tmp", ".s.jsonl.42.tmp~"] {
            assert_eq!(tmp_pid(name, OsStr::new(other)), None, "{other}");
        }
    }
}
