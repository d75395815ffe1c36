//! Editing Cursor's `hooks.json` without touching anything else in it: toolstream's entries are
//! spliced into (or cut out of) the file's text, so every unrelated hook, key and byte of layout
//! stays as it was, and uninstall undoes install byte for byte.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A `hooks.json` that cannot be edited safely.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0} is not a JSON object")]
    NotObject(&'static str),
    #[error("a `hooks` event is not an array")]
    NotArray,
}

/// An object's entries in file order, each value with its byte span in the file.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Entries<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Where `part` (a slice of `text`) lies in `text`.
fn span(text: &str, part: &str) -> (usize, usize) {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    (start, start + part.len())
}

fn object<'a>(raw: &'a str, what: &'static str) -> Result<Vec<(String, &'a RawValue)>, HooksError> {
    if !raw.trim_start().starts_with('{') {
        return Err(HooksError::NotObject(what));
    }
    Ok(serde_json::from_str::<Entries<'a>>(raw)?.0)
}

/// The indentation of the line holding byte `at`.
fn indent_at(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// toolstream's compaction-only entry (`preToolUse`, the Shell tool), as text.
pub fn entry_json(command: &str) -> String {
    let command = serde_json::Value::String(command.to_owned());
    format!(r#"{{ "type": "command", "matcher": "Shell", "command": {command} }}"#)
}

/// An entry that runs `command` for every event of its kind, as text.
pub fn command_entry_json(command: &str) -> String {
    let command = serde_json::Value::String(command.to_owned());
    format!(r#"{{ "command": {command} }}"#)
}

/// A new `hooks.json` holding only these `(event, entry)` pairs.
pub fn new_file(entries: &[(&str, String)]) -> String {
    let mut out = String::from("{\n  \"version\": 1,\n  \"hooks\": {");
    for (i, (event, entry)) in entries.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        out.push_str(&format!("{sep}\n    \"{event}\": [\n      {entry}\n    ]"));
    }
    out.push_str("\n  }\n}\n");
    out
}

/// The entries (their text) of one event of a `hooks.json`.
pub fn entries<'a>(text: &'a str, event: &str) -> Result<Vec<&'a str>, HooksError> {
    let doc = object(text, "the file")?;
    let Some((_, hooks)) = doc.iter().find(|(k, _)| k == "hooks") else { return Ok(Vec::new()) };
    let hooks = object(hooks.get(), "`hooks`")?;
    let Some((_, list)) = hooks.iter().find(|(k, _)| k == event) else { return Ok(Vec::new()) };
    let items: Vec<&RawValue> = serde_json::from_str(list.get()).map_err(|_| HooksError::NotArray)?;
    Ok(items.into_iter().map(RawValue::get).collect())
}

/// The event names of `hooks`, in file order.
pub fn events(text: &str) -> Result<Vec<String>, HooksError> {
    let doc = object(text, "the file")?;
    let Some((_, hooks)) = doc.iter().find(|(k, _)| k == "hooks") else { return Ok(Vec::new()) };
    Ok(object(hooks.get(), "`hooks`")?.into_iter().map(|(k, _)| k).collect())
}

/// The `version` of a `hooks.json`, as written.
pub fn version(text: &str) -> Result<Option<String>, HooksError> {
    let doc = object(text, "the file")?;
    Ok(doc.iter().find(|(k, _)| k == "version").map(|(_, v)| v.get().to_owned()))
}

/// `text` with `entry` appended to `hooks.<event>` (creating the array, and `hooks`, at the end
/// of their objects when missing), everything else unchanged.
pub fn insert(text: &str, event: &str, entry: &str) -> Result<String, HooksError> {
    let doc = object(text, "the file")?;
    let key = serde_json::Value::String(event.to_owned()).to_string();
    let Some((_, hooks)) = doc.iter().find(|(k, _)| k == "hooks") else {
        let value = format!("{{\n    {key}: [\n      {entry}\n    ]\n  }}");
        let version = if doc.iter().any(|(k, _)| k == "version") { "" } else { "\"version\": 1,\n  " };
        return Ok(add_key(text, text, doc.last().map(|(_, v)| v.get()), &format!("{version}\"hooks\""), &value));
    };
    let entries = object(hooks.get(), "`hooks`")?;
    let Some((_, list)) = entries.iter().find(|(k, _)| k == event) else {
        let indent = format!("{}  ", indent_at(text, span(text, hooks.get()).0));
        let value = format!("[\n{indent}  {entry}\n{indent}]");
        return Ok(add_key(text, hooks.get(), entries.last().map(|(_, v)| v.get()), &key, &value));
    };
    let items: Vec<&RawValue> = serde_json::from_str(list.get()).map_err(|_| HooksError::NotArray)?;
    let mut out = text.to_owned();
    match items.last() {
        Some(last) => {
            let (start, end) = span(text, last.get());
            let sep = if list.get().contains('\n') { format!(",\n{}", indent_at(text, start)) } else { ", ".into() };
            out.insert_str(end, &format!("{sep}{entry}"));
        }
        None => {
            let (start, end) = span(text, list.get());
            out.replace_range(start..end, &format!("[{entry}]"));
        }
    }
    Ok(out)
}

/// Add `"key": value` at the end of the object `obj` (a slice of `text`) whose last value is `last`.
fn add_key(text: &str, obj: &str, last: Option<&str>, key: &str, value: &str) -> String {
    let mut out = text.to_owned();
    match last {
        Some(last) => {
            let (start, end) = span(text, last);
            out.insert_str(end, &format!(",\n{}{key}: {value}", indent_at(text, start)));
        }
        None => {
            let (start, end) = span(text, obj.trim());
            out.replace_range(start..end, &format!("{{ {key}: {value} }}"));
        }
    }
    out
}

/// `text` without the entries `is_ours` picks, in every event (each with the separator before it,
/// or after it for the first). An event left empty goes too when `added(event)` (install added
/// its key) and it is not the first key of `hooks`; else it stays, empty. `None` when nothing is
/// ours.
pub fn remove(
    text: &str,
    is_ours: impl Fn(&str) -> bool,
    added: impl Fn(&str) -> bool,
) -> Result<Option<String>, HooksError> {
    let doc = object(text, "the file")?;
    let Some((_, hooks)) = doc.iter().find(|(k, _)| k == "hooks") else { return Ok(None) };
    let entries = object(hooks.get(), "`hooks`")?;
    let mut cuts = Vec::new();
    for (pos, (event, list)) in entries.iter().enumerate() {
        let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(list.get()) else {
            // Not an array: not toolstream's to touch.
            continue;
        };
        let ours: Vec<bool> = items.iter().map(|i| is_ours(i.get())).collect();
        if !ours.contains(&true) {
            continue;
        }
        let (list_start, list_end) = span(text, list.get());
        if !ours.contains(&false) && pos > 0 && added(event) {
            // The key goes too: from the end of the value before it.
            cuts.push((span(text, entries[pos - 1].1.get()).1, list_end));
            continue;
        }
        for (i, item) in items.iter().enumerate() {
            if !ours[i] {
                continue;
            }
            let (start, end) = span(text, item.get());
            let kept_before = (0..i).rev().find(|&j| !ours[j]);
            let cut = match kept_before {
                Some(j) => (span(text, items[j].get()).1, end),
                None => match (i + 1..items.len()).find(|&j| !ours[j]) {
                    Some(j) => (start, span(text, items[j].get()).0),
                    None => (list_start + 1, list_end - 1),
                },
            };
            cuts.push(cut);
        }
    }
    if cuts.is_empty() {
        return Ok(None);
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = text.to_owned();
    let mut from = usize::MAX;
    for (start, end) in cuts.into_iter().rev() {
        let end = end.min(from);
        if start < end {
            out.replace_range(start..end, "");
        }
        from = start;
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "/bin/toolstream hook cursor";

    fn is_ours(entry: &str) -> bool {
        entry.contains("hook cursor")
    }

    #[test]
    fn install_then_uninstall_restores_the_file_byte_for_byte() {
        let files = [
            "{\n  \"version\": 1,\n  \"hooks\": {\n    \"preToolUse\": [\n      {\"command\": \"./audit.sh\"}\n    ],\n    \"afterFileEdit\": [{\"command\": \"fmt\"}]\n  }\n}\n",
            "{\"version\":1,\"hooks\":{\"preToolUse\":[{\"command\":\"a\"},{\"command\":\"b\"}]}}",
            "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [{\"command\": \"x\"}]\n  }\n}\n",
            "{\n  \"version\": 1,\n  \"hooks\": {\n    \"preToolUse\": []\n  }\n}\n",
            "{\"version\": 1}",
        ];
        for original in files {
            let installed = insert(original, "preToolUse", &entry_json(OURS)).unwrap();
            let parsed: serde_json::Value = serde_json::from_str(&installed).unwrap();
            let list = parsed["hooks"]["preToolUse"].as_array().unwrap();
            assert_eq!(list.last().unwrap()["command"], OURS, "{installed}");
            assert!(entries(&installed, "preToolUse").unwrap().iter().any(|e| is_ours(e)));
            let added = !original.contains("preToolUse");
            let removed = remove(&installed, is_ours, |_| added).unwrap().unwrap();
            let before: serde_json::Value = serde_json::from_str(original).unwrap();
            let after: serde_json::Value = serde_json::from_str(&removed).unwrap();
            if original.contains("preToolUse") || original.contains("stop") {
                assert_eq!(removed, original, "round trip of {original}");
            } else {
                assert_eq!(after["version"], before["version"]);
            }
        }
    }

    #[test]
    fn only_our_entries_go() {
        let text = format!(
            "{{\"hooks\": {{\"preToolUse\": [{}, {{\"command\": \"keep me\"}}, {}]}}}}",
            entry_json(OURS),
            entry_json("/other/toolstream hook cursor")
        );
        let out = remove(&text, is_ours, |_| true).unwrap().unwrap();
        assert_eq!(out, "{\"hooks\": {\"preToolUse\": [{\"command\": \"keep me\"}]}}");
        assert!(remove(&out, is_ours, |_| true).unwrap().is_none());
    }

    #[test]
    fn a_new_file_is_valid_and_ours() {
        let text = new_file(&[("preToolUse", entry_json(OURS)), ("stop", command_entry_json(OURS))]);
        assert_eq!(version(&text).unwrap().as_deref(), Some("1"));
        assert_eq!(entries(&text, "preToolUse").unwrap().len(), 1);
        assert_eq!(entries(&text, "stop").unwrap(), [command_entry_json(OURS)]);
        assert_eq!(events(&text).unwrap(), ["preToolUse", "stop"]);
    }

    #[test]
    fn many_events_install_and_uninstall_byte_for_byte() {
        let original = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [\n      {\"command\": \"./notify.sh\"}\n    ],\n    \"afterFileEdit\": [{\"command\": \"fmt\"}]\n  }\n}\n";
        let mut text = original.to_owned();
        let mut added = Vec::new();
        for event in ["sessionStart", "stop", "preToolUse", "afterFileEdit"] {
            if entries(&text, event).unwrap().is_empty() {
                added.push(event);
            }
            text = insert(&text, event, &command_entry_json(OURS)).unwrap();
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["hooks"]["stop"].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["sessionStart"][0]["command"], OURS);
        let back = remove(&text, is_ours, |e| added.contains(&e)).unwrap().unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn broken_files_are_reported_not_rewritten() {
        assert!(matches!(insert("{ nope", "stop", "{}"), Err(HooksError::Json(_))));
        assert!(matches!(insert("[1]", "stop", "{}"), Err(HooksError::NotObject(_))));
        assert!(matches!(insert("{\"hooks\": {\"preToolUse\": 3}}", "preToolUse", "{}"), Err(HooksError::NotArray)));
    }
}
