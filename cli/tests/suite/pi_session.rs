//! pi session files (SPEC §9.2) checked against real pi: every capture of the shared fixtures plus
//! the project's examples is replayed with `--sink pi-session=…`, then each pinned pi
//! (`scripts/pi-versions`, installed by `scripts/install-pi`) must load a copy of it:
//! - `pi --export COPY out.html` exits 0; the HTML's embedded session data holds every entry of the
//!   file with the last one as the leaf, and pi's own export template, run against a stub DOM,
//!   renders one tool card per call, none pending (each found its result);
//! - RPC mode (`pi --mode rpc`, JSON lines on stdin/stdout): `switch_session` to the copy,
//!   `get_messages` returns exactly the file's messages, `get_session_stats` counts them.
//!
//! Without pi the structural checks still run and the real-pi test prints a note and passes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::{run_with_timeout, wait_or_kill, Finished};

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Longest any single pi invocation may take.
const PI_TIMEOUT: Duration = Duration::from_secs(60);
/// pi processes run at once.
const WORKERS: usize = 4;

/// What one replay produced.
struct Replayed {
    session: PathBuf,
    /// Session lines, parsed.
    lines: Vec<Value>,
    /// Cards the engine produced (`tool_completed` lines of the debug trace).
    cards: usize,
}

fn replay(capture: &Path, dir: &Path) -> Replayed {
    let session = dir.join("s.jsonl");
    let trace = dir.join("trace.jsonl");
    let run = common::toolstream(
        &[
            "replay",
            "--sink",
            &format!("pi-session={}", session.display()),
            "--sink",
            &format!("jsonl={}", trace.display()),
            capture.to_str().unwrap(),
        ],
        None,
    );
    assert!(run.code == 0 || run.code == 1, "{}: exit {} {}", capture.display(), run.code, run.stderr);
    let text = std::fs::read_to_string(&session).unwrap();
    let lines = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let cards = std::fs::read_to_string(&trace).unwrap().lines().filter(|l| l.contains("\"tool_completed\"")).count();
    Replayed { session, lines, cards }
}

fn messages(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|e| e["type"] == "message").map(|e| &e["message"]).collect()
}

fn tool_calls(m: &Value) -> Vec<&Value> {
    m["content"].as_array().map(|c| c.iter().filter(|b| b["type"] == "toolCall").collect()).unwrap_or_default()
}

/// The structural rules of a session file; returns a description of the first violation.
fn check_structure(r: &Replayed) -> Result<(), String> {
    let header = &r.lines[0];
    if header["type"] != "session" || header["version"] != 3 || !header["id"].is_string() || !header["cwd"].is_string()
    {
        return Err(format!("bad header {header}"));
    }
    let mut prev: Option<&str> = None;
    let mut ids = std::collections::HashSet::new();
    for e in &r.lines[1..] {
        let id = e["id"].as_str().ok_or("entry without id")?;
        if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) || !ids.insert(id) {
            return Err(format!("bad or repeated id {id}"));
        }
        if e["parentId"].as_str() != prev {
            return Err(format!("{id}: parent {} is not the previous entry", e["parentId"]));
        }
        prev = Some(id);
    }
    let msgs = messages(&r.lines);
    let mut calls = 0;
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        for k in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
            if !m["usage"][k].is_u64() {
                return Err(format!("usage.{k} missing in {m}"));
            }
        }
        for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
            if !m["usage"]["cost"][k].is_number() {
                return Err(format!("usage.cost.{k} missing in {m}"));
            }
        }
        let stop = m["stopReason"].as_str().unwrap_or("");
        if !["stop", "toolUse", "error", "aborted"].contains(&stop) || !m["timestamp"].is_u64() {
            return Err(format!("bad stop reason or timestamp in {m}"));
        }
        // Every tool call is answered, in order, by the messages right after it.
        for (k, call) in tool_calls(m).iter().enumerate() {
            calls += 1;
            let result = msgs.get(i + 1 + k).ok_or("tool call without result")?;
            if result["role"] != "toolResult"
                || result["toolCallId"] != call["id"]
                || result["toolName"] != call["name"]
            {
                return Err(format!("tool call {} is not answered by the next message: {result}", call["id"]));
            }
        }
    }
    let results = msgs.iter().filter(|m| m["role"] == "toolResult").count();
    if calls != r.cards || results != r.cards {
        return Err(format!("{} cards, {calls} tool calls, {results} tool results", r.cards));
    }
    Ok(())
}

/// Whitespace-free concatenation of every assistant text block of the session.
fn session_text(lines: &[Value]) -> String {
    let mut all = String::new();
    for m in messages(lines).into_iter().filter(|m| m["role"] == "assistant") {
        for b in m["content"].as_array().unwrap().iter().filter(|b| b["type"] == "text") {
            all.push_str(b["text"].as_str().unwrap());
        }
    }
    all.split_whitespace().collect()
}

/// The `result.result` texts of a CLI capture, concatenated, whitespace-free; `None` when the
/// capture has no `result` line.
fn capture_result_text(capture: &Path) -> Option<String> {
    let text = std::fs::read_to_string(capture).unwrap();
    let mut found = false;
    let mut all = String::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["type"] == "result" {
            found = true;
            all.push_str(v["result"].as_str().unwrap_or(""));
        }
    }
    found.then(|| all.split_whitespace().collect())
}

#[test]
fn sink_spec_parses() {
    use toolstream_engine::sinks::{SinkKind, SinkSpec};
    assert_eq!(
        "pi-session=s.jsonl".parse::<SinkSpec>(),
        Ok(SinkSpec::new(SinkKind::PiSession, Some("s.jsonl".into())))
    );
    assert!("pi-session".parse::<SinkSpec>().is_err());
    assert!("pi-session=".parse::<SinkSpec>().is_err());
}

#[test]
fn sessions_are_well_formed_and_hold_the_text_once() {
    for capture in common::captures_and_examples() {
        let dir = common::tempdir();
        let r = replay(&capture, &dir);
        if let Err(e) = check_structure(&r) {
            panic!("{}: {e}", capture.display());
        }
        if let Some(expected) = capture_result_text(&capture) {
            assert_eq!(session_text(&r.lines), expected, "{}: assistant text vs result.result", capture.display());
        }
        // Replaying again writes the same bytes.
        let again = common::tempdir();
        let r2 = replay(&capture, &again);
        assert_eq!(std::fs::read(&r.session).unwrap(), std::fs::read(&r2.session).unwrap(), "{}", capture.display());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&again);
    }
}

#[test]
fn live_events_deliver_the_session_messages() {
    use toolstream_sinks::pi_events::PiEventsSink;
    use toolstream_sinks::Sink;
    for capture in common::captures_and_examples() {
        let (events, _) = common::collect(&[&capture]);
        let mut sink = PiEventsSink::new(Vec::new());
        sink.write(&events).unwrap();
        let bytes = sink.into_inner();
        let lines: Vec<Value> =
            std::str::from_utf8(&bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let delivered = common::rebuild_stream(&lines).unwrap_or_else(|e| panic!("{}: {e}", capture.display()));
        let dir = common::tempdir();
        let r = replay(&capture, &dir);
        let session: Vec<&Value> = messages(&r.lines).into_iter().filter(|m| m["role"] != "user").collect();
        assert_eq!(delivered.len(), session.len(), "{}", capture.display());
        for (d, s) in delivered.iter().zip(&session) {
            assert_eq!(&d, s, "{}", capture.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn real_pi_exports_and_serves_every_session() {
    let pis = common::pis();
    let started = Instant::now();
    let captures = common::captures_and_examples();
    // Every capture with every pi, in one queue.
    let all: Vec<(&common::Pi, &PathBuf)> = pis.iter().flat_map(|pi| captures.iter().map(move |c| (pi, c))).collect();
    let next = AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                s.spawn(|| {
                    let mut failed = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(pi, capture)) = all.get(i) else { break };
                        if let Err(e) = check_with_pi(&pi.bin(), capture) {
                            failed.push(format!("{pi}, {}: {e}", common::name(capture)));
                        }
                    }
                    failed
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    eprintln!(
        "checked {} sessions with {} real pi's in {:.1}s",
        captures.len(),
        pis.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Replay `capture`, then have pi export and serve copies of the session.
fn check_with_pi(pi: &Path, capture: &Path) -> Result<(), String> {
    let dir = common::tempdir();
    let r = replay(capture, &dir);
    check_structure(&r)?;
    let original = std::fs::read_to_string(&r.session).unwrap();

    // Export a byte-for-byte copy (pi may append to files it opens; the original stays ours).
    let copy = dir.join("export-copy.jsonl");
    std::fs::write(&copy, &original).unwrap();
    let html = dir.join("out.html");
    let out = run_pi(pi, &dir.join("export"), &["--export", copy.to_str().unwrap(), html.to_str().unwrap()], None)?;
    if out.code != Some(0) {
        return Err(format!("pi --export exited {:?}: {}", out.code, out.stderr));
    }
    check_export(&r, &std::fs::read_to_string(&html).map_err(|e| format!("no export: {e}"))?)?;
    check_rendered_cards(&r, &html)?;

    // RPC on another copy. pi refuses to switch to a session whose working directory does not
    // exist (it checks the header's cwd), and recorded runs come from other machines: point the
    // copy's header at a directory that exists; everything else is byte-identical.
    let cwd = r.lines[0]["cwd"].as_str().unwrap();
    let rpc_copy = dir.join("rpc-copy.jsonl");
    let mut text = original.clone();
    if !Path::new(cwd).is_dir() {
        let workdir = dir.join("workdir");
        std::fs::create_dir_all(&workdir).unwrap();
        let (first, rest) = text.split_once('\n').unwrap();
        let from = format!("\"cwd\":{}", serde_json::to_string(cwd).unwrap());
        let to = format!("\"cwd\":{}", serde_json::to_string(workdir.to_str().unwrap()).unwrap());
        assert!(first.contains(&from));
        text = format!("{}\n{rest}", first.replacen(&from, &to, 1));
    }
    std::fs::write(&rpc_copy, &text).unwrap();
    check_rpc(pi, &dir.join("rpc"), &r, &rpc_copy)?;
    // pi only ever appends (a thinking-level entry on switching): every line we wrote is intact.
    let after = std::fs::read_to_string(&rpc_copy).unwrap();
    if !after.starts_with(&text) {
        return Err("pi rewrote lines of the session".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The HTML embeds the session as base64 JSON: all entries, the header, the last entry as leaf.
fn check_export(r: &Replayed, html: &str) -> Result<(), String> {
    let start = html.find("<script id=\"session-data\" type=\"application/json\">").ok_or("no session data")?;
    let rest = &html[start..];
    let b64 = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    let data: Value = serde_json::from_slice(&base64_decode(b64)).map_err(|e| format!("session data: {e}"))?;
    if data["header"] != r.lines[0] {
        return Err(format!("exported header differs: {}", data["header"]));
    }
    let entries = data["entries"].as_array().ok_or("no entries")?;
    if entries.as_slice() != &r.lines[1..] {
        return Err(format!("export holds {} entries, the file {}", entries.len(), r.lines.len() - 1));
    }
    let last = r.lines.last().unwrap();
    if data["leafId"] != last["id"] {
        return Err(format!("leaf {} is not the last entry", data["leafId"]));
    }
    Ok(())
}

/// Run pi's own export template against a stub DOM (the page renders client-side) and count the
/// `tool-execution` cards it puts into `#messages` for the conversation path.
fn check_rendered_cards(r: &Replayed, html: &Path) -> Result<(), String> {
    let script = html.with_file_name("render.mjs");
    std::fs::write(&script, RENDER_JS).unwrap();
    let out = run_with_timeout(Command::new("node").arg(&script).arg(html), None, PI_TIMEOUT)?;
    if out.code != Some(0) {
        return Err(format!("rendering the export failed: {}", out.stderr));
    }
    let got: Value = serde_json::from_str(out.stdout.trim()).map_err(|e| format!("{e}: {}", out.stdout))?;
    let errors = messages(&r.lines).iter().filter(|m| m["role"] == "toolResult" && m["isError"] == true).count();
    let expected = json!({"cards": r.cards, "pending": 0, "error": errors});
    if got != expected {
        return Err(format!("rendered {got}, expected {expected}"));
    }
    Ok(())
}

/// Loads pi's export page script with just enough DOM to render the conversation, then prints
/// `{cards, pending, error}` for the `tool-execution` cards of the rendered entries.
const RENDER_JS: &str = r#"
import fs from 'node:fs';
const html = fs.readFileSync(process.argv[2], 'utf8');
const data = html.match(/<script id="session-data" type="application\/json">([^<]*)<\/script>/)[1];
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(m => m[1]);
const app = scripts[scripts.length - 1];
function stub() {
  const store = {};
  return new Proxy(function () {}, {
    get(t, k) {
      if (k in store) return store[k];
      if (k === Symbol.toPrimitive) return () => '';
      if (k === 'length') return 0;
      if (k === Symbol.iterator) return function* () {};
      return stub();
    },
    set(t, k, v) { store[k] = v; return true; },
    apply() { return stub(); },
    construct() { return stub(); },
  });
}
let rendered = [];
const messages = stub();
messages.appendChild = (frag) => { rendered = frag.children.slice(); };
const elements = { 'session-data': { textContent: data }, messages };
const document = new Proxy({}, {
  get(t, k) {
    if (k === 'getElementById') return (id) => elements[id] ?? (elements[id] = stub());
    if (k === 'createElement') return (tag) => {
      if (tag !== 'template') return stub();
      const el = { html: '', set innerHTML(v) { this.html = v; }, get innerHTML() { return this.html; } };
      el.content = { get firstElementChild() { return el.html ? { html: el.html, cloneNode() { return this; } } : null; } };
      return el;
    };
    if (k === 'createDocumentFragment') return () => ({ children: [], appendChild(n) { this.children.push(n); } });
    if (k === 'querySelector') return () => null;
    return stub();
  },
});
const window = stub();
window.location = { search: '' };
const globals = {
  document, window, getComputedStyle: () => ({ getPropertyValue: () => '' }), innerWidth: 1200,
  addEventListener: () => {}, atob: (s) => Buffer.from(s, 'base64').toString('latin1'), TextDecoder,
  URLSearchParams, marked: { parse: (s) => s, use: () => {} }, hljs: stub(), localStorage: stub(),
  navigator: stub(), setTimeout: () => 0, requestAnimationFrame: () => 0, history: stub(),
  location: { search: '' },
};
new Function(...Object.keys(globals), app)(...Object.values(globals));
const cards = rendered.map(n => n.html).join('\n').match(/<div class="tool-execution (success|error|pending)"/g) || [];
console.log(JSON.stringify({
  cards: cards.length,
  pending: cards.filter(c => c.includes('pending')).length,
  error: cards.filter(c => c.includes('error')).length,
}));
"#;

/// `switch_session` to the copy, then `get_messages` and `get_session_stats`.
fn check_rpc(pi: &Path, home: &Path, r: &Replayed, copy: &Path) -> Result<(), String> {
    let mut rpc = Rpc::start(pi, home)?;
    let res = (|| {
        let switched = rpc.call(json!({"id": "switch", "type": "switch_session", "sessionPath": copy}))?;
        if switched["data"]["cancelled"] != false {
            return Err(format!("switch_session: {switched}"));
        }
        let got = rpc.call(json!({"id": "messages", "type": "get_messages"}))?;
        let want = messages(&r.lines);
        let have = got["data"]["messages"].as_array().ok_or("no messages")?;
        if have.len() != want.len() {
            return Err(format!("get_messages returned {} messages, the file has {}", have.len(), want.len()));
        }
        if let Some(i) = (0..want.len()).find(|&i| &have[i] != want[i]) {
            return Err(format!("message {i} differs:\n pi:   {}\n file: {}", have[i], want[i]));
        }
        let stats = rpc.call(json!({"id": "stats", "type": "get_session_stats"}))?;
        let d = &stats["data"];
        let count = |role: &str| want.iter().filter(|m| m["role"] == role).count();
        let sum = |k: &str| -> u64 {
            want.iter().filter(|m| m["role"] == "assistant").map(|m| m["usage"][k].as_u64().unwrap()).sum()
        };
        let expected = json!({
            "userMessages": count("user"),
            "assistantMessages": count("assistant"),
            "toolCalls": r.cards,
            "toolResults": r.cards,
            "totalMessages": want.len(),
            "input": sum("input"),
            "output": sum("output"),
        });
        let actual = json!({
            "userMessages": d["userMessages"],
            "assistantMessages": d["assistantMessages"],
            "toolCalls": d["toolCalls"],
            "toolResults": d["toolResults"],
            "totalMessages": d["totalMessages"],
            "input": d["tokens"]["input"],
            "output": d["tokens"]["output"],
        });
        if actual != expected || !d["cost"].is_number() || d["sessionFile"] != json!(copy) {
            return Err(format!("get_session_stats: {d}, expected {expected}"));
        }
        Ok(())
    })();
    let closed = rpc.close();
    res?;
    closed
}

/// A `pi --mode rpc` process: commands as JSON lines on stdin, responses on stdout.
struct Rpc {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Rpc {
    fn start(pi: &Path, home: &Path) -> Result<Rpc, String> {
        let mut cmd = pi_command(pi, home);
        cmd.args(["--mode", "rpc"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot start pi: {e}"))?;
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            // Records are split on LF only (pi's RPC framing).
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                if tx.send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Ok(Rpc { stdin: child.stdin.take(), child, lines, stderr })
    }

    /// Send a command and wait for the response with its id.
    fn call(&mut self, cmd: Value) -> Result<Value, String> {
        let id = cmd["id"].clone();
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{cmd}").and_then(|()| stdin.flush()).map_err(|e| format!("rpc write: {e}"))?;
        let deadline = Instant::now() + PI_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).map_err(|_| format!("no response to {cmd} in time"))?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if v["type"] == "response" && v["id"] == id {
                if v["success"] != true {
                    return Err(format!("{} failed: {v}", cmd["type"]));
                }
                return Ok(v);
            }
        }
    }

    /// Close stdin (pi shuts down at end of input) and reap it, killing it if it lingers.
    fn close(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        let code = wait_or_kill(&mut self.child, PI_TIMEOUT);
        let stderr = self.stderr.join().unwrap_or_default();
        match code {
            Some(_) => Ok(()),
            None => Err(format!("pi --mode rpc did not exit after end of input; stderr: {stderr}")),
        }
    }
}

/// pi with a fresh agent dir, home and offline mode: nothing from the user's setup leaks in.
fn pi_command(pi: &Path, home: &Path) -> Command {
    let agent = home.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let mut cmd = Command::new(pi);
    cmd.current_dir(home)
        .env("PI_CODING_AGENT_DIR", &agent)
        .env("PI_OFFLINE", "1")
        .env("HOME", home)
        .env_remove("PI_CODING_AGENT_SESSION_DIR");
    cmd
}

fn run_pi(pi: &Path, home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Finished, String> {
    let mut cmd = pi_command(pi, home);
    cmd.args(args);
    run_with_timeout(&mut cmd, stdin, PI_TIMEOUT)
}

/// Standard base64 (with padding), as the export embeds the session.
fn base64_decode(s: &str) -> Vec<u8> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter_map(val) {
        acc = (acc << 6) | c;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
