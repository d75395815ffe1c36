//! Bridge diagnostics (SPEC §7): the queue's allowlisted `Diagnostic` outputs as single JSON lines,
//! on stderr prefixed `[toolstream:bridge]` (`PI_CURSOR_PI_TOOL_BRIDGE_DEBUG=1`) and/or appended to
//! a JSONL file (`PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE`). Only the event name and the fields the
//! queue produced are written: never the URL, port, token, path, raw MCP id, args, results or
//! error text (the queue never puts them in a diagnostic).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value};
use toolstream_schemas::display::json_line;

/// The stderr prefix of a diagnostic line.
pub const STDERR_PREFIX: &str = "[toolstream:bridge]";

/// Where diagnostics go; does nothing when both outputs are off.
#[derive(Debug, Default)]
pub struct Diagnostics {
    stderr: bool,
    file: Option<Mutex<File>>,
}

impl Diagnostics {
    /// `file` is created if absent and appended to.
    pub fn new(stderr: bool, file: Option<&Path>) -> io::Result<Self> {
        let file = match file {
            Some(p) => Some(Mutex::new(OpenOptions::new().create(true).append(true).open(p)?)),
            None => None,
        };
        Ok(Diagnostics { stderr, file })
    }

    pub fn is_on(&self) -> bool {
        self.stderr || self.file.is_some()
    }

    /// One diagnostic: `{"event": …, <fields>}`.
    pub fn emit(&self, event: &str, fields: &Map<String, Value>) {
        if !self.is_on() {
            return;
        }
        let line = render(event, fields);
        if self.stderr {
            // On a terminal: the same JSON, with any unsafe char in a string escaped.
            if let Ok(safe) = json_line(&line) {
                eprintln!("{STDERR_PREFIX} {safe}");
            }
        }
        if let Some(file) = &self.file {
            if let Ok(mut f) = file.lock() {
                if let Err(e) = writeln!(f, "{line}") {
                    tracing::warn!("bridge diagnostics file: {e}");
                }
            }
        }
    }
}

/// The JSON object of one diagnostic: `event` beside the fields.
pub fn render(event: &str, fields: &Map<String, Value>) -> Value {
    let mut obj = Map::with_capacity(fields.len() + 1);
    obj.insert("event".into(), Value::from(event));
    for (k, v) in fields {
        obj.insert(k.clone(), v.clone());
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_the_event_and_the_fields() {
        let Value::Object(fields) = json!({"runId": "r", "pendingCount": 1}) else { unreachable!() };
        assert_eq!(render("run_created", &fields), json!({"event": "run_created", "pendingCount": 1, "runId": "r"}));
    }

    #[test]
    fn the_file_gets_jsonl() {
        let dir = std::env::temp_dir().join(format!("toolstream-bridge-diag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.jsonl");
        let d = Diagnostics::new(false, Some(&path)).unwrap();
        assert!(d.is_on());
        d.emit("a", &Map::new());
        d.emit("b", &Map::new());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"event\":\"a\"}\n{\"event\":\"b\"}\n");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!Diagnostics::new(false, None).unwrap().is_on());
    }
}
