//! What the Cursor hook captures hold, read straight from their JSON (independently of the
//! decoder).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

/// The hook payloads of a log, out of their envelopes (LangSmith `payload`, agent-bundle
/// `event.native`; agent-bundle's MCP-server lines hold none).
pub fn payloads(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v.get("payload").cloned().or_else(|| v.pointer("/event/native").cloned())
        })
        .collect()
}

fn s<'a>(p: &'a Value, k: &str) -> &'a str {
    p.get(k).and_then(Value::as_str).unwrap_or("")
}

/// What a hook log holds, from its payloads: turns (a `generation_id` of a conversation, the
/// subagent events' pseudo-generation aside) and calls (a `preToolUse` each, and each completion
/// whose `preToolUse` the log lacks — matched by id, else tool and input).
pub fn hook_log_holds(file: &Path) -> (usize, usize) {
    let ps = payloads(file);
    let mut turns = BTreeSet::new();
    let mut calls = 0;
    let mut open: Vec<(String, String, String, String)> = Vec::new();
    for p in &ps {
        let (conv, gen, ev) = (s(p, "conversation_id"), s(p, "generation_id"), s(p, "hook_event_name"));
        if !gen.is_empty() && gen != conv {
            turns.insert((conv.to_owned(), gen.to_owned()));
        }
        let key = |p: &Value| {
            (conv.to_owned(), s(p, "tool_use_id").to_owned(), s(p, "tool_name").to_owned(), p["tool_input"].to_string())
        };
        match ev {
            "preToolUse" => {
                calls += 1;
                open.push(key(p));
            }
            "postToolUse" | "postToolUseFailure" => {
                let k = key(p);
                let by_id = open.iter().position(|o| !k.1.is_empty() && o.0 == k.0 && o.1 == k.1);
                let by_input = open.iter().position(|o| o.0 == k.0 && o.2 == k.2 && o.3 == k.3);
                match by_id.or(by_input) {
                    Some(i) => {
                        open.remove(i);
                    }
                    None => calls += 1,
                }
            }
            _ => {}
        }
    }
    (turns.len(), calls)
}
