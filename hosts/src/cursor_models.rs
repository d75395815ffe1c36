//! The Cursor models a user can pick: `cursor-agent --list-models` when it answers (cached for a
//! day, it asks Cursor's servers), the ids in `$TOOLSTREAM_CURSOR_MODELS` otherwise; `auto` always.
//! Each comes with its limits from the model table (`schemas/models.json`), so the pi extension
//! and the engine's usage bounds read one table (`toolstream models --json`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use toolstream_schemas::models::ModelTable;
use toolstream_schemas::pi_contract::{AUTO_MODEL_ID, AUTO_MODEL_NAME};

/// The environment variable with model ids used when cursor-agent has no listing (comma-separated).
pub use toolstream_schemas::pi_contract::MODELS_ENV;
/// How long a listing is used before cursor-agent is asked again.
pub const CACHE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long cursor-agent may take to list its models.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// One model as offered to pi.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CursorModel {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub max_tokens: u64,
}

/// Where a list came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListSource {
    /// cursor-agent answered now.
    CursorAgent,
    /// cursor-agent's listing of less than a day ago.
    Cache,
    /// `$TOOLSTREAM_CURSOR_MODELS` (cursor-agent gave no listing).
    Environment,
}

/// The cached listing.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    /// Unix seconds.
    fetched_at: u64,
    /// The cursor-agent binary that was asked (another binary is asked anew).
    agent: String,
    models: Vec<CursorModel>,
}

/// Models from the text `cursor-agent --list-models` prints: one model per line, its id first,
/// optionally ` - <name>` and markers such as `(current)` or `(default)`; headings, hints and
/// blank lines are skipped, terminal colours removed.
pub fn parse_listing(text: &str) -> Vec<CursorModel> {
    let mut out: Vec<CursorModel> = Vec::new();
    for raw in text.lines() {
        let line = strip_ansi(raw);
        let line = line.trim().trim_start_matches(['*', '-', '•', '>']).trim();
        let Some(id) = line.split_whitespace().next() else { continue };
        let rest = line[id.len()..].trim();
        // A heading (`Available models:`), a hint (`Tip: …`) or a sentence is not a model.
        if !is_model_id(id) || id.ends_with(':') || !(rest.is_empty() || rest.starts_with('-') || rest.starts_with('('))
        {
            continue;
        }
        let name = rest.trim_start_matches('-').trim();
        let name = strip_markers(name);
        if out.iter().any(|m| m.id == id) {
            continue;
        }
        out.push(CursorModel {
            id: id.to_owned(),
            name: if name.is_empty() { id.to_owned() } else { name.to_owned() },
            context_window: 0,
            max_tokens: 0,
        });
    }
    out
}

fn is_model_id(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "._:@/-".contains(c))
        && s.chars().any(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// `name` without trailing `(current)`/`(default)`-style markers.
fn strip_markers(mut name: &str) -> &str {
    while let Some(open) = name.rfind(" (").filter(|_| name.ends_with(')')) {
        name = name[..open].trim_end();
    }
    if name.starts_with('(') && name.ends_with(')') {
        return "";
    }
    name
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ … final byte in @..~
            if chars.next() == Some('[') {
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The ids of `$TOOLSTREAM_CURSOR_MODELS` (comma-separated).
pub fn from_env_value(value: &str) -> Vec<CursorModel> {
    let mut out: Vec<CursorModel> = Vec::new();
    for id in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !out.iter().any(|m| m.id == id) {
            out.push(CursorModel { id: id.to_owned(), name: id.to_owned(), context_window: 0, max_tokens: 0 });
        }
    }
    out
}

/// `auto` first, then `models`, each with its limits from `table`.
pub fn with_limits(models: Vec<CursorModel>, table: &ModelTable) -> Vec<CursorModel> {
    let mut out =
        vec![CursorModel { id: AUTO_MODEL_ID.into(), name: AUTO_MODEL_NAME.into(), context_window: 0, max_tokens: 0 }];
    out.extend(models.into_iter().filter(|m| m.id != AUTO_MODEL_ID));
    for m in &mut out {
        let limits = table.limits(Some(&m.id));
        m.context_window = limits.context_window;
        m.max_tokens = limits.max_tokens;
    }
    out
}

/// Where the listing is cached: `$XDG_CACHE_HOME/toolstream/`, else `~/.cache/toolstream/`.
pub fn default_cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("toolstream").join("cursor-models.json"))
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A cached listing of `agent` of less than [`CACHE_TTL`] ago.
fn read_cache(path: &Path, agent: &str) -> Option<Vec<CursorModel>> {
    let text = std::fs::read_to_string(path).ok()?;
    let cache: CacheFile = serde_json::from_str(&text).ok()?;
    let age = now_secs().saturating_sub(cache.fetched_at);
    (cache.agent == agent && age < CACHE_TTL.as_secs() && !cache.models.is_empty()).then_some(cache.models)
}

fn write_cache(path: &Path, agent: &str, models: &[CursorModel]) {
    let cache = CacheFile { fetched_at: now_secs(), agent: agent.to_owned(), models: models.to_vec() };
    let Ok(text) = serde_json::to_string_pretty(&cache) else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Written aside and renamed: a reader never sees half a file.
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Ask `agent --list-models`, within [`LIST_TIMEOUT`]; the models, or why there are none.
pub fn ask_cursor_agent(agent: &Path) -> Result<Vec<CursorModel>, String> {
    let mut child = Command::new(agent)
        .arg("--list-models")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", agent.display()))?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut out) = stdout {
            let _ = std::io::Read::read_to_string(&mut out, &mut text);
        }
        text
    });
    let deadline = std::time::Instant::now() + LIST_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} --list-models took longer than {:?}", agent.display(), LIST_TIMEOUT));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{} --list-models exited with {status}", agent.display()));
    }
    let models = parse_listing(&text);
    if models.is_empty() {
        return Err(format!("{} --list-models listed no models", agent.display()));
    }
    Ok(models)
}

/// The models to offer: the cached listing, else cursor-agent's (then cached), else the
/// environment's ids; `refresh` skips the cache. The reason cursor-agent gave none is returned
/// for a debug log.
pub fn resolve(
    agent: &Path,
    cache: Option<&Path>,
    env_value: Option<&str>,
    refresh: bool,
) -> (Vec<CursorModel>, ListSource, Option<String>) {
    let agent_key = agent.display().to_string();
    if let Some(models) = cache.filter(|_| !refresh).and_then(|c| read_cache(c, &agent_key)) {
        return (models, ListSource::Cache, None);
    }
    match ask_cursor_agent(agent) {
        Ok(models) => {
            if let Some(c) = cache {
                write_cache(c, &agent_key, &models);
            }
            (models, ListSource::CursorAgent, None)
        }
        Err(why) => (from_env_value(env_value.unwrap_or_default()), ListSource::Environment, Some(why)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_listing_gives_ids_and_names() {
        let text = "\u{1b}[1mAvailable models\u{1b}[0m\n\nauto - Auto (current)\ncomposer-1 - Composer 1\n  gpt-5.2-high - GPT-5.2 High (default)\nsonnet-4.5-thinking\nTip: use --model <id> to pick one\n";
        let ids: Vec<(String, String)> = parse_listing(text).into_iter().map(|m| (m.id, m.name)).collect();
        assert_eq!(
            ids,
            [
                ("auto".into(), "Auto".into()),
                ("composer-1".into(), "Composer 1".into()),
                ("gpt-5.2-high".into(), "GPT-5.2 High".into()),
                ("sonnet-4.5-thinking".into(), "sonnet-4.5-thinking".into()),
            ]
        );
        assert!(parse_listing("No models available for this account.\n").is_empty());
    }

    #[test]
    fn auto_comes_first_and_every_model_has_the_table_limits() {
        let table = ModelTable::from_json(r#"{"default":{"contextWindow":200000,"maxTokens":64000},"models":{"composer-1":{"contextWindow":1000000,"maxTokens":64000}}}"#).unwrap();
        let models = with_limits(from_env_value(" composer-1, auto ,x-9,composer-1"), &table);
        let got: Vec<(&str, u64, u64)> =
            models.iter().map(|m| (m.id.as_str(), m.context_window, m.max_tokens)).collect();
        assert_eq!(got, [("auto", 200000, 64000), ("composer-1", 1000000, 64000), ("x-9", 200000, 64000)]);
    }

    #[test]
    fn the_cache_is_used_for_a_day_for_the_same_agent() {
        let dir = std::env::temp_dir().join(format!("toolstream-models-{}", std::process::id()));
        let path = dir.join("m.json");
        let models = from_env_value("a-1");
        write_cache(&path, "/bin/agent", &models);
        assert_eq!(read_cache(&path, "/bin/agent"), Some(models.clone()));
        assert_eq!(read_cache(&path, "/other/agent"), None);
        let stale = CacheFile { fetched_at: now_secs() - CACHE_TTL.as_secs() - 1, agent: "/bin/agent".into(), models };
        std::fs::write(&path, serde_json::to_string(&stale).unwrap()).unwrap();
        assert_eq!(read_cache(&path, "/bin/agent"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
