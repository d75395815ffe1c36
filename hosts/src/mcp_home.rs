//! One extra MCP server for one `cursor-agent` run, without touching the user's files.
//!
//! cursor-agent has no flag or environment variable that adds an MCP server: it reads
//! `<workspace>/.cursor/mcp.json` and `$HOME/.cursor/mcp.json` (`url` entries are Streamable HTTP)
//! and, in print mode, loads them only with `--approve-mcps`. So the run gets a home of its own: a
//! temporary directory whose entries link to the user's home, except `.cursor`, which is a real
//! directory linking to each entry of the user's `~/.cursor` (login, settings, chats — what
//! cursor-agent writes there still lands in the user's files, as in any run) except `mcp.json`:
//! that one is written fresh, the user's own servers plus the bridge's. Nothing of the user's is
//! changed, and the directory is removed when the run ends.
//!
//! Not verified against a real, logged-in cursor-agent here (none can run on this machine); the
//! tests check the layout with a stand-in that reads `$HOME/.cursor/mcp.json` as cursor-agent does.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The flag that lets a print-mode run load the configured MCP servers.
pub const APPROVE_FLAG: &str = "--approve-mcps";

/// An MCP server for the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// Its key in `mcpServers` (Cursor reports calls to it with this `providerIdentifier`).
    pub name: String,
    /// `http://127.0.0.1:…/mcp`: a capability, never logged.
    pub url: String,
}

/// The run's home; removed on drop.
#[derive(Debug)]
pub struct McpHome {
    dir: PathBuf,
}

impl McpHome {
    /// A home like `user_home` with `server` added to `.cursor/mcp.json`.
    pub fn create(user_home: Option<&Path>, server: &McpServer) -> std::io::Result<McpHome> {
        let dir = unique_dir()?;
        let home = McpHome { dir };
        let cursor = home.dir.join(".cursor");
        std::fs::create_dir(&cursor)?;
        let mut servers = Map::new();
        if let Some(user) = user_home {
            link_entries(user, &home.dir, &[".cursor"])?;
            let user_cursor = user.join(".cursor");
            if user_cursor.is_dir() {
                link_entries(&user_cursor, &cursor, &["mcp.json"])?;
                if let Ok(text) = std::fs::read_to_string(user_cursor.join("mcp.json")) {
                    // The user's own servers stay available; a file that does not parse is left out.
                    if let Ok(Value::Object(mut file)) = serde_json::from_str::<Value>(&text) {
                        if let Some(Value::Object(own)) = file.remove("mcpServers") {
                            servers = own;
                        }
                    }
                }
            }
        }
        servers.insert(server.name.clone(), json!({ "url": server.url }));
        let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers }))?;
        std::fs::write(cursor.join("mcp.json"), text)?;
        Ok(home)
    }

    /// The directory to give cursor-agent as `HOME`.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for McpHome {
    fn drop(&mut self) {
        // Links are removed, never followed: the user's files stay.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh private directory under the system temp dir.
fn unique_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("toolstream-cursor-home-{}-{nanos}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary directory name"))
}

/// Link every entry of `from` into `to`, except `skip`.
fn link_entries(from: &Path, to: &Path, skip: &[&str]) -> std::io::Result<()> {
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(entry.path(), to.join(&name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_run_home_adds_the_server_and_leaves_the_users_files_alone() {
        let user = unique_dir().unwrap();
        std::fs::create_dir(user.join(".cursor")).unwrap();
        let own = r#"{"mcpServers":{"mine":{"command":"my-server"}}}"#;
        std::fs::write(user.join(".cursor/mcp.json"), own).unwrap();
        std::fs::write(user.join(".cursor/cli-config.json"), "{\"login\":1}").unwrap();
        std::fs::write(user.join(".gitconfig"), "[user]").unwrap();
        let server = McpServer { name: "pi-tools".into(), url: "http://127.0.0.1:1/x/mcp".into() };
        let home = McpHome::create(Some(&user), &server).unwrap();
        let dir = home.path().to_path_buf();
        let config: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(".cursor/mcp.json")).unwrap()).unwrap();
        assert_eq!(config["mcpServers"]["pi-tools"]["url"], "http://127.0.0.1:1/x/mcp");
        assert_eq!(config["mcpServers"]["mine"]["command"], "my-server");
        assert_eq!(std::fs::read_to_string(dir.join(".cursor/cli-config.json")).unwrap(), "{\"login\":1}");
        assert_eq!(std::fs::read_to_string(dir.join(".gitconfig")).unwrap(), "[user]");
        drop(home);
        assert!(!dir.exists());
        assert_eq!(
            std::fs::read_to_string(user.join(".cursor/mcp.json")).unwrap(),
            own,
            "the user's file is unchanged"
        );
        assert!(user.join(".cursor/cli-config.json").exists() && user.join(".gitconfig").exists());
        std::fs::remove_dir_all(&user).unwrap();
    }
}
