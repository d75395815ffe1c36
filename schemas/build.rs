//! Generates `toolstream_schemas::pi_contract`'s constants from `pi-contract.json` (the facts the
//! engine shares with the pi extension, which reads the same file at load) and the unknown-model
//! limits from `models.json`'s `default`. Constants rather than a value parsed at run time: they
//! serve in const contexts and patterns, and a missing, mistyped or malformed fact fails the build
//! instead of a run.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

/// How a fact becomes a Rust constant.
enum Kind {
    Str,
    StrList,
    Count,
}

/// Each fact: its JSON key, its constant, its type and its doc line.
const FACTS: &[(&str, &str, Kind, &str)] = &[
    ("provider", "PROVIDER", Kind::Str, "The pi provider of every Cursor message and model change."),
    ("api", "API", Kind::Str, "The `api` of every Cursor message (pi session files carry it)."),
    ("neutralReplayTool", "NEUTRAL_REPLAY_TOOL", Kind::Str, "The neutral replay tool (Cursor activity cards)."),
    ("nativeReplayTools", "NATIVE_REPLAY_TOOLS", Kind::StrList, "The pi built-ins a card may replay as."),
    ("replayIdPrefix", "REPLAY_ID_PREFIX", Kind::Str, "How every replayed tool call's id begins."),
    ("previewLines", "PREVIEW_LINES", Kind::Count, "Lines of a collapsed card preview (SPEC §8)."),
    (
        "cancelledMessage",
        "CANCELLED_MESSAGE",
        Kind::Str,
        "The error message of a cancelled run's last message (SPEC §5.4).",
    ),
    ("cursorModes", "CURSOR_MODES", Kind::StrList, "Cursor's modes (`cursor-agent --mode`, `/cursor-mode` in pi)."),
    ("defaultCursorMode", "DEFAULT_CURSOR_MODE", Kind::Str, "Cursor's own default mode (no `--mode` option)."),
    ("modeEntry", "MODE_ENTRY", Kind::Str, "The pi session entry that keeps the chosen Cursor mode."),
    ("autoModelId", "AUTO_MODEL_ID", Kind::Str, "The model always offered: Cursor picks."),
    ("autoModelName", "AUTO_MODEL_NAME", Kind::Str, "Its display name."),
    (
        "modelsEnv",
        "MODELS_ENV",
        Kind::Str,
        "The model ids offered when cursor-agent gives no listing (comma-separated).",
    ),
    ("mcpToolPrefix", "MCP_TOOL_PREFIX", Kind::Str, "How the MCP name of every pi tool exposed to Cursor begins."),
    ("bridgePathPrefix", "BRIDGE_PATH_PREFIX", Kind::Str, "How the path of every pi tool bridge route begins."),
];

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let contract = read_json(Path::new(&dir).join("pi-contract.json"));
    let models = read_json(Path::new(&dir).join("models.json"));

    let mut code = String::new();
    for (key, name, kind, doc) in FACTS {
        let value = &contract[key];
        let rust = match kind {
            Kind::Str => value.as_str().map(|s| format!("&str = {s:?}")),
            Kind::StrList => value.as_array().and_then(|items| {
                let items: Option<Vec<String>> = items.iter().map(|i| i.as_str().map(|s| format!("{s:?}"))).collect();
                items.map(|i| format!("&[&str] = &[{}]", i.join(", ")))
            }),
            Kind::Count => value.as_u64().map(|n| format!("usize = {n}")),
        };
        let Some(rust) = rust else { fail(&format!("pi-contract.json: `{key}` is missing or of the wrong type")) };
        let _ = writeln!(code, "/// {doc} (`{key}`)\npub const {name}: {rust};");
    }
    let unknown = &models["default"];
    for (key, name) in [("contextWindow", "UNKNOWN_CONTEXT_WINDOW"), ("maxTokens", "UNKNOWN_MAX_TOKENS")] {
        let Some(n) = unknown[key].as_u64() else { fail(&format!("models.json: `default.{key}` is missing")) };
        let _ = writeln!(
            code,
            "/// What an unknown model counts as: `models.json` `default.{key}`.\npub const {name}: u64 = {n};"
        );
    }
    if let Err(e) = std::fs::write(Path::new(&out).join("pi_contract.rs"), code) {
        fail(&format!("cannot write the generated contract: {e}"));
    }
    println!("cargo::rerun-if-changed=pi-contract.json");
    println!("cargo::rerun-if-changed=models.json");
    println!("cargo::rerun-if-changed=build.rs");
}

fn read_json(path: std::path::PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    serde_json::from_str(&text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())))
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1)
}
