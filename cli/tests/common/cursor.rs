//! What the Cursor hook captures hold, read straight from their JSON (independently of the
//! decoder), and real pi's own view of the sessions toolstream writes.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::{run_with_timeout, Pi};

/// How long one real pi may take.
pub const PI_TIMEOUT: Duration = Duration::from_secs(60);

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

/// pi's own listing of the sessions of working directory `cwd` (what `pi -r` shows there), with
/// pi's agent folder `agent`: `(path, id, firstMessage, messageCount)` of each.
pub fn pi_sessions_of(pi: &Pi, agent: &Path, cwd: &str, timeout: Duration) -> Vec<Value> {
    let pkg = pi.package_dir().join("dist/index.js");
    let script = format!(
        "import {{ SessionManager }} from {pkg};\nconst s = await SessionManager.list({cwd});\nconsole.log(JSON.stringify(s.map(x => ({{ path: x.path, id: x.id, firstMessage: x.firstMessage, messageCount: x.messageCount }}))));",
        pkg = json!(pkg.canonicalize().unwrap().to_str().unwrap()),
        cwd = json!(cwd),
    );
    let mut node = Command::new(pi.node());
    node.args(["--input-type=module", "-e", &script]).env("PI_CODING_AGENT_DIR", agent);
    let listed = run_with_timeout(&mut node, None, timeout).unwrap();
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    serde_json::from_str::<Value>(listed.stdout.trim()).unwrap().as_array().cloned().unwrap_or_default()
}

/// `pi` with its agent folder in `home`, offline.
pub fn pi_command(pi: &Path, home: &Path) -> Command {
    let agent = home.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let mut cmd = Command::new(pi);
    cmd.env("PI_CODING_AGENT_DIR", &agent)
        .env("PI_OFFLINE", "1")
        .env("HOME", home)
        .env_remove("PI_CODING_AGENT_SESSION_DIR");
    cmd
}

/// Send RPC commands to `pi --mode rpc ARGS…` (stdin then closed) and return its responses by id.
pub fn pi_rpc(mut cmd: Command, commands: &[Value]) -> std::collections::HashMap<String, Value> {
    let input: String = commands.iter().map(|c| format!("{c}\n")).collect();
    let out = run_with_timeout(&mut cmd, Some(input.as_bytes()), PI_TIMEOUT).unwrap();
    let mut by_id = std::collections::HashMap::new();
    for line in out.stdout.lines() {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            if v["type"] == "response" {
                by_id.insert(v["id"].as_str().unwrap_or("").to_owned(), v);
            }
        }
    }
    assert!(!by_id.is_empty(), "pi answered nothing: exit {:?}, stderr {}", out.code, out.stderr);
    by_id
}
