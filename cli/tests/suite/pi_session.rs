//! pi session files (SPEC §9.2) checked against real pi: every capture of the shared fixtures plus
//! the project's examples is replayed with `--sink pi-session=…`, then each pinned pi
//! (`scripts/pi-versions`, installed by `scripts/install-pi`) must load a copy of it:
//! - `pi --export COPY out.html` exits 0; the HTML's embedded session data holds every entry of the
//!   file with the last one as the leaf, and pi's own export template, run against a stub DOM,
//!   renders one tool card per call, none pending (each found its result) — one node process
//!   renders every page;
//! - RPC mode (`pi --mode rpc`, JSON lines on stdin/stdout), one process per pi switching from
//!   session to session: `switch_session` to the copy, `get_messages` returns exactly the file's
//!   messages, `get_session_stats` counts them.
//!
//! Without pi the structural checks still run and the real-pi test prints a note and passes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::pi::{self, Rpc, PI_TIMEOUT};
use crate::common::{run_with_timeout, Finished};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::{json, Value};

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
    // Each capture is replayed once; every pi reads the same session.
    let prepared: Vec<Prepared> = parallel(&captures, |capture| prepare(capture));
    let mut failures: Vec<String> = Vec::new();
    // Exports: one `pi --export` per session and pi, every pi in one queue.
    let exports: Vec<(&common::Pi, &Prepared)> =
        pis.iter().flat_map(|pi| prepared.iter().map(move |p| (pi, p))).collect();
    let exported: Vec<Result<PathBuf, String>> = parallel(&exports, |&(pi, p)| export(pi, p));
    let mut htmls = Vec::new();
    for ((pi, p), html) in exports.iter().zip(exported) {
        match html.and_then(|html| {
            check_export(&p.replayed, &std::fs::read_to_string(&html).map_err(|e| format!("no export: {e}"))?)
                .map(|()| html)
        }) {
            Ok(html) => htmls.push((*pi, *p, html)),
            Err(e) => failures.push(format!("{pi}, {}: {e}", p.name)),
        }
    }
    // pi's export template renders every page, in one node process.
    match render_cards(&htmls.iter().map(|(_, _, html)| html.as_path()).collect::<Vec<_>>()) {
        Ok(rendered) => {
            for ((pi, p, _), got) in htmls.iter().zip(rendered) {
                if let Err(e) = check_rendered_cards(&p.replayed, &got) {
                    failures.push(format!("{pi}, {}: {e}", p.name));
                }
            }
        }
        Err(e) => failures.push(format!("rendering the exports: {e}")),
    }
    // RPC: one `pi --mode rpc` per pi, switching from session to session.
    let served: Vec<Vec<String>> = parallel(&pis, |pi| serve_all(pi, &prepared));
    for (pi, failed) in pis.iter().zip(served) {
        failures.extend(failed.into_iter().map(|e| format!("{pi}, {e}")));
    }
    eprintln!(
        "checked {} sessions with {} real pi's in {:.1}s",
        captures.len(),
        pis.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for p in prepared {
        let _ = std::fs::remove_dir_all(&p.dir);
    }
}

/// `f` over `items` on [`WORKERS`] threads; the results in the items' order.
fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS.min(items.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A capture replayed into a session, with the copy pi may switch to over RPC.
struct Prepared {
    name: String,
    dir: PathBuf,
    replayed: Replayed,
    /// The session as we wrote it.
    original: String,
    /// The text of the RPC copy: the original, its header's cwd pointed at a directory that exists.
    rpc_text: String,
}

/// Replay `capture` and check the session's structure (a violation fails the test at once: it is
/// ours, not pi's).
fn prepare(capture: &Path) -> Prepared {
    let dir = common::tempdir();
    let replayed = replay(capture, &dir);
    if let Err(e) = check_structure(&replayed) {
        panic!("{}: {e}", capture.display());
    }
    let original = std::fs::read_to_string(&replayed.session).unwrap();
    // pi refuses to switch to a session whose working directory does not exist (it checks the
    // header's cwd), and recorded runs come from other machines: point the copy's header at a
    // directory that exists; everything else is byte-identical.
    let cwd = replayed.lines[0]["cwd"].as_str().unwrap();
    let mut rpc_text = original.clone();
    if !Path::new(cwd).is_dir() {
        let workdir = dir.join("workdir");
        std::fs::create_dir_all(&workdir).unwrap();
        let (first, rest) = rpc_text.split_once('\n').unwrap();
        let from = format!("\"cwd\":{}", serde_json::to_string(cwd).unwrap());
        let to = format!("\"cwd\":{}", serde_json::to_string(workdir.to_str().unwrap()).unwrap());
        assert!(first.contains(&from));
        rpc_text = format!("{}\n{rest}", first.replacen(&from, &to, 1));
    }
    Prepared { name: common::name(capture), dir, replayed, original, rpc_text }
}

/// `pi --export` of a byte-for-byte copy (pi may append to files it opens; the original stays
/// ours); the HTML's path.
fn export(pi: &common::Pi, p: &Prepared) -> Result<PathBuf, String> {
    let tag = &pi.version;
    let copy = p.dir.join(format!("export-copy-{tag}.jsonl"));
    std::fs::write(&copy, &p.original).unwrap();
    let html = p.dir.join(format!("out-{tag}.html"));
    let out = run_export(&pi.bin(), &p.dir.join(format!("export-{tag}")), &copy, &html)?;
    if out.code != Some(0) {
        return Err(format!("pi --export exited {:?}: {}", out.code, out.stderr));
    }
    Ok(html)
}

/// One RPC process of `pi` serves every session in turn; a failure per session that failed.
fn serve_all(pi: &common::Pi, prepared: &[Prepared]) -> Vec<String> {
    let home = common::tempdir();
    let mut cmd = pi::pi_command(&pi.bin(), &home);
    cmd.current_dir(&home);
    let mut rpc = Rpc::start(cmd);
    let mut failed = Vec::new();
    for (k, p) in prepared.iter().enumerate() {
        let copy = p.dir.join(format!("rpc-copy-{}.jsonl", pi.version));
        std::fs::write(&copy, &p.rpc_text).unwrap();
        let checked = check_rpc(&mut rpc, k, &p.replayed, &copy).and_then(|()| {
            // pi only ever appends (a thinking-level entry on switching): every line we wrote is
            // intact.
            let after = std::fs::read_to_string(&copy).unwrap();
            if after.starts_with(&p.rpc_text) {
                Ok(())
            } else {
                Err("pi rewrote lines of the session".into())
            }
        });
        if let Err(e) = checked {
            failed.push(format!("{}: {e}", p.name));
        }
    }
    if rpc.close(PI_TIMEOUT).is_none() {
        failed.push("pi --mode rpc did not exit after end of input".into());
    }
    let _ = std::fs::remove_dir_all(&home);
    failed
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

/// Run pi's own export template against a stub DOM (the page renders client-side), one node
/// process for every page: per page, the `tool-execution` cards it puts into `#messages` for the
/// conversation path (`{cards, pending, error}`).
fn render_cards(htmls: &[&Path]) -> Result<Vec<Value>, String> {
    let Some(first) = htmls.first() else { return Ok(Vec::new()) };
    let script = first.with_file_name("render.mjs");
    std::fs::write(&script, RENDER_JS).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).args(htmls);
    let out = run_with_timeout(&mut cmd, None, PI_TIMEOUT)?;
    if out.code != Some(0) {
        return Err(format!("rendering the exports failed: {}", out.stderr));
    }
    let got: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{e}: {l}")))
        .collect::<Result<_, _>>()?;
    if got.len() != htmls.len() {
        return Err(format!("{} pages rendered of {}", got.len(), htmls.len()));
    }
    Ok(got)
}

/// The cards rendered are one per call, none pending, as many errors as failed results.
fn check_rendered_cards(r: &Replayed, got: &Value) -> Result<(), String> {
    let errors = messages(&r.lines).iter().filter(|m| m["role"] == "toolResult" && m["isError"] == true).count();
    let expected = json!({"cards": r.cards, "pending": 0, "error": errors});
    if *got != expected {
        return Err(format!("rendered {got}, expected {expected}"));
    }
    Ok(())
}

/// Loads pi's export page script with just enough DOM to render the conversation, then prints
/// `{cards, pending, error}` for the `tool-execution` cards of the rendered entries: one line per
/// page named on the command line.
const RENDER_JS: &str = r#"
import fs from 'node:fs';
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
function render(path) {
  const html = fs.readFileSync(path, 'utf8');
  const data = html.match(/<script id="session-data" type="application\/json">([^<]*)<\/script>/)[1];
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(m => m[1]);
  const app = scripts[scripts.length - 1];
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
  return {
    cards: cards.length,
    pending: cards.filter(c => c.includes('pending')).length,
    error: cards.filter(c => c.includes('error')).length,
  };
}
for (const path of process.argv.slice(2)) console.log(JSON.stringify(render(path)));
"#;

/// `switch_session` to the copy, then `get_messages` and `get_session_stats`.
/// Command ids are `<what>-<k>`: session `k`'s own.
fn check_rpc(rpc: &mut Rpc, k: usize, r: &Replayed, copy: &Path) -> Result<(), String> {
    let switched = rpc.call(&format!("switch-{k}"), json!({"type": "switch_session", "sessionPath": copy}));
    if switched["data"]["cancelled"] != false {
        return Err(format!("switch_session: {switched}"));
    }
    let got = rpc.call(&format!("messages-{k}"), json!({"type": "get_messages"}));
    let want = messages(&r.lines);
    let have = got["data"]["messages"].as_array().ok_or("no messages")?;
    if have.len() != want.len() {
        return Err(format!("get_messages returned {} messages, the file has {}", have.len(), want.len()));
    }
    if let Some(i) = (0..want.len()).find(|&i| &have[i] != want[i]) {
        return Err(format!("message {i} differs:\n pi:   {}\n file: {}", have[i], want[i]));
    }
    let stats = rpc.call(&format!("stats-{k}"), json!({"type": "get_session_stats"}));
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
}

/// pi's `--export` of `copy` into `html`, with its agent folder in `home`.
fn run_export(pi: &Path, home: &Path, copy: &Path, html: &Path) -> Result<Finished, String> {
    let mut cmd = pi::pi_command(pi, home);
    cmd.current_dir(home).arg("--export").arg(copy).arg(html);
    run_with_timeout(&mut cmd, None, PI_TIMEOUT)
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
