//! Effective configuration: built-in defaults, then a TOML config file, then environment
//! variables, then command-line flags. Every setting is declared once, in the [`settings!`] table
//! below (its name — the config-file key —, type, default, bounds, environment variables, and
//! what it does); the file, the environment, the flags and `toolstream config` all read that one
//! declaration; the sinks' `<kind>_when_full` settings are generated from the sink registry
//! (one per kind, [`when_full_decls`]). Only settings that do something in this build are
//! declared. Every value remembers where it came from ([`Origin`]) so `toolstream config` can
//! explain it. The Cursor API key is only ever read from `CURSOR_API_KEY`, kept to scrub it from
//! outputs, and never displayed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Spanned, Value};

use toolstream_sinks::otel::config::{ContentCapture, OtelEnv};

use crate::sinks::spec::KINDS;
use crate::sinks::WhenFull;

/// The variable that names the config file.
pub const CONFIG_ENV: &str = "TOOLSTREAM_CONFIG";

/// The file searched for in the working directory.
pub const LOCAL_CONFIG_FILE: &str = "toolstream.toml";

/// More shards than this only adds hand-offs: larger values are clamped, with a warning.
pub const MAX_SHARDS: u64 = 64;

/// How a setting's value is checked, declared with it and shown by `toolstream config` (its
/// `rule`, [`Rule::describe`]): integer bounds, what a value that cannot be used does, the unit of
/// each of its variables, and the setting it may only lower.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Below it: refused (or, with `clamp_min`, raised to it with a warning).
    pub min: u64,
    /// Above it: lowered to it with a warning.
    pub max: Option<u64>,
    /// A value below `min` is raised to it with a warning instead of being refused.
    pub clamp_min: bool,
    /// A value that cannot be read (or is refused) is a warning and is ignored — the value from
    /// before it stays — instead of an error that stops the command: for the settings the pi
    /// extension passes on, whose bad value must not break a pi run.
    pub lenient: bool,
    /// The one of the setting's variables whose value is in seconds (the setting and its other
    /// variables are in ms); listed first, so the ms variable wins when both are set.
    pub seconds_env: Option<&'static str>,
    /// The setting this one may only lower: its default is that setting's value, and a larger
    /// value is lowered to it with a warning.
    pub at_most: Option<&'static str>,
}

const ANY: Rule = Rule { min: 0, max: None, clamp_min: false, lenient: false, seconds_env: None, at_most: None };
const POSITIVE: Rule = Rule { min: 1, ..ANY };
/// At least 1: a smaller value is raised to it with a warning.
const AT_LEAST_ONE: Rule = Rule { min: 1, clamp_min: true, ..ANY };
/// Any value; one that cannot be read is a warning (the settings the pi extension passes on).
const LENIENT: Rule = Rule { lenient: true, ..ANY };

impl Rule {
    /// The rule in words, for `toolstream config` and the docs (empty: any value of the type).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match (self.min, self.max, self.clamp_min) {
            (min, Some(max), true) => parts.push(format!("{min} to {max}, clamped")),
            (0, Some(max), false) => parts.push(format!("at most {max} (more is clamped)")),
            (min, Some(max), false) => parts.push(format!("≥ {min}, at most {max} (more is clamped)")),
            (0, None, _) => {}
            (min, None, true) => parts.push(format!("≥ {min} (less is raised to {min})")),
            (min, None, false) => parts.push(format!("≥ {min}")),
        }
        if let Some(var) = self.seconds_env {
            parts.push(format!("{var} in seconds, the ms variable wins"));
        }
        if let Some(ceiling) = self.at_most {
            parts.push(format!("may only lower {ceiling} (default: its value)"));
        }
        if self.lenient {
            parts.push("a bad value is a warning and is ignored".to_owned());
        }
        parts.join("; ")
    }
}

/// One declared setting, as `toolstream config`, the file and the environment see it.
#[derive(Debug)]
pub struct Decl {
    /// The config-file key and the name `toolstream config` shows.
    pub name: &'static str,
    /// Environment variables, in the order they are applied (a later one wins).
    pub env: &'static [&'static str],
    /// The command-line flag that sets it, if any.
    pub flag: Option<&'static str>,
    /// Whether the config file may set it (the API key may not).
    pub in_file: bool,
    /// How its values are checked.
    pub rule: Rule,
    /// What it does.
    pub doc: &'static str,
}

/// The type of a setting's value: how it is read from the environment (and flags) and the config
/// file, shown, and bounded.
pub trait SettingValue: Sized + Clone {
    /// From an environment variable or a flag.
    fn parse_text(s: &str, b: Rule) -> Result<Self, String>;
    /// From the config file.
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String>;
    fn to_json(&self) -> serde_json::Value;
    fn show(&self) -> String;
    /// Clamp to `b`, saying what was changed.
    fn bound(&mut self, _b: Rule) -> Option<String> {
        None
    }
    /// A value read in seconds, in ms (integers; other types are never in seconds).
    fn seconds_to_ms(self) -> Self {
        self
    }
    /// An integer setting's value (for [`Rule::at_most`]).
    fn as_u64(&self) -> Option<u64> {
        None
    }
    /// Set an integer setting's value (for [`Rule::at_most`]).
    fn set_u64(&mut self, _n: u64) {}
}

macro_rules! int_setting {
    ($t:ty) => {
        impl SettingValue for $t {
            fn parse_text(s: &str, b: Rule) -> Result<Self, String> {
                let n = s.trim().parse::<u64>().map_err(|_| int_expected(b))?;
                check_min(n, b)?;
                <$t>::try_from(n).map_err(|_| "a smaller integer".to_owned())
            }
            fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
                let n = v.as_integer().and_then(|n| u64::try_from(n).ok()).ok_or_else(|| int_expected(b))?;
                check_min(n, b)?;
                <$t>::try_from(n).map_err(|_| "a smaller integer".to_owned())
            }
            fn seconds_to_ms(self) -> Self {
                self.saturating_mul(1000)
            }
            fn as_u64(&self) -> Option<u64> {
                u64::try_from(*self).ok()
            }
            fn set_u64(&mut self, n: u64) {
                *self = <$t>::try_from(n).unwrap_or(<$t>::MAX);
            }
            fn to_json(&self) -> serde_json::Value {
                (*self).into()
            }
            fn show(&self) -> String {
                self.to_string()
            }
            fn bound(&mut self, b: Rule) -> Option<String> {
                let was = *self;
                let min = <$t>::try_from(b.min).unwrap_or(<$t>::MAX);
                if b.clamp_min && was < min {
                    *self = min;
                    return Some(format!("{was} is less than {min}; using {min}"));
                }
                let max = b.max.and_then(|m| <$t>::try_from(m).ok())?;
                (was > max).then(|| {
                    *self = max;
                    format!("{was} is more than {max}; using {max}")
                })
            }
        }
    };
}

int_setting!(u64);
int_setting!(usize);

impl SettingValue for bool {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        parse_bool(s).ok_or_else(|| BOOL_EXPECTED.to_owned())
    }
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
        match v {
            Value::Boolean(x) => Ok(*x),
            Value::String(s) => Self::parse_text(s, b),
            _ => Err(BOOL_EXPECTED.to_owned()),
        }
    }
    fn to_json(&self) -> serde_json::Value {
        (*self).into()
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

impl SettingValue for PathBuf {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        Ok(PathBuf::from(s))
    }
    fn parse_toml(v: &Value, _: Rule) -> Result<Self, String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => Ok(PathBuf::from(s)),
            _ => Err("a path (a non-empty string)".to_owned()),
        }
    }
    fn to_json(&self) -> serde_json::Value {
        self.display().to_string().into()
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

impl SettingValue for Option<PathBuf> {
    fn parse_text(s: &str, b: Rule) -> Result<Self, String> {
        PathBuf::parse_text(s, b).map(Some)
    }
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
        PathBuf::parse_toml(v, b).map(Some)
    }
    fn to_json(&self) -> serde_json::Value {
        self.as_ref().map_or(serde_json::Value::Null, |p| p.display().to_string().into())
    }
    fn show(&self) -> String {
        self.as_ref().map_or_else(|| "(none)".to_owned(), |p| p.display().to_string())
    }
}

impl SettingValue for String {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        Ok(s.to_owned())
    }
    fn parse_toml(v: &Value, _: Rule) -> Result<Self, String> {
        v.as_str().map(str::to_owned).ok_or_else(|| "a string".to_owned())
    }
    fn to_json(&self) -> serde_json::Value {
        self.as_str().into()
    }
    fn show(&self) -> String {
        if self.is_empty() {
            "(none)".to_owned()
        } else {
            self.clone()
        }
    }
}

impl SettingValue for Secret {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        Ok(Secret::new(Some(s.to_owned())))
    }
    fn parse_toml(_: &Value, _: Rule) -> Result<Self, String> {
        Err("set only by its environment variable".to_owned())
    }
    fn to_json(&self) -> serde_json::Value {
        self.to_string().into()
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

impl SettingValue for WhenFull {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        WhenFull::parse(s).map_err(|_| WhenFull::CHOICES.to_owned())
    }
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
        v.as_str().ok_or_else(|| WhenFull::CHOICES.to_owned()).and_then(|s| Self::parse_text(s, b))
    }
    fn to_json(&self) -> serde_json::Value {
        self.as_str().into()
    }
    fn show(&self) -> String {
        self.as_str().to_owned()
    }
}

impl SettingValue for ContentCapture {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        ContentCapture::parse(s).map_err(|_| ContentCapture::CHOICES.to_owned())
    }
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
        match v {
            Value::Boolean(on) => Ok(if *on { ContentCapture::SpanOnly } else { ContentCapture::NoContent }),
            Value::String(s) => Self::parse_text(s, b),
            _ => Err(ContentCapture::CHOICES.to_owned()),
        }
    }
    fn to_json(&self) -> serde_json::Value {
        self.as_str().into()
    }
    fn show(&self) -> String {
        self.as_str().to_owned()
    }
}

/// A byte count, written with an optional K/M/G suffix (powers of 1024; `8M`), shown the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl std::str::FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let upper = t.to_ascii_uppercase();
        let digits = upper.trim_end_matches("IB").trim_end_matches('B');
        let (num, mult) = match digits.chars().last() {
            Some('K') => (&digits[..digits.len() - 1], 1u64 << 10),
            Some('M') => (&digits[..digits.len() - 1], 1 << 20),
            Some('G') => (&digits[..digits.len() - 1], 1 << 30),
            _ => (digits, 1),
        };
        let n: u64 = num.trim().parse().map_err(|_| format!("`{s}` is not a size like 512K, 16M or 1G"))?;
        n.checked_mul(mult).filter(|v| *v > 0).map(ByteSize).ok_or_else(|| format!("`{s}` is out of range"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n.is_multiple_of(1 << 20) {
            write!(f, "{}M", n >> 20)
        } else if n.is_multiple_of(1 << 10) {
            write!(f, "{}K", n >> 10)
        } else {
            write!(f, "{n}")
        }
    }
}

const SIZE_EXPECTED: &str = "a size in bytes (suffixes K, M, G)";

impl SettingValue for ByteSize {
    fn parse_text(s: &str, _: Rule) -> Result<Self, String> {
        s.parse().map_err(|_| SIZE_EXPECTED.to_owned())
    }
    fn parse_toml(v: &Value, b: Rule) -> Result<Self, String> {
        match v {
            Value::Integer(n) => u64::try_from(*n).ok().filter(|n| *n > 0).map(ByteSize),
            Value::String(s) => Self::parse_text(s, b).ok(),
            _ => None,
        }
        .ok_or_else(|| SIZE_EXPECTED.to_owned())
    }
    fn to_json(&self) -> serde_json::Value {
        self.0.into()
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

/// Declares every setting once: the [`Config`] struct, its defaults, the [`DECLS`] table, and
/// how the file, the environment, flags and `toolstream config` read and show each.
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident: $ty:ty = $default:expr, $rule:expr, env [$($env:expr),*], flag $flag:expr, file $in_file:expr;
    )*) => {
        /// The effective configuration. Fields are public so commands can read them; flags go
        /// through [`Config::set_flag`] so they are checked like every other source.
        #[derive(Clone, Debug)]
        pub struct Config {
            /// The config file that was read, if any.
            pub config_file: Setting<Option<PathBuf>>,
            $( $(#[doc = $doc])+ pub $name: Setting<$ty>, )*
            /// Each sink kind's `<kind>_when_full`, in the order of the sink registry
            /// ([`crate::sinks::spec::KINDS`]), which declares them ([`when_full_decls`]).
            when_full: Vec<Setting<WhenFull>>,
            /// What was adjusted on the way (values clamped to their bounds), for the user.
            pub warnings: Vec<String>,
        }

        /// Every setting, in the order `toolstream config` lists them.
        pub const DECLS: &[Decl] = &[$(
            Decl {
                name: stringify!($name),
                env: &[$($env),*],
                flag: $flag,
                in_file: $in_file,
                rule: $rule,
                doc: concat!($($doc, "\n"),+),
            },
        )*];

        impl Config {
            /// Built-in defaults only (no file, no environment).
            pub fn defaults() -> Config {
                Config {
                    config_file: Setting::default(None),
                    $( $name: Setting::default($default), )*
                    when_full: KINDS.iter().map(|k| Setting::default(k.when_full)).collect(),
                    warnings: Vec::new(),
                }
            }

            /// Set `name` from the config file's `value`.
            fn set_from_file(&mut self, name: &str, value: &Value, origin: Origin) -> Result<bool, String> {
                match name {
                    $( stringify!($name) if $in_file => {
                        match <$ty as SettingValue>::parse_toml(value, $rule) {
                            Ok(v) => self.$name = Setting { value: v, origin },
                            Err(expected) if $rule.lenient => self.warnings.push(format!(
                                "{origin}: {} is not {expected}; ignored", describe(value)
                            )),
                            Err(expected) => return Err(expected),
                        }
                        Ok(true)
                    } )*
                    _ => match when_full_index(name) {
                        Some(i) => {
                            let v = WhenFull::parse_toml(value, ANY)?;
                            self.when_full[i] = Setting { value: v, origin };
                            Ok(true)
                        }
                        None => Ok(false),
                    },
                }
            }

            /// Apply every declared environment variable, in declaration order.
            fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
                $( for var in [$($env),*] {
                    let Some(raw) = env(var) else { continue };
                    let v = match <$ty as SettingValue>::parse_text(raw.trim(), $rule) {
                        Ok(v) if $rule.seconds_env == Some(var) => v.seconds_to_ms(),
                        Ok(v) => v,
                        Err(expected) if $rule.lenient => {
                            self.warnings.push(format!("{var}={raw:?} is not {expected}; ignored"));
                            continue;
                        }
                        Err(expected) => {
                            // Never echo a secret.
                            let value =
                                if stringify!($ty) == "Secret" { "(redacted)".to_owned() } else { raw.clone() };
                            return Err(ConfigError::Env { var: var.to_owned(), value, expected });
                        }
                    };
                    self.$name = Setting { value: v, origin: Origin::Env(var.to_owned()) };
                } )*
                for (i, d) in when_full_decls().iter().enumerate() {
                    for var in d.env {
                        let Some(raw) = env(var) else { continue };
                        let v = WhenFull::parse_text(raw.trim(), ANY).map_err(|expected| ConfigError::Env {
                            var: (*var).to_owned(),
                            value: raw.clone(),
                            expected,
                        })?;
                        self.when_full[i] = Setting { value: v, origin: Origin::Env((*var).to_owned()) };
                    }
                }
                Ok(())
            }

            /// Set the setting `name` from a command-line flag, checked and bounded as the
            /// environment is.
            pub fn set_flag(&mut self, name: &str, flag: &str, raw: &str) -> Result<(), ConfigError> {
                let err = |expected| ConfigError::Flag { flag: flag.to_owned(), value: raw.to_owned(), expected };
                match name {
                    $( stringify!($name) => {
                        let v = <$ty as SettingValue>::parse_text(raw, $rule).map_err(err)?;
                        self.$name = Setting { value: v, origin: Origin::Cli(flag.to_owned()) };
                    } )*
                    _ => return Err(err("a known setting".to_owned())),
                }
                self.settle();
                Ok(())
            }

            /// Clamp every value to its bounds, then lower each value to the setting it may only
            /// lower ([`Rule::at_most`]), recording a warning for each change.
            fn settle(&mut self) {
                $( if let Some(what) = self.$name.value.bound($rule) {
                    self.warnings.push(format!("{} ({}): {what}", stringify!($name), self.$name.origin));
                } )*
                $( if let Some(ceiling) = $rule.at_most.and_then(|c| self.u64_value(c)) {
                    let setting = &mut self.$name;
                    match setting.value.as_u64() {
                        Some(_) if setting.origin == Origin::Default => setting.value.set_u64(ceiling),
                        Some(v) if v > ceiling => {
                            setting.value.set_u64(ceiling);
                            self.warnings.push(format!(
                                "{} ({}): {v} may only lower {} ({ceiling}); using {ceiling}",
                                stringify!($name), setting.origin, $rule.at_most.unwrap_or_default()
                            ));
                        }
                        _ => {}
                    }
                } )*
            }

            /// The value of the integer setting `name`.
            fn u64_value(&self, name: &str) -> Option<u64> {
                match name {
                    $( stringify!($name) => self.$name.value.as_u64(), )*
                    _ => None,
                }
            }

            fn rows(&self) -> Vec<Row> {
                let declared = [$( Row {
                    name: stringify!($name),
                    rule: $rule.describe(),
                    display: self.$name.value.show(),
                    json: self.$name.value.to_json(),
                    origin: self.$name.origin.to_string(),
                }, )*];
                let when_full = when_full_decls().iter().zip(&self.when_full).map(|(d, s)| Row {
                    name: d.name,
                    rule: d.rule.describe(),
                    display: s.value.show(),
                    json: s.value.to_json(),
                    origin: s.origin.to_string(),
                });
                declared.into_iter().chain(when_full).collect()
            }
        }
    };
}

settings! {
    /// Number of shards (actor threads); sessions are spread over them by id. Default: one per
    /// core but the one that reads and decodes, at least 1; at most 64.
    shards: usize = crate::pipeline::default_shards(), Rule { min: 1, max: Some(MAX_SHARDS), ..ANY },
        env ["TOOLSTREAM_SHARDS"], flag Some("--shards"), file true;
    /// Longest input line accepted, in bytes (suffixes K, M, G); a longer line is skipped and
    /// reported.
    max_line_bytes: ByteSize = ByteSize(crate::decode::framing::DEFAULT_MAX_LINE_BYTES as u64), ANY,
        env [], flag Some("--max-line-bytes"), file true;
    /// Defer window of in-progress lifecycle lines, in ms of event time (SPEC §6).
    lifecycle_defer_ms: u64 = toolstream_actors::lifecycle::DEFAULT_DEFER_MS, ANY,
        env ["TOOLSTREAM_LIFECYCLE_DEFER_MS"], flag None, file true;
    /// How long a tool batch settles before its message ends, in ms of event time (SPEC §5.1).
    batch_settle_ms: u64 = toolstream_actors::run::DEFAULT_BATCH_SETTLE_MS, ANY,
        env ["TOOLSTREAM_BATCH_SETTLE_MS"], flag None, file true;
    /// How long a settled message waits for its turn's usage, in ms of event time (SPEC §5.1).
    usage_wait_ms: u64 = toolstream_actors::run::DEFAULT_USAGE_WAIT_MS, ANY,
        env ["TOOLSTREAM_USAGE_WAIT_MS"], flag None, file true;
    /// How often that wait checks for the usage, in ms of event time.
    usage_poll_ms: u64 = toolstream_actors::run::DEFAULT_USAGE_POLL_MS, POSITIVE,
        env ["TOOLSTREAM_USAGE_POLL_MS"], flag None, file true;
    /// Write the JSONL debug trace to `trace_file` (as `--trace FILE` does).
    trace_enabled: bool = false, ANY, env ["PI_CURSOR_SDK_EVENT_DEBUG"], flag None, file true;
    /// Where the debug trace goes when `trace_enabled` is on.
    trace_file: PathBuf = PathBuf::from(DEFAULT_TRACE_FILE), ANY,
        env ["TOOLSTREAM_TRACE_FILE"], flag None, file true;
    /// Size cap of a debug trace file, in bytes; one `artifact_truncated` line marks the cut.
    trace_limit_bytes: u64 = DEFAULT_TRACE_LIMIT_BYTES, POSITIVE,
        env ["TOOLSTREAM_TRACE_LIMIT_BYTES"], flag None, file true;
    /// A JSON file in the format of `schemas/models.json` whose entries add to or replace the
    /// bundled table of Cursor models' context windows and output limits (SPEC §6c; a `default`
    /// entry sets what unknown models count as).
    models_file: Option<PathBuf> = None, ANY, env ["TOOLSTREAM_MODELS_FILE"], flag None, file true;
    /// The Cursor model ids `toolstream models` offers when cursor-agent gives no listing
    /// (comma-separated; `auto` is always offered). The pi extension reads the variable too,
    /// when it cannot run toolstream (the pi contract names it).
    cursor_models: String = String::new(), ANY,
        env [toolstream_schemas::pi_contract::MODELS_ENV], flag None, file true;
    /// The cursor-agent binary runs start (looked up on PATH unless a path; a command's
    /// `--cursor-agent` flag wins).
    cursor_agent: PathBuf = PathBuf::from(DEFAULT_CURSOR_AGENT), ANY,
        env [CURSOR_AGENT_ENV], flag None, file true;
    /// What toolstream logs on stderr: a `tracing` filter such as `debug` or `warn,toolstream=debug`
    /// (the MCP SDK's own logs are off by default). Read when toolstream starts, before any config
    /// file: set only by its variable.
    log: String = DEFAULT_LOG.to_owned(), ANY, env [LOG_ENV], flag None, file false;
    /// The Cursor API key, scrubbed from every output (never read from the file, never shown).
    api_key: Secret = Secret::default(), ANY, env ["CURSOR_API_KEY"], flag None, file false;
    /// `serve openai`: the bearer key every request must carry (`--api-key` wins; unset: the key
    /// kept in the user's toolstream directory). Never read from the file, never shown.
    openai_api_key: Secret = Secret::default(), ANY, env [OPENAI_API_KEY_ENV], flag None, file false;
    /// `serve openai`: the browser origins allowed to call it (`http://localhost:5173`, port `*`
    /// for any port), separated by commas or spaces (`--allow-origin` wins).
    openai_allowed_origins: String = String::new(), ANY, env [OPENAI_ALLOWED_ORIGINS_ENV], flag None, file true;
    /// `serve openai`: runs at once; more requests are refused with 429 until one ends.
    openai_max_runs: usize = 4, ANY, env [], flag Some("--max-runs"), file true;
    /// `serve openai`: the deadline of one request, in seconds, from its arrival to its last byte.
    openai_request_timeout_seconds: u64 = 600, AT_LEAST_ONE, env [], flag Some("--request-timeout"), file true;
    /// `serve openai`: how long a run that called one of the client's tools waits for the result
    /// (the client's next request with the `role:"tool"` message), in seconds; then
    /// it is stopped, and a later result starts a fresh run with the whole conversation.
    openai_tool_result_timeout_seconds: u64 = 600, AT_LEAST_ONE, env [], flag Some("--tool-result-timeout"), file true;
    /// `serve openai`: the largest request body (suffixes K, M, G); a larger one is refused with
    /// 413.
    openai_max_body: ByteSize = ByteSize(8 << 20), ANY, env [], flag Some("--max-body"), file true;
    /// OTLP sinks: which content they write (SPEC §9.7), scrubbed: NO_CONTENT (none), SPAN_ONLY
    /// (prompt, response, tool arguments and results, shell lines on the spans), EVENT_ONLY (the
    /// prompt and response in a `gen_ai.client.inference.operation.details` span event),
    /// SPAN_AND_EVENT; `true`/`false` mean SPAN_ONLY/NO_CONTENT.
    otel_capture_content: ContentCapture = ContentCapture::NoContent, ANY,
        env [toolstream_sinks::otel::attrs::CAPTURE_CONTENT_ENV], flag None, file true;
    /// OTLP sinks named without a URL (`--sink otlp`): the collector's base URL (default
    /// `http://localhost:4318`, or `:4317` for gRPC). Environment only.
    otlp_endpoint: String = String::new(), ANY,
        env [toolstream_sinks::otel::config::ENDPOINT_ENV], flag None, file false;
    /// OTLP sinks named without a URL: `http/protobuf` (the default) or `grpc`; checked when such
    /// a sink opens. Environment only.
    otlp_protocol: String = String::new(), ANY,
        env [toolstream_sinks::otel::config::PROTOCOL_ENV], flag None, file false;
    /// OTLP sinks: headers sent with every export, `key=value` pairs separated by commas (values
    /// percent-decoded); a malformed one stops the sink from opening. Never shown. Environment
    /// only.
    otlp_headers: Secret = Secret::default(), ANY,
        env [toolstream_sinks::otel::config::HEADERS_ENV], flag None, file false;
    /// OTLP sinks: the resource's `service.name` (default: `service.name` in
    /// `otel_resource_attributes`, else `toolstream`). Environment only.
    otel_service_name: String = String::new(), ANY,
        env [toolstream_sinks::otel::config::SERVICE_NAME_ENV], flag None, file false;
    /// OTLP sinks: more resource attributes, `key=value` pairs separated by commas. Environment
    /// only.
    otel_resource_attributes: String = String::new(), ANY,
        env [toolstream_sinks::otel::config::RESOURCE_ATTRIBUTES_ENV], flag None, file false;
    /// Cursor hooks: the host shell a rewritten shell command runs in when the hook's input names
    /// none (then `$SHELL`, then `sh`; the first known shell that can be found).
    cursor_shell: String = String::new(), ANY, env [CURSOR_SHELL_ENV], flag None, file true;
    /// The pi tool bridge (SPEC §7): Cursor runs may call the client's tools through a local MCP
    /// endpoint; off, none are offered (nor `pi__cursor_ask_question`). Not for `serve openai`,
    /// whose tools are its client's.
    bridge_enabled: bool = true, LENIENT, env [BRIDGE_ENV], flag None, file true;
    /// The pi tool bridge: also offer pi's built-in tools (read, bash, write, edit, grep, find,
    /// ls), which Cursor has its own of. Not for `serve openai`.
    bridge_expose_builtins: bool = false, LENIENT, env [BRIDGE_EXPOSE_BUILTINS_ENV], flag None, file true;
    /// The pi tool bridge: offer `cursor_ask_question`. Not for `serve openai`.
    bridge_ask_question: bool = true, LENIENT, env [BRIDGE_ASK_QUESTION_ENV], flag None, file true;
    /// The pi tool bridge: one tool call's deadline, in ms.
    bridge_call_timeout_ms: u64 = toolstream_actors::bridge::DEFAULT_CALL_TIMEOUT_MS,
        Rule { min: 1, lenient: true, at_most: Some("bridge_tool_timeout_ms"), ..ANY },
        env [BRIDGE_CALL_TIMEOUT_ENV], flag None, file true;
    /// The pi tool bridge: the ceiling of a tool call's deadline, in ms.
    bridge_tool_timeout_ms: u64 = toolstream_actors::bridge::DEFAULT_CALL_TIMEOUT_MS,
        Rule { min: 60_000, max: Some((1 << 31) - 1), clamp_min: true, lenient: true,
            seconds_env: Some(BRIDGE_TOOL_TIMEOUT_SECONDS_ENV), at_most: None },
        env [BRIDGE_TOOL_TIMEOUT_SECONDS_ENV, "PI_CURSOR_MCP_TOOL_TIMEOUT_MS"], flag None, file true;
    /// The pi tool bridge: how long Cursor's `tools/list` may wait for the run's tools, in ms.
    bridge_connect_timeout_ms: u64 = 10_000,
        Rule { min: 1_000, max: Some(60_000), clamp_min: true, lenient: true,
            seconds_env: Some(BRIDGE_CONNECT_TIMEOUT_SECONDS_ENV), at_most: None },
        env [BRIDGE_CONNECT_TIMEOUT_SECONDS_ENV, "PI_CURSOR_MCP_CONNECT_TIMEOUT_MS"], flag None, file true;
    /// The pi tool bridge: diagnostics on stderr (`[toolstream:bridge]` lines).
    bridge_debug: bool = false, LENIENT, env ["PI_CURSOR_PI_TOOL_BRIDGE_DEBUG"], flag None, file true;
    /// The pi tool bridge: diagnostics appended to this JSONL file (allowlisted fields only).
    bridge_debug_file: Option<PathBuf> = None, LENIENT,
        env ["PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE"], flag None, file true;
    /// Cursor hooks: a turn with no `stop` and no event for this long (ms) is delivered as
    /// incomplete.
    hook_turn_idle_ms: u64 = DEFAULT_HOOK_TURN_IDLE_MS, POSITIVE,
        env ["TOOLSTREAM_HOOK_TURN_IDLE_MS"], flag None, file true;
    /// Cursor hooks: spools not written to for this many days are removed (after their delivery
    /// was tried; one removed before every sink took it is said in the hook log).
    hook_spool_max_age_days: u64 = DEFAULT_HOOK_SPOOL_MAX_AGE_DAYS, POSITIVE,
        env ["TOOLSTREAM_HOOK_SPOOL_MAX_AGE_DAYS"], flag None, file true;
    /// Cursor hooks: past this many bytes of spools, the oldest are removed (delivered ones
    /// first).
    hook_spool_max_bytes: u64 = DEFAULT_HOOK_SPOOL_MAX_BYTES, POSITIVE,
        env ["TOOLSTREAM_HOOK_SPOOL_MAX_BYTES"], flag None, file true;
}

pub const DEFAULT_HOOK_TURN_IDLE_MS: u64 = 30 * 60 * 1000;
pub const DEFAULT_HOOK_SPOOL_MAX_AGE_DAYS: u64 = 14;
pub const DEFAULT_HOOK_SPOOL_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// The `openai_api_key` and `openai_allowed_origins` settings' variables.
pub const OPENAI_API_KEY_ENV: &str = "TOOLSTREAM_OPENAI_API_KEY";
pub const OPENAI_ALLOWED_ORIGINS_ENV: &str = "TOOLSTREAM_OPENAI_ALLOWED_ORIGINS";

/// The `cursor_shell` setting's variable.
pub const CURSOR_SHELL_ENV: &str = "TOOLSTREAM_CURSOR_SHELL";

/// The pi tool bridge's variables named elsewhere (its `--help`, tests).
pub const BRIDGE_ENV: &str = "PI_CURSOR_PI_TOOL_BRIDGE";
pub const BRIDGE_EXPOSE_BUILTINS_ENV: &str = "PI_CURSOR_EXPOSE_BUILTIN_TOOLS";
pub const BRIDGE_ASK_QUESTION_ENV: &str = "PI_CURSOR_ASK_QUESTION";
pub const BRIDGE_CALL_TIMEOUT_ENV: &str = "PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS";
pub const BRIDGE_TOOL_TIMEOUT_SECONDS_ENV: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS";
pub const BRIDGE_CONNECT_TIMEOUT_SECONDS_ENV: &str = "PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS";

/// The `log` setting's variable and default (the binary reads them before anything else).
pub const LOG_ENV: &str = "TOOLSTREAM_LOG";
pub const DEFAULT_LOG: &str = "warn,rmcp=off";

/// The `cursor_agent` setting's variable and default (a name looked up on PATH).
pub const CURSOR_AGENT_ENV: &str = "TOOLSTREAM_CURSOR_AGENT";
pub const DEFAULT_CURSOR_AGENT: &str = "cursor-agent";

pub const DEFAULT_TRACE_FILE: &str = "toolstream-trace.jsonl";
pub const DEFAULT_TRACE_LIMIT_BYTES: u64 = 2 * 1024 * 1024;

/// The `<kind>_when_full` settings, one per kind of the sink registry, in its order: the file key
/// `<kind>_when_full`, the variable `TOOLSTREAM_<KIND>_WHEN_FULL`, the kind's default.
pub fn when_full_decls() -> &'static [Decl] {
    static DECLS: std::sync::LazyLock<Vec<Decl>> = std::sync::LazyLock::new(|| {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        KINDS
            .iter()
            .map(|k| {
                let name = leak(format!("{}_when_full", k.kind.setting_stem()));
                Decl {
                    name,
                    env: Box::leak(Box::new([leak(format!("TOOLSTREAM_{}", name.to_ascii_uppercase()))])),
                    flag: None,
                    in_file: true,
                    rule: ANY,
                    doc: leak(format!(
                        "When the `{}` sink's queue is full: block (wait for it) or drop_newest (drop and count \
                         what it cannot take); default {}.",
                        k.name,
                        k.when_full.as_str()
                    )),
                }
            })
            .collect()
    });
    &DECLS
}

fn when_full_index(name: &str) -> Option<usize> {
    when_full_decls().iter().position(|d| d.name == name)
}

/// Every setting, in the order `toolstream config` lists them: the table, then the sinks'.
pub fn all_decls() -> impl Iterator<Item = &'static Decl> {
    DECLS.iter().chain(when_full_decls())
}

/// Keys accepted in the config file.
pub fn file_keys() -> Vec<&'static str> {
    all_decls().filter(|d| d.in_file).map(|d| d.name).collect()
}

fn decl(name: &str) -> Option<&'static Decl> {
    all_decls().find(|d| d.name == name)
}

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
    #[error("unknown key `{key}` in config file {at}; known keys: {}", file_keys().join(", "))]
    UnknownKey { at: FileLoc, key: String },
    #[error("`{key}` is not allowed in config file {at}: set the {var} environment variable instead")]
    EnvOnly { at: FileLoc, key: String, var: &'static str },
    #[error("config file {at}: `{key}` must be {expected}, found {found}")]
    FileValue { at: FileLoc, key: String, expected: String, found: String },
    #[error("{flag} {value}: expected {expected}")]
    Flag { flag: String, value: String, expected: String },
}

impl Default for Config {
    fn default() -> Self {
        Config::defaults()
    }
}

/// One row of `toolstream config`.
struct Row {
    name: &'static str,
    /// Its [`Rule`] in words.
    rule: String,
    display: String,
    json: serde_json::Value,
    origin: String,
}

impl Config {
    /// Load defaults, then the config file, then the environment (`env` looks a variable up; empty
    /// values count as unset). The file is `explicit_file` (from `--config`), else
    /// `$TOOLSTREAM_CONFIG`, else `./toolstream.toml`, else `$XDG_CONFIG_HOME/toolstream/config.toml`
    /// (or `$HOME/.config/toolstream/config.toml` when `XDG_CONFIG_HOME` is unset), each only if it
    /// exists; an explicitly named file that is missing is an error.
    pub fn load(explicit_file: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = |var: &str| env(var).filter(|v| !v.trim().is_empty());
        let mut config = Config::defaults();
        config.config_file = locate_file(explicit_file, &env)?;
        if let Some(path) = config.config_file.value.clone() {
            config.apply_file(&path)?;
        }
        config.apply_env(&env)?;
        config.settle();
        Ok(config)
    }

    /// [`Config::load`] (no `--config`) for a command that must answer whatever the settings say
    /// (the Cursor hook): a variable that cannot be used is left out, and then a config file that
    /// cannot be read, each with a warning; the other settings still apply.
    pub fn load_forgiving(env: &dyn Fn(&str) -> Option<String>) -> Config {
        let mut left_out: Vec<String> = Vec::new();
        let mut warnings = Vec::new();
        let mut with_file = true;
        loop {
            let env = |var: &str| if left_out.iter().any(|v| v == var) { None } else { env(var) };
            let loaded = if with_file {
                Config::load(None, &env)
            } else {
                let mut config = Config::defaults();
                config.apply_env(&|var| env(var).filter(|v| !v.trim().is_empty())).map(|()| {
                    config.settle();
                    config
                })
            };
            let error = match loaded {
                Ok(mut config) => {
                    warnings.append(&mut config.warnings);
                    config.warnings = warnings;
                    return config;
                }
                Err(e) => e,
            };
            warnings.push(format!("{error}; left out"));
            match error {
                ConfigError::Env { var, .. } if !left_out.contains(&var) => left_out.push(var),
                _ if with_file => with_file = false,
                _ => return Config { warnings, ..Config::defaults() },
            }
        }
    }

    /// [`Config::load`] with the process environment.
    pub fn from_process_env(explicit_file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load(explicit_file, &|var| std::env::var(var).ok())
    }

    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
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
            let key = key.get_ref().as_str();
            if let Some(d) = decl(key).filter(|d| !d.in_file) {
                let var = d.env.first().copied().unwrap_or_default();
                return Err(ConfigError::EnvOnly { at, key: key.to_owned(), var });
            }
            let origin = Origin::File { path: path.to_owned(), key: key.to_owned() };
            match self.set_from_file(key, value.get_ref(), origin) {
                Ok(true) => {}
                Ok(false) => return Err(ConfigError::UnknownKey { at, key: key.to_owned() }),
                Err(expected) => {
                    return Err(ConfigError::FileValue {
                        at,
                        key: key.to_owned(),
                        expected,
                        found: describe(value.get_ref()),
                    })
                }
            }
        }
        Ok(())
    }

    /// Every setting (the config file first) as `(name, display value, origin, env var names,
    /// rule)`. The secrets show only `(set)` or `(unset)`.
    pub fn entries(&self) -> Vec<(&'static str, String, String, String, String)> {
        let file = match &self.config_file.value {
            Some(p) => p.display().to_string(),
            None => "(none)".to_owned(),
        };
        let config_file =
            ("config_file", file, self.config_file.origin.to_string(), CONFIG_ENV.to_owned(), String::new());
        std::iter::once(config_file)
            .chain(self.rows().into_iter().map(|r| (r.name, r.display, r.origin, env_names(r.name), r.rule)))
            .collect()
    }

    /// Every setting as `{name: {value, origin, env, flag, rule, doc}}` with typed values (numbers, booleans,
    /// strings, `null` for unset). The API key shows only `(set)` or `(unset)`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        let file = self.config_file.value.as_ref().map(|p| p.display().to_string());
        map.insert(
            "config_file".to_owned(),
            serde_json::json!({"value": file, "origin": self.config_file.origin.to_string(), "env": CONFIG_ENV,
                "flag": "--config", "rule": "", "doc": "The config file that was read."}),
        );
        for r in self.rows() {
            let doc = decl(r.name).map(|d| d.doc.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default();
            map.insert(
                r.name.to_owned(),
                serde_json::json!({"value": r.json, "origin": r.origin, "env": env_names(r.name),
                    "flag": decl(r.name).and_then(|d| d.flag), "rule": r.rule, "doc": doc}),
            );
        }
        serde_json::Value::Object(map)
    }

    /// The `when_full` configured for a sink kind (its `<kind>_when_full` setting).
    pub fn when_full(&self, kind: crate::sinks::SinkKind) -> Option<WhenFull> {
        let s = self.when_full_setting(kind)?;
        (s.origin != Origin::Default).then_some(s.value)
    }

    /// A sink kind's `<kind>_when_full` setting, default included.
    pub fn when_full_setting(&self, kind: crate::sinks::SinkKind) -> Option<&Setting<WhenFull>> {
        KINDS.iter().position(|k| k.kind == kind).and_then(|i| self.when_full.get(i))
    }

    /// What the OTLP sinks write (`otel_capture_content`), the API key scrubbed too, and where
    /// (`otlp_*`, `otel_*`).
    pub fn otel_content(&self) -> crate::sinks::OtelContent {
        let text = |s: &String| (!s.is_empty()).then(|| s.clone());
        let env = OtelEnv {
            endpoint: text(&self.otlp_endpoint.value),
            protocol: text(&self.otlp_protocol.value),
            headers: self.otlp_headers.value.expose().map(str::to_owned),
            service_name: text(&self.otel_service_name.value),
            resource_attributes: text(&self.otel_resource_attributes.value),
        };
        crate::sinks::OtelContent::new(
            self.otel_capture_content.value,
            self.api_key.value.expose().map(str::to_owned),
            env,
        )
    }
}

/// A setting's environment variables, comma-separated.
fn env_names(name: &str) -> String {
    decl(name).map(|d| d.env.join(", ")).unwrap_or_default()
}

/// The user's toolstream directory: `$XDG_CONFIG_HOME/toolstream`, or `$HOME/.config/toolstream`
/// when `XDG_CONFIG_HOME` is unset (the config file's and `serve openai`'s key file's home).
pub fn user_config_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")))
        .map(|dir| dir.join("toolstream"))
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
    if let Some(path) = env(CONFIG_ENV) {
        return named(PathBuf::from(path), Origin::Env(CONFIG_ENV.to_owned()), CONFIG_ENV);
    }
    let local = Path::new(".").join(LOCAL_CONFIG_FILE);
    let user = user_config_dir(env).map(|dir| dir.join("config.toml"));
    let found = std::iter::once(local).chain(user).find(|p| p.is_file());
    Ok(Setting::default(found))
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

fn int_expected(b: Rule) -> String {
    if b.min == 0 || b.clamp_min {
        "a non-negative integer".to_owned()
    } else {
        format!("an integer ≥ {}", b.min)
    }
}

fn check_min(n: u64, b: Rule) -> Result<(), String> {
    if n < b.min && !b.clamp_min {
        Err(int_expected(b))
    } else {
        Ok(())
    }
}

const BOOL_EXPECTED: &str = "a boolean (1/0, true/false, yes/no, on/off)";

/// A boolean setting's text: `1 true yes on` / `0 false no off`, any ASCII case, surrounding
/// whitespace ignored; anything else is `None`. The pi extension reads its switches the same way
/// (`integrations/pi/env.ts`; a test runs both on one table).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
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
        assert_eq!(c.when_full_setting(crate::sinks::SinkKind::Jsonl).map(|s| s.value), Some(WhenFull::Block));
        assert!(c.warnings.is_empty());
        assert!(c.entries().iter().all(|(_, _, origin, ..)| origin == "default"));
    }

    #[test]
    fn env_overrides_file_overrides_default_and_cli_overrides_env() {
        let path = write_file(
            "layers",
            "shards = 2\nlifecycle_defer_ms = 50\nbatch_settle_ms = 10\ntrace_file = \"t.jsonl\"\njsonl_when_full = \"block\"\n",
        );
        let mut c = load(
            Some(&path),
            &[
                ("TOOLSTREAM_LIFECYCLE_DEFER_MS", "20"),
                ("TOOLSTREAM_JSONL_WHEN_FULL", "drop-newest"),
                ("TOOLSTREAM_SHARDS", ""),
            ],
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
        assert_eq!(c.when_full_setting(crate::sinks::SinkKind::Jsonl).map(|s| s.value), Some(WhenFull::DropNewest));
        assert_eq!(c.usage_wait_ms.origin, Origin::Default);

        c.set_flag("shards", "--shards", "7").unwrap();
        assert_eq!(c.shards.value, 7);
        assert_eq!(c.shards.origin.to_string(), "flag --shards");
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
        let e = load(None, &[("TOOLSTREAM_JSONL_WHEN_FULL", "sometimes")]).unwrap_err().to_string();
        assert!(e.contains("TOOLSTREAM_JSONL_WHEN_FULL") && e.contains("block or drop_newest"), "{e}");
    }

    #[test]
    fn booleans_accept_the_usual_spellings() {
        for (s, want) in [("1", true), ("TRUE", true), ("Yes", true), ("on", true), ("0", false), ("False", false)] {
            let c = load(None, &[("PI_CURSOR_SDK_EVENT_DEBUG", s)]).unwrap();
            assert_eq!(c.trace_enabled.value, want, "{s}");
        }
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
    fn a_forgiving_load_leaves_out_only_what_it_cannot_use() {
        let path = write_file("forgiving", "shardz = 2\n");
        let home = std::env::temp_dir().join("toolstream-config-unit-no-such-home");
        let pairs = [
            ("TOOLSTREAM_CONFIG", path.to_str().unwrap()),
            ("TOOLSTREAM_SHARDS", "0"),
            ("TOOLSTREAM_USAGE_WAIT_MS", "soon"),
            ("TOOLSTREAM_CURSOR_SHELL", "/bin/sh"),
            ("HOME", home.to_str().unwrap()),
        ];
        let c = Config::load_forgiving(&env_of(&pairs));
        assert_eq!(c.cursor_shell.value, "/bin/sh");
        assert_eq!(c.usage_wait_ms.value, 125);
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(c.warnings.iter().any(|w| w.contains("TOOLSTREAM_SHARDS")), "{:?}", c.warnings);
        assert!(c.warnings.iter().any(|w| w.contains("`shardz`")), "{:?}", c.warnings);
        assert!(Config::load_forgiving(&env_of(&[("HOME", home.to_str().unwrap())])).warnings.is_empty());
    }

    #[test]
    fn otlp_headers_are_never_displayed_but_reach_the_sinks() {
        let headers = "authorization=Bearer%20sk-otlp-secret";
        let c = load(None, &[("OTEL_EXPORTER_OTLP_HEADERS", headers)]).unwrap();
        for out in [format!("{c:?}"), format!("{:?}", c.entries()), c.to_json().to_string()] {
            assert!(!out.contains("sk-otlp-secret"), "{out}");
        }
        assert_eq!(c.to_json()["otlp_headers"]["value"], "(set)");
        assert_eq!(c.otel_content().env.headers.as_deref(), Some(headers));
        let e = load(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SERVICE_NAME", "svc")]).unwrap();
        let env = e.otel_content().env;
        assert_eq!((env.endpoint.as_deref(), env.service_name.as_deref()), (Some("http://c:4318"), Some("svc")));
        let path = write_file("otelfile", "otlp_endpoint = \"http://c:4318\"\n");
        let msg = load(Some(&path), &[]).unwrap_err().to_string();
        assert!(msg.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "environment only: {msg}");
    }

    #[test]
    fn byte_sizes() {
        assert_eq!("16M".parse::<ByteSize>(), Ok(ByteSize(16 << 20)));
        assert_eq!("512k".parse::<ByteSize>(), Ok(ByteSize(512 << 10)));
        assert_eq!("1GiB".parse::<ByteSize>(), Ok(ByteSize(1 << 30)));
        assert_eq!("100".parse::<ByteSize>(), Ok(ByteSize(100)));
        assert!("x".parse::<ByteSize>().is_err());
        assert!("0".parse::<ByteSize>().is_err());
        assert_eq!(ByteSize(16 << 20).to_string(), "16M");
        let path = write_file("bytes", "openai_max_body = \"1K\"\n");
        assert_eq!(load(Some(&path), &[]).unwrap().openai_max_body.value, ByteSize(1024));
        let mut c = Config::defaults();
        c.set_flag("openai_max_body", "--max-body", "2M").unwrap();
        assert_eq!(c.openai_max_body.value, ByteSize(2 << 20));
        assert!(c.set_flag("openai_max_body", "--max-body", "lots").is_err());
        c.set_flag("openai_request_timeout_seconds", "--request-timeout", "0").unwrap();
        assert_eq!(c.openai_request_timeout_seconds.value, 1, "at least a second");
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    }

    #[test]
    fn entries_cover_every_file_key() {
        let c = Config::defaults();
        let names: Vec<&str> = c.entries().iter().map(|e| e.0).collect();
        for key in file_keys() {
            assert!(names.contains(&key), "{key}");
        }
        assert_eq!(names.len(), all_decls().count() + 1, "each setting once, plus the config file");
        assert_eq!(c.to_json()["lifecycle_defer_ms"]["value"], 75);
        assert_eq!(c.to_json()["config_file"]["value"], serde_json::Value::Null);
        assert_eq!(c.to_json()["openai_max_body"]["flag"], "--max-body");
        assert_eq!(c.to_json()["usage_wait_ms"]["flag"], serde_json::Value::Null);
        assert!(c.to_json()["shards"]["doc"].as_str().unwrap().starts_with("Number of shards"));
    }
}

#[cfg(test)]
mod bounds_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn shards_are_validated_and_clamped_with_a_message_from_every_source() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        let e = Config::load(None, &env(&[("TOOLSTREAM_SHARDS", "0"), ("HOME", "/nonexistent")])).unwrap_err();
        assert!(e.to_string().contains("TOOLSTREAM_SHARDS") && e.to_string().contains("≥ 1"), "{e}");
        let c = Config::load(None, &env(&[("TOOLSTREAM_SHARDS", "1000"), ("HOME", "/nonexistent")])).unwrap();
        assert_eq!(c.shards.value, 64);
        assert_eq!(c.warnings, ["shards (env TOOLSTREAM_SHARDS): 1000 is more than 64; using 64"]);

        let mut c = Config::defaults();
        let e = c.set_flag("shards", "--shards", "0").unwrap_err();
        assert_eq!(e.to_string(), "--shards 0: expected an integer ≥ 1");
        c.set_flag("shards", "--shards", "1000").unwrap();
        assert_eq!(c.shards.value, 64);
        assert_eq!(c.warnings, ["shards (flag --shards): 1000 is more than 64; using 64"]);
    }
}

/// The pi tool bridge's settings: the rules the extension's variables always had (a ceiling the
/// deadline may only lower, seconds or ms, clamped bounds, a bad value a warning and never an
/// error), now the table's.
#[cfg(test)]
mod bridge_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn with(vars: &[(&str, &str)]) -> Config {
        let mut vars = vars.to_vec();
        vars.push(("HOME", "/nonexistent"));
        Config::load(None, &move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())).unwrap()
    }

    fn deadlines(vars: &[(&str, &str)]) -> (u64, u64) {
        let c = with(vars);
        (c.bridge_call_timeout_ms.value, c.bridge_tool_timeout_ms.value)
    }

    #[test]
    fn defaults() {
        let c = with(&[]);
        assert!(c.bridge_enabled.value && !c.bridge_expose_builtins.value && c.bridge_ask_question.value);
        assert_eq!((c.bridge_call_timeout_ms.value, c.bridge_connect_timeout_ms.value), (3_600_000, 10_000));
        assert!(!c.bridge_debug.value && c.bridge_debug_file.value.is_none() && c.warnings.is_empty());
    }

    #[test]
    fn a_bad_switch_is_a_warning_not_an_error() {
        let c = with(&[(BRIDGE_ENV, "0"), (BRIDGE_EXPOSE_BUILTINS_ENV, "1"), (BRIDGE_ASK_QUESTION_ENV, "false")]);
        assert!(!c.bridge_enabled.value && c.bridge_expose_builtins.value && !c.bridge_ask_question.value);
        let c = with(&[(BRIDGE_ENV, "maybe")]);
        assert!(c.bridge_enabled.value);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("PI_CURSOR_PI_TOOL_BRIDGE=\"maybe\""), "{:?}", c.warnings);
    }

    #[test]
    fn the_ceiling_is_clamped_and_ms_wins_over_seconds() {
        const MS: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_MS";
        const S: &str = BRIDGE_TOOL_TIMEOUT_SECONDS_ENV;
        assert_eq!(deadlines(&[(S, "7200")]), (7_200_000, 7_200_000));
        assert_eq!(deadlines(&[(MS, "7200000")]), (7_200_000, 7_200_000));
        assert_eq!(deadlines(&[(MS, "90000"), (S, "7200")]), (90_000, 90_000));
        let low = with(&[(MS, "5")]);
        assert_eq!(low.bridge_tool_timeout_ms.value, 60_000);
        assert_eq!(low.bridge_call_timeout_ms.value, 60_000);
        assert_eq!(low.warnings.len(), 1, "{:?}", low.warnings);
        assert_eq!(deadlines(&[(S, "99999999999")]).1, 2_147_483_647);
        let bad = with(&[(MS, "x")]);
        assert_eq!(bad.bridge_tool_timeout_ms.value, 3_600_000);
        assert_eq!(bad.warnings.len(), 1, "{:?}", bad.warnings);
        // A bad ms value leaves the seconds one.
        assert_eq!(deadlines(&[(MS, "x"), (S, "120")]).1, 120_000);
    }

    #[test]
    fn the_call_timeout_may_only_lower_the_ceiling() {
        assert_eq!(deadlines(&[(BRIDGE_CALL_TIMEOUT_ENV, "500")]).0, 500);
        let high = with(&[(BRIDGE_CALL_TIMEOUT_ENV, "9000000")]);
        assert_eq!(high.bridge_call_timeout_ms.value, 3_600_000);
        assert_eq!(high.warnings.len(), 1, "{:?}", high.warnings);
        assert!(high.warnings[0].contains("may only lower bridge_tool_timeout_ms"), "{:?}", high.warnings);
        let lowered = [(BRIDGE_CALL_TIMEOUT_ENV, "100000"), ("PI_CURSOR_MCP_TOOL_TIMEOUT_MS", "60000")];
        assert_eq!(deadlines(&lowered).0, 60_000);
        let zero = with(&[(BRIDGE_CALL_TIMEOUT_ENV, "0")]);
        assert_eq!(zero.bridge_call_timeout_ms.value, 3_600_000);
        assert_eq!(zero.warnings.len(), 1, "{:?}", zero.warnings);
    }

    #[test]
    fn the_connect_timeout_is_clamped() {
        let connect = |vars: &[(&str, &str)]| with(vars).bridge_connect_timeout_ms.value;
        assert_eq!(connect(&[(BRIDGE_CONNECT_TIMEOUT_SECONDS_ENV, "5")]), 5_000);
        assert_eq!(connect(&[("PI_CURSOR_MCP_CONNECT_TIMEOUT_MS", "10")]), 1_000);
        assert_eq!(connect(&[(BRIDGE_CONNECT_TIMEOUT_SECONDS_ENV, "600")]), 60_000);
    }

    #[test]
    fn debug_file() {
        let file = |v: &str| with(&[("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE", v)]).bridge_debug_file.value;
        assert_eq!(file("/tmp/b.jsonl"), Some(PathBuf::from("/tmp/b.jsonl")));
        assert_eq!(file(" "), None);
    }

    /// The seconds variable comes first, so the ms one wins; each rule names a real setting.
    #[test]
    fn rules_name_their_own_variables_and_settings() {
        for d in all_decls() {
            if let Some(var) = d.rule.seconds_env {
                assert_eq!(d.env.first(), Some(&var), "{}", d.name);
                assert!(d.env.len() > 1, "{}: its ms variable", d.name);
            }
            if let Some(ceiling) = d.rule.at_most {
                assert!(Config::defaults().u64_value(ceiling).is_some(), "{}: {ceiling}", d.name);
            }
        }
        let tool = decl("bridge_tool_timeout_ms").unwrap().rule.describe();
        assert_eq!(
            tool,
            "60000 to 2147483647, clamped; PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS in seconds, the ms variable wins; \
             a bad value is a warning and is ignored"
        );
        let call = decl("bridge_call_timeout_ms").unwrap().rule.describe();
        assert!(call.contains("may only lower bridge_tool_timeout_ms"), "{call}");
    }

    /// The file may set them too; a bad value there is a warning as well.
    #[test]
    fn the_file_sets_them_and_a_bad_value_there_is_a_warning() {
        let dir = std::env::temp_dir().join(format!("toolstream-config-bridge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("toolstream.toml");
        std::fs::write(&path, "bridge_connect_timeout_ms = 2000\nbridge_enabled = \"maybe\"\n").unwrap();
        let c = Config::load(Some(&path), &|k: &str| (k == "HOME").then(|| "/nonexistent".to_owned())).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(c.bridge_connect_timeout_ms.value, 2_000);
        assert!(c.bridge_enabled.value);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    }
}
