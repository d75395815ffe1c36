//! The user's private state folder: `$XDG_STATE_HOME/toolstream`, else
//! `~/.local/state/toolstream`, created owner-only (0700). What toolstream keeps between
//! processes (the Cursor hook spool) lives under it.
//!
//! One small function on purpose: the project's shared declaration of this folder replaces it.

use std::io;
use std::path::PathBuf;

/// The state folder (created, 0700 on Unix).
pub fn user_state_dir() -> io::Result<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "HOME is not set"))?;
            PathBuf::from(home).join(".local").join("state")
        }
    };
    let dir = base.join("toolstream");
    private_dir(&dir)?;
    Ok(dir)
}

/// Create `dir` (and its parents) owner-only; an existing folder loses any group and other
/// permissions (and gains none).
pub fn private_dir(dir: &std::path::Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)?;
    Ok(())
}
