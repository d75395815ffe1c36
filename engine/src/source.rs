//! Input sources: a file or standard input (`-`), opened for reading as one byte stream each.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where a stream comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    /// `-` is standard input; anything else a path.
    pub fn from_arg(arg: &Path) -> Source {
        if arg.as_os_str() == "-" {
            Source::Stdin
        } else {
            Source::File(arg.to_path_buf())
        }
    }

    /// The name used in messages (`<stdin>` or the path as given).
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::File(p) => p.display().to_string(),
        }
    }

    /// Whether events should be flushed to sinks as soon as each line is read (live input).
    pub fn is_live(&self) -> bool {
        matches!(self, Source::Stdin)
    }

    pub fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        match self {
            Source::Stdin => Ok(Box::new(io::stdin())),
            Source::File(p) => Ok(Box::new(File::open(p)?)),
        }
    }
}
