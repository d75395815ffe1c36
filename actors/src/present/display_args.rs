//! Display arguments (SPEC §4): the arguments of the pi `toolCall` a card is delivered as. They
//! fit the pi tool's schema and never are the raw recorded args object — pi validates every
//! call's arguments against its tool's schema before it runs the tool, so a native card whose
//! recorded Cursor arguments do not fit would be rejected and its recorded result never shown.
//!
//! Native cards (`@mariozechner/pi-coding-agent` 0.73 schemas): `read {path, offset?, limit?}`,
//! `bash {command, timeout?}` (seconds; Cursor records milliseconds), `grep {pattern, path?,
//! glob?}`, `find {pattern, path?}`, `ls {path?}`, `edit {path, edits[{oldText, newText}]}`,
//! `write {path, content}`; paths inside the run's cwd are relative. A call that cannot fit (a
//! shell call recorded without its command, a path-only edit) becomes a neutral `cursor` card:
//! never a made-up argument. Neutral cards carry `{activityTitle, activitySummary}` plus the few
//! fields their tool displays: webSearch `{query}`, webFetch `{url}`, mcp `{toolName, preview}`,
//! task `{description, preview}`, edit/write `{path}` (notebook edits add their old/new text),
//! incomplete calls `{incomplete: true}`.

use std::borrow::Cow;

use serde_json::{Map, Value};
use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL;
use toolstream_schemas::{CallArgs, ToolKind};

use super::bounds::{display_line, relative_path};

/// Longest `preview` field of a neutral card.
const PREVIEW_CHARS: usize = 120;

/// What the display arguments are built from (all strings already scrubbed).
#[derive(Debug)]
pub struct DisplayInput<'a> {
    pub kind: Option<ToolKind>,
    /// The pi card the tool's renderer chose: `read`, `bash`, …, or `cursor`.
    pub pi_tool: &'a str,
    /// The recorded args.
    pub raw: Option<&'a dyn ArgFields>,
    pub cwd: Option<&'a str>,
    pub title: &'a str,
    /// The card's one-line summary (the `activitySummary` of a neutral card).
    pub summary: &'a str,
    /// The card's body (mcp and task previews are its first line).
    pub body: &'a str,
}

/// The fields of recorded args (an object), as display arguments read them.
pub trait ArgFields: std::fmt::Debug {
    /// The value of `key`, if there is one.
    fn field(&self, key: &str) -> Option<Cow<'_, Value>>;
    /// Whether there is a `key`.
    fn has(&self, key: &str) -> bool;
}

impl ArgFields for Map<String, Value> {
    fn field(&self, key: &str) -> Option<Cow<'_, Value>> {
        self.get(key).map(Cow::Borrowed)
    }
    fn has(&self, key: &str) -> bool {
        self.contains_key(key)
    }
}

/// A call's recorded args, each field read from its text when asked for.
impl ArgFields for CallArgs {
    fn field(&self, key: &str) -> Option<Cow<'_, Value>> {
        self.field_as::<Value>(key).map(Cow::Owned)
    }
    fn has(&self, key: &str) -> bool {
        CallArgs::has(self, key)
    }
}

/// The pi tool and its arguments.
pub fn display_args(input: &DisplayInput<'_>) -> (&'static str, Value) {
    let empty = Map::new();
    let raw = input.raw.unwrap_or(&empty);
    let path = |keys: &[&str]| string(raw, keys).map(|p| relative_path(&p, input.cwd));
    let native = match input.pi_tool {
        "read" => path(PATH_KEYS).map(|p| {
            let mut a = obj([("path", p.into())]);
            copy_int(raw, &mut a, "offset", &["offset"]);
            copy_int(raw, &mut a, "limit", &["limit"]);
            ("read", a)
        }),
        "bash" => string(raw, &["command", "cmd"]).map(|c| {
            let mut a = obj([("command", c.into())]);
            if let Some(ms) = int(raw, &["timeout", "timeoutMs", "timeout_ms"]).filter(|ms| *ms > 0) {
                a.insert("timeout".into(), seconds(ms));
            }
            ("bash", a)
        }),
        "grep" => string(raw, &["pattern", "query", "regex"]).map(|p| {
            let mut a = obj([("pattern", p.into())]);
            if let Some(dir) = path(&["path"]) {
                a.insert("path".into(), dir.into());
            }
            if let Some(g) = string(raw, &["glob"]) {
                a.insert("glob".into(), g.into());
            }
            ("grep", a)
        }),
        "find" => string(raw, &["globPattern", "glob_pattern", "pattern"]).map(|p| {
            let mut a = obj([("pattern", p.into())]);
            if let Some(dir) = path(&["targetDirectory", "target_directory", "path"]) {
                a.insert("path".into(), dir.into());
            }
            ("find", a)
        }),
        "ls" => {
            let mut a = Map::new();
            if let Some(dir) = path(&["path", "targetDirectory", "target_directory", "directory"]) {
                a.insert("path".into(), dir.into());
            }
            Some(("ls", a))
        }
        "write" => path(PATH_KEYS)
            .zip(string_any(raw, CONTENT_KEYS))
            .map(|(p, content)| ("write", obj([("path", p.into()), ("content", content.into())]))),
        "edit" => path(PATH_KEYS)
            .zip(edits(raw))
            .map(|(p, edits)| ("edit", obj([("path", p.into()), ("edits", Value::Array(edits))]))),
        _ => None,
    };
    match native {
        Some((tool, args)) => (tool, Value::Object(args)),
        None => (NEUTRAL_REPLAY_TOOL, Value::Object(activity(input, raw))),
    }
}

/// The arguments of the error card of a call that never completed (SPEC §5.3).
pub fn incomplete_args(title: &str, reason: &str) -> Value {
    let mut a = obj([("activityTitle", title.into()), ("activitySummary", reason.into())]);
    a.insert("incomplete".into(), true.into());
    Value::Object(a)
}

const PATH_KEYS: &[&str] = &["path", "filePath", "file_path", "target_file"];
const CONTENT_KEYS: &[&str] = &["content", "file_text", "contents", "file_content", "fileContent", "streamContent"];
const OLD_KEYS: &[&str] = &["oldText", "old_string", "oldString", "old_str", "old_text"];
const NEW_KEYS: &[&str] = &["newText", "new_string", "newString", "new_str", "new_text"];

/// A neutral card's arguments.
fn activity(input: &DisplayInput<'_>, raw: &dyn ArgFields) -> Map<String, Value> {
    let mut a = obj([("activityTitle", input.title.into()), ("activitySummary", input.summary.into())]);
    let preview = || input.body.lines().map(str::trim).find(|l| !l.is_empty()).map(|l| display_line(l, PREVIEW_CHARS));
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            a.insert(k.into(), v.into());
        }
    };
    match input.kind {
        Some(ToolKind::WebSearch) => put("query", Some(input.summary.to_owned())),
        Some(ToolKind::WebFetch) => put("url", Some(input.summary.to_owned())),
        Some(ToolKind::Mcp) => {
            put("toolName", string(raw, &["toolName", "tool_name", "name"]));
            put("preview", preview());
        }
        Some(ToolKind::Task) => {
            put("description", string(raw, &["description", "prompt"]).map(|d| display_line(&d, PREVIEW_CHARS)));
            put("preview", preview());
        }
        Some(ToolKind::Edit | ToolKind::Write) => {
            put("path", string(raw, PATH_KEYS).map(|p| relative_path(&p, input.cwd)));
            if is_notebook(raw) {
                put("oldText", string_any(raw, OLD_KEYS));
                put("newText", string_any(raw, NEW_KEYS));
            }
        }
        _ => {}
    }
    a
}

fn is_notebook(raw: &dyn ArgFields) -> bool {
    ["notebookPath", "notebook_path", "cellId", "cell_id", "cellIndex", "cell_index"].iter().any(|k| raw.has(k))
        || string(raw, PATH_KEYS).is_some_and(|p| p.to_ascii_lowercase().ends_with(".ipynb"))
}

/// pi's `edits[{oldText, newText}]` from one recorded pair or an `edits` list of them; `None`
/// unless every pair has a non-empty old text (SPEC §4: never invent a pair).
fn edits(raw: &dyn ArgFields) -> Option<Vec<Value>> {
    if is_notebook(raw) {
        return None;
    }
    let pair = |o: &dyn ArgFields| -> Option<Value> {
        let old = string(o, OLD_KEYS)?;
        let new = string_any(o, NEW_KEYS)?;
        Some(Value::Object(obj([("oldText", old.into()), ("newText", new.into())])))
    };
    if let Some(one) = pair(raw) {
        return Some(vec![one]);
    }
    let list = raw.field("edits")?;
    let list = list.as_array().filter(|l| !l.is_empty())?;
    list.iter().map(|e| e.as_object().and_then(|o| pair(o))).collect()
}

fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The first non-empty string among `keys`.
fn string(o: &dyn ArgFields, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| into_string(o.field(k)?).filter(|s| !s.is_empty()))
}

/// The first string among `keys`, empty or not.
pub(super) fn string_any(o: &dyn ArgFields, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| into_string(o.field(k)?))
}

fn into_string(v: Cow<'_, Value>) -> Option<String> {
    match v {
        Cow::Owned(Value::String(s)) => Some(s),
        Cow::Borrowed(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// An integer given as a number or a decimal string (SPEC §1.1 rule 7).
fn int(o: &dyn ArgFields, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|k| match o.field(k)?.as_ref() {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

fn copy_int(raw: &dyn ArgFields, to: &mut Map<String, Value>, key: &str, from: &[&str]) {
    if let Some(n) = int(raw, from).filter(|n| *n > 0) {
        to.insert(key.into(), n.into());
    }
}

/// Milliseconds as seconds: whole when exact, else fractional.
fn seconds(ms: i64) -> Value {
    if ms % 1000 == 0 {
        (ms / 1000).into()
    } else {
        serde_json::Number::from_f64(ms as f64 / 1000.0).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(kind: ToolKind, pi_tool: &str, raw: Value) -> (&'static str, Value) {
        display_args(&DisplayInput {
            kind: Some(kind),
            pi_tool,
            raw: raw.as_object().map(|o| o as &dyn ArgFields),
            cwd: Some("/w"),
            title: kind.spec().title,
            summary: "sum",
            body: "\n first line \nsecond",
        })
    }

    /// The native cards are the pi contract's native replay tools (the extension wraps exactly
    /// those built-ins); any other card is the contract's neutral tool.
    #[test]
    fn the_native_cards_are_the_contracts_native_replay_tools() {
        use toolstream_schemas::pi_contract::{NATIVE_REPLAY_TOOLS, NEUTRAL_REPLAY_TOOL};
        let raw = json!({"path": "/w/a", "command": "c", "pattern": "p", "content": "x", "old_string": "a", "new_string": "b"});
        for tool in NATIVE_REPLAY_TOOLS {
            assert_eq!(args(ToolKind::Read, tool, raw.clone()).0, *tool);
        }
        for other in ["cursor", "webfetch", "todo", "Read"] {
            assert_eq!(args(ToolKind::Read, other, raw.clone()).0, NEUTRAL_REPLAY_TOOL, "{other}");
        }
    }

    #[test]
    fn native_cards_get_pi_shaped_relative_arguments() {
        assert_eq!(
            args(ToolKind::Shell, "bash", json!({"command": "npm test", "timeout": 120000, "workingDirectory": ""})),
            ("bash", json!({"command": "npm test", "timeout": 120}))
        );
        assert_eq!(args(ToolKind::Shell, "bash", json!({"command": "x", "timeout": 1500})).1["timeout"], json!(1.5));
        assert_eq!(
            args(ToolKind::Read, "read", json!({"path": "/w/src/a.rs", "offset": "3", "limit": 10})),
            ("read", json!({"path": "src/a.rs", "offset": 3, "limit": 10}))
        );
        assert_eq!(
            args(ToolKind::Glob, "find", json!({"globPattern": "**/*.ts", "targetDirectory": "/w"})),
            ("find", json!({"pattern": "**/*.ts", "path": "."}))
        );
        assert_eq!(
            args(ToolKind::Grep, "grep", json!({"pattern": "x", "path": "/w/src", "caseInsensitive": false})),
            ("grep", json!({"pattern": "x", "path": "src"}))
        );
        assert_eq!(
            args(
                ToolKind::Edit,
                "edit",
                json!({"path": "/w/a.ts", "old_string": "x", "new_string": "", "replace_all": false})
            ),
            ("edit", json!({"path": "a.ts", "edits": [{"oldText": "x", "newText": ""}]}))
        );
        assert_eq!(
            args(ToolKind::Write, "write", json!({"path": "/elsewhere/a", "streamContent": "hi", "extra": 1})),
            ("write", json!({"path": "/elsewhere/a", "content": "hi"}))
        );
    }

    #[test]
    fn what_cannot_fit_becomes_a_neutral_card_with_only_its_display_fields() {
        assert_eq!(
            args(ToolKind::Shell, "bash", json!({"timeout": 5})),
            ("cursor", json!({"activityTitle": "Cursor shell", "activitySummary": "sum"}))
        );
        assert_eq!(
            args(ToolKind::Edit, "cursor", json!({"path": "/w/n.txt", "streamContent": "whole file"})),
            ("cursor", json!({"activityTitle": "Cursor edit", "activitySummary": "sum", "path": "n.txt"}))
        );
        assert_eq!(
            args(ToolKind::Edit, "edit", json!({"path": "/w/n.ipynb", "old_string": "a", "new_string": "b"})),
            (
                "cursor",
                json!({"activityTitle": "Cursor edit", "activitySummary": "sum", "path": "n.ipynb", "oldText": "a", "newText": "b"})
            )
        );
        assert_eq!(
            args(
                ToolKind::Mcp,
                "cursor",
                json!({"toolName": "lookup", "args": {"secret": "x"}, "providerIdentifier": "p"})
            ),
            (
                "cursor",
                json!({"activityTitle": "Cursor MCP", "activitySummary": "sum", "toolName": "lookup", "preview": "first line"})
            )
        );
        assert_eq!(
            args(ToolKind::Task, "cursor", json!({"description": "audit", "prompt": "long prompt", "model": "m"})),
            (
                "cursor",
                json!({"activityTitle": "Cursor subagent", "activitySummary": "sum", "description": "audit", "preview": "first line"})
            )
        );
        assert_eq!(
            args(ToolKind::WebSearch, "cursor", json!({"searchTerm": "q"})).1,
            json!({"activityTitle": "Cursor web search", "activitySummary": "sum", "query": "sum"})
        );
        assert_eq!(
            incomplete_args("Cursor shell", "aborted"),
            json!({"activityTitle": "Cursor shell", "activitySummary": "aborted", "incomplete": true})
        );
    }
}
