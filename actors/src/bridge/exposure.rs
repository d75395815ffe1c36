//! Which pi tools the bridge exposes to Cursor and under which MCP names (SPEC §7): pure functions
//! over pi's tool definitions — the exclusions, the `pi__` names with the collision rule, the MCP
//! descriptions and input schemas.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolstream_schemas::ids::hash8;

/// The internal replay tool: never exposed.
pub use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL as REPLAY_TOOL;

/// pi built-ins Cursor already has natively (the ones its cards replay as): hidden unless
/// `PI_CURSOR_EXPOSE_BUILTIN_TOOLS=1`.
pub use toolstream_schemas::pi_contract::NATIVE_REPLAY_TOOLS as OVERLAPPING_BUILTINS;

/// The ask-question tool, exposed as `pi__cursor_ask_question` when `PI_CURSOR_ASK_QUESTION` is on.
pub const ASK_QUESTION_TOOL: &str = "cursor_ask_question";

/// Prefix of every exposed MCP name.
pub use toolstream_schemas::pi_contract::MCP_TOOL_PREFIX as MCP_PREFIX;

/// One pi tool definition, as pi's tool registry (and `toolstream bridge --tools FILE`) gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PiToolDef {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// A JSON schema; used as the MCP input schema when it is an object schema.
    #[serde(default)]
    pub parameters: Value,
    /// pi's prompt guidelines for the tool, appended to the MCP description.
    #[serde(default, rename = "promptGuidelines")]
    pub prompt_guidelines: Vec<String>,
}

/// The switches of exposure (SPEC §7), read from `PI_CURSOR_*` by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExposureSettings {
    /// `PI_CURSOR_PI_TOOL_BRIDGE` (default on).
    pub bridge_enabled: bool,
    /// `PI_CURSOR_EXPOSE_BUILTIN_TOOLS` (default off).
    pub expose_builtins: bool,
    /// `PI_CURSOR_ASK_QUESTION` (default on).
    pub ask_question: bool,
}

impl Default for ExposureSettings {
    fn default() -> Self {
        ExposureSettings { bridge_enabled: true, expose_builtins: false, ask_question: true }
    }
}

/// One pi tool as Cursor sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedTool {
    /// The MCP name Cursor calls (`pi__…`).
    pub mcp_name: String,
    /// The real pi tool name (cards and pi history use it).
    pub pi_name: String,
    pub description: String,
    /// Always an object schema.
    pub input_schema: Map<String, Value>,
}

/// Whether pi's tool `name` is bridgeable under `settings` (the bridge itself being on).
pub fn is_exposed(name: &str, settings: &ExposureSettings) -> bool {
    if name == REPLAY_TOOL {
        return false;
    }
    if name == ASK_QUESTION_TOOL {
        return settings.ask_question;
    }
    settings.expose_builtins || !OVERLAPPING_BUILTINS.contains(&name)
}

/// The tools the bridge exposes, in pi's order, named uniquely. Empty when the bridge is off; the
/// bridge is enabled for a run iff this is not empty. A later definition with a name already seen
/// is ignored (pi's registry holds one tool per name).
pub fn expose(tools: &[PiToolDef], settings: &ExposureSettings) -> Vec<ExposedTool> {
    if !settings.bridge_enabled {
        return Vec::new();
    }
    let mut seen_pi = HashSet::new();
    let mut taken = HashSet::new();
    let mut out = Vec::new();
    for tool in tools {
        if !is_exposed(&tool.name, settings) || !seen_pi.insert(tool.name.as_str()) {
            continue;
        }
        let mcp_name = unique_mcp_name(&tool.name, &mut taken);
        out.push(ExposedTool {
            description: mcp_description(tool, &mcp_name),
            input_schema: input_schema(&tool.parameters),
            pi_name: tool.name.clone(),
            mcp_name,
        });
    }
    out
}

/// `name` with every run of characters outside `[A-Za-z0-9_-]` replaced by `_`, edge `_` trimmed;
/// `tool` when nothing is left.
pub fn name_stem(name: &str) -> String {
    let mut stem = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            stem.push(c);
            in_run = false;
        } else if !in_run {
            stem.push('_');
            in_run = true;
        }
    }
    let trimmed = stem.trim_matches('_');
    if trimmed.is_empty() {
        "tool".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// `pi__<stem>`; on collision `pi__<stem>__<sha256(name) first 8 hex>`, then `…_2`, `…_3`.
fn unique_mcp_name(name: &str, taken: &mut HashSet<String>) -> String {
    let plain = format!("{MCP_PREFIX}{}", name_stem(name));
    let chosen = if !taken.contains(&plain) {
        plain
    } else {
        let hashed = format!("{plain}__{}", hash8(name));
        if !taken.contains(&hashed) {
            hashed
        } else {
            (2u64..).map(|n| format!("{hashed}_{n}")).find(|c| !taken.contains(c)).unwrap_or(hashed)
        }
    };
    taken.insert(chosen.clone());
    chosen
}

/// The pi description (or `Run pi tool <name>`), then pi's prompt guidelines, one per line, then
/// `Call MCP name <mcp> (pi tool: <pi>).`; the three parts separated by a blank line.
pub fn mcp_description(tool: &PiToolDef, mcp_name: &str) -> String {
    let mut parts = Vec::with_capacity(3);
    match tool.description.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => parts.push(d.to_owned()),
        _ => parts.push(format!("Run pi tool {}", tool.name)),
    }
    let guidelines: Vec<&str> = tool.prompt_guidelines.iter().map(|g| g.trim()).filter(|g| !g.is_empty()).collect();
    if !guidelines.is_empty() {
        parts.push(guidelines.join("\n"));
    }
    parts.push(format!("Call MCP name {mcp_name} (pi tool: {}).", tool.name));
    parts.join("\n\n")
}

/// The pi parameters when they are an object schema (`"type": "object"`), else an empty object
/// schema.
pub fn input_schema(parameters: &Value) -> Map<String, Value> {
    match parameters {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => map.clone(),
        _ => match json!({"type": "object", "properties": {}}) {
            Value::Object(map) => map,
            _ => Map::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> PiToolDef {
        PiToolDef { name: name.into(), description: None, parameters: Value::Null, prompt_guidelines: vec![] }
    }

    /// `mcp=pi` for each exposed tool.
    fn names(tools: &[ExposedTool]) -> Vec<String> {
        tools.iter().map(|t| format!("{}={}", t.mcp_name, t.pi_name)).collect()
    }

    #[test]
    fn builtins_and_the_replay_tool_are_hidden_by_default() {
        let defs: Vec<_> =
            ["read", "bash", "sem_reindex", "cursor", "ls", "todo", "find"].into_iter().map(def).collect();
        let on = ExposureSettings::default();
        assert_eq!(names(&expose(&defs, &on)), ["pi__sem_reindex=sem_reindex", "pi__todo=todo"]);
        let builtins = ExposureSettings { expose_builtins: true, ..on };
        let exposed: Vec<_> = expose(&defs, &builtins).into_iter().map(|t| t.pi_name).collect();
        assert_eq!(exposed, ["read", "bash", "sem_reindex", "ls", "todo", "find"]);
        let off = ExposureSettings { bridge_enabled: false, expose_builtins: true, ask_question: true };
        assert!(expose(&defs, &off).is_empty());
    }

    #[test]
    fn ask_question_follows_its_switch_and_the_bridge() {
        let defs = vec![def(ASK_QUESTION_TOOL)];
        let on = ExposureSettings::default();
        assert_eq!(names(&expose(&defs, &on)), ["pi__cursor_ask_question=cursor_ask_question"]);
        assert!(expose(&defs, &ExposureSettings { ask_question: false, ..on }).is_empty());
        assert!(expose(&defs, &ExposureSettings { bridge_enabled: false, ..on }).is_empty());
    }

    #[test]
    fn stems_replace_runs_and_trim_edges() {
        assert_eq!(name_stem("sem_reindex"), "sem_reindex");
        assert_eq!(name_stem("web search!!now"), "web_search_now");
        assert_eq!(name_stem("  .x.  "), "x");
        assert_eq!(name_stem("__a-b__"), "a-b");
        assert_eq!(name_stem("!!!"), "tool");
        assert_eq!(name_stem(""), "tool");
        assert_eq!(name_stem("ünï"), "n");
    }

    #[test]
    fn collisions_get_the_hash_then_a_counter() {
        let defs: Vec<_> = ["a.b", "a b", "a_b", "a:b"].into_iter().map(def).collect();
        let got = expose(&defs, &ExposureSettings::default());
        let h = |n: &str| hash8(n);
        assert_eq!(
            names(&got),
            vec![
                "pi__a_b=a.b".to_owned(),
                format!("pi__a_b__{}=a b", h("a b")),
                format!("pi__a_b__{}=a_b", h("a_b")),
                format!("pi__a_b__{}=a:b", h("a:b")),
            ]
        );
        // The hashed name itself taken: the counter follows.
        let hashed = format!("a_b__{}", h("a.b"));
        let defs = vec![def("a_b"), def(&hashed), def("a.b"), def("a.b ")];
        let got = expose(&defs, &ExposureSettings::default());
        assert_eq!(got[2].mcp_name, format!("pi__{hashed}_2"));
        assert_eq!(got[3].mcp_name, format!("pi__a_b__{}", h("a.b ")));
        let unique: HashSet<_> = got.iter().map(|t| &t.mcp_name).collect();
        assert_eq!(unique.len(), got.len());
    }

    #[test]
    fn duplicate_pi_names_are_exposed_once() {
        let got = expose(&[def("x"), def("x")], &ExposureSettings::default());
        assert_eq!(names(&got), ["pi__x=x"]);
    }

    #[test]
    fn descriptions_carry_guidelines_and_the_call_line() {
        let mut tool = def("sem.reindex");
        assert_eq!(
            mcp_description(&tool, "pi__sem_reindex"),
            "Run pi tool sem.reindex\n\nCall MCP name pi__sem_reindex (pi tool: sem.reindex)."
        );
        tool.description = Some(" Rebuild the index. ".into());
        tool.prompt_guidelines = vec!["Use after big edits.".into(), " ".into(), "Never twice.".into()];
        assert_eq!(
            mcp_description(&tool, "pi__sem_reindex"),
            "Rebuild the index.\n\nUse after big edits.\nNever twice.\n\nCall MCP name pi__sem_reindex (pi tool: sem.reindex)."
        );
        tool.description = Some("   ".into());
        assert!(mcp_description(&tool, "m").starts_with("Run pi tool sem.reindex\n\n"));
    }

    #[test]
    fn input_schemas_are_objects() {
        let obj = json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(Value::Object(input_schema(&obj)), obj);
        let empty = json!({"type": "object", "properties": {}});
        for other in [Value::Null, json!({"type": "string"}), json!([1]), json!({"properties": {}}), json!("x")] {
            assert_eq!(Value::Object(input_schema(&other)), empty, "{other}");
        }
    }

    #[test]
    fn definitions_parse_from_pi_json() {
        let defs: Vec<PiToolDef> = serde_json::from_value(json!([
            {"name": "todo", "description": "Todos", "parameters": {"type": "object", "properties": {}},
             "promptGuidelines": ["Keep it short."]},
            {"name": "bare"}
        ]))
        .unwrap();
        assert_eq!(defs[0].prompt_guidelines, ["Keep it short."]);
        assert_eq!(defs[1].parameters, Value::Null);
    }
}
