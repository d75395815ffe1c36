//! The directory form of the pi session sink (`pi-sessions[=DIR]`, SPEC §9.2): one pi session
//! per Cursor chat (the runs of one `session_id`, resumed runs included), each named and placed
//! the way pi names its own (`@mariozechner/pi-coding-agent` 0.73 `core/session-manager.js`,
//! `config.js`), so that `pi -r` lists the imported conversations next to the user's own:
//!
//! - file name `<header timestamp with : and . as ->_<session id>.jsonl`;
//! - folder: the one the user names (as `pi --session-dir DIR` reads it), else
//!   `$PI_CODING_AGENT_SESSION_DIR`, else `<agent dir>/sessions/--<cwd without its leading
//!   slash, with / \ : as ->--/`, the agent dir being `$PI_CODING_AGENT_DIR` (`~` expanded) or
//!   `~/.pi/agent`.
//!
//! A session's id and time derive from its first run, so the same chat imported twice has the
//! same file name: an existing file is left as it is (with a warning) unless overwriting was
//! asked for. Each session is written like the single-file form writes its one
//! (`output_file::publish`: whole, through a temporary file renamed into place; a symlink's
//! target, a FIFO or a device as the rules there say).

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolstream_schemas::{Output, OutputEvent};

use super::ids::iso;
use super::PiSessionSink;
use crate::output_file::publish::Publisher;
use crate::{Sink, SinkError};

/// Chats kept open at once before an idle one is published and let go (each holds a spool file).
const MAX_OPEN_CHATS: usize = 128;

/// Where pi keeps sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionsRoot {
    /// One folder for every session (`pi --session-dir DIR`, `$PI_CODING_AGENT_SESSION_DIR`).
    Flat(PathBuf),
    /// pi's default: a folder per working directory under `<agent dir>/sessions`.
    PerCwd { agent_dir: PathBuf },
}

impl SessionsRoot {
    /// Where pi itself would put new sessions, from its environment variables and `home`.
    pub fn from_pi_env(env: impl Fn(&str) -> Option<String>, home: Option<&Path>) -> io::Result<SessionsRoot> {
        let expand = |p: String| -> PathBuf {
            match (p.as_str(), home) {
                ("~", Some(h)) => h.to_path_buf(),
                (s, Some(h)) if s.starts_with("~/") => h.join(&s[2..]),
                _ => PathBuf::from(p),
            }
        };
        if let Some(dir) = env("PI_CODING_AGENT_SESSION_DIR").filter(|d| !d.is_empty()) {
            return Ok(SessionsRoot::Flat(expand(dir)));
        }
        if let Some(dir) = env("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
            return Ok(SessionsRoot::PerCwd { agent_dir: expand(dir) });
        }
        match home {
            Some(h) => Ok(SessionsRoot::PerCwd { agent_dir: h.join(".pi").join("agent") }),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no home folder for pi's sessions; name one: pi-sessions=DIR",
            )),
        }
    }

    /// The folder of the sessions of working directory `cwd`.
    pub fn folder(&self, cwd: &str) -> PathBuf {
        match self {
            SessionsRoot::Flat(dir) => dir.clone(),
            SessionsRoot::PerCwd { agent_dir } => agent_dir.join("sessions").join(cwd_folder_name(cwd)),
        }
    }
}

/// pi's folder name for a working directory: `--<cwd without its leading separator, / \ : as ->--`.
pub fn cwd_folder_name(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let safe: String = trimmed.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    format!("--{safe}--")
}

/// pi's file name for a session: its header timestamp with `:` and `.` as `-`, then its id.
pub fn session_file_name(id: &str, time_ms: u64) -> String {
    let stamp: String = iso(time_ms).chars().map(|c| if matches!(c, ':' | '.') { '-' } else { c }).collect();
    format!("{stamp}_{id}.jsonl")
}

/// Where one chat's session goes, decided once its id, time and working directory are known.
#[derive(Debug)]
pub struct Placement {
    root: SessionsRoot,
    overwrite: bool,
    /// `Some(None)`: the file existed and is left alone.
    resolved: Option<Option<Publisher>>,
}

impl Placement {
    pub fn new(root: SessionsRoot, overwrite: bool) -> Self {
        Placement { root, overwrite, resolved: None }
    }

    /// The session file's publisher, or `None` when the file exists already and may not be
    /// overwritten (decided at the first call; later calls publish to the same file).
    pub(super) fn resolve(&mut self, id: &str, time: u64, cwd: &str) -> io::Result<Option<&mut Publisher>> {
        if self.resolved.is_none() {
            let dir = self.root.folder(cwd);
            std::fs::create_dir_all(&dir)?;
            let path = dir.join(session_file_name(id, time));
            let publisher = match Publisher::open(&path, self.overwrite) {
                Ok(p) => {
                    tracing::debug!("pi-sessions: writing {}", p.path().display());
                    Some(p)
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    tracing::warn!("pi-sessions: {e}; left as it is");
                    None
                }
                Err(e) => return Err(e),
            };
            self.resolved = Some(publisher);
        }
        Ok(self.resolved.as_mut().and_then(Option::as_mut))
    }
}

/// What the directory form does.
#[derive(Clone, Debug)]
pub struct PiSessionsOptions {
    pub root: SessionsRoot,
    /// Replace session files that exist.
    pub overwrite: bool,
}

/// One pi session per Cursor chat.
pub struct PiSessionsSink {
    opts: PiSessionsOptions,
    chats: HashMap<Arc<str>, PiSessionSink>,
    /// Chats published and let go (more chats than [`MAX_OPEN_CHATS`] were open).
    released: HashSet<Arc<str>>,
}

impl std::fmt::Debug for PiSessionsSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PiSessionsSink").field("opts", &self.opts).field("chats", &self.chats.len()).finish()
    }
}

impl PiSessionsSink {
    pub fn new(opts: PiSessionsOptions) -> PiSessionsSink {
        PiSessionsSink { opts, chats: HashMap::new(), released: HashSet::new() }
    }

    fn chat(&mut self, chat: &Arc<str>) -> &mut PiSessionSink {
        if self.released.remove(chat) {
            tracing::warn!("pi-sessions: a chat came back after its session was written; its later runs get a session of their own");
        }
        let opts = &self.opts;
        self.chats
            .entry(chat.clone())
            .or_insert_with(|| PiSessionSink::named(Placement::new(opts.root.clone(), opts.overwrite)))
    }

    /// Publish and let go of a chat with no open run once too many are held.
    fn release_if_crowded(&mut self, chat: &Arc<str>) -> Result<(), SinkError> {
        if self.chats.len() <= MAX_OPEN_CHATS || !self.chats.get(chat).is_some_and(PiSessionSink::idle) {
            return Ok(());
        }
        if let Some(mut sink) = self.chats.remove(chat) {
            sink.checkpoint()?;
            self.released.insert(chat.clone());
        }
        Ok(())
    }
}

impl Sink for PiSessionsSink {
    fn name(&self) -> &'static str {
        "pi-sessions"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            // Diagnostics outside any run (decode errors) belong to no chat.
            if ev.run.session.is_empty() && matches!(ev.kind, Output::Diagnostic { .. }) {
                continue;
            }
            let chat = ev.run.session.clone();
            self.chat(&chat).write(std::slice::from_ref(ev))?;
            if matches!(ev.kind, Output::RunClosed { .. }) {
                self.release_if_crowded(&chat)?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.chats.values_mut().try_for_each(Sink::flush)
    }

    fn checkpoint(&mut self) -> Result<(), SinkError> {
        // Every chat is published even when one fails; the first failure is reported.
        let mut first = Ok(());
        for sink in self.chats.values_mut() {
            if let Err(e) = sink.checkpoint() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_folders_follow_pi() {
        // pi: `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`.
        assert_eq!(cwd_folder_name("/Users/ben/projects/x"), "--Users-ben-projects-x--");
        assert_eq!(cwd_folder_name("C:\\work\\app"), "--C--work-app--");
        // pi: `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`.
        assert_eq!(session_file_name("0190-ab", 1_780_338_804_592), "2026-06-01T18-33-24-592Z_0190-ab.jsonl");
        let root = SessionsRoot::PerCwd { agent_dir: PathBuf::from("/h/.pi/agent") };
        assert_eq!(root.folder("/w/a"), PathBuf::from("/h/.pi/agent/sessions/--w-a--"));
        assert_eq!(SessionsRoot::Flat(PathBuf::from("/d")).folder("/w/a"), PathBuf::from("/d"));
    }

    #[test]
    fn the_root_comes_from_pi_s_environment() {
        let home = Path::new("/home/u");
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(
            SessionsRoot::from_pi_env(env(&[]), Some(home)).unwrap(),
            SessionsRoot::PerCwd { agent_dir: PathBuf::from("/home/u/.pi/agent") }
        );
        assert_eq!(
            SessionsRoot::from_pi_env(env(&[("PI_CODING_AGENT_DIR", "~/agent")]), Some(home)).unwrap(),
            SessionsRoot::PerCwd { agent_dir: PathBuf::from("/home/u/agent") }
        );
        assert_eq!(
            SessionsRoot::from_pi_env(
                env(&[("PI_CODING_AGENT_DIR", "/a"), ("PI_CODING_AGENT_SESSION_DIR", "/s")]),
                Some(home)
            )
            .unwrap(),
            SessionsRoot::Flat(PathBuf::from("/s"))
        );
        assert!(SessionsRoot::from_pi_env(env(&[]), None).is_err());
    }
}
