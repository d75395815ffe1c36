//! The contract between the engine and the pi extension (`integrations/pi`): the names, prefixes,
//! limits, messages and modes both sides use, declared once in `schemas/pi-contract.json`. The
//! extension reads that file at load (`integrations/pi/contract.ts`); `schemas/build.rs` turns it
//! into the constants below, so the engine has no copy of its own.

include!(concat!(env!("OUT_DIR"), "/pi_contract.rs"));

/// The contract file, as the extension reads it.
pub const PI_CONTRACT_JSON: &str = include_str!("../pi-contract.json");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The constants are the file's values (what the extension reads), key for key.
    #[test]
    fn the_constants_are_the_files_values() {
        let file: Value = serde_json::from_str(PI_CONTRACT_JSON).unwrap();
        let strings = [
            ("provider", PROVIDER),
            ("api", API),
            ("neutralReplayTool", NEUTRAL_REPLAY_TOOL),
            ("replayIdPrefix", REPLAY_ID_PREFIX),
            ("cancelledMessage", CANCELLED_MESSAGE),
            ("defaultCursorMode", DEFAULT_CURSOR_MODE),
            ("modeEntry", MODE_ENTRY),
            ("autoModelId", AUTO_MODEL_ID),
            ("autoModelName", AUTO_MODEL_NAME),
            ("modelsEnv", MODELS_ENV),
            ("mcpToolPrefix", MCP_TOOL_PREFIX),
            ("bridgePathPrefix", BRIDGE_PATH_PREFIX),
        ];
        for (key, value) in strings {
            assert_eq!(file[key], value, "{key}");
        }
        assert_eq!(file["nativeReplayTools"], serde_json::json!(NATIVE_REPLAY_TOOLS));
        assert_eq!(file["cursorModes"], serde_json::json!(CURSOR_MODES));
        assert_eq!(file["previewLines"], PREVIEW_LINES);
        let keys = file.as_object().unwrap().keys().filter(|k| *k != "about").count();
        assert_eq!(keys, strings.len() + 3, "every fact of the file is a constant");
        assert!(CURSOR_MODES.contains(&DEFAULT_CURSOR_MODE));
        assert!(!NATIVE_REPLAY_TOOLS.contains(&NEUTRAL_REPLAY_TOOL));

        let models: Value = serde_json::from_str(crate::models::MODELS_JSON).unwrap();
        assert_eq!(models["default"]["contextWindow"], UNKNOWN_CONTEXT_WINDOW);
        assert_eq!(models["default"]["maxTokens"], UNKNOWN_MAX_TOKENS);
    }
}
