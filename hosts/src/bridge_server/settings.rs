//! The bridge's settings (SPEC §7), read from the `PI_CURSOR_*` environment variables the pi
//! extension and `cursor-agent` users already set: on/off, exposure switches, the per-call deadline
//! and its ceiling, the connect/list timeout, and the diagnostics. Declared here, once: their clamp
//! rules (a ceiling and a value that may only lower it, seconds or milliseconds) are the
//! extension's, not those of the `settings!` table in `toolstream_engine::config`. The endpoint's own bounds
//! (sessions, body size) are fixed limits, declared here too, not settings.

use std::path::PathBuf;

use toolstream_actors::bridge::exposure::ExposureSettings;
use toolstream_actors::bridge::DEFAULT_CALL_TIMEOUT_MS;

use super::sessions::SessionLimits;

pub const ENV_BRIDGE: &str = "PI_CURSOR_PI_TOOL_BRIDGE";
pub const ENV_EXPOSE_BUILTINS: &str = "PI_CURSOR_EXPOSE_BUILTIN_TOOLS";
pub const ENV_ASK_QUESTION: &str = "PI_CURSOR_ASK_QUESTION";
pub const ENV_CALL_TIMEOUT_MS: &str = "PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS";
pub const ENV_TOOL_TIMEOUT_MS: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_MS";
pub const ENV_TOOL_TIMEOUT_SECONDS: &str = "PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS";
pub const ENV_CONNECT_TIMEOUT_MS: &str = "PI_CURSOR_MCP_CONNECT_TIMEOUT_MS";
pub const ENV_CONNECT_TIMEOUT_SECONDS: &str = "PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS";
pub const ENV_DEBUG: &str = "PI_CURSOR_PI_TOOL_BRIDGE_DEBUG";
pub const ENV_DEBUG_FILE: &str = "PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE";

/// Bounds of the tool-call ceiling: [60 s, 2³¹−1 ms].
pub const TOOL_TIMEOUT_MIN_MS: u64 = 60_000;
pub const TOOL_TIMEOUT_MAX_MS: u64 = (1 << 31) - 1;
/// Default and bounds of the connect/list timeout: 10 s in [1 s, 60 s].
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
pub const CONNECT_TIMEOUT_MIN_MS: u64 = 1_000;
pub const CONNECT_TIMEOUT_MAX_MS: u64 = 60_000;

/// MCP sessions open at once (each ~67 KB until closed or 300 s idle), per route (one run) and per
/// endpoint. Past a cap the least recently used idle session is closed; when all are busy a new one
/// gets 503 (`super::sessions`).
pub const SESSION_LIMITS: SessionLimits = SessionLimits { per_route: 16, total: 256 };
/// Largest MCP request body, in bytes (rmcp's own default, enforced before it: 413).
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// The effective bridge settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeSettings {
    pub exposure: ExposureSettings,
    /// Per-call deadline, ms.
    pub call_timeout_ms: u64,
    /// How long `tools/list` may wait for the run's tools, ms.
    pub connect_timeout_ms: u64,
    /// Diagnostics on stderr (`[toolstream:bridge]` lines).
    pub debug_stderr: bool,
    /// Diagnostics as JSONL in this file.
    pub debug_file: Option<PathBuf>,
    /// Values that were ignored or clamped, to say on stderr.
    pub warnings: Vec<String>,
    /// The caps on MCP sessions ([`SESSION_LIMITS`]; tests lower them).
    pub sessions: SessionLimits,
}

impl Default for BridgeSettings {
    fn default() -> Self {
        BridgeSettings::from_lookup(|_| None)
    }
}

impl BridgeSettings {
    /// From the process environment.
    pub fn from_env() -> Self {
        BridgeSettings::from_lookup(|k| std::env::var(k).ok())
    }

    /// From any variable lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut warnings = Vec::new();
        let mut flag = |name: &str, default: bool| match get(name) {
            None => default,
            Some(v) => parse_flag(&v).unwrap_or_else(|| {
                warnings.push(format!("{name}={v:?} is not 0/1, true/false, on/off or yes/no; using {default}"));
                default
            }),
        };
        let exposure = ExposureSettings {
            bridge_enabled: flag(ENV_BRIDGE, true),
            expose_builtins: flag(ENV_EXPOSE_BUILTINS, false),
            ask_question: flag(ENV_ASK_QUESTION, true),
        };
        let debug_stderr = flag(ENV_DEBUG, false);

        let ceiling = millis(&get, ENV_TOOL_TIMEOUT_MS, ENV_TOOL_TIMEOUT_SECONDS, &mut warnings)
            .map(|ms| clamp(ms, TOOL_TIMEOUT_MIN_MS, TOOL_TIMEOUT_MAX_MS, "the MCP tool timeout", &mut warnings))
            .unwrap_or(DEFAULT_CALL_TIMEOUT_MS);
        let call_timeout_ms = match get(ENV_CALL_TIMEOUT_MS) {
            None => ceiling,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => {
                    if ms > ceiling {
                        warnings
                            .push(format!("{ENV_CALL_TIMEOUT_MS}={ms} may only lower the deadline; using {ceiling}"));
                    }
                    ms.min(ceiling)
                }
                _ => {
                    warnings.push(format!("{ENV_CALL_TIMEOUT_MS}={v:?} is not a positive integer; ignored"));
                    ceiling
                }
            },
        };
        let connect_timeout_ms = millis(&get, ENV_CONNECT_TIMEOUT_MS, ENV_CONNECT_TIMEOUT_SECONDS, &mut warnings)
            .map(|ms| {
                clamp(ms, CONNECT_TIMEOUT_MIN_MS, CONNECT_TIMEOUT_MAX_MS, "the MCP connect timeout", &mut warnings)
            })
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT_MS);
        let debug_file = get(ENV_DEBUG_FILE).filter(|p| !p.trim().is_empty()).map(PathBuf::from);
        BridgeSettings {
            exposure,
            call_timeout_ms,
            connect_timeout_ms,
            debug_stderr,
            debug_file,
            warnings,
            sessions: SESSION_LIMITS,
        }
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// A duration given in ms (`ms_var`, which wins) or seconds (`s_var`); `None` when neither is set
/// (or valid).
fn millis(get: &impl Fn(&str) -> Option<String>, ms_var: &str, s_var: &str, warnings: &mut Vec<String>) -> Option<u64> {
    let mut read = |var: &str, scale: u64| {
        let v = get(var)?;
        match v.trim().parse::<u64>() {
            Ok(n) => Some(n.saturating_mul(scale)),
            Err(_) => {
                warnings.push(format!("{var}={v:?} is not a non-negative integer; ignored"));
                None
            }
        }
    };
    read(ms_var, 1).or_else(|| read(s_var, 1000))
}

fn clamp(ms: u64, min: u64, max: u64, what: &str, warnings: &mut Vec<String>) -> u64 {
    let c = ms.clamp(min, max);
    if c != ms {
        warnings.push(format!("{what} {ms} ms is outside [{min}, {max}] ms; using {c} ms"));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> BridgeSettings {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        BridgeSettings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let s = with(&[]);
        assert_eq!(s.exposure, ExposureSettings { bridge_enabled: true, expose_builtins: false, ask_question: true });
        assert_eq!((s.call_timeout_ms, s.connect_timeout_ms), (3_600_000, 10_000));
        assert!(!s.debug_stderr && s.debug_file.is_none() && s.warnings.is_empty());
    }

    #[test]
    fn switches() {
        let s = with(&[(ENV_BRIDGE, "0"), (ENV_EXPOSE_BUILTINS, "1"), (ENV_ASK_QUESTION, "false"), (ENV_DEBUG, "1")]);
        assert_eq!(s.exposure, ExposureSettings { bridge_enabled: false, expose_builtins: true, ask_question: false });
        assert!(s.debug_stderr);
        let s = with(&[(ENV_BRIDGE, "maybe")]);
        assert!(s.exposure.bridge_enabled);
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn the_ceiling_is_clamped_and_ms_wins_over_seconds() {
        assert_eq!(with(&[(ENV_TOOL_TIMEOUT_SECONDS, "7200")]).call_timeout_ms, 7_200_000);
        assert_eq!(with(&[(ENV_TOOL_TIMEOUT_MS, "7200000")]).call_timeout_ms, 7_200_000);
        assert_eq!(with(&[(ENV_TOOL_TIMEOUT_MS, "90000"), (ENV_TOOL_TIMEOUT_SECONDS, "7200")]).call_timeout_ms, 90_000);
        let low = with(&[(ENV_TOOL_TIMEOUT_MS, "5")]);
        assert_eq!(low.call_timeout_ms, 60_000);
        assert_eq!(low.warnings.len(), 1);
        assert_eq!(with(&[(ENV_TOOL_TIMEOUT_SECONDS, "99999999999")]).call_timeout_ms, 2_147_483_647);
        assert_eq!(with(&[(ENV_TOOL_TIMEOUT_MS, "x")]).call_timeout_ms, 3_600_000);
    }

    #[test]
    fn the_call_timeout_may_only_lower_the_ceiling() {
        assert_eq!(with(&[(ENV_CALL_TIMEOUT_MS, "500")]).call_timeout_ms, 500);
        let high = with(&[(ENV_CALL_TIMEOUT_MS, "9000000")]);
        assert_eq!(high.call_timeout_ms, 3_600_000);
        assert_eq!(high.warnings.len(), 1);
        assert_eq!(with(&[(ENV_CALL_TIMEOUT_MS, "100000"), (ENV_TOOL_TIMEOUT_MS, "60000")]).call_timeout_ms, 60_000);
        assert_eq!(with(&[(ENV_CALL_TIMEOUT_MS, "0")]).call_timeout_ms, 3_600_000);
    }

    #[test]
    fn the_connect_timeout_is_clamped() {
        assert_eq!(with(&[(ENV_CONNECT_TIMEOUT_SECONDS, "5")]).connect_timeout_ms, 5_000);
        assert_eq!(with(&[(ENV_CONNECT_TIMEOUT_MS, "10")]).connect_timeout_ms, 1_000);
        assert_eq!(with(&[(ENV_CONNECT_TIMEOUT_SECONDS, "600")]).connect_timeout_ms, 60_000);
    }

    #[test]
    fn debug_file() {
        assert_eq!(with(&[(ENV_DEBUG_FILE, "/tmp/b.jsonl")]).debug_file, Some(PathBuf::from("/tmp/b.jsonl")));
        assert_eq!(with(&[(ENV_DEBUG_FILE, " ")]).debug_file, None);
    }
}
