//! The Cursor IDE's chat database (SPEC §1.3, §9.6; seed 003): the wire shapes of its
//! `cursorDiskKV` rows — `composerData:<id>` (a conversation: header and bubble order),
//! `bubbleId:<composer>:<bubble>` (one message) with its `toolFormerData`, and the Cursor 3.x
//! `composer.composerHeaders` index in `ItemTable` — plus the one table of numeric
//! `toolFormerData.tool` ids and how a bubble's `rawArgs` / `params` / `result` map to the
//! canonical (CLI `stream-json`) args and results the typed tool models read, both ways.
//!
//! Like every wire model here, each field is optional and unknown fields are kept (`extra`).
//! The mapping is data: per tool kind, pairs of (Cursor key, canonical key). Reading renames a
//! Cursor key to its canonical key unless that one is already there; writing does the inverse, so
//! canonical → bubble → canonical is the identity. A few Cursor shapes need more than a rename
//! (glob's `directories`, edits stored as content ids and a precomputed diff, grep stats kept in
//! `additionalData`); they are converted on reading only.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cursor_cli::tool_models::{model, report_extra, visit_field, Extra, Unmodeled};
use crate::event::ResultStatus;
use crate::num::Int;
use crate::tools::{Tool, ToolKind};

/// Key prefix of a conversation row in `cursorDiskKV`.
pub const COMPOSER_DATA_PREFIX: &str = "composerData:";
/// Key prefix of a bubble row in `cursorDiskKV` (`bubbleId:<composer>:<bubble>`).
pub const BUBBLE_PREFIX: &str = "bubbleId:";
/// Key prefix of a content-addressed file body in `cursorDiskKV` (edit results refer to them).
pub const CONTENT_PREFIX: &str = "composer.content.";
/// The `ItemTable` key of Cursor 3.x's conversation index.
pub const HEADERS_KEY: &str = "composer.composerHeaders";

/// Bubble `type` of a user message.
pub const BUBBLE_USER: i64 = 1;
/// Bubble `type` of an assistant message (text, thinking or a tool call).
pub const BUBBLE_ASSISTANT: i64 = 2;
/// `capabilityType` of a tool-call bubble.
pub const CAPABILITY_TOOL: i64 = 15;
/// `capabilityType` of a thinking bubble.
pub const CAPABILITY_THINKING: i64 = 30;
/// The bubble format version toolstream writes (`_v`).
pub const BUBBLE_VERSION: i64 = 3;
/// The `composerData` format version toolstream writes (`_v`, as Cursor 3.6 does).
pub const COMPOSER_VERSION: i64 = 16;

/// The `bubbleId:<composer>:<bubble>` key of a bubble.
pub fn bubble_key(composer: &str, bubble: &str) -> String {
    format!("{BUBBLE_PREFIX}{composer}:{bubble}")
}

/// The `composerData:<id>` key of a conversation.
pub fn composer_key(composer: &str) -> String {
    format!("{COMPOSER_DATA_PREFIX}{composer}")
}

model! {
    /// `cursorDiskKV` `composerData:<id>`: one conversation.
    pub struct ComposerData {
        #[serde(rename = "_v")]
        pub version: Option<Value>,
        pub composer_id: Option<String>,
        pub name: Option<String>,
        /// Unix ms (a number; older builds wrote strings).
        pub created_at: Option<Value>,
        pub last_updated_at: Option<Value>,
        /// `completed`, `aborted`, `generating`, `none`, … (toolstream also writes `error`).
        pub status: Option<String>,
        /// The bubble order (newer builds): the bubbles themselves are separate rows.
        pub full_conversation_headers_only: Option<Vec<ConversationHeader>>,
        /// The bubbles inline (older builds).
        pub conversation: Option<Vec<Value>>,
        pub model_config: Option<ModelConfig>,
        pub workspace_identifier: Option<WorkspaceIdentifier>,
    }

    /// One entry of `fullConversationHeadersOnly`.
    pub struct ConversationHeader {
        pub bubble_id: Option<String>,
        #[serde(rename = "type")]
        pub kind: Option<Int>,
    }

    /// `modelConfig` of a conversation, `modelInfo` of a bubble.
    pub struct ModelConfig {
        pub model_name: Option<String>,
    }

    /// The workspace a conversation belongs to.
    pub struct WorkspaceIdentifier {
        pub id: Option<String>,
        pub uri: Option<WorkspaceUri>,
    }

    /// A VS Code URI as JSON.
    pub struct WorkspaceUri {
        pub fs_path: Option<String>,
        pub path: Option<String>,
    }

    /// `ItemTable` `composer.composerHeaders` (Cursor 3.x): every conversation's header, kept as
    /// JSON (entries are rewritten whole; [`ComposerHead`] reads one).
    pub struct ComposerHeaders {
        pub all_composers: Option<Vec<Value>>,
    }

    /// One entry of `allComposers`.
    pub struct ComposerHead {
        pub composer_id: Option<String>,
        pub name: Option<String>,
        pub created_at: Option<Value>,
        pub last_updated_at: Option<Value>,
        pub workspace_identifier: Option<WorkspaceIdentifier>,
    }

    /// `cursorDiskKV` `bubbleId:<composer>:<bubble>`: one message.
    pub struct Bubble {
        #[serde(rename = "_v")]
        pub version: Option<Value>,
        /// 1 user, 2 assistant.
        #[serde(rename = "type")]
        pub kind: Option<Int>,
        pub bubble_id: Option<String>,
        /// ISO-8601 (unix ms in some builds).
        pub created_at: Option<Value>,
        pub text: Option<String>,
        pub capability_type: Option<Int>,
        pub thinking: Option<Thinking>,
        pub thinking_duration_ms: Option<Int>,
        pub tool_former_data: Option<ToolFormerData>,
        pub model_info: Option<ModelConfig>,
    }

    /// A bubble's reasoning.
    pub struct Thinking {
        pub text: Option<String>,
        pub signature: Option<String>,
    }

    /// A tool bubble's call.
    pub struct ToolFormerData {
        /// The numeric tool id ([`BUBBLE_TOOLS`]).
        pub tool: Option<Int>,
        pub tool_call_id: Option<String>,
        pub tool_index: Option<Int>,
        pub model_call_id: Option<String>,
        /// `loading`, `completed`, `cancelled`, `error`.
        pub status: Option<String>,
        pub name: Option<String>,
        /// The model's arguments: a JSON string (an object is accepted too).
        pub raw_args: Option<Value>,
        /// Cursor's normalised parameters: a JSON string (an object is accepted too).
        pub params: Option<Value>,
        /// The result: a JSON string (an object is accepted too).
        pub result: Option<Value>,
        pub additional_data: Option<Value>,
        /// `accepted` / `rejected`, for calls that needed approval.
        pub user_decision: Option<String>,
    }
}

impl WorkspaceIdentifier {
    /// The workspace folder on disk (`uri.fsPath`, else `uri.path`).
    pub fn folder(&self) -> Option<&str> {
        let uri = self.uri.as_ref()?;
        uri.fs_path.as_deref().or(uri.path.as_deref()).filter(|p| !p.is_empty())
    }
}

/// `additionalData` key where toolstream records the result's oneof arm (`success`, `failure`,
/// `rejected`, `timeout`, …), which a bubble's `status` alone cannot tell.
pub const RESULT_ARM_KEY: &str = "resultStatus";

/// A bubble time (`createdAt`): ISO-8601, or unix ms as a number or a decimal string.
pub fn time_ms(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok().or_else(|| crate::iso_time::parse_ms(s)),
        _ => None,
    }
}

// ------------------------------------------------------------------------------------------------
// Numeric tool ids
// ------------------------------------------------------------------------------------------------

/// One numeric `toolFormerData.tool` id: Cursor's name for it and the canonical kind it maps to
/// (`None`: a tool toolstream has no kind for, shown by its name as an unknown tool).
#[derive(Debug)]
pub struct BubbleTool {
    pub id: i64,
    pub name: &'static str,
    pub kind: Option<ToolKind>,
}

const fn t(id: i64, name: &'static str, kind: Option<ToolKind>) -> BubbleTool {
    BubbleTool { id, name, kind }
}

use ToolKind as K;

/// Every known id (`../shared/fixtures/cursor-bubbles/tool-table-toolpath.json`, ids extracted
/// from Cursor's workbench), with SPEC §1.3's mapping to canonical kinds. Where a kind has several
/// ids (old and `_v2` tools), the last one listed is the one toolstream writes.
pub static BUBBLE_TOOLS: [BubbleTool; 53] = [
    t(0, "unspecified", None),
    t(1, "read_semsearch_files", None),
    t(3, "ripgrep_search", Some(K::Grep)),
    t(5, "read_file", Some(K::Read)),
    t(6, "list_dir", Some(K::Ls)),
    t(7, "edit_file", Some(K::Edit)),
    t(8, "file_search", Some(K::Glob)),
    t(9, "semantic_search_full", Some(K::SemSearch)),
    t(11, "delete_file", Some(K::Delete)),
    t(12, "reapply", None),
    t(15, "run_terminal_command_v2", Some(K::Shell)),
    t(16, "fetch_rules", None),
    t(18, "web_search", Some(K::WebSearch)),
    t(19, "mcp", Some(K::Mcp)),
    t(23, "search_symbols", None),
    t(24, "background_composer_followup", None),
    t(25, "knowledge_base", None),
    t(26, "fetch_pull_request", None),
    t(27, "deep_search", None),
    t(28, "create_diagram", None),
    t(29, "fix_lints", None),
    t(30, "read_lints", Some(K::ReadLints)),
    t(31, "go_to_definition", None),
    t(32, "task", Some(K::Task)),
    t(33, "await_task", None),
    t(34, "todo_read", None),
    t(35, "todo_write", Some(K::UpdateTodos)),
    t(38, "edit_file_v2", Some(K::Edit)),
    t(39, "list_dir_v2", Some(K::Ls)),
    t(40, "read_file_v2", Some(K::Read)),
    t(41, "ripgrep_raw_search", Some(K::Grep)),
    t(42, "glob_file_search", Some(K::Glob)),
    t(43, "create_plan", Some(K::CreatePlan)),
    t(44, "list_mcp_resources", None),
    t(45, "read_mcp_resource", None),
    t(46, "read_project", None),
    t(47, "update_project", None),
    t(48, "task_v2", Some(K::Task)),
    t(49, "call_mcp_tool", Some(K::Mcp)),
    t(50, "apply_agent_diff", None),
    t(51, "ask_question", None),
    t(52, "switch_mode", None),
    t(53, "generate_image", Some(K::GenerateImage)),
    t(54, "computer_use", None),
    t(55, "write_shell_stdin", None),
    t(56, "record_screen", Some(K::RecordScreen)),
    t(57, "web_fetch", Some(K::WebFetch)),
    t(58, "report_bugfix_results", None),
    t(59, "ai_attribution", None),
    t(60, "mcp_auth", None),
    t(61, "reflect", None),
    t(62, "await", None),
    t(63, "get_mcp_tools", None),
];

/// The id Cursor's file edits use; whole-file writes have no id of their own and go under it,
/// named `write`.
const EDIT_ID: i64 = 38;

/// The row of a numeric id.
pub fn bubble_tool(id: i64) -> Option<&'static BubbleTool> {
    BUBBLE_TOOLS.iter().find(|b| b.id == id)
}

/// How a tool bubble resolves: the tool, and whether its id was one of [`BUBBLE_TOOLS`].
#[derive(Debug, PartialEq, Eq)]
pub struct ResolvedTool {
    pub tool: Tool,
    pub known_id: bool,
}

/// The tool of a bubble (SPEC §1.3): a `name` that is a canonical name or alias wins (toolstream
/// writes whole-file writes as `write` under the edit id); then the id's kind; then the id's
/// Cursor name, or the bubble's own name, as an unknown tool.
pub fn resolve_tool(id: Option<i64>, name: Option<&str>) -> ResolvedTool {
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    let row = id.and_then(bubble_tool);
    let known_id = row.is_some();
    if let Some(kind) = name.and_then(ToolKind::from_alias) {
        return ResolvedTool { tool: Tool::Known(kind), known_id };
    }
    let tool = match row {
        Some(BubbleTool { kind: Some(kind), .. }) => Tool::Known(*kind),
        Some(row) if row.id != 0 => Tool::unknown(name.unwrap_or(row.name)),
        _ => match (name, id) {
            (Some(n), _) => Tool::unknown(n),
            (None, Some(id)) => Tool::unknown(&format!("tool {id}")),
            (None, None) => Tool::unknown("tool"),
        },
    };
    ResolvedTool { tool, known_id }
}

/// The id and name toolstream writes for a tool: the kind's newest id with Cursor's name for it
/// (`write` under the edit id; an MCP call reclassified as web search/fetch stays an MCP call);
/// an unknown tool under the id whose Cursor name it has, else id 0 with its own name.
pub fn bubble_id_for(tool: &Tool, mcp_shaped: bool) -> (i64, String) {
    let kind = match tool {
        Tool::Known(K::WebSearch | K::WebFetch) if mcp_shaped => K::Mcp,
        Tool::Known(k) => *k,
        Tool::Unknown(name) => {
            let row = BUBBLE_TOOLS.iter().find(|b| b.kind.is_none() && b.id != 0 && b.name == &**name);
            return (row.map_or(0, |r| r.id), name.to_string());
        }
    };
    if kind == K::Write {
        return (EDIT_ID, K::Write.canonical().to_owned());
    }
    match BUBBLE_TOOLS.iter().rev().find(|b| b.kind == Some(kind)) {
        Some(row) => (row.id, row.name.to_owned()),
        None => (0, kind.canonical().to_owned()),
    }
}

// ------------------------------------------------------------------------------------------------
// Status
// ------------------------------------------------------------------------------------------------

/// Cursor's statuses of a tool call.
pub mod status {
    pub const LOADING: &str = "loading";
    pub const COMPLETED: &str = "completed";
    pub const CANCELLED: &str = "cancelled";
    pub const ERROR: &str = "error";
}

/// The result status of a tool bubble; `None` while it is `loading` (an incomplete call).
/// The arm toolstream recorded wins; else `completed` is a success, `cancelled` its own status,
/// anything else an error (`rejected` when the user or a hook refused it).
pub fn result_status(tf: &ToolFormerData) -> Option<ResultStatus> {
    let st = tf.status.as_deref().unwrap_or(status::COMPLETED);
    if st == status::LOADING {
        return None;
    }
    let arm = tf.additional_data.as_ref().and_then(|a| a.get(RESULT_ARM_KEY)).and_then(Value::as_str);
    if let Some(arm) = arm.filter(|a| !a.is_empty()) {
        return Some(ResultStatus::from_key(arm));
    }
    let rejected = tf.user_decision.as_deref() == Some("rejected");
    Some(match st {
        status::COMPLETED if !rejected => ResultStatus::Success,
        _ if rejected => ResultStatus::Rejected,
        status::CANCELLED => ResultStatus::Other(status::CANCELLED.into()),
        _ => ResultStatus::Error,
    })
}

/// The bubble status of a call with result arm `arm`: `completed` for a successful card, `error`
/// otherwise, and `userDecision: rejected` for a refused one.
pub fn bubble_status(arm: &ResultStatus, is_error: bool) -> (&'static str, Option<&'static str>) {
    match arm {
        ResultStatus::Rejected => (status::ERROR, Some("rejected")),
        ResultStatus::Other(s) if &**s == status::CANCELLED => (status::CANCELLED, None),
        a if a.is_success() && !is_error => (status::COMPLETED, None),
        _ => (status::ERROR, None),
    }
}

// ------------------------------------------------------------------------------------------------
// Args and results
// ------------------------------------------------------------------------------------------------

/// (Cursor key, canonical key) pairs of one kind.
type Renames = &'static [(&'static str, &'static str)];

/// How one kind's bubble payloads name what the canonical models name.
struct KeyMap {
    /// `params` (Cursor's normalised, camelCase parameters).
    params: Renames,
    /// `rawArgs` (the model's own, mostly snake_case, arguments).
    raw_args: Renames,
    result: Renames,
}

const NONE: Renames = &[];
const PATH_PARAMS: Renames = &[("relativeWorkspacePath", "path"), ("targetFile", "path")];
const PATH_ARGS: Renames = &[("target_file", "path"), ("file_path", "path"), ("relative_workspace_path", "path")];

fn key_map(kind: ToolKind) -> KeyMap {
    let m = |params, raw_args, result| KeyMap { params, raw_args, result };
    match kind {
        K::Shell => m(
            &[("cwd", "workingDirectory"), ("commandDescription", "description")],
            &[("is_background", "isBackground"), ("working_directory", "workingDirectory")],
            &[("output", "stdout"), ("exitCodeV2", "exitCode")],
        ),
        K::Read => {
            m(&[("targetFile", "path")], PATH_ARGS, &[("contents", "content"), ("totalLinesInFile", "totalLines")])
        }
        K::Edit | K::Write | K::Delete => m(PATH_PARAMS, PATH_ARGS, NONE),
        K::Ls => m(
            &[("targetDirectory", "path")],
            &[("target_directory", "path"), ("relative_workspace_path", "path")],
            NONE,
        ),
        K::Glob => m(NONE, &[("target_directory", "targetDirectory"), ("glob_pattern", "globPattern")], NONE),
        K::Grep => m(
            NONE,
            &[
                ("output_mode", "outputMode"),
                ("head_limit", "headLimit"),
                ("case_insensitive", "caseInsensitive"),
                ("-i", "caseInsensitive"),
                ("query", "pattern"),
            ],
            NONE,
        ),
        K::SemSearch => m(NONE, &[("target_directories", "targetDirectories")], NONE),
        K::WebSearch => m(NONE, &[("search_term", "searchTerm")], NONE),
        K::Task => m(NONE, &[("subagent_type", "subagentType")], NONE),
        K::Mcp => m(NONE, &[("tool_name", "toolName"), ("server_name", "serverIdentifier")], NONE),
        K::ReadLints | K::UpdateTodos | K::CreatePlan | K::GenerateImage | K::RecordScreen | K::WebFetch => {
            m(NONE, NONE, NONE)
        }
    }
}

/// Rename `from` keys to `to` keys, each only when the target is not there already.
fn rename(obj: &mut Map<String, Value>, pairs: Renames, to_canonical: bool) {
    let mut done: Vec<&str> = Vec::new();
    for (cursor, canonical) in pairs {
        let (from, to) = if to_canonical { (*cursor, *canonical) } else { (*canonical, *cursor) };
        // Writing: only the first Cursor key of a canonical key is used.
        if !to_canonical && done.contains(&from) {
            continue;
        }
        if obj.contains_key(to) {
            continue;
        }
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_owned(), v);
            done.push(from);
        }
    }
}

/// The canonical args of a bubble: its `params` and `rawArgs` renamed to the canonical keys,
/// `rawArgs` winning where both say something.
pub fn canonical_args(
    kind: ToolKind,
    params: Option<Map<String, Value>>,
    raw_args: Option<Map<String, Value>>,
) -> Value {
    let map = key_map(kind);
    let mut out = params.unwrap_or_default();
    rename(&mut out, map.params, true);
    if kind == K::Shell && !out.contains_key("timeout") {
        if let Some(t) = out.get("options").and_then(|o| o.get("timeout")).cloned() {
            out.insert("timeout".into(), t);
        }
    }
    if let Some(mut raw) = raw_args {
        rename(&mut raw, map.raw_args, true);
        out.extend(raw);
    }
    Value::Object(out)
}

/// `rawArgs` and `params` for a call's canonical args: the same values under Cursor's keys.
pub fn bubble_args(kind: Option<ToolKind>, canonical: &Map<String, Value>) -> (Value, Value) {
    let Some(kind) = kind else {
        return (Value::Object(canonical.clone()), Value::Object(canonical.clone()));
    };
    let map = key_map(kind);
    let mut raw = canonical.clone();
    rename(&mut raw, map.raw_args, false);
    let mut params = canonical.clone();
    rename(&mut params, map.params, false);
    (Value::Object(raw), Value::Object(params))
}

/// A bubble result under Cursor's keys, for a canonical result value.
pub fn bubble_result(kind: Option<ToolKind>, canonical: &Value) -> Value {
    match (kind, canonical) {
        (Some(kind), Value::Object(obj)) => {
            let mut out = obj.clone();
            rename(&mut out, key_map(kind).result, false);
            Value::Object(out)
        }
        _ => canonical.clone(),
    }
}

/// What a bubble's result needs besides itself.
pub struct ResultContext<'a> {
    /// The call's canonical args (edits take their path from them).
    pub args: &'a Value,
    /// `toolFormerData.additionalData`.
    pub additional: Option<&'a Value>,
    /// Looks up a `composer.content.<hash>` body by its full key.
    pub content: &'a dyn Fn(&str) -> Option<String>,
    /// Whether the call failed (failure results carry their text as an error message).
    pub failed: bool,
}

impl std::fmt::Debug for ResultContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultContext").field("args", &self.args).field("failed", &self.failed).finish()
    }
}

/// The canonical result (the inner object of its oneof arm) of a bubble's `result`; `None` when
/// the bubble recorded nothing usable.
pub fn canonical_result(kind: ToolKind, result: Option<Value>, ctx: &ResultContext<'_>) -> Option<Value> {
    let mut obj = match result {
        Some(Value::Object(o)) => o,
        Some(Value::Null) | None => Map::new(),
        Some(other) => return Some(other),
    };
    // Grep results come wrapped in their own `success` arm.
    if kind == K::Grep && obj.len() == 1 {
        if let Some(Value::Object(inner)) = obj.get("success") {
            obj = inner.clone();
        }
    }
    rename(&mut obj, key_map(kind).result, true);
    match kind {
        K::Glob => glob_from_directories(&mut obj),
        K::Edit | K::Write => edit_from_content(&mut obj, ctx),
        K::Grep if obj.is_empty() => grep_from_stats(&mut obj, ctx.additional),
        K::SemSearch => sem_search_text(&mut obj),
        _ => {}
    }
    if ctx.failed && !has_error_text(&obj) {
        // A failure told only as output (`contents: "Error: File not found"`): that is its message.
        let text = ["content", "stdout", "error"].iter().find_map(|k| obj.get(*k).and_then(Value::as_str));
        if let Some(text) = text.filter(|t| !t.trim().is_empty()).map(str::to_owned) {
            obj.insert("errorMessage".into(), text.into());
        }
    }
    (!obj.is_empty()).then_some(Value::Object(obj))
}

fn has_error_text(obj: &Map<String, Value>) -> bool {
    ["errorMessage", "error", "reason", "message", "stderr"]
        .iter()
        .any(|k| obj.get(*k).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty()))
}

/// `{directories: [{absPath, files: [{relPath}], totalFiles}]}` → `{path, files, totalFiles}`.
fn glob_from_directories(obj: &mut Map<String, Value>) {
    if obj.contains_key("files") {
        return;
    }
    let Some(Value::Array(dirs)) = obj.remove("directories") else { return };
    let single = dirs.len() == 1;
    let mut files = Vec::new();
    let mut total = 0u64;
    for d in &dirs {
        let root = d.get("absPath").and_then(Value::as_str).unwrap_or("");
        if single && !root.is_empty() {
            obj.insert("path".into(), root.into());
        }
        for f in d.get("files").and_then(Value::as_array).into_iter().flatten() {
            let rel = f.get("relPath").and_then(Value::as_str).or_else(|| f.as_str()).unwrap_or("");
            files.push(if single || root.is_empty() { rel.to_owned() } else { format!("{root}/{rel}") });
        }
        total += d.get("totalFiles").and_then(Value::as_u64).unwrap_or(0);
    }
    obj.insert("totalFiles".into(), total.max(files.len() as u64).into());
    obj.insert("files".into(), files.into());
}

/// An edit recorded as content ids and `additionalData.precomputedDiff`: the diff, its counts
/// and the file bodies, as the CLI reports an edit.
fn edit_from_content(obj: &mut Map<String, Value>, ctx: &ResultContext<'_>) {
    if obj.contains_key("diffString") {
        return;
    }
    let body = |key: &str| obj.get(key).and_then(Value::as_str).and_then(|id| (ctx.content)(id));
    let before = body("beforeContentId");
    let after = body("afterContentId");
    let lines = ctx
        .additional
        .and_then(|a| a.get("precomputedDiff"))
        .and_then(|d| d.get("lines"))
        .and_then(Value::as_array)
        .map(|ls| diff_from_lines(ls))
        .or_else(|| after.as_deref().map(|a| line_diff(before.as_deref().unwrap_or(""), a)));
    if let Some((diff, added, removed)) = lines {
        obj.insert("diffString".into(), diff.into());
        obj.insert("linesAdded".into(), added.into());
        obj.insert("linesRemoved".into(), removed.into());
    }
    if let Some(b) = before.filter(|b| !b.is_empty()) {
        obj.insert("beforeFullFileContent".into(), b.into());
    }
    if let Some(a) = after {
        obj.insert("afterFullFileContent".into(), a.into());
    }
    if let Some(path) = ctx.args.get("path").and_then(Value::as_str) {
        obj.entry("path").or_insert_with(|| path.into());
    }
}

/// Cursor's `precomputedDiff.lines` (`{type: added|removed|…, content}`) as `+`/`-`/` ` lines.
fn diff_from_lines(lines: &[Value]) -> (String, u64, u64) {
    let (mut out, mut added, mut removed) = (Vec::new(), 0, 0);
    for l in lines {
        let text = l.get("content").and_then(Value::as_str).unwrap_or("");
        let sign = match l.get("type").and_then(Value::as_str) {
            Some("added") => {
                added += 1;
                '+'
            }
            Some("removed") => {
                removed += 1;
                '-'
            }
            _ => ' ',
        };
        out.push(format!("{sign}{text}"));
    }
    (out.join("\n"), added, removed)
}

/// The lines that differ between two bodies (common head and tail kept out), as `-`/`+` lines.
fn line_diff(before: &str, after: &str) -> (String, u64, u64) {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let removed = &a[head..a.len() - tail];
    let added = &b[head..b.len() - tail];
    let out: Vec<String> =
        removed.iter().map(|l| format!("-{l}")).chain(added.iter().map(|l| format!("+{l}"))).collect();
    let (r, n) = (removed.len() as u64, added.len() as u64);
    (out.join("\n"), n, r)
}

/// Grep statistics Cursor kept only in `additionalData` (`topFiles`, `totalMatches`): a count
/// result.
fn grep_from_stats(obj: &mut Map<String, Value>, additional: Option<&Value>) {
    let Some(a) = additional else { return };
    let Some(top) = a.get("topFiles").and_then(Value::as_array) else { return };
    let counts: Vec<Value> = top
        .iter()
        .map(|f| {
            serde_json::json!({
                "file": f.get("uri").or_else(|| f.get("file")).cloned().unwrap_or(Value::Null),
                "count": f.get("matchCount").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    let root = a.get("path").and_then(Value::as_str).unwrap_or(".").to_owned();
    for k in ["pattern", "path", "outputMode"] {
        if let Some(v) = a.get(k) {
            obj.insert(k.into(), v.clone());
        }
    }
    let mut count = Map::new();
    count.insert("counts".into(), counts.into());
    for k in ["totalFiles", "totalMatches"] {
        if let Some(v) = a.get(k) {
            count.insert(k.into(), v.clone());
        }
    }
    let mut ws = Map::new();
    ws.insert(root, serde_json::json!({ "count": count }));
    obj.insert("workspaceResults".into(), ws.into());
}

/// `results: [{file, line, content}]` → the text form the canonical model reads.
fn sem_search_text(obj: &mut Map<String, Value>) {
    let Some(Value::Array(items)) = obj.get("results") else { return };
    let text: Vec<String> = items
        .iter()
        .map(|r| {
            let file = r.get("file").and_then(Value::as_str).unwrap_or("");
            let line = r.get("line").map(Value::to_string).unwrap_or_default();
            let content = r.get("content").and_then(Value::as_str).unwrap_or("");
            format!("{file}:{line}: {content}")
        })
        .collect();
    obj.insert("results".into(), text.join("\n").into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn ids_resolve_to_canonical_tools() {
        let r = |id, name| resolve_tool(Some(id), Some(name)).tool;
        assert_eq!(r(15, "run_terminal_command_v2"), Tool::Known(K::Shell));
        assert_eq!(r(38, "edit_file_v2"), Tool::Known(K::Edit));
        assert_eq!(r(38, "search_replace"), Tool::Known(K::Edit));
        assert_eq!(r(40, "read_file_v2"), Tool::Known(K::Read));
        assert_eq!(r(41, "ripgrep_raw_search"), Tool::Known(K::Grep));
        assert_eq!(r(42, "glob_file_search"), Tool::Known(K::Glob));
        assert_eq!(r(9, "codebase_search"), Tool::Known(K::SemSearch));
        assert_eq!(r(48, "task_v2"), Tool::Known(K::Task));
        assert_eq!(r(39, "list_dir"), Tool::Known(K::Ls));
        // A known id without a kind keeps Cursor's name; an unknown id the bubble's name.
        assert_eq!(r(62, "await"), Tool::Unknown("await".into()));
        assert_eq!(
            resolve_tool(Some(999), Some("frobnicate")),
            ResolvedTool { tool: Tool::Unknown("frobnicate".into()), known_id: false }
        );
        assert_eq!(resolve_tool(Some(999), None).tool, Tool::Unknown("tool 999".into()));
        assert_eq!(r(0, "Tool"), Tool::Unknown("Tool".into()));
        // A canonical name wins over the id (writes go under the edit id).
        assert_eq!(r(38, "write"), Tool::Known(K::Write));
    }

    #[test]
    fn the_table_is_the_fixture_table() {
        // Every id of the shared table, with its name (the table is transcribed once, here).
        let Some(path) = toolstream_testkit::fixture("cursor-bubbles/tool-table-toolpath.json") else { return };
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let table = v["table"].as_object().unwrap();
        assert_eq!(table.len(), BUBBLE_TOOLS.len());
        for (id, name) in table {
            let row = bubble_tool(id.parse().unwrap()).unwrap_or_else(|| panic!("id {id} missing"));
            assert_eq!(row.name, name.as_str().unwrap(), "id {id}");
        }
    }

    #[test]
    fn written_ids_read_back_as_the_same_tool() {
        let mut tools: Vec<Tool> = ToolKind::all().map(Tool::Known).collect();
        tools.extend([Tool::unknown("await"), Tool::unknown("getMcpTools"), Tool::unknown("x y")]);
        for tool in tools {
            let (id, name) = bubble_id_for(&tool, false);
            assert_eq!(resolve_tool(Some(id), Some(&name)).tool, tool, "{tool} as {id} {name}");
        }
        assert_eq!(bubble_id_for(&Tool::Known(K::WebSearch), true).0, 49);
        assert_eq!(bubble_id_for(&Tool::Known(K::Read), false), (40, "read_file_v2".into()));
    }

    #[test]
    fn args_map_both_ways() {
        // A real 3.6 shell bubble's params.
        let params =
            obj(json!({"command": "ls -la", "cwd": "", "options": {"timeout": 30000}, "commandDescription": "List"}));
        let got = canonical_args(K::Shell, Some(params), None);
        assert_eq!(got["command"], "ls -la");
        assert_eq!(got["workingDirectory"], "");
        assert_eq!(got["timeout"], 30000);
        assert_eq!(got["description"], "List");
        // The model's snake_case args.
        let raw = obj(json!({"target_file": "/w/a.rs", "limit": 10}));
        assert_eq!(canonical_args(K::Read, None, Some(raw)), json!({"path": "/w/a.rs", "limit": 10}));
        // canonical → bubble → canonical is the identity, for every kind.
        let canonical = obj(json!({"path": "/w/a", "command": "x", "targetDirectory": "/w", "globPattern": "*.rs",
            "outputMode": "content", "searchTerm": "q", "workingDirectory": "/w", "isBackground": false, "other": 1}));
        for kind in ToolKind::all() {
            let (raw, params) = bubble_args(Some(kind), &canonical);
            let back = canonical_args(kind, Some(obj(params)), Some(obj(raw)));
            assert_eq!(back, Value::Object(canonical.clone()), "{kind}");
        }
    }

    fn no_content(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn results_map_both_ways() {
        let args = json!({});
        let ctx = ResultContext { args: &args, additional: None, content: &no_content, failed: false };
        let shell = json!({"output": "1\n2\n", "rejected": false, "notInterrupted": true});
        let got = canonical_result(K::Shell, Some(shell), &ctx).unwrap();
        assert_eq!(got["stdout"], "1\n2\n");
        for (kind, canonical) in [
            (K::Shell, json!({"stdout": "a", "stderr": "b", "exitCode": 2})),
            (K::Read, json!({"content": "x\n", "totalLines": 1})),
            (K::Grep, json!({"pattern": "p", "workspaceResults": {"/w": {"files": {"files": ["a"]}}}})),
            (K::Glob, json!({"path": "/w", "files": ["a.rs"], "totalFiles": 1})),
        ] {
            let written = bubble_result(Some(kind), &canonical);
            assert_eq!(canonical_result(kind, Some(written), &ctx), Some(canonical), "{kind}");
        }
    }

    #[test]
    fn cursor_shapes_become_canonical() {
        let args = json!({"path": "/w/n.md"});
        let blobs = |k: &str| (k == "composer.content.B").then(|| "one\ntwo\n".to_owned());
        let extra = json!({"precomputedDiff": {"lines": [
            {"content": "", "type": "removed"}, {"content": "one", "type": "added"}, {"content": "two", "type": "added"}]}});
        let ctx = ResultContext { args: &args, additional: Some(&extra), content: &blobs, failed: false };
        let edit = json!({"beforeContentId": "composer.content.A", "afterContentId": "composer.content.B"});
        let got = canonical_result(K::Edit, Some(edit.clone()), &ctx).unwrap();
        assert_eq!(got["diffString"], "-\n+one\n+two");
        assert_eq!((got["linesAdded"].as_u64(), got["linesRemoved"].as_u64()), (Some(2), Some(1)));
        assert_eq!(got["afterFullFileContent"], "one\ntwo\n");
        assert_eq!(got["path"], "/w/n.md");
        // Without a precomputed diff, the bodies are compared.
        let ctx = ResultContext { additional: None, ..ctx };
        let got = canonical_result(K::Edit, Some(edit), &ctx).unwrap();
        assert_eq!(got["diffString"], "+one\n+two");

        let glob = json!({"directories": [{"absPath": "/w", "files": [{"relPath": "notes.md"}], "totalFiles": 1}]});
        let got = canonical_result(K::Glob, Some(glob), &ctx).unwrap();
        assert_eq!(got, json!({"path": "/w", "files": ["notes.md"], "totalFiles": 1}));

        let stats = json!({"pattern": "fixture", "path": "/w", "outputMode": "content", "topFiles": [{"uri": "./notes.md", "matchCount": 1}], "totalFiles": 1, "totalMatches": 1});
        let ctx2 = ResultContext { additional: Some(&stats), ..ctx };
        let got = canonical_result(K::Grep, None, &ctx2).unwrap();
        assert_eq!(got["workspaceResults"]["/w"]["count"]["counts"][0], json!({"file": "./notes.md", "count": 1}));

        // A failure told as file contents becomes the error message.
        let failed = ResultContext { failed: true, ..ctx };
        let got = canonical_result(
            K::Read,
            Some(json!({"contents": "Error: File not found", "totalLinesInFile": 0})),
            &failed,
        )
        .unwrap();
        assert_eq!(got["errorMessage"], "Error: File not found");
    }

    #[test]
    fn statuses() {
        let tf = |st: &str, decision: Option<&str>, arm: Option<&str>| ToolFormerData {
            status: Some(st.into()),
            user_decision: decision.map(str::to_owned),
            additional_data: arm.map(|a| json!({ RESULT_ARM_KEY: a })),
            ..ToolFormerData::default()
        };
        assert_eq!(result_status(&tf("loading", None, None)), None);
        assert_eq!(result_status(&tf("completed", None, None)), Some(ResultStatus::Success));
        assert_eq!(result_status(&tf("error", None, None)), Some(ResultStatus::Error));
        assert_eq!(result_status(&tf("error", Some("rejected"), None)), Some(ResultStatus::Rejected));
        assert_eq!(result_status(&tf("cancelled", None, None)), Some(ResultStatus::Other("cancelled".into())));
        assert_eq!(result_status(&tf("error", None, Some("timeout"))), Some(ResultStatus::Timeout));
        assert_eq!(bubble_status(&ResultStatus::Success, false), ("completed", None));
        assert_eq!(bubble_status(&ResultStatus::Success, true), ("error", None));
        assert_eq!(bubble_status(&ResultStatus::Rejected, true), ("error", Some("rejected")));
        assert_eq!(bubble_status(&ResultStatus::Failure, true), ("error", None));
    }

    #[test]
    fn times() {
        assert_eq!(time_ms(&json!("2026-06-01T18:33:24.592Z")), Some(1_780_338_804_592));
        assert_eq!(time_ms(&json!(1_780_338_796_904u64)), Some(1_780_338_796_904));
        assert_eq!(time_ms(&json!("1780338796904")), Some(1_780_338_796_904));
        assert_eq!(time_ms(&json!(null)), None);
    }
}
