//! Effective configuration: built-in defaults, then a TOML config file, then environment variables
//! (the `PI_CURSOR_*` names of the pi extension, `TOOLSTREAM_*`, `OTEL_*`), then command-line flags.
//! Every value remembers where it came from ([`Origin`]) so `toolstream config` can explain it.
//! The Cursor API key is only ever read from `CURSOR_API_KEY`, kept to scrub it from outputs, and
//! never displayed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Spanned, Value};

/// Environment variable names read by [`Config::load`].
pub mod vars {
    pub const CONFIG: &str = "TOOLSTREAM_CONFIG";
    pub const SHARDS: &str = "TOOLSTREAM_SHARDS";
    pub const LIFECYCLE_DEFER_MS: &str = "TOOLSTREAM_LIFECYCLE_DEFER_MS";
    pub const BATCH_SETTLE_MS: &str = "TOOLSTREAM_BATCH_SETTLE_MS";
    pub const USAGE_WAIT_MS: &str = "TOOLSTREAM_USAGE_WAIT_MS";
    pub const USAGE_POLL_MS: &str = "TOOLSTREAM_USAGE_POLL_MS";
    pub const TRACE_ENABLED: &str = "PI_CURSOR_SDK_EVENT_DEBUG";
    pub const TRACE_FILE: &str = "TOOLSTREAM_TRACE_FILE";
    pub const TRACE_LIMIT_BYTES: &str = "TOOLSTREAM_TRACE_LIMIT_BYTES";
    pub const API_KEY: &str = "CURSOR_API_KEY";
    pub const BRIDGE_ENABLED: &str = "PI_CURSOR_PI_TOOL_BRIDGE";
    pub const EXPOSE_BUILTIN_TOOLS: &str = "PI_CURSOR_EXPOSE_BUILTIN_TOOLS";
    pub const ASK_QUESTION: &str = "PI_CURSOR_ASK_QUESTION";
    pub const BRIDGE_CALL_TIMEOUT_MS: &str = "PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS";
    pub const MCP_TOOL_TIMEOUT_MS: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_MS";
    pub const MCP_TOOL_TIMEOUT_SECONDS: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS";
    pub const MCP_CONNECT_TIMEOUT_MS: &str = "PI_CURSOR_MCP_CONNECT_TIMEOUT_MS";
    pub const MCP_CONNECT_TIMEOUT_SECONDS: &str = "PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS";
    pub const BRIDGE_DEBUG: &str = "PI_CURSOR_PI_TOOL_BRIDGE_DEBUG";
    pub const BRIDGE_DEBUG_FILE: &str = "PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE";
    pub const NATIVE_TOOL_DISPLAY: &str = "PI_CURSOR_NATIVE_TOOL_DISPLAY";
    pub const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
    pub const OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
    pub const CURSOR_REPLAY: &str = "TOOLSTREAM_CURSOR_REPLAY";
    pub const CURSOR_SHELL: &str = "TOOLSTREAM_CURSOR_SHELL";
}

pub const DEFAULT_LIFECYCLE_DEFER_MS: u64 = 75;
pub const DEFAULT_BATCH_SETTLE_MS: u64 = 75;
pub const DEFAULT_USAGE_WAIT_MS: u64 = 125;
pub const DEFAULT_USAGE_POLL_MS: u64 = 25;
pub const DEFAULT_TRACE_FILE: &str = "toolstream-trace.jsonl";
pub const DEFAULT_TRACE_LIMIT_BYTES: u64 = 2 * 1024 * 1024;
pub const DEFAULT_BRIDGE_CALL_TIMEOUT_MS: u64 = 3_600_000;
/// Clamp of the bridge call timeout ceiling (`PI_CURSOR_MCP_TOOL_TIMEOUT_*`): 60 s to 2³¹−1 ms.
pub const BRIDGE_CALL_TIMEOUT_RANGE_MS: (u64, u64) = (60_000, (1 << 31) - 1);
pub const DEFAULT_MCP_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// Clamp of the MCP connect/list timeout: 1 s to 60 s.
pub const MCP_CONNECT_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 60_000);

/// The file searched for in the working directory.
pub const LOCAL_CONFIG_FILE: &str = "toolstream.toml";

/// Keys accepted in the config file (the setting names).
pub const FILE_KEYS: &[&str] = &[
    "shards",
    "lifecycle_defer_ms",
    "batch_settle_ms",
    "usage_wait_ms",
    "usage_poll_ms",
    "trace_enabled",
    "trace_file",
    "trace_limit_bytes",
    "bridge_enabled",
    "expose_builtin_tools",
    "ask_question",
    "bridge_call_timeout_ms",
    "mcp_connect_timeout_ms",
    "bridge_debug",
    "bridge_debug_file",
    "native_tool_display",
    "capture_content",
    "otlp_endpoint",
    "cursor_replay",
    "cursor_shell",
];

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The built-in default (for the config file itself: found by the default search).
    Default,
    /// An environment variable (its name).
    Env(String),
    /// A key of a config file.
    File { path: PathBuf, key: String },
    /// A command-line flag (its spelling, e.g. `--shards`).
    Cli(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::File { path, key } => write!(f, "file {} ({key})", path.display()),
            Origin::Cli(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One effective value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Setting<T> {
    fn default(value: T) -> Self {
        Setting { value, origin: Origin::Default }
    }

    /// Override the value from a command-line flag (`flag` as the user spells it, e.g. `--shards`).
    pub fn set_cli(&mut self, value: T, flag: &str) {
        self.value = value;
        self.origin = Origin::Cli(flag.to_owned());
    }

    /// Override the value from a flag only when the flag was given.
    pub fn set_cli_opt(&mut self, value: Option<T>, flag: &str) {
        if let Some(v) = value {
            self.set_cli(v, flag);
        }
    }
}

/// A secret (the Cursor API key). `Debug` and `Display` show only `(set)` or `(unset)`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Option<String>);

impl Secret {
    pub fn new(value: Option<String>) -> Self {
        Secret(value.filter(|v| !v.is_empty()))
    }

    /// The secret itself, for scrubbing it from outputs. Never print it.
    pub fn expose(&self) -> Option<&str> {
        self.0.as_deref()
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_set() { "(set)" } else { "(unset)" })
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A place in a config file, shown as `path` or `path:line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLoc {
    pub path: PathBuf,
    pub line: Option<usize>,
}

impl fmt::Display for FileLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {var}={value:?} is invalid: expected {expected}")]
    Env { var: String, value: String, expected: String },
    #[error("config file {} (named by {named_by}) does not exist", path.display())]
    FileMissing { path: PathBuf, named_by: String },
    #[error("cannot read config file {}: {source}", path.display())]
    FileRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {at} is not valid TOML: {message}")]
    FileSyntax { at: FileLoc, message: String },
    #[error("unknown key `{key}` in config file {at}; known keys: {}", FILE_KEYS.join(", "))]
    UnknownKey { at: FileLoc, key: String },
    #[error("`api_key` is not allowed in config file {at}: set the CURSOR_API_KEY environment variable instead")]
    ApiKeyInFile { at: FileLoc },
    #[error("config file {at}: `{key}` must be {expected}, found {found}")]
    FileValue { at: FileLoc, key: String, expected: String, found: String },
}

/// The effective configuration. Fields are public so commands can override them from flags with
/// [`Setting::set_cli`].
#[derive(Clone, Debug)]
pub struct Config {
    /// The config file that was read, if any.
    pub config_file: Setting<Option<PathBuf>>,
    pub shards: Setting<usize>,
    pub lifecycle_defer_ms: Setting<u64>,
    pub batch_settle_ms: Setting<u64>,
    pub usage_wait_ms: Setting<u64>,
    pub usage_poll_ms: Setting<u64>,
    pub trace_enabled: Setting<bool>,
    pub trace_file: Setting<PathBuf>,
    pub trace_limit_bytes: Setting<u64>,
    pub api_key: Setting<Secret>,
    pub bridge_enabled: Setting<bool>,
    pub expose_builtin_tools: Setting<bool>,
    pub ask_question: Setting<bool>,
    pub bridge_call_timeout_ms: Setting<u64>,
    pub mcp_connect_timeout_ms: Setting<u64>,
    pub bridge_debug: Setting<bool>,
    pub bridge_debug_file: Setting<Option<PathBuf>>,
    pub native_tool_display: Setting<bool>,
    pub capture_content: Setting<bool>,
    pub otlp_endpoint: Setting<Option<String>>,
    pub cursor_replay: Setting<Option<PathBuf>>,
    pub cursor_shell: Setting<Option<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Config::defaults()
    }
}

/// One row of `toolstream config`.
struct Row {
    name: &'static str,
    display: String,
    json: serde_json::Value,
    origin: String,
    env: &'static str,
}

fn row<T>(name: &'static str, s: &Setting<T>, env: &'static str, display: String, json: serde_json::Value) -> Row {
    Row { name, display, json, origin: s.origin.to_string(), env }
}

fn num_row<T: Copy + Into<serde_json::Value> + fmt::Display>(
    name: &'static str,
    s: &Setting<T>,
    env: &'static str,
) -> Row {
    row(name, s, env, s.value.to_string(), s.value.into())
}

fn opt_row<T: AsRef<str>>(name: &'static str, s: &Setting<Option<T>>, env: &'static str) -> Row {
    match &s.value {
        Some(v) => row(name, s, env, v.as_ref().to_owned(), v.as_ref().into()),
        None => row(name, s, env, "(none)".to_owned(), serde_json::Value::Null),
    }
}

fn path_row(name: &'static str, s: &Setting<Option<PathBuf>>, env: &'static str) -> Row {
    match &s.value {
        Some(p) => {
            let text = p.display().to_string();
            row(name, s, env, text.clone(), text.into())
        }
        None => row(name, s, env, "(none)".to_owned(), serde_json::Value::Null),
    }
}

impl Config {
    /// Built-in defaults only (no file, no environment).
    pub fn defaults() -> Config {
        Config {
            config_file: Setting::default(None),
            shards: Setting::default(crate::pipeline::default_shards()),
            lifecycle_defer_ms: Setting::default(DEFAULT_LIFECYCLE_DEFER_MS),
            batch_settle_ms: Setting::default(DEFAULT_BATCH_SETTLE_MS),
            usage_wait_ms: Setting::default(DEFAULT_USAGE_WAIT_MS),
            usage_poll_ms: Setting::default(DEFAULT_USAGE_POLL_MS),
            trace_enabled: Setting::default(false),
            trace_file: Setting::default(PathBuf::from(DEFAULT_TRACE_FILE)),
            trace_limit_bytes: Setting::default(DEFAULT_TRACE_LIMIT_BYTES),
            api_key: Setting::default(Secret::default()),
            bridge_enabled: Setting::default(true),
            expose_builtin_tools: Setting::default(false),
            ask_question: Setting::default(false),
            bridge_call_timeout_ms: Setting::default(DEFAULT_BRIDGE_CALL_TIMEOUT_MS),
            mcp_connect_timeout_ms: Setting::default(DEFAULT_MCP_CONNECT_TIMEOUT_MS),
            bridge_debug: Setting::default(false),
            bridge_debug_file: Setting::default(None),
            native_tool_display: Setting::default(true),
            capture_content: Setting::default(false),
            otlp_endpoint: Setting::default(None),
            cursor_replay: Setting::default(None),
            cursor_shell: Setting::default(None),
        }
    }

    /// Load defaults, then the config file, then the environment (`env` looks a variable up; empty
    /// values count as unset). The file is `explicit_file` (from `--config`), else
    /// `$TOOLSTREAM_CONFIG`, else `./toolstream.toml`, else `$XDG_CONFIG_HOME/toolstream/config.toml`
    /// (or `$HOME/.config/toolstream/config.toml` when `XDG_CONFIG_HOME` is unset), each only if it
    /// exists; an explicitly named file that is missing is an error.
    pub fn load(explicit_file: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = |var: &str| env(var).filter(|v| !v.trim().is_empty());
        let mut config = Config::defaults();
        config.config_file = locate_file(explicit_file, &env)?;
        let mut bridge_ceiling = Setting::default(DEFAULT_BRIDGE_CALL_TIMEOUT_MS);
        if let Some(path) = config.config_file.value.clone() {
            config.apply_file(&path, &mut bridge_ceiling)?;
        }
        config.apply_env(&env, bridge_ceiling)?;
        Ok(config)
    }

    /// [`Config::load`] with the process environment.
    pub fn from_process_env(explicit_file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load(explicit_file, &|var| std::env::var(var).ok())
    }

    fn apply_file(&mut self, path: &Path, bridge_ceiling: &mut Setting<u64>) -> Result<(), ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::FileRead { path: path.to_owned(), source })?;
        let table: BTreeMap<Spanned<String>, Spanned<Value>> =
            toml::from_str(&text).map_err(|e| ConfigError::FileSyntax {
                at: FileLoc { path: path.to_owned(), line: e.span().map(|s| line_of(&text, s.start)) },
                message: e.message().trim().replace('\n', ": "),
            })?;
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (key, value) in entries {
            let at = FileLoc { path: path.to_owned(), line: Some(line_of(&text, key.span().start)) };
            let v = FileValue { path, at: &at, key: key.get_ref(), value: value.get_ref() };
            match key.get_ref().as_str() {
                "shards" => v.set(&mut self.shards, |v| toml_int(v, 1).and_then(to_usize))?,
                "lifecycle_defer_ms" => v.set(&mut self.lifecycle_defer_ms, |v| toml_int(v, 0))?,
                "batch_settle_ms" => v.set(&mut self.batch_settle_ms, |v| toml_int(v, 0))?,
                "usage_wait_ms" => v.set(&mut self.usage_wait_ms, |v| toml_int(v, 0))?,
                "usage_poll_ms" => v.set(&mut self.usage_poll_ms, |v| toml_int(v, 1))?,
                "trace_enabled" => v.set(&mut self.trace_enabled, toml_bool)?,
                "trace_file" => v.set(&mut self.trace_file, toml_path)?,
                "trace_limit_bytes" => v.set(&mut self.trace_limit_bytes, |v| toml_int(v, 1))?,
                "bridge_enabled" => v.set(&mut self.bridge_enabled, toml_bool)?,
                "expose_builtin_tools" => v.set(&mut self.expose_builtin_tools, toml_bool)?,
                "ask_question" => v.set(&mut self.ask_question, toml_bool)?,
                "bridge_call_timeout_ms" => v.set(bridge_ceiling, |v| toml_int(v, 0))?,
                "mcp_connect_timeout_ms" => v.set(&mut self.mcp_connect_timeout_ms, |v| toml_int(v, 0))?,
                "bridge_debug" => v.set(&mut self.bridge_debug, toml_bool)?,
                "bridge_debug_file" => v.set(&mut self.bridge_debug_file, |v| toml_path(v).map(Some))?,
                "native_tool_display" => v.set(&mut self.native_tool_display, toml_bool)?,
                "capture_content" => v.set(&mut self.capture_content, toml_capture)?,
                "otlp_endpoint" => v.set(&mut self.otlp_endpoint, |v| toml_string(v).map(Some))?,
                "cursor_replay" => v.set(&mut self.cursor_replay, |v| toml_path(v).map(Some))?,
                "cursor_shell" => v.set(&mut self.cursor_shell, |v| toml_string(v).map(Some))?,
                "api_key" => return Err(ConfigError::ApiKeyInFile { at }),
                other => return Err(ConfigError::UnknownKey { at, key: other.to_owned() }),
            }
        }
        self.mcp_connect_timeout_ms.value = clamp(self.mcp_connect_timeout_ms.value, MCP_CONNECT_TIMEOUT_RANGE_MS);
        Ok(())
    }

    fn apply_env(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
        mut ceiling: Setting<u64>,
    ) -> Result<(), ConfigError> {
        let e = EnvLookup(env);
        e.set(&mut self.shards, vars::SHARDS, |s| env_int(s, 1).and_then(to_usize))?;
        e.set(&mut self.lifecycle_defer_ms, vars::LIFECYCLE_DEFER_MS, |s| env_int(s, 0))?;
        e.set(&mut self.batch_settle_ms, vars::BATCH_SETTLE_MS, |s| env_int(s, 0))?;
        e.set(&mut self.usage_wait_ms, vars::USAGE_WAIT_MS, |s| env_int(s, 0))?;
        e.set(&mut self.usage_poll_ms, vars::USAGE_POLL_MS, |s| env_int(s, 1))?;
        e.set(&mut self.trace_enabled, vars::TRACE_ENABLED, env_bool)?;
        e.set(&mut self.trace_file, vars::TRACE_FILE, |s| Ok(PathBuf::from(s)))?;
        e.set(&mut self.trace_limit_bytes, vars::TRACE_LIMIT_BYTES, |s| env_int(s, 1))?;
        e.set(&mut self.api_key, vars::API_KEY, |s| Ok(Secret::new(Some(s.to_owned()))))?;
        e.set(&mut self.bridge_enabled, vars::BRIDGE_ENABLED, env_bool)?;
        e.set(&mut self.expose_builtin_tools, vars::EXPOSE_BUILTIN_TOOLS, env_bool)?;
        e.set(&mut self.ask_question, vars::ASK_QUESTION, env_bool)?;
        e.set(&mut self.bridge_debug, vars::BRIDGE_DEBUG, env_bool)?;
        e.set(&mut self.bridge_debug_file, vars::BRIDGE_DEBUG_FILE, |s| Ok(Some(PathBuf::from(s))))?;
        e.set(&mut self.native_tool_display, vars::NATIVE_TOOL_DISPLAY, env_bool)?;
        e.set(&mut self.capture_content, vars::CAPTURE_CONTENT, env_capture)?;
        e.set(&mut self.otlp_endpoint, vars::OTLP_ENDPOINT, |s| Ok(Some(s.to_owned())))?;
        e.set(&mut self.cursor_replay, vars::CURSOR_REPLAY, |s| Ok(Some(PathBuf::from(s))))?;
        e.set(&mut self.cursor_shell, vars::CURSOR_SHELL, |s| Ok(Some(s.to_owned())))?;

        // MCP connect timeout: `_MS` wins over `_SECONDS`; clamped to [1 s, 60 s].
        e.set(&mut self.mcp_connect_timeout_ms, vars::MCP_CONNECT_TIMEOUT_SECONDS, env_seconds)?;
        e.set(&mut self.mcp_connect_timeout_ms, vars::MCP_CONNECT_TIMEOUT_MS, |s| env_int(s, 0))?;
        self.mcp_connect_timeout_ms.value = clamp(self.mcp_connect_timeout_ms.value, MCP_CONNECT_TIMEOUT_RANGE_MS);

        // Bridge call timeout (SPEC §7): the ceiling (default, file, then `PI_CURSOR_MCP_TOOL_TIMEOUT_
        // SECONDS`, then `_MS`) is clamped to [60 s, 2³¹−1 ms]; `PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS`
        // may only lower it.
        e.set(&mut ceiling, vars::MCP_TOOL_TIMEOUT_SECONDS, env_seconds)?;
        e.set(&mut ceiling, vars::MCP_TOOL_TIMEOUT_MS, |s| env_int(s, 0))?;
        ceiling.value = clamp(ceiling.value, BRIDGE_CALL_TIMEOUT_RANGE_MS);
        let mut lower = Setting::default(u64::MAX);
        e.set(&mut lower, vars::BRIDGE_CALL_TIMEOUT_MS, |s| env_int(s, 1))?;
        self.bridge_call_timeout_ms = if lower.value < ceiling.value { lower } else { ceiling };
        Ok(())
    }

    fn rows(&self) -> Vec<Row> {
        use vars::*;
        let bool_row = |name, s: &Setting<bool>, env| row(name, s, env, s.value.to_string(), s.value.into());
        let pathbuf_row = |name, s: &Setting<PathBuf>, env| {
            let text = s.value.display().to_string();
            row(name, s, env, text.clone(), text.into())
        };
        let secret = &self.api_key;
        vec![
            path_row("config_file", &self.config_file, CONFIG),
            num_row("shards", &self.shards, SHARDS),
            num_row("lifecycle_defer_ms", &self.lifecycle_defer_ms, LIFECYCLE_DEFER_MS),
            num_row("batch_settle_ms", &self.batch_settle_ms, BATCH_SETTLE_MS),
            num_row("usage_wait_ms", &self.usage_wait_ms, USAGE_WAIT_MS),
            num_row("usage_poll_ms", &self.usage_poll_ms, USAGE_POLL_MS),
            bool_row("trace_enabled", &self.trace_enabled, TRACE_ENABLED),
            pathbuf_row("trace_file", &self.trace_file, TRACE_FILE),
            num_row("trace_limit_bytes", &self.trace_limit_bytes, TRACE_LIMIT_BYTES),
            row("api_key", secret, API_KEY, secret.value.to_string(), secret.value.to_string().into()),
            bool_row("bridge_enabled", &self.bridge_enabled, BRIDGE_ENABLED),
            bool_row("expose_builtin_tools", &self.expose_builtin_tools, EXPOSE_BUILTIN_TOOLS),
            bool_row("ask_question", &self.ask_question, ASK_QUESTION),
            num_row(
                "bridge_call_timeout_ms",
                &self.bridge_call_timeout_ms,
                "PI_CURSOR_MCP_TOOL_TIMEOUT_MS, PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS, PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS",
            ),
            num_row(
                "mcp_connect_timeout_ms",
                &self.mcp_connect_timeout_ms,
                "PI_CURSOR_MCP_CONNECT_TIMEOUT_MS, PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS",
            ),
            bool_row("bridge_debug", &self.bridge_debug, BRIDGE_DEBUG),
            path_row("bridge_debug_file", &self.bridge_debug_file, BRIDGE_DEBUG_FILE),
            bool_row("native_tool_display", &self.native_tool_display, NATIVE_TOOL_DISPLAY),
            bool_row("capture_content", &self.capture_content, CAPTURE_CONTENT),
            opt_row("otlp_endpoint", &self.otlp_endpoint, OTLP_ENDPOINT),
            path_row("cursor_replay", &self.cursor_replay, CURSOR_REPLAY),
            opt_row("cursor_shell", &self.cursor_shell, CURSOR_SHELL),
        ]
    }

    /// Every setting (the config file first) as `(name, display value, origin, env var names)`.
    /// The API key shows only `(set)` or `(unset)`.
    pub fn entries(&self) -> Vec<(&'static str, String, String, &'static str)> {
        self.rows().into_iter().map(|r| (r.name, r.display, r.origin, r.env)).collect()
    }

    /// Every setting as `{name: {value, origin, env}}` with typed values (numbers, booleans,
    /// strings, `null` for unset). The API key shows only `(set)` or `(unset)`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for r in self.rows() {
            map.insert(r.name.to_owned(), serde_json::json!({"value": r.json, "origin": r.origin, "env": r.env}));
        }
        serde_json::Value::Object(map)
    }
}

fn locate_file(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Setting<Option<PathBuf>>, ConfigError> {
    let named = |path: PathBuf, origin: Origin, named_by: &str| {
        if path.is_file() {
            Ok(Setting { value: Some(path), origin })
        } else {
            Err(ConfigError::FileMissing { path, named_by: named_by.to_owned() })
        }
    };
    if let Some(path) = explicit {
        return named(path.to_owned(), Origin::Cli("--config".to_owned()), "--config");
    }
    if let Some(path) = env(vars::CONFIG) {
        return named(PathBuf::from(path), Origin::Env(vars::CONFIG.to_owned()), vars::CONFIG);
    }
    let local = Path::new(".").join(LOCAL_CONFIG_FILE);
    let user = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")))
        .map(|dir| dir.join("toolstream").join("config.toml"));
    let found = std::iter::once(local).chain(user).find(|p| p.is_file());
    Ok(Setting::default(found))
}

/// A value of the config file, with what is needed to report it.
struct FileValue<'a> {
    path: &'a Path,
    at: &'a FileLoc,
    key: &'a str,
    value: &'a Value,
}

impl FileValue<'_> {
    fn set<T>(&self, setting: &mut Setting<T>, parse: impl Fn(&Value) -> Result<T, String>) -> Result<(), ConfigError> {
        let value = parse(self.value).map_err(|expected| ConfigError::FileValue {
            at: self.at.clone(),
            key: self.key.to_owned(),
            expected,
            found: describe(self.value),
        })?;
        *setting = Setting { value, origin: Origin::File { path: self.path.to_owned(), key: self.key.to_owned() } };
        Ok(())
    }
}

struct EnvLookup<'a>(&'a dyn Fn(&str) -> Option<String>);

impl EnvLookup<'_> {
    fn set<T>(
        &self,
        setting: &mut Setting<T>,
        var: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<(), ConfigError> {
        let Some(raw) = (self.0)(var) else { return Ok(()) };
        let value = parse(raw.trim()).map_err(|expected| {
            // Never echo the API key (it has no parse failure today; keep it that way).
            let value = if var == vars::API_KEY { "(redacted)".to_owned() } else { raw.clone() };
            ConfigError::Env { var: var.to_owned(), value, expected }
        })?;
        *setting = Setting { value, origin: Origin::Env(var.to_owned()) };
        Ok(())
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

fn clamp(v: u64, (lo, hi): (u64, u64)) -> u64 {
    v.clamp(lo, hi)
}

fn int_expected(min: u64) -> String {
    if min == 0 {
        "a non-negative integer".to_owned()
    } else {
        format!("an integer ≥ {min}")
    }
}

fn env_int(s: &str, min: u64) -> Result<u64, String> {
    s.parse::<u64>().ok().filter(|n| *n >= min).ok_or_else(|| int_expected(min))
}

fn toml_int(v: &Value, min: u64) -> Result<u64, String> {
    v.as_integer().and_then(|n| u64::try_from(n).ok()).filter(|n| *n >= min).ok_or_else(|| int_expected(min))
}

fn to_usize(n: u64) -> Result<usize, String> {
    usize::try_from(n).map_err(|_| "a smaller integer".to_owned())
}

/// Seconds (integer or decimal, ≥ 0) to milliseconds.
fn env_seconds(s: &str) -> Result<u64, String> {
    match s.parse::<f64>() {
        // `as` saturates for values beyond u64; the caller clamps.
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Ok((secs * 1000.0).round() as u64),
        _ => Err("a non-negative number of seconds".to_owned()),
    }
}

const BOOL_EXPECTED: &str = "a boolean (1/0, true/false, yes/no, on/off)";

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn env_bool(s: &str) -> Result<bool, String> {
    parse_bool(s).ok_or_else(|| BOOL_EXPECTED.to_owned())
}

fn toml_bool(v: &Value) -> Result<bool, String> {
    match v {
        Value::Boolean(b) => Ok(*b),
        Value::String(s) => env_bool(s),
        _ => Err(BOOL_EXPECTED.to_owned()),
    }
}

/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`: a boolean, or one of the newer GenAI
/// semantic-convention modes (`NO_CONTENT` = off; `SPAN_ONLY`, `EVENT_ONLY`, `SPAN_AND_EVENT` = on).
fn env_capture(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_uppercase().as_str() {
        "NO_CONTENT" => Ok(false),
        "SPAN_ONLY" | "EVENT_ONLY" | "SPAN_AND_EVENT" => Ok(true),
        _ => parse_bool(s).ok_or_else(|| format!("{BOOL_EXPECTED} or NO_CONTENT/SPAN_ONLY/EVENT_ONLY/SPAN_AND_EVENT")),
    }
}

fn toml_capture(v: &Value) -> Result<bool, String> {
    match v {
        Value::Boolean(b) => Ok(*b),
        Value::String(s) => env_capture(s),
        _ => Err(BOOL_EXPECTED.to_owned()),
    }
}

fn toml_string(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err("a non-empty string".to_owned()),
    }
}

fn toml_path(v: &Value) -> Result<PathBuf, String> {
    toml_string(v).map(PathBuf::from).map_err(|_| "a path (a non-empty string)".to_owned())
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::collections::HashMap;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k: &str| map.get(k).cloned()
    }

    /// A fresh temporary directory (no tempfile crate in this workspace), removed on drop; derefs
    /// to `path` (the directory, or a file inside it).
    struct Tmp {
        dir: PathBuf,
        path: PathBuf,
    }

    impl std::ops::Deref for Tmp {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.path
        }
    }

    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn temp_dir(tag: &str) -> Tmp {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolstream-config-unit-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tmp { path: dir.clone(), dir }
    }

    fn write_file(tag: &str, text: &str) -> Tmp {
        let mut tmp = temp_dir(tag);
        tmp.path = tmp.dir.join("toolstream.toml");
        std::fs::write(&tmp.path, text).unwrap();
        tmp
    }

    /// Load with an explicit file (or none), with HOME pointed at a directory that does not exist.
    fn load(file: Option<&Path>, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let home = std::env::temp_dir().join("toolstream-config-unit-no-such-home");
        let mut all: Vec<(&str, &str)> = pairs.to_vec();
        all.push(("HOME", home.to_str().unwrap()));
        Config::load(file, &env_of(&all))
    }

    #[test]
    fn defaults() {
        let c = load(None, &[]).unwrap();
        assert_eq!(c.config_file.value, None);
        assert!(c.shards.value >= 1);
        assert_eq!(c.shards.origin, Origin::Default);
        assert_eq!(c.lifecycle_defer_ms.value, 75);
        assert_eq!(c.batch_settle_ms.value, 75);
        assert_eq!(c.usage_wait_ms.value, 125);
        assert_eq!(c.usage_poll_ms.value, 25);
        assert!(!c.trace_enabled.value);
        assert_eq!(c.trace_file.value, PathBuf::from("toolstream-trace.jsonl"));
        assert_eq!(c.trace_limit_bytes.value, 2_097_152);
        assert!(!c.api_key.value.is_set());
        assert!(c.bridge_enabled.value);
        assert!(!c.expose_builtin_tools.value);
        assert!(!c.ask_question.value);
        assert_eq!(c.bridge_call_timeout_ms.value, 3_600_000);
        assert_eq!(c.mcp_connect_timeout_ms.value, 10_000);
        assert!(!c.bridge_debug.value);
        assert_eq!(c.bridge_debug_file.value, None);
        assert!(c.native_tool_display.value);
        assert!(!c.capture_content.value);
        assert_eq!(c.otlp_endpoint.value, None);
        assert_eq!(c.cursor_replay.value, None);
        assert_eq!(c.cursor_shell.value, None);
        assert!(c.entries().iter().all(|(_, _, origin, _)| origin == "default"));
    }

    #[test]
    fn env_overrides_file_overrides_default_and_cli_overrides_env() {
        let path = write_file(
            "layers",
            "shards = 2\nlifecycle_defer_ms = 50\nbatch_settle_ms = 10\ntrace_file = \"t.jsonl\"\nbridge_enabled = false\n",
        );
        let mut c = load(
            Some(&path),
            &[("TOOLSTREAM_LIFECYCLE_DEFER_MS", "20"), ("PI_CURSOR_PI_TOOL_BRIDGE", "on"), ("TOOLSTREAM_SHARDS", "")],
        )
        .unwrap();
        assert_eq!(c.config_file.value.as_deref(), Some(&*path));
        assert_eq!(c.config_file.origin, Origin::Cli("--config".into()));
        assert_eq!(c.lifecycle_defer_ms.value, 20);
        assert_eq!(c.lifecycle_defer_ms.origin.to_string(), "env TOOLSTREAM_LIFECYCLE_DEFER_MS");
        assert_eq!(c.batch_settle_ms.value, 10);
        assert_eq!(c.batch_settle_ms.origin.to_string(), format!("file {} (batch_settle_ms)", path.display()));
        // An empty variable counts as unset: the file wins.
        assert_eq!(c.shards.value, 2);
        assert_eq!(c.trace_file.value, PathBuf::from("t.jsonl"));
        assert!(c.bridge_enabled.value);
        assert_eq!(c.usage_wait_ms.origin, Origin::Default);

        c.shards.set_cli(7, "--shards");
        assert_eq!(c.shards.value, 7);
        assert_eq!(c.shards.origin.to_string(), "flag --shards");
        c.usage_poll_ms.set_cli_opt(None, "--usage-poll-ms");
        assert_eq!(c.usage_poll_ms.origin, Origin::Default);
    }

    #[test]
    fn config_file_named_by_env_and_missing_files() {
        let path = write_file("envfile", "usage_wait_ms = 1\n");
        let c = load(None, &[("TOOLSTREAM_CONFIG", path.to_str().unwrap())]).unwrap();
        assert_eq!(c.usage_wait_ms.value, 1);
        assert_eq!(c.config_file.origin, Origin::Env("TOOLSTREAM_CONFIG".into()));

        let missing = temp_dir("missing").join("nope.toml");
        let e = load(Some(&missing), &[]).unwrap_err().to_string();
        assert!(e.contains("nope.toml") && e.contains("--config") && e.contains("does not exist"), "{e}");
        let e = load(None, &[("TOOLSTREAM_CONFIG", missing.to_str().unwrap())]).unwrap_err().to_string();
        assert!(e.contains("TOOLSTREAM_CONFIG"), "{e}");
    }

    #[test]
    fn user_config_dir_is_searched() {
        let xdg = temp_dir("xdg");
        std::fs::create_dir_all(xdg.join("toolstream")).unwrap();
        std::fs::write(xdg.join("toolstream/config.toml"), "usage_poll_ms = 5\n").unwrap();
        let c = load(None, &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]).unwrap();
        assert_eq!(c.usage_poll_ms.value, 5);
        assert_eq!(c.config_file.value, Some(xdg.join("toolstream/config.toml")));
        assert_eq!(c.config_file.origin, Origin::Default);

        let home = temp_dir("home2");
        std::fs::create_dir_all(home.join(".config/toolstream")).unwrap();
        std::fs::write(home.join(".config/toolstream/config.toml"), "usage_poll_ms = 6\n").unwrap();
        let c = Config::load(None, &env_of(&[("HOME", home.to_str().unwrap())])).unwrap();
        assert_eq!(c.usage_poll_ms.value, 6);
    }

    #[test]
    fn bad_env_values_name_the_variable_and_value() {
        let e = load(None, &[("PI_CURSOR_SDK_EVENT_DEBUG", "maybe")]).unwrap_err().to_string();
        assert!(e.contains("PI_CURSOR_SDK_EVENT_DEBUG") && e.contains("\"maybe\"") && e.contains("boolean"), "{e}");
        let e = load(None, &[("TOOLSTREAM_USAGE_WAIT_MS", "12ms")]).unwrap_err().to_string();
        assert!(e.contains("TOOLSTREAM_USAGE_WAIT_MS") && e.contains("12ms"), "{e}");
        let e = load(None, &[("TOOLSTREAM_SHARDS", "0")]).unwrap_err().to_string();
        assert!(e.contains("TOOLSTREAM_SHARDS") && e.contains("≥ 1"), "{e}");
        let e = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "-3")]).unwrap_err().to_string();
        assert!(e.contains("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS"), "{e}");
    }

    #[test]
    fn booleans_accept_the_usual_spellings() {
        for (s, want) in [("1", true), ("TRUE", true), ("Yes", true), ("on", true), ("0", false), ("False", false)] {
            let c = load(None, &[("PI_CURSOR_ASK_QUESTION", s), ("PI_CURSOR_PI_TOOL_BRIDGE", "no")]).unwrap();
            assert_eq!(c.ask_question.value, want, "{s}");
            assert!(!c.bridge_enabled.value);
        }
        let c = load(None, &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")]).unwrap();
        assert!(c.capture_content.value);
        let c = load(None, &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "no_content")]).unwrap();
        assert!(!c.capture_content.value);
    }

    #[test]
    fn file_errors_name_the_key_file_and_line() {
        let path = write_file("unknown", "shards = 2\n\nshard = 3\n");
        let e = load(Some(&path), &[]).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ConfigError::UnknownKey { .. }));
        assert!(msg.contains("`shard`") && msg.contains(&format!("{}:3", path.display())), "{msg}");

        let path = write_file("apikey", "api_key = \"sk-from-file\"\n");
        let msg = load(Some(&path), &[]).unwrap_err().to_string();
        assert!(msg.contains("CURSOR_API_KEY") && !msg.contains("sk-from-file"), "{msg}");

        let path = write_file("badtype", "lifecycle_defer_ms = \"fast\"\n");
        let msg = load(Some(&path), &[]).unwrap_err().to_string();
        assert!(msg.contains("lifecycle_defer_ms") && msg.contains("\"fast\"") && msg.contains(":1"), "{msg}");

        let path = write_file("syntax", "shards = 2\nshards = [\n");
        let msg = load(Some(&path), &[]).unwrap_err().to_string();
        assert!(msg.contains("not valid TOML") && msg.contains(&path.display().to_string()), "{msg}");
    }

    #[test]
    fn api_key_is_never_displayed() {
        let key = "sk-test-0123456789abcdef";
        let c = load(None, &[("CURSOR_API_KEY", key)]).unwrap();
        assert_eq!(c.api_key.value.expose(), Some(key));
        assert_eq!(c.api_key.origin, Origin::Env("CURSOR_API_KEY".into()));
        let debug = format!("{c:?}");
        let entries = format!("{:?}", c.entries());
        let json = c.to_json().to_string();
        for out in [&debug, &entries, &json, &c.api_key.value.to_string()] {
            assert!(!out.contains(key), "{out}");
        }
        assert!(entries.contains("(set)") && json.contains("(set)"));
        let c = load(None, &[]).unwrap();
        assert_eq!(c.api_key.value.to_string(), "(unset)");
        assert_eq!(format!("{:?}", c.api_key.value), "(unset)");
    }

    #[test]
    fn bridge_call_timeout_ceiling_is_clamped_at_both_ends() {
        let c = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_MS", "1000")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 60_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Env("PI_CURSOR_MCP_TOOL_TIMEOUT_MS".into()));
        let c = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_MS", "99999999999")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 2_147_483_647);
        let c = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_MS", "7200000")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 7_200_000);
    }

    #[test]
    fn bridge_call_timeout_seconds_variant() {
        let c = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "7200")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 7_200_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Env("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS".into()));
        let c = load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "1.5")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 60_000);
        // `_MS` wins over `_SECONDS`.
        let c =
            load(None, &[("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "7200"), ("PI_CURSOR_MCP_TOOL_TIMEOUT_MS", "120000")])
                .unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 120_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Env("PI_CURSOR_MCP_TOOL_TIMEOUT_MS".into()));
    }

    #[test]
    fn bridge_call_timeout_override_may_only_lower() {
        let var = "PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS";
        let c = load(None, &[(var, "5000")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 5_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Env(var.into()));
        // Above the default: ignored, the default decides.
        let c = load(None, &[(var, "9000000")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 3_600_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Default);
        // Above a raised ceiling: the ceiling decides.
        let c = load(None, &[(var, "9000000"), ("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "7200")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 7_200_000);
        assert_eq!(c.bridge_call_timeout_ms.origin, Origin::Env("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS".into()));
        // Below a ceiling set in the file.
        let path = write_file("bridge", "bridge_call_timeout_ms = 100\n");
        let c = load(Some(&path), &[]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 60_000);
        assert!(matches!(c.bridge_call_timeout_ms.origin, Origin::File { .. }));
        let c = load(Some(&path), &[(var, "250")]).unwrap();
        assert_eq!(c.bridge_call_timeout_ms.value, 250);
        assert!(load(None, &[(var, "0")]).unwrap_err().to_string().contains(var));
    }

    #[test]
    fn mcp_connect_timeout_is_clamped() {
        let c = load(None, &[("PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS", "5")]).unwrap();
        assert_eq!(c.mcp_connect_timeout_ms.value, 5_000);
        let c = load(None, &[("PI_CURSOR_MCP_CONNECT_TIMEOUT_MS", "10")]).unwrap();
        assert_eq!(c.mcp_connect_timeout_ms.value, 1_000);
        let c = load(None, &[("PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS", "600")]).unwrap();
        assert_eq!(c.mcp_connect_timeout_ms.value, 60_000);
        let path = write_file("connect", "mcp_connect_timeout_ms = 999999\n");
        assert_eq!(load(Some(&path), &[]).unwrap().mcp_connect_timeout_ms.value, 60_000);
    }

    #[test]
    fn entries_cover_every_file_key() {
        let c = Config::defaults();
        let names: Vec<&str> = c.entries().iter().map(|e| e.0).collect();
        for key in FILE_KEYS {
            assert!(names.contains(key), "{key}");
        }
        assert_eq!(c.to_json()["lifecycle_defer_ms"]["value"], 75);
        assert_eq!(c.to_json()["otlp_endpoint"]["value"], serde_json::Value::Null);
    }
}
