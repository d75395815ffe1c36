//! Cursor hooks, live (SPEC §1.5, ARCHITECTURE "Cursor hooks"): the hook command answers Cursor at
//! once and appends the payload to a per-conversation spool ([`spool`]); when a turn closes, a
//! detached `toolstream hooks deliver` reads the spools, decodes them like any hook log and hands
//! the closed turns to the sinks through the normal pipeline ([`deliver`]), marking what each sink
//! took. The spool is the record: a sink that was down gets its turns at the next delivery, and
//! `toolstream hooks status` shows what is spooled, delivered and pending.
//!
//! Layout, under the user's state folder (`<state>/cursor-hooks/`, owner-only):
//!
//! ```text
//! spool/<conversation>.jsonl       {received_ms, payload} per event (0600)
//! delivered/<conversation>.json    the turns each sink took, and the pi session files written
//! hook.log                         what went wrong in a hook or a delivery (bounded)
//! sinks.json                       the sinks `install cursor` configured (for `hooks deliver`)
//! deliver.lock, deliver.again      one delivery at a time; a request that came meanwhile
//! ```

pub mod deliver;
pub mod spool;

use std::path::PathBuf;

/// The folder of the hook spool and its bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookPaths {
    pub root: PathBuf,
}

/// Longest conversation file name kept (ids are UUIDs).
const MAX_NAME: usize = 128;

impl HookPaths {
    pub fn new(root: impl Into<PathBuf>) -> HookPaths {
        HookPaths { root: root.into() }
    }

    /// `<user state folder>/cursor-hooks`.
    pub fn locate() -> std::io::Result<HookPaths> {
        Ok(HookPaths::new(crate::state_dir::user_state_dir()?.join("cursor-hooks")))
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.root.join("spool")
    }

    pub fn delivered_dir(&self) -> PathBuf {
        self.root.join("delivered")
    }

    /// The spool of a conversation.
    pub fn spool_file(&self, conversation: &str) -> PathBuf {
        self.spool_dir().join(format!("{}.jsonl", file_name(conversation)))
    }

    /// What was delivered of a conversation.
    pub fn delivered_file(&self, conversation: &str) -> PathBuf {
        self.delivered_dir().join(format!("{}.json", file_name(conversation)))
    }

    pub fn log_file(&self) -> PathBuf {
        self.root.join("hook.log")
    }

    pub fn sinks_file(&self) -> PathBuf {
        self.root.join("sinks.json")
    }

    pub fn lock_file(&self) -> PathBuf {
        self.root.join("deliver.lock")
    }

    pub fn again_file(&self) -> PathBuf {
        self.root.join("deliver.again")
    }

    /// Where the pi sessions of a delivery are written before they are put in place.
    pub fn staging_dir(&self) -> PathBuf {
        self.root.join("staging")
    }
}

/// A conversation id as a file name: letters, digits, `-`, `_` and `.` kept, anything else `_`,
/// bounded; `unknown` for an empty id.
pub fn file_name(conversation: &str) -> String {
    let name: String = conversation
        .chars()
        .take(MAX_NAME)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    match name.trim_matches('.') {
        "" => "unknown".to_owned(),
        t => t.to_owned(),
    }
}

/// The sinks named by `install cursor`, for a delivery asked for by hand.
pub fn configured_sinks(paths: &HookPaths) -> Vec<String> {
    std::fs::read_to_string(paths.sinks_file())
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        .unwrap_or_default()
}

/// Record the sinks `install cursor` configured.
pub fn save_sinks(paths: &HookPaths, sinks: &[String]) -> std::io::Result<()> {
    crate::state_dir::private_dir(&paths.root)?;
    let text = serde_json::to_string_pretty(sinks).map_err(std::io::Error::other)?;
    spool::write_private(&paths.sinks_file(), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_ids_make_safe_file_names() {
        assert_eq!(file_name("6bd3db3e-e838-485e-befc-b5f0d05b18cd"), "6bd3db3e-e838-485e-befc-b5f0d05b18cd");
        assert_eq!(file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(file_name(""), "unknown");
        assert_eq!(file_name(".."), "unknown");
        assert_eq!(file_name(&"x".repeat(500)).len(), MAX_NAME);
    }
}
