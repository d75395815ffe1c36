//! What a file sink does with the PATH it is given: one set of rules for every sink that writes a
//! file (`jsonl`, `openai-sse`, `pi-session`, `pi-sessions`, `cursor-db`), applied here and nowhere
//! else:
//!
//! - What is at PATH is looked at without following it ([`inspect`], `symlink_metadata`).
//! - A symlink is never replaced or removed: the sink writes to its target (followed to the end, a
//!   relative link from its own folder), and that target gets these same rules.
//! - A FIFO or a device is written through — opened for writing; never truncated, renamed over or
//!   removed — or refused by a sink that needs a regular file (`cursor-db`: SQLite).
//! - A directory, a socket or anything else is refused.
//! - Nothing there: the file is created. A regular file: a sink that streams ([`open_stream`]:
//!   `jsonl`, `openai-sse`) truncates and writes it, as a shell's `>` does — in a run, once every
//!   sink of the run has opened ([`open_stream_kept`]), so a refused run truncates nothing; a
//!   sink that publishes whole files ([`publish::Publisher`]: the pi sessions) replaces it only
//!   when told to (`--force`), and only ever by renaming a file it created itself beside it;
//!   SQLite ([`regular_file`]) opens it as the database it must be.

pub mod publish;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Symlinks followed before giving up (as the kernel's `ELOOP` limit).
const MAX_LINKS: usize = 40;

/// What is at a path, its symlinks followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Absent,
    Regular,
    Fifo,
    CharDevice,
    BlockDevice,
    Directory,
    /// A socket or anything else.
    Other,
}

impl Kind {
    fn of(t: fs::FileType) -> Kind {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return Kind::Fifo;
            }
            if t.is_char_device() {
                return Kind::CharDevice;
            }
            if t.is_block_device() {
                return Kind::BlockDevice;
            }
        }
        if t.is_file() {
            Kind::Regular
        } else if t.is_dir() {
            Kind::Directory
        } else {
            Kind::Other
        }
    }

    /// A FIFO or a device: written through, never replaced.
    pub fn is_stream(self) -> bool {
        matches!(self, Kind::Fifo | Kind::CharDevice | Kind::BlockDevice)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Kind::Absent => "nothing",
            Kind::Regular => "a regular file",
            Kind::Fifo => "a FIFO",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Directory => "a directory",
            Kind::Other => "a socket or other special file",
        }
    }
}

/// Where a sink's writes go: PATH itself, or the end of its chain of symlinks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub path: PathBuf,
    pub kind: Kind,
}

/// What is at `path`, its symlinks followed (never replaced).
pub fn inspect(path: &Path) -> io::Result<Target> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target { path: at, kind: Kind::Absent }),
            Err(e) => return Err(e),
        };
        if !meta.file_type().is_symlink() {
            return Ok(Target { path: at, kind: Kind::of(meta.file_type()) });
        }
        let link = fs::read_link(&at)?;
        at = match at.parent() {
            Some(dir) if link.is_relative() => dir.join(link),
            _ => link,
        };
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: too many levels of symbolic links", path.display())))
}

/// Why `target` cannot be written by this sink.
pub fn refused(target: &Target, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is {}: {why}; nothing was written", target.path.display(), target.kind.describe()),
    )
}

/// Open a FIFO or a device for writing, as it is.
fn open_through(target: &Target) -> io::Result<File> {
    OpenOptions::new().write(true).open(&target.path)
}

/// Open `path` for a sink that writes a stream of bytes (`jsonl`, `openai-sse`): created, or
/// truncated when a regular file (as `>` does), written through when a FIFO or a device.
pub fn open_stream(path: &Path) -> io::Result<File> {
    let (file, emptying) = open_stream_kept(path)?;
    emptying.now()?;
    Ok(file)
}

/// Open `path` as [`open_stream`] does, but keep what a regular file holds until the returned
/// [`Emptying`] is carried out: the engine opens every sink of a run first, and only a run that
/// starts empties its files, so one refused by another sink (a pi session that exists already,
/// a database that cannot be opened) leaves them as they were.
pub fn open_stream_kept(path: &Path) -> io::Result<(File, Emptying)> {
    let target = inspect(path)?;
    match target.kind {
        Kind::Absent | Kind::Regular => {
            let file = OpenOptions::new().write(true).create(true).truncate(false).open(&target.path)?;
            // A second handle on the same open file: emptying it empties the sink's, whose
            // offset is still 0.
            let emptying = Emptying(Some(file.try_clone()?));
            Ok((file, emptying))
        }
        k if k.is_stream() => Ok((open_through(&target)?, Emptying(None))),
        _ => Err(refused(&target, "a sink writes a file")),
    }
}

/// What is still to be done to a file opened by [`open_stream_kept`] before it is written:
/// emptied when it is a regular file, nothing for a FIFO or a device.
#[derive(Debug)]
pub struct Emptying(Option<File>);

impl Emptying {
    /// Empty the file now (nothing for a FIFO or a device).
    pub fn now(self) -> io::Result<()> {
        match self.0 {
            Some(file) => file.set_len(0),
            None => Ok(()),
        }
    }
}

/// The file a sink keeping a SQLite database at `path` opens (`cursor-db`): `path` or its
/// symlinks' target, which must be a regular file or nothing (SQLite creates it then).
pub fn regular_file(path: &Path) -> io::Result<PathBuf> {
    let target = inspect(path)?;
    match target.kind {
        Kind::Absent | Kind::Regular => Ok(target.path),
        _ => Err(refused(&target, "a SQLite database is a regular file")),
    }
}

#[cfg(all(test, unix))]
mod tests;
