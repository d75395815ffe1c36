//! The bridge's effective settings (SPEC §7), taken from the settings table
//! (`toolstream_engine::config`, the `bridge_*` settings: on/off, exposure switches, the per-call
//! deadline and the ceiling it may only lower, the connect/list timeout, the diagnostics), where
//! their rules live. The endpoint's own bounds (sessions, body size) are fixed limits, declared
//! here, not settings.

use std::path::PathBuf;

use toolstream_actors::bridge::exposure::ExposureSettings;
use toolstream_engine::config::Config;

use super::sessions::SessionLimits;

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
    /// The caps on MCP sessions ([`SESSION_LIMITS`]; tests lower them).
    pub sessions: SessionLimits,
}

impl Default for BridgeSettings {
    /// The table's defaults.
    fn default() -> Self {
        BridgeSettings::from_config(&Config::defaults())
    }
}

impl BridgeSettings {
    /// The `bridge_*` settings of `config` (values it could not use were said as its warnings).
    pub fn from_config(config: &Config) -> Self {
        BridgeSettings {
            exposure: ExposureSettings {
                bridge_enabled: config.bridge_enabled.value,
                expose_builtins: config.bridge_expose_builtins.value,
                ask_question: config.bridge_ask_question.value,
            },
            call_timeout_ms: config.bridge_call_timeout_ms.value,
            connect_timeout_ms: config.bridge_connect_timeout_ms.value,
            debug_stderr: config.bridge_debug.value,
            debug_file: config.bridge_debug_file.value.clone(),
            sessions: SESSION_LIMITS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let s = BridgeSettings::default();
        assert_eq!(s.exposure, ExposureSettings { bridge_enabled: true, expose_builtins: false, ask_question: true });
        assert_eq!((s.call_timeout_ms, s.connect_timeout_ms), (3_600_000, 10_000));
        assert!(!s.debug_stderr && s.debug_file.is_none());
        assert_eq!(s.sessions, SESSION_LIMITS);
    }

    /// Each field is its setting (the table checks and bounds them: `config::bridge_tests`).
    #[test]
    fn every_field_is_its_setting() {
        let mut c = Config::defaults();
        c.bridge_enabled.value = false;
        c.bridge_expose_builtins.value = true;
        c.bridge_ask_question.value = false;
        c.bridge_call_timeout_ms.value = 500;
        c.bridge_connect_timeout_ms.value = 5_000;
        c.bridge_debug.value = true;
        c.bridge_debug_file.value = Some(PathBuf::from("/tmp/b.jsonl"));
        let s = BridgeSettings::from_config(&c);
        assert_eq!(s.exposure, ExposureSettings { bridge_enabled: false, expose_builtins: true, ask_question: false });
        assert_eq!((s.call_timeout_ms, s.connect_timeout_ms), (500, 5_000));
        assert!(s.debug_stderr);
        assert_eq!(s.debug_file, Some(PathBuf::from("/tmp/b.jsonl")));
    }
}
