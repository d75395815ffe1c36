//! Input sources: a file, standard input (`-`), or a byte stream handed over by the caller (the
//! output of a spawned `cursor-agent`, say), opened for reading as one byte stream each. A live
//! stream may say, once it ended, that its producer failed (`LiveInput::with_failure`).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where a stream comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
    /// A stream read once, as live input (flushed line by line, with ticks).
    Live(LiveInput),
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

    /// The name used in messages (`<stdin>`, the path as given, or the live stream's name).
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::File(p) => p.display().to_string(),
            Source::Live(l) => l.name.clone(),
        }
    }

    /// Whether events should be flushed to sinks as soon as each line is read (live input).
    pub fn is_live(&self) -> bool {
        matches!(self, Source::Stdin | Source::Live(_))
    }

    pub fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        match self {
            Source::Stdin => Ok(Box::new(io::stdin())),
            Source::File(p) => Ok(Box::new(File::open(p)?)),
            Source::Live(l) => l.take(),
        }
    }

    /// Once the stream was read to its end: why its producer failed, if it did (a spawned
    /// `cursor-agent` that exited non-zero). Files and standard input never fail this way.
    pub fn failure(&self) -> Option<String> {
        match self {
            Source::Live(l) => l.failure.as_ref().and_then(|f| f()),
            Source::Stdin | Source::File(_) => None,
        }
    }
}

/// How a live stream's producer ended: `Some(message)` when it failed.
pub type FailureCheck = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// A byte stream the caller already has (a child process's stdout, a pipe): it can be opened,
/// and so read, once.
#[derive(Clone)]
pub struct LiveInput {
    name: String,
    reader: Arc<Mutex<Option<Box<dyn Read + Send>>>>,
    failure: Option<FailureCheck>,
}

impl LiveInput {
    pub fn new(name: impl Into<String>, reader: Box<dyn Read + Send>) -> Self {
        LiveInput { name: name.into(), reader: Arc::new(Mutex::new(Some(reader))), failure: None }
    }

    /// Asked once the stream ended: a failure ends the source's open runs as failed with that
    /// message (`Item::SourceFailed`) instead of `missing result`.
    pub fn with_failure(mut self, check: FailureCheck) -> Self {
        self.failure = Some(check);
        self
    }

    fn take(&self) -> io::Result<Box<dyn Read + Send>> {
        let taken = self.reader.lock().ok().and_then(|mut r| r.take());
        taken.ok_or_else(|| io::Error::other(format!("{} was already read", self.name)))
    }
}

impl fmt::Debug for LiveInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveInput").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The same stream (not just the same name).
impl PartialEq for LiveInput {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.reader, &other.reader)
    }
}

impl Eq for LiveInput {}
