//! The server's bearer key when the user names none (Jupyter's way, STYLE §7): a random key kept in
//! `openai-api-key` in the user's toolstream config directory (mode 0600, the directory 0700 when
//! created), made on the first start and printed once then; later starts read it, so a client
//! configured once keeps working. Another local user, or a local process that only reaches the
//! port, cannot use the server without reading a file only the user can read. `--no-api-key` is the
//! explicit opt-out.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::local_http::random_hex;

/// The key file's name in the config directory.
pub const KEY_FILE: &str = "openai-api-key";
/// Generated keys start with this (a recognisable prefix for secret scanners and scrubbers).
pub const KEY_PREFIX: &str = "tsk-";

/// Where a server's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyChoice {
    /// `--api-key` or its environment variable.
    Given(String),
    /// The stored key; `created` on the start that made it.
    Stored { key: String, path: PathBuf, created: bool },
    /// `--no-api-key`: requests are not checked.
    Off,
}

impl KeyChoice {
    pub fn key(&self) -> Option<&str> {
        match self {
            KeyChoice::Given(k) | KeyChoice::Stored { key: k, .. } => Some(k),
            KeyChoice::Off => None,
        }
    }

    /// The line said on stderr at start: the key itself only on the start that made it.
    pub fn announce(&self) -> String {
        match self {
            KeyChoice::Given(_) => "toolstream: requests must carry `Authorization: Bearer <the key you gave>`".into(),
            KeyChoice::Stored { key, path, created: true } => format!(
                "toolstream: new API key (saved in {}, readable only by you): {key}\n\
                 toolstream: clients send it as `Authorization: Bearer <key>` (the `openai` SDKs: api_key)",
                path.display()
            ),
            KeyChoice::Stored { path, created: false, .. } => {
                format!("toolstream: API key: the one in {} (`Authorization: Bearer <key>`)", path.display())
            }
            KeyChoice::Off => {
                "toolstream: no API key (--no-api-key): any local process that reaches the port can start runs".into()
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("API key file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("API key file {} is empty: remove it to make a new key", .0.display())]
    Empty(PathBuf),
    #[error("API key file {} can be read by other users: `chmod 600` it, or remove it to make a new key", .0.display())]
    Exposed(PathBuf),
}

/// The key stored in `dir/openai-api-key`, made when absent: `(key, path, created)`.
pub fn stored_key(dir: &Path) -> Result<(String, PathBuf, bool), KeyError> {
    let path = dir.join(KEY_FILE);
    let io_err = |source| KeyError::Io { path: path.clone(), source };
    match read_key(&path) {
        Ok(key) => return Ok((key, path, false)),
        Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    create_private_dir(dir).map_err(io_err)?;
    let key = format!("{KEY_PREFIX}{}", random_hex(32).map_err(io_err)?);
    // Written whole under a private name, then linked into place: a concurrent start either links
    // first (and this one reads its key) or finds the file complete.
    let tmp = dir.join(format!(".{KEY_FILE}.{}.tmp", std::process::id()));
    let written = write_private(&tmp, &key).and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => Ok((key, path, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(&path).map(|k| (k, path.clone(), false)),
        Err(e) => Err(io_err(e)),
    }
}

fn read_key(path: &Path) -> Result<String, KeyError> {
    let io_err = |source| KeyError::Io { path: path.to_owned(), source };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(KeyError::Exposed(path.to_owned()));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let key = std::fs::read_to_string(path).map_err(io_err)?.trim().to_owned();
    if key.is_empty() {
        return Err(KeyError::Empty(path.to_owned()));
    }
    Ok(key)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn write_private(path: &Path, key: &str) -> io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    writeln!(f, "{key}")?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("toolstream-api-key-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn made_once_private_then_read_back() {
        let d = dir("once");
        let conf = d.join("toolstream");
        let (key, path, created) = stored_key(&conf).unwrap();
        assert!(created);
        assert!(key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 64, "{key}");
        assert_eq!(path, conf.join(KEY_FILE));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(&conf).unwrap().permissions().mode() & 0o777, 0o700);
        }
        assert_eq!(stored_key(&conf).unwrap(), (key.clone(), path.clone(), false));
        assert_eq!(std::fs::read_dir(&conf).unwrap().count(), 1, "no temporary file left");
        let announce = KeyChoice::Stored { key: key.clone(), path: path.clone(), created: false }.announce();
        assert!(!announce.contains(&key), "later starts never print the key: {announce}");
        assert!(KeyChoice::Stored { key: key.clone(), path, created: true }.announce().contains(&key));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_or_an_empty_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("exposed");
        let (_, path, _) = stored_key(&d).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(stored_key(&d), Err(KeyError::Exposed(_))));
        std::fs::write(&path, "\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(stored_key(&d), Err(KeyError::Empty(_))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
