//! Replay arguments pi accepts. pi validates every tool call's arguments against the tool's
//! schema before it runs the tool (`validateToolArguments`, pi 0.73): a native card whose
//! recorded Cursor arguments do not satisfy the pi tool's schema would be rejected there, and its
//! recorded result never shown. So, at the pi boundary, Cursor's argument names are mapped to the
//! pi tool's (`globPattern` → `pattern`, `old_string`/`new_string` → `edits[{oldText,newText}]`,
//! …), and a card that still does not fit (a shell call recorded without its command, say) is
//! shown as a neutral `cursor` activity card instead: never a made-up argument.
//!
//! The schemas (`@mariozechner/pi-coding-agent` 0.73 `dist/core/tools/*.js`): `read{path,
//! offset?, limit?}`, `bash{command, timeout?}`, `grep{pattern, path?, glob?, ignoreCase?,
//! literal?, context?, limit?}`, `find{pattern, path?, limit?}`, `ls{path?, limit?}`,
//! `write{path, content}`, and `edit{path, edits:[{oldText, newText}]}` with no other property
//! allowed anywhere; the others allow extra properties.

use serde_json::{Map, Value};

/// The pi tool name, arguments and details a card is delivered with.
#[derive(Clone, Debug, PartialEq)]
pub struct PiCall {
    pub name: String,
    pub arguments: Value,
    pub details: Value,
}

/// Fit a card's replay arguments (always an object) to its pi tool.
pub fn fit(pi_tool: &str, args: Value, title: &str, summary: &str, details: &Value) -> PiCall {
    let Value::Object(obj) = args else {
        return PiCall { name: pi_tool.to_owned(), arguments: args, details: details.clone() };
    };
    let fitted = match pi_tool {
        "read" => require(obj.clone(), "path", &["filePath", "file_path", "target_file"]),
        "bash" => require(obj.clone(), "command", &["cmd"]),
        "grep" => require(obj.clone(), "pattern", &["query", "regex"]),
        "find" => find(obj.clone()),
        "ls" => ls(obj.clone()),
        "write" => write(&obj),
        "edit" => edit(&obj),
        _ => Some(obj.clone()),
    };
    match fitted {
        Some(a) => PiCall { name: pi_tool.to_owned(), arguments: Value::Object(a), details: details.clone() },
        None => activity(obj, title, summary, details),
    }
}

/// A neutral `cursor` card: the recorded arguments plus the activity labels.
fn activity(obj: Map<String, Value>, title: &str, summary: &str, details: &Value) -> PiCall {
    let mut args = Map::new();
    args.insert("activityTitle".into(), title.into());
    args.insert("activitySummary".into(), summary.into());
    for (k, v) in obj {
        args.entry(k).or_insert(v);
    }
    let mut details = details.clone();
    if let Some(d) = details.as_object_mut() {
        d.insert("variant".into(), "activity".into());
    }
    PiCall { name: "cursor".into(), arguments: Value::Object(args), details }
}

/// The first non-empty string among `keys`.
fn string(obj: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| obj.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned))
}

/// `key` must be a non-empty string, taken from an alias when missing (the alias is dropped).
fn require(mut obj: Map<String, Value>, key: &str, aliases: &[&str]) -> Option<Map<String, Value>> {
    if string(&obj, &[key]).is_some() {
        return Some(obj);
    }
    let value = string(&obj, aliases)?;
    for a in aliases {
        obj.remove(*a);
    }
    obj.insert(key.into(), value.into());
    Some(obj)
}

/// Cursor glob: `globPattern` (+ `targetDirectory`).
fn find(obj: Map<String, Value>) -> Option<Map<String, Value>> {
    let mut obj = require(obj, "pattern", &["globPattern", "glob_pattern"])?;
    if string(&obj, &["path"]).is_none() {
        if let Some(dir) = string(&obj, &["targetDirectory", "target_directory"]) {
            obj.remove("targetDirectory");
            obj.remove("target_directory");
            obj.insert("path".into(), dir.into());
        }
    }
    Some(obj)
}

/// Cursor ls: the directory may be named differently; nothing is required.
fn ls(mut obj: Map<String, Value>) -> Option<Map<String, Value>> {
    if !matches!(obj.get("path"), None | Some(Value::String(_))) {
        return None;
    }
    if obj.get("path").is_none() {
        if let Some(dir) = string(&obj, &["targetDirectory", "target_directory", "directory"]) {
            obj.insert("path".into(), dir.into());
        }
    }
    Some(obj)
}

const PATH_KEYS: &[&str] = &["path", "filePath", "file_path"];

fn write(obj: &Map<String, Value>) -> Option<Map<String, Value>> {
    let path = string(obj, PATH_KEYS)?;
    let content = ["content", "file_text", "contents", "file_content", "fileContent", "streamContent"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))?;
    let mut out = Map::new();
    out.insert("path".into(), path.into());
    out.insert("content".into(), content.into());
    Some(out)
}

/// pi's edit takes exactly `{path, edits:[{oldText, newText}]}`.
fn edit(obj: &Map<String, Value>) -> Option<Map<String, Value>> {
    let path = string(obj, PATH_KEYS)?;
    let pair = |o: &Map<String, Value>| -> Option<Value> {
        let old = ["oldText", "old_string", "oldString", "old_str", "old_text"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))
            .filter(|s| !s.is_empty())?;
        let new = ["newText", "new_string", "newString", "new_str", "new_text"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))?;
        let mut e = Map::new();
        e.insert("oldText".into(), old.into());
        e.insert("newText".into(), new.into());
        Some(Value::Object(e))
    };
    let edits: Vec<Value> = match pair(obj) {
        Some(one) => vec![one],
        None => {
            let list = obj.get("edits").and_then(Value::as_array).filter(|l| !l.is_empty())?;
            list.iter().map(|e| e.as_object().and_then(pair)).collect::<Option<_>>()?
        }
    };
    let mut out = Map::new();
    out.insert("path".into(), path.into());
    out.insert("edits".into(), Value::Array(edits));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fitted(tool: &str, args: Value) -> (String, Value) {
        let c = fit(tool, args, "Cursor x", "sum", &json!({"variant": "native"}));
        (c.name, c.arguments)
    }

    #[test]
    fn cursor_names_become_pi_names() {
        assert_eq!(
            fitted("find", json!({"globPattern": "**/*.ts", "targetDirectory": "/w"})),
            ("find".into(), json!({"pattern": "**/*.ts", "path": "/w"}))
        );
        assert_eq!(
            fitted("edit", json!({"path": "a.ts", "old_string": "x", "new_string": "y", "replace_all": false})),
            ("edit".into(), json!({"path": "a.ts", "edits": [{"oldText": "x", "newText": "y"}]}))
        );
        assert_eq!(
            fitted("edit", json!({"file_path": "a.ts", "edits": [{"old_string": "x", "new_string": ""}]})),
            ("edit".into(), json!({"path": "a.ts", "edits": [{"oldText": "x", "newText": ""}]}))
        );
        assert_eq!(
            fitted("write", json!({"path": "a", "streamContent": "hi", "extra": 1})),
            ("write".into(), json!({"path": "a", "content": "hi"}))
        );
        assert_eq!(fitted("read", json!({"target_file": "a"})), ("read".into(), json!({"path": "a"})));
        assert_eq!(fitted("ls", json!({"targetDirectory": "/w"})).1, json!({"targetDirectory": "/w", "path": "/w"}));
    }

    #[test]
    fn args_that_fit_are_kept_as_they_are() {
        let bash = json!({"command": "npm test", "timeout": 120000, "workingDirectory": ""});
        assert_eq!(fitted("bash", bash.clone()), ("bash".into(), bash));
        let grep = json!({"pattern": "x", "path": "src", "caseInsensitive": false});
        assert_eq!(fitted("grep", grep.clone()), ("grep".into(), grep));
        let cursor = json!({"activityTitle": "Cursor MCP", "activitySummary": "", "name": "x"});
        assert_eq!(fitted("cursor", cursor.clone()), ("cursor".into(), cursor));
    }

    #[test]
    fn what_cannot_fit_becomes_a_cursor_activity_card() {
        let c = fit("bash", json!({}), "Cursor shell", "", &json!({"variant": "native", "title": "Cursor shell"}));
        assert_eq!(c.name, "cursor");
        assert_eq!(c.arguments, json!({"activityTitle": "Cursor shell", "activitySummary": ""}));
        assert_eq!(c.details, json!({"variant": "activity", "title": "Cursor shell"}));
        let (name, args) = fitted("edit", json!({"path": "a.ts", "old_string": "", "new_string": "y"}));
        assert_eq!((name.as_str(), &args["path"]), ("cursor", &json!("a.ts")));
        assert_eq!(fitted("find", json!({"targetDirectory": "/w"})).0, "cursor");
        assert_eq!(fitted("write", json!({"path": "a"})).0, "cursor");
    }
}
